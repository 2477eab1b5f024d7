//===- AttnDecodeKernelOps.cpp - attn.flash_decode ----------------*- C++
//-*-===//
//
// Verifier and TilingInterface of attn.flash_decode. Every verifier message
// names the operand, attribute or result at fault and states the expected
// and the actual value.
//
//===----------------------------------------------------------------------===//

#include "TileSlices.h"
#include "VerifyUtils.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse::attn;

namespace {

using verify::ExpectedDim;

/// The shape checks of attn.flash_decode's verifier, bound to the op.
class ShapeChecker {
public:
  explicit ShapeChecker(FlashDecodeOp op) : op(op) {}

  static int64_t dimOf(Value value, int64_t dim) {
    return verify::dimOf(value, dim);
  }

  LogicalResult shape(StringRef name, Value value,
                      ArrayRef<ExpectedDim> expected) {
    return verify::verifyShape(op, name, value, expected);
  }

  LogicalResult rank(StringRef name, Value value, int64_t rank,
                     StringRef layout) {
    return verify::verifyRank(op, name, value, rank, layout);
  }

  LogicalResult staticDim(StringRef name, Value value, int64_t dim,
                          StringRef what) {
    return verify::verifyStaticDim(op, name, value, dim, what);
  }

  LogicalResult i32Elements(StringRef name, Value value) {
    Type element = cast<RankedTensorType>(value.getType()).getElementType();
    if (element.isSignlessInteger(32))
      return success();
    return op.emitOpError()
           << "'" << name << "' must have i32 elements, got " << element;
  }

  FlashDecodeOp op;
};

} // namespace

LogicalResult FlashDecodeOp::verify() {
  ShapeChecker check(*this);
  Value query = getQuery(), keyNew = getKeyNew();
  Value valueNew = getValueNew(), keyCache = getKeyCache();
  Value valueCache = getValueCache();
  if (static_cast<bool>(valueNew) != static_cast<bool>(valueCache))
    return emitOpError() << (valueNew ? "'value_new' is given without "
                                        "'value_cache'"
                                      : "'value_cache' is given without "
                                        "'value_new'")
                         << ": both are present for separate values, both "
                            "absent for K=V";
  if (static_cast<bool>(getValueCacheOut()) != static_cast<bool>(valueCache))
    return emitOpError() << "has " << getNumResults() << " results; expected "
                         << (valueCache ? 3 : 2)
                         << " (the output and one updated cache per cache "
                            "operand)";

  StringRef headLayout = "[batch, 1, heads, head_dim]";
  if (failed(check.rank("query", query, 4, headLayout)) ||
      failed(check.rank("key_new", keyNew, 4, headLayout)) ||
      failed(check.staticDim("query", query, 2, "head count")) ||
      failed(check.staticDim("query", query, 3, "head dim")) ||
      failed(check.staticDim("key_new", keyNew, 2, "head count")))
    return failure();
  int64_t batch = check.dimOf(query, 0);
  int64_t numHeads = check.dimOf(query, 2), headDim = check.dimOf(query, 3);
  int64_t numKvHeads = check.dimOf(keyNew, 2);
  if (numKvHeads < 1 || numHeads % numKvHeads != 0)
    return emitOpError() << "the " << numHeads
                         << " heads of 'query' must be a multiple of the "
                         << numKvHeads << " heads of 'key_new'";
  ExpectedDim batchDim{batch, "batch"}, oneDim{1, "1"};
  ExpectedDim kvHeadsDim{numKvHeads, "kv_heads"},
      headDimDim{headDim, "head_dim"};
  if (failed(
          check.shape("query", query,
                      {batchDim, oneDim, {numHeads, "heads"}, headDimDim})) ||
      failed(check.shape("key_new", keyNew,
                         {batchDim, oneDim, kvHeadsDim, headDimDim})))
    return failure();

  int64_t valueDim = headDim;
  if (valueNew) {
    if (failed(check.rank("value_new", valueNew, 4,
                          "[batch, 1, kv_heads, value_dim]")) ||
        failed(check.staticDim("value_new", valueNew, 3, "value dim")))
      return failure();
    valueDim = check.dimOf(valueNew, 3);
    if (failed(check.shape(
            "value_new", valueNew,
            {batchDim, oneDim, kvHeadsDim, {valueDim, "value_dim"}})))
      return failure();
  }
  ExpectedDim valueDimDim{valueDim, "value_dim"};

  if (failed(check.rank("positions", getPositions(), 1, "[batch]")) ||
      failed(check.i32Elements("positions", getPositions())) ||
      failed(check.shape("positions", getPositions(), {batchDim})))
    return failure();

  // Caches: [batch, capacity, ...] or pages [num_pages, page_size, ...].
  StringRef cacheLayout = getBlockTable()
                              ? "[num_pages, page_size, kv_heads, dim]"
                              : "[batch, capacity, kv_heads, dim]";
  if (failed(check.rank("key_cache", keyCache, 4, cacheLayout)) ||
      (valueCache &&
       failed(check.rank("value_cache", valueCache, 4, cacheLayout))))
    return failure();
  ExpectedDim rowsDim = getBlockTable()
                            ? ExpectedDim{check.dimOf(keyCache, 0), "num_pages"}
                            : batchDim;
  ExpectedDim slotsDim =
      getBlockTable() ? ExpectedDim{check.dimOf(keyCache, 1), "page_size"}
                      : ExpectedDim{check.dimOf(keyCache, 1), "capacity"};
  if (failed(check.shape("key_cache", keyCache,
                         {rowsDim, slotsDim, kvHeadsDim, headDimDim})) ||
      (valueCache &&
       failed(check.shape("value_cache", valueCache,
                          {rowsDim, slotsDim, kvHeadsDim, valueDimDim}))))
    return failure();
  if (Value table = getBlockTable())
    if (failed(check.rank("block_table", table, 2,
                          "[batch, max_pages_per_sequence]")) ||
        failed(check.i32Elements("block_table", table)) ||
        failed(check.shape("block_table", table,
                           {batchDim, {ShapedType::kDynamic, "pages"}})))
      return failure();

  // Results.
  if (failed(check.shape("result", getResult(),
                         {batchDim, oneDim, {numHeads, "heads"}, valueDimDim})))
    return failure();
  if (getInit().getType() != getResult().getType())
    return emitOpError() << "'init' must have the result type "
                         << getResult().getType() << ", got "
                         << getInit().getType();
  if (getKeyCacheOut().getType() != keyCache.getType())
    return emitOpError() << "result 'key_cache_out' has type "
                         << getKeyCacheOut().getType()
                         << ", expected the type of 'key_cache' "
                         << keyCache.getType();
  if (valueCache && getValueCacheOut().getType() != valueCache.getType())
    return emitOpError() << "result 'value_cache_out' has type "
                         << getValueCacheOut().getType()
                         << ", expected the type of 'value_cache' "
                         << valueCache.getType();

  // One float element type throughout.
  Type elementType = cast<RankedTensorType>(query.getType()).getElementType();
  SmallVector<std::pair<StringRef, Value>> floats = {
      {"key_new", keyNew}, {"key_cache", keyCache}, {"result", getResult()}};
  if (valueNew) {
    floats.push_back({"value_new", valueNew});
    floats.push_back({"value_cache", valueCache});
  }
  for (auto [name, value] : floats) {
    Type actual = cast<RankedTensorType>(value.getType()).getElementType();
    if (actual != elementType)
      return emitOpError() << "'" << name << "' has element type " << actual
                           << ", expected " << elementType
                           << " (the element type of 'query')";
  }

  if (std::optional<int64_t> window = getWindow(); window && *window <= 0)
    return emitOpError() << "window must be a positive number of keys, got "
                         << *window;
  if (FloatAttr scale = getScaleAttr()) {
    double value = scale.getValueAsDouble();
    if (!(value > 0.0 && std::isfinite(value)))
      return emitOpError() << "scale must be a positive finite number, got "
                           << value;
  }
  return failure(
      failed(verify::verifyRope(*this, getQueryRopeAttr(), headDim,
                                "query_rope")) ||
      failed(verify::verifyRope(*this, getKeyRopeAttr(), headDim, "key_rope")));
}

//===----------------------------------------------------------------------===//
// TilingInterface
//===----------------------------------------------------------------------===//

/// The iteration space is (batch, kv head): a point writes its new key (and
/// value) row, then attends its G query heads to its cache rows, so both
/// dimensions are parallel and the reduction over keys stays in the op.
SmallVector<utils::IteratorType> FlashDecodeOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel);
}

SmallVector<Range> FlashDecodeOp::getIterationDomain(OpBuilder &builder) {
  Location loc = getLoc();
  OpFoldResult zero = builder.getIndexAttr(0), one = builder.getIndexAttr(1);
  return {{zero, tensor::getMixedSize(builder, loc, getQuery(), 0), one},
          {zero, tensor::getMixedSize(builder, loc, getKeyNew(), 2), one}};
}

/// Whether a tile of `size` from `offset` covers all of dimension `dim` of
/// `tensor` (a dynamic size must be that dimension's tensor.dim).
static bool coversDim(OpFoldResult offset, OpFoldResult size, Value tensor,
                      int64_t dim) {
  if (!isConstantIntValue(offset, 0))
    return false;
  int64_t staticSize = cast<RankedTensorType>(tensor.getType()).getDimSize(dim);
  if (std::optional<int64_t> constant = getConstantIntValue(size))
    return *constant == staticSize;
  auto dimOp = dyn_cast_if_present<Value>(size)
                   ? cast<Value>(size).getDefiningOp<tensor::DimOp>()
                   : tensor::DimOp();
  return dimOp && dimOp.getSource() == tensor &&
         dimOp.getConstantIndex() == dim;
}

/// Offsets and sizes of the (batch, kv head) tile's slice of a
/// `[rows, slots, heads, dim]` tensor whose heads dimension holds
/// `headsPerKvHead` heads per kv head; rows are the batch unless `allRows`.
static void decodeSlice(OpBuilder &builder, Location loc, Value tensor,
                        ArrayRef<OpFoldResult> offsets,
                        ArrayRef<OpFoldResult> sizes, int64_t headsPerKvHead,
                        bool allRows,
                        SmallVectorImpl<OpFoldResult> &sliceOffsets,
                        SmallVectorImpl<OpFoldResult> &sliceSizes) {
  AffineExpr d0 = builder.getAffineDimExpr(0);
  OpFoldResult zero = builder.getIndexAttr(0);
  sliceOffsets.assign({allRows ? zero : offsets[0], zero,
                       affine::makeComposedFoldedAffineApply(
                           builder, loc, d0 * headsPerKvHead, {offsets[1]}),
                       zero});
  sliceSizes.assign(
      {allRows ? tensor::getMixedSize(builder, loc, tensor, 0) : sizes[0],
       tensor::getMixedSize(builder, loc, tensor, 1),
       affine::makeComposedFoldedAffineApply(builder, loc, d0 * headsPerKvHead,
                                             {sizes[1]}),
       tensor::getMixedSize(builder, loc, tensor, 3)});
}

FailureOr<TilingResult>
FlashDecodeOp::getTiledImplementation(OpBuilder &builder,
                                      ArrayRef<OpFoldResult> offsets,
                                      ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  if (isPaged() && !coversDim(offsets[0], sizes[0], getQuery(), 0))
    return emitOpError() << "a tile of a paged cache takes the whole batch "
                            "(its sequences share the pages)";
  int64_t group = cast<RankedTensorType>(getQuery().getType()).getDimSize(2) /
                  cast<RankedTensorType>(getKeyNew().getType()).getDimSize(2);
  tiling::TileSlices slices(builder, loc);
  SmallVector<OpFoldResult> sliceOffsets, sliceSizes;
  auto headSlice = [&](Value tensor, int64_t headsPerKvHead, bool allRows) {
    decodeSlice(builder, loc, tensor, offsets, sizes, headsPerKvHead, allRows,
                sliceOffsets, sliceSizes);
    return slices.extract(tensor, sliceOffsets, sliceSizes);
  };
  Value query = headSlice(getQuery(), group, false);
  Value keyNew = headSlice(getKeyNew(), 1, false);
  Value valueNew = getValueNew() ? headSlice(getValueNew(), 1, false) : Value();
  Value init = headSlice(getInit(), group, false);
  Value keyCache = headSlice(getKeyCache(), 1, isPaged());
  Value valueCache =
      getValueCache() ? headSlice(getValueCache(), 1, isPaged()) : Value();
  // The tile's sequences' positions and block-table rows.
  Value positions = slices.extractLeading(getPositions(), offsets[0], sizes[0]);
  Value blockTable =
      getBlockTable()
          ? slices.extractLeading(getBlockTable(), offsets[0], sizes[0])
          : Value();
  SmallVector<Type> resultTypes = {init.getType(), keyCache.getType()};
  if (valueCache)
    resultTypes.push_back(valueCache.getType());
  auto tiled = FlashDecodeOp::create(
      builder, loc, resultTypes, query, keyNew, valueNew, init, keyCache,
      valueCache, positions, blockTable, getWindowAttr(), getScaleAttr(),
      getQueryRopeAttr(), getKeyRopeAttr(), getBlockKvAttr(),
      getNumSplitsAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slices.ops};
}

LogicalResult FlashDecodeOp::getResultTilePosition(
    OpBuilder &builder, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  int64_t group = cast<RankedTensorType>(getQuery().getType()).getDimSize(2) /
                  cast<RankedTensorType>(getKeyNew().getType()).getDimSize(2);
  Value init = getDpsInits()[resultNumber];
  decodeSlice(builder, getLoc(), init, offsets, sizes,
              resultNumber == 0 ? group : 1, resultNumber > 0 && isPaged(),
              resultOffsets, resultSizes);
  return success();
}
