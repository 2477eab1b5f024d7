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
  Option<bool> returnOnFailedCheck{
      *this, "return-on-failed-check",
      llvm::cl::desc("A failed run-time check or allocation makes the "
                     "function return at once after calling "
                     "attnfuse_check_failed(message) instead of aborting "
                     "(convert-assert-to-error-return); memory is allocated "
                     "through the _mlir_memref_to_llvm_* functions so that "
                     "the host can free what a failed call allocated. The "
                     "CPU JIT sets it"),
      llvm::cl::init(false)};
  Option<bool> outlineLayers{
      *this, "outline-layers",
      llvm::cl::desc("Compile each distinct layer once: layer ops that occur "
                     "more than once become calls of one function "
                     "(attn-outline-layers)"),
      llvm::cl::init(true)};
  Option<bool> fused{
      *this, "fused",
      llvm::cl::desc("Fuse the primitives into kernels (attn-fuse) and lower "
                     "those as tiled loops (convert-attn-kernels-to-scf); "
                     "false lowers every primitive through the reference "
                     "path (convert-attn-to-linalg)"),
      llvm::cl::init(true)};
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Register-block and vectorize the fused kernels' static "
                     "tiles (attn-vectorize-kernel-tiles; vector.contract "
                     "lowered to outer products, exp by a polynomial); "
                     "false leaves them to scalar loops and LLVM's loop "
                     "vectorizer"),
      llvm::cl::init(true)};
  Option<bool> inPlaceResults{
      *this, "in-place-results",
      llvm::cl::desc("Private functions (the outlined layers) stop "
                     "returning the results that bufferize to one of their "
                     "argument buffers (canonicalize, then "
                     "drop-equivalent-buffer-results): an argument marked "
                     "`bufferization.writable = true` that is updated and "
                     "returned (a KV cache) is written in place and never "
                     "cloned. The CPU JIT sets it and drops the entry's "
                     "tied results itself"),
      llvm::cl::init(false)};
  Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the independent outer tile loops of the fused "
                     "kernels on all threads: convert-attn-kernels-to-scf "
                     "parallel=true (scf.forall), then scf-forall-to-parallel "
                     "and convert-scf-to-openmp (omp.parallel / omp.wsloop, "
                     "calls into the OpenMP runtime, libomp). Each tile's "
                     "reductions stay on one thread, so results are the same "
                     "for every thread count. false keeps every loop "
                     "sequential and the code free of OpenMP"),
      llvm::cl::init(true)};
  Option<unsigned> numThreads{
      *this, "num-threads",
      llvm::cl::desc("Threads of each parallel loop (the num_threads of "
                     "omp.parallel); 0 leaves it to the OpenMP runtime: "
                     "OMP_NUM_THREADS, else one per core"),
      llvm::cl::init(0)};
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Flash-attention query tile"),
                         llvm::cl::init(64)};
  Option<int64_t> blockKV{*this, "block-kv",
                          llvm::cl::desc("Flash-attention key tile"),
                          llvm::cl::init(64)};
  Option<int64_t> blockS{*this, "block-s",
                         llvm::cl::desc("Prologue and projection token tile"),
                         llvm::cl::init(64)};
  Option<int64_t> blockN{*this, "block-n",
                         llvm::cl::desc("Projection feature tile"),
                         llvm::cl::init(64)};
  Option<int64_t> blockK{*this, "block-k",
                         llvm::cl::desc("Projection reduction step"),
                         llvm::cl::init(64)};
  Option<int64_t> registerTileM{
      *this, "register-tile-m",
      llvm::cl::desc("Rows of a GEMM tile's register block "
                     "(attn-vectorize-kernel-tiles; 2 x 32 measured faster "
                     "than the pass's 4 x 16 on AVX2 for both the "
                     "projection and the attention tiles; the JIT uses "
                     "6 x 64 on AVX-512 hosts unless either is given)"),
      llvm::cl::init(2)};
  Option<int64_t> registerTileN{
      *this, "register-tile-n",
      llvm::cl::desc("Columns of a GEMM tile's register block "
                     "(attn-vectorize-kernel-tiles)"),
      llvm::cl::init(32)};
};

/// Adds the `attn-to-cpu` pipeline to `pm` (anchored on a builtin.module):
/// attn-decompose, then (by default) attn-fuse and
/// convert-attn-kernels-to-scf for the fused kernels, convert-attn-to-linalg
/// for the remaining primitives, canonicalize, (optionally)
/// run-time size checks, one-shot bufferization across function boundaries
/// (identity layouts at the boundary), the buffer deallocation pipeline,
/// then linalg to loops and the standard conversions down to the LLVM
/// dialect. Functions carrying `llvm.emit_c_interface` get a
/// `_mlir_ciface_` wrapper for `mlir::ExecutionEngine`. With `parallel`
/// (the default) the code calls the OpenMP runtime (`__kmpc_*` of libomp),
/// which the host must provide; the OpenMP dialect's LLVM IR translation
/// must be registered. The lowered
/// `memref.copy` of strided views calls `memrefCopy` from
/// libmlir_c_runner_utils.
void buildAttnToCPUPipeline(mlir::OpPassManager &pm,
                            const AttnToCPUOptions &options);
void buildAttnToCPUPipeline(mlir::OpPassManager &pm);

/// The two halves of `attn-to-cpu`: everything up to and including one-shot
/// bufferization (and the in-place results), the functions then taking and
/// returning memrefs, and the rest (deallocation, loops, LLVM). The CPU JIT
/// runs them separately to read which results are argument buffers.
void buildAttnToCPUBufferizePipeline(mlir::OpPassManager &pm,
                                     const AttnToCPUOptions &options);
void buildAttnToCPUBuffersToLLVMPipeline(mlir::OpPassManager &pm,
                                         const AttnToCPUOptions &options);

/// Registers `attn-to-cpu` as a named pass pipeline.
void registerAttnToCPUPipeline();

/// Inserts the dialects the `attn-to-cpu` pipeline produces and consumes,
/// and the external interface models (bufferization, deallocation) it
/// relies on.
void registerAttnToCPUDialects(mlir::DialectRegistry &registry);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_PIPELINES_H
