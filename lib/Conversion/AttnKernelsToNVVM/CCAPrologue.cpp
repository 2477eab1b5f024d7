//===- CCAPrologue.cpp - attn.cca_prologue for sm_90a -----------*- C++ -*-===//
//
// attn.cca_prologue (steps 1-6 of CCA / CCGQA) as one sm_90a kernel. One CTA
// of two warpgroups (256 threads, no warp specialization) per (block of 64
// tokens, KV group j, batch); a KV group (its G query heads, key head j and
// value head j) is self-contained, QK-mean included.
//
// 1. GEMM (TMA + wgmma, f32 accumulators): the 128 x rows [s0 - H, s0 - H +
//    128) of x (H = max(P, 1) halo tokens; TMA zero-fills rows before token 0
//    and past S) times the group's G + 2 weight tiles of d rows each: Wq
//    heads jG .. jG+G-1, Wk head j, and value head j (Wv, or with the value
//    shift Wv / Wv_prev: one GEMM for all four weights). Warpgroup c owns
//    rows 64c .. 64c+63 (m64nDk16, both operands K-major, 128B swizzle); a
//    3-stage TMA ring (one thread issues, every k step waits wgmma group 0
//    and a CTA barrier before its stage is refilled). Rows < 64 + H of the
//    result go to shared memory as 16-bit `u` ([rows][(G + 2) d]). With a
//    padding mask the rows of padded tokens are stored as zeros: the
//    projections have no bias, so that is x zeroed there, for the
//    convolutions, the QK-mean and both value halves alike.
// 2. Per chunk of 256 conv channels (thread = channel): depthwise conv
//    (k0 taps + bias, also at padded rows) into an f32 scratch m [64 + k1 - 1]
//    [256]; grouped conv by FMA loops (thread = output channel o of its
//    head, 64 f32 accumulators = the block's tokens, d x k1 weights read from
//    global); QK-mean from u; L2 norm (warp shuffles + a cross-warp shared
//    sum) to sqrt(d), key temperature; RoPE (partner column through shared
//    memory, cos/sin from the host tables); plain 16-bit global stores.
// 3. Values: copied from u (row of token t, or t - 1 for the heads of the
//    shifted half) to the value output.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Mainloop.h"
#include "Pipeline.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;
using arith::CmpIPredicate;

std::string ProloguePlan::key() const {
  return llvm::formatv("cca:{0}:{1}:{2}:{3}", configKey(), width, stages,
                       paddingMaskBits)
      .str();
}

FailureOr<ProloguePlan>
attnfuse::sm90::planCCAPrologue(CCAPrologueOp op, const TargetOptions &options,
                                std::string &unsupported) {
  if (op.getTokenOffset())
    return op.emitOpError() << "a tile of tokens ('token_offset') is not "
                               "supported by the sm_90a prologue kernel, "
                               "which tiles the whole sequence itself";
  ProloguePlan p;
  FailureOr<int64_t> maskBits =
      maskElementBits(op, "padding_mask", op.getPaddingMask());
  if (failed(maskBits))
    return failure();
  p.paddingMaskBits = *maskBits;
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  if (failed(planCCAConfig(op, inputType.getElementType(), options, p,
                           unsupported)))
    return failure();
  p.width = inputType.getDimSize(2);
  p.halo = std::max<int64_t>(p.padding, p.valueShift ? 1 : 0);
  if (ShapedType::isDynamic(p.width) || p.width % 64 != 0) {
    unsupported = "the sm_90a prologue needs a static model width that is a "
                  "multiple of 64";
    return failure();
  }
  if (p.headDim != 64 && p.headDim != 128) {
    unsupported = "the sm_90a prologue supports head_dim 64 and 128";
    return failure();
  }
  p.blockS = 64;
  p.rows = p.blockS + p.halo;
  if (p.rows > 128) {
    unsupported = "the sm_90a prologue needs a convolution halo of at most "
                  "64 tokens";
    return failure();
  }
  p.tiles = p.group + 2;
  p.convChannels = (p.group + 1) * p.headDim;
  p.channels = p.tiles * p.headDim;
  p.threads = 256;
  p.midRows = p.blockS + p.k1 - 1;
  p.aStageBytes = 128 * 64 * 2;
  p.bStageBytes = p.headDim * 128;
  for (p.stages = 3; p.stages >= 2; --p.stages) {
    int64_t ring = p.stages * (p.aStageBytes + p.bStageBytes);
    int64_t scratch = std::max<int64_t>(p.midRows, p.blockS) * p.threads * 4;
    p.aOff = 0;
    p.bOff = p.stages * p.aStageBytes;
    p.scratchOff = 0;
    p.uOff = llvm::alignTo(std::max(ring, scratch), 1024);
    p.partOff = llvm::alignTo(p.uOff + p.rows * p.channels * 2, 16);
    p.barOff = p.partOff + (p.threads / 32) * p.blockS * 4;
    p.sharedBytes = p.barOff + TmaRing::barrierBytes(p.stages, 1) + 1024;
    if (p.sharedBytes <= kMaxDynamicSharedBytes)
      break;
  }
  if (p.sharedBytes > kMaxDynamicSharedBytes) {
    unsupported = "the sm_90a prologue's shared memory (" +
                  std::to_string(p.sharedBytes) + " bytes) exceeds 227 KiB";
    return failure();
  }
  std::string name = llvm::formatv("attn_cca_prologue_{0}_e{1}_h{2}_g{3}_d{4}"
                                   "_k{5}x{6}",
                                   elemName(p.elem), p.width, p.numHeads,
                                   p.group, p.headDim, p.k0, p.k1);
  p.name = name + ccaKernelNameSuffix(p.qkMean, p.valueShift, p.clamped,
                                      p.clampEps, p.rotated);
  if (p.paddingMaskBits)
    p.name += "_mask" + std::to_string(p.paddingMaskBits);
  return p;
}

namespace {

/// Rows of one TMA load of a value head's weight tile. With the value shift
/// and an odd number of KV heads the middle head's first half comes from Wv
/// and its second from Wv_prev: half-head loads keep each in one tensor.
int64_t valueLoadRows(const ProloguePlan &p) {
  return p.valueShift && p.numKvHeads % 2 ? p.headDim / 2 : p.headDim;
}

class PrologueEmitter {
public:
  PrologueEmitter(DeviceBuilder &d, const ProloguePlan &p, gpu::GPUFuncOp func)
      : d(d), p(p), func(func) {}
  void emit();

private:
  Value aStage(Value s) { return d.sSlot(smem, p.aOff, s, p.aStageBytes); }
  Value bStage(Value s) { return d.sSlot(smem, p.bOff, s, p.bStageBytes); }
  /// Shared pointer to u[row][col] (16-bit).
  Value uAt(Value row, Value col) {
    return d.sAt(smem,
                 d.add(d.shl(d.add(d.mul(row, p.channels), col), 1), p.uOff));
  }
  /// Shared pointer to f32 scratch[row][col] (row = 256 floats).
  Value scratchAt(Value row, Value col) {
    return d.sAt(
        smem, d.add(d.shl(d.add(d.mul(row, p.threads), col), 2), p.scratchOff));
  }
  Value loadU(Value row, Value col) {
    return arith::ExtFOp::create(d.b, d.loc, d.f32,
                                 d.load(d.elemType, uAt(row, col), 2));
  }
  Value toElem(Value v) {
    return arith::TruncFOp::create(d.b, d.loc, d.elemType, v);
  }
  Value i64(Value v) { return arith::ExtUIOp::create(d.b, d.loc, d.i64, v); }
  /// Element `(token row, head, column)` of a `[B * S, heads, dim]` output,
  /// in 64 bits (a token row index fits 31).
  Value headElement(Value tokenRow, Value heads, Value head, Value column) {
    auto add = [&](Value x, Value y) {
      return arith::AddIOp::create(d.b, d.loc, x, y);
    };
    auto mul = [&](Value x, Value y) {
      return arith::MulIOp::create(d.b, d.loc, x, y);
    };
    return add(mul(add(mul(i64(tokenRow), heads), i64(head)), d.c64(p.headDim)),
               i64(column));
  }

  /// The conv channel a thread owns in one chunk.
  struct ConvChannel {
    Value active;    // the chunk's channel exists
    Value clamped;   // the channel (clamped into range) in the group
    Value localHead; // its head in the group (G: the key head)
    Value column;    // its column in the head
    Value isKey;
    Value global;   // the channel in the op's [query | key heads] order
    Value slotBase; // the scratch column of the head's first channel
  };

  void issue(Value g);
  void gemm();
  void convChunk(Value chunk);
  void depthwiseConv(const ConvChannel &c);
  SmallVector<Value> groupedConv(const ConvChannel &c);
  void addQKMean(const ConvChannel &c, SmallVectorImpl<Value> &acc);
  void normalize(const ConvChannel &c, SmallVectorImpl<Value> &acc);
  void rotate(const ConvChannel &c, SmallVectorImpl<Value> &acc);
  void storeHeads(const ConvChannel &c, ArrayRef<Value> acc);
  void values();

  DeviceBuilder &d;
  const ProloguePlan &p;
  gpu::GPUFuncOp func;
  Value tmaX, tmaWq, tmaWk, tmaWv, tmaWvp, seq;
  Value dwW, dwB, gW, gB, temp, ropeCos, ropeSin, outQ, outK, outV, mask;
  Value smem, tid, wg, tInWg, warp, warpInWg, lane, s0, kvHead, batch;
  /// The x and weight k steps: full barriers only (every k step ends at a
  /// CTA barrier before its stage is refilled).
  std::optional<TmaRing> ring;
  int64_t numK = 0, total = 0;
};

void PrologueEmitter::emit() {
  KernelArguments args(func);
  tmaX = args.next();
  tmaWq = args.next();
  tmaWk = args.next();
  tmaWv = args.next();
  tmaWvp = args.nextIf(p.valueShift);
  seq = args.next();
  dwW = args.next();
  dwB = args.next();
  gW = args.next();
  gB = args.next();
  temp = args.next();
  ropeCos = args.nextIf(p.rotated);
  ropeSin = args.nextIf(p.rotated);
  outQ = args.next();
  outK = args.next();
  outV = args.next();
  mask = args.nextIf(p.paddingMaskBits);

  tid = d.tid();
  wg = d.divu(tid, 128);
  tInWg = d.remu(tid, 128);
  warp = d.divu(tid, 32);
  warpInWg = d.divu(tInWg, 32);
  lane = d.remu(tid, 32);
  smem = d.alignedDynamicShared(kSharedSymbol);
  s0 = d.mul(d.ctaid(0), p.blockS);
  kvHead = d.ctaid(1);
  batch = d.ctaid(2);
  numK = p.width / 64;
  total = numK * p.tiles;
  ring.emplace(d, smem, p.barOff, p.stages);
  initializeBarriers(d, tid, [&]() { ring->initBarriers({1}); });
  gemm();
  d.barrierAll();
  int64_t chunks = (p.convChannels + p.threads - 1) / p.threads;
  d.forLoop(d.c32(0), d.c32(chunks), d.c32(1), ValueRange(),
            [&](Value chunk, ValueRange) -> SmallVector<Value> {
              convChunk(chunk);
              return {};
            });
  values();
}

/// Loads k step `g` (of tile g / numK) into stage g % stages.
void PrologueEmitter::issue(Value g) {
  Value tile = d.divu(g, numK);
  Value k0 = d.mul(d.remu(g, numK), 64);
  Value s = ring->arm(g, p.aStageBytes + p.bStageBytes);
  Value bar = ring->full(s);
  // x rows [s0 - halo, s0 - halo + 128): box {64, 128, 1}.
  d.tmaLoad(aStage(s), tmaX, {k0, d.sub(s0, p.halo), batch}, bar);
  Value dst = bStage(s);
  int64_t d0 = p.headDim;
  d.ifThenElse(
      d.cmp(CmpIPredicate::ult, tile, p.group),
      [&]() {
        Value row = d.mul(d.add(d.mul(kvHead, p.group), tile), d0);
        d.tmaLoad(dst, tmaWq, {k0, row}, bar);
      },
      [&]() {
        d.ifThenElse(
            d.cmp(CmpIPredicate::eq, tile, p.group),
            [&]() { d.tmaLoad(dst, tmaWk, {k0, d.mul(kvHead, d0)}, bar); },
            [&]() {
              Value row = d.mul(kvHead, d0);
              if (!p.valueShift) {
                d.tmaLoad(dst, tmaWv, {k0, row}, bar);
                return;
              }
              // Value rows below `half` come from Wv, the rest from Wv_prev;
              // a load never straddles them (see valueLoadRows).
              int64_t half = p.numKvHeads * d0 / 2, rows = valueLoadRows(p);
              for (int64_t part = 0; part < d0 / rows; ++part) {
                Value partRow = part ? d.add(row, part * rows) : row;
                Value partDst = part ? d.sAt(dst, part * rows * 128) : dst;
                d.ifThenElse(
                    d.cmp(CmpIPredicate::slt, partRow, half),
                    [&]() { d.tmaLoad(partDst, tmaWv, {k0, partRow}, bar); },
                    [&]() {
                      d.tmaLoad(partDst, tmaWvp, {k0, d.sub(partRow, half)},
                                bar);
                    });
              }
            });
      });
}

void PrologueEmitter::gemm() {
  int n = static_cast<int>(p.headDim);
  d.ifThen(d.cmp(CmpIPredicate::eq, tid, 0), [&]() {
    for (int64_t g = 0; g < std::min(p.stages, total); ++g)
      issue(d.c32(g));
  });
  // One k step: wait for its stage, m64nDk16 x 4, wait for the group, then
  // (all warps past the barrier) refill the stage with step g + stages.
  auto step = [&](Value g, Value acc, bool first) {
    Value s = ring->wait(g);
    Value da =
        d.wgmmaDesc(d.sAddr(d.sAt(aStage(s), d.mul(wg, 64 * 128))), 16, 1024);
    Value db = d.wgmmaDesc(d.sAddr(bStage(s)), 16, 1024);
    acc = mmaSharedShared(d, acc, da, db, n, 64, 0, 0, /*accumulate=*/!first);
    d.wgmmaWait(0);
    d.barrierAll();
    Value next = d.add(g, p.stages);
    d.ifThen(d.andb(d.cmp(CmpIPredicate::eq, tid, 0),
                    d.cmp(CmpIPredicate::slt, next, total)),
             [&]() { issue(next); });
    return acc;
  };
  // With a padding mask: whether each of the thread's two accumulator rows
  // (row 64 wg + 16 warp + lane / 4 + 8 h, token s0 - halo + row) is a real
  // token. Rows outside the sequence are TMA zero fill either way.
  Value rowReal[2];
  if (p.paddingMaskBits)
    for (int64_t h = 0; h < 2; ++h) {
      Value row = d.add(
          d.add(d.add(d.mul(wg, 64), d.mul(warpInWg, 16)), d.divu(lane, 4)),
          8 * h);
      Value token = d.sub(d.add(s0, row), d.c32(p.halo));
      Value outside = d.orb(d.cmp(CmpIPredicate::slt, token, 0),
                            d.cmp(CmpIPredicate::sge, token, seq));
      Value clamped = d.maxs(d.mins(token, d.sub(seq, d.c32(1))), d.c32(0));
      Value index = d.add(d.mul(batch, seq), clamped);
      rowReal[h] = d.orb(outside, d.nonZeroAt(mask, index, p.paddingMaskBits));
    }
  d.forLoop(
      d.c32(0), d.c32(p.tiles), d.c32(1), ValueRange(),
      [&](Value tile, ValueRange) -> SmallVector<Value> {
        Value g0 = d.mul(tile, numK);
        Value acc = step(g0, d.poisonAcc(n), /*first=*/true);
        acc = d.forLoop(d.c32(1), d.c32(numK), d.c32(1), ValueRange{acc},
                        [&](Value k, ValueRange args) -> SmallVector<Value> {
                          return {step(d.add(g0, k), args[0], false)};
                        })[0];
        // Accumulator value i: row 64 wg + 16 warp + lane / 4 + 8 ((i/2)%2),
        // column 8 (i / 4) + 2 (lane % 4) + i % 2 of the tile.
        SmallVector<Value> v = d.unpack(acc, n);
        Value groupRow =
            d.add(d.add(d.mul(wg, 64), d.mul(warpInWg, 16)), d.divu(lane, 4));
        Value colBase =
            d.add(d.mul(tile, p.headDim), d.mul(d.andi(lane, 3), 2));
        for (int64_t h = 0; h < 2; ++h) {
          Value row = d.add(groupRow, 8 * h);
          d.ifThen(d.cmp(CmpIPredicate::slt, row, p.rows), [&]() {
            for (int64_t g = 0; g < n / 8; ++g) {
              int64_t i = 4 * g + 2 * h;
              Value lo = v[i], hi = v[i + 1];
              if (p.paddingMaskBits) {
                lo = d.select(rowReal[h], lo, d.cf(0.0));
                hi = d.select(rowReal[h], hi, d.cf(0.0));
              }
              Value packed = d.packHalf2(lo, hi);
              d.store(packed, uAt(row, d.add(colBase, 8 * g)), 4);
            }
          });
        }
        return {};
      });
}

void PrologueEmitter::convChunk(Value chunk) {
  int64_t dim = p.headDim, G = p.group, T = p.threads;
  ConvChannel c;
  Value ch = d.add(d.mul(chunk, T), tid);
  c.active = d.cmp(CmpIPredicate::slt, ch, p.convChannels);
  c.clamped = d.mins(ch, d.c32(p.convChannels - 1));
  c.localHead = d.divu(c.clamped, dim);
  c.column = d.remu(c.clamped, dim);
  c.isKey = d.cmp(CmpIPredicate::eq, c.localHead, G);
  // Channel in the op's [query heads | key heads] order.
  c.global = d.select(
      c.isKey, d.add(d.mul(kvHead, dim), d.add(c.column, p.numHeads * dim)),
      d.add(d.mul(d.add(d.mul(kvHead, G), c.localHead), dim), c.column));
  depthwiseConv(c);
  // The first column of the thread's head.
  c.slotBase = d.mul(d.divu(tid, dim), dim);
  SmallVector<Value> acc = groupedConv(c);
  if (p.qkMean)
    addQKMean(c, acc);
  normalize(c, acc);
  if (p.rotated)
    rotate(c, acc);
  storeHeads(c, acc);
}

/// (a) depthwise conv of this channel: m[r] = b + sum_t w[t] u[r + t + off].
void PrologueEmitter::depthwiseConv(const ConvChannel &c) {
  Value chc = c.clamped, gc = c.global;
  SmallVector<Value> wdw;
  for (int64_t t = 0; t < p.k0; ++t)
    wdw.push_back(d.loadF32(dwW, d.add(d.mul(gc, p.k0), t)));
  Value bdw = d.loadF32(dwB, gc);
  int64_t off = p.halo - p.padding;
  for (int64_t r = 0; r < p.midRows; ++r) {
    Value m = bdw;
    for (int64_t t = 0; t < p.k0; ++t)
      m = d.fma(wdw[t], loadU(d.c32(r + t + off), chc), m);
    d.store(m, scratchAt(d.c32(r), tid), 4);
  }
  d.barrierAll();
}

/// (b) grouped conv: acc[i] = b_g + sum_{e, t} w_g[gc, e, t] m[i + t][e].
SmallVector<Value> PrologueEmitter::groupedConv(const ConvChannel &c) {
  int64_t dim = p.headDim;
  Value gc = c.global, slotBase = c.slotBase;
  Value bg = d.loadF32(gB, gc);
  SmallVector<Value> init(p.blockS, bg);
  SmallVector<Value> acc =
      d.forLoop(d.c32(0), d.c32(dim), d.c32(1), init,
                [&](Value e, ValueRange args) -> SmallVector<Value> {
                  SmallVector<Value> a(args.begin(), args.end());
                  SmallVector<Value> w;
                  Value wBase = d.mul(d.add(d.mul(gc, dim), e), p.k1);
                  for (int64_t t = 0; t < p.k1; ++t)
                    w.push_back(d.loadF32(gW, d.add(wBase, t)));
                  Value col = d.add(slotBase, e);
                  for (int64_t r = 0; r < p.midRows; ++r) {
                    Value m = d.load(d.f32, scratchAt(d.c32(r), col), 4);
                    for (int64_t t = 0; t < p.k1; ++t) {
                      int64_t i = r - t;
                      if (i >= 0 && i < p.blockS)
                        a[i] = d.fma(m, w[t], a[i]);
                    }
                  }
                  return a;
                });
  return acc;
}

/// (c) QK-mean from the pre-conv projections of the token's row.
void PrologueEmitter::addQKMean(const ConvChannel &c,
                                SmallVectorImpl<Value> &acc) {
  int64_t dim = p.headDim, G = p.group;
  Value o = c.column, chc = c.clamped, isKey = c.isKey;
  Value keyCol = d.add(o, G * dim);
  for (int64_t i = 0; i < p.blockS; ++i) {
    Value row = d.c32(i + p.halo);
    Value kraw = loadU(row, keyCol);
    Value own = loadU(row, chc);
    Value qsum;
    for (int64_t m = 0; m < G; ++m) {
      Value q = loadU(row, d.add(o, m * dim));
      qsum = qsum ? d.addf(qsum, q) : q;
    }
    Value qmean = d.mulf(qsum, d.cf(1.0 / static_cast<double>(G)));
    Value term = d.select(isKey, d.addf(qmean, kraw), d.addf(own, kraw));
    acc[i] = d.fma(term, d.cf(0.5), acc[i]);
  }
}

/// (d) L2 norm over the head's d channels (= d consecutive threads), times
/// sqrt(d) and, for keys, the temperature.
void PrologueEmitter::normalize(const ConvChannel &c,
                                SmallVectorImpl<Value> &acc) {
  int64_t dim = p.headDim;
  Value isKey = c.isKey, slotBase = c.slotBase;
  Value partBase = d.sAt(smem, p.partOff);
  for (int64_t i = 0; i < p.blockS; ++i) {
    Value sq = d.warpSum(d.mulf(acc[i], acc[i]));
    d.ifThen(d.cmp(CmpIPredicate::eq, lane, 0), [&]() {
      d.store(sq, d.sAt(partBase, d.shl(d.add(d.mul(warp, p.blockS), i), 2)),
              4);
    });
  }
  d.barrierAll();
  Value one = d.cf(1.0);
  Value keyTau = keyTemperature(d, d.loadF32(temp, kvHead), p.clamped);
  Value tau = d.select(isKey, keyTau, one);
  Value warp0 = d.divu(slotBase, 32);
  Value scale = d.mulf(d.cf(std::sqrt(static_cast<double>(dim))), tau);
  for (int64_t i = 0; i < p.blockS; ++i) {
    Value sum;
    for (int64_t w = 0; w < dim / 32; ++w) {
      Value part = d.load(
          d.f32,
          d.sAt(partBase, d.shl(d.add(d.mul(d.add(warp0, w), p.blockS), i), 2)),
          4);
      sum = sum ? d.addf(sum, part) : part;
    }
    Value norm = headNorm(d, sum, p.clampEps, p.eps);
    acc[i] = d.divf(d.mulf(acc[i], scale), norm);
  }
}

/// (e) RoPE: the partner column o +- r/2 lives in another thread.
void PrologueEmitter::rotate(const ConvChannel &c,
                             SmallVectorImpl<Value> &acc) {
  Value o = c.column;
  for (int64_t i = 0; i < p.blockS; ++i)
    d.store(acc[i], scratchAt(d.c32(i), tid), 4);
  d.barrierAll();
  int64_t half = p.rotated / 2;
  Value low = d.cmp(CmpIPredicate::slt, o, half);
  Value rotatedDim = d.cmp(CmpIPredicate::slt, o, p.rotated);
  Value partnerCol = d.select(low, d.add(tid, half), d.sub(tid, half));
  partnerCol = d.select(rotatedDim, partnerCol, tid);
  Value freq = d.select(low, o, d.sub(o, half));
  freq = d.mins(freq, d.c32(half - 1));
  Value sign = d.select(low, d.cf(-1.0), d.cf(1.0));
  Value lastPos = d.sub(seq, 1);
  for (int64_t i = 0; i < p.blockS; ++i) {
    Value pos = d.mins(d.add(s0, i), lastPos);
    Value idx = d.add(d.mul(pos, half), freq);
    Value cs = d.load(d.f32, d.gAt(ropeCos, idx, d.f32), 4);
    Value sn = d.load(d.f32, d.gAt(ropeSin, idx, d.f32), 4);
    Value partner = d.load(d.f32, scratchAt(d.c32(i), partnerCol), 4);
    Value rot = d.fma(d.mulf(partner, sign), sn, d.mulf(acc[i], cs));
    acc[i] = d.select(rotatedDim, rot, acc[i]);
  }
}

/// (f) Store: query [B, S, Hq, d] or key [B, S, Hk, d].
void PrologueEmitter::storeHeads(const ConvChannel &c, ArrayRef<Value> acc) {
  int64_t G = p.group;
  Value isKey = c.isKey, o = c.column, active = c.active;
  Value localHead = c.localHead;
  Value outPtr = d.select(isKey, outK, outQ);
  Value headsOut = d.select(isKey, d.c32(p.numKvHeads), d.c32(p.numHeads));
  Value head = d.select(isKey, kvHead, d.add(d.mul(kvHead, G), localHead));
  for (int64_t i = 0; i < p.blockS; ++i) {
    Value token = d.add(s0, i);
    d.ifThen(d.andb(active, d.cmp(CmpIPredicate::slt, token, seq)), [&]() {
      Value rowIndex = d.add(d.mul(batch, seq), token); // < 2^31 tokens
      Value index = headElement(rowIndex, i64(headsOut), head, o);
      d.store(toElem(acc[i]), d.gAt(outPtr, index, d.elemType), 2);
    });
  }
  d.barrierAll();
}

void PrologueEmitter::values() {
  int64_t dim = p.headDim, T = p.threads;
  Value o = d.remu(tid, dim);
  Value i0 = d.divu(tid, dim);
  Value rowOff = d.c32(p.halo);
  // Value columns past the first Lk / 2 carry the previous token (with an
  // odd number of KV heads, the middle head holds both halves).
  if (p.valueShift)
    rowOff = d.select(d.cmp(CmpIPredicate::sge, d.add(d.mul(kvHead, dim), o),
                            p.numKvHeads * dim / 2),
                      d.c32(p.halo - 1), rowOff);
  Value col = d.add(o, (p.group + 1) * dim);
  for (int64_t k = 0; k < p.blockS / (T / dim); ++k) {
    Value i = d.add(i0, k * (T / dim));
    Value token = d.add(s0, i);
    d.ifThen(d.cmp(CmpIPredicate::slt, token, seq), [&]() {
      Value v = d.load(d.elemType, uAt(d.add(i, rowOff), col), 2);
      Value rowIndex = d.add(d.mul(batch, seq), token);
      Value index = headElement(rowIndex, d.c64(p.numKvHeads), kvHead, o);
      d.store(v, d.gAt(outV, index, d.elemType), 2);
    });
  }
}

} // namespace

void attnfuse::sm90::buildCCAPrologueKernel(OpBuilder &b, Location loc,
                                            gpu::GPUModuleOp module,
                                            const ProloguePlan &p) {
  KernelSignature signature(b.getContext());
  signature.tma(4)
      .tma(1, p.valueShift)
      .scalar()
      .pointer(5)
      .pointer(2, p.rotated)
      .pointer(3)
      .pointer(1, p.paddingMaskBits);
  KernelBody body(b, loc, module, p.name, signature, p.threads, 1, p.elem);
  PrologueEmitter(body.d, p, body.func).emit();
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeCCAPrologue(MLIRContext *ctx, CCAPrologueOp op,
                                    const ProloguePlan &p) {
  StringRef elem = elemName(p.elem);
  int64_t e = p.width, dim = p.headDim, hq = p.numHeads, hk = p.numKvHeads;
  int64_t lq = hq * dim, lk = hk * dim, c = lq + lk;
  auto tensor = [&](StringRef name, StringRef role, int64_t operand,
                    ArrayRef<Attribute> shape, StringRef layout) {
    return describeTensor(ctx, name, role, operand, elem, shape, {}, layout);
  };
  auto I = [&](int64_t v) { return intAttr(ctx, v); };
  auto S = [&](StringRef v) { return strAttr(ctx, v); };
  int64_t valueRows = p.valueShift ? lk / 2 : lk;
  SmallVector<Attribute> tensors = {
      tensor("input", "input", 0, {S("B"), S("S"), I(e)},
             "row-major [batch, seq, width], contiguous"),
      tensor("wq", "weight", 1, {I(lq), I(e)}, "row-major, contiguous"),
      tensor("wk", "weight", 2, {I(lk), I(e)}, "row-major, contiguous"),
      tensor("wv", "weight", 3, {I(valueRows), I(e)}, "row-major, contiguous")};
  int64_t operand = 4;
  if (p.valueShift)
    tensors.push_back(tensor("wv_prev", "weight", operand++,
                             {I(valueRows), I(e)}, "row-major, contiguous"));
  tensors.push_back(tensor("conv_dw_weight", "weight", operand++,
                           {I(c), I(1), I(p.k0)}, "contiguous"));
  tensors.push_back(
      tensor("conv_dw_bias", "bias", operand++, {I(c)}, "contiguous"));
  tensors.push_back(tensor("conv_g_weight", "weight", operand++,
                           {I(c), I(dim), I(p.k1)}, "contiguous"));
  tensors.push_back(
      tensor("conv_g_bias", "bias", operand++, {I(c)}, "contiguous"));
  tensors.push_back(tensor("temp", "weight", operand++, {I(hk)},
                           "contiguous (converted to the kernel type)"));
  tensors.push_back(tensor("query", "result", -1,
                           {S("B"), S("S"), I(hq), I(dim)},
                           "row-major [batch, seq, heads, head_dim]"));
  tensors.push_back(tensor("key", "result", -1, {S("B"), S("S"), I(hk), I(dim)},
                           "row-major [batch, seq, kv_heads, head_dim]"));
  tensors.push_back(tensor("value", "result", -1,
                           {S("B"), S("S"), I(hk), I(dim)},
                           "row-major [batch, seq, kv_heads, head_dim]"));

  auto tma = [&](StringRef param, StringRef tensorName,
                 SmallVector<Attribute> dims, SmallVector<Attribute> strides,
                 SmallVector<int64_t> box) {
    TmaInfo t;
    t.param = param.str();
    t.tensor = tensorName.str();
    t.role = "load";
    t.globalDim = std::move(dims);
    t.globalStridesBytes = std::move(strides);
    t.boxDim = std::move(box);
    return describeTma(ctx, t, p.elem);
  };
  SmallVector<Attribute> tmas = {
      tma("tma_x", "input", {I(e), S("S"), S("B")},
          {I(e * 2), scaled(ctx, e * 2, "S")}, {64, 128, 1}),
      tma("tma_wq", "wq", {I(e), I(lq)}, {I(e * 2)}, {64, dim}),
      tma("tma_wk", "wk", {I(e), I(lk)}, {I(e * 2)}, {64, dim}),
      tma("tma_wv", "wv", {I(e), I(valueRows)}, {I(e * 2)},
          {64, valueLoadRows(p)})};
  if (p.valueShift)
    tmas.push_back(tma("tma_wv_prev", "wv_prev", {I(e), I(valueRows)},
                       {I(e * 2)}, {64, valueLoadRows(p)}));

  SmallVector<Attribute> params = {
      describeParam(ctx, "tma_x", "tma_descriptor", "tma_x", ""),
      describeParam(ctx, "tma_wq", "tma_descriptor", "tma_wq", ""),
      describeParam(ctx, "tma_wk", "tma_descriptor", "tma_wk", ""),
      describeParam(ctx, "tma_wv", "tma_descriptor", "tma_wv", "")};
  if (p.valueShift)
    params.push_back(
        describeParam(ctx, "tma_wv_prev", "tma_descriptor", "tma_wv_prev", ""));
  params.push_back(describeParam(ctx, "seq", "scalar", "i32", "S"));
  for (StringRef t : {"conv_dw_weight", "conv_dw_bias", "conv_g_weight",
                      "conv_g_bias", "temp"})
    params.push_back(describeParam(ctx, t, "pointer", elem, t));
  SmallVector<Attribute> tables;
  if (p.rotated) {
    describeRopeTables(ctx, "rope", p.theta, p.rotated, "S", params, tables);
  }
  for (StringRef t : {"query", "key", "value"})
    params.push_back(describeParam(ctx, t, "pointer", elem, t));
  if (p.paddingMaskBits) {
    StringRef maskType = p.paddingMaskBits == 64 ? "i64" : "i32";
    tensors.push_back(describeTensor(
        ctx, "padding_mask",
        "padding mask: token s of sequence b is real where padding_mask[b, s] "
        "!= 0, else a zero row of x",
        operand++, maskType, {S("B"), S("S")}, {},
        "row-major [batch, seq], contiguous"));
    params.push_back(describeParam(ctx, "padding_mask", "pointer", maskType,
                                   "padding_mask"));
  }

  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "S", p.blockS),
                                 gridConstant(ctx, hk),
                                 gridCeilDiv(ctx, "B", 1)};
  DictBuilder config = ccaConfig(ctx, p);
  config.set("width", e)
      .set("halo", p.halo)
      .set("block_tokens", p.blockS)
      .set("op_block_s", static_cast<int64_t>(op.getBlockS()))
      .set("gemm_rows", int64_t(128))
      .set("gemm_tile_n", dim)
      .set("block_k", int64_t(64))
      .set("stages", p.stages)
      .set("padding_mask_bits", p.paddingMaskBits)
      .set("grouped_conv", "FMA loops (thread per output channel)");
  return describeLaunch(ctx,
                        {p.name, "cca_prologue",
                         "B = batch, S = sequence length", p.threads,
                         p.sharedBytes},
                        {grid, params, tensors, tmas, tables}, config.get(),
                        {p.hostCastFromF32, "outputs"});
}
