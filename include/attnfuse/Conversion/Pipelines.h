//===- Pipelines.h - AttnFuse lowering pipelines ----------------*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_PIPELINES_H
#define ATTNFUSE_CONVERSION_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace attnfuse {

/// Options of the `attn-to-cpu` pipeline.
struct AttnToCPUOptions : public mlir::PassPipelineOptions<AttnToCPUOptions> {
  Option<bool> runtimeChecks{
      *this, "runtime-checks",
      llvm::cl::desc("Check at run time that the dynamic sizes of the "
                     "operands agree (generate-runtime-verification); a "
                     "failed check prints the op's location and aborts"),
      llvm::cl::init(true)};
};

/// Adds the `attn-to-cpu` pipeline to `pm` (anchored on a builtin.module):
/// attn-decompose, convert-attn-to-linalg, canonicalize, (optionally)
/// run-time size checks, one-shot bufferization across function boundaries
/// (identity layouts at the boundary), the buffer deallocation pipeline,
/// then linalg to loops and the standard conversions down to the LLVM
/// dialect. Functions carrying `llvm.emit_c_interface` get a
/// `_mlir_ciface_` wrapper for `mlir::ExecutionEngine`. The lowered
/// `memref.copy` of strided views calls `memrefCopy` from
/// libmlir_c_runner_utils.
void buildAttnToCPUPipeline(mlir::OpPassManager &pm,
                            const AttnToCPUOptions &options);
void buildAttnToCPUPipeline(mlir::OpPassManager &pm);

/// Registers `attn-to-cpu` as a named pass pipeline.
void registerAttnToCPUPipeline();

/// Inserts the dialects the `attn-to-cpu` pipeline produces and consumes,
/// and the external interface models (bufferization, deallocation) it
/// relies on.
void registerAttnToCPUDialects(mlir::DialectRegistry &registry);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_PIPELINES_H
