//===- TileSlices.h - operand slices of one tile ----------------*- C++ -*-===//
//
// The TilingInterface implementations of the attn kernel ops build each
// tile's operands as unit-stride tensor.extract_slice ops and report them in
// their TilingResult.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_DIALECT_ATTN_IR_TILESLICES_H
#define ATTNFUSE_LIB_DIALECT_ATTN_IR_TILESLICES_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace attnfuse::attn::tiling {

/// The unit-stride operand slices of one tile, kept for its TilingResult.
struct TileSlices {
  TileSlices(mlir::OpBuilder &builder, mlir::Location loc)
      : builder(builder), loc(loc) {}

  mlir::Value extract(mlir::Value source,
                      llvm::ArrayRef<mlir::OpFoldResult> offsets,
                      llvm::ArrayRef<mlir::OpFoldResult> sizes) {
    llvm::SmallVector<mlir::OpFoldResult> strides(offsets.size(),
                                                  builder.getIndexAttr(1));
    auto slice = mlir::tensor::ExtractSliceOp::create(builder, loc, source,
                                                      offsets, sizes, strides);
    ops.push_back(slice);
    return slice;
  }

  /// `source` sliced along its leading dimension only.
  mlir::Value extractRows(mlir::Value source, mlir::OpFoldResult offset,
                          mlir::OpFoldResult size) {
    auto type = llvm::cast<mlir::RankedTensorType>(source.getType());
    llvm::SmallVector<mlir::OpFoldResult> offsets(type.getRank(),
                                                  builder.getIndexAttr(0));
    llvm::SmallVector<mlir::OpFoldResult> sizes =
        mlir::tensor::getMixedSizes(builder, loc, source);
    offsets[0] = offset;
    sizes[0] = size;
    return extract(source, offsets, sizes);
  }

  mlir::OpBuilder &builder;
  mlir::Location loc;
  llvm::SmallVector<mlir::Operation *> ops;
};

} // namespace attnfuse::attn::tiling

#endif // ATTNFUSE_LIB_DIALECT_ATTN_IR_TILESLICES_H
