//===- AttnDecodeKernelOps.cpp - decode kernel op verifiers -----*- C++ -*-===//
//
// Verifier of attn.flash_decode. Every message names the operand, attribute
// or result at fault and states the expected and the actual value.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse::attn;

namespace {

/// One expected dimension: a size (ShapedType::kDynamic for "any") and its
/// symbolic name for the diagnostic.
struct Dim {
  int64_t size;
  StringRef name;
};

/// Checks the shapes of one op's operands and results.
class ShapeChecker {
public:
  explicit ShapeChecker(FlashDecodeOp op) : op(op) {}

  static int64_t dimOf(Value value, int64_t dim) {
    return cast<RankedTensorType>(value.getType()).getDimSize(dim);
  }

  /// `value` has rank `expected.size()` and static sizes equal to the static
  /// expected ones.
  LogicalResult shape(StringRef name, Value value, ArrayRef<Dim> expected) {
    auto type = cast<RankedTensorType>(value.getType());
    bool matches = type.getRank() == static_cast<int64_t>(expected.size());
    for (auto [actual, want] : llvm::zip(type.getShape(), expected))
      matches =
          matches && (ShapedType::isDynamic(actual) ||
                      ShapedType::isDynamic(want.size) || actual == want.size);
    if (matches)
      return success();
    std::string names, sizes, got;
    llvm::raw_string_ostream namesOs(names), sizesOs(sizes), gotOs(got);
    auto printDim = [](llvm::raw_ostream &os, int64_t size) {
      if (ShapedType::isDynamic(size))
        os << "?";
      else
        os << size;
    };
    llvm::interleaveComma(expected, namesOs,
                          [&](const Dim &dim) { namesOs << dim.name; });
    llvm::interleaveComma(expected, sizesOs,
                          [&](const Dim &dim) { printDim(sizesOs, dim.size); });
    llvm::interleaveComma(type.getShape(), gotOs,
                          [&](int64_t size) { printDim(gotOs, size); });
    return op.emitOpError() << "'" << name << "' must have shape [" << names
                            << "] = [" << sizes << "], got [" << got << "]";
  }

  LogicalResult rank(StringRef name, Value value, int64_t rank,
                     StringRef layout) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() == rank)
      return success();
    return op.emitOpError()
           << "'" << name << "' must be a rank-" << rank << " tensor " << layout
           << ", got rank " << type.getRank();
  }

  LogicalResult staticDim(StringRef name, Value value, int64_t dim,
                          StringRef what) {
    if (!ShapedType::isDynamic(dimOf(value, dim)))
      return success();
    return op.emitOpError() << "'" << name << "' must have a static " << what
                            << " (dimension " << dim << ")";
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

LogicalResult verifyRopeAttr(FlashDecodeOp op, StringRef name, RopeAttr rope,
                             int64_t headDim) {
  if (!rope)
    return success();
  FailureOr<int64_t> rotated = rope.getRotatedDim(headDim);
  if (failed(rotated))
    return op.emitOpError()
           << name << " fraction " << rope.getFractionValue() << " of head_dim "
           << headDim << " is not a whole number of dimensions";
  if (*rotated % 2 != 0)
    return op.emitOpError() << name << " rotates " << *rotated
                            << " dimensions of each head; the rotated width "
                               "must be even";
  return success();
}

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
  Dim batchDim{batch, "batch"}, oneDim{1, "1"};
  Dim kvHeadsDim{numKvHeads, "kv_heads"}, headDimDim{headDim, "head_dim"};
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
  Dim valueDimDim{valueDim, "value_dim"};

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
  Dim rowsDim =
      getBlockTable() ? Dim{check.dimOf(keyCache, 0), "num_pages"} : batchDim;
  Dim slotsDim = getBlockTable() ? Dim{check.dimOf(keyCache, 1), "page_size"}
                                 : Dim{check.dimOf(keyCache, 1), "capacity"};
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
      failed(
          verifyRopeAttr(*this, "query_rope", getQueryRopeAttr(), headDim)) ||
      failed(verifyRopeAttr(*this, "key_rope", getKeyRopeAttr(), headDim)));
}
