//===- Passes.h - attn dialect passes ---------------------------*- C++ -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace attnfuse::attn {

#define GEN_PASS_DECL
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"

/// Adds the patterns that rewrite attn layer ops into primitive ops.
void populateAttnDecomposePatterns(mlir::RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H
