//===- QKMean.cpp - attn.qk_mean and its gradient on sm_90a -----*- C++ -*-===//
//
// CCA's QK-mean mixes each query head with its group's key head and each
// key head with the mean of its group's query heads; its gradient mixes the
// cotangents the same way with the coefficients swapped. One SIMT kernel
// serves both: one CTA per (token, sequence), threads over the token's
// query then key elements, f32 sums rounded once. With G = Hq / Hk:
//   forward   q[h]  = q_conv[h] + 0.5 q_raw[h] + 0.5 k_raw[h / G]
//             k[j]  = k_conv[j] + 0.5 / G sum_{h / G = j} q_raw[h]
//                     + 0.5 k_raw[j]
//   gradient  dq_raw[h] = 0.5 dq[h] + 0.5 / G dk[h / G]
//             dk_raw[j] = 0.5 sum_{h / G = j} dq[h] + 0.5 dk[j]
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using Pred = arith::CmpIPredicate;

std::string QKMeanPlan::key() const {
  return llvm::formatv("qk_mean:{0}:{1}:{2}:{3}:{4}:{5}", elemName(elem),
                       hostCastFromF32, numHeads, numKvHeads, headDim, gradient)
      .str();
}

/// The query-shaped and key-shaped operands of attn.qk_mean (q_conv, k_conv)
/// or attn.qk_mean_grad (q_grad, k_grad).
static std::pair<Value, Value> queryAndKey(Operation *op) {
  if (auto mean = dyn_cast<attn::QKMeanOp>(op))
    return {mean.getQConv(), mean.getKConv()};
  auto grad = cast<attn::QKMeanGradOp>(op);
  return {grad.getQGrad(), grad.getKGrad()};
}

FailureOr<QKMeanPlan> attnfuse::sm90::planQKMean(Operation *op,
                                                 const TargetOptions &options,
                                                 std::string &unsupported) {
  auto [query, key] = queryAndKey(op);
  auto queryType = cast<RankedTensorType>(query.getType());
  auto keyType = cast<RankedTensorType>(key.getType());
  QKMeanPlan p;
  p.gradient = isa<attn::QKMeanGradOp>(op);
  if (failed(p.setElementType(op, queryType.getElementType(), options)))
    return failure();
  if (!staticHeads(queryType, keyType, p.numHeads, p.numKvHeads, p.headDim,
                   "QK-mean", unsupported))
    return failure();
  p.group = p.numHeads / p.numKvHeads;
  p.threads = std::min<int64_t>(
      256, ((p.numHeads + p.numKvHeads) * p.headDim + 31) / 32 * 32);
  p.name = llvm::formatv("attn_qk_mean{0}_{1}_h{2}_g{3}_d{4}",
                         p.gradient ? "_grad" : "", elemName(p.elem),
                         p.numHeads, p.group, p.headDim)
               .str();
  return p;
}

void attnfuse::sm90::buildQKMeanKernel(OpBuilder &b, Location loc,
                                       gpu::GPUModuleOp module,
                                       const QKMeanPlan &p) {
  // Forward: q_conv, k_conv, q_raw, k_raw, q, k. Gradient: dq, dk, dq_raw,
  // dk_raw.
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext()).pointer(p.gradient ? 4 : 6),
                  p.threads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value queryResidual = arguments.nextIf(!p.gradient);
  Value keyResidual = arguments.nextIf(!p.gradient);
  // What the heads mix: q_raw and k_raw, or dq and dk.
  Value queryMixed = arguments.next();
  Value keyMixed = arguments.next();
  Value queryOut = arguments.next();
  Value keyOut = arguments.next();

  int64_t dim = p.headDim, g = p.group;
  int64_t queryElems = p.numHeads * dim, keyElems = p.numKvHeads * dim;
  double half = 0.5, halfMean = 0.5 / static_cast<double>(g);
  // Query heads take the key head at 0.5 / G in the gradient (the mean's
  // transpose), 0.5 forward; key heads the group's query sum the other way.
  double keyIntoQuery = p.gradient ? halfMean : half;
  double queriesIntoKey = p.gradient ? half : halfMean;
  Value token = d.ctaid(0), batch = d.ctaid(1), tokens = d.nctaid(0);
  Value row = d.row64(batch, tokens, token);
  auto rowOf = [&](Value base, int64_t elems) {
    return d.gAt(base, arith::MulIOp::create(b, loc, row, d.c64(elems)),
                 d.elemType);
  };
  auto store = [&](Value base, Value offset, Value value) {
    d.store(arith::TruncFOp::create(b, loc, d.elemType, value),
            d.gAt(base, offset, d.elemType), 2);
  };
  Value qMixed = rowOf(queryMixed, queryElems);
  Value kMixed = rowOf(keyMixed, keyElems);
  Value qOut = rowOf(queryOut, queryElems), kOut = rowOf(keyOut, keyElems);
  Value qResidual = queryResidual ? rowOf(queryResidual, queryElems) : Value();
  Value kResidual = keyResidual ? rowOf(keyResidual, keyElems) : Value();
  d.forLoop(
      d.tid(), d.c32(queryElems + keyElems), d.c32(p.threads), ValueRange(),
      [&](Value item, ValueRange) -> SmallVector<Value> {
        d.ifThenElse(
            d.cmp(Pred::slt, item, d.c32(queryElems)),
            [&]() {
              Value head = d.divu(item, dim), e = d.remu(item, dim);
              Value kv = d.add(d.mul(d.divu(head, g), dim), e);
              Value sum =
                  d.fma(d.cf(half), d.loadF32(qMixed, item),
                        d.mulf(d.cf(keyIntoQuery), d.loadF32(kMixed, kv)));
              if (qResidual)
                sum = d.addf(d.loadF32(qResidual, item), sum);
              store(qOut, item, sum);
            },
            [&]() {
              Value at = d.sub(item, d.c32(queryElems));
              Value kvHead = d.divu(at, dim), e = d.remu(at, dim);
              Value groupSum = d.cf(0.0);
              for (int64_t member = 0; member < g; ++member)
                groupSum = d.addf(
                    groupSum,
                    d.loadF32(
                        qMixed,
                        d.add(d.mul(d.add(d.mul(kvHead, g), member), dim), e)));
              Value sum = d.fma(d.cf(queriesIntoKey), groupSum,
                                d.mulf(d.cf(half), d.loadF32(kMixed, at)));
              if (kResidual)
                sum = d.addf(d.loadF32(kResidual, at), sum);
              store(kOut, at, sum);
            });
        return {};
      });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr attnfuse::sm90::describeQKMean(MLIRContext *ctx,
                                                      Operation *op,
                                                      const QKMeanPlan &p) {
  int64_t hq = p.numHeads, hk = p.numKvHeads, dim = p.headDim;
  SmallVector<std::pair<StringRef, bool>> operands =
      p.gradient ? SmallVector<std::pair<StringRef, bool>>{{"q_grad", true},
                                                           {"k_grad", false}}
                 : SmallVector<std::pair<StringRef, bool>>{{"q_conv", true},
                                                           {"k_conv", false},
                                                           {"q_raw", true},
                                                           {"k_raw", false}};
  SmallVector<Attribute> tensors, params;
  auto add = [&](StringRef name, StringRef role, int64_t operand, bool query) {
    tensors.push_back(attentionTensor(ctx, p.elem, name, role, operand,
                                      query ? hq : hk, dim, "S"));
    params.push_back(
        describeParam(ctx, name, "pointer", elemName(p.elem), name));
  };
  for (auto [index, operand] : llvm::enumerate(operands))
    add(operand.first, "input", index, operand.second);
  add(p.gradient ? "q_raw_grad" : "query", "result", -1, true);
  add(p.gradient ? "k_raw_grad" : "key", "result", -1, false);
  (void)op;
  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "S", 1),
                                 gridCeilDiv(ctx, "B", 1)};
  DictBuilder config(ctx);
  config.set("elem_type", elemName(p.elem))
      .set("num_heads", hq)
      .set("num_kv_heads", hk)
      .set("head_dim", dim)
      .setBool("gradient", p.gradient)
      .set("cta", "one per (token, sequence); threads over the token's query "
                  "then key elements, f32 sums");
  return describeLaunch(ctx,
                        {p.name, p.gradient ? "qk_mean_grad" : "qk_mean",
                         "B = batch, S = tokens per sequence", p.threads},
                        {grid, params, tensors}, config.get(),
                        {p.hostCastFromF32, "outputs"});
}
