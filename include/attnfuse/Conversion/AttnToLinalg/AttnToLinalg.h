//===- AttnToLinalg.h - attn primitives to linalg ---------------*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
#define ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace attnfuse {

#define GEN_PASS_DECL_CONVERTATTNTOLINALGPASS
#include "attnfuse/Conversion/Passes.h.inc"

/// Adds the patterns lowering every primitive attn op (project,
/// causal_conv1d, qk_mean, qk_norm, value_shift, rope, sdpa) on tensors to
/// linalg, tensor, arith and math. Layer ops are not covered: decompose them
/// first with `attn::populateAttnDecomposePatterns`.
void populateAttnToLinalgPatterns(mlir::RewritePatternSet &patterns);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
