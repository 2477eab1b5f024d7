//===- ShapeUtils.h - shape queries shared by attn passes -------*- C++ -*-===//
//
// Small shape queries that the attn transforms and the kernel lowerings both
// ask of tensor IR.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_SHAPEUTILS_H
#define ATTNFUSE_DIALECT_ATTN_IR_SHAPEUTILS_H

#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Value.h"

namespace attnfuse::attn {

/// Whether `size` is provably dimension `dim` of the ranked tensor `source`:
/// equal constants, or a `tensor.dim` of `source` at `dim`.
bool isWholeDimension(mlir::OpFoldResult size, mlir::Value source, int64_t dim);

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_IR_SHAPEUTILS_H
