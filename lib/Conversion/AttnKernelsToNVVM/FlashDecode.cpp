//===- FlashDecode.cpp - attn.flash_decode for sm_90a -----------*- C++ -*-===//
//
// Split-KV decode attention (flash-decoding), memory-bound: two kernels.
//
// Split kernel, grid (num_splits, Hk, B), 128 threads. The CTA of split s,
// KV head kvh and sequence b owns the key tiles [s * per, (s + 1) * per) of
// the visible keys [lo, p] (p = positions[b], lo = 0 or p - window + 1),
// each tile `block_kv` = 64 rows.
// * Loads: warp 0 streams the tiles into a `stages`-deep ring in shared
//   memory with 1-D cp.async.bulk copies, one per row (d * 2 bytes, 16-byte
//   padded row stride), completing on one mbarrier per stage (expect_tx of
//   the tile's bytes). Contiguous and paged caches differ only in the row
//   address (page block_table[b, j / P], slot j % P). Key p is copied from
//   `key_new` (and `value_new`), never from the cache, so no CTA reads what
//   split 0 writes. K=V loads one tile for both roles.
// * Scores: thread t computes row t % 64 against the heads of parity t / 64
//   of the group (G <= 16), reading the query rows (f32, rotated at p and
//   pre-multiplied by scale * log2(e)) from shared memory; key RoPE rotates
//   the row at its position on the fly (f32 cos/sin tables, scores only, so
//   the K=V values stay un-rotated).
// * Softmax: warp w keeps the running max / sum of heads w, w + 4, ... over
//   the tile with shfl.bfly reductions and exp2.
// * P V: thread t accumulates 8 value dims (t % (dv / 8)) of a block of at
//   most 8 heads over every R-th row of each tile (R = 128 / (dv / 8) /
//   head blocks), in registers across tiles: one 16-byte V read serves all
//   heads of the block. The R row parts are summed through shared memory
//   (the drained ring) at the end.
// * The split writes its normalized partial output and its log2-domain
//   log-sum-exp (-inf when it saw no key) to the f32 workspace
//   [B, Hq, num_splits, dv + 4].
// * Split 0 writes key_new (value_new) into the cache at p. A position
//   outside [0, capacity) writes nothing and every split reports no keys, so
//   the output row is zeros.
//
// Combine kernel, grid (Hq, B), dv threads: o = sum_s 2^(lse_s - L) O_s /
// sum_s 2^(lse_s - L) with L = max_s lse_s; zeros when no split saw a key.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;
using arith::CmpFPredicate;
using arith::CmpIPredicate;

static constexpr int64_t kDecodeThreads = 128;
static constexpr int64_t kDecodeRows = 64;
static constexpr double kLog2e = 1.4426950408889634;

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

std::string DecodePlan::key() const {
  return llvm::formatv("fd:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}:{8}:{9}:{10}:{11}:"
                       "{12}:{13}:{14}",
                       elemName(elem), headDim, valueDim, numHeads, numKvHeads,
                       blockKV, stages, keyIsValue, paged, pageSize,
                       window ? *window : -1, llvm::formatv("{0:e}", scale),
                       queryRotated, keyRotated, sharedRopeTable)
      .str();
}

static int64_t align16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

FailureOr<DecodePlan>
attnfuse::sm90::planFlashDecode(FlashDecodeOp op,
                                const TargetOptions &options) {
  DecodePlan p;
  auto queryType = cast<RankedTensorType>(op.getQuery().getType());
  Type elementType = queryType.getElementType();
  if (!elementType.isBF16() && !elementType.isF16())
    return op.emitOpError()
           << "element type " << elementType
           << " is not supported by the sm_90a decode kernel (bf16 or f16: "
              "the caches are updated in place, so the host cannot convert "
              "them)";
  p.elem = elementType.isBF16() ? ElemKind::bf16 : ElemKind::f16;
  if (p.elem != options.elem)
    return op.emitOpError()
           << "has " << elementType << " tensors but the sm_90a kernels "
           << "were asked for elem-type=" << elemName(options.elem);
  p.headDim = queryType.getDimSize(3);
  p.numHeads = queryType.getDimSize(2);
  p.numKvHeads = cast<RankedTensorType>(op.getKeyNew().getType()).getDimSize(2);
  p.valueDim =
      cast<RankedTensorType>(op.getValueOrKeyCache().getType()).getDimSize(3);
  p.group = p.numHeads / p.numKvHeads;
  for (auto [name, dim] : {std::pair<StringRef, int64_t>{"head_dim", p.headDim},
                           {"value dim", p.valueDim}})
    if (dim % 32 != 0 || dim > 256)
      return op.emitOpError() << name << " " << dim
                              << " is not supported by the sm_90a decode "
                                 "kernel (a multiple of 32 up to 256)";
  if (p.group > 16)
    return op.emitOpError() << "query group size " << p.group
                            << " (num_heads / num_kv_heads) exceeds the 16 "
                               "the sm_90a decode kernel serves per KV head";
  p.blockKV = op.getBlockKv();
  if (p.blockKV != kDecodeRows)
    return op.emitOpError() << "block_kv " << p.blockKV
                            << " is not supported by the sm_90a decode "
                               "kernel (64: one key row per thread pair)";
  p.keyIsValue = op.isKeyValue();
  p.paged = op.isPaged();
  if (p.paged) {
    p.pageSize =
        cast<RankedTensorType>(op.getKeyCache().getType()).getDimSize(1);
    if (ShapedType::isDynamic(p.pageSize))
      return op.emitOpError()
             << "the sm_90a decode kernel needs a static page size "
                "(dimension 1 of 'key_cache')";
  }
  p.window = op.getWindow();
  p.scale = softmaxScale(op.getScaleAttr(), p.headDim);
  p.queryRotated = rotatedDims(op.getQueryRopeAttr(), p.headDim);
  p.keyRotated = rotatedDims(op.getKeyRopeAttr(), p.headDim);
  for (int64_t r : {p.queryRotated, p.keyRotated})
    if (r < 0 || r % 16 != 0)
      return op.emitOpError() << "the sm_90a decode kernel rotates whole "
                                 "16-byte chunks: RoPE must rotate a multiple "
                                 "of 16 dims (got "
                              << r << ")";
  p.sharedRopeTable = p.queryRotated && p.keyRotated &&
                      op.getQueryRopeAttr() == op.getKeyRopeAttr();
  p.numSplits = op.getNumSplits();
  p.threads = kDecodeThreads;

  // P V: thread t owns 8 value dims (chunk t % (dv / 8)) of a block of at
  // most 8 heads and every pvRowParts-th row of each tile; the row parts are
  // summed once at the end.
  p.pvHeadBlocks = (p.group + 7) / 8;
  p.pvHeads = (p.group + p.pvHeadBlocks - 1) / p.pvHeadBlocks;
  p.pvRowParts = p.threads / (p.valueDim / 8) / p.pvHeadBlocks;

  // Layout; as many stages (2 to 4) as leave room for two CTAs per SM.
  p.kRowBytes = p.headDim * 2 + 16;
  p.vRowBytes = p.keyIsValue ? 0 : p.valueDim * 2 + 16;
  p.pRowBytes = kDecodeRows * 4 + 16;
  auto layout = [&](int64_t stages) {
    int64_t off = 0;
    p.kOff = off;
    off += stages * kDecodeRows * p.kRowBytes;
    p.vOff = off;
    off += stages * kDecodeRows * p.vRowBytes;
    // The ring, once drained, holds the per-row-part P V sums.
    off = std::max(off, p.pvRowParts * p.group * p.valueDim * 4);
    p.qOff = off;
    off += align16(p.group * p.headDim * 4);
    p.pOff = off;
    off += p.group * p.pRowBytes;
    p.maxOff = off;
    off += align16(p.group * 4);
    p.sumOff = off;
    off += align16(p.group * 4);
    p.alphaOff = off;
    off += align16(p.group * 4);
    p.barOff = off;
    off += stages * 8;
    p.sharedBytes = off + 1024; // alignment slack of the dynamic window
  };
  p.minBlocksPerSM = 2;
  p.stages = 4;
  for (; p.stages > 2; --p.stages) {
    layout(p.stages);
    if (p.sharedBytes * p.minBlocksPerSM <= kMaxDynamicSharedBytes)
      break;
  }
  layout(p.stages);
  p.name = "attn_flash_decode";
  p.combineName = "attn_flash_decode_combine";
  return p;
}

//===----------------------------------------------------------------------===//
// Split kernel
//===----------------------------------------------------------------------===//

namespace {

/// Kernel parameters of the split kernel, in order.
struct SplitArgs {
  Value query, keyNew, valueNew, keyCache, valueCache, positions, blockTable;
  Value workspace, queryCos, querySin, keyCos, keySin;
  Value capacity, maxPages, numSplits;
};

class DecodeEmitter {
public:
  DecodeEmitter(DeviceBuilder &d, const DecodePlan &p, const SplitArgs &a)
      : d(d), p(p), a(a) {}
  void emit();

private:
  Value kStage(Value stage) {
    return d.sAt(smem,
                 d.add(d.c32(p.kOff), d.mul(stage, kDecodeRows * p.kRowBytes)));
  }
  Value vStage(Value stage) {
    return d.sAt(smem,
                 d.add(d.c32(p.vOff), d.mul(stage, kDecodeRows * p.vRowBytes)));
  }
  Value bar(Value stage) {
    return d.sAt(smem, d.add(d.c32(p.barOff), d.mul(stage, 8)));
  }
  Value headSlot(int64_t off, Value head) {
    return d.sAt(smem, d.add(d.c32(off), d.mul(head, 4)));
  }
  /// i64 element offset of cache row `token` (KV head kvh) of this sequence.
  Value cacheRow(Value token, int64_t dim);
  /// Warp 0 issues the bulk copies of local tile `tile`.
  void issueTile(Value tile);
  Value i64(Value v) { return arith::ExtSIOp::create(d.b, d.loc, d.i64, v); }
  /// Eight f32 values from a 16-byte chunk of 16-bit elements in shared
  /// memory.
  SmallVector<Value> loadChunk(Value sharedPtr);
  SmallVector<Value> loadF32x8(Value sharedPtr);

  /// The CTA's keys: tiles [firstTile, firstTile + numTiles) of [lo, p].
  void planWork();
  /// Split 0 writes the new token into the cache (no CTA reads that row).
  void writeNewToken();
  /// Barriers, query rows (rotated at p, scaled into the log2 domain) and
  /// the running softmax state.
  void stageQuery();
  /// Which scores and which value columns of which heads a thread computes.
  void assignRoles();
  /// One key tile: scores, online softmax, acc * alpha + P V; then refill.
  SmallVector<Value> processTile(Value tile, ValueRange accIn);
  /// Scores of this thread's row against its heads, into shared memory.
  void tileScores(Value stage, Value start, Value rows);
  /// The online softmax per head: warp w serves heads w, w + 4, ...
  void tileSoftmax();
  /// acc * alpha + P V over the tile's rows.
  SmallVector<Value> tileValues(Value stage, Value rows, ValueRange accIn);
  /// Sums the row parts and writes the split's normalized partial output
  /// and log-sum-exp to the workspace.
  void writeSplit(ArrayRef<Value> acc);

  DeviceBuilder &d;
  const DecodePlan &p;
  const SplitArgs &a;
  Value smem, tid, lane, warp, batch, kvHead, split;
  Value position, lo, valid, firstTile, numTiles;
  Value negInf, zero;
  // Thread roles (assignRoles).
  Value scoreRow, scoreParity, valueChunk, headBlock, rowPart;
  int64_t scoreHeads = 0, valueChunks = 0, valueHeads = 0, softmaxHeads = 0;
  bool ragged = false;
  // Set when some threads have no row part of P V.
  Value rowPartActive;
  SmallVector<Value> heads, headValid;
};

Value DecodeEmitter::cacheRow(Value token, int64_t dim) {
  OpBuilder &b = d.b;
  Location loc = d.loc;
  Value row;
  if (p.paged) {
    Value entry = d.add(d.mul(batch, a.maxPages), d.divu(token, p.pageSize));
    Value page = d.load(d.i32, d.gAt(a.blockTable, entry, d.i32), 4);
    row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, i64(page), d.c64(p.pageSize)),
        i64(d.remu(token, p.pageSize)));
  } else {
    row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, i64(batch), i64(a.capacity)),
        i64(token));
  }
  Value headRow = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, row, d.c64(p.numKvHeads)),
      i64(kvHead));
  return arith::MulIOp::create(b, loc, headRow, d.c64(dim));
}

void DecodeEmitter::issueTile(Value tile) {
  OpBuilder &b = d.b;
  Location loc = d.loc;
  Value stage = d.remu(tile, p.stages);
  Value start = d.add(lo, d.mul(d.add(firstTile, tile), kDecodeRows));
  Value rows = d.mins(d.c32(kDecodeRows), d.sub(d.add(position, 1), start));
  int64_t rowBytes = p.headDim * 2 + (p.keyIsValue ? 0 : p.valueDim * 2);
  d.ifThen(d.cmp(CmpIPredicate::eq, lane, 0), [&]() {
    NVVM::MBarrierArriveExpectTxOp::create(
        b, loc, Type(), bar(stage), d.mul(rows, rowBytes),
        NVVM::MemScopeKind::CTA, false, Value());
  });
  d.warpSync();
  auto copyRow = [&](Value dst, Value src, int64_t bytes, Value barrier) {
    d.bulkLoad(dst, src, d.c32(bytes), barrier);
  };
  for (int64_t half = 0; half < kDecodeRows / 32; ++half) {
    Value row = d.add(lane, half * 32);
    d.ifThen(d.cmp(CmpIPredicate::slt, row, rows), [&]() {
      Value token = d.add(start, row);
      Value isNew = d.cmp(CmpIPredicate::eq, token, position);
      auto source = [&](Value newRows, Value cache, int64_t dim) -> Value {
        // Key p comes from the new token, not from the cache being written.
        Value newOffset =
            i64(d.mul(d.add(d.mul(batch, p.numKvHeads), kvHead), dim));
        Value fromNew = d.gAt(newRows, newOffset, d.elemType);
        Value fromCache = d.ifThenElseValues(
            isNew, TypeRange{fromNew.getType()},
            [&]() -> SmallVector<Value> { return {fromNew}; },
            [&]() -> SmallVector<Value> {
              return {d.gAt(cache, cacheRow(token, dim), d.elemType)};
            })[0];
        return fromCache;
      };
      copyRow(d.sAt(kStage(stage), d.mul(row, p.kRowBytes)),
              source(a.keyNew, a.keyCache, p.headDim), p.headDim * 2,
              bar(stage));
      if (!p.keyIsValue)
        copyRow(d.sAt(vStage(stage), d.mul(row, p.vRowBytes)),
                source(a.valueNew, a.valueCache, p.valueDim), p.valueDim * 2,
                bar(stage));
    });
  }
}

SmallVector<Value> DecodeEmitter::loadChunk(Value sharedPtr) {
  auto vecElem = VectorType::get({8}, d.elemType);
  auto vecF32 = VectorType::get({8}, d.f32);
  Value chunk =
      arith::ExtFOp::create(d.b, d.loc, vecF32, d.load(vecElem, sharedPtr, 16));
  SmallVector<Value> values;
  for (int64_t i = 0; i < 8; ++i)
    values.push_back(
        LLVM::ExtractElementOp::create(d.b, d.loc, chunk, d.c32(i)));
  return values;
}

SmallVector<Value> DecodeEmitter::loadF32x8(Value sharedPtr) {
  auto vecF32 = VectorType::get({4}, d.f32);
  SmallVector<Value> values;
  for (int64_t half = 0; half < 2; ++half) {
    Value v = d.load(vecF32, d.sAt(sharedPtr, half * 16), 16);
    for (int64_t i = 0; i < 4; ++i)
      values.push_back(LLVM::ExtractElementOp::create(d.b, d.loc, v, d.c32(i)));
  }
  return values;
}


void DecodeEmitter::emit() {
  negInf = d.cf(-std::numeric_limits<double>::infinity());
  zero = d.cf(0.0);
  tid = d.tid();
  lane = d.remu(tid, 32);
  warp = d.divu(tid, 32);
  split = d.ctaid(0);
  kvHead = d.ctaid(1);
  batch = d.ctaid(2);
  smem = d.alignedDynamicShared(kSharedSymbol);
  planWork();
  writeNewToken();
  stageQuery();
  // Prologue: the first `stages` tiles in flight.
  d.ifThen(d.cmp(CmpIPredicate::eq, warp, 0), [&]() {
    for (int64_t s = 0; s < p.stages; ++s)
      d.ifThen(d.cmp(CmpIPredicate::slt, d.c32(s), numTiles),
               [&]() { issueTile(d.c32(s)); });
  });

  assignRoles();
  SmallVector<Value> accInit(valueHeads * 8, zero);
  SmallVector<Value> acc = d.forLoop(
      d.c32(0), numTiles, d.c32(1), accInit,
      [&](Value t, ValueRange accIn) { return processTile(t, accIn); });
  writeSplit(acc);
}

void DecodeEmitter::planWork() {
  position = d.load(d.i32, d.gAt(a.positions, batch, d.i32), 4);
  valid = d.andb(d.cmp(CmpIPredicate::sge, position, 0),
                 d.cmp(CmpIPredicate::slt, position, a.capacity));
  lo = d.c32(0);
  if (p.window)
    lo = d.maxs(lo, d.sub(position, *p.window - 1));
  Value totalTiles = d.select(
      valid,
      d.divs(d.add(d.sub(position, lo), kDecodeRows), d.c32(kDecodeRows)),
      d.c32(0));
  Value perSplit =
      d.divs(d.add(totalTiles, d.sub(a.numSplits, 1)), a.numSplits);
  firstTile = d.mul(split, perSplit);
  numTiles =
      d.maxs(d.c32(0),
             d.sub(d.mins(d.add(firstTile, perSplit), totalTiles), firstTile));
}

void DecodeEmitter::writeNewToken() {
  OpBuilder &b = d.b;
  Location loc = d.loc;
  const int64_t dh = p.headDim, dv = p.valueDim;
  d.ifThen(d.andb(valid, d.cmp(CmpIPredicate::eq, split, 0)), [&]() {
    auto writeRow = [&](Value newRows, Value cache, int64_t dim) {
      int64_t chunks = dim / 8;
      d.ifThen(d.cmp(CmpIPredicate::slt, tid, chunks), [&]() {
        auto vec = VectorType::get({8}, d.elemType);
        Value src = arith::AddIOp::create(
            b, loc, i64(d.mul(d.add(d.mul(batch, p.numKvHeads), kvHead), dim)),
            i64(d.mul(tid, 8)));
        Value dst = arith::AddIOp::create(b, loc, cacheRow(position, dim),
                                          i64(d.mul(tid, 8)));
        d.store(d.load(vec, d.gAt(newRows, src, d.elemType), 16),
                d.gAt(cache, dst, d.elemType), 16);
      });
    };
    writeRow(a.keyNew, a.keyCache, dh);
    if (!p.keyIsValue)
      writeRow(a.valueNew, a.valueCache, dv);
  });
}

void DecodeEmitter::stageQuery() {
  OpBuilder &b = d.b;
  Location loc = d.loc;
  const int64_t g = p.group, dh = p.headDim;
  d.ifThen(d.cmp(CmpIPredicate::eq, tid, 0), [&]() {
    for (int64_t s = 0; s < p.stages; ++s)
      d.mbarInit(bar(d.c32(s)), 1);
  });
  Value qScale = d.cf(p.scale * kLog2e);
  d.forLoop(
      tid, d.c32(g * dh), d.c32(p.threads), {},
      [&](Value item, ValueRange) -> SmallVector<Value> {
        Value head = d.divu(item, dh);
        Value dim = d.remu(item, dh);
        Value base = d.mul(
            d.add(d.mul(batch, p.numHeads), d.add(d.mul(kvHead, g), head)), dh);
        auto element = [&](Value e) {
          return arith::ExtFOp::create(
              b, loc, d.f32,
              d.load(d.elemType, d.gAt(a.query, d.add(base, e), d.elemType),
                     2));
        };
        Value x = element(dim);
        if (p.queryRotated) {
          int64_t half = p.queryRotated / 2;
          Value inRotated = d.cmp(CmpIPredicate::slt, dim, p.queryRotated);
          Value firstHalf = d.cmp(CmpIPredicate::slt, dim, half);
          Value partnerDim = d.select(
              inRotated,
              d.select(firstHalf, d.add(dim, half), d.sub(dim, half)), dim);
          Value y = element(partnerDim);
          Value column = d.select(inRotated, d.remu(dim, half), d.c32(0));
          // Positions outside the capacity have no table row.
          Value at = d.select(valid, position, d.c32(0));
          Value index = d.add(d.mul(at, half), column);
          Value cosine = d.load(d.f32, d.gAt(a.queryCos, index, d.f32), 4);
          Value sine = d.load(d.f32, d.gAt(a.querySin, index, d.f32), 4);
          Value rotated =
              d.select(firstHalf, d.subf(d.mulf(x, cosine), d.mulf(y, sine)),
                       d.addf(d.mulf(x, cosine), d.mulf(y, sine)));
          x = d.select(inRotated, rotated, x);
        }
        d.store(d.mulf(x, qScale),
                d.sAt(smem, d.add(d.c32(p.qOff), d.mul(item, 4))), 4);
        return {};
      });
  d.ifThen(d.cmp(CmpIPredicate::slt, tid, g), [&]() {
    d.store(negInf, headSlot(p.maxOff, tid), 4);
    d.store(zero, headSlot(p.sumOff, tid), 4);
  });
  d.fenceProxyAsync();
  d.barrierAll();
}

void DecodeEmitter::assignRoles() {
  const int64_t g = p.group, dv = p.valueDim;
  scoreRow = d.remu(tid, kDecodeRows);
  scoreParity = d.divu(tid, kDecodeRows);
  scoreHeads = (g + 1) / 2;
  valueChunks = dv / 8;
  valueChunk = d.remu(tid, valueChunks);
  headBlock = d.remu(d.divu(tid, valueChunks), p.pvHeadBlocks);
  rowPart = d.divu(tid, valueChunks * p.pvHeadBlocks);
  // dv / 8 chunks that do not divide the threads (dv 96: 12) leave the
  // threads past the last whole row part idle in P V.
  if (p.threads % (valueChunks * p.pvHeadBlocks) != 0)
    rowPartActive = d.cmp(CmpIPredicate::ult, rowPart, d.c32(p.pvRowParts));
  valueHeads = p.pvHeads;
  // Heads past G (G not a multiple of the block) compute on head 0 and are
  // never stored.
  ragged = p.pvHeads * p.pvHeadBlocks != g;
  for (int64_t j = 0; j < valueHeads; ++j) {
    Value head = d.add(d.mul(headBlock, p.pvHeads), j);
    Value inRange = d.cmp(CmpIPredicate::slt, head, g);
    heads.push_back(ragged ? d.select(inRange, head, d.c32(0)) : head);
    headValid.push_back(inRange);
  }
  softmaxHeads = (g + 3) / 4;
}

SmallVector<Value> DecodeEmitter::processTile(Value tile, ValueRange accIn) {
  Value stage = d.remu(tile, p.stages);
  Value parity = d.andi(d.divu(tile, p.stages), 1);
  Value start = d.add(lo, d.mul(d.add(firstTile, tile), kDecodeRows));
  Value rows = d.mins(d.c32(kDecodeRows), d.sub(d.add(position, 1), start));
  d.mbarWait(bar(stage), parity);
  tileScores(stage, start, rows);
  tileSoftmax();
  SmallVector<Value> result = tileValues(stage, rows, accIn);
  // Every thread is done with this stage: refill it.
  d.barrierAll();
  d.ifThen(d.andb(d.cmp(CmpIPredicate::eq, warp, 0),
                  d.cmp(CmpIPredicate::slt, d.add(tile, p.stages), numTiles)),
           [&]() { issueTile(d.add(tile, p.stages)); });
  return result;
}

void DecodeEmitter::tileScores(Value stage, Value start, Value rows) {
  const int64_t g = p.group, dh = p.headDim;
  Value rowPtr = d.sAt(kStage(stage), d.mul(scoreRow, p.kRowBytes));
  Value rowValid = d.cmp(CmpIPredicate::slt, scoreRow, rows);
  SmallVector<Value> scores = d.ifThenElseValues(
      rowValid, SmallVector<Type>(scoreHeads, d.f32),
      [&]() -> SmallVector<Value> {
        SmallVector<Value> init(scoreHeads, zero);
        Value token = d.add(start, scoreRow);
        return d.forLoop(
            d.c32(0), d.c32(dh / 8), d.c32(1), init,
            [&](Value chunk, ValueRange sums) -> SmallVector<Value> {
              SmallVector<Value> k = loadChunk(d.sAt(rowPtr, d.mul(chunk, 16)));
              if (p.keyRotated) {
                int64_t halfChunks = p.keyRotated / 16;
                Value inRotated =
                    d.cmp(CmpIPredicate::slt, chunk, p.keyRotated / 8);
                Value firstHalf = d.cmp(CmpIPredicate::slt, chunk, halfChunks);
                Value partner =
                    d.select(inRotated,
                             d.select(firstHalf, d.add(chunk, halfChunks),
                                      d.sub(chunk, halfChunks)),
                             chunk);
                SmallVector<Value> y =
                    loadChunk(d.sAt(rowPtr, d.mul(partner, 16)));
                Value column = d.select(
                    inRotated, d.mul(d.remu(chunk, halfChunks), 8), d.c32(0));
                Value index = d.add(d.mul(token, p.keyRotated / 2), column);
                for (int64_t i = 0; i < 8; ++i) {
                  Value cosine =
                      d.load(d.f32, d.gAt(a.keyCos, d.add(index, i), d.f32), 4);
                  Value sine =
                      d.load(d.f32, d.gAt(a.keySin, d.add(index, i), d.f32), 4);
                  Value rotated = d.select(
                      firstHalf,
                      d.subf(d.mulf(k[i], cosine), d.mulf(y[i], sine)),
                      d.addf(d.mulf(k[i], cosine), d.mulf(y[i], sine)));
                  k[i] = d.select(inRotated, rotated, k[i]);
                }
              }
              SmallVector<Value> out;
              for (int64_t j = 0; j < scoreHeads; ++j) {
                Value head = d.add(scoreParity, 2 * j);
                // Odd G: the last head of parity 1 does not exist;
                // its slot reads head 0 and is never stored.
                if (g % 2)
                  head = d.select(d.cmp(CmpIPredicate::slt, head, g), head,
                                  d.c32(0));
                Value qPtr =
                    d.sAt(smem, d.add(d.c32(p.qOff), d.add(d.mul(head, dh * 4),
                                                           d.mul(chunk, 32))));
                SmallVector<Value> q = loadF32x8(qPtr);
                Value sum = sums[j];
                for (int64_t i = 0; i < 8; ++i)
                  sum = d.fma(q[i], k[i], sum);
                out.push_back(sum);
              }
              return out;
            });
      },
      [&]() -> SmallVector<Value> {
        return SmallVector<Value>(scoreHeads, negInf);
      });
  for (int64_t j = 0; j < scoreHeads; ++j) {
    Value head = d.add(scoreParity, 2 * j);
    auto storeScore = [&]() {
      d.store(scores[j],
              d.sAt(smem, d.add(d.c32(p.pOff), d.add(d.mul(head, p.pRowBytes),
                                                     d.mul(scoreRow, 4)))),
              4);
    };
    if (g % 2)
      d.ifThen(d.cmp(CmpIPredicate::slt, head, g), storeScore);
    else
      storeScore();
  }
  d.barrierAll();
}

void DecodeEmitter::tileSoftmax() {
  const int64_t g = p.group;
  for (int64_t j = 0; j < softmaxHeads; ++j) {
    Value head = d.add(warp, 4 * j);
    auto update = [&]() {
      Value rowBase = d.add(d.c32(p.pOff), d.mul(head, p.pRowBytes));
      Value p0Ptr = d.sAt(smem, d.add(rowBase, d.mul(lane, 4)));
      Value p1Ptr = d.sAt(smem, d.add(rowBase, d.mul(d.add(lane, 32), 4)));
      Value s0 = d.load(d.f32, p0Ptr, 4);
      Value s1 = d.load(d.f32, p1Ptr, 4);
      Value maxOld = d.load(d.f32, headSlot(p.maxOff, head), 4);
      Value maxNew = d.maxf(maxOld, d.warpMax(d.maxf(s0, s1)));
      Value none = d.cmpf(CmpFPredicate::OEQ, maxNew, negInf);
      Value alpha = d.select(none, d.cf(1.0), d.exp2(d.subf(maxOld, maxNew)));
      Value e0 = d.select(none, zero, d.exp2(d.subf(s0, maxNew)));
      Value e1 = d.select(none, zero, d.exp2(d.subf(s1, maxNew)));
      d.store(e0, p0Ptr, 4);
      d.store(e1, p1Ptr, 4);
      Value tileSum = d.warpSum(d.addf(e0, e1));
      d.ifThen(d.cmp(CmpIPredicate::eq, lane, 0), [&]() {
        Value sumOld = d.load(d.f32, headSlot(p.sumOff, head), 4);
        d.store(d.fma(sumOld, alpha, tileSum), headSlot(p.sumOff, head), 4);
        d.store(maxNew, headSlot(p.maxOff, head), 4);
        d.store(alpha, headSlot(p.alphaOff, head), 4);
      });
    };
    if (g % 4)
      d.ifThen(d.cmp(CmpIPredicate::slt, head, g), update);
    else
      update();
  }
  d.barrierAll();
}

SmallVector<Value> DecodeEmitter::tileValues(Value stage, Value rows,
                                             ValueRange accIn) {
  Value valueBase = p.keyIsValue ? kStage(stage) : vStage(stage);
  int64_t valueRowBytes = p.keyIsValue ? p.kRowBytes : p.vRowBytes;
  SmallVector<Value> scaled(accIn.begin(), accIn.end());
  for (int64_t j = 0; j < valueHeads; ++j) {
    Value alpha = d.load(d.f32, headSlot(p.alphaOff, heads[j]), 4);
    for (int64_t i = 0; i < 8; ++i)
      scaled[j * 8 + i] = d.mulf(scaled[j * 8 + i], alpha);
  }
  // One V chunk read serves every head of the block.
  Value lastRow =
      rowPartActive ? d.select(rowPartActive, rows, d.c32(0)) : rows;
  SmallVector<Value> result = d.forLoop(
      rowPart, lastRow, d.c32(p.pvRowParts), scaled,
      [&](Value row, ValueRange sums) -> SmallVector<Value> {
        SmallVector<Value> v =
            loadChunk(d.sAt(valueBase, d.add(d.mul(row, valueRowBytes),
                                             d.mul(valueChunk, 16))));
        SmallVector<Value> out(sums.begin(), sums.end());
        for (int64_t j = 0; j < valueHeads; ++j) {
          Value weight = d.load(
              d.f32,
              d.sAt(smem,
                    d.add(d.c32(p.pOff),
                          d.add(d.mul(heads[j], p.pRowBytes), d.mul(row, 4)))),
              4);
          for (int64_t i = 0; i < 8; ++i)
            out[j * 8 + i] = d.fma(weight, v[i], out[j * 8 + i]);
        }
        return out;
      });
  return result;
}

void DecodeEmitter::writeSplit(ArrayRef<Value> acc) {
  OpBuilder &b = d.b;
  Location loc = d.loc;
  const int64_t g = p.group, dv = p.valueDim;
  // Sum the row parts through the drained ring: [row part][head][dv] f32.
  auto partialAt = [&](Value part, Value head, Value chunk) {
    return d.sAt(smem, d.add(d.c32(p.kOff),
                             d.mul(d.add(d.mul(d.add(d.mul(part, g), head), dv),
                                         d.mul(chunk, 8)),
                                   4)));
  };
  auto vec4 = VectorType::get({4}, d.f32);
  for (int64_t j = 0; j < valueHeads; ++j) {
    auto store = [&]() {
      Value at = partialAt(rowPart, heads[j], valueChunk);
      for (int64_t half = 0; half < 2; ++half) {
        Value packed = LLVM::UndefOp::create(b, loc, vec4);
        for (int64_t i = 0; i < 4; ++i)
          packed = LLVM::InsertElementOp::create(
              b, loc, packed, acc[j * 8 + half * 4 + i], d.c32(i));
        d.store(packed, d.sAt(at, half * 16), 16);
      }
    };
    Value valid = ragged ? headValid[j] : Value();
    if (rowPartActive)
      valid = valid ? d.andb(valid, rowPartActive) : rowPartActive;
    if (valid)
      d.ifThen(valid, store);
    else
      store();
  }
  d.barrierAll();

  // Partial output (normalized) and log-sum-exp of this split, one
  // (head, chunk) per thread and step.
  int64_t row = p.workspaceRow();
  d.forLoop(
      tid, d.c32(g * valueChunks), d.c32(p.threads), {},
      [&](Value item, ValueRange) -> SmallVector<Value> {
        Value head = d.divu(item, valueChunks);
        Value chunk = d.remu(item, valueChunks);
        SmallVector<Value> total(8, zero);
        for (int64_t part = 0; part < p.pvRowParts; ++part) {
          SmallVector<Value> partial =
              loadF32x8(partialAt(d.c32(part), head, chunk));
          for (int64_t i = 0; i < 8; ++i)
            total[i] = d.addf(total[i], partial[i]);
        }
        Value sum = d.load(d.f32, headSlot(p.sumOff, head), 4);
        Value maxValue = d.load(d.f32, headSlot(p.maxOff, head), 4);
        Value empty = d.cmpf(CmpFPredicate::OLE, sum, zero);
        Value inverse = d.select(empty, zero, d.divf(d.cf(1.0), sum));
        Value queryHead = d.add(d.mul(kvHead, g), head);
        Value base =
            d.mul(d.add(d.mul(d.add(d.mul(batch, p.numHeads), queryHead),
                              a.numSplits),
                        split),
                  row);
        for (int64_t half = 0; half < 2; ++half) {
          Value packed = LLVM::UndefOp::create(b, loc, vec4);
          for (int64_t i = 0; i < 4; ++i)
            packed = LLVM::InsertElementOp::create(
                b, loc, packed, d.mulf(total[half * 4 + i], inverse), d.c32(i));
          d.store(packed,
                  d.gAt(a.workspace,
                        d.add(base, d.add(d.mul(chunk, 8), half * 4)), d.f32),
                  16);
        }
        d.ifThen(d.cmp(CmpIPredicate::eq, chunk, 0), [&]() {
          Value log2Sum = d.log2Approx(d.select(empty, d.cf(1.0), sum));
          Value lse = d.select(empty, negInf, d.addf(maxValue, log2Sum));
          d.store(lse, d.gAt(a.workspace, d.add(base, dv), d.f32), 4);
        });
        return {};
      });
}

} // namespace

void attnfuse::sm90::buildFlashDecodeSplitKernel(OpBuilder &b, Location loc,
                                                 gpu::GPUModuleOp module,
                                                 const DecodePlan &p) {
  // query, key_new, [value_new], key_cache, [value_cache], positions,
  // [block_table], workspace, rope tables, capacity, max_pages, num_splits.
  KernelSignature signature(b.getContext());
  signature.pointer(2)
      .pointer(1, !p.keyIsValue)
      .pointer()
      .pointer(1, !p.keyIsValue)
      .pointer()
      .pointer(1, p.paged)
      .pointer()
      .pointer(2, p.queryRotated)
      .pointer(2, p.keyRotated && !p.sharedRopeTable)
      .scalar(3);
  KernelBody body(b, loc, module, p.name, signature, p.threads,
                  p.minBlocksPerSM, p.elem);
  KernelArguments &arguments = body.arguments;
  SplitArgs a;
  a.query = arguments.next();
  a.keyNew = arguments.next();
  a.valueNew = arguments.nextIf(!p.keyIsValue);
  a.keyCache = arguments.next();
  a.valueCache = arguments.nextIf(!p.keyIsValue);
  a.positions = arguments.next();
  a.blockTable = arguments.nextIf(p.paged);
  a.workspace = arguments.next();
  a.queryCos = arguments.nextIf(p.queryRotated);
  a.querySin = arguments.nextIf(p.queryRotated);
  if (p.keyRotated) {
    if (p.sharedRopeTable) {
      a.keyCos = a.queryCos;
      a.keySin = a.querySin;
    } else {
      a.keyCos = arguments.next();
      a.keySin = arguments.next();
    }
  }
  a.capacity = arguments.next();
  a.maxPages = arguments.next();
  a.numSplits = arguments.next();
  DecodeEmitter(body.d, p, a).emit();
  gpu::ReturnOp::create(b, loc);
}

//===----------------------------------------------------------------------===//
// Combine kernel
//===----------------------------------------------------------------------===//

void attnfuse::sm90::buildFlashDecodeCombineKernel(OpBuilder &b, Location loc,
                                                   gpu::GPUModuleOp module,
                                                   const DecodePlan &p) {
  KernelBody body(b, loc, module, p.combineName,
                  KernelSignature(b.getContext()).pointer(2).scalar(),
                  p.valueDim, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value workspace = arguments.next(), output = arguments.next();
  Value numSplits = arguments.next();
  Value dim = d.tid(), head = d.ctaid(0), batch = d.ctaid(1);
  Value negInf = d.cf(-std::numeric_limits<double>::infinity());
  int64_t row = p.workspaceRow();
  Value headBase =
      d.mul(d.mul(d.add(d.mul(batch, p.numHeads), head), numSplits), row);
  auto lseOf = [&](Value s) {
    return d.load(d.f32,
                  d.gAt(workspace,
                        d.add(headBase, d.add(d.mul(s, row), p.valueDim)),
                        d.f32),
                  4);
  };
  Value maxLse = d.forLoop(d.c32(0), numSplits, d.c32(1), {negInf},
                           [&](Value s, ValueRange m) -> SmallVector<Value> {
                             return {d.maxf(m[0], lseOf(s))};
                           })[0];
  Value none = d.cmpf(CmpFPredicate::OEQ, maxLse, negInf);
  Value safeMax = d.select(none, d.cf(0.0), maxLse);
  SmallVector<Value> sums = d.forLoop(
      d.c32(0), numSplits, d.c32(1), {d.cf(0.0), d.cf(0.0)},
      [&](Value s, ValueRange acc) -> SmallVector<Value> {
        // A split without keys has lse = -inf: weight 0.
        Value weight = d.exp2(d.subf(lseOf(s), safeMax));
        Value partial = d.load(
            d.f32,
            d.gAt(workspace, d.add(headBase, d.add(d.mul(s, row), dim)), d.f32),
            4);
        return {d.addf(acc[0], weight), d.fma(weight, partial, acc[1])};
      });
  Value value = d.select(none, d.cf(0.0), d.divf(sums[1], sums[0]));
  Value index =
      d.add(d.mul(d.add(d.mul(batch, p.numHeads), head), p.valueDim), dim);
  d.store(arith::TruncFOp::create(b, loc, d.elemType, value),
          d.gAt(output, index, d.elemType), 2);
  gpu::ReturnOp::create(b, loc);
}

//===----------------------------------------------------------------------===//
// Host-side descriptions
//===----------------------------------------------------------------------===//

namespace {
/// Symbolic sizes of the decode tensors: a static size, or the manifest
/// symbol of the dimension.
struct DecodeSymbols {
  Attribute batch, capacityRows, pagesPerSequence;
  std::string capacity; // tokens a sequence can hold
};
} // namespace

static DecodeSymbols decodeSymbols(MLIRContext *ctx, FlashDecodeOp op,
                                   const DecodePlan &p) {
  auto dimOrSymbol = [&](Value v, int64_t dim, StringRef symbol) -> Attribute {
    int64_t size = cast<RankedTensorType>(v.getType()).getDimSize(dim);
    if (ShapedType::isDynamic(size))
      return strAttr(ctx, symbol);
    return intAttr(ctx, size);
  };
  auto text = [](Attribute a) {
    if (auto s = dyn_cast<StringAttr>(a))
      return s.getValue().str();
    return std::to_string(cast<IntegerAttr>(a).getInt());
  };
  DecodeSymbols s;
  s.batch = dimOrSymbol(op.getQuery(), 0, "B");
  if (p.paged) {
    s.capacityRows = dimOrSymbol(op.getKeyCache(), 0, "T");
    s.pagesPerSequence = dimOrSymbol(op.getBlockTable(), 1, "S");
    s.capacity = std::to_string(p.pageSize) + "*" + text(s.pagesPerSequence);
  } else {
    s.capacityRows = dimOrSymbol(op.getKeyCache(), 1, "S");
    s.pagesPerSequence = intAttr(ctx, 1);
    s.capacity = text(s.capacityRows);
  }
  return s;
}

std::string attnfuse::sm90::decodeSplitsExpr(FlashDecodeOp op,
                                             const DecodePlan &p) {
  if (p.numSplits > 0)
    return std::to_string(p.numSplits);
  DecodeSymbols s = decodeSymbols(op.getContext(), op, p);
  std::string batch = isa<StringAttr>(s.batch)
                          ? "B"
                          : std::to_string(cast<IntegerAttr>(s.batch).getInt());
  // Two CTAs per SM on 132 SMs, each split at least 4 tiles of a full cache.
  return llvm::formatv(
             "max(1, min(ceil_div(264, {0}*{1}), ceil_div({2}, {3})))",
             p.numKvHeads, batch, s.capacity, 4 * p.blockKV)
      .str();
}

static attn::KernelTensorAttr decodeTensor(MLIRContext *ctx, StringRef name,
                                           StringRef role, int64_t operand,
                                           StringRef dtype,
                                           ArrayRef<Attribute> shape) {
  return describeTensor(ctx, name, role, operand, dtype, shape);
}

static DictionaryAttr decodeGrid(MLIRContext *ctx, Attribute value) {
  DictBuilder entry(ctx);
  if (auto s = dyn_cast<StringAttr>(value))
    return entry.set("expr", s.getValue()).get();
  return entry.set("value", value).get();
}

static DictionaryAttr decodeConfig(MLIRContext *ctx, const DecodePlan &p,
                                   StringRef splits) {
  DictBuilder config = attentionConfig(ctx, p);
  config.set("block_kv", p.blockKV)
      .set("stages", p.stages)
      .set("num_splits", splits)
      .setBool("paged", p.paged)
      .set("min_blocks_per_sm", p.minBlocksPerSM)
      .set("loads", "cp.async.bulk per key row (1-D), mbarrier per stage");
  if (p.paged)
    config.set("page_size", p.pageSize);
  return config.get();
}

attn::KernelLaunchAttr
attnfuse::sm90::describeFlashDecodeSplit(MLIRContext *ctx, FlashDecodeOp op,
                                         const DecodePlan &p) {
  StringRef elem = elemName(p.elem);
  DecodeSymbols sym = decodeSymbols(ctx, op, p);
  std::string splits = decodeSplitsExpr(op, p);
  int64_t hq = p.numHeads, hk = p.numKvHeads, d = p.headDim, dv = p.valueDim;
  Attribute batch = sym.batch;
  SmallVector<Attribute> tensors, params;
  int64_t operand = 0;
  auto addTensor = [&](StringRef name, StringRef role, StringRef dtype,
                       ArrayRef<Attribute> shape, int64_t index) {
    tensors.push_back(decodeTensor(ctx, name, role, index, dtype, shape));
    params.push_back(describeParam(ctx, name, "pointer", dtype, name));
  };
  addTensor("query", "query", elem,
            {batch, intAttr(ctx, 1), intAttr(ctx, hq), intAttr(ctx, d)},
            operand++);
  addTensor("key_new", "new key", elem,
            {batch, intAttr(ctx, 1), intAttr(ctx, hk), intAttr(ctx, d)},
            operand++);
  if (!p.keyIsValue)
    addTensor("value_new", "new value", elem,
              {batch, intAttr(ctx, 1), intAttr(ctx, hk), intAttr(ctx, dv)},
              operand++);
  Attribute rows = p.paged ? sym.capacityRows : batch;
  Attribute slots = p.paged ? intAttr(ctx, p.pageSize) : sym.capacityRows;
  addTensor("key_cache",
            p.keyIsValue ? "key and value cache (K=V), updated in place"
                         : "key cache, updated in place",
            elem, {rows, slots, intAttr(ctx, hk), intAttr(ctx, d)}, operand++);
  if (!p.keyIsValue)
    addTensor("value_cache", "value cache, updated in place", elem,
              {rows, slots, intAttr(ctx, hk), intAttr(ctx, dv)}, operand++);
  addTensor("positions", "tokens cached per sequence (the new token's slot)",
            "i32", {batch}, operand++);
  if (p.paged)
    addTensor("block_table", "page of each block of page_size tokens", "i32",
              {batch, sym.pagesPerSequence}, operand++);
  addTensor("workspace",
            "workspace: per split the partial output (dv f32) and its "
            "log2-domain log-sum-exp at column dv",
            "f32",
            {batch, intAttr(ctx, hq), strAttr(ctx, splits),
             intAttr(ctx, p.workspaceRow())},
            -1);

  SmallVector<Attribute> tables;
  auto ropeTable = [&](StringRef prefix, RopeAttr rope, int64_t rotated) {
    describeRopeTables(ctx, prefix, rope.getThetaValue(), rotated, sym.capacity,
                       params, tables);
  };
  if (p.queryRotated)
    ropeTable(p.sharedRopeTable ? "rope" : "rope_q", op.getQueryRopeAttr(),
              p.queryRotated);
  if (p.keyRotated && !p.sharedRopeTable)
    ropeTable("rope_k", op.getKeyRopeAttr(), p.keyRotated);
  params.push_back(
      describeParam(ctx, "capacity", "scalar", "i32", sym.capacity));
  std::string pages =
      p.paged ? (isa<StringAttr>(sym.pagesPerSequence)
                     ? "S"
                     : std::to_string(
                           cast<IntegerAttr>(sym.pagesPerSequence).getInt()))
              : "1";
  params.push_back(describeParam(ctx, "max_pages", "scalar", "i32", pages));
  params.push_back(describeParam(ctx, "num_splits", "scalar", "i32", splits));

  SmallVector<Attribute> grid = {decodeGrid(ctx, strAttr(ctx, splits)),
                                 decodeGrid(ctx, intAttr(ctx, hk)),
                                 decodeGrid(ctx, batch)};
  SmallVector<Attribute> aliases = {DictBuilder(ctx)
                                        .set("result", "key_cache_out")
                                        .set("tensor", "key_cache")
                                        .get()};
  if (!p.keyIsValue)
    aliases.push_back(DictBuilder(ctx)
                          .set("result", "value_cache_out")
                          .set("tensor", "value_cache")
                          .get());

  StringRef symbols = p.paged
                          ? "B = batch, S = pages per sequence (block_table "
                            "width), T = pages in the cache"
                          : "B = batch, S = cache capacity in tokens";
  DictionaryAttr workspace =
      DictBuilder(ctx)
          .set("tensor", "workspace")
          .set("bytes",
               StringRef(
                   llvm::formatv(
                       "4*{0}*{1}*({2})*{3}",
                       isa<StringAttr>(batch)
                           ? std::string("B")
                           : std::to_string(cast<IntegerAttr>(batch).getInt()),
                       hq, splits, p.workspaceRow())
                       .str()))
          .set("note", "allocated by the host, no initialization "
                       "needed; read by the combine kernel")
          .get();
  return describeLaunch(
      ctx, {p.name, "flash_decode_split", symbols, p.threads, p.sharedBytes},
      {grid, params, tensors, {}, tables, aliases},
      decodeConfig(ctx, p, splits), {}, {p.combineName, workspace});
}

attn::KernelLaunchAttr
attnfuse::sm90::describeFlashDecodeCombine(MLIRContext *ctx, FlashDecodeOp op,
                                           const DecodePlan &p) {
  StringRef elem = elemName(p.elem);
  DecodeSymbols sym = decodeSymbols(ctx, op, p);
  std::string splits = decodeSplitsExpr(op, p);
  int64_t hq = p.numHeads, dv = p.valueDim;
  SmallVector<Attribute> tensors = {
      decodeTensor(ctx, "workspace", "workspace written by the split kernel",
                   /*operand=*/0, "f32",
                   {sym.batch, intAttr(ctx, hq), strAttr(ctx, splits),
                    intAttr(ctx, p.workspaceRow())}),
      decodeTensor(
          ctx, "output", "result", -1, elem,
          {sym.batch, intAttr(ctx, 1), intAttr(ctx, hq), intAttr(ctx, dv)})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "workspace", "pointer", "f32", "workspace"),
      describeParam(ctx, "output", "pointer", elem, "output"),
      describeParam(ctx, "num_splits", "scalar", "i32", splits)};
  SmallVector<Attribute> grid = {decodeGrid(ctx, intAttr(ctx, hq)),
                                 decodeGrid(ctx, sym.batch)};
  StringRef symbols = p.paged ? "B = batch, S = pages per sequence, T = pages"
                              : "B = batch, S = cache capacity in tokens";
  return describeLaunch(ctx,
                        {p.combineName, "flash_decode_combine", symbols, dv},
                        {grid, params, tensors}, decodeConfig(ctx, p, splits));
}
