//===- Projection.cpp - projection GEMMs for sm_90a -------------*- C++ -*-===//
//
// attn.fused_projection (and attn.project) as a warp-specialized TMA + wgmma
// GEMM: Y[b, s, n] = sum_k X[b, s, k] W[n, k] (+ bias[n]), then RoPE per
// head, stored as [B, S, N] (= [B, S, H, d]).
//
// * CTA tile 128 x 128 (two consumer warpgroups of 64 rows), k step 64 (one
//   128-byte swizzle atom of 16-bit elements), a 4-stage ring of A (X rows)
//   and B (W rows) tiles filled by one producer thread with TMA.
// * Consumers: 4 SS wgmma m64n128k16 per k step, both operands K-major; one
//   wgmma group stays in flight (wait_group 1) and the stage it finished
//   with is released to the producer.
// * Epilogue in registers: + bias (loaded per column pair), RoPE (the
//   partner column i + r/2 of a head is held by the same thread: value
//   index + r/4), conversion to 16 bits, staged through shared memory in the
//   swizzled layout and stored with TMA (edges clipped by the tensor map).
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "Kernels.h"
#include "Pipeline.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;
using arith::CmpIPredicate;

std::string GemmPlan::key() const {
  // The code depends on head_dim only through the RoPE epilogue: a
  // fused_projection without RoPE and an attn.project share one kernel.
  return llvm::formatv("gemm:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}:{8}:{9}:{10}:{11}",
                       elemName(elem), inFeatures, outFeatures,
                       rotated ? headDim : 0, hasBias, rotated, blockM, blockN,
                       blockK, stages, hostCastFromF32, transposedWeight)
      .str();
}

FailureOr<GemmPlan>
attnfuse::sm90::planProjection(Operation *op, const TargetOptions &options) {
  GemmPlan p;
  Value input, weight, bias;
  RopeAttr rope;
  if (auto fp = dyn_cast<FusedProjectionOp>(op)) {
    if (fp.getTokenOffset())
      return fp.emitOpError() << "a tile of tokens ('token_offset') is not "
                                 "supported by the sm_90a kernel, which "
                                 "tiles the whole projection itself";
    input = fp.getInput();
    weight = fp.getWeight();
    bias = fp.getBias();
    rope = fp.getRopeAttr();
    p.headDim = fp.getHeadDim();
    p.transposedWeight = fp.getTransposedWeight();
  } else {
    auto proj = cast<ProjectOp>(op);
    input = proj.getInput();
    weight = proj.getWeight();
    bias = proj.getBias();
    p.fromProject = true;
  }
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (failed(p.setElementType(op, inputType.getElementType(), options)))
    return failure();
  p.inFeatures = inputType.getDimSize(2);
  p.outFeatures = weightType.getDimSize(p.transposedWeight ? 1 : 0);
  if (ShapedType::isDynamic(p.inFeatures) ||
      ShapedType::isDynamic(p.outFeatures))
    return op->emitOpError() << "needs static feature sizes for sm_90a";
  if (p.fromProject)
    p.headDim = p.outFeatures;
  // TMA: every global stride a multiple of 16 bytes.
  if (p.inFeatures % 8 != 0 || p.outFeatures % 8 != 0)
    return op->emitOpError()
           << "the sm_90a GEMM needs in and out features that are multiples "
              "of 8 (16-byte TMA strides), got "
           << p.inFeatures << " and " << p.outFeatures;
  p.hasBias = static_cast<bool>(bias);
  if (rope) {
    FailureOr<int64_t> r = rope.getRotatedDim(p.headDim);
    if (failed(r) || *r % 16 != 0)
      return op->emitOpError() << "the sm_90a GEMM epilogue rotates multiples "
                                  "of 16 dims per head";
    p.rotated = *r;
  }
  p.blockM = 128;
  p.blockN = kGemmTileColumns;
  p.blockK = 64;
  p.stages = 4;
  p.consumers = 2;
  if (p.rotated && p.blockN % p.headDim != 0)
    return op->emitOpError()
           << "head_dim " << p.headDim << " does not divide the " << p.blockN
           << "-column GEMM tile; the RoPE epilogue needs whole heads in a "
              "tile";
  p.threads = 128 * (1 + p.consumers);
  p.producerRegs = 40;
  int64_t cap;
  splitRegisters(p.consumers, 1, p.producerRegs, cap, p.consumerRegs);
  int64_t elemBytes = 2;
  p.aStageBytes = p.blockM * p.blockK * elemBytes;
  p.bStageBytes = p.blockN * p.blockK * elemBytes;
  p.cBytes = p.blockM * p.blockN * elemBytes;
  p.aOff = 0;
  p.bOff = p.aOff + p.stages * p.aStageBytes;
  p.cOff = p.bOff + p.stages * p.bStageBytes;
  p.barOff = p.cOff + p.cBytes;
  p.sharedBytes = p.barOff + TmaRing::barrierBytes(p.stages, 2) + 1024;
  std::string name = llvm::formatv("attn_gemm_{0}_k{1}_n{2}", elemName(p.elem),
                                   p.inFeatures, p.outFeatures);
  if (p.hasBias)
    name += "_bias";
  if (p.rotated)
    name += llvm::formatv("_rope{0}of{1}", p.rotated, p.headDim).str();
  if (p.transposedWeight)
    name += "_wt";
  p.name = name;
  return p;
}

namespace {

/// Emits one projection GEMM: a producer warpgroup (one TMA thread) filling a
/// `TmaRing` of A and B k-steps, and `consumers` warpgroups of 64 rows each
/// running the wgmma mainloop and the bias / RoPE / TMA-store epilogue.
class GemmEmitter {
public:
  GemmEmitter(DeviceBuilder &d, const GemmPlan &p, gpu::GPUFuncOp func)
      : d(d), p(p), func(func), ids(d),
        smem(d.alignedDynamicShared(kSharedSymbol)),
        ring(d, smem, p.barOff, p.stages) {}
  void emit();

private:
  Value aStage(Value s) { return d.sSlot(smem, p.aOff, s, p.aStageBytes); }
  Value bStage(Value s) { return d.sSlot(smem, p.bOff, s, p.bStageBytes); }

  void producer();
  void consumer();
  Value mainloop(Value c);
  void addBias(SmallVector<Value> &v, const AccumulatorTile &tile);
  void rotate(SmallVector<Value> &v, const AccumulatorTile &tile, Value c);

  DeviceBuilder &d;
  const GemmPlan &p;
  gpu::GPUFuncOp func;
  WarpgroupCoords ids;
  Value smem;
  TmaRing ring;
  Value tmaX, tmaW, tmaY, seq, biasPtr, ropeCos, ropeSin;
  Value row0, col0, batch, numK;
};

void GemmEmitter::emit() {
  KernelArguments args(func);
  tmaX = args.next();
  tmaW = args.next();
  tmaY = args.next();
  seq = args.next();
  biasPtr = args.nextIf(p.hasBias);
  ropeCos = args.nextIf(p.rotated);
  ropeSin = args.nextIf(p.rotated);
  initializeBarriers(d, ids.tid,
                     [&]() { ring.initBarriers({1, 128 * p.consumers}); });
  row0 = d.mul(d.ctaid(0), p.blockM);
  col0 = d.mul(d.ctaid(1), p.blockN);
  batch = d.ctaid(2);
  numK = d.c32((p.inFeatures + p.blockK - 1) / p.blockK);
  warpSpecialize(
      d, ids.warpgroup, p.producerRegs, p.consumerRegs, [&]() { producer(); },
      [&]() { consumer(); });
}

void GemmEmitter::producer() {
  onIssuingThread(d, ids.warpInWarpgroup, [&]() {
    d.forLoop(d.c32(0), numK, d.c32(1), ValueRange(),
              [&](Value it, ValueRange) -> SmallVector<Value> {
                Value s = ring.acquire(it, p.aStageBytes + p.bStageBytes);
                Value k0 = d.mul(it, p.blockK);
                // X box {64, 128 rows, 1}; W box {64, 128 rows}, or, for a
                // W^T of 64 k rows, two boxes {64 columns, 64 rows}.
                d.tmaLoad(aStage(s), tmaX, {k0, row0, batch}, ring.full(s));
                if (!p.transposedWeight) {
                  d.tmaLoad(bStage(s), tmaW, {k0, col0}, ring.full(s));
                  return {};
                }
                for (int64_t cb = 0; cb < p.blockN / 64; ++cb)
                  d.tmaLoad(d.sAt(bStage(s), cb * 64 * 128), tmaW,
                            {d.add(col0, cb * 64), k0}, ring.full(s));
                return {};
              });
  });
}

Value GemmEmitter::mainloop(Value c) {
  int64_t n = p.blockN;
  // One k step: wait for its stage, issue blockK / 16 wgmmas, commit.
  auto step = [&](Value it, Value a, bool first) {
    Value s = ring.wait(it);
    Value da =
        d.wgmmaDesc(d.sAddr(d.sAt(aStage(s), d.mul(c, 64 * 128))), 16, 1024);
    // W^T: MN-major, its 64-column blocks 64 k rows (8 KiB) apart.
    Value db = d.wgmmaDesc(d.sAddr(bStage(s)),
                           p.transposedWeight ? 64 * 128 : 16, 1024);
    return mmaSharedShared(d, a, da, db, n, p.blockK, 0, 0,
                           /*accumulate=*/!first, Major::K,
                           p.transposedWeight ? Major::MN : Major::K);
  };
  return pipelinedMainloop(d, ring, numK, d.poisonAcc(n), step);
}

void GemmEmitter::addBias(SmallVector<Value> &v, const AccumulatorTile &tile) {
  Type pairType = VectorType::get({2}, d.elemType);
  auto pairF32 = VectorType::get({2}, d.f32);
  for (int64_t g = 0; g < p.blockN / 8; ++g) {
    // Columns col0 + 8g + colBase + {0, 1}; the last tile may overhang N:
    // clamp (those columns are clipped by the store).
    Value col = d.mins(d.add(d.add(col0, tile.colBase), 8 * g),
                       d.c32(p.outFeatures - 2));
    Value pair = d.load(pairType, d.gAt(biasPtr, col, d.elemType), 4);
    Value f = arith::ExtFOp::create(d.b, d.loc, pairF32, pair);
    for (int64_t e = 0; e < 2; ++e) {
      Value be = LLVM::ExtractElementOp::create(d.b, d.loc, f, d.c32(e));
      for (int64_t h = 0; h < 2; ++h) {
        int64_t i = 4 * g + 2 * h + e;
        v[i] = d.addf(v[i], be);
      }
    }
  }
}

void GemmEmitter::rotate(SmallVector<Value> &v, const AccumulatorTile &tile,
                         Value c) {
  // Rotation pairs are (j, j + r/2) within a head: value offset r/4.
  int64_t half = p.rotated / 2;
  Value lastPos = d.sub(seq, d.c32(1));
  for (int64_t h = 0; h < 2; ++h) {
    Value pos = d.mins(d.add(d.add(row0, d.mul(c, 64)), tile.rows[h]), lastPos);
    Value tableRow = d.mul(pos, half);
    for (int64_t head = 0; head < p.blockN / p.headDim; ++head) {
      for (int64_t g = 0; g < half / 8; ++g) {
        for (int64_t e = 0; e < 2; ++e) {
          int64_t i = (head * p.headDim / 8 + g) * 4 + 2 * h + e;
          int64_t j = i + p.rotated / 4;
          Value idx = d.add(tableRow, d.add(tile.colBase, 8 * g + e));
          Value cs = d.load(d.f32, d.gAt(ropeCos, idx, d.f32), 4);
          Value sn = d.load(d.f32, d.gAt(ropeSin, idx, d.f32), 4);
          Value x = v[i], y = v[j];
          v[i] = d.subf(d.mulf(x, cs), d.mulf(y, sn));
          v[j] = d.addf(d.mulf(y, cs), d.mulf(x, sn));
        }
      }
    }
  }
}

void GemmEmitter::consumer() {
  Value c = d.sub(ids.warpgroup, d.c32(1));
  int64_t n = p.blockN;
  SmallVector<Value> v = d.unpack(mainloop(c), n);
  AccumulatorTile tile(d, ids.warpInWarpgroup, ids.lane);
  if (p.hasBias)
    addBias(v, tile);
  if (p.rotated)
    rotate(v, tile, c);
  // This warpgroup's 64 x 128 block: two 64-column blocks of 64 x 128 bytes.
  Value cSlab = d.sSlot(smem, p.cOff, c, 64 * n * 2);
  stageAccumulator(d, tile, ids.lane, v, cSlab);
  storeStagedTile(d, c, p.consumers, ids.threadInWarpgroup, tmaY, cSlab, n / 64,
                  [&](int64_t cb) -> SmallVector<Value> {
                    return {d.add(col0, cb * 64), d.add(row0, d.mul(c, 64)),
                            batch};
                  });
}

} // namespace

void attnfuse::sm90::buildProjectionKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const GemmPlan &p) {
  KernelSignature signature(b.getContext());
  signature.tma(3).scalar().pointer(1, p.hasBias).pointer(2, p.rotated);
  KernelBody body(b, loc, module, p.name, signature, p.threads, 1, p.elem);
  GemmEmitter(body.d, p, body.func).emit();
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr attnfuse::sm90::describeProjection(MLIRContext *ctx,
                                                          Operation *op,
                                                          const GemmPlan &p) {
  StringRef elem = elemName(p.elem);
  int64_t k = p.inFeatures, n = p.outFeatures;
  auto tensor = [&](StringRef name, StringRef role, int64_t operand,
                    ArrayRef<Attribute> shape, ArrayRef<Attribute> strides,
                    StringRef layout) {
    return describeTensor(ctx, name, role, operand, elem, shape, strides,
                          layout);
  };
  SmallVector<Attribute> tensors = {
      tensor("input", "input", 0,
             {strAttr(ctx, "B"), strAttr(ctx, "S"), intAttr(ctx, k)},
             {scaled(ctx, k, "S"), intAttr(ctx, k), intAttr(ctx, 1)},
             "row-major [batch, seq, in_features], contiguous"),
      p.transposedWeight
          ? tensor("weight", "weight", 1, {intAttr(ctx, k), intAttr(ctx, n)},
                   {intAttr(ctx, n), intAttr(ctx, 1)},
                   "row-major [in_features, out_features] (W^T), contiguous")
          : tensor("weight", "weight", 1, {intAttr(ctx, n), intAttr(ctx, k)},
                   {intAttr(ctx, k), intAttr(ctx, 1)},
                   "row-major [out_features, in_features], contiguous")};
  if (p.hasBias)
    tensors.push_back(tensor("bias", "bias", 2, {intAttr(ctx, n)},
                             {intAttr(ctx, 1)}, "contiguous"));
  tensors.push_back(tensor(
      "output", "result", -1,
      {strAttr(ctx, "B"), strAttr(ctx, "S"), intAttr(ctx, n)},
      {scaled(ctx, n, "S"), intAttr(ctx, n), intAttr(ctx, 1)},
      "row-major [batch, seq, out_features], contiguous (attn.fused_projection "
      "views it as [batch, seq, heads, head_dim])"));

  auto tma = [&](StringRef param, StringRef tensorName,
                 SmallVector<Attribute> dims, SmallVector<Attribute> strides,
                 SmallVector<int64_t> box, StringRef role) {
    TmaInfo t;
    t.param = param.str();
    t.tensor = tensorName.str();
    t.role = role.str();
    t.globalDim = std::move(dims);
    t.globalStridesBytes = std::move(strides);
    t.boxDim = std::move(box);
    return describeTma(ctx, t, p.elem);
  };
  SmallVector<Attribute> tmas = {
      tma("tma_x", "input",
          {intAttr(ctx, k), strAttr(ctx, "S"), strAttr(ctx, "B")},
          {intAttr(ctx, k * 2), scaled(ctx, k * 2, "S")}, {64, p.blockM, 1},
          "load"),
      p.transposedWeight
          ? tma("tma_w", "weight", {intAttr(ctx, n), intAttr(ctx, k)},
                {intAttr(ctx, n * 2)}, {64, 64}, "load")
          : tma("tma_w", "weight", {intAttr(ctx, k), intAttr(ctx, n)},
                {intAttr(ctx, k * 2)}, {64, p.blockN}, "load"),
      tma("tma_y", "output",
          {intAttr(ctx, n), strAttr(ctx, "S"), strAttr(ctx, "B")},
          {intAttr(ctx, n * 2), scaled(ctx, n * 2, "S")}, {64, 64, 1},
          "store")};

  SmallVector<Attribute> params = {
      describeParam(ctx, "tma_x", "tma_descriptor", "tma_x", ""),
      describeParam(ctx, "tma_w", "tma_descriptor", "tma_w", ""),
      describeParam(ctx, "tma_y", "tma_descriptor", "tma_y", ""),
      describeParam(ctx, "seq", "scalar", "i32", "S")};
  if (p.hasBias)
    params.push_back(describeParam(ctx, "bias", "pointer", elem, "bias"));
  SmallVector<Attribute> tables;
  if (p.rotated) {
    auto rope = cast<FusedProjectionOp>(op).getRopeAttr();
    describeRopeTables(ctx, "rope", rope.getThetaValue(), p.rotated, "S",
                       params, tables);
  }
  SmallVector<Attribute> grid = {
      gridCeilDiv(ctx, "S", p.blockM),
      gridConstant(ctx, (n + p.blockN - 1) / p.blockN),
      gridCeilDiv(ctx, "B", 1)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("in_features", k)
      .set("out_features", n)
      .set("head_dim", p.headDim)
      .set("block_m", p.blockM)
      .set("block_n", p.blockN)
      .set("block_k", p.blockK)
      .set("stages", p.stages)
      .set("consumer_warpgroups", p.consumers)
      .set("producer_registers", p.producerRegs)
      .set("consumer_registers", p.consumerRegs)
      .setBool("bias", p.hasBias)
      .setBool("transposed_weight", p.transposedWeight)
      .set("rope_dims", p.rotated);
  return describeLaunch(
      ctx,
      {p.name, "projection_gemm", "B = batch, S = sequence length", p.threads,
       p.sharedBytes},
      {grid, params, tensors, tmas, tables}, config.get(), {p.hostCastFromF32});
}
