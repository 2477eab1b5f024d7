//===- FlashAttention.cpp - attn.flash_attention to tiled loops -*- C++ -*-===//
//
// The op is tiled with upstream scf::tileUsingSCF through its
// TilingInterface, one tile per (batch, KV head, block_q query rows): an
// `scf.forall` (or nested `scf.for`) whose body holds an attn.flash_attention
// on the tile's slices. That tile op is then decomposed here into linalg
// and arith on tiles: the G = Hq / Hk query heads of the group form one
// [G, block_q, d] tile that every key tile is multiplied with, so a
// key/value tile is read once per group. A running row maximum m, sum l and
// output accumulator live in the compute type (f32 for 16-bit inputs)
// across the key loop (online softmax); the S x T score matrix never
// exists.
//
// The scores are computed transposed, [G, block_kv, block_q] (query rows
// innermost), from the query tile stored [G, d, block_q] (transposed once
// per query tile): the key and value tiles are used in their rows' layout,
// with no transposing copy per key tile, and the softmax maxima and sums
// over the keys are element-wise vector ops across key rows, not a
// horizontal reduction per query row.
//
// Key tiles wholly after the causal diagonal, or wholly before the sliding
// window, are not visited: the key loop bounds exclude them. Only tiles that
// cross the diagonal or the window edge take the masked path; the last
// partial key tile (zero-padded to a whole tile) is read after the loop over
// the whole ones, and masked. The query rows are zero-padded to block_q so
// every tile computation has a static shape; padded rows are not stored.
// For K=V the one key block serves Q K^T and P V, or, when the op rotates
// the keys, a rotated block serves Q K^T and an un-rotated one P V. A key mask
// (a padded batch) is read per key tile and masks every tile.
//
// The key and value tiles are converted (and the keys rotated) once, before
// the tile loops, into contiguous blocks `[B, Hk, ceil(T / block_kv),
// block_kv, d]`, the last one zero-padded: every query tile of a KV head
// reads them. Sliced from `[B, T, Hk, d]` per query tile, a key tile's rows
// lay H_k d elements apart (4 KiB for 8 heads of 128), and converting them
// took a fifth of the kernel's time.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Rope.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::kernels;

namespace {

/// The converted key and value tiles of every key block (packKeyValueBlocks).
struct KeyValueBlocks {
  Value keys, values;
};

/// Decomposes one tile of attn.flash_attention (batch 1, one KV head, at
/// most block_q query rows, as tileUsingSCF produces with tile sizes
/// [1, 1, block_q]) into linalg on tensors.
class FlashAttentionTile {
public:
  FlashAttentionTile(FlashAttentionOp op, OpBuilder &builder,
                     const RopeTables &queryRope, const KeyValueBlocks &blocks)
      : op(op),
        kb(builder, op.getLoc(),
           cast<RankedTensorType>(op.getQuery().getType()).getElementType()),
        queryRope(queryRope), blocks(blocks) {
    auto queryType = cast<RankedTensorType>(op.getQuery().getType());
    group = queryType.getDimSize(2);
    headDim = queryType.getDimSize(3);
    valueDim =
        cast<RankedTensorType>(op.getValueOrKey().getType()).getDimSize(3);
    blockQ = op.getBlockQ();
    blockKV = op.getBlockKv();
    scale = op.getScaleAttr() ? op.getScaleAttr().getValueAsDouble()
                              : 1.0 / std::sqrt(static_cast<double>(headDim));
  }

  /// The tile's output, written into the op's init, and with an lse init
  /// the log-sum-exp of its rows.
  SmallVector<Value> build();

private:
  /// `[G, d, block_q]` compute-type tile of the group's query heads
  /// (rotated when asked), times the softmax scale: the scores need no
  /// pass of their own for it.
  Value loadQueryTile();
  /// `[block_kv, d]` compute-type key tile (rotated when asked) and
  /// `[block_kv, dv]` value tile of the keys from `key0`, slices of the
  /// packed blocks (the last one zero-padded).
  std::pair<Value, Value> loadKeyValueTiles(Value key0);
  /// Biased and (when `masked`) masked transposed scores
  /// `[G, block_kv, block_q]` of the key tile at `key0` against the
  /// (scaled) query tile.
  Value scores(Value queryTile, Value keyTile, Value key0, bool masked);
  /// Online-softmax update of (m, l, acc) with one key tile.
  SmallVector<Value> update(Value scoreTile, Value valueTile, ValueRange state);
  /// The output rows acc / l, written into the op's init.
  Value store(Value acc, Value sum);
  /// The log-sum-exp m + log l of the rows, written into the lse init
  /// ([1, rows, G]).
  Value storeLogSumExp(Value max, Value sum);

  FlashAttentionOp op;
  KernelBuilder kb;
  const RopeTables &queryRope;
  const KeyValueBlocks &blocks;
  int64_t group, headDim, valueDim, blockQ, blockKV;
  double scale;

  // Set by build(): the tile's rows and the keys, the position of its first
  // query row among the keys, the bias and key mask padded to whole tiles.
  Value rows, keys, rowOffset, firstQuery, bias, keyMask;
};

SmallVector<Value> FlashAttentionTile::build() {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  rows = kb.dim(op.getQuery(), 1);
  keys = kb.dim(op.getKey(), 1);
  Value paddedKeys = kb.mul(kb.ceilDiv(keys, blockKV), blockKV);
  // Row r of the tile is row rowOffset + r of an attention of rowCount rows,
  // at key position rowOffset + r + (T - rowCount).
  rowOffset = op.getQueryRowOffset();
  Value rowCount = op.getQueryRowCount();
  if (!rowOffset) {
    rowOffset = kb.index(0);
    rowCount = rows;
  }
  firstQuery = kb.add(rowOffset, kb.sub(keys, rowCount));
  if (Value biasOperand = op.getBias()) {
    int64_t rank = cast<RankedTensorType>(biasOperand.getType()).getRank();
    bias = kb.padDimsTo(biasOperand,
                        {{rank - 2, kb.index(blockQ)}, {rank - 1, paddedKeys}});
  }
  // Padded keys read a zero mask: masked like the keys past the end.
  if (Value mask = op.getKeyMask())
    keyMask = kb.padDimTo(mask, 1, paddedKeys);

  Value queryTile = loadQueryTile();
  // Visible keys of the tile: positions [loKey, hiKey).
  Value lastQuery = kb.add(firstQuery, blockQ - 1);
  Value hiKey = keys;
  if (op.getCausal())
    hiKey = kb.min(keys, kb.max(kb.add(lastQuery, 1), kb.index(0)));
  Value loKey = kb.index(0);
  if (std::optional<int64_t> window = op.getWindow())
    loKey = kb.max(loKey, kb.sub(firstQuery, kb.index(*window - 1)));
  Value loBlock = kb.floorDiv(loKey, blockKV);
  Value hiBlock = kb.max(loBlock, kb.ceilDiv(hiKey, blockKV));

  Value wholeBlocks = kb.floorDiv(keys, blockKV);

  // One key tile into the softmax state.
  auto step = [&](Value key0, ValueRange state, bool partial) {
    Value keyTile, valueTile;
    std::tie(keyTile, valueTile) = loadKeyValueTiles(key0);
    // A key mask can hide any key, and a partial tile has padded keys:
    // those are masked everywhere. Otherwise only tiles crossing the
    // diagonal or the window edge need the mask.
    if (keyMask || partial)
      return update(scores(queryTile, keyTile, key0, /*masked=*/true),
                    valueTile, state);
    Value lastKey = kb.add(key0, blockKV - 1);
    Value needsMask;
    auto maskWhen = [&](Value condition) {
      needsMask = needsMask ? kb.orI(needsMask, condition) : condition;
    };
    if (op.getCausal())
      maskWhen(kb.lessThan(firstQuery, lastKey));
    if (std::optional<int64_t> window = op.getWindow())
      maskWhen(kb.lessThan(kb.index(*window - 1), kb.sub(lastQuery, key0)));
    if (!needsMask)
      return update(scores(queryTile, keyTile, key0, /*masked=*/false),
                    valueTile, state);
    auto branch = scf::IfOp::create(
        b, loc, needsMask,
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(
              b, loc, scores(queryTile, keyTile, key0, /*masked=*/true));
        },
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(
              b, loc, scores(queryTile, keyTile, key0, /*masked=*/false));
        });
    return update(branch.getResult(0), valueTile, state);
  };

  Value maxInit =
      kb.fill(kb.empty({group, blockQ}, kb.computeType),
              kb.constant(-std::numeric_limits<double>::infinity()));
  Value sumInit =
      kb.fill(kb.empty({group, blockQ}, kb.computeType), kb.constant(0.0));
  Value accInit = kb.fill(kb.empty({group, blockQ, valueDim}, kb.computeType),
                          kb.constant(0.0));
  auto keyLoop = scf::ForOp::create(
      b, loc, loBlock, kb.max(loBlock, kb.min(hiBlock, wholeBlocks)),
      kb.index(1), ValueRange{maxInit, sumInit, accInit},
      [&](OpBuilder &, Location, Value keyBlock, ValueRange state) {
        scf::YieldOp::create(b, loc,
                             step(kb.mul(keyBlock, blockKV), state, false));
      });
  // The partial key tile, when there is one and the tile sees it.
  auto tail = scf::IfOp::create(
      b, loc, kb.lessThan(wholeBlocks, hiBlock),
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, loc,
                             step(kb.mul(wholeBlocks, blockKV),
                                  keyLoop.getResults(), /*partial=*/true));
      },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, loc, keyLoop.getResults());
      });
  SmallVector<Value> results = {store(tail.getResult(2), tail.getResult(1))};
  if (op.getLseInit())
    results.push_back(storeLogSumExp(tail.getResult(0), tail.getResult(1)));
  return results;
}

Value FlashAttentionTile::loadQueryTile() {
  Value slab = kb.padDimTo(op.getQuery(), 1, kb.index(blockQ));
  OpFoldResult zero = kb.builder.getIndexAttr(0);
  slab = kb.slice(slab, {zero, zero, zero, zero}, {1, blockQ, group, headDim},
                  {blockQ, group, headDim});
  // Loops (g, e, i): the tile [G, d, block_q] from the rows [block_q, G, d].
  Value init = kb.empty({group, headDim, blockQ}, kb.computeType);
  const RopeTables &rope = queryRope;
  Value scaleValue = kb.constant(scale);
  return kb.generic(
      {slab}, init, {kb.map(3, {2, 0, 1}), kb.map(3, {0, 1, 2})},
      {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value element = kb.toCompute(nb, args[0]);
        if (!rope)
          return arith::MulFOp::create(nb, l, element, scaleValue);
        Value head = linalg::IndexOp::create(nb, l, 0);
        Value dim = linalg::IndexOp::create(nb, l, 1);
        Value row = linalg::IndexOp::create(nb, l, 2);
        Value partner = kb.toCompute(
            nb, tensor::ExtractOp::create(
                    nb, l, slab,
                    ValueRange{row, head, ropePartner(nb, l, dim, rope)}));
        Value position = arith::AddIOp::create(nb, l, rowOffset, row);
        return arith::MulFOp::create(
            nb, l, applyRope(nb, l, rope, element, partner, position, dim),
            scaleValue);
      });
}

std::pair<Value, Value> FlashAttentionTile::loadKeyValueTiles(Value key0) {
  OpBuilder &b = kb.builder;
  // The tile's batch and KV head: the offsets of its key slice.
  auto keySlice = op.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  SmallVector<OpFoldResult> offsets = keySlice.getMixedOffsets();
  OpFoldResult zero = b.getIndexAttr(0);
  SmallVector<OpFoldResult> at = {offsets[0], offsets[2],
                                  kb.floorDiv(key0, blockKV), zero, zero};
  auto block = [&](Value packed, int64_t dim) {
    return kb.slice(packed, at, {1, 1, 1, blockKV, dim}, {blockKV, dim});
  };
  Value keyTile = block(blocks.keys, headDim);
  Value valueTile = blocks.values ? block(blocks.values, valueDim) : keyTile;
  return {keyTile, valueTile};
}

Value FlashAttentionTile::scores(Value queryTile, Value keyTile, Value key0,
                                 bool masked) {
  // s[g, c, i] = sum_e k[c, e] q[g, e, i], loops (g, c, e, i): the query
  // rows i innermost and contiguous.
  Value init = kb.fill(kb.empty({group, blockKV, blockQ}, kb.computeType),
                       kb.constant(0.0));
  Value products = kb.generic(
      {keyTile, queryTile}, init,
      {kb.map(4, {1, 2}), kb.map(4, {0, 2, 3}), kb.map(4, {0, 1, 3})},
      {kPar, kPar, kRed, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], product);
      });

  // Bias and mask in one pass over the tile; an unmasked tile without
  // bias is the products themselves.
  if (!bias && !masked)
    return products;
  OpBuilder &b = kb.builder;
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  OpFoldResult zero = b.getIndexAttr(0);
  // Loops (g, c, i); the bias holds the tile's rows.
  if (bias) {
    auto [biasTile, biasMap] =
        kb.logitBiasTile(bias, zero, key0, group, blockQ, blockKV);
    inputs.push_back(biasTile);
    maps.push_back(biasMap);
  }
  unsigned keyMaskArg = inputs.size();
  if (masked && keyMask) {
    inputs.push_back(kb.slice(keyMask, {zero, key0}, {1, blockKV}, {blockKV}));
    maps.push_back(kb.map(3, {1}));
  }
  maps.push_back(kb.map(3, {0, 1, 2}));
  Value negInf = kb.constant(-std::numeric_limits<double>::infinity());
  bool causal = op.getCausal();
  std::optional<int64_t> window = op.getWindow();
  Value windowValue = window ? kb.index(*window) : Value();
  return kb.generic(
      inputs, products, maps, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value score = args.back();
        if (bias)
          score =
              arith::AddFOp::create(nb, l, score, kb.toCompute(nb, args[0]));
        if (!masked)
          return score;
        Value column = linalg::IndexOp::create(nb, l, 1);
        Value row = linalg::IndexOp::create(nb, l, 2);
        Value queryPosition = arith::AddIOp::create(nb, l, firstQuery, row);
        Value keyPosition = arith::AddIOp::create(nb, l, key0, column);
        Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                            keyPosition, keys);
        if (causal)
          valid = arith::AndIOp::create(
              nb, l, valid,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle,
                                    keyPosition, queryPosition));
        if (window) {
          Value distance =
              arith::SubIOp::create(nb, l, queryPosition, keyPosition);
          valid = arith::AndIOp::create(
              nb, l, valid,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, distance,
                                    windowValue));
        }
        if (keyMask) {
          Value element = args[keyMaskArg];
          Value zero = arith::ConstantOp::create(
              nb, l, element.getType(), nb.getZeroAttr(element.getType()));
          valid = arith::AndIOp::create(
              nb, l, valid,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne, element,
                                    zero));
        }
        return arith::SelectOp::create(nb, l, valid, score, negInf);
      });
}

SmallVector<Value> FlashAttentionTile::update(Value scoreTile, Value valueTile,
                                              ValueRange state) {
  Value maxOld = state[0], sumOld = state[1], accOld = state[2];
  Value negInf = kb.constant(-std::numeric_limits<double>::infinity());
  Value fzero = kb.constant(0.0), fone = kb.constant(1.0);

  auto isNegInf = [&](OpBuilder &nb, Location l, Value x) -> Value {
    return arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, x, negInf);
  };
  // The tile's row maxima, then alpha = exp(m - max(m, tile max)) before m
  // is overwritten in place. A row with no visible key so far keeps
  // m = -inf: its correction factor is 1. maxnum, not maximum: no NaN or
  // signed-zero ordering in the reductions (x86 lowers maximum to a branchy
  // sequence); a NaN score still reaches the output through its p.
  // Reductions over the keys c of s[g, c, i]: loops (g, c, i), element-wise
  // across the vectors of query rows i.
  Value tileMax = kb.generic(
      {scoreTile}, kb.fill(kb.empty({group, blockQ}, kb.computeType), negInf),
      {kb.map(3, {0, 1, 2}), kb.map(3, {0, 2})}, {kPar, kRed, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MaxNumFOp::create(nb, l, args[0], args[1]);
      });
  Value alpha = kb.generic(
      {maxOld, tileMax}, kb.empty({group, blockQ}, kb.computeType),
      {kb.map(2, {0, 1}), kb.map(2, {0, 1}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value maxNew = arith::MaxNumFOp::create(nb, l, args[0], args[1]);
        Value correction = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[0], maxNew));
        return arith::SelectOp::create(nb, l, isNegInf(nb, l, maxNew), fone,
                                       correction);
      });
  Value maxNew = kb.generic(
      {tileMax}, maxOld, {kb.map(2, {0, 1}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MaxNumFOp::create(nb, l, args[0], args[1]);
      });
  // p = exp(s - m_new), and 0 for a masked score (-inf), also when the
  // row saw no key yet (m_new = -inf, where exp would give NaN).
  Value probabilities = kb.generic(
      {scoreTile, maxNew}, kb.empty({group, blockKV, blockQ}, kb.computeType),
      {kb.map(3, {0, 1, 2}), kb.map(3, {0, 2}), kb.map(3, {0, 1, 2})},
      {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value p = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
        return arith::SelectOp::create(nb, l, isNegInf(nb, l, args[0]), fzero,
                                       p);
      });
  // l_new = l * alpha + sum_c p.
  Value sumScaled = kb.generic(
      {alpha}, sumOld, {kb.map(2, {0, 1}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MulFOp::create(nb, l, args[1], args[0]);
      });
  Value sumNew =
      kb.generic({probabilities}, sumScaled,
                 {kb.map(3, {0, 1, 2}), kb.map(3, {0, 2})}, {kPar, kRed, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::AddFOp::create(nb, l, args[1], args[0]);
                 });
  // acc_new = acc * alpha + p V, loops (g, i, c, f): f innermost and
  // contiguous; p is read as p[g, c, i].
  Value accScaled =
      kb.generic({alpha}, accOld, {kb.map(3, {0, 1}), kb.map(3, {0, 1, 2})},
                 {kPar, kPar, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[1], args[0]);
                 });
  Value accNew = kb.generic(
      {probabilities, valueTile}, accScaled,
      {kb.map(4, {0, 2, 1}), kb.map(4, {2, 3}), kb.map(4, {0, 1, 3})},
      {kPar, kPar, kRed, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], product);
      });
  return {maxNew, sumNew, accNew};
}

Value FlashAttentionTile::store(Value acc, Value sum) {
  OpBuilder &b = kb.builder;
  Value fzero = kb.constant(0.0);
  // Only the tile's rows of the padded block: [G, rows, ..].
  auto firstRows = [&](Value tile, int64_t innerDim) {
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    SmallVector<OpFoldResult> offsets = {zero, zero},
                              sizes = {b.getIndexAttr(group), rows};
    if (innerDim) {
      offsets.push_back(zero);
      sizes.push_back(b.getIndexAttr(innerDim));
    }
    return tensor::ExtractSliceOp::create(
        b, kb.loc, tile, offsets, sizes,
        SmallVector<OpFoldResult>(sizes.size(), one));
  };
  // o = acc / l, and 0 for a row that saw no key, straight into the init
  // [1, rows, G, dv].
  return kb.generic(
      {firstRows(acc, valueDim), firstRows(sum, 0)}, op.getInit(),
      {kb.map(4, {2, 1, 3}), kb.map(4, {2, 1}), kb.map(4, {0, 1, 2, 3})},
      {kPar, kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value empty = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            args[1], fzero);
        Value normalized = arith::DivFOp::create(nb, l, args[0], args[1]);
        return kb.toElement(
            nb, arith::SelectOp::create(nb, l, empty, fzero, normalized));
      });
}

Value FlashAttentionTile::storeLogSumExp(Value max, Value sum) {
  OpBuilder &b = kb.builder;
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  auto firstRows = [&](Value tile) {
    return tensor::ExtractSliceOp::create(
        b, kb.loc, tile, SmallVector<OpFoldResult>{zero, zero},
        SmallVector<OpFoldResult>{b.getIndexAttr(group), rows},
        SmallVector<OpFoldResult>{one, one});
  };
  // The scores were scaled (and biased) before m and l: lse = m + log l,
  // -inf for a row that saw no key (m = -inf, l = 0).
  return kb.generic(
      {firstRows(max), firstRows(sum)}, op.getLseInit(),
      {kb.map(3, {2, 1}), kb.map(3, {2, 1}), kb.map(3, {0, 1, 2})},
      {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value lse = arith::AddFOp::create(nb, l, args[0],
                                          math::LogOp::create(nb, l, args[1]));
        auto lseType = cast<FloatType>(args[2].getType());
        if (lseType != lse.getType())
          lse = arith::TruncFOp::create(nb, l, lseType, lse);
        return lse;
      });
}

/// The key and value tiles of every key block of `op` in the compute type,
/// `[B, Hk, ceil(T / block_kv), block_kv, d]` (keys rotated by `keyRope`
/// when set; rows past the last key zero), one block per iteration of an
/// scf.forall (`parallel`) or of scf.for loops. `values` is null when the
/// key blocks serve as value blocks too (K=V without rotation).
KeyValueBlocks packKeyValueBlocks(FlashAttentionOp op, KernelBuilder &kb,
                                  const RopeTables &keyRope, bool parallel) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Value key = op.getKey();
  Value value = op.getValue();
  auto keyType = cast<RankedTensorType>(key.getType());
  const int64_t headDim = keyType.getDimSize(3);
  const int64_t valueDim =
      cast<RankedTensorType>(op.getValueOrKey().getType()).getDimSize(3);
  const int64_t blockKV = op.getBlockKv();
  const bool separateValues = value || keyRope;
  Value batch = kb.dim(key, 0), keys = kb.dim(key, 1);
  Value numBlocks = kb.ceilDiv(keys, blockKV);
  Value numHeads = kb.index(keyType.getDimSize(2));
  auto packedOf = [&](int64_t dim) {
    return kb.empty({keyType.getDimSize(0), keyType.getDimSize(2),
                     ShapedType::kDynamic, blockKV, dim},
                    kb.computeType,
                    keyType.isDynamicDim(0) ? ValueRange{batch, numBlocks}
                                            : ValueRange{numBlocks});
  };
  SmallVector<Value> inits = {packedOf(headDim)};
  if (separateValues)
    inits.push_back(packedOf(valueDim));

  // The rows [key0, key0 + block_kv) of head `head` of `source`, the last
  // block's zero-padded. (Every block goes through the padding: a buffer
  // yielded by an scf.if from a slice or a new tensor would need a runtime
  // ownership check in the loop body.)
  auto rowsOf = [&](Value source, Value batchIndex, Value head, Value key0,
                    int64_t dim) -> Value {
    OpFoldResult zero = b.getIndexAttr(0);
    Value count = kb.min(kb.sub(keys, key0), kb.index(blockKV));
    Value rows = tensor::ExtractSliceOp::create(
        b, loc, source, SmallVector<OpFoldResult>{batchIndex, key0, head, zero},
        SmallVector<OpFoldResult>{b.getIndexAttr(1), count, b.getIndexAttr(1),
                                  b.getIndexAttr(dim)},
        SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
    Value padded = kb.padDimTo(rows, 1, kb.index(blockKV));
    return kb.slice(padded, {zero, zero, zero, zero}, {1, blockKV, 1, dim},
                    {blockKV, dim});
  };
  // One block: its tiles, and where they go.
  auto packBlock = [&](ValueRange indices) {
    Value key0 = kb.mul(indices[2], blockKV);
    Value keyRows = rowsOf(key, indices[0], indices[1], key0, headDim);
    SmallVector<Value> tiles = {loadRotatedKeyRows(kb, keyRows, keyRope, key0)};
    if (separateValues)
      tiles.push_back(kb.convert(
          value ? rowsOf(value, indices[0], indices[1], key0, valueDim)
                : keyRows,
          kb.computeType));
    return tiles;
  };
  auto insertAt = [&](ValueRange indices) {
    OpFoldResult zero = b.getIndexAttr(0);
    return SmallVector<OpFoldResult>{indices[0], indices[1], indices[2], zero,
                                     zero};
  };
  auto sizesOf = [&](Value tile) {
    auto type = cast<RankedTensorType>(tile.getType());
    return SmallVector<OpFoldResult>{
        b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1),
        b.getIndexAttr(type.getDimSize(0)), b.getIndexAttr(type.getDimSize(1))};
  };
  SmallVector<OpFoldResult> unitStrides(5, b.getIndexAttr(1));

  SmallVector<Value> packed;
  if (parallel) {
    auto loop = scf::ForallOp::create(
        b, loc, SmallVector<OpFoldResult>{batch, numHeads, numBlocks}, inits,
        /*mapping=*/std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getTerminator());
    SmallVector<Value> tiles = packBlock(loop.getInductionVars());
    b.setInsertionPointToStart(loop.getTerminator().getBody());
    for (auto [tile, out] : llvm::zip(tiles, loop.getRegionIterArgs()))
      tensor::ParallelInsertSliceOp::create(b, loc, tile, out,
                                            insertAt(loop.getInductionVars()),
                                            sizesOf(tile), unitStrides);
    packed.assign(loop.getResults().begin(), loop.getResults().end());
  } else {
    scf::LoopNest nest = scf::buildLoopNest(
        b, loc, {kb.index(0), kb.index(0), kb.index(0)},
        {batch, numHeads, numBlocks}, {kb.index(1), kb.index(1), kb.index(1)},
        inits, [&](OpBuilder &, Location, ValueRange indices, ValueRange outs) {
          SmallVector<Value> tiles = packBlock(indices);
          scf::ValueVector results;
          for (auto [tile, out] : llvm::zip(tiles, outs))
            results.push_back(tensor::InsertSliceOp::create(
                b, loc, tile, out, insertAt(indices), sizesOf(tile),
                unitStrides));
          return results;
        });
    packed.assign(nest.results.begin(), nest.results.end());
  }
  return {packed[0], separateValues ? packed[1] : Value()};
}

/// Tiles attn.flash_attention through its TilingInterface and decomposes
/// each tile.
struct LowerFlashAttention : OpRewritePattern<FlashAttentionOp> {
  LowerFlashAttention(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(FlashAttentionOp op,
                                PatternRewriter &rewriter) const override {
    auto queryType = cast<RankedTensorType>(op.getQuery().getType());
    // The rotation tables serve every tile: built once, before the loops,
    // for the positions of whole key tiles and whole query tiles (from the
    // op's first row).
    KernelBuilder kb(rewriter, op.getLoc(), queryType.getElementType());
    int64_t headDim = queryType.getDimSize(3);
    int64_t blockQ = op.getBlockQ(), blockKV = op.getBlockKv();
    Value keyPositions =
        kb.mul(kb.ceilDiv(kb.dim(op.getKey(), 1), blockKV), blockKV);
    RopeTables keyRope =
        buildRopeTables(kb, op.getKeyRopeAttr(), headDim, keyPositions);
    Value queryPositions =
        kb.mul(kb.ceilDiv(kb.dim(op.getQuery(), 1), blockQ), blockQ);
    RopeTables queryRope =
        buildRopeTables(kb, op.getQueryRopeAttr(), headDim, queryPositions,
                        op.getQueryRowOffset());
    KeyValueBlocks blocks = packKeyValueBlocks(op, kb, keyRope, parallel);

    FailureOr<Operation *> tiled =
        tileKernelOp(rewriter, op,
                     {rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
                      rewriter.getIndexAttr(blockQ)},
                     parallel);
    if (failed(tiled))
      return failure();
    auto tile = cast<FlashAttentionOp>(*tiled);
    rewriter.replaceOp(
        tile, FlashAttentionTile(tile, rewriter, queryRope, blocks).build());
    return success();
  }
};

} // namespace

void attnfuse::populateFlashAttentionToSCFPatterns(RewritePatternSet &patterns,
                                                   bool parallel) {
  patterns.add<LowerFlashAttention>(patterns.getContext(), parallel);
}
