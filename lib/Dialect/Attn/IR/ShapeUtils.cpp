//===- ShapeUtils.cpp - shape queries shared by attn passes ---------------===//

#include "attnfuse/Dialect/Attn/IR/ShapeUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

bool attnfuse::attn::isWholeDimension(OpFoldResult size, Value source,
                                      int64_t dim) {
  int64_t extent = cast<RankedTensorType>(source.getType()).getDimSize(dim);
  if (std::optional<int64_t> known = getConstantIntValue(size))
    return !ShapedType::isDynamic(extent) && *known == extent;
  auto sizeValue = dyn_cast<Value>(size);
  auto dimOp = sizeValue ? sizeValue.getDefiningOp<tensor::DimOp>() : nullptr;
  if (!dimOp || dimOp.getSource() != source)
    return false;
  std::optional<int64_t> index = dimOp.getConstantIndex();
  return index && *index == dim;
}
