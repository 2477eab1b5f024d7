//===- Passes.h - attn dialect passes ---------------------------*- C++ -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewriterBase;
class RewritePatternSet;
} // namespace mlir

namespace attnfuse::attn {

#define GEN_PASS_DECL
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"

/// Adds the patterns that rewrite attn layer ops into primitive ops.
void populateAttnDecomposePatterns(mlir::RewritePatternSet &patterns);

/// The phases of attn-fuse. Each one's patterns match what the earlier
/// phases produced, so they must run to a fixpoint in this order.
enum class AttnFusePhase {
  /// The CCA chains -> attn.cca_prologue / attn.cca_decode_prologue.
  Prologue,
  /// attn.sdpa and decode attention -> attn.flash_attention /
  /// attn.flash_decode.
  Attention,
  /// Projections split into heads (with their RoPE) -> attn.fused_projection.
  Projections,
  /// Every other projection -> a one-head attn.fused_projection (a GEMM).
  Gemms,
};

/// Adds the attn-fuse patterns of one phase, with the tile sizes of
/// `options` (the pass options of attn-fuse).
void populateAttnFusePatterns(mlir::RewritePatternSet &patterns,
                              AttnFusePhase phase,
                              const AttnFuseOptions &options = {});

/// Runs every attn-fuse phase, in order, on the ops nested in `root` (what
/// the attn-fuse pass does). Fails with a diagnostic on a non-positive tile
/// size.
mlir::LogicalResult applyAttnFusePatterns(mlir::Operation *root,
                                          const AttnFuseOptions &options = {});

/// `source` with its dimensions permuted (`result[i] = source[permutation
/// applied to i]`) as linalg.transpose; a large static matrix is transposed
/// in 64 x 64 blocks (an scf.for nest), whose reads stay within a few pages
/// (element by element, a 1024-wide weight's transpose read one element per
/// 4 KiB page).
mlir::Value createBlockedTranspose(mlir::RewriterBase &rewriter,
                                   mlir::Location loc, mlir::Value source,
                                   llvm::ArrayRef<int64_t> permutation);

#define GEN_PASS_REGISTRATION
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H
