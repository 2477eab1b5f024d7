//===- FlashAttentionGrad.cpp - attn.flash_attention_grad to loops --------===//
//-*-===//
//
// The op is tiled with upstream scf::tileUsingSCF through its
// TilingInterface, one tile per (batch, KV head): an `scf.forall` (or nested
// `scf.for`) whose body holds an attn.flash_attention_grad on the tile's
// slices. That tile op is decomposed here into linalg on static-shape tiles
// (the FlashAttention-2 backward), the G = Hq / Hk query heads of the group
// forming one [G, block_q, ..] query tile:
//
//   0. the keys and values, zero-padded to whole tiles, are converted once
//      to the compute type, [T / block_kv, block_kv, ..];
//   1. per query tile: the scaled query (in both layouts the contractions
//      read), the output gradient (likewise), D = rowsum(dO * O) and the
//      log-sum-exp L of the scores (an online maximum and sum over the key
//      tiles); the tiles and L, D are kept per query tile,
//      [S / block_q, G, ..] (O(S));
//   2. per key tile, over the query tiles that see it: the scores,
//      P = exp(s - L), dP = dO V^T and dS = P (dP - D) once, for dK and dV
//      (accumulated in registers-sized tiles, stored after the query loop)
//      and dQ (accumulated in f32 query tiles, [S / block_q, G, block_q, d],
//      which the tile owns: no other key tile's thread writes them);
//   3. dQ stored.
// With key_rope the key tiles of phase 0 are rotated as they are
// converted, and each key tile's dK is rotated back (rope^T) before it is
// stored. K=V (no value operand): the value tiles are the un-rotated key
// tiles, and a key tile's dK and dV are added before one store.
// A logit bias is added to each score tile; with `accumulate`, each tile
// pair's dS is added into the bias gradient (the op's batch loop, a
// reduction, is then sequential outside the parallel KV-head loop).
// That is five tile products per (query, key) tile pair, plus the scores
// of the log-sum-exp pass.
//
// Scores are [G, block_kv, block_q] tiles (query rows innermost, as in the
// forward): the S x T matrix never exists. Key tiles wholly outside the
// causal diagonal or the window of a query tile (and query tiles wholly
// outside those of a key tile) are not visited; every visited tile is
// masked (the padded rows and keys, the diagonal, the window, the key
// mask). A row that sees no key has L = +inf and P = 0: zero gradients.
// Arithmetic is in the compute type (f32 for 16-bit inputs), rounded once
// when the gradients are stored.
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

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The compute-type tiles of one query tile that both phases read.
struct QueryTile {
  Value queryT;    // [G, d, block_q], scaled: the scores' operand.
  Value query;     // [G, block_q, d], scaled: dK's operand.
  Value gradT;     // [G, dv, block_q]: dP's operand.
  Value grad;      // [G, block_q, dv]: dV's operand.
  Value rowDot;    // [G, block_q]: D.
  Value logSumExp; // [G, block_q]: L.
};

/// Decomposes one tile of attn.flash_attention_grad (batch 1, one KV head,
/// as tileUsingSCF produces with tile sizes [1, 1]) into linalg on tensors.
class FlashAttentionGradTile {
public:
  /// `keyRope`: the tables of the op's key_rope, built once for every
  /// tile (empty without it).
  FlashAttentionGradTile(FlashAttentionGradOp op, OpBuilder &builder,
                         const RopeTables &keyRope)
      : op(op),
        kb(builder, op.getLoc(),
           cast<RankedTensorType>(op.getQuery().getType()).getElementType()),
        keyRope(keyRope) {
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

  /// The tile's (dq, dk, dv), written into the op's inits.
  SmallVector<Value> build();

private:
  /// Phase 0: `source` `[1, T, 1, dim]` as compute-type key tiles
  /// `[T / block_kv, block_kv, dim]`, zero-padded, rotated by `rope` when
  /// set.
  Value loadKeyBlocks(Value source, int64_t dim,
                      const RopeTables &rope = RopeTables());
  /// Phase 1: the query tiles, L and D; returns the per-tile tensors
  /// (QueryTile order).
  SmallVector<Value> queryPhase();
  /// The query tile at `query0` (all but L) from the padded operands.
  QueryTile loadQueryTile(Value query0);
  /// L of the query tile over its visible key tiles.
  Value logSumExp(const QueryTile &tile, Value query0);
  /// L of the query tile from the op's `lse` operand.
  Value loadLogSumExp(Value query0);
  /// Phase 2: dk and dv (one dkv for K=V), then the dQ / scale query tiles
  /// `[S / block_q, G, block_q, d]`.
  SmallVector<Value> keyPhase(ValueRange queryBlocks);
  /// Phase 3: dq from its tiles.
  Value storeQueryGrad(Value queryGradBlocks);

  /// Masked transposed scores `[G, block_kv, block_q]` of the key tile at
  /// `key0` against the query tile at `query0`.
  Value scores(Value queryT, Value keyTile, Value key0, Value query0);
  /// P^T and dS^T `[G, block_kv, block_q]` from the scores.
  std::pair<Value, Value> scoreGrads(Value scoresT, Value valueTile,
                                     const QueryTile &tile);
  /// The key tile `[block_kv, dim]` of `blocks` at key block `block`.
  Value keyTile(Value blocks, Value block, int64_t dim);
  /// `[lo, hi)`: the key blocks the query tile at `query0` sees, and the
  /// query blocks that see the key tile at `key0`.
  std::pair<Value, Value> keyBlockRange(Value query0);
  std::pair<Value, Value> queryBlockRange(Value key0);
  /// Adds the valid part of the tile pair's `scoresGradT`
  /// `[G, block_kv, block_q]` into the bias gradient `dest` `[G, S, T]` at
  /// (query0, key0).
  Value accumulateBiasGrad(Value scoresGradT, Value dest, Value query0,
                           Value key0);
  /// Writes the first `count` rows of `tile` (compute type, `[G, block, x]`
  /// or `[block, x]`), times `factor`, at row `row0` of `dest`
  /// `[1, rows, heads, x]`.
  Value storeRows(Value tile, Value dest, Value row0, Value count,
                  double factor);

  Value zeros(ArrayRef<int64_t> shape) {
    return kb.fill(kb.empty(shape, kb.computeType), kb.constant(0.0));
  }
  Value blocksOf(ArrayRef<int64_t> tileShape, Value numBlocks) {
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    llvm::append_range(shape, tileShape);
    return kb.empty(shape, kb.computeType, {numBlocks});
  }
  /// Slice `[tileShape]` of the block tensor `blocks` at block `block`.
  Value blockAt(Value blocks, Value block) {
    auto shape =
        cast<RankedTensorType>(blocks.getType()).getShape().drop_front();
    SmallVector<OpFoldResult> offsets(shape.size() + 1,
                                      kb.builder.getIndexAttr(0));
    offsets[0] = block;
    SmallVector<int64_t> sizes = {1};
    llvm::append_range(sizes, shape);
    return kb.slice(blocks, offsets, sizes, shape);
  }
  Value insertBlock(Value tile, Value blocks, Value block) {
    auto shape = cast<RankedTensorType>(tile.getType()).getShape();
    SmallVector<OpFoldResult> offsets(shape.size() + 1,
                                      kb.builder.getIndexAttr(0));
    offsets[0] = block;
    SmallVector<int64_t> sizes = {1};
    llvm::append_range(sizes, shape);
    return kb.insert(tile, blocks, offsets, sizes);
  }

  FlashAttentionGradOp op;
  KernelBuilder kb;
  const RopeTables &keyRope;
  int64_t group, headDim, valueDim, blockQ, blockKV;
  double scale;

  // Set by build(): the sizes, the key position of query row 0 (T - S),
  // the padded query-side operands and key mask, the key and value tiles.
  Value rows, keys, numQueryBlocks, numKeyBlocks, queryOffset;
  Value query, output, outputGrad, bias, keyMask, keyBlocks, valueBlocks;
  // The forward's log-sum-exp [1, rows, G] padded to whole query tiles, or
  // null (L is computed).
  Value logSumExps;
};

SmallVector<Value> FlashAttentionGradTile::build() {
  rows = kb.dim(op.getQuery(), 1);
  keys = kb.dim(op.getKey(), 1);
  numQueryBlocks = kb.ceilDiv(rows, blockQ);
  numKeyBlocks = kb.ceilDiv(keys, blockKV);
  queryOffset = kb.sub(keys, rows);
  Value paddedRows = kb.mul(numQueryBlocks, blockQ);
  query = kb.padDimTo(op.getQuery(), 1, paddedRows);
  output = kb.padDimTo(op.getOutput(), 1, paddedRows);
  if (Value lse = op.getLse())
    logSumExps = kb.padDimTo(lse, 1, paddedRows);
  outputGrad = kb.padDimTo(op.getOutputGrad(), 1, paddedRows);
  Value paddedKeys = kb.mul(numKeyBlocks, blockKV);
  if (Value biasOperand = op.getBias()) {
    int64_t rank = cast<RankedTensorType>(biasOperand.getType()).getRank();
    bias = kb.padDimsTo(biasOperand,
                        {{rank - 2, paddedRows}, {rank - 1, paddedKeys}});
  }
  // Padded keys read a zero mask: masked like the keys past the end.
  if (Value mask = op.getKeyMask())
    keyMask = kb.padDimTo(mask, 1, paddedKeys);
  keyBlocks = loadKeyBlocks(op.getKey(), headDim, keyRope);
  // K=V (a shared key and value): one set of tiles, unless the key role is
  // rotated.
  Value value = op.getValueOrKey();
  valueBlocks = value == op.getKey() && !keyRope
                    ? keyBlocks
                    : loadKeyBlocks(value, valueDim);

  SmallVector<Value> queryBlocks = queryPhase();
  SmallVector<Value> grads = keyPhase(queryBlocks);
  SmallVector<Value> results = {storeQueryGrad(grads.back())};
  results.append(grads.begin(), grads.end() - 1);
  return results;
}

Value FlashAttentionGradTile::loadKeyBlocks(Value source, int64_t dim,
                                            const RopeTables &rope) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Value padded = kb.padDimTo(source, 1, kb.mul(numKeyBlocks, blockKV));
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), numKeyBlocks, kb.index(1),
      ValueRange{blocksOf({blockKV, dim}, numKeyBlocks)},
      [&](OpBuilder &, Location, Value block, ValueRange state) {
        OpFoldResult zero = b.getIndexAttr(0);
        Value key0 = kb.mul(block, blockKV);
        Value slab = kb.slice(padded, {zero, key0, zero, zero},
                              {1, blockKV, 1, dim}, {blockKV, dim});
        scf::YieldOp::create(
            b, loc,
            insertBlock(loadRotatedKeyRows(kb, slab, rope, key0), state[0],
                        block));
      });
  return loop.getResult(0);
}

SmallVector<Value> FlashAttentionGradTile::queryPhase() {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  SmallVector<Value> inits = {
      blocksOf({group, headDim, blockQ}, numQueryBlocks),
      blocksOf({group, blockQ, headDim}, numQueryBlocks),
      blocksOf({group, valueDim, blockQ}, numQueryBlocks),
      blocksOf({group, blockQ, valueDim}, numQueryBlocks),
      blocksOf({group, blockQ}, numQueryBlocks),
      blocksOf({group, blockQ}, numQueryBlocks)};
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), numQueryBlocks, kb.index(1), inits,
      [&](OpBuilder &, Location, Value block, ValueRange state) {
        Value query0 = kb.mul(block, blockQ);
        QueryTile tile = loadQueryTile(query0);
        tile.logSumExp =
            logSumExps ? loadLogSumExp(query0) : logSumExp(tile, query0);
        // Named: a braced list in the range of a for loop dies before the
        // loop body runs (C++17).
        SmallVector<Value> blocks = {tile.queryT, tile.query,  tile.gradT,
                                     tile.grad,   tile.rowDot, tile.logSumExp};
        SmallVector<Value> results;
        for (auto [index, value] : llvm::enumerate(blocks))
          results.push_back(insertBlock(value, state[index], block));
        scf::YieldOp::create(b, loc, results);
      });
  return SmallVector<Value>(loop.getResults());
}

QueryTile FlashAttentionGradTile::loadQueryTile(Value query0) {
  OpFoldResult zero = kb.builder.getIndexAttr(0);
  auto slab = [&](Value source, int64_t dim) {
    return kb.slice(source, {zero, query0, zero, zero}, {1, blockQ, group, dim},
                    {blockQ, group, dim});
  };
  Value querySlab = slab(query, headDim);
  Value gradSlab = slab(outputGrad, valueDim);
  Value scaleValue = kb.constant(scale);
  // The rows [block_q, G, x] in layout [G, x, block_q] (transposed) or
  // [G, block_q, x], in the compute type, times `factor` when set.
  auto relayout = [&](Value rowsSlab, int64_t dim, bool transposed,
                      Value factor) {
    SmallVector<int64_t> shape = transposed
                                     ? SmallVector<int64_t>{group, dim, blockQ}
                                     : SmallVector<int64_t>{group, blockQ, dim};
    // Loops over the result's dims: (g, x, i) or (g, i, x).
    AffineMap source = transposed ? kb.map(3, {2, 0, 1}) : kb.map(3, {1, 0, 2});
    return kb.generic({rowsSlab}, kb.empty(shape, kb.computeType),
                      {source, kb.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value element = kb.toCompute(nb, args[0]);
                        return factor ? arith::MulFOp::create(nb, l, element,
                                                              factor)
                                      : element;
                      });
  };
  QueryTile tile;
  tile.queryT = relayout(querySlab, headDim, true, scaleValue);
  tile.query = relayout(querySlab, headDim, false, scaleValue);
  tile.gradT = relayout(gradSlab, valueDim, true, Value());
  tile.grad = relayout(gradSlab, valueDim, false, Value());
  // D[g, i] = sum_f dO[i, g, f] O[i, g, f], loops (g, i, f).
  tile.rowDot = kb.generic(
      {gradSlab, slab(output, valueDim)}, zeros({group, blockQ}),
      {kb.map(3, {1, 0, 2}), kb.map(3, {1, 0, 2}), kb.map(3, {0, 1})},
      {kPar, kPar, kRed},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, kb.toCompute(nb, args[0]),
                                              kb.toCompute(nb, args[1]));
        return arith::AddFOp::create(nb, l, args[2], product);
      });
  return tile;
}

std::pair<Value, Value> FlashAttentionGradTile::keyBlockRange(Value query0) {
  // Query row r is at key position r + T - S.
  Value firstQuery = kb.add(query0, queryOffset);
  Value hiKey = keys;
  if (op.getCausal())
    hiKey = kb.min(keys, kb.max(kb.add(firstQuery, blockQ), kb.index(0)));
  Value loKey = kb.index(0);
  if (std::optional<int64_t> window = op.getWindow())
    loKey = kb.max(loKey, kb.sub(firstQuery, kb.index(*window - 1)));
  Value loBlock = kb.floorDiv(loKey, blockKV);
  return {loBlock, kb.max(loBlock, kb.ceilDiv(hiKey, blockKV))};
}

std::pair<Value, Value> FlashAttentionGradTile::queryBlockRange(Value key0) {
  // Causal: rows r with r + T - S >= key0; window: rows with
  // r + T - S - (key0 + block_kv - 1) < window.
  Value loRow = kb.index(0);
  if (op.getCausal())
    loRow = kb.max(loRow, kb.sub(key0, queryOffset));
  Value hiRow = rows;
  if (std::optional<int64_t> window = op.getWindow())
    hiRow = kb.max(
        kb.index(0),
        kb.min(rows, kb.sub(kb.add(key0, blockKV - 1 + *window), queryOffset)));
  Value loBlock = kb.floorDiv(loRow, blockQ);
  return {loBlock, kb.max(loBlock, kb.ceilDiv(hiRow, blockQ))};
}

Value FlashAttentionGradTile::keyTile(Value blocks, Value block, int64_t dim) {
  OpFoldResult zero = kb.builder.getIndexAttr(0);
  return kb.slice(blocks, {block, zero, zero}, {1, blockKV, dim},
                  {blockKV, dim});
}

Value FlashAttentionGradTile::loadLogSumExp(Value query0) {
  OpFoldResult zero = kb.builder.getIndexAttr(0);
  Value rowsOfTile = kb.slice(logSumExps, {zero, query0, zero},
                              {1, blockQ, group}, {blockQ, group});
  // [block_q, G] -> [G, block_q] in the compute type. A row without a
  // visible key has L = -inf there: its scores are all masked, so P = 0
  // whatever L is. Padded rows are masked too.
  return kb.convert(rowsOfTile, {group, blockQ}, kb.computeType,
                    kb.map(2, {1, 0}));
}

Value FlashAttentionGradTile::logSumExp(const QueryTile &tile, Value query0) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Value negInf = kb.constant(-kInf), fzero = kb.constant(0.0);
  Value fone = kb.constant(1.0);
  auto isNegInf = [&](OpBuilder &nb, Location l, Value x) -> Value {
    return arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, x, negInf);
  };
  AffineMap row3 = kb.map(3, {0, 2}), id3 = kb.map(3, {0, 1, 2});
  AffineMap id2 = kb.map(2, {0, 1});
  auto [loBlock, hiBlock] = keyBlockRange(query0);
  Value maxInit = kb.fill(kb.empty({group, blockQ}, kb.computeType), negInf);
  auto loop = scf::ForOp::create(
      b, loc, loBlock, hiBlock, kb.index(1),
      ValueRange{maxInit, zeros({group, blockQ})},
      [&](OpBuilder &, Location, Value block, ValueRange state) {
        Value key0 = kb.mul(block, blockKV);
        Value scoresT = scores(tile.queryT, keyTile(keyBlocks, block, headDim),
                               key0, query0);
        // The tile's row maxima: loops (g, c, i), reduced over c.
        Value tileMax = kb.generic(
            {scoresT},
            kb.fill(kb.empty({group, blockQ}, kb.computeType), negInf),
            {id3, row3}, {kPar, kRed, kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              return arith::MaxNumFOp::create(nb, l, args[0], args[1]);
            });
        // l * exp(m - m_new), 1 while the row has seen no key; before m is
        // overwritten in place.
        Value sumScaled = kb.generic(
            {state[0], tileMax}, state[1], {id2, id2, id2}, {kPar, kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              Value maxNew = arith::MaxNumFOp::create(nb, l, args[0], args[1]);
              Value correction = math::ExpOp::create(
                  nb, l, arith::SubFOp::create(nb, l, args[0], maxNew));
              correction = arith::SelectOp::create(
                  nb, l, isNegInf(nb, l, maxNew), fone, correction);
              return arith::MulFOp::create(nb, l, args[2], correction);
            });
        Value maxNew = kb.generic(
            {tileMax}, state[0], {id2, id2}, {kPar, kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              return arith::MaxNumFOp::create(nb, l, args[0], args[1]);
            });
        // + sum_c exp(s - m_new), 0 for a masked score.
        Value sumNew = kb.generic(
            {scoresT, maxNew}, sumScaled, {id3, row3, row3}, {kPar, kRed, kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              Value p = math::ExpOp::create(
                  nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
              p = arith::SelectOp::create(nb, l, isNegInf(nb, l, args[0]),
                                          fzero, p);
              return arith::AddFOp::create(nb, l, args[2], p);
            });
        scf::YieldOp::create(b, loc, ValueRange{maxNew, sumNew});
      });
  // L = m + log l, +inf for a row without a visible key (P = 0 there).
  Value posInf = kb.constant(kInf);
  return kb.generic(
      {loop.getResult(0), loop.getResult(1)},
      kb.empty({group, blockQ}, kb.computeType), {id2, id2, id2}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value empty = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            args[1], fzero);
        Value lse = arith::AddFOp::create(nb, l, args[0],
                                          math::LogOp::create(nb, l, args[1]));
        return arith::SelectOp::create(nb, l, empty, posInf, lse);
      });
}

SmallVector<Value>
FlashAttentionGradTile::keyPhase(ValueRange queryBlocks) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Value queryGradBlocks = kb.fill(
      blocksOf({group, blockQ, headDim}, numQueryBlocks), kb.constant(0.0));
  // Carried: dk (dkv for K=V), dv (when separate), the bias gradient (when
  // accumulated), the dQ tiles.
  const bool shared = op.isSharedKeyValue();
  Value biasGradInit = op.getBiasGradInit();
  SmallVector<Value> carried = {op.getKeyGradInit()};
  if (!shared)
    carried.push_back(op.getValueGradInit());
  if (biasGradInit)
    carried.push_back(biasGradInit);
  carried.push_back(queryGradBlocks);
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), numKeyBlocks, kb.index(1), carried,
      [&](OpBuilder &, Location, Value keyBlock, ValueRange outer) {
        Value key0 = kb.mul(keyBlock, blockKV);
        Value keyRows = keyTile(keyBlocks, keyBlock, headDim);
        Value valueRows = keyTile(valueBlocks, keyBlock, valueDim);
        auto [loBlock, hiBlock] = queryBlockRange(key0);
        SmallVector<Value> innerInits = {zeros({blockKV, headDim}),
                                         zeros({blockKV, valueDim}),
                                         outer.back()};
        if (biasGradInit)
          innerInits.push_back(outer[outer.size() - 2]);
        auto inner = scf::ForOp::create(
            b, loc, loBlock, hiBlock, kb.index(1), innerInits,
            [&](OpBuilder &, Location, Value block, ValueRange state) {
              QueryTile tile = {blockAt(queryBlocks[0], block),
                                blockAt(queryBlocks[1], block),
                                blockAt(queryBlocks[2], block),
                                blockAt(queryBlocks[3], block),
                                blockAt(queryBlocks[4], block),
                                blockAt(queryBlocks[5], block)};
              Value query0 = kb.mul(block, blockQ);
              Value scoresT = scores(tile.queryT, keyRows, key0, query0);
              auto [probsT, scoresGradT] = scoreGrads(scoresT, valueRows, tile);
              // acc[c, x] += sum_{g, i} lhs[g, c, i] rhs[g, i, x], loops
              // (c, x, g, i).
              auto accumulate = [&](Value lhs, Value rhs, Value acc) {
                return kb.generic(
                    {lhs, rhs}, acc,
                    {kb.map(4, {2, 0, 3}), kb.map(4, {2, 3, 1}),
                     kb.map(4, {0, 1})},
                    {kPar, kPar, kRed, kRed},
                    [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      Value product =
                          arith::MulFOp::create(nb, l, args[0], args[1]);
                      return arith::AddFOp::create(nb, l, args[2], product);
                    });
              };
              // dQ[g, i, e] += sum_c dS[g, c, i] K[c, e], loops
              // (g, i, c, e).
              Value queryGrad = kb.generic(
                  {scoresGradT, keyRows}, blockAt(state[2], block),
                  {kb.map(4, {0, 2, 1}), kb.map(4, {2, 3}),
                   kb.map(4, {0, 1, 3})},
                  {kPar, kPar, kRed, kPar},
                  [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                    Value product =
                        arith::MulFOp::create(nb, l, args[0], args[1]);
                    return arith::AddFOp::create(nb, l, args[2], product);
                  });
              // dK = dS^T (s Q), dV = P^T dO.
              SmallVector<Value> yielded = {
                  accumulate(scoresGradT, tile.query, state[0]),
                  accumulate(probsT, tile.grad, state[1]),
                  insertBlock(queryGrad, state[2], block)};
              if (biasGradInit)
                yielded.push_back(
                    accumulateBiasGrad(scoresGradT, state[3], query0, key0));
              scf::YieldOp::create(b, loc, yielded);
            });
        Value count = kb.min(kb.index(blockKV), kb.sub(keys, key0));
        // The key role's gradient of the un-rotated key: rope^T.
        Value keyGrad = inner.getResult(0);
        if (keyRope)
          keyGrad = loadRotatedKeyRows(kb, keyGrad, keyRope, key0,
                                       /*transposed=*/true);
        Value valueGrad = inner.getResult(1);
        SmallVector<Value> yielded;
        if (shared) {
          // K=V: both roles' gradients summed here, stored once.
          Value sum = kb.generic(
              {keyGrad, valueGrad}, kb.empty({blockKV, headDim}, kb.computeType),
              {kb.map(2, {0, 1}), kb.map(2, {0, 1}), kb.map(2, {0, 1})},
              {kPar, kPar},
              [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                return arith::AddFOp::create(nb, l, args[0], args[1]);
              });
          yielded.push_back(storeRows(sum, outer[0], key0, count, 1.0));
        } else {
          yielded.push_back(storeRows(keyGrad, outer[0], key0, count, 1.0));
          yielded.push_back(storeRows(valueGrad, outer[1], key0, count, 1.0));
        }
        if (biasGradInit)
          yielded.push_back(inner.getResult(3));
        yielded.push_back(inner.getResult(2));
        scf::YieldOp::create(b, loc, yielded);
      });
  return SmallVector<Value>(loop.getResults());
}

Value FlashAttentionGradTile::storeQueryGrad(Value queryGradBlocks) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), numQueryBlocks, kb.index(1),
      ValueRange{op.getQueryGradInit()},
      [&](OpBuilder &, Location, Value block, ValueRange state) {
        Value query0 = kb.mul(block, blockQ);
        Value count = kb.min(kb.index(blockQ), kb.sub(rows, query0));
        scf::YieldOp::create(b, loc,
                             storeRows(blockAt(queryGradBlocks, block),
                                       state[0], query0, count, scale));
      });
  return loop.getResult(0);
}

Value FlashAttentionGradTile::scores(Value queryT, Value keyTile, Value key0,
                                     Value query0) {
  // s[g, c, i] = sum_e k[c, e] q[g, e, i], loops (g, c, e, i).
  Value products = kb.generic(
      {keyTile, queryT}, zeros({group, blockKV, blockQ}),
      {kb.map(4, {1, 2}), kb.map(4, {0, 2, 3}), kb.map(4, {0, 1, 3})},
      {kPar, kPar, kRed, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], product);
      });

  // The bias and the mask, loops (g, c, i): padded rows and keys, the
  // diagonal, the window and the key mask.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  OpFoldResult zero = kb.builder.getIndexAttr(0);
  if (bias) {
    auto [biasTile, biasMap] =
        kb.logitBiasTile(bias, query0, key0, group, blockQ, blockKV);
    inputs.push_back(biasTile);
    maps.push_back(biasMap);
  }
  if (keyMask) {
    inputs.push_back(kb.slice(keyMask, {zero, key0}, {1, blockKV}, {blockKV}));
    maps.push_back(kb.map(3, {1}));
  }
  maps.push_back(kb.map(3, {0, 1, 2}));
  Value negInf = kb.constant(-kInf);
  Value firstQuery = kb.add(query0, queryOffset);
  Value rowsLeft = kb.sub(rows, query0);
  std::optional<int64_t> window = op.getWindow();
  Value windowValue = window ? kb.index(*window) : Value();
  return kb.generic(
      inputs, products, maps, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        auto compare = [&](arith::CmpIPredicate predicate, Value lhs,
                           Value rhs) -> Value {
          return arith::CmpIOp::create(nb, l, predicate, lhs, rhs);
        };
        auto both = [&](Value lhs, Value rhs) -> Value {
          return arith::AndIOp::create(nb, l, lhs, rhs);
        };
        Value column = linalg::IndexOp::create(nb, l, 1);
        Value row = linalg::IndexOp::create(nb, l, 2);
        Value queryPosition = arith::AddIOp::create(nb, l, firstQuery, row);
        Value keyPosition = arith::AddIOp::create(nb, l, key0, column);
        Value valid =
            both(compare(arith::CmpIPredicate::slt, keyPosition, keys),
                 compare(arith::CmpIPredicate::slt, row, rowsLeft));
        if (op.getCausal())
          valid = both(valid, compare(arith::CmpIPredicate::sle, keyPosition,
                                      queryPosition));
        if (window)
          valid = both(valid, compare(arith::CmpIPredicate::slt,
                                      arith::SubIOp::create(
                                          nb, l, queryPosition, keyPosition),
                                      windowValue));
        if (keyMask) {
          Value element = args[bias ? 1 : 0];
          Value zero = arith::ConstantOp::create(
              nb, l, element.getType(), nb.getZeroAttr(element.getType()));
          valid = both(valid, compare(arith::CmpIPredicate::ne, element, zero));
        }
        Value score = args.back();
        if (bias)
          score =
              arith::AddFOp::create(nb, l, score, kb.toCompute(nb, args[0]));
        return arith::SelectOp::create(nb, l, valid, score, negInf);
      });
}

std::pair<Value, Value>
FlashAttentionGradTile::scoreGrads(Value scoresT, Value valueTile,
                                   const QueryTile &tile) {
  Value negInf = kb.constant(-kInf), fzero = kb.constant(0.0);
  AffineMap id3 = kb.map(3, {0, 1, 2}), row3 = kb.map(3, {0, 2});
  // P = exp(s - L), 0 for a masked score (also where L = +inf).
  Value probsT =
      kb.generic({scoresT, tile.logSumExp},
                 kb.empty({group, blockKV, blockQ}, kb.computeType),
                 {id3, row3, id3}, {kPar, kPar, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value masked = arith::CmpFOp::create(
                       nb, l, arith::CmpFPredicate::OEQ, args[0], negInf);
                   Value p = math::ExpOp::create(
                       nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
                   return arith::SelectOp::create(nb, l, masked, fzero, p);
                 });
  // dP[g, c, i] = sum_f v[c, f] dO[g, f, i], loops (g, c, f, i).
  Value probsGradT = kb.generic(
      {valueTile, tile.gradT}, zeros({group, blockKV, blockQ}),
      {kb.map(4, {1, 2}), kb.map(4, {0, 2, 3}), kb.map(4, {0, 1, 3})},
      {kPar, kPar, kRed, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], product);
      });
  // dS = P (dP - D), into dP.
  Value scoresGradT = kb.generic(
      {probsT, tile.rowDot}, probsGradT, {id3, row3, id3}, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value centered = arith::SubFOp::create(nb, l, args[2], args[1]);
        return arith::MulFOp::create(nb, l, args[0], centered);
      });
  return {probsT, scoresGradT};
}

Value FlashAttentionGradTile::accumulateBiasGrad(Value scoresGradT, Value dest,
                                                 Value query0, Value key0) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  OpFoldResult heads = b.getIndexAttr(group);
  // The rows and keys of the pair inside the attention (not the padding).
  OpFoldResult rowCount = kb.min(kb.index(blockQ), kb.sub(rows, query0));
  OpFoldResult keyCount = kb.min(kb.index(blockKV), kb.sub(keys, key0));
  SmallVector<OpFoldResult> strides(3, one);
  Value tile =
      tensor::ExtractSliceOp::create(b, loc, scoresGradT, {zero, zero, zero},
                                     {heads, keyCount, rowCount}, strides);
  SmallVector<OpFoldResult> offsets = {zero, query0, key0};
  SmallVector<OpFoldResult> sizes = {heads, rowCount, keyCount};
  Value destTile =
      tensor::ExtractSliceOp::create(b, loc, dest, offsets, sizes, strides);
  // dest[g, i, c] += dS^T[g, c, i], loops (g, i, c).
  Value sum =
      kb.generic({tile}, destTile, {kb.map(3, {0, 2, 1}), kb.map(3, {0, 1, 2})},
                 {kPar, kPar, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value value = args[0];
                   if (value.getType() != args[1].getType())
                     value =
                         arith::ExtFOp::create(nb, l, args[1].getType(), value);
                   return arith::AddFOp::create(nb, l, args[1], value);
                 });
  return tensor::InsertSliceOp::create(b, loc, sum, dest, offsets, sizes,
                                       strides);
}

Value FlashAttentionGradTile::storeRows(Value tile, Value dest, Value row0,
                                        Value count, double factor) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  auto tileType = cast<RankedTensorType>(tile.getType());
  bool grouped = tileType.getRank() == 3;
  // The first `count` rows of the tile.
  SmallVector<OpFoldResult> tileOffsets(tileType.getRank(), zero);
  SmallVector<OpFoldResult> tileSizes =
      getAsIndexOpFoldResult(b.getContext(), tileType.getShape());
  tileSizes[grouped ? 1 : 0] = count;
  Value rowsOfTile = tensor::ExtractSliceOp::create(
      b, loc, tile, tileOffsets, tileSizes,
      SmallVector<OpFoldResult>(tileType.getRank(), one));
  // dest[0, row0 + r, h, x] for r < count, loops (0, r, h, x).
  auto destType = cast<RankedTensorType>(dest.getType());
  SmallVector<OpFoldResult> offsets = {zero, row0, zero, zero};
  SmallVector<OpFoldResult> sizes = {one, count,
                                     b.getIndexAttr(destType.getDimSize(2)),
                                     b.getIndexAttr(destType.getDimSize(3))};
  SmallVector<OpFoldResult> strides(4, one);
  Value destRows =
      tensor::ExtractSliceOp::create(b, loc, dest, offsets, sizes, strides);
  Value factorValue = kb.constant(factor);
  Value written =
      kb.generic({rowsOfTile}, destRows,
                 {grouped ? kb.map(4, {2, 1, 3}) : kb.map(4, {1, 3}),
                  kb.map(4, {0, 1, 2, 3})},
                 {kPar, kPar, kPar, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value value = args[0];
                   if (factor != 1.0)
                     value = arith::MulFOp::create(nb, l, value, factorValue);
                   return kb.toElement(nb, value);
                 });
  return tensor::InsertSliceOp::create(b, loc, written, dest, offsets, sizes,
                                       strides);
}

/// Tiles attn.flash_attention_grad through its TilingInterface, one tile
/// per (batch, KV head), and decomposes each tile.
struct LowerFlashAttentionGrad : OpRewritePattern<FlashAttentionGradOp> {
  LowerFlashAttentionGrad(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(FlashAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    // The key rotation's tables serve every tile: built once, before the
    // loops, for the positions of whole key tiles.
    KernelBuilder kb(
        rewriter, op.getLoc(),
        cast<RankedTensorType>(op.getQuery().getType()).getElementType());
    int64_t blockKV = op.getBlockKv();
    RopeTables keyRope = buildRopeTables(
        kb, op.getKeyRopeAttr(),
        cast<RankedTensorType>(op.getKey().getType()).getDimSize(3),
        kb.mul(kb.ceilDiv(kb.dim(op.getKey(), 1), blockKV), blockKV));
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);
    FailureOr<Operation *> tiled;
    if (op.getBiasGradInit()) {
      // The batch entries add into one bias gradient: a sequential loop
      // over them, the KV heads (disjoint slices of it) in parallel inside.
      FailureOr<Operation *> batchTile =
          tileKernelOp(rewriter, op, {one, zero}, /*parallel=*/false);
      if (failed(batchTile))
        return failure();
      tiled = tileKernelOp(rewriter, cast<TilingInterface>(*batchTile),
                           {zero, one}, parallel);
    } else {
      tiled = tileKernelOp(rewriter, op, {one, one}, parallel);
    }
    if (failed(tiled))
      return failure();
    auto tile = cast<FlashAttentionGradOp>(*tiled);
    rewriter.replaceOp(tile,
                       FlashAttentionGradTile(tile, rewriter, keyRope).build());
    return success();
  }
};

} // namespace

void attnfuse::populateFlashAttentionGradToSCFPatterns(
    RewritePatternSet &patterns, bool parallel) {
  patterns.add<LowerFlashAttentionGrad>(patterns.getContext(), parallel);
}
