//===- AttnKernelsToSCF.cpp - fused attn kernels to tiled loops -*- C++ -*-===//

#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNKERNELSTOSCFPASS
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;

void attnfuse::populateAttnKernelsToSCFPatterns(RewritePatternSet &patterns,
                                                bool parallel) {
  populateFlashAttentionToSCFPatterns(patterns, parallel);
  populateFlashAttentionGradToSCFPatterns(patterns, parallel);
  populateFlashDecodeToSCFPatterns(patterns, parallel);
  populateFusedProjectionToSCFPatterns(patterns, parallel);
  populateFusedWeightGradToSCFPatterns(patterns, parallel);
  populateCCAPrologueToSCFPatterns(patterns, parallel);
  populateCCADecodePrologueToSCFPatterns(patterns);
}

namespace {
struct ConvertAttnKernelsToSCFPass
    : public attnfuse::impl::ConvertAttnKernelsToSCFPassBase<
          ConvertAttnKernelsToSCFPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(attnfuse::checkCPULoweringLimits(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    attnfuse::populateAttnKernelsToSCFPatterns(patterns, parallel);
    // Each kernel op is rewritten once; the loops it becomes hold nothing to
    // rewrite again.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};
} // namespace
