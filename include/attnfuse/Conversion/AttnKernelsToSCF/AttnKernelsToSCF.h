//===- AttnKernelsToSCF.h - fused attn kernels to tiled loops ---*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_ATTNKERNELSTOSCF_ATTNKERNELSTOSCF_H
#define ATTNFUSE_CONVERSION_ATTNKERNELSTOSCF_ATTNKERNELSTOSCF_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace attnfuse {

#define GEN_PASS_DECL_CONVERTATTNKERNELSTOSCFPASS
#include "attnfuse/Conversion/Passes.h.inc"

/// attn.flash_attention -> tiled scf.for loops with online softmax.
void populateFlashAttentionToSCFPatterns(mlir::RewritePatternSet &patterns,
                                         bool parallel = false);
/// attn.flash_attention_grad -> loops over query tiles (L, D, dQ), then
/// over key tiles (dK, dV), per batch entry and KV head.
void populateFlashAttentionGradToSCFPatterns(mlir::RewritePatternSet &patterns,
                                             bool parallel = false);
/// attn.flash_decode -> a cache write and loops over key tiles with online
/// softmax per sequence and KV head.
void populateFlashDecodeToSCFPatterns(mlir::RewritePatternSet &patterns,
                                      bool parallel = false);
/// attn.fused_projection -> tiled GEMM loops with a bias and RoPE epilogue.
void populateFusedProjectionToSCFPatterns(mlir::RewritePatternSet &patterns,
                                          bool parallel = false);
/// attn.fused_weight_grad -> tiled GEMM loops over chunks of tokens.
void populateFusedWeightGradToSCFPatterns(mlir::RewritePatternSet &patterns,
                                          bool parallel = false);
/// attn.cca_prologue -> loops over sequence blocks with a halo.
void populateCCAPrologueToSCFPatterns(mlir::RewritePatternSet &patterns,
                                      bool parallel = false);
/// attn.cca_decode_prologue -> one decode step over the batch (no tiling).
void populateCCADecodePrologueToSCFPatterns(mlir::RewritePatternSet &patterns);

/// All of the above. With `parallel`, the independent outer loops of the
/// tiled kernels (see the pass's `parallel` option) are one `scf.forall`.
void populateAttnKernelsToSCFPatterns(mlir::RewritePatternSet &patterns,
                                      bool parallel = false);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNKERNELSTOSCF_ATTNKERNELSTOSCF_H
