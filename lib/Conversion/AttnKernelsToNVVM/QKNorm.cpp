//===- QKNorm.cpp - attn.qk_norm and its gradient on sm_90a -----*- C++ -*-===//
//
// CCA's per-head L2 norm with the key temperature, and its gradient, as SIMT
// kernels. Each has one CTA per (token, sequence) and a warp per head row
// (the query heads, then the key heads); a row's |x|^2 is a warp butterfly
// sum, n = sqrt(|x|^2 + eps), or max(|x|, eps) for the clamp-eps norm.
//
// * forward: y = sqrt(d) x / n, times tau for a key row.
// * gradient rows: the lanes read a row twice: first |x|^2 and x . g, then
//     dx = sqrt(d) / n (g - x (x . g) / n^2),   g = dk_out tau for keys,
//   where the projection term drops where the clamp holds (the clamped norm
//   is a constant). A key row also writes its share of the temperature
//   gradient, sqrt(d) / n (k . dk_out), to an f32 workspace `[B, S, Hk]`.
// * gradient temperature: one CTA per key head sums that head's column of
//   the workspace in a fixed order (each thread every 256th row, the warps
//   by butterfly, then the 8 warps in order), so every run gives the same
//   bits, and applies the temperature's own derivative (tau for <clamped>
//   inside [1e-7, 2], 0 outside, 1 for <raw>).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using Pred = arith::CmpIPredicate;

std::string QKNormPlan::key() const {
  return llvm::formatv("qk_norm:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}:{8}",
                       elemName(elem), hostCastFromF32, numHeads, numKvHeads,
                       headDim, clampedTemperature, clampEps, eps, gradient)
      .str();
}

/// The plan of attn.qk_norm or attn.qk_norm_grad (`gradient`), whose
/// pre-norm query and key are `q` and `k`.
template <typename OpTy>
static FailureOr<QKNormPlan> planNorm(OpTy op, bool gradient,
                                      const TargetOptions &options,
                                      std::string &unsupported) {
  auto queryType = cast<RankedTensorType>(op.getQ().getType());
  auto keyType = cast<RankedTensorType>(op.getK().getType());
  QKNormPlan p;
  p.gradient = gradient;
  if (failed(p.setElementType(op, queryType.getElementType(), options)))
    return failure();
  if (!staticHeads(queryType, keyType, p.numHeads, p.numKvHeads, p.headDim,
                   gradient ? "QK-norm gradient" : "QK-norm", unsupported))
    return failure();
  p.clampedTemperature = op.getTemperature() == attn::TemperatureMode::clamped;
  p.clampEps = op.getNorm() == attn::NormMode::clamp_eps;
  p.eps = op.getEps().convertToDouble();
  p.threads =
      32 * std::min<int64_t>(QKNormPlan::kMaxWarps, p.numHeads + p.numKvHeads);
  p.name = llvm::formatv("attn_qk_norm{0}_{1}_h{2}_hk{3}_d{4}{5}{6}",
                         gradient ? "_grad" : "", elemName(p.elem), p.numHeads,
                         p.numKvHeads, p.headDim,
                         p.clampedTemperature ? "_tclamp" : "",
                         p.clampEps ? "_nclamp" : "")
               .str();
  if (gradient)
    p.temperatureName = p.name + "_temp";
  return p;
}

FailureOr<QKNormPlan> attnfuse::sm90::planQKNorm(attn::QKNormOp op,
                                                 const TargetOptions &options,
                                                 std::string &unsupported) {
  return planNorm(op, /*gradient=*/false, options, unsupported);
}

FailureOr<QKNormPlan>
attnfuse::sm90::planQKNormGrad(attn::QKNormGradOp op,
                               const TargetOptions &options,
                               std::string &unsupported) {
  return planNorm(op, /*gradient=*/true, options, unsupported);
}

/// |x|^2 of the `dim`-wide row at `x`, the lanes striding over it.
static Value rowSquares(DeviceBuilder &d, Value x, int64_t dim) {
  Value partial =
      d.forLoop(d.laneId(), d.c32(dim), d.c32(32), ValueRange{d.cf(0.0)},
                [&](Value i, ValueRange acc) -> SmallVector<Value> {
                  Value xi = d.loadF32(x, i);
                  return {d.fma(xi, xi, acc[0])};
                })
          .front();
  return d.warpSum(partial);
}

/// The head rows of token (ctaid.x, sequence ctaid.y), a warp each, the
/// query heads then the key heads: `body(isKey, head, row)`, where
/// `row(base)` points at the head's row of the `[B, S, heads, d]` tensor at
/// `base` (query or key heads by `isKey`).
static void forEachHeadRow(
    DeviceBuilder &d, const QKNormPlan &p,
    llvm::function_ref<void(bool, Value, llvm::function_ref<Value(Value)>)>
        body) {
  int64_t dim = p.headDim, hq = p.numHeads, hk = p.numKvHeads;
  Value t = d.ctaid(0), batch = d.ctaid(1), tokens = d.nctaid(0);
  Value warp = d.divu(d.tid(), 32);
  Value queryRow = d.rowStart64(batch, tokens, t, hq * dim);
  Value keyRow = d.rowStart64(batch, tokens, t, hk * dim);
  auto headRows = [&](bool isKey, Value head) {
    Value at = d.mul(head, dim);
    body(isKey, head, [&](Value base) {
      return d.gAt(d.gAt(base, isKey ? keyRow : queryRow, d.elemType), at,
                   d.elemType);
    });
  };
  d.forLoop(warp, d.c32(hq + hk), d.c32(p.threads / 32), ValueRange(),
            [&](Value head, ValueRange) -> SmallVector<Value> {
              d.ifThenElse(
                  d.cmp(Pred::slt, head, d.c32(hq)),
                  [&] { headRows(/*isKey=*/false, head); },
                  [&] { headRows(/*isKey=*/true, d.sub(head, hq)); });
              return {};
            });
}

void attnfuse::sm90::buildQKNormKernel(OpBuilder &b, Location loc,
                                       gpu::GPUModuleOp module,
                                       const QKNormPlan &p) {
  // q, k, temp; q_out, k_out.
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext()).pointer(5), p.threads,
                  /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value query = arguments.next(), key = arguments.next(),
        temp = arguments.next(), queryOut = arguments.next(),
        keyOut = arguments.next();
  int64_t dim = p.headDim;
  Value sqrtDim = d.cf(std::sqrt(static_cast<double>(dim)));
  forEachHeadRow(d, p, [&](bool isKey, Value head, auto row) {
    Value x = row(isKey ? key : query), out = row(isKey ? keyOut : queryOut);
    Value norm = headNorm(d, rowSquares(d, x, dim), p.clampEps, p.eps);
    Value scale = d.divf(sqrtDim, norm);
    if (isKey)
      scale = d.mulf(scale, keyTemperature(d, d.loadF32(temp, head),
                                           p.clampedTemperature));
    d.forLoop(d.laneId(), d.c32(dim), d.c32(32), ValueRange(),
              [&](Value i, ValueRange) -> SmallVector<Value> {
                Value y = d.mulf(d.loadF32(x, i), scale);
                d.store(arith::TruncFOp::create(d.b, d.loc, d.elemType, y),
                        d.gAt(out, i, d.elemType), 2);
                return {};
              });
  });
  gpu::ReturnOp::create(b, loc);
}

void attnfuse::sm90::buildQKNormGradKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const QKNormPlan &p) {
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
  int64_t dim = p.headDim, hk = p.numKvHeads;
  Value lane = d.laneId();
  Value sqrtDim = d.cf(std::sqrt(static_cast<double>(dim)));
  // One head row: x, its cotangent (times `tau` for a key) and its
  // gradient; returns sqrt(d) / n (x . cotangent).
  auto normRow = [&](Value x, Value cotangent, Value grad, Value tau) -> Value {
    SmallVector<Value> sums =
        d.forLoop(lane, d.c32(dim), d.c32(32), ValueRange{d.cf(0.0), d.cf(0.0)},
                  [&](Value i, ValueRange acc) -> SmallVector<Value> {
                    Value xi = d.loadF32(x, i);
                    return {d.fma(xi, xi, acc[0]),
                            d.fma(xi, d.loadF32(cotangent, i), acc[1])};
                  });
    Value squares = d.warpSum(sums[0]), dot = d.warpSum(sums[1]);
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
                Value g = d.mulf(d.loadF32(cotangent, i), tau);
                Value dx =
                    d.mulf(coefficient,
                           d.subf(g, d.mulf(d.loadF32(x, i), projection)));
                d.store(arith::TruncFOp::create(b, loc, d.elemType, dx),
                        d.gAt(grad, i, d.elemType), 2);
                return {};
              });
    return d.mulf(coefficient, dot);
  };
  forEachHeadRow(d, p, [&](bool isKey, Value head, auto row) {
    if (!isKey) {
      normRow(row(query), row(queryOutGrad), row(queryGrad), d.cf(1.0));
      return;
    }
    Value tau = keyTemperature(d, d.loadF32(temp, head), p.clampedTemperature);
    Value share = normRow(row(key), row(keyOutGrad), row(keyGrad), tau);
    d.ifThen(d.cmp(Pred::eq, lane, 0), [&] {
      Value token = d.row64(d.ctaid(1), d.nctaid(0), d.ctaid(0));
      Value slot = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, token, d.c64(hk)),
          d.ext64(head));
      d.store(share, d.gAt(shares, slot, d.f32), 4);
    });
  });
  gpu::ReturnOp::create(b, loc);
}

void attnfuse::sm90::buildQKNormTemperatureGradKernel(OpBuilder &b,
                                                      Location loc,
                                                      gpu::GPUModuleOp module,
                                                      const QKNormPlan &p) {
  // The key rows' shares, temp, dtemp; the rows (B * S).
  KernelBody body(b, loc, module, p.temperatureName,
                  KernelSignature(b.getContext()).pointer(3).scalar(),
                  QKNormPlan::kTemperatureThreads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value shares = arguments.next(), temp = arguments.next(),
        tempGrad = arguments.next(), rows = arguments.next();
  constexpr int64_t threads = QKNormPlan::kTemperatureThreads;
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
  sum = d.warpSum(sum);
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

RankedTensorType QKNormPlan::sharesType(attn::QKNormGradOp op) const {
  auto keyType = cast<RankedTensorType>(op.getK().getType());
  return RankedTensorType::get(
      {keyType.getDimSize(0), keyType.getDimSize(1), numKvHeads},
      Float32Type::get(op.getContext()));
}

/// The configuration every launch reports.
static DictionaryAttr qkNormConfig(MLIRContext *ctx, const QKNormPlan &p,
                                   StringRef cta) {
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

namespace {
/// The tensors and parameters of a norm launch: q, k and temp first.
struct NormLaunchLists {
  NormLaunchLists(MLIRContext *ctx, const QKNormPlan &p) : ctx(ctx), p(p) {
    add("q", "input", 0, p.numHeads);
    add("k", "input", 1, p.numKvHeads);
    tensors.push_back(describeTensor(ctx, "temp", "input", 2, elemName(p.elem),
                                     {intAttr(ctx, p.numKvHeads)}));
    params.push_back(
        describeParam(ctx, "temp", "pointer", elemName(p.elem), "temp"));
  }
  /// A `[B, S, heads, d]` tensor and its pointer.
  void add(StringRef name, StringRef role, int64_t operand, int64_t heads) {
    tensors.push_back(attentionTensor(ctx, p.elem, name, role, operand, heads,
                                      p.headDim, "S"));
    params.push_back(
        describeParam(ctx, name, "pointer", elemName(p.elem), name));
  }
  MLIRContext *ctx;
  const QKNormPlan &p;
  SmallVector<Attribute> tensors, params;
};
} // namespace

attn::KernelLaunchAttr attnfuse::sm90::describeQKNorm(MLIRContext *ctx,
                                                      attn::QKNormOp,
                                                      const QKNormPlan &p) {
  NormLaunchLists lists(ctx, p);
  lists.add("q_out", "result", -1, p.numHeads);
  lists.add("k_out", "result", -1, p.numKvHeads);
  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "S", 1),
                                 gridCeilDiv(ctx, "B", 1)};
  return describeLaunch(
      ctx, {p.name, "qk_norm", "B = batch, S = tokens per sequence", p.threads},
      {grid, lists.params, lists.tensors},
      qkNormConfig(ctx, p,
                   "one per (token, sequence); a warp per head row, queries "
                   "then keys"),
      {p.hostCastFromF32, "outputs"});
}

attn::KernelLaunchAttr attnfuse::sm90::describeQKNormGrad(MLIRContext *ctx,
                                                          attn::QKNormGradOp,
                                                          const QKNormPlan &p) {
  int64_t hq = p.numHeads, hk = p.numKvHeads;
  NormLaunchLists lists(ctx, p);
  lists.add("q_out_grad", "input", 3, hq);
  lists.add("k_out_grad", "input", 4, hk);
  lists.add("q_grad", "result", -1, hq);
  lists.add("k_grad", "result", -1, hk);
  lists.tensors.push_back(rowStatTensor(ctx, "temp_shares", "result", -1, hk));
  lists.params.push_back(
      describeParam(ctx, "temp_shares", "pointer", "f32", "temp_shares"));
  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "S", 1),
                                 gridCeilDiv(ctx, "B", 1)};
  return describeLaunch(
      ctx,
      {p.name, "qk_norm_grad", "B = batch, S = tokens per sequence", p.threads},
      {grid, lists.params, lists.tensors},
      qkNormConfig(ctx, p,
                   "one per (token, sequence); a warp per head row, "
                   "queries then keys; each key row's temperature share "
                   "to temp_shares"),
      {p.hostCastFromF32, "outputs"});
}

attn::KernelLaunchAttr
attnfuse::sm90::describeQKNormTemperatureGrad(MLIRContext *ctx,
                                              const QKNormPlan &p) {
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
  constexpr int64_t threads = QKNormPlan::kTemperatureThreads;
  return describeLaunch(
      ctx,
      {p.temperatureName, "qk_norm_grad_temp",
       "B = batch, S = tokens per sequence", threads, threads / 32 * 4},
      {grid, params, tensors},
      qkNormConfig(ctx, p,
                   "one per key head: its temp_shares column summed in "
                   "a fixed order"),
      {p.hostCastFromF32, "temp_grad"});
}
