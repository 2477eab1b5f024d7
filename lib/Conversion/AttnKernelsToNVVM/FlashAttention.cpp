//===- FlashAttention.cpp - attn.flash_attention for sm_90a -----*- C++ -*-===//
//
// A warp-specialized FlashAttention forward kernel (the FlashAttention-3
// structure), emitted at the NVVM / LLVM-dialect level:
//
// * CTA = 1 producer warpgroup + `consumers` (block_q / 64) consumer
//   warpgroups; each consumer owns 64 rows of the query tile.
// * GQA: the `pack` query heads of a KV group that share a CTA (pack =
//   gcd(G, 64)) are packed into the rows of the tile: row m is query position
//   s0 + m / pack of head h0 + m % pack, so every K/V tile a CTA loads serves
//   all of its heads (the TMA box of Q/O is [d, pack, 64 / pack, 1]).
// * Producer warp 0 (one elected thread) issues TMA loads of Q once and of
//   K/V tiles into a `stages`-deep ring, with full/empty mbarriers
//   (arrive.expect_tx / try_wait.parity). K=V loads one tile for both.
// * Key RoPE on load: producer warps 1-3 rotate each landed key tile in
//   shared memory (into a second buffer for K=V, so P V reads the un-rotated
//   tile; in place otherwise) and arrive on a third barrier. Query RoPE:
//   each consumer rotates its Q slab once.
// * Consumers: S = Q K^T with SS wgmma (m64 n=block_kv k16, f32
//   accumulators), online softmax in registers (row max across the 4 lanes
//   of a row with shfl.bfly 1 and 2, exp2 with the log2(e)-prescaled scale),
//   P converted to 16-bit pairs in registers and O += P V with RS wgmma
//   (inline PTX, B = V tile, MN-major), then O / l through shared memory and
//   a TMA store.
// * setmaxnreg moves registers from the producer to the consumers.
// * Causal / window: key tiles outside the CTA's visible range are never
//   loaded; only tiles crossing the diagonal, the window edge or the end of
//   the keys are masked (the same bounds as the CPU lowering). With a key
//   mask (a padded batch) every tile is masked, each consumer thread reading
//   the mask entries of its score columns from global memory.
//
// Shared memory (offsets from a 1024-byte aligned base): Q slabs, K stages,
// V stages (not for K=V), rotated-K stages (K=V with key RoPE), mbarriers.
// Every tile is stored as 64-column blocks of rows x 128 bytes with the TMA
// 128-byte swizzle, which is the canonical wgmma layout (K-major for Q and
// K, MN-major for V).
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "Kernels.h"
#include "OnlineSoftmax.h"
#include "Pipeline.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;
using arith::CmpFPredicate;
using arith::CmpIPredicate;

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

std::string FlashPlan::key() const {
  return llvm::formatv("fa:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}:{8}:{9}:{10}:{11}:"
                       "{12}:{13}:{14}:{15}:{16}:{17}:{18}:{19}",
                       elemName(elem), headDim, valueDim, numHeads, numKvHeads,
                       pack, blockQ, blockKV, stages, causal,
                       window ? *window : -1, llvm::formatv("{0:e}", scale),
                       keyIsValue, queryRotated, keyRotated, sharedRopeTable,
                       hostCastFromF32, keyMaskBits, queryGrad, writesLse)
      .str();
}

/// What the forward and the backward kernels check and take alike from
/// `op` (an attn.flash_attention or attn.flash_attention_grad): element
/// type, heads, tiles, masks, scale, K=V and key RoPE.
template <typename OpTy>
static LogicalResult planAttentionShape(OpTy op, const TargetOptions &options,
                                        FlashPlan &p) {
  auto queryType = cast<RankedTensorType>(op.getQuery().getType());
  auto keyType = cast<RankedTensorType>(op.getKey().getType());
  auto valueType = cast<RankedTensorType>(op.getValueOrKey().getType());
  if (failed(p.setElementType(op, queryType.getElementType(), options)))
    return failure();
  p.headDim = queryType.getDimSize(3);
  p.valueDim = valueType.getDimSize(3);
  p.numHeads = queryType.getDimSize(2);
  p.numKvHeads = keyType.getDimSize(2);
  if (ShapedType::isDynamic(p.numHeads) || ShapedType::isDynamic(p.numKvHeads))
    return op.emitOpError() << "needs static head counts for sm_90a";
  p.group = p.numHeads / p.numKvHeads;
  p.pack = std::gcd(p.group, int64_t(64));
  if (p.headDim % 16 != 0 || p.headDim < 16 || p.headDim > 256)
    return op.emitOpError()
           << "head_dim " << p.headDim
           << " is not supported by the sm_90a kernel (a multiple of 16 up "
              "to 256)";
  if (p.valueDim != p.headDim)
    return op.emitOpError()
           << "value dim " << p.valueDim << " differs from head_dim "
           << p.headDim << "; the sm_90a kernel needs them equal";
  if (op.getBias())
    return op.emitOpError()
           << "additive logit bias is not supported by the sm_90a kernel yet";
  FailureOr<int64_t> maskBits =
      maskElementBits(op, "key_mask", op.getKeyMask());
  if (failed(maskBits))
    return failure();
  p.keyMaskBits = *maskBits;
  p.blockQ = op.getBlockQ();
  p.blockKV = op.getBlockKv();
  p.stages = options.stages;
  if (p.blockQ != 64 && p.blockQ != 128 && p.blockQ != 192)
    return op.emitOpError() << "block_q " << p.blockQ
                            << " is not supported on sm_90a (64, 128, 192: "
                               "one consumer warpgroup per 64 rows; "
                               "attn-fuse's block-q sets it)";
  if (p.blockKV != 64 && p.blockKV != 128)
    return op.emitOpError() << "block_kv " << p.blockKV
                            << " is not supported on sm_90a (64, 128; "
                               "attn-fuse's block-kv sets it)";
  if (p.stages < 1 || p.stages > 8)
    return op.emitOpError() << "stages " << p.stages << " is out of [1, 8]";
  p.headCols = llvm::alignTo(p.headDim, 64);
  p.valueCols = llvm::alignTo(p.valueDim, 64);
  // A 128-key stage of K and V at more than 128 columns is 128 KiB or more:
  // two stages would not fit, so those head dims stream 64-key tiles.
  if (p.headCols > 128)
    p.blockKV = std::min<int64_t>(p.blockKV, 64);
  p.consumers = p.blockQ / 64;
  if (p.consumers == 3 && p.valueCols > 64)
    return op.emitOpError() << "block_q 192 with head_dim " << p.headDim
                            << " does not fit the consumer register budget "
                               "(160); use block_q 128";
  p.causal = op.getCausal();
  p.window = op.getWindow();
  p.scale = softmaxScale(op.getScaleAttr(), p.headDim);
  if (!(p.scale > 0.0))
    return op.emitOpError()
           << "the sm_90a kernel needs a positive softmax scale";
  p.keyIsValue = !op.getValue();
  p.keyRotated = rotatedDims(op.getKeyRopeAttr(), p.headDim);
  return success();
}

/// Registers, shared memory and the kernel name of a query-tile kernel (the
/// forward or the dQ kernel) whose shape `planAttentionShape` set.
static LogicalResult planQueryTileKernel(Operation *op, FlashPlan &p) {
  for (int64_t r : {p.queryRotated, p.keyRotated})
    if (r < 0 || r % 16 != 0)
      return op->emitOpError() << "the sm_90a kernel rotates whole 16-byte "
                                  "chunks: RoPE must rotate a multiple of 16 "
                                  "dims (got "
                               << r << ")";
  p.threads = 128 * (1 + p.consumers);

  // Shared memory.
  int64_t elemBytes = 2;
  p.qSlabBytes = 64 * p.headCols * elemBytes;
  p.kStageBytes = p.blockKV * p.headCols * elemBytes;
  p.vStageBytes = p.keyIsValue ? 0 : p.blockKV * p.valueCols * elemBytes;
  p.rotStageBytes =
      (p.keyRotated && p.keyIsValue) ? p.blockKV * p.headCols * elemBytes : 0;
  p.qOff = 0;
  // The dQ kernel's dO slabs follow the Q slabs.
  p.doOff = p.qOff + p.consumers * p.qSlabBytes;
  p.kOff = p.doOff + (p.queryGrad ? p.consumers * 64 * p.valueCols * 2 : 0);
  p.vOff = p.kOff + p.stages * p.kStageBytes;
  p.rotOff = p.vOff + p.stages * p.vStageBytes;
  p.barOff = p.rotOff + p.stages * p.rotStageBytes;
  // Full, empty and rotated-key barriers per stage, then the Q barrier; 1 KiB
  // alignment slack.
  p.sharedBytes = p.barOff + TmaRing::barrierBytes(p.stages, 3) + 8 + 1024;

  // Occupancy and the register split. One consumer warpgroup runs two CTAs
  // per SM when two fit in shared memory; two or three run one.
  p.minBlocksPerSM =
      p.consumers == 1 && 2 * p.sharedBytes <= kMaxDynamicSharedBytes ? 2 : 1;
  p.producerRegs = p.keyRotated ? (p.consumers == 3 ? 40 : 56) : 24;
  int64_t cap;
  splitRegisters(p.consumers, p.minBlocksPerSM, p.producerRegs, cap,
                 p.consumerRegs);
  int64_t limit = kMaxDynamicSharedBytes / p.minBlocksPerSM;
  if (p.sharedBytes > limit)
    return op->emitOpError()
           << "the sm_90a kernel needs " << p.sharedBytes
           << " bytes of shared memory (block_q " << p.blockQ << ", block_kv "
           << p.blockKV << ", " << p.stages << " stages), more than the "
           << limit << " available; lower stages or block_kv";

  std::string name =
      llvm::formatv("attn_fa{0}_{1}_d{2}_h{3}_g{4}_q{5}_kv{6}_s{7}",
                    p.queryGrad ? "_dq" : "", elemName(p.elem), p.headDim,
                    p.numHeads, p.group, p.blockQ, p.blockKV, p.stages);
  if (p.causal)
    name += "_causal";
  if (p.window)
    name += "_w" + std::to_string(*p.window);
  if (p.keyIsValue)
    name += "_keqv";
  if (p.keyRotated)
    name += "_krope" + std::to_string(p.keyRotated);
  if (p.queryRotated)
    name += "_qrope" + std::to_string(p.queryRotated);
  if (p.keyMaskBits)
    name += "_kmask" + std::to_string(p.keyMaskBits);
  if (p.writesLse)
    name += "_lse";
  p.name = name;
  return success();
}

FailureOr<FlashPlan>
attnfuse::sm90::planFlashAttention(FlashAttentionOp op,
                                   const TargetOptions &options) {
  FlashPlan p;
  if (failed(planAttentionShape(op, options, p)))
    return failure();
  if (op.getQueryRowOffset())
    return op.emitOpError() << "a tile of query rows ('query_rows') is not "
                               "supported by the sm_90a kernel, which tiles "
                               "the whole attention itself";
  p.writesLse = static_cast<bool>(op.getLse());
  p.queryRotated = rotatedDims(op.getQueryRopeAttr(), p.headDim);
  p.sharedRopeTable = p.queryRotated && p.keyRotated &&
                      op.getQueryRopeAttr() == op.getKeyRopeAttr();
  if (failed(planQueryTileKernel(op, p)))
    return failure();
  return p;
}

FailureOr<FlashPlan>
attnfuse::sm90::planFlashQueryGrad(FlashAttentionGradOp op,
                                   const TargetOptions &options) {
  FlashPlan p;
  p.queryGrad = true;
  if (failed(planAttentionShape(op, options, p)))
    return failure();
  // dK and dV of 64 keys in registers fit up to 128 columns each.
  if (p.headCols > 128)
    return op.emitOpError()
           << "head_dim " << p.headDim
           << " is not supported by the sm_90a backward kernels (a multiple "
              "of 16 up to 128)";
  if (!op.getLse())
    return op.emitOpError()
           << "needs the forward's log-sum-exp ('lse(...)') on sm_90a: the "
              "backward kernels do not recompute it (attn-differentiate "
              "passes it; attn.flash_attention returns it on sm_90a too)";
  if (op.getBiasGradInit())
    return op.emitOpError() << "a logit-bias gradient ('accumulate') is not "
                               "supported by the sm_90a kernels yet";
  // Rotated keys reach the kernels already rotated: the lowering runs the
  // rotation as its own kernels (splitFlashGradKeyRope) before planning.
  if (p.keyRotated)
    return op.emitOpError()
           << "key_rope reaches the sm_90a backward kernels only split into "
              "attn.rope / attn.rope_grad kernels "
              "(convert-attn-kernels-to-nvvm does that)";
  if (failed(planQueryTileKernel(op, p)))
    return failure();
  return p;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

namespace {

/// Emits the body of one flash attention kernel: a producer warpgroup (one
/// TMA thread; with key RoPE, three warps that rotate each landed key tile)
/// and `consumers` warpgroups of 64 query rows each running the online
/// softmax over the key tiles of a `TmaRing`.
class FlashEmitter {
public:
  FlashEmitter(DeviceBuilder &d, const FlashPlan &p, gpu::GPUFuncOp func)
      : d(d), p(p), func(func), ids(d),
        smem(d.alignedDynamicShared(kSharedSymbol)),
        ring(d, smem, p.barOff, p.stages) {}

  void emit();

private:
  /// The ring's barrier set of the rotated key tiles.
  static constexpr int64_t kRotated = 2;

  void readParams();
  void planWork();
  void producer();
  void rotator();
  void consumer();
  /// The dQ kernel's consumer: D of its rows, then dQ over the key tiles.
  void queryGradConsumer();
  /// The query positions of the thread's two accumulator rows (consumer
  /// `c`): the CTA's first position, the row's, and the query offset.
  void queryPositions(Value c, const AccumulatorTile &tile, Value qPos[2]) {
    for (int h = 0; h < 2; ++h)
      qPos[h] = d.add(
          d.add(s0, d.divu(d.add(d.mul(c, 64), tile.rows[h]), p.pack)), offset);
  }
  /// Row statistics of the thread's two accumulator rows (consumer `c`):
  /// their element index into `[B, S, Hq]` arrays (clamped into the rows)
  /// and whether the row is a query row.
  void rowStatIndex(Value c, const AccumulatorTile &tile, Value index[2],
                    Value valid[2]);
  /// D of the thread's two rows: the sum over the quad of dO * O.
  void rowDelta(const AccumulatorTile &tile, const Value index[2],
                Value delta[2]);
  /// Stores the rows' `values` at `index` of the f32 array `base` (one lane
  /// of each quad, query rows only).
  void storeRowStats(const AccumulatorTile &tile, Value base,
                     const Value values[2], const Value index[2],
                     const Value valid[2]);
  /// The scores of key tile `it`, masked where the tile crosses the end of
  /// the keys, the diagonal or the window edge (or any key may be padding).
  SmallVector<Value> maskScores(SmallVector<Value> scores, Value it,
                                const AccumulatorTile &tile,
                                const Value queryPos[2], Value negInf);

  // Shared-memory addresses.
  Value qSlab(Value c) { return d.sAt(smem, d.mul(c, p.qSlabBytes)); }
  Value doSlab(Value c) {
    return d.sSlot(smem, p.doOff, c, 64 * p.valueCols * 2);
  }
  Value kStage(Value s) { return d.sSlot(smem, p.kOff, s, p.kStageBytes); }
  Value vStage(Value s) {
    if (p.keyIsValue)
      return kStage(s);
    return d.sSlot(smem, p.vOff, s, p.vStageBytes);
  }
  Value scoreKeyStage(Value s) {
    if (p.rotStageBytes)
      return d.sSlot(smem, p.rotOff, s, p.rotStageBytes);
    return kStage(s);
  }
  Value qBar() {
    return d.sAt(smem, p.barOff + TmaRing::barrierBytes(p.stages, 3));
  }
  Value keyStart(Value it) { return d.mul(d.add(jlo, it), p.blockKV); }

  DeviceBuilder &d;
  const FlashPlan &p;
  gpu::GPUFuncOp func;
  WarpgroupCoords ids;
  Value smem;
  TmaRing ring;

  // Kernel parameters (tmaO stores dQ in the dQ kernel).
  Value tmaQ, tmaK, tmaV, tmaDO, tmaO, seqQ, seqKV;
  Value qCos, qSin, kCos, kSin, keyMask;
  Value lse, output, outputGrad, delta;
  // Per-CTA values.
  Value batch, h0, kvHead, s0, offset, jlo, numTiles;
};

void FlashEmitter::readParams() {
  KernelArguments args(func);
  tmaQ = args.next();
  tmaK = args.next();
  tmaV = args.nextIf(!p.keyIsValue);
  tmaDO = args.nextIf(p.queryGrad);
  tmaO = args.next();
  seqQ = args.next();
  seqKV = args.next();
  qCos = args.nextIf(p.queryRotated);
  qSin = args.nextIf(p.queryRotated);
  if (p.keyRotated) {
    if (p.sharedRopeTable) {
      kCos = qCos;
      kSin = qSin;
    } else {
      kCos = args.next();
      kSin = args.next();
    }
  }
  keyMask = args.nextIf(p.keyMaskBits);
  output = args.nextIf(p.queryGrad);
  outputGrad = args.nextIf(p.queryGrad);
  lse = args.nextIf(p.writesLse || p.queryGrad);
  delta = args.nextIf(p.queryGrad);
}

void FlashEmitter::planWork() {
  // The CTA's work: a block of positions of `pack` heads of one batch.
  Value qBlock = d.ctaid(0);
  if (p.causal) // heaviest (latest) query blocks first
    qBlock = d.sub(d.sub(d.nctaid(0), 1), qBlock);
  h0 = d.mul(d.ctaid(1), p.pack);
  kvHead = d.divu(h0, p.group);
  batch = d.ctaid(2);
  s0 = d.mul(qBlock, p.positions());
  // Query i sits at key position i + (T - S).
  offset = d.sub(seqKV, seqQ);
  Value hiKey = seqKV;
  if (p.causal)
    hiKey = d.maxs(d.mins(seqKV, d.add(d.add(s0, offset), p.positions())),
                   d.c32(0));
  Value loKey = d.c32(0);
  if (p.window)
    loKey = d.maxs(loKey, d.sub(d.add(s0, offset), d.c32(*p.window - 1)));
  jlo = d.divu(loKey, p.blockKV);
  Value jhi = d.maxs(jlo, d.ceilDivs(hiKey, p.blockKV));
  numTiles = d.sub(jhi, jlo);
}

void FlashEmitter::emit() {
  readParams();
  initializeBarriers(d, ids.tid, [&]() {
    SmallVector<int64_t> arrivals = {1, 128 * p.consumers};
    if (p.keyRotated)
      arrivals.push_back(96); // the rotating warps
    ring.initBarriers(arrivals);
    d.mbarInit(qBar(), 1);
  });
  planWork();
  warpSpecialize(
      d, ids.warpgroup, p.producerRegs, p.consumerRegs, [&]() { producer(); },
      [&]() { p.queryGrad ? queryGradConsumer() : consumer(); });
}

void FlashEmitter::producer() {
  onIssuingThread(d, ids.warpInWarpgroup, [&]() {
    // Q (and dO): one box per consumer slab and 64-column block.
    int64_t dims = p.headCols + (p.queryGrad ? p.valueCols : 0);
    d.mbarArriveExpectTx(qBar(), p.blockQ * dims * 2);
    for (int64_t c = 0; c < p.consumers; ++c) {
      SmallVector<Value> at = {h0, d.add(s0, c * (64 / p.pack)), batch};
      for (int64_t cb = 0; cb < p.headCols / 64; ++cb)
        d.tmaLoad(d.sAt(smem, p.qOff + c * p.qSlabBytes + cb * 64 * 128), tmaQ,
                  {d.c32(cb * 64), at[0], at[1], at[2]}, qBar());
      if (p.queryGrad)
        for (int64_t cb = 0; cb < p.valueCols / 64; ++cb)
          d.tmaLoad(
              d.sAt(smem, p.doOff + c * 64 * p.valueCols * 2 + cb * 64 * 128),
              tmaDO, {d.c32(cb * 64), at[0], at[1], at[2]}, qBar());
    }
    int64_t bytes = p.kStageBytes + p.vStageBytes;
    d.forLoop(
        d.c32(0), numTiles, d.c32(1), ValueRange(),
        [&](Value it, ValueRange) -> SmallVector<Value> {
          Value s = ring.acquire(it, bytes);
          Value key0 = keyStart(it);
          for (int64_t cb = 0; cb < p.headCols / 64; ++cb)
            d.tmaLoad(d.sAt(kStage(s), cb * p.blockKV * 128), tmaK,
                      {d.c32(cb * 64), kvHead, key0, batch}, ring.full(s));
          if (!p.keyIsValue)
            for (int64_t cb = 0; cb < p.valueCols / 64; ++cb)
              d.tmaLoad(d.sAt(vStage(s), cb * p.blockKV * 128), tmaV,
                        {d.c32(cb * 64), kvHead, key0, batch}, ring.full(s));
          return {};
        });
  });
  if (p.keyRotated)
    d.ifThen(d.cmp(CmpIPredicate::ne, ids.warpInWarpgroup, 0),
             [&]() { rotator(); });
}

void FlashEmitter::rotator() {
  // Warps 1-3 of the producer warpgroup: rotate each landed key tile.
  Value thread = d.sub(ids.threadInWarpgroup, d.c32(32));
  Value lastKey = d.sub(seqKV, d.c32(1));
  d.forLoop(d.c32(0), numTiles, d.c32(1), ValueRange(),
            [&](Value it, ValueRange) -> SmallVector<Value> {
              Value s = ring.wait(it);
              Value key0 = keyStart(it);
              // Rows past the last key are zero (TMA fill); clamp their
              // table row to stay in bounds.
              rotateTile(
                  d, kStage(s), scoreKeyStage(s), p.blockKV, p.headCols,
                  p.keyRotated,
                  [&](Value row) { return d.mins(d.add(key0, row), lastKey); },
                  kCos, kSin, thread, 96);
              d.fenceProxyAsync();
              d.mbarArrive(ring.barrier(kRotated, s));
              return {};
            });
}

SmallVector<Value> FlashEmitter::maskScores(SmallVector<Value> sv, Value it,
                                            const AccumulatorTile &tile,
                                            const Value queryPos[2],
                                            Value negInf) {
  int64_t kv = p.blockKV;
  Value key0 = keyStart(it);
  Value lastKeyOfTile = d.add(key0, kv - 1);
  Value firstQuery = d.add(s0, offset);
  Value lastQuery = d.add(firstQuery, p.positions() - 1);
  Value needsMask =
      d.cmp(CmpIPredicate::slt, d.sub(seqKV, d.c32(1)), lastKeyOfTile);
  if (p.causal)
    needsMask =
        d.orb(needsMask, d.cmp(CmpIPredicate::slt, firstQuery, lastKeyOfTile));
  if (p.window)
    needsMask = d.orb(needsMask, d.cmp(CmpIPredicate::slt, d.c32(*p.window - 1),
                                       d.sub(lastQuery, key0)));
  if (p.keyMaskBits) // any key may be padding
    needsMask = d.cmp(CmpIPredicate::eq, d.c32(0), d.c32(0));
  SmallVector<Type> f32s(sv.size(), d.f32);
  return d.ifThenElseValues(
      needsMask, f32s,
      [&]() {
        SmallVector<Value> masked;
        // The key mask entry of each of the thread's columns, read once for
        // both of its rows (clamped into the keys: a column past them is
        // masked anyway).
        llvm::DenseMap<int64_t, Value> real;
        if (p.keyMaskBits)
          for (size_t i = 0; i < sv.size(); ++i) {
            int64_t col = AccumulatorTile::column(i);
            if (real.count(col))
              continue;
            Value key = d.mins(d.add(d.add(key0, tile.colBase), col),
                               d.sub(seqKV, d.c32(1)));
            real[col] = d.nonZeroAt(keyMask, d.add(d.mul(batch, seqKV), key),
                                    p.keyMaskBits);
          }
        for (auto [i, v] : llvm::enumerate(sv)) {
          int64_t col = AccumulatorTile::column(i);
          Value key = d.add(d.add(key0, tile.colBase), col);
          Value q = queryPos[AccumulatorTile::half(i)];
          Value valid = d.cmp(CmpIPredicate::slt, key, seqKV);
          if (p.keyMaskBits)
            valid = d.andb(valid, real[col]);
          if (p.causal)
            valid = d.andb(valid, d.cmp(CmpIPredicate::sle, key, q));
          if (p.window)
            valid = d.andb(valid, d.cmp(CmpIPredicate::slt, d.sub(q, key),
                                        d.c32(*p.window)));
          masked.push_back(d.select(valid, v, negInf));
        }
        return masked;
      },
      [&]() { return sv; });
}

void FlashEmitter::consumer() {
  Value c = d.sub(ids.warpgroup, d.c32(1));
  AccumulatorTile tile(d, ids.warpInWarpgroup, ids.lane);
  Value qPos[2];
  queryPositions(c, tile, qPos);

  Value slab = qSlab(c);
  d.mbarWait(qBar(), d.c32(0));
  if (p.queryRotated) {
    Value lastQuery = d.sub(seqQ, d.c32(1));
    rotateTile(
        d, slab, slab, 64, p.headCols, p.queryRotated,
        [&](Value row) {
          return d.mins(d.add(s0, d.divu(d.add(d.mul(c, 64), row), p.pack)),
                        lastQuery);
        },
        qCos, qSin, ids.threadInWarpgroup, 128);
    d.fenceProxyAsync();
    consumerBarrier(d, c, p.consumers);
  }

  Value descQ = d.wgmmaDesc(d.sAddr(slab), 16, 1024);
  OnlineSoftmax softmax(d, p.scale);
  int64_t kv = p.blockKV, dv = p.valueCols;
  SmallVector<int64_t> alsoWait;
  if (p.keyRotated)
    alsoWait.push_back(kRotated);

  SmallVector<Value> init = {d.zeroAcc(dv), softmax.negInf, softmax.negInf,
                             softmax.zero, softmax.zero};
  SmallVector<Value> state = d.forLoop(
      d.c32(0), numTiles, d.c32(1), init,
      [&](Value it, ValueRange args) -> SmallVector<Value> {
        Value max[2] = {args[1], args[2]};
        Value sum[2] = {args[3], args[4]};
        Value s = ring.wait(it, alsoWait);

        // S = Q K^T: head_dim / 16 SS wgmmas, K-major operands.
        Value descK = d.wgmmaDesc(d.sAddr(scoreKeyStage(s)), 16, 1024);
        Value scores =
            mmaSharedShared(d, d.poisonAcc(kv), descQ, descK, kv, p.headCols,
                            64 * 128, kv * 128, /*accumulate=*/false);
        d.wgmmaWait(0);
        SmallVector<Value> sv =
            maskScores(d.unpack(scores, kv), it, tile, qPos, softmax.negInf);
        OnlineSoftmax::Step step = softmax.update(sv, max, sum);
        Value acc = softmax.rescale(args[0], dv, step);

        // O += P V: block_kv / 16 RS wgmmas, V MN-major (transposed B).
        Value descV = d.wgmmaDesc(d.sAddr(vStage(s)), kv * 128, 1024);
        acc = mmaRegisterShared(d, acc, packOperandA(d, step.probs), descV, dv,
                                kv, 16 * 128);
        d.wgmmaWait(0);
        ring.release(s);
        return {acc, step.max[0], step.max[1], step.sum[0], step.sum[1]};
      });

  // Epilogue: O / l (0 for a row that saw no key), staged through this
  // consumer's Q slab (its wgmmas are complete) and stored with TMA.
  Value sums[2] = {state[3], state[4]}, inverse[2];
  softmax.inverseSums(sums, inverse);
  if (p.writesLse) {
    Value maxima[2] = {state[1], state[2]}, rowLse[2], index[2], valid[2];
    softmax.logSumExp(maxima, sums, rowLse);
    rowStatIndex(c, tile, index, valid);
    storeRowStats(tile, lse, rowLse, index, valid);
  }
  stageAccumulator(d, tile, ids.lane, d.unpack(state[0], dv), slab, inverse);
  storeStagedTile(
      d, c, p.consumers, ids.threadInWarpgroup, tmaO, slab, dv / 64,
      [&](int64_t cb) -> SmallVector<Value> {
        return {d.c32(cb * 64), h0, d.add(s0, d.mul(c, 64 / p.pack)), batch};
      });
}

void FlashEmitter::rowStatIndex(Value c, const AccumulatorTile &tile,
                                Value index[2], Value valid[2]) {
  for (int h = 0; h < 2; ++h) {
    Value row = d.add(d.mul(c, 64), tile.rows[h]);
    Value position = d.add(s0, d.divu(row, p.pack));
    Value head = d.add(h0, d.remu(row, p.pack));
    valid[h] = d.cmp(CmpIPredicate::slt, position, seqQ);
    Value clamped = d.mins(position, d.sub(seqQ, d.c32(1)));
    index[h] =
        d.add(d.mul(d.add(d.mul(batch, seqQ), clamped), p.numHeads), head);
  }
}

void FlashEmitter::storeRowStats(const AccumulatorTile &tile, Value base,
                                 const Value values[2], const Value index[2],
                                 const Value valid[2]) {
  // The quad's first lane writes its rows.
  Value first = d.cmp(CmpIPredicate::eq, d.andi(ids.lane, 3), 0);
  for (int h = 0; h < 2; ++h)
    d.ifThen(d.andb(first, valid[h]),
             [&]() { d.store(values[h], d.gAt(base, index[h], d.f32), 4); });
}

void FlashEmitter::rowDelta(const AccumulatorTile &tile, const Value index[2],
                            Value delta[2]) {
  Type pair = d.vec(d.elemType, 2), pairF32 = d.vec(d.f32, 2);
  int64_t dv = p.valueDim;
  for (int h = 0; h < 2; ++h) {
    Value rowBase =
        arith::MulIOp::create(d.b, d.loc, d.ext64(index[h]), d.c64(dv));
    SmallVector<Value> terms;
    // The thread's column pairs of an m64 x dv accumulator row.
    for (int64_t i = 2 * h; i < dv / 2; i += 4) {
      Value col = d.ext64(d.add(tile.colBase, AccumulatorTile::column(i)));
      Value at = arith::AddIOp::create(d.b, d.loc, rowBase, col);
      auto read = [&](Value base) {
        return arith::ExtFOp::create(
            d.b, d.loc, pairF32, d.load(pair, d.gAt(base, at, d.elemType), 4));
      };
      Value o = read(output), dO = read(outputGrad);
      Value product = arith::MulFOp::create(d.b, d.loc, o, dO);
      for (int64_t k = 0; k < 2; ++k)
        terms.push_back(
            LLVM::ExtractElementOp::create(d.b, d.loc, product, d.c32(k)));
    }
    auto sumOf = [&](Value a, Value b) { return d.addf(a, b); };
    delta[h] = quadReduce(d, treeReduce(d, terms, sumOf), sumOf);
  }
}

void FlashEmitter::queryGradConsumer() {
  Value c = d.sub(ids.warpgroup, d.c32(1));
  AccumulatorTile tile(d, ids.warpInWarpgroup, ids.lane);
  Value qPos[2];
  queryPositions(c, tile, qPos);

  // D and the log2-domain probability offset of the thread's rows; D goes
  // to the workspace for the dK/dV kernel.
  OnlineSoftmax softmax(d, p.scale);
  Value index[2], valid[2], rowD[2], offsetLog2[2];
  rowStatIndex(c, tile, index, valid);
  rowDelta(tile, index, rowD);
  storeRowStats(tile, delta, rowD, index, valid);
  for (int h = 0; h < 2; ++h)
    offsetLog2[h] = softmax.probabilityOffset(
        d.load(d.f32, d.gAt(lse, index[h], d.f32), 4));

  Value slab = qSlab(c);
  d.mbarWait(qBar(), d.c32(0));
  Value descQ = d.wgmmaDesc(d.sAddr(slab), 16, 1024);
  Value descDO = d.wgmmaDesc(d.sAddr(doSlab(c)), 16, 1024);
  int64_t kv = p.blockKV, dh = p.headCols, dv = p.valueCols;
  SmallVector<Value> init = {d.zeroAcc(dh)};
  SmallVector<Value> state = d.forLoop(
      d.c32(0), numTiles, d.c32(1), init,
      [&](Value it, ValueRange args) -> SmallVector<Value> {
        Value s = ring.wait(it);
        // S = Q K^T and dP = dO V^T: SS wgmmas, K-major operands.
        Value scores =
            mmaSharedShared(d, d.poisonAcc(kv), descQ,
                            d.wgmmaDesc(d.sAddr(kStage(s)), 16, 1024), kv, dh,
                            64 * 128, kv * 128, /*accumulate=*/false);
        Value dP =
            mmaSharedShared(d, d.poisonAcc(kv), descDO,
                            d.wgmmaDesc(d.sAddr(vStage(s)), 16, 1024), kv, dv,
                            64 * 128, kv * 128, /*accumulate=*/false);
        d.wgmmaWait(0);
        SmallVector<Value> sv =
            maskScores(d.unpack(scores, kv), it, tile, qPos, softmax.negInf);
        SmallVector<Value> dpv = d.unpack(dP, kv), dS;
        // dS = P (dP - D), P = exp2(s scale log2(e) - lse log2(e)).
        for (auto [i, v] : llvm::enumerate(sv)) {
          int64_t h = AccumulatorTile::half(i);
          Value prob =
              d.exp2(d.fma(v, softmax.scaleLog2,
                           arith::NegFOp::create(d.b, d.loc, offsetLog2[h])));
          dS.push_back(d.mulf(prob, d.subf(dpv[i], rowD[h])));
        }
        // dQ += dS K: RS wgmmas, K MN-major (transposed B).
        Value descK = d.wgmmaDesc(d.sAddr(kStage(s)), kv * 128, 1024);
        Value acc = mmaRegisterShared(d, args[0], packOperandA(d, dS), descK,
                                      dh, kv, 16 * 128);
        d.wgmmaWait(0);
        ring.release(s);
        return {acc};
      });

  // Epilogue: scale dQ, staged through this consumer's Q slab.
  Value scale = d.cf(p.scale);
  Value rowScale[2] = {scale, scale};
  stageAccumulator(d, tile, ids.lane, d.unpack(state[0], dh), slab, rowScale);
  storeStagedTile(
      d, c, p.consumers, ids.threadInWarpgroup, tmaO, slab, dh / 64,
      [&](int64_t cb) -> SmallVector<Value> {
        return {d.c32(cb * 64), h0, d.add(s0, d.mul(c, 64 / p.pack)), batch};
      });
}

} // namespace

void attnfuse::sm90::buildFlashAttentionKernel(OpBuilder &b, Location loc,
                                               gpu::GPUModuleOp module,
                                               const FlashPlan &p) {
  KernelSignature signature(b.getContext());
  signature.tma(2)
      .tma(1, !p.keyIsValue)
      .tma(1, p.queryGrad) // dO
      .tma()
      .scalar(2)
      .pointer(2, p.queryRotated)
      .pointer(2, p.keyRotated && !p.sharedRopeTable)
      .pointer(1, p.keyMaskBits)
      .pointer(2, p.queryGrad) // O, dO
      .pointer(1, p.writesLse || p.queryGrad)
      .pointer(1, p.queryGrad); // delta
  KernelBody body(b, loc, module, p.name, signature, p.threads,
                  p.minBlocksPerSM, p.elem);
  FlashEmitter(body.d, p, body.func).emit();
  gpu::ReturnOp::create(b, loc);
}

//===----------------------------------------------------------------------===//
// Host-side description
//===----------------------------------------------------------------------===//

attn::KernelTensorAttr
attnfuse::sm90::attentionTensor(MLIRContext *ctx, ElemKind elem, StringRef name,
                                StringRef role, int64_t operand, int64_t heads,
                                int64_t dim, StringRef seq) {
  return describeTensor(ctx, name, role, operand, elemName(elem),
                        {strAttr(ctx, "B"), strAttr(ctx, seq),
                         intAttr(ctx, heads), intAttr(ctx, dim)},
                        {scaled(ctx, heads * dim, seq),
                         intAttr(ctx, heads * dim), intAttr(ctx, dim),
                         intAttr(ctx, 1)},
                        "row-major [batch, seq, heads, dim], contiguous");
}

DictionaryAttr attnfuse::sm90::attentionTma(MLIRContext *ctx, ElemKind elem,
                                            StringRef param, StringRef tensor,
                                            int64_t heads, int64_t dim,
                                            StringRef seq,
                                            ArrayRef<int64_t> box,
                                            StringRef role) {
  TmaInfo t;
  t.param = param.str();
  t.tensor = tensor.str();
  t.role = role.str();
  t.globalDim = {intAttr(ctx, dim), intAttr(ctx, heads), strAttr(ctx, seq),
                 strAttr(ctx, "B")};
  t.globalStridesBytes = {intAttr(ctx, dim * 2), intAttr(ctx, heads * dim * 2),
                          scaled(ctx, heads * dim * 2, seq)};
  t.boxDim = llvm::to_vector(box);
  return describeTma(ctx, t, elem);
}

attn::KernelTensorAttr
attnfuse::sm90::rowStatTensor(MLIRContext *ctx, StringRef name, StringRef role,
                              int64_t operand, int64_t heads) {
  return describeTensor(
      ctx, name, role, operand, "f32",
      {strAttr(ctx, "B"), strAttr(ctx, "S"), intAttr(ctx, heads)},
      {scaled(ctx, heads, "S"), intAttr(ctx, heads), intAttr(ctx, 1)},
      "row-major [batch, seq, heads], contiguous");
}

void attnfuse::sm90::describeKeyMask(MLIRContext *ctx, int64_t operand,
                                     int64_t bits,
                                     SmallVectorImpl<Attribute> &tensors,
                                     SmallVectorImpl<Attribute> &params) {
  StringRef maskType = bits == 64 ? "i64" : "i32";
  tensors.push_back(
      describeTensor(ctx, "key_mask",
                     "key mask: key j of sequence b is attended to only where "
                     "key_mask[b, j] != 0 (padding)",
                     operand, maskType, {strAttr(ctx, "B"), strAttr(ctx, "T")},
                     {strAttr(ctx, "T"), intAttr(ctx, 1)},
                     "row-major [batch, seq], contiguous"));
  params.push_back(
      describeParam(ctx, "key_mask", "pointer", maskType, "key_mask"));
}

SmallVector<Attribute> attnfuse::sm90::queryTileGrid(MLIRContext *ctx,
                                                     const FlashPlan &p) {
  return {gridCeilDiv(ctx, "S", p.positions()),
          gridConstant(ctx, p.numHeads / p.pack), gridCeilDiv(ctx, "B", 1)};
}

DictBuilder attnfuse::sm90::queryTileConfig(MLIRContext *ctx,
                                            const FlashPlan &p) {
  DictBuilder config = attentionConfig(ctx, p);
  config.set("head_columns", p.headCols)
      .set("heads_per_cta", p.pack)
      .set("block_q_rows", p.blockQ)
      .set("block_q_positions", p.positions())
      .set("block_kv", p.blockKV)
      .set("stages", p.stages)
      .set("consumer_warpgroups", p.consumers)
      .set("producer_registers", p.producerRegs)
      .set("consumer_registers", p.consumerRegs)
      .set("min_blocks_per_sm", p.minBlocksPerSM)
      .setBool("causal", p.causal)
      .set("key_mask_bits", p.keyMaskBits);
  return config;
}

DictBuilder attnfuse::sm90::attentionConfig(MLIRContext *ctx,
                                            const AttentionConfig &c) {
  DictBuilder config(ctx);
  config.set("elem_type", elemName(c.elem))
      .set("head_dim", c.headDim)
      .set("value_dim", c.valueDim)
      .set("num_heads", c.numHeads)
      .set("num_kv_heads", c.numKvHeads)
      .set("group", c.group)
      .setBool("key_is_value", c.keyIsValue)
      .set("scale", c.scale)
      .set("query_rope_dims", c.queryRotated)
      .set("key_rope_dims", c.keyRotated);
  if (c.window)
    config.set("window", *c.window);
  return config;
}

void attnfuse::sm90::describeQueryTileLoads(
    MLIRContext *ctx, const FlashPlan &p, SmallVectorImpl<Attribute> &tmas,
    SmallVectorImpl<Attribute> &params) {
  SmallVector<int64_t> qBox = {64, p.pack, 64 / p.pack, 1};
  SmallVector<int64_t> kvBox = {64, 1, p.blockKV, 1};
  int64_t hq = p.numHeads, hk = p.numKvHeads;
  tmas.push_back(attentionTma(ctx, p.elem, "tma_q", "query", hq, p.headDim, "S",
                              qBox, "load"));
  tmas.push_back(attentionTma(ctx, p.elem, "tma_k", "key", hk, p.headDim, "T",
                              kvBox, "load"));
  if (!p.keyIsValue)
    tmas.push_back(attentionTma(ctx, p.elem, "tma_v", "value", hk, p.valueDim,
                                "T", kvBox, "load"));
  for (StringRef name : {"tma_q", "tma_k", "tma_v"})
    if (name != "tma_v" || !p.keyIsValue)
      params.push_back(describeParam(ctx, name, "tma_descriptor", name, ""));
}

attn::KernelLaunchAttr
attnfuse::sm90::describeFlashAttention(MLIRContext *ctx, FlashAttentionOp op,
                                       const FlashPlan &p) {
  int64_t d = p.headDim, dv = p.valueDim, hq = p.numHeads, hk = p.numKvHeads;
  SmallVector<Attribute> tensors;
  tensors.push_back(
      attentionTensor(ctx, p.elem, "query", "query", 0, hq, d, "S"));
  tensors.push_back(attentionTensor(
      ctx, p.elem, "key", p.keyIsValue ? "key and value (K=V)" : "key", 1, hk,
      d, "T"));
  if (!p.keyIsValue)
    tensors.push_back(
        attentionTensor(ctx, p.elem, "value", "value", 2, hk, dv, "T"));
  tensors.push_back(
      attentionTensor(ctx, p.elem, "output", "result", -1, hq, dv, "S"));

  SmallVector<Attribute> tmas, params;
  describeQueryTileLoads(ctx, p, tmas, params);
  SmallVector<int64_t> qBox = {64, p.pack, 64 / p.pack, 1};
  tmas.push_back(
      attentionTma(ctx, p.elem, "tma_o", "output", hq, dv, "S", qBox, "store"));
  params.push_back(describeParam(ctx, "tma_o", "tma_descriptor", "tma_o", ""));
  params.push_back(describeParam(ctx, "seq_q", "scalar", "i32", "S"));
  params.push_back(describeParam(ctx, "seq_kv", "scalar", "i32", "T"));
  SmallVector<Attribute> tables;
  auto ropeTable = [&](StringRef prefix, RopeAttr rope, int64_t rotated,
                       StringRef positions) {
    describeRopeTables(ctx, prefix, rope.getThetaValue(), rotated, positions,
                       params, tables);
  };
  if (p.queryRotated)
    ropeTable(p.sharedRopeTable ? "rope" : "rope_q", op.getQueryRopeAttr(),
              p.queryRotated, p.sharedRopeTable ? "max(S,T)" : "S");
  if (p.keyRotated && !p.sharedRopeTable)
    ropeTable("rope_k", op.getKeyRopeAttr(), p.keyRotated, "T");
  // key_mask is ODS operand 4 (after query, key, value, bias).
  if (p.keyMaskBits)
    describeKeyMask(
        ctx, static_cast<int64_t>(op.getODSOperandIndexAndLength(4).first),
        p.keyMaskBits, tensors, params);
  if (p.writesLse) {
    tensors.push_back(
        rowStatTensor(ctx, "lse",
                      "result: each row's log-sum-exp of its scaled scores "
                      "(-inf without a visible key)",
                      -1, hq));
    params.push_back(describeParam(ctx, "lse", "pointer", "f32", "lse"));
  }

  SmallVector<Attribute> grid = queryTileGrid(ctx, p);
  DictBuilder config = queryTileConfig(ctx, p);
  config.set("pv_operand_a", "registers (RS wgmma, inline PTX)");
  if (p.writesLse)
    config.setBool("writes_lse", true);

  return describeLaunch(
      ctx,
      {p.name, "flash_attention", "B = batch, S = query length, T = key length",
       p.threads, p.sharedBytes},
      {grid, params, tensors, tmas, tables}, config.get(), {p.hostCastFromF32});
}
