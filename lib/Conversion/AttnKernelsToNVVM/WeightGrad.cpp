//===- WeightGrad.cpp - weight-gradient GEMMs for sm_90a --------*- C++ -*-===//
//
// attn.fused_weight_grad as a warp-specialized TMA + wgmma GEMM:
// dW[o, i] = init[o, i] + sum_t dY[t, o] X[t, i], the reduction over the
// tokens (a dynamic count T).
//
// * CTA tile 128 x 128 of dW (two consumer warpgroups of 64 output features
//   each), k step 64 tokens, a 4-stage ring filled by one producer thread.
// * Both operands come as the tensors lie, tokens outermost: a stage holds
//   64 token rows of dY's 128 output columns and of X's 128 input columns,
//   each as two 64-column blocks. So A (dY^T) and B (X) are MN-major
//   (wgmma's transposed forms) and nothing is transposed in memory.
// * TMA fills the rows past T with zeros, so the last partial k step adds
//   nothing; the columns past the feature counts are clipped by the store.
// * Epilogue: + init (when it is not zero), to 16 bits, staged through
//   shared memory and stored with TMA, as the projection GEMM's.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "Kernels.h"
#include "Pipeline.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;

std::string WeightGradPlan::key() const {
  return llvm::formatv("wgrad:{0}:{1}:{2}:{3}:{4}:{5}", elemName(elem),
                       inFeatures, outFeatures, readsInit, hostCastFromF32,
                       inputFill ? std::to_string(*inputFill) : "read")
      .str();
}

/// The value of a tensor that is a `linalg.fill` of a float constant.
static std::optional<double> fillValue(Value tensor) {
  auto fill = tensor.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  auto constant = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto value = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  if (!value)
    return std::nullopt;
  return value.getValueAsDouble();
}

/// Whether `init` is a tensor of zeros (attn-fuse's `linalg.fill` of 0 for
/// a weight used once): the kernel then starts from zero and never reads it.
static bool isZeroFill(Value init) {
  std::optional<double> value = fillValue(init);
  return value && *value == 0.0;
}

FailureOr<WeightGradPlan>
attnfuse::sm90::planWeightGrad(FusedWeightGradOp op,
                               const TargetOptions &options) {
  using P = WeightGradPlan;
  P p;
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  auto gradType = cast<RankedTensorType>(op.getResultGrad().getType());
  FailureOr<ElemKind> elem = kernelElemKind(op, inputType.getElementType(),
                                            options, p.hostCastFromF32);
  if (failed(elem))
    return failure();
  p.elem = *elem;
  p.inFeatures = inputType.getDimSize(1);
  p.outFeatures = gradType.getDimSize(1);
  p.readsInit = !isZeroFill(op.getInit());
  if (p.columnSum()) {
    p.inputFill = fillValue(op.getInput());
    planBiasGrad(p);
    return p;
  }
  // TMA: every global stride a multiple of 16 bytes.
  if (p.inFeatures % 8 != 0 || p.outFeatures % 8 != 0)
    return op.emitOpError()
           << "the sm_90a weight-gradient GEMM needs in and out features that "
              "are multiples of 8 (16-byte TMA strides), got "
           << p.inFeatures << " and " << p.outFeatures
           << " (one input feature, a bias gradient, has its own kernel)";
  p.stages = 4;
  p.threads = 128 * (1 + P::kConsumers);
  int64_t cap;
  splitRegisters(P::kConsumers, 1, p.producerRegs, cap, p.consumerRegs);
  // A stage: 64 tokens of 128 output features (dY) and of 128 input
  // features (X), each two 64-column blocks of 64 rows x 128 bytes.
  p.aOff = 0;
  p.bOff = p.aOff + p.stages * P::kStageOperandBytes;
  p.cOff = p.bOff + p.stages * P::kStageOperandBytes;
  p.barOff = p.cOff + P::kBlockM * P::kBlockN * 2;
  p.sharedBytes = p.barOff + TmaRing::barrierBytes(p.stages, 2) + 1024;
  p.name = llvm::formatv("attn_wgrad_{0}_in{1}_out{2}{3}", elemName(p.elem),
                         p.inFeatures, p.outFeatures, p.readsInit ? "_acc" : "")
               .str();
  return p;
}

namespace {

/// Emits one weight-gradient GEMM: a producer warpgroup filling a `TmaRing`
/// of dY and X token blocks, two consumer warpgroups of 64 output features
/// each running the MN-major wgmma mainloop and the init / TMA-store
/// epilogue.
class WeightGradEmitter {
public:
  WeightGradEmitter(DeviceBuilder &d, const WeightGradPlan &p,
                    gpu::GPUFuncOp func)
      : d(d), p(p), func(func), ids(d),
        smem(d.alignedDynamicShared(kSharedSymbol)),
        ring(d, smem, p.barOff, p.stages) {}
  void emit();

private:
  static constexpr int64_t kBlockBytes = 64 * 128; // 64 rows x 128 bytes

  Value gradStage(Value s) {
    return d.sAt(smem,
                 d.add(d.mul(s, WeightGradPlan::kStageOperandBytes), p.aOff));
  }
  Value inputStage(Value s) {
    return d.sAt(smem,
                 d.add(d.mul(s, WeightGradPlan::kStageOperandBytes), p.bOff));
  }

  void producer();
  Value mainloop(Value c);
  void addInit(SmallVector<Value> &v, const AccumulatorTile &tile, Value c);
  void consumer();

  DeviceBuilder &d;
  const WeightGradPlan &p;
  gpu::GPUFuncOp func;
  WarpgroupCoords ids;
  Value smem;
  TmaRing ring;
  Value tmaX, tmaDY, tmaDW, tokens, initPtr;
  Value out0, in0, numK;
};

void WeightGradEmitter::emit() {
  Block &entry = func.getBody().front();
  tmaX = entry.getArgument(0);
  tmaDY = entry.getArgument(1);
  tmaDW = entry.getArgument(2);
  tokens = entry.getArgument(3);
  if (p.readsInit)
    initPtr = entry.getArgument(4);
  initializeBarriers(d, ids.tid, [&]() {
    ring.initBarriers({1, 128 * WeightGradPlan::kConsumers});
  });
  out0 = d.mul(d.ctaid(0), WeightGradPlan::kBlockM);
  in0 = d.mul(d.ctaid(1), WeightGradPlan::kBlockN);
  numK = d.divu(d.add(tokens, WeightGradPlan::kBlockK - 1),
                WeightGradPlan::kBlockK);
  warpSpecialize(
      d, ids.warpgroup, p.producerRegs, p.consumerRegs, [&]() { producer(); },
      [&]() { consumer(); });
}

void WeightGradEmitter::producer() {
  onIssuingThread(d, ids.warpInWarpgroup, [&]() {
    d.forLoop(d.c32(0), numK, d.c32(1), ValueRange(),
              [&](Value it, ValueRange) -> SmallVector<Value> {
                Value s =
                    ring.acquire(it, 2 * WeightGradPlan::kStageOperandBytes);
                Value t0 = d.mul(it, WeightGradPlan::kBlockK);
                // Boxes {64 features, 64 tokens}: two column blocks each.
                for (int64_t half = 0; half < 2; ++half) {
                  d.tmaLoad(d.sAt(gradStage(s), half * kBlockBytes), tmaDY,
                            {d.add(out0, 64 * half), t0}, ring.full(s));
                  d.tmaLoad(d.sAt(inputStage(s), half * kBlockBytes), tmaX,
                            {d.add(in0, 64 * half), t0}, ring.full(s));
                }
                return {};
              });
  });
}

Value WeightGradEmitter::mainloop(Value c) {
  int64_t n = WeightGradPlan::kBlockN;
  // One k step of 64 tokens: A is this warpgroup's 64-column block of dY,
  // B both blocks of X (the descriptor's leading offset between them).
  auto step = [&](Value it, Value acc, bool first) {
    Value s = ring.wait(it);
    Value da = d.wgmmaDesc(d.sAddr(d.sAt(gradStage(s), d.mul(c, kBlockBytes))),
                           kBlockBytes, 1024);
    Value db = d.wgmmaDesc(d.sAddr(inputStage(s)), kBlockBytes, 1024);
    return mmaSharedShared(d, acc, da, db, n, WeightGradPlan::kBlockK, 0, 0,
                           /*accumulate=*/!first, Major::MN, Major::MN);
  };
  // At least one k step: the runtime refuses sizes below 1.
  return pipelinedMainloop(d, ring, numK, d.poisonAcc(n), step);
}

void WeightGradEmitter::addInit(SmallVector<Value> &v,
                                const AccumulatorTile &tile, Value c) {
  Type pairType = VectorType::get({2}, d.elemType);
  auto pairF32 = VectorType::get({2}, d.f32);
  for (int64_t h = 0; h < 2; ++h) {
    // Rows and columns past the features are clipped by the store: clamp
    // their reads into the tensor.
    Value row = d.mins(d.add(d.add(out0, d.mul(c, 64)), tile.rows[h]),
                       d.c32(p.outFeatures - 1));
    for (int64_t g = 0; g < WeightGradPlan::kBlockN / 8; ++g) {
      Value col = d.mins(d.add(d.add(in0, tile.colBase), 8 * g),
                         d.c32(p.inFeatures - 2));
      Value index = d.add(d.mul(row, p.inFeatures), col);
      Value pair = d.load(pairType, d.gAt(initPtr, index, d.elemType), 4);
      Value f = arith::ExtFOp::create(d.b, d.loc, pairF32, pair);
      for (int64_t e = 0; e < 2; ++e) {
        int64_t i = 4 * g + 2 * h + e;
        v[i] = d.addf(v[i],
                      LLVM::ExtractElementOp::create(d.b, d.loc, f, d.c32(e)));
      }
    }
  }
}

void WeightGradEmitter::consumer() {
  Value c = d.sub(ids.warpgroup, d.c32(1));
  int64_t n = WeightGradPlan::kBlockN;
  SmallVector<Value> v = d.unpack(mainloop(c), n);
  AccumulatorTile tile(d, ids.warpInWarpgroup, ids.lane);
  if (p.readsInit)
    addInit(v, tile, c);
  Value cSlab = d.sAt(smem, d.add(d.mul(c, 64 * n * 2), p.cOff));
  stageAccumulator(d, tile, ids.lane, v, cSlab);
  storeStagedTile(d, c, WeightGradPlan::kConsumers, ids.threadInWarpgroup,
                  tmaDW, cSlab, n / 64, [&](int64_t cb) -> SmallVector<Value> {
                    return {d.add(in0, cb * 64), d.add(out0, d.mul(c, 64))};
                  });
}

} // namespace

void attnfuse::sm90::buildWeightGradKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const WeightGradPlan &p) {
  if (p.columnSum())
    return buildBiasGradKernel(b, loc, module, p);
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> args = {ptr, ptr, ptr, b.getI32Type()};
  if (p.readsInit)
    args.push_back(LLVM::LLVMPointerType::get(ctx, 1));
  gpu::GPUFuncOp func =
      createKernelFunc(b, loc, module, p.name, args, {0, 1, 2}, p.threads, 1);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  DeviceBuilder d(b, loc, p.elem);
  WeightGradEmitter(d, p, func).emit();
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeWeightGrad(MLIRContext *ctx, FusedWeightGradOp op,
                                   const WeightGradPlan &p) {
  if (p.columnSum())
    return describeBiasGrad(ctx, p);
  StringRef elem = elemName(p.elem);
  int64_t in = p.inFeatures, out = p.outFeatures;
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "input", "input", 0, elem,
                     {strAttr(ctx, "T"), intAttr(ctx, in)}, {},
                     "row-major [tokens, in_features], contiguous"),
      describeTensor(ctx, "result_grad", "result_grad", 1, elem,
                     {strAttr(ctx, "T"), intAttr(ctx, out)}, {},
                     "row-major [tokens, out_features], contiguous")};
  if (p.readsInit)
    tensors.push_back(describeTensor(ctx, "init", "init", 2, elem,
                                     {intAttr(ctx, out), intAttr(ctx, in)}));
  tensors.push_back(
      describeTensor(ctx, "weight_grad", "result", -1, elem,
                     {intAttr(ctx, out), intAttr(ctx, in)}, {},
                     "row-major [out_features, in_features], contiguous"));
  auto tma = [&](StringRef param, StringRef tensor, int64_t columns,
                 Attribute rows, StringRef role) {
    TmaInfo t;
    t.param = param.str();
    t.tensor = tensor.str();
    t.role = role.str();
    t.globalDim = {intAttr(ctx, columns), rows};
    t.globalStridesBytes = {intAttr(ctx, columns * 2)};
    t.boxDim = {64, 64};
    return describeTma(ctx, t, p.elem);
  };
  SmallVector<Attribute> tmas = {
      tma("tma_x", "input", in, strAttr(ctx, "T"), "load"),
      tma("tma_dy", "result_grad", out, strAttr(ctx, "T"), "load"),
      tma("tma_dw", "weight_grad", in, intAttr(ctx, out), "store")};
  SmallVector<Attribute> params = {
      describeParam(ctx, "tma_x", "tma_descriptor", "tma_x", ""),
      describeParam(ctx, "tma_dy", "tma_descriptor", "tma_dy", ""),
      describeParam(ctx, "tma_dw", "tma_descriptor", "tma_dw", ""),
      describeParam(ctx, "tokens", "scalar", "i32", "T")};
  if (p.readsInit)
    params.push_back(describeParam(ctx, "init", "pointer", elem, "init"));
  SmallVector<Attribute> grid = {
      gridConstant(ctx, llvm::divideCeil(out, WeightGradPlan::kBlockM)),
      gridConstant(ctx, llvm::divideCeil(in, WeightGradPlan::kBlockN)),
      gridConstant(ctx, 1)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("in_features", in)
      .set("out_features", out)
      .set("block_m", WeightGradPlan::kBlockM)
      .set("block_n", WeightGradPlan::kBlockN)
      .set("block_k", WeightGradPlan::kBlockK)
      .set("stages", p.stages)
      .set("consumer_warpgroups", WeightGradPlan::kConsumers)
      .set("producer_registers", p.producerRegs)
      .set("consumer_registers", p.consumerRegs)
      .setBool("init", p.readsInit);
  return describeLaunch(
      ctx, {p.name, "weight_grad_gemm", "T = tokens", p.threads, p.sharedBytes},
      {grid, params, tensors, tmas}, config.get(),
      {p.hostCastFromF32, "weight_grad"});
}
