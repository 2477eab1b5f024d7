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
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
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

/// The ops that have sm_90a kernels.
bool isKernelOp(Operation *op) {
  return isa<attn::FlashAttentionOp, attn::FlashAttentionGradOp,
             attn::FusedWeightGradOp, attn::FlashDecodeOp,
             attn::FusedProjectionOp, attn::ProjectOp, attn::CCAPrologueOp,
             attn::CCADecodePrologueOp, attn::CacheUpdateOp,
             attn::CacheGatherOp, attn::RoPEOp, attn::RoPEGradOp, attn::SDPAOp,
             attn::CausalConv1DOp, attn::CausalConv1DGradOp, attn::QKMeanOp,
             attn::QKMeanGradOp, attn::QKNormOp, attn::QKNormGradOp,
             attn::MaskTokensOp, attn::ValueShiftOp, attn::ValueShiftGradOp>(
      op);
}

/// Emits kernels and launch declarations into one module: one gpu.module per
/// distinct kernel configuration, one declaration per kernel, op and type.
class KernelEmitter {
public:
  KernelEmitter(ModuleOp module) : module(module), symbols(module) {}

  /// Returns the name under which the kernel of `key` lives, creating it
  /// with `build` (given the final name) the first time.
  StringRef kernelFor(
      RewriterBase &rewriter, const std::string &key,
      const std::string &baseName, Location loc,
      const std::function<void(gpu::GPUModuleOp, const std::string &)> &build) {
    auto it = byKey.find(key);
    if (it != byKey.end())
      return it->second;
    std::string name = baseName;
    for (int i = 1; symbols.lookup(name); ++i)
      name = baseName + "_" + std::to_string(i);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(rewriter, loc, name);
    symbols.insert(gpuModule);
    build(gpuModule, name);
    return byKey.emplace(key, name).first->second;
  }

  /// `kernelFor` with the plan's kernel `name`, which it updates to the
  /// final one before `build` (which reads it from the plan) runs.
  void nameKernel(RewriterBase &rewriter, const std::string &key,
                  std::string &name, Location loc,
                  llvm::function_ref<void(gpu::GPUModuleOp)> build) {
    name = kernelFor(rewriter, key, name, loc,
                     [&](gpu::GPUModuleOp module, const std::string &final) {
                       name = final;
                       build(module);
                     })
               .str();
  }

  /// The host-side declaration `@<kernel>_launch` of type `type` carrying
  /// `launch`, shared by every op of `opName` with that type.
  func::FuncOp declareLaunch(RewriterBase &rewriter, Location loc,
                             StringRef kernel, StringRef opName,
                             FunctionType type, attn::KernelLaunchAttr launch) {
    std::string key =
        (kernel + ":" + opName + ":" + llvm::formatv("{0}", type).str()).str();
    auto it = launches.find(key);
    if (it != launches.end())
      return it->second;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(module.getBody());
    std::string name = (kernel + "_launch").str();
    for (int i = 1; symbols.lookup(name); ++i)
      name = (kernel + "_launch_" + Twine(i)).str();
    MLIRContext *ctx = module.getContext();
    func::FuncOp decl = func::FuncOp::create(rewriter, loc, name, type);
    decl.setPrivate();
    decl->setAttr(kLaunchAttrName, launch);
    decl->setAttr("attnfuse.op", StringAttr::get(ctx, opName));
    decl->setAttr(
        "attnfuse.kernel",
        SymbolRefAttr::get(ctx, kernel, {FlatSymbolRefAttr::get(ctx, kernel)}));
    symbols.insert(decl);
    launches.emplace(key, decl);
    return decl;
  }

  /// A call of `@<kernel>_launch` (declared for `op`'s name) over
  /// `operands` returning `results`, at the rewriter's insertion point.
  func::CallOp launch(RewriterBase &rewriter, Operation *op, StringRef kernel,
                      ValueRange operands, TypeRange results,
                      attn::KernelLaunchAttr launchAttr) {
    func::FuncOp decl = declareLaunch(
        rewriter, op->getLoc(), kernel, op->getName().getStringRef(),
        FunctionType::get(op->getContext(), operands.getTypes(), results),
        launchAttr);
    return func::CallOp::create(rewriter, op->getLoc(), decl, operands);
  }

  /// Replaces `op` by a call to `@<kernel>_launch` carrying `launch`.
  /// `unreadOperands`: operand numbers, besides the result inits, that the
  /// kernel does not read (a constant it folds in).
  void replaceWithLaunch(RewriterBase &rewriter, Operation *op,
                         StringRef kernel, int64_t resultInits,
                         attn::KernelLaunchAttr launch,
                         ArrayRef<unsigned> unreadOperands = {}) {
    SmallVector<Value> operands, unread;
    splitLaunchOperands(op, resultInits, operands, unread, unreadOperands);
    auto type =
        FunctionType::get(op->getContext(), ValueRange(operands).getTypes(),
                          op->getResultTypes());
    func::FuncOp decl =
        declareLaunch(rewriter, op->getLoc(), kernel,
                      op->getName().getStringRef(), type, launch);
    rewriter.setInsertionPoint(op);
    auto call = func::CallOp::create(rewriter, op->getLoc(), decl, operands);
    rewriter.replaceOp(op, call.getResults());
    // The init's shape computation (tensor.empty, tensor.dim) would be left
    // in the host program, which runs no such ops.
    eraseIfUnused(rewriter, unread);
  }

  /// Replaces `op` by two launches: `first` over `operands`, returning a
  /// `workspace` tensor and then `alsoFirst` (results of `op` past its
  /// first), and `second` over the workspace and `secondOperands`,
  /// returning `op`'s first result. `unread` computed only shapes.
  void replaceWithTwoLaunches(RewriterBase &rewriter, Operation *op,
                              ArrayRef<Value> operands, ArrayRef<Value> unread,
                              StringRef first,
                              attn::KernelLaunchAttr firstLaunch,
                              RankedTensorType workspace, StringRef second,
                              attn::KernelLaunchAttr secondLaunch,
                              ArrayRef<Value> secondOperands = {}) {
    MLIRContext *ctx = op->getContext();
    Location loc = op->getLoc();
    StringRef opName = op->getName().getStringRef();
    SmallVector<Type> firstResults = {workspace};
    llvm::append_range(firstResults,
                       TypeRange(op->getResultTypes()).drop_front());
    SmallVector<Value> combineOperands = {Value()};
    llvm::append_range(combineOperands, secondOperands);
    SmallVector<Type> secondTypes = {workspace};
    llvm::append_range(secondTypes, ValueRange(secondOperands).getTypes());
    func::FuncOp firstDecl = declareLaunch(
        rewriter, loc, first, opName,
        FunctionType::get(ctx, ValueRange(operands).getTypes(), firstResults),
        firstLaunch);
    func::FuncOp secondDecl = declareLaunch(
        rewriter, loc, second, opName,
        FunctionType::get(ctx, secondTypes, {op->getResultTypes().front()}),
        secondLaunch);
    rewriter.setInsertionPoint(op);
    auto firstCall = func::CallOp::create(rewriter, loc, firstDecl, operands);
    combineOperands[0] = firstCall.getResult(0);
    auto secondCall =
        func::CallOp::create(rewriter, loc, secondDecl, combineOperands);
    SmallVector<Value> results = {secondCall.getResult(0)};
    llvm::append_range(results, firstCall.getResults().drop_front());
    rewriter.replaceOp(op, results);
    eraseIfUnused(rewriter, unread);
  }

  /// Splits `op`'s operands (positionally: one value may fill several) into
  /// the launch's `operands` and the `unread` inits that only carry a
  /// result's shape, the first `resultInits` inits (-1: all): the kernel
  /// writes those results into buffers of its own. The caches and states a
  /// decode op updates in place are inits the kernel reads, so they stay
  /// launch operands.
  static void splitLaunchOperands(Operation *op, int64_t resultInits,
                                  SmallVectorImpl<Value> &operands,
                                  SmallVectorImpl<Value> &unread,
                                  ArrayRef<unsigned> unreadOperands = {}) {
    llvm::SmallDenseSet<unsigned> outputOnly(unreadOperands.begin(),
                                             unreadOperands.end());
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
      int64_t count = resultInits < 0 ? dps.getNumDpsInits() : resultInits;
      int64_t taken = 0;
      for (OpOperand &init : dps.getDpsInitsMutable())
        if (taken++ < count)
          outputOnly.insert(init.getOperandNumber());
    }
    for (OpOperand &operand : op->getOpOperands())
      (outputOnly.contains(operand.getOperandNumber()) ? unread : operands)
          .push_back(operand.get());
  }

  /// Erases the side-effect-free ops that computed `values` (and, in turn,
  /// their operands) once nothing reads them. A value may be listed twice
  /// (one tensor.empty for two inits) or feed another listed value.
  static void eraseIfUnused(RewriterBase &rewriter, ArrayRef<Value> values) {
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
      rewriter.eraseOp(producer);
    }
  }

private:
  ModuleOp module;
  SymbolTable symbols;
  std::map<std::string, std::string> byKey;
  std::map<std::string, func::FuncOp> launches;
};

/// What the patterns share: the target, the kernel emitter, the functions
/// whose residual adds run on the device, and whether an op was rejected
/// (models repeat layers: after the first op without a kernel the patterns
/// stop instead of reporting the same problem for every layer).
struct LoweringState {
  LoweringState(ModuleOp module, const TargetOptions &options)
      : emitter(module), options(options) {}
  KernelEmitter emitter;
  const TargetOptions &options;
  llvm::SmallPtrSet<Operation *, 8> programs;
  bool failed = false;

  /// The plan `planOp` gives, once no op was rejected; a rejection (its
  /// error is on the op) stops the lowering.
  template <typename Plan>
  FailureOr<Plan> plan(llvm::function_ref<FailureOr<Plan>()> planOp) {
    if (failed)
      return failure();
    FailureOr<Plan> p = planOp();
    failed = mlir::failed(p);
    return p;
  }

  /// `plan` for an op of several kernels, which has no host fallback: what
  /// `planOp` reports as unsupported becomes an error on `op`.
  template <typename Plan>
  FailureOr<Plan>
  planOrError(Operation *op,
              llvm::function_ref<FailureOr<Plan>(std::string &)> planOp) {
    return plan<Plan>([&]() -> FailureOr<Plan> {
      std::string unsupported;
      FailureOr<Plan> p = planOp(unsupported);
      if (mlir::failed(p) && !unsupported.empty())
        return op->emitOpError() << unsupported;
      return p;
    });
  }
};

/// Rewrites one fused op into the launch of its kernel: plan (an error on the
/// op, or `unsupported` set to leave it on the host with a warning), emit the
/// kernel once per configuration, describe the launch.
template <typename OpTy, typename Plan>
class KernelLaunchPattern : public OpRewritePattern<OpTy> {
public:
  using PlanFn = std::function<FailureOr<Plan>(OpTy, const TargetOptions &,
                                               std::string &)>;
  using BuildFn = void (*)(OpBuilder &, Location, gpu::GPUModuleOp,
                           const Plan &);
  using DescribeFn =
      std::function<attn::KernelLaunchAttr(MLIRContext *, OpTy, const Plan &)>;

  using ResultInitsFn = std::function<int64_t(const Plan &)>;
  /// The operands besides the result inits that the planned kernel does not
  /// read.
  using UnreadOperandsFn =
      std::function<SmallVector<unsigned>(OpTy, const Plan &)>;

  /// `resultInits`: how many of the op's inits only carry a result's shape
  /// (the rest are state the kernel updates, or values it reads); -1: all
  /// of them.
  KernelLaunchPattern(MLIRContext *ctx, LoweringState &state, PlanFn plan,
                      BuildFn build, DescribeFn describe,
                      int64_t resultInits = -1)
      : KernelLaunchPattern(
            ctx, state, std::move(plan), build, std::move(describe),
            [resultInits](const Plan &) { return resultInits; }) {}
  /// The same, with the count chosen by the plan, and the other operands
  /// the kernel does not read.
  KernelLaunchPattern(MLIRContext *ctx, LoweringState &state, PlanFn plan,
                      BuildFn build, DescribeFn describe,
                      ResultInitsFn resultInits,
                      UnreadOperandsFn unreadOperands = nullptr)
      : OpRewritePattern<OpTy>(ctx), state(state), plan(std::move(plan)),
        build(build), describe(std::move(describe)),
        resultInits(std::move(resultInits)),
        unreadOperands(std::move(unreadOperands)) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (state.failed)
      return failure();
    if (!accepts(op))
      return rewriter.notifyMatchFailure(op, "not part of a device program");
    std::string unsupported;
    FailureOr<Plan> p = plan(op, state.options, unsupported);
    if (failed(p)) {
      if (unsupported.empty()) {
        state.failed = true;
        return failure();
      }
      op->emitWarning() << unsupported << "; " << op->getName().getStringRef()
                        << " stays on the host";
      return failure();
    }
    state.emitter.nameKernel(rewriter, p->key(), p->name, op.getLoc(),
                             [&](gpu::GPUModuleOp module) {
                               build(rewriter, op.getLoc(), module, *p);
                             });
    StringRef name = p->name;
    SmallVector<unsigned> unread;
    if (unreadOperands)
      unread = unreadOperands(op, *p);
    state.emitter.replaceWithLaunch(rewriter, op, name, resultInits(*p),
                                    describe(op.getContext(), op, *p), unread);
    return success();
  }

private:
  /// The attn ops, and the tensor ops of a device program (the residual
  /// adds, the column copies).
  bool accepts(OpTy op) const {
    if (isa<attn::AttnDialect>(op->getDialect()))
      return true;
    return isa<RankedTensorType>(op->getResult(0).getType()) &&
           state.programs.contains(
               op->template getParentOfType<func::FuncOp>());
  }

  LoweringState &state;
  PlanFn plan;
  BuildFn build;
  DescribeFn describe;
  ResultInitsFn resultInits;
  UnreadOperandsFn unreadOperands;
};

/// attn.flash_decode: the split kernel (its launch returns the workspace and
/// the caches, updated in place), then the combine kernel (workspace ->
/// output).
class FlashDecodeLaunchPattern : public OpRewritePattern<attn::FlashDecodeOp> {
public:
  FlashDecodeLaunchPattern(MLIRContext *ctx, LoweringState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(attn::FlashDecodeOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<DecodePlan> plan = state.plan<DecodePlan>(
        [&] { return planFlashDecode(op, state.options); });
    if (failed(plan))
      return failure();
    emitKernels(rewriter, op, *plan);
    MLIRContext *ctx = op.getContext();
    auto queryType = cast<RankedTensorType>(op.getQuery().getType());
    auto workspaceType = RankedTensorType::get(
        {queryType.getDimSize(0), plan->numHeads,
         plan->numSplits > 0 ? plan->numSplits : ShapedType::kDynamic,
         plan->workspaceRow()},
        Float32Type::get(ctx));
    // Every operand but the output's init, whose shape the combine kernel's
    // result has. The split launch also returns the caches.
    SmallVector<Value> operands, unread;
    KernelEmitter::splitLaunchOperands(op, /*resultInits=*/1, operands, unread);
    state.emitter.replaceWithTwoLaunches(
        rewriter, op, operands, unread, plan->name,
        describeFlashDecodeSplit(ctx, op, *plan), workspaceType,
        plan->combineName, describeFlashDecodeCombine(ctx, op, *plan));
    return success();
  }

private:
  void emitKernels(PatternRewriter &rewriter, attn::FlashDecodeOp op,
                   DecodePlan &plan) const {
    Location loc = op.getLoc();
    std::string key = plan.key();
    state.emitter.nameKernel(
        rewriter, key + ":split", plan.name, loc, [&](gpu::GPUModuleOp gm) {
          buildFlashDecodeSplitKernel(rewriter, loc, gm, plan);
        });
    state.emitter.nameKernel(rewriter, key + ":combine", plan.combineName, loc,
                             [&](gpu::GPUModuleOp gm) {
                               buildFlashDecodeCombineKernel(rewriter, loc, gm,
                                                             plan);
                             });
  }

  LoweringState &state;
};

/// attn.fused_weight_grad split over the tokens: the GEMM kernel over
/// grid z (its launch returns the f32 partials), then the combine kernel
/// (partials and the init -> dW). A plan without a split is left to the
/// one-kernel pattern.
class SplitWeightGradLaunchPattern
    : public OpRewritePattern<attn::FusedWeightGradOp> {
public:
  SplitWeightGradLaunchPattern(MLIRContext *ctx, LoweringState &state)
      : OpRewritePattern(ctx, /*benefit=*/2), state(state) {}

  LogicalResult matchAndRewrite(attn::FusedWeightGradOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<WeightGradPlan> plan = state.plan<WeightGradPlan>(
        [&] { return planWeightGrad(op, state.options); });
    if (failed(plan))
      return failure();
    if (!plan->split())
      return rewriter.notifyMatchFailure(op, "one kernel, no split");
    Location loc = op.getLoc();
    std::string key = plan->key();
    state.emitter.nameKernel(rewriter, key, plan->name, loc,
                             [&](gpu::GPUModuleOp gm) {
                               buildWeightGradKernel(rewriter, loc, gm, *plan);
                             });
    state.emitter.nameKernel(rewriter, key + ":combine", plan->combineName, loc,
                             [&](gpu::GPUModuleOp gm) {
                               buildWeightGradCombineKernel(rewriter, loc, gm,
                                                            *plan);
                             });
    MLIRContext *ctx = op.getContext();
    SmallVector<Value> secondOperands, unread = {op.getInit()};
    if (plan->readsInit)
      secondOperands.push_back(op.getInit());
    state.emitter.replaceWithTwoLaunches(
        rewriter, op, {op.getInput(), op.getResultGrad()}, unread, plan->name,
        describeWeightGrad(ctx, op, *plan), plan->partialsType(ctx),
        plan->combineName, describeWeightGradCombine(ctx, *plan),
        secondOperands);
    return success();
  }

private:
  LoweringState &state;
};

/// attn.flash_attention_grad: the dQ kernel (its launch returns dQ and the
/// workspace D), then the dK/dV kernel (which reads D).
class FlashAttentionGradLaunchPattern
    : public OpRewritePattern<attn::FlashAttentionGradOp> {
public:
  FlashAttentionGradLaunchPattern(MLIRContext *ctx, LoweringState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(attn::FlashAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<FlashGradPlan> plan = state.plan<FlashGradPlan>(
        [&] { return planFlashAttentionGrad(op, state.options); });
    if (failed(plan))
      return failure();
    Location loc = op.getLoc();
    KernelEmitter &emitter = state.emitter;
    std::string key = plan->key();
    emitter.nameKernel(
        rewriter, key + ":dq", plan->query.name, loc, [&](gpu::GPUModuleOp gm) {
          buildFlashAttentionKernel(rewriter, loc, gm, plan->query);
        });
    emitter.nameKernel(rewriter, key + ":dkv", plan->name, loc,
                       [&](gpu::GPUModuleOp gm) {
                         buildFlashKeyValueGradKernel(rewriter, loc, gm, *plan);
                       });

    MLIRContext *ctx = op.getContext();
    auto queryType = cast<RankedTensorType>(op.getQuery().getType());
    auto deltaType =
        RankedTensorType::get({queryType.getDimSize(0), queryType.getDimSize(1),
                               queryType.getDimSize(2)},
                              Float32Type::get(ctx));
    // The dQ kernel reads q, k, [v], o, do, [key_mask], lse; the dK/dV
    // kernel the same without o, plus D.
    SmallVector<Value> queryOperands = {op.getQuery(), op.getKey()};
    if (op.getValue())
      queryOperands.push_back(op.getValue());
    queryOperands.push_back(op.getOutput());
    SmallVector<Value> keyOperands = queryOperands;
    keyOperands.pop_back();
    for (SmallVector<Value> *list : {&queryOperands, &keyOperands}) {
      list->push_back(op.getOutputGrad());
      if (op.getKeyMask())
        list->push_back(op.getKeyMask());
      list->push_back(op.getLse());
    }
    SmallVector<Type> keyResults = {op.getKeyGrad().getType()};
    if (op.getValue())
      keyResults.push_back(op.getValueGrad().getType());

    func::FuncOp queryDecl = emitter.declareLaunch(
        rewriter, loc, plan->query.name, op->getName().getStringRef(),
        FunctionType::get(ctx, ValueRange(queryOperands).getTypes(),
                          {op.getQueryGrad().getType(), deltaType}),
        describeFlashQueryGrad(ctx, op, *plan));
    keyOperands.push_back(Value()); // D, once the first call exists
    SmallVector<Type> keyOperandTypes = llvm::to_vector(
        ValueRange(ArrayRef(keyOperands).drop_back()).getTypes());
    keyOperandTypes.push_back(deltaType);
    func::FuncOp keyDecl = emitter.declareLaunch(
        rewriter, loc, plan->name, op->getName().getStringRef(),
        FunctionType::get(ctx, keyOperandTypes, keyResults),
        describeFlashKeyValueGrad(ctx, op, *plan));
    auto queryCall =
        func::CallOp::create(rewriter, loc, queryDecl, queryOperands);
    keyOperands.back() = queryCall.getResult(1);
    auto keyCall = func::CallOp::create(rewriter, loc, keyDecl, keyOperands);
    SmallVector<Value> results = {queryCall.getResult(0)};
    llvm::append_range(results, keyCall.getResults());
    SmallVector<Value> inits = llvm::to_vector(llvm::map_range(
        op.getDpsInitsMutable(), [](OpOperand &init) { return init.get(); }));
    rewriter.replaceOp(op, results);
    KernelEmitter::eraseIfUnused(rewriter, inits);
    return success();
  }

private:
  LoweringState &state;
};

/// An op lowered to several kernels (no host fallback: what its plan does
/// not support is an error on the op): `Derived` gives `launch(op, plan,
/// rewriter)`, which names its kernels and replaces the op by their
/// launches.
template <typename OpTy, typename Plan, typename Derived>
class MultiKernelPattern : public OpRewritePattern<OpTy> {
public:
  using PlanFn = FailureOr<Plan> (*)(OpTy, const TargetOptions &,
                                     std::string &);

  MultiKernelPattern(MLIRContext *ctx, LoweringState &state, PlanFn planOp)
      : OpRewritePattern<OpTy>(ctx), state(state), planOp(planOp) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    FailureOr<Plan> p =
        state.planOrError<Plan>(op, [&](std::string &unsupported) {
          return planOp(op, state.options, unsupported);
        });
    if (failed(p))
      return failure();
    rewriter.setInsertionPoint(op);
    static_cast<const Derived *>(this)->launch(op, *p, rewriter);
    return success();
  }

protected:
  /// Emits the kernel of `key` (once per configuration) with `build`, and
  /// updates `name` to its final name.
  void kernel(PatternRewriter &rewriter, OpTy op, const std::string &key,
              std::string &name,
              void (*build)(OpBuilder &, Location, gpu::GPUModuleOp,
                            const Plan &),
              const Plan &p) const {
    state.emitter.nameKernel(
        rewriter, key, name, op.getLoc(),
        [&](gpu::GPUModuleOp gm) { build(rewriter, op.getLoc(), gm, p); });
  }

  LoweringState &state;

private:
  PlanFn planOp;
};

/// attn.causal_conv1d_grad: the input-gradient kernel over (weight, dy),
/// and the weight- and bias-gradient kernels: partial sums over chunks of
/// (input, dy), then their fixed-order sum.
class CausalConv1dGradLaunchPattern
    : public MultiKernelPattern<attn::CausalConv1DGradOp, ConvPlan,
                                CausalConv1dGradLaunchPattern> {
public:
  using MultiKernelPattern::MultiKernelPattern;

  void launch(attn::CausalConv1DGradOp op, ConvPlan &p,
              PatternRewriter &rewriter) const {
    MLIRContext *ctx = op.getContext();
    kernel(rewriter, op, p.key() + ":dx", p.name,
           buildCausalConv1dInputGradKernel, p);
    kernel(rewriter, op, p.key() + ":dw", p.weightGradName,
           buildCausalConv1dWeightGradKernel, p);
    kernel(rewriter, op, p.key() + ":dw_sum", p.weightSumName,
           buildCausalConv1dWeightSumKernel, p);
    auto inputCall = state.emitter.launch(
        rewriter, op, p.name, {op.getWeight(), op.getResultGrad()},
        op.getInputGrad().getType(), describeCausalConv1dInputGrad(ctx, op, p));
    auto partialsCall = state.emitter.launch(
        rewriter, op, p.weightGradName, {op.getInput(), op.getResultGrad()},
        p.partialsType(op), describeCausalConv1dWeightGrad(ctx, op, p));
    auto sumCall = state.emitter.launch(
        rewriter, op, p.weightSumName, partialsCall.getResult(0),
        {op.getWeightGrad().getType(), op.getBiasGrad().getType()},
        describeCausalConv1dWeightSum(ctx, p));
    rewriter.replaceOp(op, {inputCall.getResult(0), sumCall.getResult(0),
                            sumCall.getResult(1)});
  }
};

/// attn.qk_norm_grad: the row kernel (q_grad, k_grad and the key rows'
/// temperature shares), then the temperature kernel over the shares.
class QKNormGradLaunchPattern
    : public MultiKernelPattern<attn::QKNormGradOp, QKNormPlan,
                                QKNormGradLaunchPattern> {
public:
  using MultiKernelPattern::MultiKernelPattern;

  void launch(attn::QKNormGradOp op, QKNormPlan &p,
              PatternRewriter &rewriter) const {
    MLIRContext *ctx = op.getContext();
    kernel(rewriter, op, p.key() + ":rows", p.name, buildQKNormGradKernel, p);
    kernel(rewriter, op, p.key() + ":temp", p.temperatureName,
           buildQKNormTemperatureGradKernel, p);
    auto rows = state.emitter.launch(
        rewriter, op, p.name, op->getOperands(),
        {op.getQGrad().getType(), op.getKGrad().getType(), p.sharesType(op)},
        describeQKNormGrad(ctx, op, p));
    auto temp = state.emitter.launch(
        rewriter, op, p.temperatureName, {rows.getResult(2), op.getTemp()},
        op.getTempGrad().getType(), describeQKNormTemperatureGrad(ctx, p));
    rewriter.replaceOp(
        op, {rows.getResult(0), rows.getResult(1), temp.getResult(0)});
  }
};

/// attn.fused_projection with `rope` whose heads do not tile the GEMM's
/// columns (head dim 96, 256): the projection without rotation, then an
/// attn.rope kernel over its result. The GEMM epilogue rotates a pair
/// `(i, i + r/2)` only when both lie in one column tile; the split costs
/// one more pass over the projected heads.
void splitProjectionRope(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  module.walk([&](attn::FusedProjectionOp op) {
    attn::RopeAttr rope = op.getRopeAttr();
    if (!rope || op.getTokenOffset() ||
        kGemmTileColumns % static_cast<int64_t>(op.getHeadDim()) == 0)
      return;
    rewriter.setInsertionPoint(op);
    auto projection = attn::FusedProjectionOp::create(
        rewriter, op.getLoc(), op.getResult().getType(), op.getInput(),
        op.getWeight(), op.getBias(), /*token_offset=*/Value(), op.getInit(),
        op.getHeadDimAttr(), /*rope=*/attn::RopeAttr(), op.getBlockSAttr(),
        op.getBlockNAttr(), op.getBlockKAttr(), op.getTransposedWeightAttr());
    rewriter.replaceOpWithNewOp<attn::RoPEOp>(op, op.getResult().getType(),
                                              projection.getResult(),
                                              /*positions=*/Value(), rope);
  });
}

/// attn.flash_attention_grad with `key_rope` as kernels that exist: the
/// keys rotated by attn.rope, the backward of the rotated keys (for K=V,
/// the un-rotated tensor in the value role), then dK rotated back by
/// attn.rope_grad (and, for K=V, summed with dV). The backward kernels get
/// the keys already rotated; the price is one more pass over K and dK,
/// O(T d) against the backward's O(S T d).
void splitFlashGradKeyRope(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  module.walk([&](attn::FlashAttentionGradOp op) {
    attn::RopeAttr keyRope = op.getKeyRopeAttr();
    auto keyType = cast<RankedTensorType>(op.getKey().getType());
    if (!keyRope)
      return;
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Value rotated = attn::RoPEOp::create(rewriter, loc, keyType, op.getKey(),
                                         /*positions=*/Value(), keyRope);
    Value value = op.getValue() ? op.getValue() : op.getKey();
    Value valueInit =
        op.getValueGradInit() ? op.getValueGradInit() : op.getKeyGradInit();
    SmallVector<Type> types = {op.getQueryGradInit().getType(),
                               op.getKeyGradInit().getType(),
                               valueInit.getType()};
    if (op.getBiasGradInit())
      types.push_back(op.getBiasGradInit().getType());
    auto split = attn::FlashAttentionGradOp::create(
        rewriter, loc, types, op.getQuery(), rotated, value, op.getOutput(),
        op.getOutputGrad(), op.getBias(), op.getKeyMask(), op.getLse(),
        op.getQueryGradInit(), op.getKeyGradInit(), valueInit,
        op.getBiasGradInit(), op.getCausalAttr(), op.getWindowAttr(),
        op.getScaleAttr(), /*key_rope=*/attn::RopeAttr(), op.getBlockQAttr(),
        op.getBlockKvAttr());
    Value keyGrad = attn::RoPEGradOp::create(
        rewriter, loc, split.getResult(1).getType(), split.getResult(1),
        /*positions=*/Value(), keyRope);
    SmallVector<Value> results = {split.getResult(0)};
    if (op.getValue()) {
      results.append({keyGrad, split.getResult(2)});
    } else {
      results.push_back(
          arith::AddFOp::create(rewriter, loc, keyGrad, split.getResult(2)));
    }
    if (op.getBiasGradInit())
      results.push_back(split.getResults().back());
    rewriter.replaceOp(op, results);
  });
}

/// A plan function that reports every problem as an error on the op.
template <typename OpTy, typename Plan>
std::function<FailureOr<Plan>(OpTy, const TargetOptions &, std::string &)>
alwaysOnDevice(FailureOr<Plan> (*plan)(OpTy, const TargetOptions &)) {
  return [plan](OpTy op, const TargetOptions &options, std::string &) {
    return plan(op, options);
  };
}

void populateKernelLaunchPatterns(RewritePatternSet &patterns,
                                  LoweringState &state) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<KernelLaunchPattern<attn::FlashAttentionOp, FlashPlan>>(
      ctx, state, alwaysOnDevice(planFlashAttention), buildFlashAttentionKernel,
      describeFlashAttention);
  patterns.add<FlashDecodeLaunchPattern>(ctx, state);
  auto planGemm = [](Operation *op, const TargetOptions &options,
                     std::string &) { return planProjection(op, options); };
  auto describeGemm = [](MLIRContext *c, Operation *op, const GemmPlan &p) {
    return describeProjection(c, op, p);
  };
  patterns.add<KernelLaunchPattern<attn::FusedProjectionOp, GemmPlan>>(
      ctx, state, planGemm, buildProjectionKernel, describeGemm);
  patterns.add<KernelLaunchPattern<attn::ProjectOp, GemmPlan>>(
      ctx, state, planGemm, buildProjectionKernel, describeGemm);
  patterns.add<KernelLaunchPattern<attn::CCAPrologueOp, ProloguePlan>>(
      ctx, state, planCCAPrologue, buildCCAPrologueKernel, describeCCAPrologue);
  // The q, k, v outputs; the conv and value-shift states are updated in place.
  patterns.add<
      KernelLaunchPattern<attn::CCADecodePrologueOp, DecodePrologueKernelPlan>>(
      ctx, state, planCCADecodePrologue, buildCCADecodePrologueKernel,
      describeCCADecodePrologue, /*resultInits=*/3);
  patterns.add<KernelLaunchPattern<attn::CacheUpdateOp, CacheUpdatePlan>>(
      ctx, state, planCacheUpdate, buildCacheUpdateKernel, describeCacheUpdate);
  patterns.add<KernelLaunchPattern<attn::CacheGatherOp, CacheGatherPlan>>(
      ctx, state, planCacheGather, buildCacheGatherKernel, describeCacheGather);
  patterns.add<KernelLaunchPattern<attn::RoPEOp, RopeKernelPlan>>(
      ctx, state, planRope, buildRopeKernel, describeRope);
  patterns.add<KernelLaunchPattern<attn::RoPEGradOp, RopeKernelPlan>>(
      ctx, state, planRope, buildRopeKernel, describeRope);
  patterns.add<KernelLaunchPattern<attn::SDPAOp, SdpaPlan>>(
      ctx, state, planSdpa, buildSdpaKernel, describeSdpa);
  patterns.add<KernelLaunchPattern<attn::CausalConv1DOp, ConvPlan>>(
      ctx, state, planCausalConv1d, buildCausalConv1dKernel,
      describeCausalConv1d);
  patterns.add<KernelLaunchPattern<arith::AddFOp, ElementwisePlan>>(
      ctx, state,
      [](arith::AddFOp op, const TargetOptions &, std::string &) {
        return planElementwise(op);
      },
      buildElementwiseKernel,
      [](MLIRContext *c, arith::AddFOp op, const ElementwisePlan &p) {
        return describeElementwise(c, op, p);
      });
  // The sizes of a slice only restate its source's.
  auto sliceSizes = [](Operation *op, const ColumnCopyPlan &) {
    return llvm::to_vector(llvm::seq<unsigned>(1, op->getNumOperands()));
  };
  auto planColumns = [](Operation *op, const TargetOptions &,
                        std::string &unsupported) {
    return planColumnCopy(op, unsupported);
  };
  patterns.add<KernelLaunchPattern<tensor::ConcatOp, ColumnCopyPlan>>(
      ctx, state, planColumns, buildColumnCopyKernel, describeColumnCopy);
  patterns.add<KernelLaunchPattern<tensor::ExtractSliceOp, ColumnCopyPlan>>(
      ctx, state, planColumns, buildColumnCopyKernel, describeColumnCopy,
      [](const ColumnCopyPlan &) -> int64_t { return -1; }, sliceSizes);
  patterns.add<FlashAttentionGradLaunchPattern>(ctx, state);
  patterns.add<CausalConv1dGradLaunchPattern>(ctx, state, planCausalConv1dGrad);
  patterns.add<QKNormGradLaunchPattern>(ctx, state, planQKNormGrad);
  patterns.add<KernelLaunchPattern<attn::QKNormOp, QKNormPlan>>(
      ctx, state, planQKNorm, buildQKNormKernel, describeQKNorm);
  patterns.add<KernelLaunchPattern<attn::QKMeanOp, QKMeanPlan>>(
      ctx, state, planQKMean, buildQKMeanKernel, describeQKMean);
  patterns.add<KernelLaunchPattern<attn::QKMeanGradOp, QKMeanPlan>>(
      ctx, state, planQKMean, buildQKMeanKernel, describeQKMean);
  patterns.add<KernelLaunchPattern<attn::MaskTokensOp, MaskTokensPlan>>(
      ctx, state, planMaskTokens, buildMaskTokensKernel, describeMaskTokens);
  patterns.add<KernelLaunchPattern<attn::ValueShiftOp, ValueShiftPlan>>(
      ctx, state, planValueShift, buildValueShiftKernel, describeValueShift);
  patterns.add<KernelLaunchPattern<attn::ValueShiftGradOp, ValueShiftPlan>>(
      ctx, state, planValueShift, buildValueShiftKernel, describeValueShift);
  patterns.add<SplitWeightGradLaunchPattern>(ctx, state);
  // A zero init is not read: the kernel starts its sums from zero. Nor is a
  // constant input of one feature (a bias gradient's ones): the column-sum
  // kernel scales by it.
  patterns.add<KernelLaunchPattern<attn::FusedWeightGradOp, WeightGradPlan>>(
      ctx, state, alwaysOnDevice(planWeightGrad), buildWeightGradKernel,
      describeWeightGrad,
      [](const WeightGradPlan &p) -> int64_t { return p.readsInit ? 0 : -1; },
      [](attn::FusedWeightGradOp op, const WeightGradPlan &p) {
        SmallVector<unsigned> unread;
        if (p.inputFill)
          unread.push_back(op.getInputMutable().getOperandNumber());
        return unread;
      });
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

    splitProjectionRope(module);
    splitFlashGradKeyRope(module);
    // A function with kernels is a device program: its residual adds run on
    // the device too.
    LoweringState state(module, options);
    module.walk([&](Operation *op) {
      if (isKernelOp(op))
        state.programs.insert(op->getParentOfType<func::FuncOp>());
    });
    if (state.programs.empty())
      return;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    RewritePatternSet patterns(ctx);
    populateKernelLaunchPatterns(patterns, state);
    walkAndApplyPatterns(module, std::move(patterns));
    if (state.failed)
      signalPassFailure();
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
