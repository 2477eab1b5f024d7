//===- Rope.h - rotary embedding inside tile loads --------------*- C++ -*-===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTOSCF_ROPE_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTOSCF_ROPE_H

#include "KernelBuilder.h"

namespace attnfuse::kernels {

/// Cosine and sine tables `[positions, r/2]` of one RoPE, row i for position
/// `first + i` (i when `first` is null); empty (false) when there is nothing
/// to rotate.
struct RopeTables {
  mlir::Value cosine, sine;
  mlir::Value first;
  int64_t rotated = 0;
  explicit operator bool() const { return rotated > 0; }
};

/// Tables for `rope` (may be null) over heads of `headDim` dims, for the
/// `positions` positions from `first` (0 when null).
RopeTables buildRopeTables(KernelBuilder &kb, attn::RopeAttr rope,
                           int64_t headDim, mlir::Value positions,
                           mlir::Value first = {});

/// Index of the dimension that `dim` rotates with: `dim +- r/2` inside the
/// rotated part, `dim` itself outside it.
mlir::Value ropePartner(mlir::OpBuilder &b, mlir::Location loc, mlir::Value dim,
                        const RopeTables &rope);

/// The rotated value of dimension `dim` at `position`, from the element and
/// its partner: `x_i cos - x_{i+r/2} sin` in the first half,
/// `x_{i+r/2} cos + x_i sin` in the second, unchanged past `r`.
mlir::Value applyRope(mlir::OpBuilder &b, mlir::Location loc,
                      const RopeTables &rope, mlir::Value element,
                      mlir::Value partner, mlir::Value position,
                      mlir::Value dim);

/// The key rows `keySlab` (`[rows, d]`, element type) as a `[d, rows]` tile
/// in the compute type, row `c` rotated by `rope` (when set) at position
/// `key0 + c`, all in the tables (rows past the last valid key are rotated
/// too, then masked): loadRotatedKeyRows, then transposed by one copy.
mlir::Value loadRotatedKeyTile(KernelBuilder &kb, mlir::Value keySlab,
                               const RopeTables &rope, mlir::Value key0);

/// The key rows `keySlab` (`[rows, d]`, element or compute type) as a
/// `[rows, d]` tile in the compute type, rotated by `rope` (when set) at
/// positions `key0 + c`, all in the tables: in the rows' layout as
/// `[rows, 2, r/2]` (a dim and its partner in the other half, every operand
/// of the innermost loop contiguous), so the rotation is vector code. With
/// `transposed`, the rotation by the opposite angles (`rope^T`, which takes
/// the gradient of rotated rows back to the un-rotated ones).
mlir::Value loadRotatedKeyRows(KernelBuilder &kb, mlir::Value keySlab,
                               const RopeTables &rope, mlir::Value key0,
                               bool transposed = false);

} // namespace attnfuse::kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTOSCF_ROPE_H
