//===- LinalgBuilders.h - building blocks of the linalg lowerings -*- C++ -*-===//
//
// Small builders shared by the reference lowerings of the attn primitives
// and of their gradient ops: linalg.generic construction, float conversions
// between storage and compute types, fills, slices and inserts.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <optional>

namespace attnfuse::linalg_builders {

using namespace mlir;

using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The type arithmetic runs in: f32 for 16-bit floats, else the element type.
inline FloatType computeTypeFor(Type elementType) {
  auto floatType = cast<FloatType>(elementType);
  if (floatType.getWidth() < 32)
    return Float32Type::get(elementType.getContext());
  return floatType;
}

inline Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// Converts a scalar between float types (extf / truncf / no-op).
inline Value convertFloat(OpBuilder &b, Location loc, Value value, Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  if (cast<FloatType>(from).getWidth() < cast<FloatType>(to).getWidth())
    return arith::ExtFOp::create(b, loc, to, value);
  return arith::TruncFOp::create(b, loc, to, value);
}

inline Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

inline Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// A position, length or page index read as an `index`.
inline Value toIndex(OpBuilder &b, Location loc, Value integer) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), integer);
}

/// Whether a mask element (any integer type) marks a real token.
inline Value isNonZero(OpBuilder &b, Location loc, Value maskElement) {
  Value zero = arith::ConstantOp::create(b, loc, maskElement.getType(),
                                         b.getZeroAttr(maskElement.getType()));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, maskElement,
                               zero);
}

/// Size `dim` of `tensor`, static when known.
inline OpFoldResult dimOf(OpBuilder &b, Location loc, Value tensor, int64_t dim) {
  return tensor::getMixedSize(b, loc, tensor, dim);
}

/// `size + delta`, folded when `size` is static.
inline OpFoldResult addIndex(OpBuilder &b, Location loc, OpFoldResult size,
                      int64_t delta) {
  if (std::optional<int64_t> known = getConstantIntValue(size))
    return b.getIndexAttr(*known + delta);
  if (delta == 0)
    return size;
  return arith::AddIOp::create(b, loc, cast<Value>(size),
                               arith::ConstantIndexOp::create(b, loc, delta))
      .getResult();
}

inline Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType) {
  return tensor::EmptyOp::create(b, loc, sizes, elementType);
}

inline Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Type elementType, double value) {
  Value empty = emptyTensor(b, loc, sizes, elementType);
  Value scalar = floatConstant(b, loc, elementType, value);
  return linalg::FillOp::create(b, loc, ValueRange{scalar}, ValueRange{empty})
      .getResult(0);
}

using BodyFn = function_ref<void(OpBuilder &, Location, ValueRange)>;

/// A linalg.generic with one result per init.
inline linalg::GenericOp buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                               ValueRange inits, ArrayRef<AffineMap> maps,
                               ArrayRef<IteratorType> iterators, BodyFn body) {
  return linalg::GenericOp::create(b, loc, TypeRange(inits), inputs, inits,
                                   maps, iterators, body);
}

/// `(d0, ..., d{n-1}) -> (dims...)`.
inline AffineMap projection(MLIRContext *ctx, unsigned numLoops,
                     ArrayRef<AffineExpr> results) {
  return AffineMap::get(numLoops, 0, results, ctx);
}

/// Elementwise float conversion of a whole tensor (identity when the types
/// already agree).
inline Value convertTensor(OpBuilder &b, Location loc, Value tensor, Type to) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getElementType() == to)
    return tensor;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, tensor);
  unsigned rank = type.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  SmallVector<IteratorType> iters(rank, kPar);
  return buildGeneric(b, loc, tensor, emptyTensor(b, loc, sizes, to), {id, id},
                      iters,
                      [&](OpBuilder &nb, Location nl, ValueRange args) {
                        linalg::YieldOp::create(
                            nb, nl, convertFloat(nb, nl, args[0], to));
                      })
      .getResult(0);
}

/// A `[sizes...]` tensor of compute type holding `bias` broadcast along the
/// last dimension, or zeros without a bias.
inline Value biasOrZeroInit(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                     Value bias, Type computeType) {
  if (!bias)
    return filledTensor(b, loc, sizes, computeType, 0.0);
  unsigned rank = sizes.size();
  MLIRContext *ctx = b.getContext();
  AffineMap biasMap = projection(ctx, rank, {b.getAffineDimExpr(rank - 1)});
  SmallVector<IteratorType> iters(rank, kPar);
  return buildGeneric(b, loc, bias, emptyTensor(b, loc, sizes, computeType),
                      {biasMap, b.getMultiDimIdentityMap(rank)}, iters,
                      [&](OpBuilder &nb, Location nl, ValueRange args) {
                        linalg::YieldOp::create(
                            nb, nl, convertFloat(nb, nl, args[0], computeType));
                      })
      .getResult(0);
}

/// Sum over the last dimension (reduced away) of `tensor`, or of its squares,
/// into a compute-type tensor.
inline Value reduceLast(OpBuilder &b, Location loc, Value tensor, Type computeType,
                 bool squares) {
  auto type = cast<RankedTensorType>(tensor.getType());
  unsigned rank = type.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, tensor);
  sizes.pop_back();
  Value init = filledTensor(b, loc, sizes, computeType, 0.0);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> outDims;
  for (unsigned i = 0; i + 1 < rank; ++i)
    outDims.push_back(b.getAffineDimExpr(i));
  SmallVector<IteratorType> iters(rank, kPar);
  iters.back() = kRed;
  return buildGeneric(
             b, loc, tensor, init,
             {b.getMultiDimIdentityMap(rank), projection(ctx, rank, outDims)},
             iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value x = convertFloat(nb, nl, args[0], computeType);
               if (squares)
                 x = arith::MulFOp::create(nb, nl, x, x);
               linalg::YieldOp::create(
                   nb, nl,
                   arith::AddFOp::create(nb, nl, args[1], x).getResult());
             })
      .getResult(0);
}

/// `tensor[..., offset : offset + size]` along the last dimension.
inline Value sliceLast(OpBuilder &b, Location loc, Value tensor, int64_t offset,
                int64_t size) {
  auto type = cast<RankedTensorType>(tensor.getType());
  unsigned rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets.back() = b.getIndexAttr(offset);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, tensor);
  sizes.back() = b.getIndexAttr(size);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, tensor, offsets, sizes,
                                        strides);
}

/// Casts `value` to `type` when the static information differs.
inline Value castTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, loc, type, value);
}

/// Inserts `source` into `dest` at `offsets` (unit strides, full source).
inline Value insertAt(OpBuilder &b, Location loc, Value source, Value dest,
               ArrayRef<OpFoldResult> offsets) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, source);
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, source, dest, offsets, sizes,
                                       strides);
}

/// The unnormalized softmax probabilities of an attention and their row
/// sums, in the compute type: `probs [B, Hq, S, T]` is `exp(logit - max)`,
/// 0 on masked keys and in fully masked rows, `rowSum [B, Hq, S]`.
struct AttentionProbabilities {
  Value probs;
  Value rowSum;
  /// The row maxima of the masked logits, [B, Hq, S] (-inf for a fully
  /// masked row).
  Value rowMax;
};

/// The operands and attributes that define an attention's scores and masks
/// (attn.sdpa and attn.sdpa_grad).
struct AttentionScores {
  Value query, key, bias, positions, keyMask;
  bool causal = false;
  std::optional<int64_t> window;
  double scale = 1.0;
};

/// The scores and masks of an attention op (attn.sdpa, attn.sdpa_grad).
template <typename AttentionOp, typename Adaptor>
AttentionScores attentionScores(AttentionOp op, Adaptor adaptor,
                                int64_t headDim) {
  AttentionScores scores;
  scores.query = adaptor.getQuery();
  scores.key = adaptor.getKey();
  scores.bias = adaptor.getBias();
  scores.keyMask = adaptor.getKeyMask();
  scores.causal = op.getCausal();
  scores.window = op.getWindow();
  scores.scale = op.getScaleAttr()
                     ? op.getScaleAttr().getValueAsDouble()
                     : 1.0 / std::sqrt(static_cast<double>(headDim));
  return scores;
}

/// Builds the masked logits, their row maxima, `exp(logit - max)` and the
/// row sums of an attention (docs/semantics.md#attnsdpa).
AttentionProbabilities buildAttentionProbabilities(OpBuilder &b, Location loc,
                                                   const AttentionScores &s);

/// RoPE of a `[B, S, H, d]` tensor (docs/semantics.md#attnrope), or with
/// `transpose` its transpose, the rotation by the opposite angle; fails on a
/// rotated width that is odd or past the head dim.
FailureOr<Value> buildRotation(OpBuilder &b, Location loc, Value input,
                               Value positions, attn::RopeAttr rope,
                               bool transpose);

/// `tensor` with its static dimension `dim` of size `H` split into
/// `[H / group, group]`: linalg needs every loop as a plain dimension of some
/// operand, so a sum over the query heads of a KV head reads this view.
inline Value splitDim(OpBuilder &b, Location loc, Value tensor, int64_t dim,
               int64_t group) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<OpFoldResult> mixed = tensor::getMixedSizes(b, loc, tensor);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes;
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0, e = type.getRank(); i < e; ++i) {
    int64_t next = shape.size();
    if (i != dim) {
      shape.push_back(type.getDimSize(i));
      sizes.push_back(mixed[i]);
      reassociation.push_back({next});
      continue;
    }
    int64_t outer = type.getDimSize(i) / group;
    shape.append({outer, group});
    sizes.append({b.getIndexAttr(outer), b.getIndexAttr(group)});
    reassociation.push_back({next, next + 1});
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), tensor,
      reassociation, sizes);
}

} // namespace attnfuse::linalg_builders

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H
