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
// * Split over the tokens: a weight of few 128 x 128 tiles (a GQA K/V
//   projection of 256 x 1024 has 16, against 132 SMs) would leave most SMs
//   idle for a long reduction. Then grid z runs `splits` CTAs per tile,
//   each over an equal share of the k steps (an empty share gives zeros),
//   storing its f32 accumulators straight from registers into partial
//   tiles; a SIMT combine kernel adds the partials in split order (the same
//   sums on every run) and the init, and rounds once. The partials cost
//   2 x splits x out x in x 4 bytes of traffic, small next to a reduction
//   over thousands of tokens; a tile count of half the SMs or more is not
//   split.
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
  return llvm::formatv("wgrad:{0}:{1}:{2}:{3}:{4}:{5}:{6}", elemName(elem),
                       inFeatures, outFeatures, readsInit, hostCastFromF32,
                       inputFill ? std::to_string(*inputFill) : "read", splits)
      .str();
}

RankedTensorType WeightGradPlan::partialsType(MLIRContext *ctx) const {
  return RankedTensorType::get({splits, outFeatures, inFeatures},
                               Float32Type::get(ctx));
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
  if (failed(p.setElementType(op, inputType.getElementType(), options)))
    return failure();
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
  int64_t tiles = llvm::divideCeil(p.outFeatures, P::kBlockM) *
                  llvm::divideCeil(p.inFeatures, P::kBlockN);
  if (2 * tiles < P::kSplitTargetCtas)
    p.splits = std::min(P::kMaxSplits, P::kSplitTargetCtas / tiles);
  std::string suffix = p.split() ? "_split" + std::to_string(p.splits) : "";
  // With a split the combine kernel adds the init.
  p.name = llvm::formatv("attn_wgrad_{0}_in{1}_out{2}{3}", elemName(p.elem),
                         p.inFeatures, p.outFeatures,
                         p.split()     ? suffix
                         : p.readsInit ? "_acc"
                                       : "")
               .str();
  p.combineName = llvm::formatv("attn_wgrad_combine_{0}_in{1}_out{2}{3}{4}",
                                elemName(p.elem), p.inFeatures, p.outFeatures,
                                suffix, p.readsInit ? "_acc" : "")
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
  /// Stores the f32 accumulators into this split's partial tile.
  void storePartials(ArrayRef<Value> v, const AccumulatorTile &tile, Value c);
  void consumer();

  DeviceBuilder &d;
  const WeightGradPlan &p;
  gpu::GPUFuncOp func;
  WarpgroupCoords ids;
  Value smem;
  TmaRing ring;
  // tmaDW for one kernel, partials for a split.
  Value tmaX, tmaDY, tmaDW, partials, tokens, initPtr;
  // The CTA's tile and its k steps: `numK` from `firstK`.
  Value out0, in0, firstK, numK;
};

void WeightGradEmitter::emit() {
  KernelArguments args(func);
  tmaX = args.next();
  tmaDY = args.next();
  (p.split() ? partials : tmaDW) = args.next();
  tokens = args.next();
  initPtr = args.nextIf(p.gemmAddsInit());
  initializeBarriers(d, ids.tid, [&]() {
    ring.initBarriers({1, 128 * WeightGradPlan::kConsumers});
  });
  out0 = d.mul(d.ctaid(0), WeightGradPlan::kBlockM);
  in0 = d.mul(d.ctaid(1), WeightGradPlan::kBlockN);
  numK = d.divu(d.add(tokens, WeightGradPlan::kBlockK - 1),
                WeightGradPlan::kBlockK);
  firstK = d.c32(0);
  if (p.split()) {
    // Split z takes k steps [z * share, min((z + 1) * share, all)).
    Value share = d.divu(d.add(numK, p.splits - 1), p.splits);
    firstK = d.mul(d.ctaid(2), share);
    numK = d.maxs(d.mins(share, d.sub(numK, firstK)), d.c32(0));
  }
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
                Value t0 = d.mul(d.add(firstK, it), WeightGradPlan::kBlockK);
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

void WeightGradEmitter::storePartials(ArrayRef<Value> v,
                                      const AccumulatorTile &tile, Value c) {
  // Value 4g + 2h + e sits at row rows[h], column colBase + 8g + e: each
  // (e = 0, 1) pair is 8 contiguous bytes. `in` is a multiple of 8, so a
  // pair is all inside the columns or all past them.
  Value base = d.mul(d.ctaid(2), p.outFeatures);
  Type pairF32 = VectorType::get({2}, d.f32);
  for (int64_t h = 0; h < 2; ++h) {
    Value row = d.add(d.add(out0, d.mul(c, 64)), tile.rows[h]);
    Value rowIn = d.cmp(arith::CmpIPredicate::slt, row, d.c32(p.outFeatures));
    for (int64_t g = 0; g < WeightGradPlan::kBlockN / 8; ++g) {
      Value col = d.add(d.add(in0, tile.colBase), 8 * g);
      Value inside = d.andb(
          rowIn, d.cmp(arith::CmpIPredicate::slt, col, d.c32(p.inFeatures)));
      d.ifThen(inside, [&]() {
        Value index = d.add(d.mul(d.add(base, row), p.inFeatures), col);
        Value pair = LLVM::PoisonOp::create(d.b, d.loc, pairF32);
        for (int64_t e = 0; e < 2; ++e)
          pair = LLVM::InsertElementOp::create(d.b, d.loc, pair,
                                               v[4 * g + 2 * h + e], d.c32(e));
        d.store(pair, d.gAt(partials, index, d.f32), 8);
      });
    }
  }
}

void WeightGradEmitter::consumer() {
  Value c = d.sub(ids.warpgroup, d.c32(1));
  int64_t n = WeightGradPlan::kBlockN;
  AccumulatorTile tile(d, ids.warpInWarpgroup, ids.lane);
  if (p.split()) {
    // A split past the last k step stores zeros.
    SmallVector<Type> f32s(n / 2, d.f32);
    SmallVector<Value> v = d.ifThenElseValues(
        d.cmp(arith::CmpIPredicate::sgt, numK, d.c32(0)), f32s,
        [&]() { return d.unpack(mainloop(c), n); },
        [&]() { return SmallVector<Value>(n / 2, d.cf(0.0)); });
    storePartials(v, tile, c);
    return;
  }
  SmallVector<Value> v = d.unpack(mainloop(c), n);
  if (p.readsInit)
    addInit(v, tile, c);
  Value cSlab = d.sSlot(smem, p.cOff, c, 64 * n * 2);
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
  // tma_x, tma_dy, tma_dw (partials for a split), tokens, [init].
  KernelSignature signature(b.getContext());
  signature.tma(2)
      .tma(1, !p.split())
      .pointer(1, p.split())
      .scalar()
      .pointer(1, p.gemmAddsInit());
  KernelBody body(b, loc, module, p.name, signature, p.threads, 1, p.elem);
  WeightGradEmitter(body.d, p, body.func).emit();
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
  if (p.split())
    tensors.push_back(describeTensor(
        ctx, "partials", "result: f32 partial sums, one [out, in] per split",
        -1, "f32",
        {intAttr(ctx, p.splits), intAttr(ctx, out), intAttr(ctx, in)}, {},
        "row-major [splits, out_features, in_features], contiguous"));
  else if (p.readsInit)
    tensors.push_back(describeTensor(ctx, "init", "init", 2, elem,
                                     {intAttr(ctx, out), intAttr(ctx, in)}));
  if (!p.split())
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
      tma("tma_dy", "result_grad", out, strAttr(ctx, "T"), "load")};
  SmallVector<Attribute> params = {
      describeParam(ctx, "tma_x", "tma_descriptor", "tma_x", ""),
      describeParam(ctx, "tma_dy", "tma_descriptor", "tma_dy", "")};
  if (p.split()) {
    params.push_back(
        describeParam(ctx, "partials", "pointer", "f32", "partials"));
  } else {
    tmas.push_back(
        tma("tma_dw", "weight_grad", in, intAttr(ctx, out), "store"));
    params.push_back(
        describeParam(ctx, "tma_dw", "tma_descriptor", "tma_dw", ""));
  }
  params.push_back(describeParam(ctx, "tokens", "scalar", "i32", "T"));
  if (p.gemmAddsInit())
    params.push_back(describeParam(ctx, "init", "pointer", elem, "init"));
  SmallVector<Attribute> grid = {
      gridConstant(ctx, llvm::divideCeil(out, WeightGradPlan::kBlockM)),
      gridConstant(ctx, llvm::divideCeil(in, WeightGradPlan::kBlockN)),
      gridConstant(ctx, p.splits)};
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
      .set("splits", p.splits)
      .setBool("init", p.gemmAddsInit());
  return describeLaunch(
      ctx, {p.name, "weight_grad_gemm", "T = tokens", p.threads, p.sharedBytes},
      {grid, params, tensors, tmas}, config.get(),
      {p.hostCastFromF32, p.split() ? "" : "weight_grad"});
}

//===----------------------------------------------------------------------===//
// The combine kernel of a split
//===----------------------------------------------------------------------===//

void attnfuse::sm90::buildWeightGradCombineKernel(OpBuilder &b, Location loc,
                                                  gpu::GPUModuleOp module,
                                                  const WeightGradPlan &p) {
  // partials, weight_grad, [init].
  KernelBody body(
      b, loc, module, p.combineName,
      KernelSignature(b.getContext()).pointer(2).pointer(1, p.readsInit),
      WeightGradPlan::kCombineThreads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value partials = arguments.next(), result = arguments.next();
  Value init = arguments.nextIf(p.readsInit);
  // Each thread owns 4 adjacent elements (in is a multiple of 8).
  int64_t count = p.outFeatures * p.inFeatures;
  Value first = d.mul(
      d.add(d.mul(d.ctaid(0), WeightGradPlan::kCombineThreads), d.tid()), 4);
  d.ifThen(d.cmp(arith::CmpIPredicate::slt, first, d.c32(count)), [&]() {
    Type quadF32 = VectorType::get({4}, d.f32);
    Type quad = VectorType::get({4}, d.elemType);
    // Split order, so every run adds the same numbers in the same order.
    Value sum;
    for (int64_t z = 0; z < p.splits; ++z) {
      Value part =
          d.load(quadF32, d.gAt(partials, d.add(first, z * count), d.f32), 16);
      sum = z == 0 ? part : arith::AddFOp::create(b, loc, sum, part);
    }
    if (p.readsInit)
      sum = arith::AddFOp::create(
          b, loc, sum,
          arith::ExtFOp::create(
              b, loc, quadF32,
              d.load(quad, d.gAt(init, first, d.elemType), 8)));
    d.store(arith::TruncFOp::create(b, loc, quad, sum),
            d.gAt(result, first, d.elemType), 8);
  });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeWeightGradCombine(MLIRContext *ctx,
                                          const WeightGradPlan &p) {
  StringRef elem = elemName(p.elem);
  int64_t in = p.inFeatures, out = p.outFeatures;
  SmallVector<Attribute> tensors = {describeTensor(
      ctx, "partials", "the split kernel's f32 partial sums", 0, "f32",
      {intAttr(ctx, p.splits), intAttr(ctx, out), intAttr(ctx, in)})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "partials", "pointer", "f32", "partials"),
      describeParam(ctx, "weight_grad", "pointer", elem, "weight_grad")};
  if (p.readsInit) {
    tensors.push_back(describeTensor(ctx, "init", "init", 1, elem,
                                     {intAttr(ctx, out), intAttr(ctx, in)}));
    params.push_back(describeParam(ctx, "init", "pointer", elem, "init"));
  }
  tensors.push_back(
      describeTensor(ctx, "weight_grad", "result", -1, elem,
                     {intAttr(ctx, out), intAttr(ctx, in)}, {},
                     "row-major [out_features, in_features], contiguous"));
  SmallVector<Attribute> grid = {gridConstant(
      ctx, llvm::divideCeil(out * in, 4 * WeightGradPlan::kCombineThreads))};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("in_features", in)
      .set("out_features", out)
      .set("splits", p.splits)
      .set("elements_per_thread", int64_t(4))
      .setBool("init", p.readsInit);
  return describeLaunch(ctx,
                        {p.combineName, "weight_grad_combine", "",
                         WeightGradPlan::kCombineThreads, 0},
                        {grid, params, tensors}, config.get(),
                        {p.hostCastFromF32, "weight_grad"});
}
