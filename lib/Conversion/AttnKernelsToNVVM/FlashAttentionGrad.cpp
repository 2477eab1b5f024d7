//===- FlashAttentionGrad.cpp - flash attention backward --------*- C++ -*-===//
//-*-===//
//
// The backward of the flash attention kernel as two warp-specialized
// kernels (the FlashAttention-2/3 split of the work, without atomics):
//
// 1. The dQ kernel (FlashAttention.cpp, `FlashPlan::queryGrad`): the
//    forward's query-tile CTA. Each consumer first computes
//    D_i = rowsum(dO_i * O_i) of its rows and writes it to the f32 workspace
//    `delta [B, S, Hq]`, then, per key tile, S = Q K^T and dP = dO V^T (SS
//    wgmma), P = exp2(S scale log2(e) - lse log2(e)), dS = P (dP - D), and
//    dQ += dS K (RS wgmma, K MN-major). dQ = scale * that, stored with TMA.
// 2. The dK/dV kernel (this file): one CTA per (block of 64 * consumers
//    keys, KV head, batch). The producer loads the CTA's K (and V) slabs
//    once, then streams the Q and dO tiles (64 rows: `pack` heads of
//    64 / pack positions, as the forward packs GQA heads) of every query
//    head of the group and every query block that sees the keys through a
//    TMA ring. Each consumer owns 64 keys and computes, transposed so that
//    the keys are the accumulator rows,
//      S^T = K Q^T, dP^T = V dO^T                      (SS wgmma)
//      P^T = exp2(S^T scale log2(e) - lse log2(e)), masked to 0
//      dS^T = scale P^T (dP^T - D)
//      dV += P^T dO, dK += dS^T Q                       (RS wgmma, MN-major B)
//    so that P^T and dS^T go from accumulators to A fragments in registers
//    and dK, dV never leave the registers until the epilogue. K=V: the one
//    accumulator takes both products (dKV = dK + dV). GQA sums over the
//    group's heads in the same accumulators.
//
// The lse and D of a tile's 64 columns (query rows) are loaded while the
// tile products run, one value per consumer thread, and shared through a
// small shared-memory buffer (stageRowStats). Every tile is masked (causal,
// window, the end of the keys and queries, the key mask): a masked entry
// contributes 0.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "Kernels.h"
#include "OnlineSoftmax.h"
#include "Pipeline.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;
using arith::CmpIPredicate;

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

std::string FlashGradPlan::key() const {
  return query.key() + llvm::formatv(":kv:{0}", consumers).str();
}

FailureOr<FlashGradPlan>
attnfuse::sm90::planFlashAttentionGrad(FlashAttentionGradOp op,
                                       const TargetOptions &options) {
  FailureOr<FlashPlan> query = planFlashQueryGrad(op, options);
  if (failed(query))
    return failure();
  FlashGradPlan p;
  p.query = *query;
  const FlashPlan &q = p.query;
  // Two consumer warpgroups of 64 keys: dK and dV (64 + 64 f32 per thread
  // at head dim 128) and the S^T and dP^T tiles (32 + 32) fit under
  // setmaxnreg 240 with what little else stays live through the loop: the
  // row statistics come from shared memory as each column needs them, and
  // the consumer index is warp-uniform, so the shared-memory descriptors
  // derived from it live in uniform registers.
  p.consumers = 2;
  p.threads = 128 * (1 + p.consumers);
  p.minBlocksPerSM = 1;
  p.producerRegs = 24;
  int64_t cap;
  splitRegisters(p.consumers, p.minBlocksPerSM, p.producerRegs, cap,
                 p.consumerRegs);
  p.kSlabBytes = 64 * q.headCols * 2;
  p.vSlabBytes = q.keyIsValue ? 0 : 64 * q.valueCols * 2;
  p.qStageBytes = 64 * q.headCols * 2;
  p.doStageBytes = 64 * q.valueCols * 2;
  p.kOff = 0;
  p.vOff = p.kOff + p.consumers * p.kSlabBytes;
  p.qOff = p.vOff + p.consumers * p.vSlabBytes;
  p.doOff = p.qOff + q.stages * p.qStageBytes;
  p.statsOff = p.doOff + q.stages * p.doStageBytes;
  p.barOff = p.statsOff + p.consumers * 2 * FlashGradPlan::kRowStatsBytes;
  // Full and empty barriers per stage, the K/V barrier; 1 KiB slack.
  p.sharedBytes = p.barOff + TmaRing::barrierBytes(q.stages, 2) + 8 + 1024;
  if (p.sharedBytes > kMaxDynamicSharedBytes)
    return op.emitOpError()
           << "the sm_90a dK/dV kernel needs " << p.sharedBytes
           << " bytes of shared memory (" << q.stages
           << " stages), more than the " << kMaxDynamicSharedBytes
           << " available; lower stages";
  std::string name = llvm::formatv("attn_fa_dkv_{0}_d{1}_h{2}_g{3}_k{4}_s{5}",
                                   elemName(q.elem), q.headDim, q.numHeads,
                                   q.group, p.blockKeys(), q.stages);
  if (q.causal)
    name += "_causal";
  if (q.window)
    name += "_w" + std::to_string(*q.window);
  if (q.keyIsValue)
    name += "_keqv";
  if (q.keyMaskBits)
    name += "_kmask" + std::to_string(q.keyMaskBits);
  p.name = name;
  return p;
}

//===----------------------------------------------------------------------===//
// The dK/dV kernel
//===----------------------------------------------------------------------===//

namespace {

class KeyValueGradEmitter {
public:
  KeyValueGradEmitter(DeviceBuilder &d, const FlashGradPlan &p,
                      gpu::GPUFuncOp func)
      : d(d), p(p), q(p.query), func(func), ids(d),
        smem(d.alignedDynamicShared(kSharedSymbol)),
        ring(d, smem, p.barOff, q.stages) {}

  void emit();

private:
  void readParams();
  void planWork();
  /// The head pack and first query position of ring iteration `it`.
  void tileOf(Value it, Value &firstHead, Value &firstPosition);
  void producer();
  void consumer();
  /// Stages the lse (as the probability offset) and D of ring iteration
  /// `it`'s 64 columns in consumer `c`'s shared buffer, one value per
  /// thread; returns the buffer. Double-buffered by the iteration's parity,
  /// so the one barrier after the stores also orders the previous
  /// iteration's reads before the next overwrite.
  Value stageRowStats(Value c, Value it, Value head, Value position);

  Value kSlab(Value c) { return d.sAt(smem, d.mul(c, p.kSlabBytes)); }
  Value vSlab(Value c) {
    if (q.keyIsValue)
      return kSlab(c);
    return d.sSlot(smem, p.vOff, c, p.vSlabBytes);
  }
  Value qStage(Value s) { return d.sSlot(smem, p.qOff, s, p.qStageBytes); }
  Value doStage(Value s) { return d.sSlot(smem, p.doOff, s, p.doStageBytes); }
  Value kvBar() {
    return d.sAt(smem, p.barOff + TmaRing::barrierBytes(q.stages, 2));
  }

  DeviceBuilder &d;
  const FlashGradPlan &p;
  const FlashPlan &q;
  gpu::GPUFuncOp func;
  WarpgroupCoords ids;
  Value smem;
  TmaRing ring;

  Value tmaQ, tmaK, tmaV, tmaDO, tmaDK, tmaDV, seqQ, seqKV;
  Value keyMask, lse, delta;
  Value batch, kvHead, k0, offset, firstBlock, blocksPerPack, numTiles;
};

void KeyValueGradEmitter::readParams() {
  KernelArguments args(func);
  tmaQ = args.next();
  tmaK = args.next();
  tmaV = args.nextIf(!q.keyIsValue);
  tmaDO = args.next();
  tmaDK = args.next();
  tmaDV = args.nextIf(!q.keyIsValue);
  seqQ = args.next();
  seqKV = args.next();
  keyMask = args.nextIf(q.keyMaskBits);
  lse = args.next();
  delta = args.next();
}

void KeyValueGradEmitter::planWork() {
  int64_t positions = 64 / q.pack; // query positions per tile
  k0 = d.mul(d.ctaid(0), p.blockKeys());
  kvHead = d.ctaid(1);
  batch = d.ctaid(2);
  // Query i sits at key position i + (T - S): it sees key j when
  // j <= i + offset (causal) and i + offset - j < window.
  offset = d.sub(seqKV, seqQ);
  Value loQuery = d.c32(0);
  if (q.causal)
    loQuery = d.maxs(loQuery, d.sub(k0, offset));
  Value hiQuery = seqQ;
  if (q.window)
    hiQuery =
        d.mins(hiQuery, d.maxs(d.c32(0), d.add(d.sub(k0, offset),
                                               p.blockKeys() - 1 + *q.window)));
  firstBlock = d.divu(loQuery, positions);
  Value lastBlock = d.maxs(firstBlock, d.ceilDivs(hiQuery, positions));
  blocksPerPack = d.sub(lastBlock, firstBlock);
  numTiles = d.mul(blocksPerPack, q.group / q.pack);
}

void KeyValueGradEmitter::tileOf(Value it, Value &firstHead,
                                 Value &firstPosition) {
  Value pack = d.divs(it, blocksPerPack);
  Value block = d.add(firstBlock, d.sub(it, d.mul(pack, blocksPerPack)));
  firstHead = d.add(d.mul(kvHead, q.group), d.mul(pack, q.pack));
  firstPosition = d.mul(block, 64 / q.pack);
}

void KeyValueGradEmitter::emit() {
  readParams();
  initializeBarriers(d, ids.tid, [&]() {
    ring.initBarriers({1, 128 * p.consumers});
    d.mbarInit(kvBar(), 1);
  });
  planWork();
  warpSpecialize(
      d, ids.warpgroup, p.producerRegs, p.consumerRegs, [&]() { producer(); },
      [&]() { consumer(); });
}

Value KeyValueGradEmitter::stageRowStats(Value c, Value it, Value head,
                                         Value position) {
  Value buffer = d.sAt(
      smem, d.add(d.add(d.mul(c, 2 * FlashGradPlan::kRowStatsBytes),
                        d.mul(d.andi(it, 1), FlashGradPlan::kRowStatsBytes)),
                  p.statsOff));
  Value t = ids.threadInWarpgroup;
  Value m = d.andi(t, 63);
  Value isDelta = d.cmp(CmpIPredicate::uge, t, d.c32(64));
  Value query = d.add(position, d.divu(m, q.pack));
  Value lastQuery = d.sub(seqQ, d.c32(1));
  Value index = d.add(
      d.mul(d.add(d.mul(batch, seqQ), d.mins(query, lastQuery)), q.numHeads),
      d.add(head, d.remu(m, q.pack)));
  Value value =
      d.load(d.f32, d.gAt(d.select(isDelta, delta, lse), index, d.f32), 4);
  // A column past the queries gets an infinite offset: its probabilities
  // are exp2(-inf) = 0, so the consumer needs no per-column bound.
  OnlineSoftmax softmax(d, q.scale);
  Value probOffset = d.select(d.cmp(CmpIPredicate::sle, query, lastQuery),
                              softmax.probabilityOffset(value),
                              d.cf(std::numeric_limits<float>::infinity()));
  value = d.select(isDelta, value, probOffset);
  d.store(value, d.sAt(buffer, d.mul(t, 4)), 4);
  return buffer;
}

void KeyValueGradEmitter::producer() {
  onIssuingThread(d, ids.warpInWarpgroup, [&]() {
    // The CTA's keys (and values): one box per consumer slab and block.
    d.mbarArriveExpectTx(kvBar(), p.consumers * (p.kSlabBytes + p.vSlabBytes));
    for (int64_t c = 0; c < p.consumers; ++c) {
      Value key0 = d.add(k0, c * 64);
      for (int64_t cb = 0; cb < q.headCols / 64; ++cb)
        d.tmaLoad(d.sAt(smem, p.kOff + c * p.kSlabBytes + cb * 64 * 128), tmaK,
                  {d.c32(cb * 64), kvHead, key0, batch}, kvBar());
      if (!q.keyIsValue)
        for (int64_t cb = 0; cb < q.valueCols / 64; ++cb)
          d.tmaLoad(d.sAt(smem, p.vOff + c * p.vSlabBytes + cb * 64 * 128),
                    tmaV, {d.c32(cb * 64), kvHead, key0, batch}, kvBar());
    }
    d.forLoop(
        d.c32(0), numTiles, d.c32(1), ValueRange(),
        [&](Value it, ValueRange) -> SmallVector<Value> {
          Value s = ring.acquire(it, p.qStageBytes + p.doStageBytes);
          Value head, position;
          tileOf(it, head, position);
          for (int64_t cb = 0; cb < q.headCols / 64; ++cb)
            d.tmaLoad(d.sAt(qStage(s), cb * 64 * 128), tmaQ,
                      {d.c32(cb * 64), head, position, batch}, ring.full(s));
          for (int64_t cb = 0; cb < q.valueCols / 64; ++cb)
            d.tmaLoad(d.sAt(doStage(s), cb * 64 * 128), tmaDO,
                      {d.c32(cb * 64), head, position, batch}, ring.full(s));
          return {};
        });
  });
}

void KeyValueGradEmitter::consumer() {
  Value c = d.warpUniform(d.sub(ids.warpgroup, d.c32(1)));
  AccumulatorTile tile(d, ids.warpInWarpgroup, ids.lane);
  OnlineSoftmax softmax(d, q.scale);
  // Shared-memory columns: the zero-filled ones add nothing and the stores
  // clip them.
  int64_t dh = q.headCols, dv = q.valueCols;
  Value lastKey = d.sub(seqKV, d.c32(1));

  // The thread's two keys (accumulator rows) and whether each is real.
  Value key[2], keyReal[2];
  for (int h = 0; h < 2; ++h) {
    key[h] = d.add(d.add(k0, d.mul(c, 64)), tile.rows[h]);
    keyReal[h] = d.cmp(CmpIPredicate::sle, key[h], lastKey);
    if (q.keyMaskBits)
      keyReal[h] = d.andb(
          keyReal[h],
          d.nonZeroAt(keyMask,
                      d.add(d.mul(batch, seqKV), d.mins(key[h], lastKey)),
                      q.keyMaskBits));
  }

  d.mbarWait(kvBar(), d.c32(0));
  Value descK = d.wgmmaDesc(d.sAddr(kSlab(c)), 16, 1024);
  Value descV = d.wgmmaDesc(d.sAddr(vSlab(c)), 16, 1024);
  SmallVector<Value> init = {d.zeroAcc(dh)};
  if (!q.keyIsValue)
    init.push_back(d.zeroAcc(dv));
  SmallVector<Value> state = d.forLoop(
      d.c32(0), numTiles, d.c32(1), init,
      [&](Value it, ValueRange args) -> SmallVector<Value> {
        Value s = ring.wait(it);
        Value descQ = d.wgmmaDesc(d.sAddr(qStage(s)), 16, 1024);
        Value descDO = d.wgmmaDesc(d.sAddr(doStage(s)), 16, 1024);
        Value scoresT =
            mmaSharedShared(d, d.poisonAcc(64), descK, descQ, 64, dh, 64 * 128,
                            64 * 128, /*accumulate=*/false);
        Value dPT = mmaSharedShared(d, d.poisonAcc(64), descV, descDO, 64, dv,
                                    64 * 128, 64 * 128, /*accumulate=*/false);

        Value head, position;
        tileOf(it, head, position);
        Value stats = stageRowStats(c, it, head, position);
        consumerBarrier(d, c, p.consumers);
        d.wgmmaWait(0);

        SmallVector<Value> st = d.unpack(scoresT, 64), dpt = d.unpack(dPT, 64);
        SmallVector<Value> probs, dS;
        Value scale = d.cf(q.scale);
        // The state of each of the thread's 16 columns, made where the
        // column's first value needs it: values 4j..4j+3 hold columns
        // 8j + {0, 1} of both rows, so each column's state lives briefly.
        llvm::DenseMap<int64_t, Value> queryOf, offsetOf, deltaOf;
        auto readColumn = [&](int64_t col) {
          if (offsetOf.count(col))
            return;
          Value m = d.add(tile.colBase, col);
          if (q.causal || q.window) // the query as a key position
            queryOf[col] = d.add(d.add(position, d.divu(m, q.pack)), offset);
          offsetOf[col] = d.load(d.f32, d.sAt(stats, d.mul(m, 4)), 4);
          deltaOf[col] =
              d.load(d.f32, d.sAt(stats, d.add(d.mul(m, 4), 64 * 4)), 4);
        };
        for (size_t i = 0; i < st.size(); ++i) {
          int64_t h = AccumulatorTile::half(i),
                  col = AccumulatorTile::column(i);
          readColumn(col);
          Value visible = keyReal[h];
          if (q.causal)
            visible = d.andb(visible,
                             d.cmp(CmpIPredicate::sle, key[h], queryOf[col]));
          if (q.window)
            visible = d.andb(visible, d.cmp(CmpIPredicate::slt,
                                            d.sub(queryOf[col], key[h]),
                                            d.c32(*q.window)));
          Value prob =
              d.exp2(d.fma(st[i], softmax.scaleLog2,
                           arith::NegFOp::create(d.b, d.loc, offsetOf[col])));
          prob = d.select(visible, prob, softmax.zero);
          probs.push_back(prob);
          dS.push_back(
              d.mulf(d.mulf(prob, d.subf(dpt[i], deltaOf[col])), scale));
        }
        // dV += P^T dO and dK += dS^T Q: the stage tiles as MN-major B.
        Value descDOmn = d.wgmmaDesc(d.sAddr(doStage(s)), 64 * 128, 1024);
        Value descQmn = d.wgmmaDesc(d.sAddr(qStage(s)), 64 * 128, 1024);
        Value dK = args[0];
        Value dV = q.keyIsValue ? args[0] : args[1];
        dV = mmaRegisterShared(d, dV, packOperandA(d, probs), descDOmn, dv, 64,
                               16 * 128);
        if (q.keyIsValue)
          dK = dV;
        dK = mmaRegisterShared(d, dK, packOperandA(d, dS), descQmn, dh, 64,
                               16 * 128);
        d.wgmmaWait(0);
        ring.release(s);
        if (q.keyIsValue)
          return {dK};
        return {dK, dV};
      });

  // Epilogue: dK (dKV) through this consumer's K slab, dV through its V
  // slab, each stored with TMA (rows past the keys are clipped).
  auto store = [&](Value acc, int64_t dim, Value slab, Value desc) {
    stageAccumulator(d, tile, ids.lane, d.unpack(acc, dim), slab);
    storeStagedTile(
        d, c, p.consumers, ids.threadInWarpgroup, desc, slab, dim / 64,
        [&](int64_t cb) -> SmallVector<Value> {
          return {d.c32(cb * 64), kvHead, d.add(k0, d.mul(c, 64)), batch};
        });
  };
  store(state[0], dh, kSlab(c), tmaDK);
  if (!q.keyIsValue)
    store(state[1], dv, vSlab(c), tmaDV);
}

} // namespace

void attnfuse::sm90::buildFlashKeyValueGradKernel(OpBuilder &b, Location loc,
                                                  gpu::GPUModuleOp module,
                                                  const FlashGradPlan &p) {
  bool keqv = p.query.keyIsValue;
  KernelSignature signature(b.getContext());
  signature.tma(2)
      .tma(1, !keqv) // q, k, [v]
      .tma(2)
      .tma(1, !keqv) // do, dk, [dv]
      .scalar(2)
      .pointer(1, p.query.keyMaskBits)
      .pointer(2); // lse, delta
  KernelBody body(b, loc, module, p.name, signature, p.threads,
                  p.minBlocksPerSM, p.query.elem);
  KeyValueGradEmitter(body.d, p, body.func).emit();
  gpu::ReturnOp::create(b, loc);
}

//===----------------------------------------------------------------------===//
// Host-side descriptions
//===----------------------------------------------------------------------===//

namespace {

/// The operands both kernels read, numbered as their calls pass them.
struct GradTensors {
  GradTensors(MLIRContext *ctx, const FlashPlan &p, bool withOutput)
      : ctx(ctx), p(p) {
    int64_t hq = p.numHeads, hk = p.numKvHeads;
    add(attentionTensor(ctx, p.elem, "query", "query", next++, hq, p.headDim,
                        "S"));
    add(attentionTensor(ctx, p.elem, "key",
                        p.keyIsValue ? "key and value (K=V)" : "key", next++,
                        hk, p.headDim, "T"));
    if (!p.keyIsValue)
      add(attentionTensor(ctx, p.elem, "value", "value", next++, hk, p.valueDim,
                          "T"));
    if (withOutput)
      add(attentionTensor(ctx, p.elem, "output", "the forward's output", next++,
                          hq, p.valueDim, "S"));
    add(attentionTensor(ctx, p.elem, "output_grad", "cotangent of the output",
                        next++, hq, p.valueDim, "S"));
  }
  void add(Attribute tensor) { tensors.push_back(tensor); }
  /// The key mask, the lse (and, for the dK/dV kernel, delta) operands.
  void rowStats(bool withDelta) {
    if (p.keyMaskBits)
      describeKeyMask(ctx, next++, p.keyMaskBits, tensors, pointers);
    add(rowStatTensor(ctx, "lse", "the forward's log-sum-exp", next++,
                      p.numHeads));
    pointers.push_back(describeParam(ctx, "lse", "pointer", "f32", "lse"));
    if (withDelta) {
      add(rowStatTensor(ctx, "delta",
                        "workspace: D = rowsum(dO * O), from the dQ kernel",
                        next++, p.numHeads));
      pointers.push_back(
          describeParam(ctx, "delta", "pointer", "f32", "delta"));
    }
  }

  MLIRContext *ctx;
  const FlashPlan &p;
  int64_t next = 0;
  SmallVector<Attribute> tensors, pointers;
};

constexpr StringLiteral kGradSymbols =
    "B = batch, S = query length, T = key length";

} // namespace

attn::KernelLaunchAttr attnfuse::sm90::describeFlashQueryGrad(
    MLIRContext *ctx, FlashAttentionGradOp op, const FlashGradPlan &plan) {
  const FlashPlan &p = plan.query;
  int64_t hq = p.numHeads, dh = p.headDim, dv = p.valueDim;
  GradTensors t(ctx, p, /*withOutput=*/true);
  t.rowStats(/*withDelta=*/false);
  t.add(attentionTensor(ctx, p.elem, "query_grad", "result", -1, hq, dh, "S"));
  t.add(rowStatTensor(ctx, "delta",
                      "result (the dK/dV kernel's workspace): "
                      "D = rowsum(dO * O)",
                      -1, hq));

  // Parameters: TMA q, k, [v], do, dq; S, T; [key_mask]; O, dO, lse, delta.
  SmallVector<Attribute> tmas, params;
  describeQueryTileLoads(ctx, p, tmas, params);
  SmallVector<int64_t> qBox = {64, p.pack, 64 / p.pack, 1};
  tmas.push_back(attentionTma(ctx, p.elem, "tma_do", "output_grad", hq, dv, "S",
                              qBox, "load"));
  tmas.push_back(attentionTma(ctx, p.elem, "tma_dq", "query_grad", hq, dh, "S",
                              qBox, "store"));
  for (StringRef name : {"tma_do", "tma_dq"})
    params.push_back(describeParam(ctx, name, "tma_descriptor", name, ""));
  params.push_back(describeParam(ctx, "seq_q", "scalar", "i32", "S"));
  params.push_back(describeParam(ctx, "seq_kv", "scalar", "i32", "T"));
  StringRef elem = elemName(p.elem);
  SmallVector<Attribute> pointers = t.pointers;
  // The key mask's pointer comes first; then O and dO, read for D.
  auto rest = ArrayRef<Attribute>(pointers).drop_front(p.keyMaskBits ? 1 : 0);
  if (p.keyMaskBits)
    params.push_back(pointers.front());
  params.push_back(describeParam(ctx, "output", "pointer", elem, "output"));
  params.push_back(
      describeParam(ctx, "output_grad", "pointer", elem, "output_grad"));
  llvm::append_range(params, rest);
  params.push_back(describeParam(ctx, "delta", "pointer", "f32", "delta"));

  SmallVector<Attribute> grid = queryTileGrid(ctx, p);
  DictBuilder config = queryTileConfig(ctx, p);
  DictionaryAttr workspace =
      DictBuilder(ctx)
          .set("tensor", "delta")
          .set("bytes", StringRef(llvm::formatv("4*B*S*{0}", p.numHeads).str()))
          .set("note", "allocated by the host, no initialization needed; "
                       "read by the dK/dV kernel")
          .get();
  return describeLaunch(ctx,
                        {p.name, "flash_attention_grad_dq", kGradSymbols,
                         p.threads, p.sharedBytes},
                        {grid, params, t.tensors, tmas}, config.get(),
                        {p.hostCastFromF32, "outputs"}, {plan.name, workspace});
}

attn::KernelLaunchAttr attnfuse::sm90::describeFlashKeyValueGrad(
    MLIRContext *ctx, FlashAttentionGradOp op, const FlashGradPlan &plan) {
  const FlashPlan &p = plan.query;
  int64_t hq = p.numHeads, hk = p.numKvHeads, dh = p.headDim, dv = p.valueDim;
  GradTensors t(ctx, p, /*withOutput=*/false);
  t.rowStats(/*withDelta=*/true);
  t.add(attentionTensor(ctx, p.elem, "key_grad",
                        p.keyIsValue ? "result: the gradient of the shared "
                                       "key and value"
                                     : "result",
                        -1, hk, dh, "T"));
  if (!p.keyIsValue)
    t.add(
        attentionTensor(ctx, p.elem, "value_grad", "result", -1, hk, dv, "T"));

  // Parameters: TMA q, k, [v], do, dk, [dv]; S, T; [key_mask], lse, delta.
  SmallVector<int64_t> qBox = {64, p.pack, 64 / p.pack, 1};
  SmallVector<int64_t> keyBox = {64, 1, 64, 1};
  SmallVector<Attribute> tmas = {
      attentionTma(ctx, p.elem, "tma_q", "query", hq, dh, "S", qBox, "load"),
      attentionTma(ctx, p.elem, "tma_k", "key", hk, dh, "T", keyBox, "load")};
  if (!p.keyIsValue)
    tmas.push_back(attentionTma(ctx, p.elem, "tma_v", "value", hk, dv, "T",
                                keyBox, "load"));
  tmas.push_back(attentionTma(ctx, p.elem, "tma_do", "output_grad", hq, dv, "S",
                              qBox, "load"));
  tmas.push_back(attentionTma(ctx, p.elem, "tma_dk", "key_grad", hk, dh, "T",
                              keyBox, "store"));
  if (!p.keyIsValue)
    tmas.push_back(attentionTma(ctx, p.elem, "tma_dv", "value_grad", hk, dv,
                                "T", keyBox, "store"));
  SmallVector<Attribute> params;
  for (Attribute tma : tmas) {
    StringRef name =
        cast<StringAttr>(cast<DictionaryAttr>(tma).get("param")).getValue();
    params.push_back(describeParam(ctx, name, "tma_descriptor", name, ""));
  }
  params.push_back(describeParam(ctx, "seq_q", "scalar", "i32", "S"));
  params.push_back(describeParam(ctx, "seq_kv", "scalar", "i32", "T"));
  llvm::append_range(params, t.pointers);

  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "T", plan.blockKeys()),
                                 gridConstant(ctx, hk),
                                 gridCeilDiv(ctx, "B", 1)};
  DictBuilder config = attentionConfig(ctx, p);
  config.set("heads_per_tile", p.pack)
      .set("block_keys", plan.blockKeys())
      .set("stages", p.stages)
      .set("consumer_warpgroups", plan.consumers)
      .set("producer_registers", plan.producerRegs)
      .set("consumer_registers", plan.consumerRegs)
      .setBool("causal", p.causal)
      .set("key_mask_bits", p.keyMaskBits);
  return describeLaunch(ctx,
                        {plan.name, "flash_attention_grad_dkv", kGradSymbols,
                         plan.threads, plan.sharedBytes},
                        {grid, params, t.tensors, tmas}, config.get(),
                        {p.hostCastFromF32, "outputs"});
}
