//===- AttnToCPU.cpp - the attn-to-cpu lowering pipeline --------*- C++ -*-===//
//
// attn (layer or primitive ops) on tensors -> linalg on tensors -> buffers ->
// loops -> LLVM dialect, ready for mlir::ExecutionEngine.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/AssertToErrorReturn/AssertToErrorReturn.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attnfuse/Conversion/Pipelines.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void attnfuse::buildAttnToCPUPipeline(OpPassManager &pm) {
  buildAttnToCPUPipeline(pm, AttnToCPUOptions());
}

void attnfuse::buildAttnToCPUPipeline(OpPassManager &pm,
                                      const AttnToCPUOptions &options) {
  buildAttnToCPUBufferizePipeline(pm, options);
  buildAttnToCPUBuffersToLLVMPipeline(pm, options);
}

void attnfuse::buildAttnToCPUBufferizePipeline(
    OpPassManager &pm, const AttnToCPUOptions &options) {
  // attn -> (fused kernels ->) linalg and scf on tensors.
  if (options.outlineLayers)
    pm.addPass(attn::createAttnOutlineLayers());
  pm.addPass(attn::createAttnDecompose());
  if (options.fused) {
    attn::AttnFuseOptions tiles;
    tiles.blockQ = options.blockQ;
    tiles.blockKV = options.blockKV;
    tiles.blockS = options.blockS;
    tiles.blockN = options.blockN;
    tiles.blockK = options.blockK;
    pm.addPass(attn::createAttnFuse(tiles));
    pm.addPass(createCanonicalizerPass());
    ConvertAttnKernelsToSCFPassOptions kernels;
    kernels.parallel = options.parallel;
    pm.addPass(createConvertAttnKernelsToSCFPass(kernels));
    if (options.vectorize) {
      attn::AttnVectorizeKernelTilesOptions registerBlocks;
      registerBlocks.registerTileM = options.registerTileM;
      registerBlocks.registerTileN = options.registerTileN;
      pm.addPass(attn::createAttnVectorizeKernelTiles(registerBlocks));
      pm.addPass(createCanonicalizerPass());
    }
  }
  pm.addPass(createConvertAttnToLinalgPass());
  // Elementwise arith/math on tensors between layers (the residual adds of
  // a model) become linalg too, so that everything bufferizes.
  pm.addPass(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  if (options.runtimeChecks) {
    // Operands whose dynamic sizes disagree (say a logit bias that is not
    // [S, T]) would make the loops read out of bounds: check every linalg and
    // tensor op's sizes at run time instead.
    // Level 0 keeps the messages short (the location, not the printed op).
    std::unique_ptr<Pass> verification =
        createGenerateRuntimeVerificationPass();
    (void)verification->initializeOptions(
        "verbose-level=0", [](const Twine &) { return failure(); });
    pm.addPass(std::move(verification));
  }

  // Tensors -> buffers. Identity layouts at the function boundary keep the
  // C interface plain (contiguous row-major descriptors); temporaries are
  // freed by the ownership-based deallocation pipeline, and results are
  // owned by the caller.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  if (options.inPlaceResults) {
    // A buffer updated in place in a loop is the loop's result: folding the
    // loop-carried values shows that the returned buffer is the argument.
    // A result that is one of the function's argument buffers (a cache
    // argument marked `bufferization.writable`, updated in place) is then
    // no longer returned (private functions: the outlined layers): returning
    // it would make the deallocation pipeline clone the whole buffer.
    pm.addPass(createCanonicalizerPass());
    pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  }
}

void attnfuse::buildAttnToCPUBuffersToLLVMPipeline(
    OpPassManager &pm, const AttnToCPUOptions &options) {
  // The bufferized scf.forall of the kernels: an scf.parallel over the same
  // iterations, for convert-scf-to-openmp below.
  if (options.parallel)
    pm.addPass(createForallToParallelLoopPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass()); // bufferization.clone
  // The pipeline frees a temporary at the end of its block (a function's
  // at its return): free it after its last use instead.
  pm.addPass(attn::createAttnFreeBuffersEarly());
  // A kernel loop's tile buffers: allocated once per loop, not per iteration.
  pm.addPass(attn::createAttnReuseLoopBuffers());

  // Buffers -> loops -> LLVM.
  if (options.vectorize) {
    // Contractions -> FMAs on 1-D vectors, n-D transfers -> 1-D loads and
    // stores, exp -> a polynomial, strided copies -> linalg.copy.
    pm.addPass(attn::createAttnLowerKernelVectors());
  }
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // bf16 arithmetic left in the model (a residual add between layers) runs
  // in f32 and rounds once, as the GPU kernels do; LLVM would otherwise
  // promote it through the __truncsfbf2 libcall, which the JIT lacks.
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true; // bf16 <-> f32 as integer ops, no libcalls
  pm.addPass(arith::createArithExpandOpsPass(expand));
  if (options.parallel) {
    // scf.parallel -> omp.parallel { omp.wsloop { omp.loop_nest } }: the
    // (collapsed) iterations are split statically among the threads.
    ConvertSCFToOpenMPPassOptions openmp;
    openmp.numThreads = options.numThreads;
    pm.addPass(createConvertSCFToOpenMPPass(openmp));
    // The pass wraps each loop body in a memref.alloca_scope, single-block,
    // which scf-to-cf would break; the bodies allocate on the heap only, so
    // the canonicalizer inlines the scopes.
    pm.addPass(createCanonicalizerPass());
  }
  pm.addPass(createSCFToControlFlowPass());
  if (options.vectorize) {
    // After attn-lower-kernel-vectors only 1-D vector ops remain.
    ConvertVectorToLLVMPassOptions vectorToLLVM;
    // Row sums as trees of vector adds, not one chain of dependent scalar
    // adds (a softmax row sum of 64 is 64 adds back to back otherwise). The
    // order is fixed by the code, so results do not depend on the threads.
    vectorToLLVM.reassociateFPReductions = true;
    pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
    pm.addPass(createUBToLLVMConversionPass()); // padding of transfer reads
  }
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = options.returnOnFailedCheck;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createConvertFuncToLLVMPass());
  if (options.returnOnFailedCheck) {
    ConvertAssertToErrorReturnPassOptions errorReturns;
    errorReturns.checkAllocations = true;
    pm.addPass(createConvertAssertToErrorReturnPass(errorReturns));
  }
  pm.addPass(createConvertControlFlowToLLVMPass());
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void attnfuse::registerAttnToCPUPipeline() {
  PassPipelineRegistration<AttnToCPUOptions>(
      "attn-to-cpu",
      "Lower attn ops to the LLVM dialect for CPU execution "
      "(attn-outline-layers unless outline-layers=false, attn-decompose, "
      "attn-fuse and convert-attn-kernels-to-scf unless fused=false, "
      "attn-vectorize-kernel-tiles unless vectorize=false, "
      "convert-attn-to-linalg, bufferization, loops, OpenMP for the kernels' "
      "parallel loops unless parallel=false, LLVM)",
      [](OpPassManager &pm, const AttnToCPUOptions &options) {
        buildAttnToCPUPipeline(pm, options);
      });
}

void attnfuse::registerAttnToCPUDialects(DialectRegistry &registry) {
  registry
      .insert<attn::AttnDialect, affine::AffineDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, cf::ControlFlowDialect,
              func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
              math::MathDialect, memref::MemRefDialect, omp::OpenMPDialect,
              scf::SCFDialect, tensor::TensorDialect, vector::VectorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerRuntimeVerifiableOpInterfaceExternalModels(registry);
  // attn-vectorize-kernel-tiles tiles linalg ops and hoists slices and
  // transfers out of loops.
  linalg::registerTilingInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerRuntimeVerifiableOpInterfaceExternalModels(registry);
}
