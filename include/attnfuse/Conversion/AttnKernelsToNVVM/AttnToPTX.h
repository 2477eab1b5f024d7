//===- AttnToPTX.h - the attn-to-ptx pipeline -------------------*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_ATTNKERNELSTONVVM_ATTNTOPTX_H
#define ATTNFUSE_CONVERSION_ATTNKERNELSTONVVM_ATTNTOPTX_H

#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace attnfuse {

/// Options of the `attn-to-ptx` pipeline.
struct AttnToPTXOptions : public mlir::PassPipelineOptions<AttnToPTXOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target chip (only sm_90a)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> elemType{
      *this, "elem-type", llvm::cl::desc("Kernel element type: bf16 or f16"),
      llvm::cl::init("bf16")};
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Shared-memory pipeline depth"),
                         llvm::cl::init(2)};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary format: isa (PTX text, no ptxas) "
                     "or none (stop at the NVVM / LLVM dialect)"),
      llvm::cl::init("isa")};
};

/// Adds `attn-to-ptx` to `pm` (anchored on a builtin.module): the fused attn
/// kernel ops (run attn-decompose and attn-fuse first; the flash attention
/// tiles are the ops' block_q / block_kv, attn-fuse's block-q / block-kv
/// options: 64, 128 or 192 query rows, 64 or 128 keys on sm_90a) -> sm_90a
/// kernels in
/// gpu.modules -> NVVM / LLVM dialect -> PTX text in gpu.binary ops
/// (`.target sm_90a`, PTX ISA 8.0). The host function keeps a `func.call` per
/// kernel launch to a declaration carrying the launch description.
void buildAttnToPTXPipeline(mlir::OpPassManager &pm,
                            const AttnToPTXOptions &options);

/// Registers `attn-to-ptx` as a named pass pipeline.
void registerAttnToPTXPipeline();

/// Inserts the dialects the pipeline produces and consumes, and registers
/// the NVVM target interfaces (gpu-module-to-binary) and LLVM IR
/// translations it needs.
void registerAttnToPTXDialects(mlir::DialectRegistry &registry);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNKERNELSTONVVM_ATTNTOPTX_H
