//===- attnfuse-opt.cpp - attn dialect optimizer driver ---------*- C++ -*-===//
//
// mlir-opt for AttnFuse: the attn dialect and passes, plus the upstream
// dialects and passes the attn pipelines use, and the transform dialect's
// interpreter with the structured (linalg) transform ops: the fused kernel
// ops implement TilingInterface, so a transform script can tile them with
// its own tile sizes.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/InitAllDialects.h"
#include "attnfuse/InitAllPasses.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/TransformOps/DialectExtension.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  // attn, and everything attn-to-cpu and attn-to-ptx produce and need.
  attnfuse::registerAllAttnFuseDialects(registry);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  attnfuse::registerAttnFusePasses();
  // The upstream GPU passes the stages of attn-to-ptx can be run with one by
  // one.
  mlir::registerGPUPasses();
  mlir::registerConvertGpuOpsToNVVMOpsPass();
  mlir::registerConvertNVVMToLLVMPass();
  mlir::registerSCFToControlFlowPass();
  mlir::registerReconcileUnrealizedCastsPass();
  registry.insert<mlir::transform::TransformDialect>();
  mlir::linalg::registerTransformDialectExtension(registry);
  mlir::transform::registerInterpreterPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "AttnFuse optimizer driver\n", registry));
}
