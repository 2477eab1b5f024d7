//===- AttnToPTX.cpp - the attn-to-ptx lowering pipeline --------*- C++ -*-===//
//
// fused attn kernel ops -> sm_90a kernels (gpu.func in gpu.modules, NVVM /
// LLVM dialect) -> PTX text (gpu-module-to-binary{format=isa}).
//
// The PTX ISA version is fixed by `features = "+ptx80"` on the NVVM target:
// it is what wgmma / setmaxnreg / cp.async.bulk.tensor need, and it keeps
// the `+ptx60` default of gpu-lower-to-nvvm-pipeline (which aborts LLVM for
// sm_90a) out of reach. The chip is validated by the conversion pass, which
// runs first and stops the pipeline with a diagnostic.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnKernelsToNVVM.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void attnfuse::buildAttnToPTXPipeline(OpPassManager &pm,
                                      const AttnToPTXOptions &options) {
  ConvertAttnKernelsToNVVMPassOptions kernels;
  kernels.chip = options.chip;
  kernels.elemType = options.elemType;
  kernels.stages = options.stages;
  pm.addPass(createConvertAttnKernelsToNVVMPass(kernels));
  if (options.format == "none")
    return;

  // Kernel bodies: scf -> cf, then gpu / arith / cf / nvvm -> LLVM + NVVM.
  {
    OpPassManager &gpuModule = pm.nest<gpu::GPUModuleOp>();
    gpuModule.addPass(createSCFToControlFlowPass());
    gpuModule.addPass(createConvertGpuOpsToNVVMOps());
  }
  pm.addPass(createAttnNVVMKernelParamsPass());
  {
    OpPassManager &gpuModule = pm.nest<gpu::GPUModuleOp>();
    gpuModule.addPass(createConvertNVVMToLLVMPass());
    gpuModule.addPass(createCanonicalizerPass());
    gpuModule.addPass(createCSEPass());
    gpuModule.addPass(createReconcileUnrealizedCastsPass());
  }
  GpuNVVMAttachTargetOptions target;
  // Only sm_90a reaches this point with kernels in it (the conversion pass
  // rejects anything else); never pass a chip / PTX pair LLVM aborts on.
  target.chip = "sm_90a";
  target.features = "+ptx80";
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void attnfuse::registerAttnToPTXPipeline() {
  PassPipelineRegistration<AttnToPTXOptions>(
      "attn-to-ptx",
      "Lower the fused attn kernel ops to sm_90a kernels and PTX (run "
      "attn-decompose and attn-fuse first)",
      [](OpPassManager &pm, const AttnToPTXOptions &options) {
        buildAttnToPTXPipeline(pm, options);
      });
}

void attnfuse::registerAttnToPTXDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                  func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  math::MathDialect, NVVM::NVVMDialect, scf::SCFDialect,
                  tensor::TensorDialect, ub::UBDialect>();
  // convert-gpu-to-nvvm lowers every dialect through its ConvertToLLVM
  // interface.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  // gpu-module-to-binary: the NVVM target and the LLVM IR translations.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}
