//===- AttnToLinalg.h - attn primitives to linalg ---------------*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
#define ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H

#include "mlir/Pass/Pass.h"

#include <cstdint>

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace attnfuse {

#define GEN_PASS_DECL_CONVERTATTNTOLINALGPASS
#include "attnfuse/Conversion/Passes.h.inc"

/// Adds the patterns lowering every primitive attn op (project,
/// causal_conv1d, qk_mean, qk_norm, value_shift, rope, sdpa) and their
/// gradient ops on tensors to
/// linalg, tensor, arith and math. Layer ops are not covered: decompose them
/// first with `attn::populateAttnDecomposePatterns`.
void populateAttnToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// Adds the patterns lowering the gradient ops (project_grad,
/// causal_conv1d_grad, qk_mean_grad, qk_norm_grad, value_shift_grad,
/// rope_grad, sdpa_grad) to linalg; part of populateAttnToLinalgPatterns.
void populateAttnGradToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// The largest RoPE frequency table (one f64 constant per rotated pair of
/// dimensions) the CPU lowerings materialize: 2^20 pairs, 8 MiB.
constexpr int64_t kMaxCPURopePairs = int64_t(1) << 20;

/// Static shapes the CPU lowerings (convert-attn-to-linalg,
/// convert-attn-kernels-to-scf) cannot handle give a diagnostic on the op
/// up front, instead of index arithmetic that wraps or a constant table
/// that takes minutes and gigabytes to build: every static tensor of an attn
/// op must have a size in bytes that fits in int64 (the index type), and a
/// RoPE's rotated width at most 2 * kMaxCPURopePairs dimensions.
mlir::LogicalResult checkCPULoweringLimits(mlir::Operation *root);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
