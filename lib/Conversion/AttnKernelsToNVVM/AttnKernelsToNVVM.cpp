//===- AttnKernelsToNVVM.cpp - fused attn kernels to sm_90a -----*- C++ -*-===//
//
// The driver of convert-attn-kernels-to-nvvm: plans every fused kernel op,
// emits one gpu.module per distinct kernel configuration and replaces the op
// by a call to a host-side launch declaration that carries the launch
// description. Also attn-nvvm-kernel-params, which gives the CUtensorMap
// parameters their by-value, __grid_constant__ form after gpu-to-nvvm.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnKernelsToNVVM.h"
#include "Kernels.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNKERNELSTONVVMPASS
#define GEN_PASS_DEF_ATTNNVVMKERNELPARAMSPASS
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;

namespace {

/// Emits kernels and launch declarations into one module.
class KernelEmitter {
public:
  KernelEmitter(ModuleOp module) : module(module), symbols(module) {}

  /// Returns the name under which the kernel of `key` lives, creating it
  /// with `build` (given the final name) the first time.
  StringRef kernelFor(
      const std::string &key, const std::string &baseName, Location loc,
      const std::function<void(gpu::GPUModuleOp, const std::string &)> &build) {
    auto it = byKey.find(key);
    if (it != byKey.end())
      return it->second;
    std::string name = baseName;
    for (int i = 1; symbols.lookup(name); ++i)
      name = baseName + "_" + std::to_string(i);
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, loc, name);
    symbols.insert(gpuModule);
    build(gpuModule, name);
    return byKey.emplace(key, name).first->second;
  }

  /// The host-side declaration `@<kernel>_launch` of type `type` carrying
  /// `launch`, shared by every op of `opName` with that type.
  func::FuncOp declareLaunch(Location loc, StringRef kernel, StringRef opName,
                             FunctionType type, DictionaryAttr launch) {
    std::string key =
        (kernel + ":" + opName + ":" + llvm::formatv("{0}", type).str()).str();
    auto it = launches.find(key);
    if (it != launches.end())
      return it->second;
    OpBuilder mb(module.getContext());
    mb.setInsertionPointToEnd(module.getBody());
    std::string name = (kernel + "_launch").str();
    for (int i = 1; symbols.lookup(name); ++i)
      name = (kernel + "_launch_" + Twine(i)).str();
    func::FuncOp decl = func::FuncOp::create(mb, loc, name, type);
    decl.setPrivate();
    decl->setAttr(kLaunchAttr, launch);
    decl->setAttr("attnfuse.op", StringAttr::get(module.getContext(), opName));
    decl->setAttr("attnfuse.kernel",
                  SymbolRefAttr::get(
                      module.getContext(), kernel,
                      {FlatSymbolRefAttr::get(module.getContext(), kernel)}));
    symbols.insert(decl);
    launches.emplace(key, decl);
    return decl;
  }

  /// Replaces `op` by a call to `@<kernel>_launch` carrying `launch`.
  void replaceWithLaunch(Operation *op, StringRef kernel,
                         DictionaryAttr launch) {
    OpBuilder b(op);
    SmallVector<Value> operands, unread;
    splitLaunchOperands(op, operands, unread);
    SmallVector<Type> operandTypes;
    for (Value operand : operands)
      operandTypes.push_back(operand.getType());
    auto type =
        FunctionType::get(op->getContext(), operandTypes, op->getResultTypes());
    func::FuncOp decl = declareLaunch(
        op->getLoc(), kernel, op->getName().getStringRef(), type, launch);
    auto call = func::CallOp::create(b, op->getLoc(), decl, operands);
    op->replaceAllUsesWith(call.getResults());
    op->erase();
    // The init's shape computation (tensor.empty, tensor.dim) would be left
    // in the host program, which runs no such ops.
    eraseIfUnused(unread);
  }

  /// Splits `op`'s operands (positionally: one value may fill several) into
  /// the launch's `operands` and the `unread` inits that only carry a
  /// result's shape: the kernel writes those results into buffers of its
  /// own. The caches and states a decode op updates in place are inits the
  /// kernel reads, so they stay launch operands.
  static void splitLaunchOperands(Operation *op,
                                  SmallVectorImpl<Value> &operands,
                                  SmallVectorImpl<Value> &unread) {
    llvm::SmallDenseSet<unsigned> outputOnly;
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
      int64_t count = dps.getNumDpsInits();
      if (isa<attn::FlashDecodeOp>(op))
        count = 1;
      else if (isa<attn::CCADecodePrologueOp>(op))
        count = 3;
      for (OpOperand &init : dps.getDpsInitsMutable())
        if (static_cast<int64_t>(outputOnly.size()) < count)
          outputOnly.insert(init.getOperandNumber());
    }
    for (OpOperand &operand : op->getOpOperands())
      (outputOnly.contains(operand.getOperandNumber()) ? unread : operands)
          .push_back(operand.get());
  }

  /// Erases the side-effect-free ops that computed `values` (and, in turn,
  /// their operands) once nothing reads them. A value may be listed twice
  /// (one tensor.empty for two inits) or feed another listed value.
  static void eraseIfUnused(ArrayRef<Value> values) {
    SmallVector<Operation *> worklist;
    for (Value value : values)
      if (Operation *producer = value.getDefiningOp())
        worklist.push_back(producer);
    llvm::SmallPtrSet<Operation *, 8> erased;
    while (!worklist.empty()) {
      Operation *producer = worklist.pop_back_val();
      if (erased.contains(producer) || !producer->use_empty() ||
          !isMemoryEffectFree(producer))
        continue;
      for (Value operand : producer->getOperands())
        if (Operation *definition = operand.getDefiningOp())
          worklist.push_back(definition);
      erased.insert(producer);
      producer->erase();
    }
  }

private:
  ModuleOp module;
  SymbolTable symbols;
  std::map<std::string, std::string> byKey;
  std::map<std::string, func::FuncOp> launches;
};

/// Emits (or reuses) the kernel of `plan` and replaces `op` by its launch.
/// `build` writes the kernel into a gpu.module; `describe` gives the launch
/// description once the plan carries the kernel's final name.
template <typename Plan, typename BuildFn, typename DescribeFn>
void lowerToKernel(KernelEmitter &emitter, Operation *op, Plan &plan,
                   BuildFn build, DescribeFn describe) {
  StringRef name =
      emitter.kernelFor(plan.key(), plan.name, op->getLoc(),
                        [&](gpu::GPUModuleOp gm, const std::string &finalName) {
                          plan.name = finalName;
                          OpBuilder b(op->getContext());
                          build(b, op->getLoc(), gm, plan);
                        });
  plan.name = name.str();
  emitter.replaceWithLaunch(op, name, describe());
}

/// attn.flash_decode: the split kernel (its launch returns the workspace
/// and the caches, updated in place), then the combine kernel (workspace ->
/// output).
void lowerFlashDecode(KernelEmitter &emitter, attn::FlashDecodeOp op,
                      DecodePlan &plan) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  std::string key = plan.key();
  plan.name = emitter
                  .kernelFor(key + ":split", "attn_flash_decode", loc,
                             [&](gpu::GPUModuleOp gm, const std::string &n) {
                               plan.name = n;
                               OpBuilder b(ctx);
                               buildFlashDecodeSplitKernel(b, loc, gm, plan);
                             })
                  .str();
  plan.combineName =
      emitter
          .kernelFor(key + ":combine", "attn_flash_decode_combine", loc,
                     [&](gpu::GPUModuleOp gm, const std::string &n) {
                       plan.combineName = n;
                       OpBuilder b(ctx);
                       buildFlashDecodeCombineKernel(b, loc, gm, plan);
                     })
          .str();

  auto queryType = cast<RankedTensorType>(op.getQuery().getType());
  auto workspaceType = RankedTensorType::get(
      {queryType.getDimSize(0), plan.numHeads,
       plan.numSplits > 0 ? plan.numSplits : ShapedType::kDynamic,
       plan.workspaceRow()},
      Float32Type::get(ctx));
  SmallVector<Type> splitResults = {workspaceType};
  for (Value cache : op.getResults().drop_front())
    splitResults.push_back(cache.getType());
  // Every operand but the output's init, whose shape the combine kernel's
  // result has.
  SmallVector<Value> operands, unread;
  KernelEmitter::splitLaunchOperands(op, operands, unread);
  func::FuncOp splitDecl = emitter.declareLaunch(
      loc, plan.name, op->getName().getStringRef(),
      FunctionType::get(ctx, ValueRange(operands).getTypes(), splitResults),
      describeFlashDecodeSplit(ctx, op, plan));
  func::FuncOp combineDecl = emitter.declareLaunch(
      loc, plan.combineName, op->getName().getStringRef(),
      FunctionType::get(ctx, {workspaceType}, {op.getResult().getType()}),
      describeFlashDecodeCombine(ctx, op, plan));
  OpBuilder b(op);
  auto split = func::CallOp::create(b, loc, splitDecl, operands);
  auto combine =
      func::CallOp::create(b, loc, combineDecl, ValueRange{split.getResult(0)});
  SmallVector<Value> results = {combine.getResult(0)};
  llvm::append_range(results, split.getResults().drop_front());
  op->replaceAllUsesWith(results);
  op->erase();
  emitter.eraseIfUnused(unread);
}

struct ConvertAttnKernelsToNVVMPass
    : public attnfuse::impl::ConvertAttnKernelsToNVVMPassBase<
          ConvertAttnKernelsToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    TargetOptions options;
    if (chip != "sm_90a") {
      module.emitError()
          << "attn sm_90a kernels: unsupported chip '" << chip
          << "': the kernels use wgmma, setmaxnreg and TMA, which need "
             "sm_90a (the 'a' features of H100/H200)";
      return signalPassFailure();
    }
    options.chip = chip;
    if (elemType == "bf16")
      options.elem = ElemKind::bf16;
    else if (elemType == "f16")
      options.elem = ElemKind::f16;
    else {
      module.emitError() << "attn sm_90a kernels: unsupported elem-type '"
                         << elemType << "' (bf16 or f16)";
      return signalPassFailure();
    }
    options.stages = stages;

    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<attn::FlashAttentionOp, attn::FlashAttentionGradOp,
              attn::FusedWeightGradOp, attn::FlashDecodeOp, attn::FusedProjectionOp, attn::ProjectOp,
              attn::CCAPrologueOp, attn::CCADecodePrologueOp,
              attn::CacheUpdateOp, attn::CacheGatherOp, attn::RoPEOp,
              attn::SDPAOp>(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    // The residual adds of the functions that launch kernels run on the
    // device too (a function without kernels is not a device program).
    llvm::SmallPtrSet<Operation *, 8> programs;
    for (Operation *op : ops)
      programs.insert(op->getParentOfType<func::FuncOp>());
    module.walk([&](arith::AddFOp add) {
      if (isa<RankedTensorType>(add.getType()) &&
          programs.contains(add->getParentOfType<func::FuncOp>()))
        ops.push_back(add);
    });
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));

    // Models repeat layers: stop at the first op without a kernel instead of
    // reporting the same problem for every layer.
    KernelEmitter emitter(module);
    for (Operation *op : ops) {
      if (isa<attn::FlashAttentionGradOp, attn::FusedWeightGradOp>(op)) {
        op->emitOpError() << "is not supported on sm_90a yet (the backward "
                             "runs on the CPU: attn-to-cpu)";
        return signalPassFailure();
      }
      if (auto fa = dyn_cast<attn::FlashAttentionOp>(op)) {
        if (fa.getLse()) {
          op->emitOpError() << "with an 'lse' result is not supported on "
                               "sm_90a yet (the backward runs on the CPU: "
                               "attn-to-cpu)";
          return signalPassFailure();
        }
        FailureOr<FlashPlan> plan = planFlashAttention(fa, options);
        if (failed(plan))
          return signalPassFailure();
        lowerToKernel(emitter, op, *plan, buildFlashAttentionKernel,
                      [&] { return describeFlashAttention(ctx, fa, *plan); });
        continue;
      }
      if (auto decode = dyn_cast<attn::FlashDecodeOp>(op)) {
        FailureOr<DecodePlan> plan = planFlashDecode(decode, options);
        if (failed(plan))
          return signalPassFailure();
        lowerFlashDecode(emitter, decode, *plan);
        continue;
      }
      if (auto cca = dyn_cast<attn::CCAPrologueOp>(op)) {
        std::string unsupported;
        FailureOr<ProloguePlan> plan =
            planCCAPrologue(cca, options, unsupported);
        if (failed(plan)) {
          if (unsupported.empty())
            return signalPassFailure();
          // No kernel for this shape: the op stays on the host side.
          op->emitWarning()
              << unsupported << "; attn.cca_prologue stays on the host";
          continue;
        }
        lowerToKernel(emitter, op, *plan, buildCCAPrologueKernel,
                      [&] { return describeCCAPrologue(ctx, cca, *plan); });
        continue;
      }
      if (auto decode = dyn_cast<attn::CCADecodePrologueOp>(op)) {
        std::string unsupported;
        FailureOr<DecodePrologueKernelPlan> plan =
            planCCADecodePrologue(decode, options, unsupported);
        if (failed(plan)) {
          if (unsupported.empty())
            return signalPassFailure();
          op->emitWarning()
              << unsupported << "; attn.cca_decode_prologue stays on the host";
          continue;
        }
        lowerToKernel(emitter, op, *plan, buildCCADecodePrologueKernel, [&] {
          return describeCCADecodePrologue(ctx, decode, *plan);
        });
        continue;
      }
      if (isa<arith::AddFOp>(op)) {
        FailureOr<ElementwisePlan> plan = planElementwise(op);
        if (failed(plan))
          return signalPassFailure();
        lowerToKernel(emitter, op, *plan, buildElementwiseKernel,
                      [&] { return describeElementwise(ctx, op, *plan); });
        continue;
      }
      // The SIMT kernels of the primitives: plan, or leave an unsupported
      // shape to the host with a warning.
      std::string unsupported;
      auto lowerPrimitive = [&](auto typedOp, auto plan, auto build,
                                auto describe) -> LogicalResult {
        if (failed(plan)) {
          if (unsupported.empty())
            return failure();
          op->emitWarning()
              << unsupported << "; " << op->getName().getStringRef()
              << " stays on the host";
          return success();
        }
        lowerToKernel(emitter, op, *plan, build,
                      [&] { return describe(ctx, typedOp, *plan); });
        return success();
      };
      if (auto update = dyn_cast<attn::CacheUpdateOp>(op)) {
        if (failed(lowerPrimitive(update,
                                  planCacheUpdate(update, options, unsupported),
                                  buildCacheUpdateKernel, describeCacheUpdate)))
          return signalPassFailure();
        continue;
      }
      if (auto gather = dyn_cast<attn::CacheGatherOp>(op)) {
        if (failed(lowerPrimitive(gather,
                                  planCacheGather(gather, options, unsupported),
                                  buildCacheGatherKernel, describeCacheGather)))
          return signalPassFailure();
        continue;
      }
      if (auto rope = dyn_cast<attn::RoPEOp>(op)) {
        if (failed(lowerPrimitive(rope, planRope(rope, options, unsupported),
                                  buildRopeKernel, describeRope)))
          return signalPassFailure();
        continue;
      }
      if (auto sdpa = dyn_cast<attn::SDPAOp>(op)) {
        if (failed(lowerPrimitive(sdpa, planSdpa(sdpa, options, unsupported),
                                  buildSdpaKernel, describeSdpa)))
          return signalPassFailure();
        continue;
      }
      FailureOr<GemmPlan> plan = planProjection(op, options);
      if (failed(plan))
        return signalPassFailure();
      lowerToKernel(emitter, op, *plan, buildProjectionKernel,
                    [&] { return describeProjection(ctx, op, *plan); });
    }
  }
};

struct AttnNVVMKernelParamsPass
    : public attnfuse::impl::AttnNVVMKernelParamsPassBase<
          AttnNVVMKernelParamsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      auto tmaArgs = func->getAttrOfType<DenseI32ArrayAttr>(kTmaArgsAttr);
      if (!tmaArgs)
        return;
      Type tensorMap = LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), 128);
      for (int32_t arg : tmaArgs.asArrayRef()) {
        func.setArgAttr(arg, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(tensorMap));
        func.setArgAttr(arg, LLVM::LLVMDialect::getAlignAttrName(),
                        IntegerAttr::get(IntegerType::get(ctx, 64), 64));
        func.setArgAttr(arg, NVVM::NVVMDialect::getGridConstantAttrName(),
                        UnitAttr::get(ctx));
      }
      func->removeAttr(kTmaArgsAttr);
    });
  }
};

} // namespace
