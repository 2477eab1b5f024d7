//===- attnfuse-opt.cpp - attn dialect optimizer driver ---------*- C++ -*-===//
//
// mlir-opt for AttnFuse: the attn dialect and passes, plus the upstream
// dialects and passes the attn pipelines use.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<attnfuse::attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  // linalg, math, bufferization, memref, scf, cf, LLVM and the interface
  // models that convert-attn-to-linalg and attn-to-cpu produce and need.
  attnfuse::registerAttnToCPUDialects(registry);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  attnfuse::attn::registerAttnPasses();
  attnfuse::registerAttnFuseConversionPasses();
  attnfuse::registerAttnToCPUPipeline();
  // sm_90a: the dialects, NVVM target and translations of attn-to-ptx, and
  // the upstream GPU passes its stages can be run with one by one.
  attnfuse::registerAttnToPTXDialects(registry);
  attnfuse::registerAttnToPTXPipeline();
  mlir::registerGPUPasses();
  mlir::registerConvertGpuOpsToNVVMOpsPass();
  mlir::registerConvertNVVMToLLVMPass();
  mlir::registerSCFToControlFlowPass();
  mlir::registerReconcileUnrealizedCastsPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "AttnFuse optimizer driver\n", registry));
}
