//===- GradToLinalg.cpp - attn gradient ops to linalg -----------*- C++ -*-===//
//
// The reference lowering of the gradient ops (docs/semantics.md#gradients),
// in the style of the primitives' lowering: one linalg op per mathematical
// step, arithmetic in f32 for bf16/f16 tensors, reductions over the batch
// and the tokens accumulated in the compute type and rounded once.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "attnfuse/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse::attn;
using namespace attnfuse::linalg_builders;

namespace {

/// `acc + x * y` in a generic body, the factors converted to `computeType`.
Value multiplyAdd(OpBuilder &b, Location loc, Value acc, Value x, Value y,
                  Type computeType) {
  Value product =
      arith::MulFOp::create(b, loc, convertFloat(b, loc, x, computeType),
                            convertFloat(b, loc, y, computeType));
  return arith::AddFOp::create(b, loc, acc, product);
}

/// `numLoops` iterators, the first `numParallel` parallel and the others
/// reductions.
SmallVector<IteratorType> parallelThenReduce(unsigned numLoops,
                                             unsigned numParallel) {
  SmallVector<IteratorType> iterators(numLoops, kRed);
  std::fill_n(iterators.begin(), numParallel, kPar);
  return iterators;
}

/// A contraction `out[outDims] += lhs[lhsDims] * rhs[rhsDims]` over the
/// loops of `iterators` (nested in that order: the loop over contiguous
/// rows goes last), accumulated in the compute type from zeros of `sizes`,
/// then rounded to `elementType`.
Value contract(OpBuilder &b, Location loc, Value lhs, Value rhs,
               ArrayRef<AffineExpr> lhsDims, ArrayRef<AffineExpr> rhsDims,
               ArrayRef<AffineExpr> outDims,
               ArrayRef<IteratorType> iterators, ArrayRef<OpFoldResult> sizes,
               Type elementType, double factor = 1.0) {
  MLIRContext *ctx = b.getContext();
  Type computeType = computeTypeFor(elementType);
  unsigned numLoops = iterators.size();
  Value acc =
      buildGeneric(b, loc, ValueRange{lhs, rhs},
                   filledTensor(b, loc, sizes, computeType, 0.0),
                   {projection(ctx, numLoops, lhsDims),
                    projection(ctx, numLoops, rhsDims),
                    projection(ctx, numLoops, outDims)},
                   iterators,
                   [&](OpBuilder &nb, Location l, ValueRange args) {
                     linalg::YieldOp::create(
                         nb, l,
                         multiplyAdd(nb, l, args[2], args[0], args[1],
                                     computeType));
                   })
          .getResult(0);
  if (factor != 1.0) {
    Value scale = floatConstant(b, loc, computeType, factor);
    unsigned rank = sizes.size();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    acc = buildGeneric(b, loc, acc, emptyTensor(b, loc, sizes, computeType),
                       {id, id}, SmallVector<IteratorType>(rank, kPar),
                       [&](OpBuilder &nb, Location l, ValueRange args) {
                         linalg::YieldOp::create(
                             nb, l,
                             arith::MulFOp::create(nb, l, args[0], scale)
                                 .getResult());
                       })
              .getResult(0);
  }
  return convertTensor(b, loc, acc, elementType);
}

/// `out[outDims] = sum of in[inDims]` over the loops not in `outDims`.
Value sumInto(OpBuilder &b, Location loc, Value input,
              ArrayRef<AffineExpr> inDims, ArrayRef<AffineExpr> outDims,
              ArrayRef<IteratorType> iterators, ArrayRef<OpFoldResult> sizes,
              Type elementType) {
  MLIRContext *ctx = b.getContext();
  Type computeType = computeTypeFor(elementType);
  unsigned numLoops = iterators.size();
  Value acc =
      buildGeneric(b, loc, input, filledTensor(b, loc, sizes, computeType, 0.0),
                   {projection(ctx, numLoops, inDims),
                    projection(ctx, numLoops, outDims)},
                   iterators,
                   [&](OpBuilder &nb, Location l, ValueRange args) {
                     Value x = convertFloat(nb, l, args[0], computeType);
                     linalg::YieldOp::create(
                         nb, l,
                         arith::AddFOp::create(nb, l, args[1], x).getResult());
                   })
          .getResult(0);
  return convertTensor(b, loc, acc, elementType);
}

/// Replaces a gradient op of an input, a weight and a bias with the three
/// gradients, cast to its result types.
template <typename GradOp>
void replaceWeightedGradients(ConversionPatternRewriter &rewriter, GradOp op,
                              Value inputGrad, Value weightGrad,
                              Value biasGrad) {
  Location loc = op.getLoc();
  rewriter.replaceOp(
      op, {castTo(rewriter, loc, inputGrad, op.getInputGrad().getType()),
           castTo(rewriter, loc, weightGrad, op.getWeightGrad().getType()),
           castTo(rewriter, loc, biasGrad, op.getBiasGrad().getType())});
}

//===----------------------------------------------------------------------===//
// attn.project_grad
//===----------------------------------------------------------------------===//

struct ProjectGradLowering : OpConversionPattern<ProjectGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ProjectGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    Value dy = adaptor.getResultGrad();
    Type elementType = elementTypeOf(x);
    AffineExpr d0, d1, d2, d3;
    bindDims(ctx, d0, d1, d2, d3);
    OpFoldResult batch = dimOf(rewriter, loc, x, 0);
    OpFoldResult seq = dimOf(rewriter, loc, x, 1);
    OpFoldResult in = dimOf(rewriter, loc, x, 2);
    OpFoldResult out = dimOf(rewriter, loc, w, 0);

    // Loops (b, s, n, e), e innermost: rows of w, x and the results are
    // read and written contiguously (an axpy per (b, s, n), which LLVM
    // vectorizes), not strided dot products.
    // dx[b, s, e] = sum_n dy[b, s, n] w[n, e].
    Value dx = contract(rewriter, loc, dy, w, {d0, d1, d2}, {d2, d3},
                        {d0, d1, d3}, {kPar, kPar, kRed, kPar},
                        {batch, seq, in}, elementType);
    // dw[n, e] = sum_{b, s} dy[b, s, n] x[b, s, e].
    Value dw = contract(rewriter, loc, dy, x, {d0, d1, d2}, {d0, d1, d3},
                        {d2, d3}, {kRed, kRed, kPar, kPar}, {out, in},
                        elementType);
    // (b, s, n): db[n] = sum_{b, s} dy[b, s, n].
    Value db = sumInto(rewriter, loc, dy, {d0, d1, d2}, {d2},
                       {kRed, kRed, kPar}, {out}, elementType);
    replaceWeightedGradients(rewriter, op, dx, dw, db);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.causal_conv1d_grad
//===----------------------------------------------------------------------===//

struct CausalConv1DGradLowering : OpConversionPattern<CausalConv1DGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CausalConv1DGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    Value dy = adaptor.getResultGrad();
    Type elementType = elementTypeOf(x);
    int64_t channels = cast<RankedTensorType>(x.getType()).getDimSize(2);
    int64_t groupWidth = channels / op.getGroups();
    int64_t kernel = cast<RankedTensorType>(w.getType()).getDimSize(2);
    int64_t padding = op.getPadding();
    OpFoldResult batch = dimOf(rewriter, loc, x, 0);
    OpFoldResult seq = dimOf(rewriter, loc, x, 1);
    OpFoldResult outSeq = dimOf(rewriter, loc, dy, 1);
    OpFoldResult zero = rewriter.getIndexAttr(0);
    OpFoldResult channelSize = rewriter.getIndexAttr(channels);

    // dy with kernel - 1 zero steps on both sides, so that every tap of
    // every input step reads inside it: dyPad[b, u] = dy[b, u - (k - 1)].
    SmallVector<OpFoldResult> dyPadSizes = {
        batch, addIndex(rewriter, loc, outSeq, 2 * (kernel - 1)), channelSize};
    Value dyPad = filledTensor(rewriter, loc, dyPadSizes, elementType, 0.0);
    dyPad = insertAt(rewriter, loc, dy, dyPad,
                     {zero, rewriter.getIndexAttr(kernel - 1), zero});

    // Input step s is padded step s + padding, which tap k of output step
    // s + padding - k reads. Channels as (group, channel in group), so that
    // every loop is a plain dimension of some operand:
    // (b, s, g, k, co, ci): dx[b, s, g, ci] = sum_{k, co}
    //     dy[b, s + padding - k, g, co] * w[g, co, ci, k].
    // The input channel loops innermost: a row of dx accumulates in place
    // while each dy element is read once (with ci outer, every ci re-read
    // all of w's group with a stride of a whole weight row).
    int64_t groups = op.getGroups();
    AffineExpr b, s, g, k, co, ci;
    bindDims(ctx, b, s, g, k, co, ci);
    Value dxGrouped = contract(
        rewriter, loc, splitDim(rewriter, loc, dyPad, 2, groupWidth),
        splitDim(rewriter, loc, w, 0, groupWidth),
        {b, s + (padding + kernel - 1) - k, g, co}, {g, co, ci, k},
        {b, s, g, ci}, {kPar, kPar, kPar, kRed, kRed, kPar},
        {batch, seq, rewriter.getIndexAttr(groups),
         rewriter.getIndexAttr(groupWidth)},
        elementType);
    Value dx = tensor::CollapseShapeOp::create(
        rewriter, loc, dxGrouped,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});

    // The padded input, as the forward reads it.
    SmallVector<OpFoldResult> paddedSizes = {
        batch, addIndex(rewriter, loc, seq, padding), channelSize};
    Value padded = filledTensor(rewriter, loc, paddedSizes, elementType, 0.0);
    padded = insertAt(rewriter, loc, x, padded,
                      {zero, rewriter.getIndexAttr(padding), zero});

    // (b, t, c, k, cl): dw[c, cl, k] = sum_{b, t} dy[b, t, c]
    //                                  * padded[b, t + k, g(c) + cl].
    // The tokens outermost: each step reads one row of dy and of the input
    // (a token loop innermost strides over whole rows: a cache miss per
    // product once S rows exceed the caches).
    AffineExpr bb, t, c, tap, cl;
    bindDims(ctx, bb, t, c, tap, cl);
    Value dw = contract(
        rewriter, loc, dy, padded, {bb, t, c},
        {bb, t + tap, c.floorDiv(groupWidth) * groupWidth + cl}, {c, cl, tap},
        {kRed, kRed, kPar, kPar, kPar},
        {channelSize, rewriter.getIndexAttr(groupWidth),
         rewriter.getIndexAttr(kernel)},
        elementType);

    // (b, t, c): db[c] = sum_{b, t} dy[b, t, c], rows of dy in order.
    AffineExpr e0, e1, e2;
    bindDims(ctx, e0, e1, e2);
    Value db = sumInto(rewriter, loc, dy, {e0, e1, e2}, {e2},
                       {kRed, kRed, kPar}, {channelSize}, elementType);
    replaceWeightedGradients(rewriter, op, dx, dw, db);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.qk_mean_grad
//===----------------------------------------------------------------------===//

struct QKMeanGradLowering : OpConversionPattern<QKMeanGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QKMeanGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value dq = adaptor.getQGrad(), dk = adaptor.getKGrad();
    auto qType = cast<RankedTensorType>(dq.getType());
    auto kType = cast<RankedTensorType>(dk.getType());
    Type elementType = qType.getElementType();
    Type computeType = computeTypeFor(elementType);
    int64_t numHeads = qType.getDimSize(2), numKvHeads = kType.getDimSize(2);
    int64_t group = numHeads / numKvHeads;
    AffineExpr d0, d1, d2, d3, d4;
    bindDims(ctx, d0, d1, d2, d3, d4);
    AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
    SmallVector<IteratorType> par4(4, kPar);
    Value half = floatConstant(rewriter, loc, computeType, 0.5);
    Value halfPerHead = floatConstant(rewriter, loc, computeType, 0.5 / group);

    // dq_raw[h] = 0.5 dq[h] + 0.5 / G dk[h / G] (k reads the group mean).
    Value dqRaw =
        buildGeneric(
            rewriter, loc, ValueRange{dq, dk},
            emptyTensor(rewriter, loc,
                        tensor::getMixedSizes(rewriter, loc, dq), elementType),
            {id4, projection(ctx, 4, {d0, d1, d2.floorDiv(group), d3}), id4},
            par4,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value q = convertFloat(b, l, args[0], computeType);
              Value k = convertFloat(b, l, args[1], computeType);
              Value sum = arith::AddFOp::create(
                  b, l, arith::MulFOp::create(b, l, half, q),
                  arith::MulFOp::create(b, l, halfPerHead, k));
              linalg::YieldOp::create(b, l,
                                      convertFloat(b, l, sum, elementType));
            })
            .getResult(0);

    // dk_raw[j] = 0.5 sum_{h / G == j} dq[h] + 0.5 dk[j]: (b, s, j, e, g).
    SmallVector<OpFoldResult> kSizes = tensor::getMixedSizes(rewriter, loc, dk);
    Value init =
        buildGeneric(rewriter, loc, dk,
                     emptyTensor(rewriter, loc, kSizes, computeType),
                     {id4, id4}, par4,
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value k = convertFloat(b, l, args[0], computeType);
                       linalg::YieldOp::create(
                           b, l, arith::MulFOp::create(b, l, half, k)
                                     .getResult());
                     })
            .getResult(0);
    Value acc =
        buildGeneric(rewriter, loc, splitDim(rewriter, loc, dq, 2, group), init,
                     {projection(ctx, 5, {d0, d1, d2, d4, d3}),
                      projection(ctx, 5, {d0, d1, d2, d3})},
                     {kPar, kPar, kPar, kPar, kRed},
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value q = convertFloat(b, l, args[0], computeType);
                       linalg::YieldOp::create(
                           b, l,
                           arith::AddFOp::create(
                               b, l, args[1],
                               arith::MulFOp::create(b, l, half, q))
                               .getResult());
                     })
            .getResult(0);
    Value dkRaw = convertTensor(rewriter, loc, acc, elementType);
    rewriter.replaceOp(
        op, {castTo(rewriter, loc, dqRaw, op.getQRawGrad().getType()),
             castTo(rewriter, loc, dkRaw, op.getKRawGrad().getType())});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.qk_norm_grad
//===----------------------------------------------------------------------===//

struct QKNormGradLowering : OpConversionPattern<QKNormGradOp> {
  using OpConversionPattern::OpConversionPattern;

  /// `sum_e x[..., e] * g[..., e]` over the head dim, in the compute type.
  static Value headDot(OpBuilder &b, Location loc, Value x, Value g,
                       Type computeType) {
    MLIRContext *ctx = b.getContext();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.pop_back();
    AffineExpr d0, d1, d2, d3;
    bindDims(ctx, d0, d1, d2, d3);
    AffineMap id4 = b.getMultiDimIdentityMap(4);
    return buildGeneric(b, loc, ValueRange{x, g},
                        filledTensor(b, loc, sizes, computeType, 0.0),
                        {id4, id4, projection(ctx, 4, {d0, d1, d2})},
                        {kPar, kPar, kPar, kRed},
                        [&](OpBuilder &nb, Location l, ValueRange args) {
                          linalg::YieldOp::create(
                              nb, l,
                              multiplyAdd(nb, l, args[2], args[0], args[1],
                                          computeType));
                        })
        .getResult(0);
  }

  /// The norm `n(x)` a head was divided by, from `|x|^2`, and whether the
  /// clamp of `<clamp_eps>` holds (then `n = eps` is a constant).
  static std::pair<Value, Value> normOf(OpBuilder &b, Location loc,
                                        Value squares, NormMode mode,
                                        Value eps) {
    if (mode == NormMode::sqrt_eps) {
      Value n = math::SqrtOp::create(
          b, loc, arith::AddFOp::create(b, loc, squares, eps));
      Value never = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
      return {n, never};
    }
    Value length = math::SqrtOp::create(b, loc, squares);
    Value clamped = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                          length, eps);
    return {arith::SelectOp::create(b, loc, clamped, eps, length), clamped};
  }

  /// `dx = sqrt(d) / n (g - x (x . g) / n^2)`, or `sqrt(d) g / eps` where the
  /// clamp holds; `g` and `x . g` are scaled by `tau` for the keys.
  static Value headGrad(OpBuilder &b, Location loc, Value x, Value g,
                        Value squares, Value dot, Value tau, NormMode mode,
                        double eps, double rootDim, Type elementType) {
    MLIRContext *ctx = b.getContext();
    Type computeType = computeTypeFor(elementType);
    AffineExpr d0, d1, d2, d3;
    bindDims(ctx, d0, d1, d2, d3);
    AffineMap id4 = b.getMultiDimIdentityMap(4);
    AffineMap rowMap = projection(ctx, 4, {d0, d1, d2});
    SmallVector<Value> inputs = {x, g, squares, dot};
    SmallVector<AffineMap> maps = {id4, id4, rowMap, rowMap};
    if (tau) {
      inputs.push_back(tau);
      maps.push_back(projection(ctx, 4, {d2}));
    }
    maps.push_back(id4);
    Value epsValue = floatConstant(b, loc, computeType, eps);
    Value root = floatConstant(b, loc, computeType, rootDim);
    Value zero = floatConstant(b, loc, computeType, 0.0);
    return buildGeneric(
               b, loc, inputs,
               emptyTensor(b, loc, tensor::getMixedSizes(b, loc, x),
                           elementType),
               maps, SmallVector<IteratorType>(4, kPar),
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Value xe = convertFloat(nb, l, args[0], computeType);
                 Value ge = convertFloat(nb, l, args[1], computeType);
                 Value xg = args[3];
                 if (tau) {
                   ge = arith::MulFOp::create(nb, l, ge, args[4]);
                   xg = arith::MulFOp::create(nb, l, xg, args[4]);
                 }
                 auto [n, clamped] = normOf(nb, l, args[2], mode, epsValue);
                 // x (x . g) / n^2, dropped where the norm is a constant.
                 Value radial = arith::DivFOp::create(
                     nb, l, arith::MulFOp::create(nb, l, xe, xg),
                     arith::MulFOp::create(nb, l, n, n));
                 radial = arith::SelectOp::create(nb, l, clamped, zero, radial);
                 Value dx = arith::MulFOp::create(
                     nb, l, arith::DivFOp::create(nb, l, root, n),
                     arith::SubFOp::create(nb, l, ge, radial));
                 linalg::YieldOp::create(
                     nb, l, convertFloat(nb, l, dx, elementType));
               })
        .getResult(0);
  }

  LogicalResult
  matchAndRewrite(QKNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value q = adaptor.getQ(), k = adaptor.getK(), temp = adaptor.getTemp();
    Value dqOut = adaptor.getQOutGrad(), dkOut = adaptor.getKOutGrad();
    auto qType = cast<RankedTensorType>(q.getType());
    Type elementType = qType.getElementType();
    Type computeType = computeTypeFor(elementType);
    double rootDim = std::sqrt(static_cast<double>(qType.getDimSize(3)));
    double eps = op.getEps().convertToDouble();
    NormMode mode = op.getNorm();
    bool clampedTemperature = op.getTemperature() == TemperatureMode::clamped;

    // tau = temp, or exp(clamp(temp, 1e-7, 2)).
    AffineMap id1 = rewriter.getMultiDimIdentityMap(1);
    SmallVector<OpFoldResult> headSizes =
        tensor::getMixedSizes(rewriter, loc, temp);
    Value low = floatConstant(rewriter, loc, computeType, 1e-7);
    Value high = floatConstant(rewriter, loc, computeType, 2.0);
    Value tau =
        buildGeneric(
            rewriter, loc, temp,
            emptyTensor(rewriter, loc, headSizes, computeType), {id1, id1},
            {kPar},
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value t = convertFloat(b, l, args[0], computeType);
              if (clampedTemperature)
                t = math::ExpOp::create(
                    b, l,
                    arith::MinimumFOp::create(
                        b, l, arith::MaximumFOp::create(b, l, t, low), high));
              linalg::YieldOp::create(b, l, t);
            })
            .getResult(0);

    Value qSquares = reduceLast(rewriter, loc, q, computeType, true);
    Value kSquares = reduceLast(rewriter, loc, k, computeType, true);
    Value qDot = headDot(rewriter, loc, q, dqOut, computeType);
    Value kDot = headDot(rewriter, loc, k, dkOut, computeType);
    Value dq = headGrad(rewriter, loc, q, dqOut, qSquares, qDot, Value(), mode,
                        eps, rootDim, elementType);
    Value dk = headGrad(rewriter, loc, k, dkOut, kSquares, kDot, tau, mode,
                        eps, rootDim, elementType);

    // (j, b, s): dtau[j] = sqrt(d) sum_{b, s} (k . dk_out) / n(k); the
    // clamped form multiplies by tau inside [1e-7, 2] and is 0 outside.
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    Value epsValue = floatConstant(rewriter, loc, computeType, eps);
    Value root = floatConstant(rewriter, loc, computeType, rootDim);
    Value dtau =
        buildGeneric(
            rewriter, loc, ValueRange{kDot, kSquares},
            filledTensor(rewriter, loc, headSizes, computeType, 0.0),
            {projection(ctx, 3, {d1, d2, d0}), projection(ctx, 3, {d1, d2, d0}),
             projection(ctx, 3, {d0})},
            {kPar, kRed, kRed},
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value n = normOf(b, l, args[1], mode, epsValue).first;
              Value term = arith::DivFOp::create(
                  b, l, arith::MulFOp::create(b, l, root, args[0]), n);
              linalg::YieldOp::create(
                  b, l, arith::AddFOp::create(b, l, args[2], term).getResult());
            })
            .getResult(0);
    Value zero = floatConstant(rewriter, loc, computeType, 0.0);
    Value dtemp =
        buildGeneric(
            rewriter, loc, ValueRange{dtau, tau, temp},
            emptyTensor(rewriter, loc, headSizes, elementType),
            {id1, id1, id1, id1}, {kPar},
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value g = args[0];
              if (clampedTemperature) {
                // torch.clamp passes the gradient on [low, high].
                Value t = convertFloat(b, l, args[2], computeType);
                Value inside = arith::AndIOp::create(
                    b, l,
                    arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, t,
                                          low),
                    arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLE, t,
                                          high));
                g = arith::SelectOp::create(
                    b, l, inside, arith::MulFOp::create(b, l, g, args[1]),
                    zero);
              }
              linalg::YieldOp::create(b, l,
                                      convertFloat(b, l, g, elementType));
            })
            .getResult(0);
    rewriter.replaceOp(
        op, {castTo(rewriter, loc, dq, op.getQGrad().getType()),
             castTo(rewriter, loc, dk, op.getKGrad().getType()),
             castTo(rewriter, loc, dtemp, op.getTempGrad().getType())});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.value_shift_grad
//===----------------------------------------------------------------------===//

struct ValueShiftGradLowering : OpConversionPattern<ValueShiftGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ValueShiftGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value dv = adaptor.getResultGrad();
    Type elementType = elementTypeOf(dv);
    int64_t width = cast<RankedTensorType>(dv.getType()).getDimSize(2);
    int64_t half = width / 2;
    OpFoldResult batch = dimOf(rewriter, loc, dv, 0);
    OpFoldResult seq = dimOf(rewriter, loc, dv, 1);
    OpFoldResult zero = rewriter.getIndexAttr(0);

    Value current = sliceLast(rewriter, loc, dv, 0, half);
    // dprevious[b, t] = dv[b, t + 1, half:], read from dv with one zero step
    // appended (the last token's delayed value has no consumer).
    SmallVector<OpFoldResult> paddedSizes = {
        batch, addIndex(rewriter, loc, seq, 1), rewriter.getIndexAttr(width)};
    Value padded = filledTensor(rewriter, loc, paddedSizes, elementType, 0.0);
    padded = insertAt(rewriter, loc, dv, padded, {zero, zero, zero});
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    SmallVector<OpFoldResult> halfSizes = {batch, seq,
                                           rewriter.getIndexAttr(half)};
    Value previous =
        buildGeneric(rewriter, loc, padded,
                     emptyTensor(rewriter, loc, halfSizes, elementType),
                     {projection(ctx, 3, {d0, d1 + 1, d2 + half}),
                      rewriter.getMultiDimIdentityMap(3)},
                     {kPar, kPar, kPar},
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       linalg::YieldOp::create(b, l, args[0]);
                     })
            .getResult(0);
    rewriter.replaceOp(
        op, {castTo(rewriter, loc, current, op.getCurrentGrad().getType()),
             castTo(rewriter, loc, previous, op.getPreviousGrad().getType())});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.rope_grad
//===----------------------------------------------------------------------===//

struct RoPEGradLowering : OpConversionPattern<RoPEGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RoPEGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<Value> result =
        buildRotation(rewriter, op.getLoc(), adaptor.getResultGrad(),
                      adaptor.getPositions(), op.getRope(), /*transpose=*/true);
    if (failed(result))
      return rewriter.notifyMatchFailure(op, "invalid rotated width");
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), *result,
                                  op.getInputGrad().getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.sdpa_grad
//===----------------------------------------------------------------------===//

struct SDPAGradLowering : OpConversionPattern<SDPAGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SDPAGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value query = adaptor.getQuery(), key = adaptor.getKey();
    Value value = adaptor.getValue(), output = adaptor.getOutput();
    Value outputGrad = adaptor.getOutputGrad();
    auto queryType = cast<RankedTensorType>(query.getType());
    Type elementType = queryType.getElementType();
    Type computeType = computeTypeFor(elementType);
    int64_t numHeads = queryType.getDimSize(2);
    int64_t headDim = queryType.getDimSize(3);
    int64_t numKvHeads = cast<RankedTensorType>(key.getType()).getDimSize(2);
    int64_t group = numHeads / numKvHeads;

    AttentionScores scores = attentionScores(op, adaptor, headDim);
    AttentionProbabilities probabilities =
        buildAttentionProbabilities(rewriter, loc, scores);
    Value probs = probabilities.probs, rowSum = probabilities.rowSum;

    OpFoldResult batch = dimOf(rewriter, loc, query, 0);
    OpFoldResult queries = dimOf(rewriter, loc, query, 1);
    OpFoldResult keys = dimOf(rewriter, loc, key, 1);
    OpFoldResult heads = rewriter.getIndexAttr(numHeads);
    SmallVector<OpFoldResult> scoreSizes = {batch, heads, queries, keys};
    SmallVector<OpFoldResult> rowSizes = {batch, heads, queries};
    AffineExpr d0, d1, d2, d3, d4, d5;
    bindDims(ctx, d0, d1, d2, d3, d4, d5);
    AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
    AffineMap rowMap = projection(ctx, 4, {d0, d1, d2});
    SmallVector<IteratorType> par4(4, kPar);
    Value zero = floatConstant(rewriter, loc, computeType, 0.0);

    // P = p / sum, 0 in a fully masked row.
    Value normalized =
        buildGeneric(rewriter, loc, ValueRange{probs, rowSum},
                     emptyTensor(rewriter, loc, scoreSizes, computeType),
                     {id4, rowMap, id4}, par4,
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value empty = arith::CmpFOp::create(
                           b, l, arith::CmpFPredicate::OEQ, args[1], zero);
                       Value p = arith::DivFOp::create(b, l, args[0], args[1]);
                       linalg::YieldOp::create(
                           b, l,
                           arith::SelectOp::create(b, l, empty, zero, p)
                               .getResult());
                     })
            .getResult(0);

    // (b, h, i, e): D[b, h, i] = sum_e do[b, i, h, e] o[b, i, h, e].
    Value rowDot = contract(rewriter, loc, outputGrad, output,
                            {d0, d2, d1, d3}, {d0, d2, d1, d3}, {d0, d1, d2},
                            parallelThenReduce(4, 3), rowSizes, computeType);
    // (b, h, i, j, e): dP[b, h, i, j] = sum_e do[b, i, h, e] v[b, j, h/G, e].
    Value probsGrad = contract(
        rewriter, loc, outputGrad, value, {d0, d2, d1, d4},
        {d0, d3, d1.floorDiv(group), d4}, {d0, d1, d2, d3}, parallelThenReduce(5, 4), scoreSizes,
        computeType);
    // dS = P (dP - D).
    Value scoresGrad =
        buildGeneric(
            rewriter, loc, ValueRange{normalized, probsGrad, rowDot},
            emptyTensor(rewriter, loc, scoreSizes, computeType),
            {id4, id4, rowMap, id4}, par4,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value centered = arith::SubFOp::create(b, l, args[1], args[2]);
              linalg::YieldOp::create(
                  b, l,
                  arith::MulFOp::create(b, l, args[0], centered).getResult());
            })
            .getResult(0);

    double scale = scores.scale;
    OpFoldResult headDimSize = rewriter.getIndexAttr(headDim);
    OpFoldResult valueDimSize = dimOf(rewriter, loc, value, 3);
    OpFoldResult kvHeads = rewriter.getIndexAttr(numKvHeads);
    // (b, i, h, e, j): dq[b, i, h, e] = s sum_j dS[b, h, i, j] k[b, j, h/G, e].
    Value dq = contract(rewriter, loc, scoresGrad, key, {d0, d2, d1, d4},
                        {d0, d4, d2.floorDiv(group), d3}, {d0, d1, d2, d3},
                        parallelThenReduce(5, 4),
                        {batch, queries, heads, headDimSize}, elementType,
                        scale);
    // (b, j, hk, e, g, i): dk[b, j, hk, e] = s sum_{g, i}
    //     dS[b, hk G + g, i, j] q[b, i, hk G + g, e].
    // The head h = hk G + g as (hk, g): [B, Hk, G, S, T] and [B, S, Hk, G, e].
    Value groupedScoresGrad = splitDim(rewriter, loc, scoresGrad, 1, group);
    Value dk = contract(rewriter, loc, groupedScoresGrad,
                        splitDim(rewriter, loc, query, 2, group),
                        {d0, d2, d4, d5, d1}, {d0, d5, d2, d4, d3},
                        {d0, d1, d2, d3}, parallelThenReduce(6, 4),
                        {batch, keys, kvHeads, headDimSize}, elementType,
                        scale);
    // dv[b, j, hk, e] = sum_{g, i} P[b, hk G + g, i, j] do[b, i, hk G + g, e].
    Value dv = contract(rewriter, loc,
                        splitDim(rewriter, loc, normalized, 1, group),
                        splitDim(rewriter, loc, outputGrad, 2, group),
                        {d0, d2, d4, d5, d1}, {d0, d5, d2, d4, d3},
                        {d0, d1, d2, d3}, parallelThenReduce(6, 4),
                        {batch, keys, kvHeads, valueDimSize}, elementType);

    SmallVector<Value> results = {
        castTo(rewriter, loc, dq, op.getQueryGrad().getType()),
        castTo(rewriter, loc, dk, op.getKeyGrad().getType()),
        castTo(rewriter, loc, dv, op.getValueGrad().getType())};
    if (Value bias = adaptor.getBias()) {
      // dbias = dS summed over the batch, and over the heads for [S, T].
      Value biasGrad;
      if (cast<RankedTensorType>(bias.getType()).getRank() == 2)
        biasGrad = sumInto(rewriter, loc, scoresGrad, {d2, d3, d0, d1},
                           {d0, d1}, parallelThenReduce(4, 2), {queries, keys}, elementType);
      else
        biasGrad = sumInto(rewriter, loc, scoresGrad, {d3, d0, d1, d2},
                           {d0, d1, d2}, parallelThenReduce(4, 3), {heads, queries, keys},
                           elementType);
      results.push_back(
          castTo(rewriter, loc, biasGrad, op.getBiasGrad().getType()));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void attnfuse::populateAttnGradToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ProjectGradLowering, CausalConv1DGradLowering,
               QKMeanGradLowering, QKNormGradLowering, ValueShiftGradLowering,
               RoPEGradLowering, SDPAGradLowering>(patterns.getContext());
}
