//===- CCADecodePrologue.cpp - attn.cca_decode_prologue on the CPU -*- C++
//-*-===//
//
// One decode step of CCA for the whole batch at once (one token per
// sequence, so there is nothing to tile): linalg.generic ops over [batch,
// ...] in the compute type (f32 for 16-bit element types):
//   W    = [conv_state | u] (P + 1 rows), u = concat(qr, kr);
//   m    = the k1 depthwise-conv rows the grouped conv needs (k0 taps + bias);
//   c    = grouped conv (k1 taps, one d x d mix per head) + bias;
//   q, k = QK-mean residual, L2 norm to sqrt(d), key temperature, RoPE at
//          positions[b] (angles computed like the prefill's tables, in f64);
//   v    = v_cur (| shift_state with the value shift);
// and the new state: the last P rows of W, and v_prev.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::kernels;

namespace {

class DecodePrologueLowering {
public:
  DecodePrologueLowering(CCADecodePrologueOp op, OpBuilder &builder)
      : op(op),
        kb(builder, op.getLoc(),
           cast<RankedTensorType>(op.getQr().getType()).getElementType()) {
    numHeads = op.getNumHeads();
    numKvHeads = op.getNumKvHeads();
    headDim = op.getHeadDim();
    group = numHeads / numKvHeads;
    heads = numHeads + numKvHeads;
    channels = op.getConvChannels();
    k0 = op.getConvKernelSizes()[0];
    k1 = op.getConvKernelSizes()[1];
    padding = op.getConvPadding();
    batch = kb.dim(op.getQr(), 0);
    batchSize = tensor::getMixedSize(builder, op.getLoc(), op.getQr(), 0);
  }

  SmallVector<Value> build();

private:
  /// `tensor.empty` of `shape` with a leading dynamic batch dimension.
  Value emptyBatched(ArrayRef<int64_t> shape, Type type) {
    int64_t batchDim =
        cast<RankedTensorType>(op.getQr().getType()).getDimSize(0);
    SmallVector<int64_t> full = {batchDim};
    full.append(shape.begin(), shape.end());
    if (ShapedType::isDynamic(batchDim))
      return kb.empty(full, type, {batch});
    return kb.empty(full, type);
  }
  /// `[B, rows, C]` -> `[B, rows, heads, d]` (static rows).
  Value splitHeads(Value tensor, int64_t rows);
  /// The convolutions: `[B, heads, d]` in the compute type.
  Value convolve(Value window);
  Value addQkMean(Value conv, Value raw);
  Value normalize(Value residual);
  /// Query (`headOffset` 0) or key heads of the result, rotated at each
  /// sequence's position and converted to the element type.
  Value rotatedHeads(Value normalized, int64_t outHeads, int64_t headOffset);

  CCADecodePrologueOp op;
  KernelBuilder kb;
  int64_t numHeads, numKvHeads, headDim, group, heads, channels, k0, k1,
      padding;
  /// The batch size as a value (for a dynamic tensor.empty), and as a
  /// constant where it is static (for reshapes and slices, whose types keep
  /// a static batch static).
  Value batch;
  OpFoldResult batchSize;
};

Value DecodePrologueLowering::splitHeads(Value tensor, int64_t rows) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto resultType = RankedTensorType::get(
      {type.getDimSize(0), rows, heads, headDim}, type.getElementType());
  SmallVector<OpFoldResult> shape = {batchSize, kb.builder.getIndexAttr(rows),
                                     kb.builder.getIndexAttr(heads),
                                     kb.builder.getIndexAttr(headDim)};
  return tensor::ExpandShapeOp::create(
      kb.builder, kb.loc, resultType, tensor,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}}, shape);
}

Value DecodePrologueLowering::convolve(Value window) {
  OpBuilder &b = kb.builder;
  MLIRContext *context = b.getContext();
  auto multiplyAdd = [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
    Value product = arith::MulFOp::create(nb, l, kb.toCompute(nb, args[0]),
                                          kb.toCompute(nb, args[1]));
    return arith::AddFOp::create(nb, l, args[2], product);
  };
  // m[b, s, c] = b_dw[c] + sum_i w_dw[c, 0, i] W[b, s + i, c], s < k1: the
  // depthwise outputs at window rows k0 - 1 .. P.
  Value depthwiseBias = op.getConvDwBias();
  Value midInit =
      kb.generic({depthwiseBias}, emptyBatched({k1, channels}, kb.computeType),
                 {kb.map(3, {2}), kb.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
                 [&](OpBuilder &nb, Location, ValueRange args) -> Value {
                   return kb.toCompute(nb, args[0]);
                 });
  AffineExpr bDim = getAffineDimExpr(0, context),
             sDim = getAffineDimExpr(1, context),
             cDim = getAffineDimExpr(2, context),
             iDim = getAffineDimExpr(3, context);
  Value mid = kb.generic(
      {window, op.getConvDwWeight()}, midInit,
      {AffineMap::get(4, 0, {bDim, sDim + iDim, cDim}, context),
       AffineMap::get(4, 0, {cDim, getAffineConstantExpr(0, context), iDim},
                      context),
       kb.map(4, {0, 1, 2})},
      {kPar, kPar, kPar, kRed}, multiplyAdd);

  // c[b, g, o] = b_g[g d + o] + sum_{t, e} w_g[g d + o, e, t] m[b, t, g, e].
  Value midHeads = splitHeads(mid, k1); // [B, k1, heads, d]
  Type weightElement =
      cast<RankedTensorType>(op.getConvGWeight().getType()).getElementType();
  Value groupedWeight = tensor::ExpandShapeOp::create(
      b, kb.loc,
      RankedTensorType::get({heads, headDim, headDim, k1}, weightElement),
      op.getConvGWeight(), ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  Value groupedBias = tensor::ExpandShapeOp::create(
      b, kb.loc,
      RankedTensorType::get(
          {heads, headDim},
          cast<RankedTensorType>(op.getConvGBias().getType()).getElementType()),
      op.getConvGBias(), ArrayRef<ReassociationIndices>{{0, 1}});
  Value convInit =
      kb.generic({groupedBias}, emptyBatched({heads, headDim}, kb.computeType),
                 {kb.map(3, {1, 2}), kb.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
                 [&](OpBuilder &nb, Location, ValueRange args) -> Value {
                   return kb.toCompute(nb, args[0]);
                 });
  // Loops (b, g, o, t, e).
  return kb.generic(
      {midHeads, groupedWeight}, convInit,
      {kb.map(5, {0, 3, 1, 4}), kb.map(5, {1, 2, 4, 3}), kb.map(5, {0, 1, 2})},
      {kPar, kPar, kPar, kRed, kRed}, multiplyAdd);
}

Value DecodePrologueLowering::addQkMean(Value conv, Value raw) {
  // raw: [B, heads, d] pre-conv projections (u) in the element type.
  Value half = kb.constant(0.5);
  return kb.generic(
      {}, conv, {kb.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value batchIndex = linalg::IndexOp::create(nb, l, 0);
        Value head = linalg::IndexOp::create(nb, l, 1);
        Value dim = linalg::IndexOp::create(nb, l, 2);
        auto constIndex = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, l, v);
        };
        auto rawAt = [&](Value headIndex) -> Value {
          return kb.toCompute(
              nb, tensor::ExtractOp::create(
                      nb, l, raw, ValueRange{batchIndex, headIndex, dim}));
        };
        Value isQuery = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                              head, constIndex(numHeads));
        // Query head h: q_h + k_{h / G}. Indices are clamped so both arms
        // stay in bounds; select picks the meaningful one.
        Value queryKv = arith::AddIOp::create(
            nb, l, constIndex(numHeads),
            arith::DivUIOp::create(
                nb, l,
                arith::MinUIOp::create(nb, l, head, constIndex(numHeads - 1)),
                constIndex(group)));
        Value queryTerm =
            arith::AddFOp::create(nb, l, rawAt(head), rawAt(queryKv));
        // KV head j: mean of its group's query heads + k_j.
        Value kvIndex = arith::SubIOp::create(
            nb, l, arith::MaxUIOp::create(nb, l, head, constIndex(numHeads)),
            constIndex(numHeads));
        Value groupSum;
        for (int64_t member = 0; member < group; ++member) {
          Value memberHead = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, kvIndex, constIndex(group)),
              constIndex(member));
          Value value = rawAt(memberHead);
          groupSum =
              groupSum ? arith::AddFOp::create(nb, l, groupSum, value) : value;
        }
        Value groupMean = arith::MulFOp::create(
            nb, l, groupSum, kb.constant(1.0 / static_cast<double>(group)));
        Value keyTerm = arith::AddFOp::create(nb, l, groupMean, rawAt(head));
        Value term =
            arith::SelectOp::create(nb, l, isQuery, queryTerm, keyTerm);
        return arith::AddFOp::create(nb, l, args[0],
                                     arith::MulFOp::create(nb, l, half, term));
      });
}

Value DecodePrologueLowering::normalize(Value residual) {
  Value tau = kb.keyTemperatures(op.getTemp(), op.getTemperature() ==
                                                   TemperatureMode::clamped);
  return kb.normalizeHeads(residual, tau, numHeads,
                           op.getEps().convertToDouble(),
                           op.getNorm() == NormMode::clamp_eps);
}

Value DecodePrologueLowering::rotatedHeads(Value normalized, int64_t outHeads,
                                           int64_t headOffset) {
  int64_t rotated = 0;
  double theta = 0.0;
  if (RopeAttr rope = op.getRopeAttr()) {
    rotated = *rope.getRotatedDim(headDim);
    theta = rope.getThetaValue();
  }
  int64_t half = rotated / 2;
  Value positions = op.getPositions();
  // The heads [headOffset, headOffset + outHeads) of `normalized`, read by
  // loops (b, 0, h, o) over [B, 1, outHeads, d].
  OpBuilder &b = kb.builder;
  Value selected = tensor::ExtractSliceOp::create(
      b, kb.loc, normalized,
      SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(headOffset),
                                b.getIndexAttr(0)},
      SmallVector<OpFoldResult>{batchSize, b.getIndexAttr(outHeads),
                                b.getIndexAttr(headDim)},
      SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
  return kb.generic(
      {selected}, emptyBatched({1, outHeads, headDim}, kb.elementType),
      {kb.map(4, {0, 2, 3}), kb.map(4, {0, 1, 2, 3})}, {kPar, kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value element = args[0];
        if (rotated == 0)
          return kb.toElement(nb, element);
        auto constIndex = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, l, v);
        };
        auto lessThan = [&](Value lhs, int64_t rhs) -> Value {
          return arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, lhs,
                                       constIndex(rhs));
        };
        Value batchIndex = linalg::IndexOp::create(nb, l, 0);
        Value head = linalg::IndexOp::create(nb, l, 2);
        Value dim = linalg::IndexOp::create(nb, l, 3);
        Value low = lessThan(dim, half);
        Value inRotated = lessThan(dim, rotated);
        // Partner dim i +- r/2 inside the rotated part (clamped outside it,
        // where the element passes through).
        Value partnerDim = arith::SelectOp::create(
            nb, l, low, arith::AddIOp::create(nb, l, dim, constIndex(half)),
            arith::SubIOp::create(nb, l, dim, constIndex(half)));
        partnerDim = arith::SelectOp::create(nb, l, inRotated, partnerDim, dim);
        Value partner = tensor::ExtractOp::create(
            nb, l, selected, ValueRange{batchIndex, head, partnerDim});
        // Angle p * theta^(-2i/r) in f64, as the prefill's tables.
        auto f64 = nb.getF64Type();
        Value pair = arith::RemUIOp::create(nb, l, dim, constIndex(half));
        Value pairF64 = arith::SIToFPOp::create(
            nb, l, f64,
            arith::IndexCastOp::create(nb, l, nb.getI64Type(), pair));
        Value frequency = math::ExpOp::create(
            nb, l,
            arith::MulFOp::create(
                nb, l, pairF64,
                arith::ConstantOp::create(
                    nb, l, f64,
                    nb.getF64FloatAttr(-2.0 * std::log(theta) /
                                       static_cast<double>(rotated)))));
        Value position =
            tensor::ExtractOp::create(nb, l, positions, ValueRange{batchIndex});
        Value positionF64 = arith::SIToFPOp::create(nb, l, f64, position);
        Value angle = arith::MulFOp::create(nb, l, positionF64, frequency);
        Value cosine = math::CosOp::create(nb, l, angle);
        Value sine = math::SinOp::create(nb, l, angle);
        if (kb.computeType.getWidth() < 64) {
          cosine = arith::TruncFOp::create(nb, l, kb.computeType, cosine);
          sine = arith::TruncFOp::create(nb, l, kb.computeType, sine);
        }
        // x_i cos - x_{i+r/2} sin (first half), x_{i+r/2} cos + x_i sin.
        Value elementCos = arith::MulFOp::create(nb, l, element, cosine);
        Value partnerSin = arith::MulFOp::create(nb, l, partner, sine);
        Value result = arith::SelectOp::create(
            nb, l, low, arith::SubFOp::create(nb, l, elementCos, partnerSin),
            arith::AddFOp::create(nb, l, elementCos, partnerSin));
        result = arith::SelectOp::create(nb, l, inRotated, result, element);
        return kb.toElement(nb, result);
      });
}

SmallVector<Value> DecodePrologueLowering::build() {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  // u [B, 1, C] and the window [B, P + 1, C], oldest row first.
  Value packed = tensor::ConcatOp::create(b, loc, /*dim=*/2,
                                          ValueRange{op.getQr(), op.getKr()});
  Value window = tensor::ConcatOp::create(
      b, loc, /*dim=*/1, ValueRange{op.getConvState(), packed});
  // The rolled state: the window's last P rows (with kernel sizes 1 and 1
  // the state is empty and stays so).
  Value convStateOut = op.getConvState();
  if (padding > 0) {
    SmallVector<OpFoldResult> stateOffsets = {
        b.getIndexAttr(0), b.getIndexAttr(1), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> stateSizes = {batchSize, b.getIndexAttr(padding),
                                            b.getIndexAttr(channels)};
    SmallVector<OpFoldResult> unitStrides(3, b.getIndexAttr(1));
    convStateOut = tensor::ExtractSliceOp::create(b, loc, window, stateOffsets,
                                                  stateSizes, unitStrides);
  }

  Value conv = convolve(window);
  if (op.getQkMean()) {
    Value raw = tensor::CollapseShapeOp::create(
        b, loc, splitHeads(packed, 1),
        ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
    conv = addQkMean(conv, raw);
  }
  Value normalized = normalize(conv);
  Value query = rotatedHeads(normalized, numHeads, 0);
  Value key = rotatedHeads(normalized, numKvHeads, numHeads);

  // Values [B, 1, Hk, d]: the current half and the shifted half.
  Value values = op.getVCur();
  if (op.getValueShift())
    values = tensor::ConcatOp::create(
        b, loc, /*dim=*/2, ValueRange{op.getVCur(), op.getShiftState()});
  auto valueType = cast<RankedTensorType>(values.getType());
  SmallVector<OpFoldResult> valueShape = {batchSize, b.getIndexAttr(1),
                                          b.getIndexAttr(numKvHeads),
                                          b.getIndexAttr(headDim)};
  Value value = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({valueType.getDimSize(0), 1, numKvHeads, headDim},
                            valueType.getElementType()),
      values, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}}, valueShape);

  SmallVector<Value> results = {query, key, value, convStateOut};
  if (op.getValueShift())
    results.push_back(op.getVPrev());
  // Static batch sizes in the op's result types.
  for (auto [result, expected] : llvm::zip_equal(results, op.getResults()))
    if (result.getType() != expected.getType())
      result = tensor::CastOp::create(b, loc, expected.getType(), result);
  return results;
}

struct LowerCCADecodePrologue : OpRewritePattern<CCADecodePrologueOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CCADecodePrologueOp op,
                                PatternRewriter &rewriter) const override {
    DecodePrologueLowering lowering(op, rewriter);
    rewriter.replaceOp(op, lowering.build());
    return success();
  }
};

} // namespace

void attnfuse::populateCCADecodePrologueToSCFPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerCCADecodePrologue>(patterns.getContext());
}
