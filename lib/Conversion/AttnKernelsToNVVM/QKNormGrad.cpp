//===- QKNormGrad.cpp - attn.qk_norm_grad on sm_90a -------------*- C++ -*-===//
//
// The gradient of CCA's per-head L2 norm with the key temperature, as two
// SIMT kernels:
//
// * rows: one CTA per (token, sequence), a warp per head row (the query
//   heads, then the key heads). A row's lanes read it twice: first |x|^2 and
//   x . g (warp butterfly sums), then
//     dx = sqrt(d) / n (g - x (x . g) / n^2),   g = dk_out tau for keys,
//   with n = sqrt(|x|^2 + eps), or max(|x|, eps) where the clamp holds and
//   the projection term drops (the clamped norm is a constant). A key row
//   also writes its share of the temperature gradient,
//   sqrt(d) / n (k . dk_out), to an f32 workspace `[B, S, Hk]`.
// * temperature: one CTA per key head sums that head's column of the
//   workspace in a fixed order (each thread every 256th row, the warps by
//   butterfly, then the 8 warps in order), so every run gives the same bits,
//   and applies the temperature's own derivative (tau for <clamped> inside
//   [1e-7, 2], 0 outside, 1 for <raw>).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using Pred = arith::CmpIPredicate;

std::string QKNormGradPlan::key() const {
  return llvm::formatv("qk_norm_grad:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}",
                       elemName(elem), hostCastFromF32, numHeads, numKvHeads,
                       headDim, clampedTemperature, clampEps, eps)
      .str();
}

FailureOr<QKNormGradPlan>
attnfuse::sm90::planQKNormGrad(attn::QKNormGradOp op,
                               const TargetOptions &options,
                               std::string &unsupported) {
  auto queryType = cast<RankedTensorType>(op.getQ().getType());
  auto keyType = cast<RankedTensorType>(op.getK().getType());
  QKNormGradPlan p;
  if (failed(p.setElementType(op, queryType.getElementType(), options)))
    return failure();
  if (!staticHeads(queryType, keyType, p.numHeads, p.numKvHeads, p.headDim,
                   "QK-norm gradient", unsupported))
    return failure();
  p.clampedTemperature = op.getTemperature() == attn::TemperatureMode::clamped;
  p.clampEps = op.getNorm() == attn::NormMode::clamp_eps;
  p.eps = op.getEps().convertToDouble();
  p.threads = 32 * std::min<int64_t>(QKNormGradPlan::kMaxWarps,
                                     p.numHeads + p.numKvHeads);
  std::string base =
      llvm::formatv("attn_qk_norm_grad_{0}_h{1}_hk{2}_d{3}{4}{5}",
                    elemName(p.elem), p.numHeads, p.numKvHeads, p.headDim,
                    p.clampedTemperature ? "_tclamp" : "",
                    p.clampEps ? "_nclamp" : "")
          .str();
  p.name = base;
  p.temperatureName = base + "_temp";
  return p;
}

void attnfuse::sm90::buildQKNormGradKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const QKNormGradPlan &p) {
  // q, k, temp, dq_out, dk_out; dq, dk, the key rows' temperature shares.
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext()).pointer(8), p.threads,
                  /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value query = arguments.next(), key = arguments.next(),
        temp = arguments.next(), queryOutGrad = arguments.next(),
        keyOutGrad = arguments.next(), queryGrad = arguments.next(),
        keyGrad = arguments.next(), shares = arguments.next();
  int64_t dim = p.headDim, hq = p.numHeads, hk = p.numKvHeads;
  Value t = d.ctaid(0), batch = d.ctaid(1), tokens = d.nctaid(0);
  Value lane = d.laneId(), warp = d.divu(d.tid(), 32);
  int64_t warps = p.threads / 32;
  Value sqrtDim = d.cf(std::sqrt(static_cast<double>(dim)));
  auto load = [&](Value row, Value i) {
    return arith::ExtFOp::create(
        b, loc, d.f32, d.load(d.elemType, d.gAt(row, i, d.elemType), 2));
  };
  auto warpSum = [&](Value v) {
    for (int shift = 16; shift >= 1; shift /= 2)
      v = d.addf(v, d.shflBfly(v, shift));
    return v;
  };
  // One head row: x, its cotangent (times `tau` for a key) and its
  // gradient; returns sqrt(d) / n (x . cotangent).
  auto normRow = [&](Value x, Value cotangent, Value grad, Value tau) -> Value {
    SmallVector<Value> sums = d.forLoop(
        lane, d.c32(dim), d.c32(32), ValueRange{d.cf(0.0), d.cf(0.0)},
        [&](Value i, ValueRange acc) -> SmallVector<Value> {
          Value xi = load(x, i);
          return {d.fma(xi, xi, acc[0]), d.fma(xi, load(cotangent, i), acc[1])};
        });
    Value squares = warpSum(sums[0]), dot = warpSum(sums[1]);
    Value norm = headNorm(d, squares, p.clampEps, p.eps);
    Value coefficient = d.divf(sqrtDim, norm);
    // x . g / n^2, zero where the clamp holds.
    Value projection = d.divf(d.mulf(dot, tau), d.mulf(norm, norm));
    if (p.clampEps)
      projection = d.select(
          d.cmpf(arith::CmpFPredicate::OLT, squares, d.cf(p.eps * p.eps)),
          d.cf(0.0), projection);
    d.forLoop(lane, d.c32(dim), d.c32(32), ValueRange(),
              [&](Value i, ValueRange) -> SmallVector<Value> {
                Value g = d.mulf(load(cotangent, i), tau);
                Value dx = d.mulf(coefficient,
                                  d.subf(g, d.mulf(load(x, i), projection)));
                d.store(arith::TruncFOp::create(b, loc, d.elemType, dx),
                        d.gAt(grad, i, d.elemType), 2);
                return {};
              });
    return d.mulf(coefficient, dot);
  };
  Value queryRow = d.rowStart64(batch, tokens, t, hq * dim);
  Value keyRow = d.rowStart64(batch, tokens, t, hk * dim);
  d.forLoop(
      warp, d.c32(hq + hk), d.c32(warps), ValueRange(),
      [&](Value head, ValueRange) -> SmallVector<Value> {
        d.ifThenElse(
            d.cmp(Pred::slt, head, d.c32(hq)),
            [&] {
              Value at = d.mul(head, dim);
              auto row = [&](Value base) {
                return d.gAt(d.gAt(base, queryRow, d.elemType), at, d.elemType);
              };
              normRow(row(query), row(queryOutGrad), row(queryGrad), d.cf(1.0));
            },
            [&] {
              Value kvHead = d.sub(head, hq);
              Value at = d.mul(kvHead, dim);
              auto row = [&](Value base) {
                return d.gAt(d.gAt(base, keyRow, d.elemType), at, d.elemType);
              };
              Value tau =
                  keyTemperature(d, load(temp, kvHead), p.clampedTemperature);
              Value share =
                  normRow(row(key), row(keyOutGrad), row(keyGrad), tau);
              d.ifThen(d.cmp(Pred::eq, lane, 0), [&] {
                Value slot = arith::AddIOp::create(
                    b, loc,
                    arith::MulIOp::create(b, loc, d.row64(batch, tokens, t),
                                          d.c64(hk)),
                    d.ext64(kvHead));
                d.store(share, d.gAt(shares, slot, d.f32), 4);
              });
            });
        return {};
      });
  gpu::ReturnOp::create(b, loc);
}

void attnfuse::sm90::buildQKNormTemperatureGradKernel(OpBuilder &b,
                                                      Location loc,
                                                      gpu::GPUModuleOp module,
                                                      const QKNormGradPlan &p) {
  // The key rows' shares, temp, dtemp; the rows (B * S).
  KernelBody body(b, loc, module, p.temperatureName,
                  KernelSignature(b.getContext()).pointer(3).scalar(),
                  QKNormGradPlan::kTemperatureThreads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value shares = arguments.next(), temp = arguments.next(),
        tempGrad = arguments.next(), rows = arguments.next();
  constexpr int64_t threads = QKNormGradPlan::kTemperatureThreads;
  Value kvHead = d.ctaid(0), tid = d.tid(), lane = d.laneId();
  Value warp = d.divu(tid, 32);
  Value sum =
      d.forLoop(tid, rows, d.c32(threads), ValueRange{d.cf(0.0)},
                [&](Value row, ValueRange acc) -> SmallVector<Value> {
                  Value slot = arith::AddIOp::create(
                      b, loc,
                      arith::MulIOp::create(b, loc, d.ext64(row),
                                            d.c64(p.numKvHeads)),
                      d.ext64(kvHead));
                  return {d.addf(acc[0],
                                 d.load(d.f32, d.gAt(shares, slot, d.f32), 4))};
                })
          .front();
  for (int shift = 16; shift >= 1; shift /= 2)
    sum = d.addf(sum, d.shflBfly(sum, shift));
  Value smem = d.alignedDynamicShared(kSharedSymbol);
  d.ifThen(d.cmp(Pred::eq, lane, 0),
           [&] { d.store(sum, d.sAt(smem, d.mul(warp, 4)), 4); });
  d.barrierAll();
  d.ifThen(d.cmp(Pred::eq, tid, 0), [&] {
    Value total = d.cf(0.0);
    for (int64_t w = 0; w < threads / 32; ++w)
      total = d.addf(total, d.load(d.f32, d.sAt(smem, w * 4), 4));
    if (p.clampedTemperature) {
      // d tau / d temp = tau inside the clamp's closed range, 0 outside.
      Value t = arith::ExtFOp::create(
          b, loc, d.f32,
          d.load(d.elemType, d.gAt(temp, kvHead, d.elemType), 2));
      Value inside = d.andb(d.cmpf(arith::CmpFPredicate::OGE, t, d.cf(1e-7)),
                            d.cmpf(arith::CmpFPredicate::OLE, t, d.cf(2.0)));
      total = d.select(inside, d.mulf(total, keyTemperature(d, t, true)),
                       d.cf(0.0));
    }
    d.store(arith::TruncFOp::create(b, loc, d.elemType, total),
            d.gAt(tempGrad, kvHead, d.elemType), 2);
  });
  gpu::ReturnOp::create(b, loc);
}

RankedTensorType QKNormGradPlan::sharesType(attn::QKNormGradOp op) const {
  auto keyType = cast<RankedTensorType>(op.getK().getType());
  return RankedTensorType::get(
      {keyType.getDimSize(0), keyType.getDimSize(1), numKvHeads},
      Float32Type::get(op.getContext()));
}

/// The configuration both launches report.
static DictionaryAttr qkNormGradConfig(MLIRContext *ctx,
                                       const QKNormGradPlan &p, StringRef cta) {
  return DictBuilder(ctx)
      .set("elem_type", elemName(p.elem))
      .set("num_heads", p.numHeads)
      .set("num_kv_heads", p.numKvHeads)
      .set("head_dim", p.headDim)
      .set("temperature", p.clampedTemperature ? "clamped" : "raw")
      .set("norm", p.clampEps ? "clamp_eps" : "sqrt_eps")
      .set("eps", p.eps)
      .set("cta", cta)
      .get();
}

attn::KernelLaunchAttr
attnfuse::sm90::describeQKNormGrad(MLIRContext *ctx, attn::QKNormGradOp op,
                                   const QKNormGradPlan &p) {
  StringRef elem = elemName(p.elem);
  int64_t hq = p.numHeads, hk = p.numKvHeads, dim = p.headDim;
  SmallVector<Attribute> tensors, params;
  auto add = [&](StringRef name, StringRef role, int64_t operand,
                 int64_t heads) {
    tensors.push_back(
        attentionTensor(ctx, p.elem, name, role, operand, heads, dim, "S"));
    params.push_back(describeParam(ctx, name, "pointer", elem, name));
  };
  add("q", "input", 0, hq);
  add("k", "input", 1, hk);
  tensors.push_back(
      describeTensor(ctx, "temp", "input", 2, elem, {intAttr(ctx, hk)}));
  params.push_back(describeParam(ctx, "temp", "pointer", elem, "temp"));
  add("q_out_grad", "input", 3, hq);
  add("k_out_grad", "input", 4, hk);
  add("q_grad", "result", -1, hq);
  add("k_grad", "result", -1, hk);
  tensors.push_back(rowStatTensor(ctx, "temp_shares", "result", -1, hk));
  params.push_back(
      describeParam(ctx, "temp_shares", "pointer", "f32", "temp_shares"));
  (void)op;
  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "S", 1),
                                 gridCeilDiv(ctx, "B", 1)};
  return describeLaunch(
      ctx,
      {p.name, "qk_norm_grad", "B = batch, S = tokens per sequence", p.threads},
      {grid, params, tensors},
      qkNormGradConfig(ctx, p,
                       "one per (token, sequence); a warp per head row, "
                       "queries then keys; each key row's temperature share "
                       "to temp_shares"),
      {p.hostCastFromF32, "outputs"});
}

attn::KernelLaunchAttr
attnfuse::sm90::describeQKNormTemperatureGrad(MLIRContext *ctx,
                                              const QKNormGradPlan &p) {
  StringRef elem = elemName(p.elem);
  int64_t hk = p.numKvHeads;
  SmallVector<Attribute> tensors = {
      rowStatTensor(ctx, "temp_shares", "input", 0, hk),
      describeTensor(ctx, "temp", "input", 1, elem, {intAttr(ctx, hk)}),
      describeTensor(ctx, "temp_grad", "result", -1, elem, {intAttr(ctx, hk)})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "temp_shares", "pointer", "f32", "temp_shares"),
      describeParam(ctx, "temp", "pointer", elem, "temp"),
      describeParam(ctx, "temp_grad", "pointer", elem, "temp_grad"),
      describeParam(ctx, "rows", "scalar", "i32", "B*S")};
  SmallVector<Attribute> grid = {gridConstant(ctx, hk)};
  constexpr int64_t threads = QKNormGradPlan::kTemperatureThreads;
  return describeLaunch(
      ctx,
      {p.temperatureName, "qk_norm_grad_temp",
       "B = batch, S = tokens per sequence", threads, threads / 32 * 4},
      {grid, params, tensors},
      qkNormGradConfig(ctx, p,
                       "one per key head: its temp_shares column summed in "
                       "a fixed order"),
      {p.hostCastFromF32, "temp_grad"});
}
