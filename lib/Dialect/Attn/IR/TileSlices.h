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

/// Offsets and sizes of the slice of `source` that takes `leadingOffsets` /
/// `leadingSizes` along its leading dimensions and all of the others.
inline void leadingDimsSlice(mlir::OpBuilder &builder, mlir::Location loc,
                             mlir::Value source,
                             llvm::ArrayRef<mlir::OpFoldResult> leadingOffsets,
                             llvm::ArrayRef<mlir::OpFoldResult> leadingSizes,
                             llvm::SmallVectorImpl<mlir::OpFoldResult> &offsets,
                             llvm::SmallVectorImpl<mlir::OpFoldResult> &sizes) {
  sizes.assign(mlir::tensor::getMixedSizes(builder, loc, source));
  offsets.assign(sizes.size(), builder.getIndexAttr(0));
  llvm::copy(leadingOffsets, offsets.begin());
  llvm::copy(leadingSizes, sizes.begin());
}

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

  /// `source` sliced along its leading dimensions only (leadingDimsSlice).
  mlir::Value extractLeading(mlir::Value source,
                             llvm::ArrayRef<mlir::OpFoldResult> leadingOffsets,
                             llvm::ArrayRef<mlir::OpFoldResult> leadingSizes) {
    llvm::SmallVector<mlir::OpFoldResult> offsets, sizes;
    leadingDimsSlice(builder, loc, source, leadingOffsets, leadingSizes,
                     offsets, sizes);
    return extract(source, offsets, sizes);
  }

  mlir::OpBuilder &builder;
  mlir::Location loc;
  llvm::SmallVector<mlir::Operation *> ops;
};

} // namespace attnfuse::attn::tiling

#endif // ATTNFUSE_LIB_DIALECT_ATTN_IR_TILESLICES_H
