//===- AttnToLinalg.cpp - attn primitives to linalg -------------*- C++ -*-===//
//
// The reference lowering of the primitive attn ops on tensors: every op
// becomes linalg.generic / linalg.fill ops plus tensor slicing, with arith
// and math in the loop bodies. It favours clarity and exactness over speed:
// each mathematical step of docs/semantics.md is one linalg op, and all
// arithmetic runs in f32 for bf16/f16 tensors.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNTOLINALGPASS
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse::attn;

#include "LinalgBuilders.h"
using namespace attnfuse::linalg_builders;

namespace {

//===----------------------------------------------------------------------===//
// attn.project: x W^T + b
//===----------------------------------------------------------------------===//

struct ProjectLowering : OpConversionPattern<ProjectOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ProjectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput(), weight = adaptor.getWeight();
    Type elementType = elementTypeOf(input);
    Type computeType = computeTypeFor(elementType);
    MLIRContext *ctx = rewriter.getContext();

    SmallVector<OpFoldResult> sizes = {dimOf(rewriter, loc, input, 0),
                                       dimOf(rewriter, loc, input, 1),
                                       dimOf(rewriter, loc, weight, 0)};
    Value init =
        biasOrZeroInit(rewriter, loc, sizes, adaptor.getBias(), computeType);

    // (b, s, n, e): acc[b, s, n] += x[b, s, e] * w[n, e].
    AffineExpr d0, d1, d2, d3;
    bindDims(ctx, d0, d1, d2, d3);
    Value acc =
        buildGeneric(
            rewriter, loc, ValueRange{input, weight}, init,
            {projection(ctx, 4, {d0, d1, d3}), projection(ctx, 4, {d2, d3}),
             projection(ctx, 4, {d0, d1, d2})},
            {kPar, kPar, kPar, kRed},
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value x = convertFloat(b, l, args[0], computeType);
              Value w = convertFloat(b, l, args[1], computeType);
              Value prod = arith::MulFOp::create(b, l, x, w);
              linalg::YieldOp::create(
                  b, l, arith::AddFOp::create(b, l, args[2], prod).getResult());
            })
            .getResult(0);
    Value result = convertTensor(rewriter, loc, acc, elementType);
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.causal_conv1d: left zero padding, then a valid grouped convolution
//===----------------------------------------------------------------------===//

struct CausalConv1DLowering : OpConversionPattern<CausalConv1DOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CausalConv1DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput(), weight = adaptor.getWeight();
    auto weightType = cast<RankedTensorType>(weight.getType());
    Type elementType = elementTypeOf(input);
    Type computeType = computeTypeFor(elementType);
    int64_t channels = cast<RankedTensorType>(input.getType()).getDimSize(2);
    int64_t groupWidth = channels / op.getGroups();
    int64_t kernel = weightType.getDimSize(2);
    int64_t padding = op.getPadding();

    // padded[b, p + t, c] = x[b, t, c], zeros in front.
    OpFoldResult seq = dimOf(rewriter, loc, input, 1);
    OpFoldResult batch = dimOf(rewriter, loc, input, 0);
    SmallVector<OpFoldResult> paddedSizes = {
        batch, addIndex(rewriter, loc, seq, padding),
        rewriter.getIndexAttr(channels)};
    Value padded = filledTensor(rewriter, loc, paddedSizes, elementType, 0.0);
    padded = insertAt(rewriter, loc, input, padded,
                      {rewriter.getIndexAttr(0), rewriter.getIndexAttr(padding),
                       rewriter.getIndexAttr(0)});

    // The output has seq + padding - (kernel - 1) steps.
    OpFoldResult outSeq = addIndex(rewriter, loc, seq, padding - (kernel - 1));
    SmallVector<OpFoldResult> outSizes = {batch, outSeq,
                                          rewriter.getIndexAttr(channels)};
    Value init =
        biasOrZeroInit(rewriter, loc, outSizes, adaptor.getBias(), computeType);

    // Channels as (group, channel in group) and the weight as
    // wt[g, k, ci, co] = w[g * cpg + co, ci, k], so that with loops
    // (b, t, g, k, ci, co): out[b, t, g, co] += padded[b, t + k, g, ci]
    //                                           * wt[g, k, ci, co]
    // the innermost loop runs over contiguous output channels of one token
    // (vector code; a sum over ci innermost is a scalar chain). Tap 0 is the
    // oldest.
    int64_t groups = op.getGroups();
    Value grouped = splitDim(rewriter, loc, weight, 0, groupWidth);
    Value transposedInit = emptyTensor(
        rewriter, loc,
        {rewriter.getIndexAttr(groups), rewriter.getIndexAttr(kernel),
         rewriter.getIndexAttr(groupWidth), rewriter.getIndexAttr(groupWidth)},
        weightType.getElementType());
    Value transposed =
        linalg::TransposeOp::create(rewriter, loc, grouped, transposedInit,
                                    ArrayRef<int64_t>{0, 3, 2, 1})
            .getResult()[0];
    AffineExpr b, t, g, k, ci, co;
    bindDims(ctx, b, t, g, k, ci, co);
    Value accGrouped =
        buildGeneric(
            rewriter, loc,
            ValueRange{splitDim(rewriter, loc, padded, 2, groupWidth),
                       transposed},
            splitDim(rewriter, loc, init, 2, groupWidth),
            {projection(ctx, 6, {b, t + k, g, ci}),
             projection(ctx, 6, {g, k, ci, co}),
             projection(ctx, 6, {b, t, g, co})},
            {kPar, kPar, kPar, kRed, kRed, kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value x = convertFloat(nb, l, args[0], computeType);
              Value w = convertFloat(nb, l, args[1], computeType);
              Value prod = arith::MulFOp::create(nb, l, x, w);
              linalg::YieldOp::create(
                  nb, l,
                  arith::AddFOp::create(nb, l, args[2], prod).getResult());
            })
            .getResult(0);
    Value acc = tensor::CollapseShapeOp::create(
        rewriter, loc, accGrouped,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    Value result = convertTensor(rewriter, loc, acc, elementType);
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.qk_mean: CCA residual from the pre-convolution projections
//===----------------------------------------------------------------------===//

struct QKMeanLowering : OpConversionPattern<QKMeanOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QKMeanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value qConv = adaptor.getQConv(), kConv = adaptor.getKConv();
    Value qRaw = adaptor.getQRaw(), kRaw = adaptor.getKRaw();
    auto qType = cast<RankedTensorType>(qConv.getType());
    auto kType = cast<RankedTensorType>(kConv.getType());
    Type elementType = qType.getElementType();
    Type computeType = computeTypeFor(elementType);
    int64_t numHeads = qType.getDimSize(2), numKvHeads = kType.getDimSize(2);
    int64_t group = numHeads / numKvHeads;
    int64_t headDim = qType.getDimSize(3);

    AffineExpr d0, d1, d2, d3, d4;
    bindDims(ctx, d0, d1, d2, d3, d4);
    AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
    SmallVector<IteratorType> par4(4, kPar);
    Value half = floatConstant(rewriter, loc, computeType, 0.5);

    // q[h] = q_conv[h] + 0.5 q_raw[h] + 0.5 k_raw[h / G].
    Value qInit =
        emptyTensor(rewriter, loc, tensor::getMixedSizes(rewriter, loc, qConv),
                    elementType);
    Value query =
        buildGeneric(
            rewriter, loc, ValueRange{qConv, qRaw, kRaw}, qInit,
            {id4, id4, projection(ctx, 4, {d0, d1, d2.floorDiv(group), d3}),
             id4},
            par4,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value qc = convertFloat(b, l, args[0], computeType);
              Value qr = convertFloat(b, l, args[1], computeType);
              Value kr = convertFloat(b, l, args[2], computeType);
              Value sum = arith::AddFOp::create(
                  b, l, arith::MulFOp::create(b, l, half, qr),
                  arith::MulFOp::create(b, l, half, kr));
              sum = arith::AddFOp::create(b, l, qc, sum);
              linalg::YieldOp::create(b, l,
                                      convertFloat(b, l, sum, elementType));
            })
            .getResult(0);

    // Sum of q_raw over each group: view [B, S, Hq, d] as [B, S, Hk, G, d].
    SmallVector<OpFoldResult> groupedSizes = {
        dimOf(rewriter, loc, qRaw, 0), dimOf(rewriter, loc, qRaw, 1),
        rewriter.getIndexAttr(numKvHeads), rewriter.getIndexAttr(group),
        rewriter.getIndexAttr(headDim)};
    auto groupedType = RankedTensorType::get(
        {qType.getDimSize(0), qType.getDimSize(1), numKvHeads, group, headDim},
        elementType);
    Value grouped = tensor::ExpandShapeOp::create(
        rewriter, loc, groupedType, qRaw,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}}, groupedSizes);
    SmallVector<OpFoldResult> kSizes =
        tensor::getMixedSizes(rewriter, loc, kConv);
    Value groupSum =
        buildGeneric(rewriter, loc, grouped,
                     filledTensor(rewriter, loc, kSizes, computeType, 0.0),
                     {projection(ctx, 5, {d0, d1, d2, d4, d3}),
                      projection(ctx, 5, {d0, d1, d2, d3})},
                     {kPar, kPar, kPar, kPar, kRed},
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value x = convertFloat(b, l, args[0], computeType);
                       linalg::YieldOp::create(
                           b, l,
                           arith::AddFOp::create(b, l, args[1], x).getResult());
                     })
            .getResult(0);

    // k[j] = k_conv[j] + 0.5 mean(q_raw over group j) + 0.5 k_raw[j].
    Value invGroup = floatConstant(rewriter, loc, computeType,
                                   1.0 / static_cast<double>(group));
    Value key =
        buildGeneric(rewriter, loc, ValueRange{kConv, groupSum, kRaw},
                     emptyTensor(rewriter, loc, kSizes, elementType),
                     {id4, id4, id4, id4}, par4,
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value kc = convertFloat(b, l, args[0], computeType);
                       Value mean =
                           arith::MulFOp::create(b, l, args[1], invGroup);
                       Value kr = convertFloat(b, l, args[2], computeType);
                       Value sum = arith::AddFOp::create(
                           b, l, arith::MulFOp::create(b, l, half, mean),
                           arith::MulFOp::create(b, l, half, kr));
                       sum = arith::AddFOp::create(b, l, kc, sum);
                       linalg::YieldOp::create(
                           b, l, convertFloat(b, l, sum, elementType));
                     })
            .getResult(0);
    rewriter.replaceOp(op, {castTo(rewriter, loc, query, op.getQ().getType()),
                            castTo(rewriter, loc, key, op.getK().getType())});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.qk_norm: per-head L2 norm to sqrt(d), key temperature
//===----------------------------------------------------------------------===//

struct QKNormLowering : OpConversionPattern<QKNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QKNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value query = adaptor.getQ(), key = adaptor.getK();
    Type elementType = elementTypeOf(query);
    Type computeType = computeTypeFor(elementType);
    int64_t headDim = cast<RankedTensorType>(query.getType()).getDimSize(3);
    double eps = op.getEps().convertToDouble();
    bool clampEps = op.getNorm() == NormMode::clamp_eps;
    bool clamped = op.getTemperature() == TemperatureMode::clamped;

    Value queryOut = normalize(rewriter, loc, query, /*temp=*/{}, computeType,
                               headDim, eps, clampEps, clamped);
    Value keyOut = normalize(rewriter, loc, key, adaptor.getTemp(), computeType,
                             headDim, eps, clampEps, clamped);
    rewriter.replaceOp(op,
                       {castTo(rewriter, loc, queryOut, op.getQOut().getType()),
                        castTo(rewriter, loc, keyOut, op.getKOut().getType())});
    return success();
  }

  /// `x * sqrt(d) / sqrt(|x|^2 + eps)` per head (`clampEps`:
  /// `x * sqrt(d) / max(|x|, eps)`, as `sqrt(max(|x|^2, eps^2))`), times
  /// `tau[head]` when `temp` is given.
  static Value normalize(OpBuilder &rewriter, Location loc, Value heads,
                         Value temp, Type computeType, int64_t headDim,
                         double eps, bool clampEps, bool clamped) {
    MLIRContext *ctx = rewriter.getContext();
    Type elementType = elementTypeOf(heads);
    Value sumSquares =
        reduceLast(rewriter, loc, heads, computeType, /*squares=*/true);
    AffineExpr d0, d1, d2, d3;
    bindDims(ctx, d0, d1, d2, d3);
    AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
    SmallVector<Value> inputs = {heads, sumSquares};
    SmallVector<AffineMap> maps = {id4, projection(ctx, 4, {d0, d1, d2})};
    if (temp) {
      inputs.push_back(temp);
      maps.push_back(projection(ctx, 4, {d2}));
    }
    maps.push_back(id4);
    Value sqrtD = floatConstant(rewriter, loc, computeType,
                                std::sqrt(static_cast<double>(headDim)));
    Value epsValue =
        floatConstant(rewriter, loc, computeType, clampEps ? eps * eps : eps);
    Value lo = floatConstant(rewriter, loc, computeType, 1e-7);
    Value hi = floatConstant(rewriter, loc, computeType, 2.0);
    Value init =
        emptyTensor(rewriter, loc, tensor::getMixedSizes(rewriter, loc, heads),
                    elementType);
    return buildGeneric(
               rewriter, loc, inputs, init, maps,
               SmallVector<IteratorType>(4, kPar),
               [&](OpBuilder &b, Location l, ValueRange args) {
                 Value x = convertFloat(b, l, args[0], computeType);
                 Value floored =
                     clampEps
                         ? arith::MaximumFOp::create(b, l, args[1], epsValue)
                               .getResult()
                         : arith::AddFOp::create(b, l, args[1], epsValue)
                               .getResult();
                 Value norm = math::SqrtOp::create(b, l, floored);
                 Value y = arith::DivFOp::create(
                     b, l, arith::MulFOp::create(b, l, sqrtD, x), norm);
                 if (temp) {
                   Value tau = convertFloat(b, l, args[2], computeType);
                   if (clamped) {
                     tau = arith::MaximumFOp::create(b, l, tau, lo);
                     tau = arith::MinimumFOp::create(b, l, tau, hi);
                     tau = math::ExpOp::create(b, l, tau);
                   }
                   y = arith::MulFOp::create(b, l, y, tau);
                 }
                 linalg::YieldOp::create(b, l,
                                         convertFloat(b, l, y, elementType));
               })
        .getResult(0);
  }
};

//===----------------------------------------------------------------------===//
// attn.value_shift: concat(current[t], previous[t - 1]), previous[-1] = 0
//===----------------------------------------------------------------------===//

struct ValueShiftLowering : OpConversionPattern<ValueShiftOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ValueShiftOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value current = adaptor.getCurrent(), previous = adaptor.getPrevious();
    Type elementType = elementTypeOf(current);
    int64_t width = cast<RankedTensorType>(current.getType()).getDimSize(2);
    OpFoldResult batch = dimOf(rewriter, loc, current, 0);
    OpFoldResult seq = dimOf(rewriter, loc, current, 1);
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);

    Value result = filledTensor(rewriter, loc,
                                {batch, seq, rewriter.getIndexAttr(2 * width)},
                                elementType, 0.0);
    result = insertAt(rewriter, loc, current, result, {zero, zero, zero});
    // previous[:, 0 : S - 1] goes to result[:, 1 : S, width : 2 width]
    // (nothing for a static single step).
    std::optional<int64_t> staticSeq = getConstantIntValue(seq);
    if (!staticSeq || *staticSeq > 1) {
      OpFoldResult shifted;
      if (std::optional<int64_t> known = getConstantIntValue(seq))
        shifted = rewriter.getIndexAttr(std::max<int64_t>(*known - 1, 0));
      else
        shifted = arith::MaxSIOp::create(
                      rewriter, loc,
                      arith::SubIOp::create(rewriter, loc, cast<Value>(seq),
                                            indexConstant(rewriter, loc, 1)),
                      indexConstant(rewriter, loc, 0))
                      .getResult();
      Value head = tensor::ExtractSliceOp::create(
          rewriter, loc, previous, SmallVector<OpFoldResult>{zero, zero, zero},
          SmallVector<OpFoldResult>{batch, shifted,
                                    rewriter.getIndexAttr(width)},
          SmallVector<OpFoldResult>{one, one, one});
      result = insertAt(rewriter, loc, head, result,
                        {zero, one, rewriter.getIndexAttr(width)});
    }
    // A decoder's previous token, before the first new one.
    if (Value state = adaptor.getState()) {
      Value first = tensor::ExtractSliceOp::create(
          rewriter, loc, state, SmallVector<OpFoldResult>{zero, zero, zero},
          SmallVector<OpFoldResult>{batch,
                                    getConstantIntValue(seq) == 0 ? zero : one,
                                    rewriter.getIndexAttr(width)},
          SmallVector<OpFoldResult>{one, one, one});
      result = insertAt(rewriter, loc, first, result,
                        {zero, zero, rewriter.getIndexAttr(width)});
    }
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.rope: NeoX rotate-half on the first r dims, position = index along S
//===----------------------------------------------------------------------===//

} // namespace

FailureOr<Value> attnfuse::linalg_builders::buildRotation(
    OpBuilder &rewriter, Location loc, Value input, Value positions,
    RopeAttr rope, bool transpose) {
  MLIRContext *ctx = rewriter.getContext();
  auto type = cast<RankedTensorType>(input.getType());
  Type elementType = type.getElementType();
  Type computeType = computeTypeFor(elementType);
  int64_t headDim = type.getDimSize(3);
  FailureOr<int64_t> rotated = rope.getRotatedDim(headDim);
  if (failed(rotated) || *rotated % 2 != 0)
    return failure();
  if (*rotated == 0)
    return input;
  int64_t rot = *rotated, half = rot / 2;
  double theta = rope.getThetaValue();
  // Inverse frequencies theta^(-2i/r), i < r/2, in f64.
  Type f64 = rewriter.getF64Type();
  SmallVector<double> invFreq;
  for (int64_t i = 0; i < half; ++i)
    invFreq.push_back(std::pow(theta, -2.0 * static_cast<double>(i) /
                                          static_cast<double>(rot)));
  auto freqType = RankedTensorType::get({half}, f64);
  Value freqs = arith::ConstantOp::create(
      rewriter, loc, freqType,
      DenseElementsAttr::get(freqType, ArrayRef<double>(invFreq)));

  // cos and sin of angle = s * f_i, once per (position, pair) and shared by
  // the heads: [S, r/2], or [B, S, r/2] when token t of sequence b sits at
  // positions[b] + t (else at t). Per element, the heads' f64 sin and cos
  // were most of a backward's serial time.
  Value first = sliceLast(rewriter, loc, input, 0, half);
  Value second = sliceLast(rewriter, loc, input, half, half);
  SmallVector<OpFoldResult> halfSizes =
      tensor::getMixedSizes(rewriter, loc, first);
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  const unsigned tableRank = positions ? 3 : 2;
  SmallVector<OpFoldResult> tableSizes;
  if (positions)
    tableSizes.push_back(halfSizes[0]);
  tableSizes.append({halfSizes[1], rewriter.getIndexAttr(half)});
  SmallVector<Value> tableInputs = {freqs};
  SmallVector<AffineMap> tableMaps = {
      projection(ctx, tableRank, {rewriter.getAffineDimExpr(tableRank - 1)})};
  if (positions) {
    tableInputs.push_back(positions);
    tableMaps.push_back(projection(ctx, tableRank, {d0}));
  }
  AffineMap tableId = rewriter.getMultiDimIdentityMap(tableRank);
  tableMaps.append({tableId, tableId});
  auto tables = buildGeneric(
      rewriter, loc, tableInputs,
      ValueRange{emptyTensor(rewriter, loc, tableSizes, computeType),
                 emptyTensor(rewriter, loc, tableSizes, computeType)},
      tableMaps, SmallVector<IteratorType>(tableRank, kPar),
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value pos = linalg::IndexOp::create(b, l, tableRank - 2);
        if (positions)
          pos = arith::AddIOp::create(b, l, pos, toIndex(b, l, args[1]));
        Value posInt = arith::IndexCastOp::create(b, l, b.getI64Type(), pos);
        Value posFloat = arith::SIToFPOp::create(b, l, f64, posInt);
        Value angle = arith::MulFOp::create(b, l, posFloat, args[0]);
        Value cos =
            convertFloat(b, l, math::CosOp::create(b, l, angle), computeType);
        Value sin =
            convertFloat(b, l, math::SinOp::create(b, l, angle), computeType);
        // The transpose rotates by the opposite angle.
        if (transpose)
          sin = arith::NegFOp::create(b, l, sin);
        linalg::YieldOp::create(b, l, ValueRange{cos, sin});
      });

  // (x1, x2) = (x[:half], x[half:r]):
  //   out1 = x1 cos - x2 sin, out2 = x2 cos + x1 sin.
  AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
  AffineMap tableMap = positions ? projection(ctx, 4, {d0, d1, d3})
                                 : projection(ctx, 4, {d1, d3});
  auto rotatedHalves = buildGeneric(
      rewriter, loc,
      ValueRange{first, second, tables.getResult(0), tables.getResult(1)},
      ValueRange{emptyTensor(rewriter, loc, halfSizes, elementType),
                 emptyTensor(rewriter, loc, halfSizes, elementType)},
      {id4, id4, tableMap, tableMap, id4, id4},
      SmallVector<IteratorType>(4, kPar),
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value cos = args[2], sin = args[3];
        Value x1 = convertFloat(b, l, args[0], computeType);
        Value x2 = convertFloat(b, l, args[1], computeType);
        Value out1 =
            arith::SubFOp::create(b, l, arith::MulFOp::create(b, l, x1, cos),
                                  arith::MulFOp::create(b, l, x2, sin));
        Value out2 =
            arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, x2, cos),
                                  arith::MulFOp::create(b, l, x1, sin));
        linalg::YieldOp::create(
            b, l,
            ValueRange{convertFloat(b, l, out1, elementType),
                       convertFloat(b, l, out2, elementType)});
      });

  OpFoldResult zero = rewriter.getIndexAttr(0);
  Value result =
      emptyTensor(rewriter, loc, tensor::getMixedSizes(rewriter, loc, input),
                  elementType);
  result = insertAt(rewriter, loc, rotatedHalves.getResult(0), result,
                    {zero, zero, zero, zero});
  result = insertAt(rewriter, loc, rotatedHalves.getResult(1), result,
                    {zero, zero, zero, rewriter.getIndexAttr(half)});
  if (rot < headDim)
    result = insertAt(rewriter, loc,
                      sliceLast(rewriter, loc, input, rot, headDim - rot),
                      result, {zero, zero, zero, rewriter.getIndexAttr(rot)});
  return result;
}

namespace {

struct RoPELowering : OpConversionPattern<RoPEOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RoPEOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<Value> result =
        buildRotation(rewriter, op.getLoc(), adaptor.getInput(),
                      adaptor.getPositions(), op.getRope(), /*transpose=*/false);
    if (failed(result))
      return rewriter.notifyMatchFailure(op, "invalid rotated width");
    rewriter.replaceOp(op,
                       castTo(rewriter, op.getLoc(), *result, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// attn.sdpa: masked, max-subtracted softmax attention with GQA
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// attn.mask_tokens: x[b, s] where mask[b, s] != 0, else zeros
//===----------------------------------------------------------------------===//

struct MaskTokensLowering : OpConversionPattern<MaskTokensOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MaskTokensOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput();
    Type elementType = elementTypeOf(input);
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, input);
    Value zero = floatConstant(rewriter, loc, elementType, 0.0);
    Value result =
        buildGeneric(
            rewriter, loc, ValueRange{input, adaptor.getMask()},
            emptyTensor(rewriter, loc, sizes, elementType),
            {rewriter.getMultiDimIdentityMap(3), projection(ctx, 3, {d0, d1}),
             rewriter.getMultiDimIdentityMap(3)},
            {kPar, kPar, kPar},
            [&](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l,
                  arith::SelectOp::create(b, l, isNonZero(b, l, args[1]),
                                          args[0], zero)
                      .getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

} // namespace

AttentionProbabilities attnfuse::linalg_builders::buildAttentionProbabilities(
    OpBuilder &rewriter, Location loc, const AttentionScores &spec) {
  MLIRContext *ctx = rewriter.getContext();
  Value query = spec.query, key = spec.key, bias = spec.bias;
  auto queryType = cast<RankedTensorType>(query.getType());
  Type computeType = computeTypeFor(queryType.getElementType());
  int64_t numHeads = queryType.getDimSize(2);
  int64_t numKvHeads = cast<RankedTensorType>(key.getType()).getDimSize(2);
  int64_t group = numHeads / numKvHeads;
  double scale = spec.scale;
  bool causal = spec.causal;
  std::optional<int64_t> window = spec.window;

  OpFoldResult batch = dimOf(rewriter, loc, query, 0);
  OpFoldResult queries = dimOf(rewriter, loc, query, 1);
  OpFoldResult keys = dimOf(rewriter, loc, key, 1);
  OpFoldResult heads = rewriter.getIndexAttr(numHeads);
  SmallVector<OpFoldResult> scoreSizes = {batch, heads, queries, keys};
  SmallVector<OpFoldResult> rowSizes = {batch, heads, queries};

  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
  AffineMap rowMap = projection(ctx, 4, {d0, d1, d2});
  SmallVector<IteratorType> par4(4, kPar);
  SmallVector<IteratorType> rowReduce = {kPar, kPar, kPar, kRed};

  // 1. scores[b, h, i, j] = q[b, i, h] . k[b, j, h / G], with the keys
  // innermost: loops (b, h, i, e, j) over k^T [B, Hk, d, T] (one copy), so
  // the inner loop is a contiguous multiply-add over a row of keys (a dot
  // product innermost is a scalar chain: floating-point sums do not
  // reassociate). Each score still sums e = 0 .. d - 1 in order.
  Value keyTransposed =
      linalg::TransposeOp::create(
          rewriter, loc, key,
          emptyTensor(rewriter, loc,
                      {batch, rewriter.getIndexAttr(numKvHeads),
                       rewriter.getIndexAttr(queryType.getDimSize(3)), keys},
                      cast<RankedTensorType>(key.getType()).getElementType()),
          ArrayRef<int64_t>{0, 2, 3, 1})
          .getResult()[0];
  Value scores =
      buildGeneric(rewriter, loc, ValueRange{query, keyTransposed},
                   filledTensor(rewriter, loc, scoreSizes, computeType, 0.0),
                   {projection(ctx, 5, {d0, d2, d1, d3}),
                    projection(ctx, 5, {d0, d1.floorDiv(group), d3, d4}),
                    projection(ctx, 5, {d0, d1, d2, d4})},
                   {kPar, kPar, kPar, kRed, kPar},
                   [&](OpBuilder &b, Location l, ValueRange args) {
                     Value q = convertFloat(b, l, args[0], computeType);
                     Value k = convertFloat(b, l, args[1], computeType);
                     linalg::YieldOp::create(
                         b, l,
                         arith::AddFOp::create(
                             b, l, args[2], arith::MulFOp::create(b, l, q, k))
                             .getResult());
                   })
          .getResult(0);

  // 2. logits = scale * scores + bias, -inf where masked. Query i sits at
  // absolute position i + (T - S).
  Value offset;
  Value positions = spec.positions;
  if ((causal || window) && !positions) {
    std::optional<int64_t> s = getConstantIntValue(queries);
    std::optional<int64_t> t = getConstantIntValue(keys);
    offset =
        s && t ? indexConstant(rewriter, loc, *t - *s)
               : arith::SubIOp::create(
                     rewriter, loc,
                     getValueOrCreateConstantIndexOp(rewriter, loc, keys),
                     getValueOrCreateConstantIndexOp(rewriter, loc, queries))
                     .getResult();
  }
  Value scaleValue = floatConstant(rewriter, loc, computeType, scale);
  Value negInf = floatConstant(rewriter, loc, computeType,
                               -std::numeric_limits<double>::infinity());
  Value windowValue =
      window ? indexConstant(rewriter, loc, *window) : Value();
  SmallVector<Value> logitInputs = {scores};
  SmallVector<AffineMap> logitMaps = {id4};
  if (bias) {
    logitInputs.push_back(bias);
    bool perHead = cast<RankedTensorType>(bias.getType()).getRank() == 3;
    logitMaps.push_back(perHead ? projection(ctx, 4, {d1, d2, d3})
                                : projection(ctx, 4, {d2, d3}));
  }
  // Per-sequence query offsets of a decoder: query i of sequence b sits at
  // positions[b] + i.
  unsigned positionsArg = logitInputs.size();
  bool maskByPosition = (causal || window) && positions;
  if (maskByPosition) {
    logitInputs.push_back(positions);
    logitMaps.push_back(projection(ctx, 4, {d0}));
  }
  // A padded batch: key j of sequence b is visible only where
  // key_mask[b, j] != 0.
  unsigned keyMaskArg = logitInputs.size();
  Value keyMask = spec.keyMask;
  if (keyMask) {
    logitInputs.push_back(keyMask);
    logitMaps.push_back(projection(ctx, 4, {d0, d3}));
  }
  logitMaps.push_back(id4);
  Value logits =
      buildGeneric(
          rewriter, loc, logitInputs,
          emptyTensor(rewriter, loc, scoreSizes, computeType), logitMaps,
          par4,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value logit = arith::MulFOp::create(b, l, args[0], scaleValue);
            if (bias)
              logit = arith::AddFOp::create(
                  b, l, logit, convertFloat(b, l, args[1], computeType));
            if (causal || window) {
              Value i = linalg::IndexOp::create(b, l, 2);
              Value j = linalg::IndexOp::create(b, l, 3);
              Value position = arith::AddIOp::create(
                  b, l, i,
                  maskByPosition ? toIndex(b, l, args[positionsArg])
                                 : offset);
              Value keep;
              if (causal)
                keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle,
                                             j, position);
              if (window) {
                Value distance = arith::SubIOp::create(b, l, position, j);
                Value inWindow = arith::CmpIOp::create(
                    b, l, arith::CmpIPredicate::slt, distance, windowValue);
                keep = keep ? arith::AndIOp::create(b, l, keep, inWindow)
                                  .getResult()
                            : inWindow;
              }
              logit = arith::SelectOp::create(b, l, keep, logit, negInf);
            }
            if (keyMask)
              logit = arith::SelectOp::create(
                  b, l, isNonZero(b, l, args[keyMaskArg]), logit, negInf);
            linalg::YieldOp::create(b, l, logit);
          })
          .getResult(0);

  // 3. Row maximum (-inf for a fully masked row).
  Value rowMax =
      buildGeneric(rewriter, loc, logits,
                   filledTensor(rewriter, loc, rowSizes, computeType,
                                -std::numeric_limits<double>::infinity()),
                   {id4, rowMap}, rowReduce,
                   [&](OpBuilder &b, Location l, ValueRange args) {
                     linalg::YieldOp::create(
                         b, l,
                         arith::MaximumFOp::create(b, l, args[0], args[1])
                             .getResult());
                   })
          .getResult(0);

  // 4. p = exp(logit - max); 0 for a fully masked row (max = -inf), where
  // exp(-inf - -inf) would be NaN.
  Value zero = floatConstant(rewriter, loc, computeType, 0.0);
  Value probs =
      buildGeneric(
          rewriter, loc, ValueRange{logits, rowMax},
          emptyTensor(rewriter, loc, scoreSizes, computeType),
          {id4, rowMap, id4}, par4,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value shifted = arith::SubFOp::create(b, l, args[0], args[1]);
            Value e = math::ExpOp::create(b, l, shifted);
            Value masked = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ, args[1], negInf);
            linalg::YieldOp::create(
                b, l,
                arith::SelectOp::create(b, l, masked, zero, e).getResult());
          })
          .getResult(0);

  // 5. Row sums.
  Value rowSum =
      buildGeneric(
          rewriter, loc, probs,
          filledTensor(rewriter, loc, rowSizes, computeType, 0.0),
          {id4, rowMap}, rowReduce,
          [&](OpBuilder &b, Location l, ValueRange args) {
            linalg::YieldOp::create(
                b, l,
                arith::AddFOp::create(b, l, args[0], args[1]).getResult());
          })
          .getResult(0);
  return {probs, rowSum, rowMax};
}

namespace {

struct SDPALowering : OpConversionPattern<SDPAOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SDPAOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value query = adaptor.getQuery(), value = adaptor.getValue();
    auto queryType = cast<RankedTensorType>(query.getType());
    Type elementType = queryType.getElementType();
    Type computeType = computeTypeFor(elementType);
    int64_t numHeads = queryType.getDimSize(2);
    int64_t headDim = queryType.getDimSize(3);
    int64_t numKvHeads =
        cast<RankedTensorType>(adaptor.getKey().getType()).getDimSize(2);
    int64_t valueDim = cast<RankedTensorType>(value.getType()).getDimSize(3);
    int64_t group = numHeads / numKvHeads;

    // 1.-5. Masked logits, row maxima, exp(logit - max), row sums.
    AttentionScores scores = attentionScores(op, adaptor, headDim);
    scores.positions = adaptor.getPositions();
    auto [probs, rowSum, rowMax] =
        buildAttentionProbabilities(rewriter, loc, scores);

    OpFoldResult batch = dimOf(rewriter, loc, query, 0);
    OpFoldResult queries = dimOf(rewriter, loc, query, 1);
    OpFoldResult heads = rewriter.getIndexAttr(numHeads);
    AffineExpr d0, d1, d2, d3, d4;
    bindDims(ctx, d0, d1, d2, d3, d4);
    AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
    SmallVector<IteratorType> par4(4, kPar);
    Value zero = floatConstant(rewriter, loc, computeType, 0.0);

    // 6. acc[b, i, h, e] = sum_j p[b, h, i, j] v[b, j, h / G, e], loops
    // (b, i, h, j, e): the value dims innermost (a contiguous multiply-add
    // over a value row; a sum over j innermost would be a scalar chain
    // reading v T rows apart). Each element still sums j in order.
    SmallVector<OpFoldResult> outSizes = {batch, queries, heads,
                                          rewriter.getIndexAttr(valueDim)};
    Value acc =
        buildGeneric(
            rewriter, loc, ValueRange{probs, value},
            filledTensor(rewriter, loc, outSizes, computeType, 0.0),
            {projection(ctx, 5, {d0, d2, d1, d3}),
             projection(ctx, 5, {d0, d3, d2.floorDiv(group), d4}),
             projection(ctx, 5, {d0, d1, d2, d4})},
            {kPar, kPar, kPar, kRed, kPar},
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value v = convertFloat(b, l, args[1], computeType);
              linalg::YieldOp::create(
                  b, l,
                  arith::AddFOp::create(b, l, args[2],
                                        arith::MulFOp::create(b, l, args[0], v))
                      .getResult());
            })
            .getResult(0);

    // 7. o = acc / sum, zeros for a fully masked row (sum = 0).
    Value result =
        buildGeneric(rewriter, loc, ValueRange{acc, rowSum},
                     emptyTensor(rewriter, loc, outSizes, elementType),
                     {id4, projection(ctx, 4, {d0, d2, d1}), id4}, par4,
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value empty = arith::CmpFOp::create(
                           b, l, arith::CmpFPredicate::OEQ, args[1], zero);
                       Value o = arith::DivFOp::create(b, l, args[0], args[1]);
                       o = arith::SelectOp::create(b, l, empty, zero, o);
                       linalg::YieldOp::create(
                           b, l, convertFloat(b, l, o, elementType));
                     })
            .getResult(0);
    SmallVector<Value> results = {
        castTo(rewriter, loc, result, op.getResult().getType())};
    // lse[b, i, h] = max + log(sum): -inf for a fully masked row (both are).
    if (Value lse = op.getLse()) {
      auto lseType = cast<RankedTensorType>(lse.getType());
      Value rows =
          buildGeneric(
              rewriter, loc, ValueRange{rowMax, rowSum},
              emptyTensor(rewriter, loc, {batch, queries, heads},
                          lseType.getElementType()),
              {projection(ctx, 3, {d0, d2, d1}),
               projection(ctx, 3, {d0, d2, d1}),
               rewriter.getMultiDimIdentityMap(3)},
              {kPar, kPar, kPar},
              [&](OpBuilder &b, Location l, ValueRange args) {
                Value value = arith::AddFOp::create(
                    b, l, args[0], math::LogOp::create(b, l, args[1]));
                linalg::YieldOp::create(
                    b, l, convertFloat(b, l, value, lseType.getElementType()));
              })
              .getResult(0);
      results.push_back(castTo(rewriter, loc, rows, lseType));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// KV cache and decode state
//===----------------------------------------------------------------------===//

/// `lengths[b]` as an index, or the static-or-dynamic `T` of `rows` without
/// lengths.
Value newRowCount(OpBuilder &b, Location loc, Value lengths, Value rows,
                  Value batchIndex) {
  Value all = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, rows, 1));
  if (!lengths)
    return all;
  // Clamped to [0, T]: a length past the new rows writes them all.
  Value length =
      toIndex(b, loc, tensor::ExtractOp::create(b, loc, lengths, batchIndex));
  return arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, length, indexConstant(b, loc, 0)),
      all);
}

/// attn.cache_update: for each sequence and new token, one row copy at the
/// token's position (through the block table for a paged cache).
struct CacheUpdateLowering : OpConversionPattern<CacheUpdateOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CacheUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache(), rows = adaptor.getNewRows();
    Value positions = adaptor.getPositions(), lengths = adaptor.getLengths();
    Value blockTable = adaptor.getBlockTable();
    auto rowsType = cast<RankedTensorType>(rows.getType());
    int64_t heads = rowsType.getDimSize(2), headDim = rowsType.getDimSize(3);
    Value zero = indexConstant(rewriter, loc, 0);
    Value one = indexConstant(rewriter, loc, 1);
    Value batch = getValueOrCreateConstantIndexOp(
        rewriter, loc, dimOf(rewriter, loc, rows, 0));
    // Rows per sequence: the cache's second dimension, times the pages of a
    // sequence when paged.
    Value rowsPerPage = getValueOrCreateConstantIndexOp(
        rewriter, loc, dimOf(rewriter, loc, cache, 1));
    Value capacity = rowsPerPage;
    Value numPages;
    if (blockTable) {
      Value pagesPerSequence = getValueOrCreateConstantIndexOp(
          rewriter, loc, dimOf(rewriter, loc, blockTable, 1));
      capacity =
          arith::MulIOp::create(rewriter, loc, rowsPerPage, pagesPerSequence);
      numPages = getValueOrCreateConstantIndexOp(
          rewriter, loc, dimOf(rewriter, loc, cache, 0));
    }

    auto batchLoop = scf::ForOp::create(
        rewriter, loc, zero, batch, one, ValueRange{cache},
        [&](OpBuilder &b, Location l, Value seqIndex, ValueRange outer) {
          Value start = toIndex(
              b, l, tensor::ExtractOp::create(b, l, positions, seqIndex));
          Value count = newRowCount(b, l, lengths, rows, seqIndex);
          auto tokenLoop = scf::ForOp::create(
              b, l, zero, count, one, outer,
              [&](OpBuilder &ib, Location il, Value token, ValueRange inner) {
                Value position = arith::AddIOp::create(ib, il, start, token);
                Value inRange = arith::AndIOp::create(
                    ib, il,
                    arith::CmpIOp::create(ib, il, arith::CmpIPredicate::sge,
                                          position, zero),
                    arith::CmpIOp::create(ib, il, arith::CmpIPredicate::slt,
                                          position, capacity));
                cf::AssertOp::create(
                    ib, il, inRange,
                    "KV cache update: a token's position is outside the "
                    "sequence's cache capacity");
                // Destination row: [b, position] or [page, slot].
                Value outerIndex = seqIndex, rowIndex = position;
                if (blockTable) {
                  Value pageOfSequence =
                      arith::DivUIOp::create(ib, il, position, rowsPerPage);
                  rowIndex =
                      arith::RemUIOp::create(ib, il, position, rowsPerPage);
                  outerIndex =
                      toIndex(ib, il,
                              tensor::ExtractOp::create(
                                  ib, il, blockTable,
                                  ValueRange{seqIndex, pageOfSequence}));
                  Value validPage = arith::AndIOp::create(
                      ib, il,
                      arith::CmpIOp::create(ib, il, arith::CmpIPredicate::sge,
                                            outerIndex, zero),
                      arith::CmpIOp::create(ib, il, arith::CmpIPredicate::slt,
                                            outerIndex, numPages));
                  cf::AssertOp::create(
                      ib, il, validPage,
                      "KV cache update: a block table entry is not a page "
                      "of the cache");
                }
                SmallVector<OpFoldResult> unit(4, ib.getIndexAttr(1));
                SmallVector<OpFoldResult> rowSizes = {
                    ib.getIndexAttr(1), ib.getIndexAttr(1),
                    ib.getIndexAttr(heads), ib.getIndexAttr(headDim)};
                Value row = tensor::ExtractSliceOp::create(
                    ib, il, rows,
                    SmallVector<OpFoldResult>{seqIndex, token,
                                              ib.getIndexAttr(0),
                                              ib.getIndexAttr(0)},
                    rowSizes, unit);
                Value updated = tensor::InsertSliceOp::create(
                    ib, il, row, inner[0],
                    SmallVector<OpFoldResult>{outerIndex, rowIndex,
                                              ib.getIndexAttr(0),
                                              ib.getIndexAttr(0)},
                    rowSizes, unit);
                scf::YieldOp::create(ib, il, updated);
              });
          scf::YieldOp::create(b, l, tokenLoop.getResults());
        });
    rewriter.replaceOp(op, batchLoop.getResult(0));
    return success();
  }
};

/// attn.cache_gather: the contiguous per-sequence view of a paged cache. A
/// block table entry that is not a page of the cache reads zeros (tables pad
/// unused entries, whose rows are never attended to).
struct CacheGatherLowering : OpConversionPattern<CacheGatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CacheGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache(), blockTable = adaptor.getBlockTable();
    Type elementType = elementTypeOf(cache);
    OpFoldResult pageSize = dimOf(rewriter, loc, cache, 1);
    Value pageSizeValue =
        getValueOrCreateConstantIndexOp(rewriter, loc, pageSize);
    Value numPages = getValueOrCreateConstantIndexOp(
        rewriter, loc, dimOf(rewriter, loc, cache, 0));
    Value pages = getValueOrCreateConstantIndexOp(
        rewriter, loc, dimOf(rewriter, loc, blockTable, 1));
    // Rows per sequence: pages per sequence times the page size, folded
    // when both are static.
    OpFoldResult rows;
    std::optional<int64_t> staticPages =
        getConstantIntValue(dimOf(rewriter, loc, blockTable, 1));
    std::optional<int64_t> staticPageSize = getConstantIntValue(pageSize);
    if (staticPages && staticPageSize)
      rows = rewriter.getIndexAttr(*staticPages * *staticPageSize);
    else
      rows = arith::MulIOp::create(rewriter, loc, pages, pageSizeValue)
                 .getResult();
    SmallVector<OpFoldResult> sizes = {dimOf(rewriter, loc, blockTable, 0),
                                       rows, dimOf(rewriter, loc, cache, 2),
                                       dimOf(rewriter, loc, cache, 3)};
    Value zero = indexConstant(rewriter, loc, 0);
    Value zeroElement = floatConstant(rewriter, loc, elementType, 0.0);
    Value result =
        buildGeneric(
            rewriter, loc, ValueRange{},
            emptyTensor(rewriter, loc, sizes, elementType),
            {rewriter.getMultiDimIdentityMap(4)},
            SmallVector<IteratorType>(4, kPar),
            [&](OpBuilder &b, Location l, ValueRange) {
              Value seqIndex = linalg::IndexOp::create(b, l, 0);
              Value position = linalg::IndexOp::create(b, l, 1);
              Value head = linalg::IndexOp::create(b, l, 2);
              Value dim = linalg::IndexOp::create(b, l, 3);
              Value page =
                  toIndex(b, l,
                          tensor::ExtractOp::create(
                              b, l, blockTable,
                              ValueRange{seqIndex,
                                         arith::DivUIOp::create(
                                             b, l, position, pageSizeValue)}));
              Value valid = arith::AndIOp::create(
                  b, l,
                  arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, page,
                                        zero),
                  arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, page,
                                        numPages));
              Value safePage = arith::SelectOp::create(b, l, valid, page, zero);
              Value slot =
                  arith::RemUIOp::create(b, l, position, pageSizeValue);
              Value element = tensor::ExtractOp::create(
                  b, l, cache, ValueRange{safePage, slot, head, dim});
              linalg::YieldOp::create(
                  b, l,
                  arith::SelectOp::create(b, l, valid, element, zeroElement)
                      .getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

/// attn.state_update: row r of the new state is row lengths[b] + r of
/// concat(state[b], new[b]).
struct StateUpdateLowering : OpConversionPattern<StateUpdateOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(StateUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value state = adaptor.getState(), rows = adaptor.getNewRows();
    Value lengths = adaptor.getLengths();
    Type elementType = elementTypeOf(state);
    int64_t stateRows = cast<RankedTensorType>(state.getType()).getDimSize(1);
    Value stateRowCount = indexConstant(rewriter, loc, stateRows);
    Value rowCount = getValueOrCreateConstantIndexOp(
        rewriter, loc, dimOf(rewriter, loc, rows, 1));
    Value zero = indexConstant(rewriter, loc, 0);
    Value result =
        buildGeneric(
            rewriter, loc, ValueRange{},
            emptyTensor(rewriter, loc,
                        tensor::getMixedSizes(rewriter, loc, state),
                        elementType),
            {rewriter.getMultiDimIdentityMap(3)},
            SmallVector<IteratorType>(3, kPar),
            [&](OpBuilder &b, Location l, ValueRange) {
              Value seqIndex = linalg::IndexOp::create(b, l, 0);
              Value row = linalg::IndexOp::create(b, l, 1);
              Value channel = linalg::IndexOp::create(b, l, 2);
              Value count = rowCount;
              if (lengths) {
                // Clamp to [0, T]: a length past the new rows keeps them all.
                count = toIndex(
                    b, l, tensor::ExtractOp::create(b, l, lengths, seqIndex));
                count = arith::MinSIOp::create(
                    b, l, arith::MaxSIOp::create(b, l, count, zero), rowCount);
              }
              Value source = arith::AddIOp::create(b, l, count, row);
              Value fromState = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::slt, source, stateRowCount);
              // Both reads stay in bounds; the select picks the real one.
              Value stateRow = arith::MinSIOp::create(
                  b, l, source,
                  arith::SubIOp::create(b, l, stateRowCount,
                                        indexConstant(b, l, 1)));
              Value newRow = arith::MaxSIOp::create(
                  b, l, arith::SubIOp::create(b, l, source, stateRowCount),
                  zero);
              newRow = arith::MinSIOp::create(
                  b, l, newRow,
                  arith::MaxSIOp::create(
                      b, l,
                      arith::SubIOp::create(b, l, rowCount,
                                            indexConstant(b, l, 1)),
                      zero));
              Value fromOld = tensor::ExtractOp::create(
                  b, l, state, ValueRange{seqIndex, stateRow, channel});
              auto pick = scf::IfOp::create(
                  b, l, fromState,
                  [&](OpBuilder &tb, Location tl) {
                    scf::YieldOp::create(tb, tl, fromOld);
                  },
                  [&](OpBuilder &eb, Location el) {
                    Value fromNew = tensor::ExtractOp::create(
                        eb, el, rows, ValueRange{seqIndex, newRow, channel});
                    scf::YieldOp::create(eb, el, fromNew);
                  });
              linalg::YieldOp::create(b, l, pick.getResult(0));
            })
            .getResult(0);
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

} // namespace

LogicalResult attnfuse::checkCPULoweringLimits(Operation *root) {
  auto tooLarge = [](Type type) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    if (!tensorType || !tensorType.hasStaticShape())
      return false;
    int64_t bytes =
        std::max<int64_t>(1, (tensorType.getElementTypeBitWidth() + 7) / 8);
    for (int64_t dim : tensorType.getShape())
      if (dim > 0 && llvm::MulOverflow(bytes, dim, bytes))
        return true;
    return false;
  };
  WalkResult result = root->walk([&](Operation *op) {
    if (!isa<AttnDialect>(op->getDialect()))
      return WalkResult::advance();
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (tooLarge(value.getType())) {
        op->emitOpError() << "has a " << value.getType()
                          << " whose size in bytes does not fit in 64 bits; "
                             "this lowering indexes every tensor with index "
                             "(64-bit) arithmetic";
        return WalkResult::interrupt();
      }
    if (auto rope = dyn_cast<RoPEOp>(op)) {
      int64_t headDim = cast<RankedTensorType>(rope.getType()).getDimSize(3);
      FailureOr<int64_t> rotated = rope.getRope().getRotatedDim(headDim);
      if (succeeded(rotated) && *rotated / 2 > kMaxCPURopePairs) {
        op->emitOpError() << "rotates " << *rotated
                          << " dimensions per head: its frequency table of "
                          << *rotated / 2 << " constants exceeds the "
                          << kMaxCPURopePairs
                          << " this lowering builds (a head_dim that large "
                             "is not supported)";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {

struct ConvertAttnToLinalgPass
    : public attnfuse::impl::ConvertAttnToLinalgPassBase<
          ConvertAttnToLinalgPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    // Layer ops are decomposed, not lowered: point at the missing step.
    WalkResult layers =
        root->walk([](Operation *op) {
          if (isa<QKVAttentionOp, CCAOp, QKVDecodeOp, CCADecodeOp>(op)) {
            op->emitOpError()
                << "is a layer op; run attn-decompose before "
                   "convert-attn-to-linalg (the attn-to-cpu pipeline does)";
            return WalkResult::interrupt();
          }
          return WalkResult::advance();
        });
    if (layers.wasInterrupted())
      return signalPassFailure();
    if (failed(attnfuse::checkCPULoweringLimits(root)))
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    // Only the primitives are this pass's business; other attn ops (the
    // fused kernel ops of convert-attn-kernels-to-scf) are left alone.
    ConversionTarget target(*ctx);
    target.addIllegalOp<ProjectOp, CausalConv1DOp, QKMeanOp, QKNormOp,
                        ValueShiftOp, RoPEOp, MaskTokensOp, SDPAOp,
                        CacheUpdateOp, CacheGatherOp, StateUpdateOp,
                        ProjectGradOp, CausalConv1DGradOp, QKMeanGradOp,
                        QKNormGradOp, ValueShiftGradOp, RoPEGradOp,
                        SDPAGradOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    attnfuse::populateAttnToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(root, target, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attnfuse::populateAttnToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ProjectLowering, CausalConv1DLowering, QKMeanLowering,
               QKNormLowering, ValueShiftLowering, RoPELowering,
               MaskTokensLowering, SDPALowering, CacheUpdateLowering,
               CacheGatherLowering, StateUpdateLowering>(patterns.getContext());
  populateAttnGradToLinalgPatterns(patterns);
}
