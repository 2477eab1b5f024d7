//===- FlashAttention.cpp - attn.flash_attention to tiled loops -*- C++ -*-===//
//
// One loop nest per (batch, KV head, query block). The G = Hq / Hk query
// heads of a group form one [G, block_q, d] tile that every key tile is
// multiplied with, so a key/value tile is read once per group. A running
// row maximum m, sum l and output accumulator live in the compute type
// (f32 for 16-bit inputs) across the key loop (online softmax); the S x T
// score matrix never exists.
//
// Key tiles wholly after the causal diagonal, or wholly before the sliding
// window, are not visited: the key loop bounds exclude them. Only tiles that
// cross the diagonal, the window edge or the end of the keys take the masked
// path. Q, K and V are zero-padded once to whole tiles so every tile has a
// static shape; padded keys are masked and padded query rows dropped.
// For K=V the one key tile read serves Q K^T (rotated on load when the
// op says so) and P V (un-rotated). A key mask (a padded batch) is read
// per key tile and masks every tile.
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

/// Builds the tiled loops of one attn.flash_attention.
class FlashAttentionLowering {
public:
  FlashAttentionLowering(FlashAttentionOp op, OpBuilder &builder, bool parallel)
      : op(op), parallel(parallel),
        kb(builder, op.getLoc(),
           cast<RankedTensorType>(op.getQuery().getType()).getElementType()) {
    auto queryType = cast<RankedTensorType>(op.getQuery().getType());
    auto keyType = cast<RankedTensorType>(op.getKey().getType());
    numHeads = queryType.getDimSize(2);
    group = numHeads / keyType.getDimSize(2);
    headDim = queryType.getDimSize(3);
    valueDim =
        cast<RankedTensorType>(op.getValueOrKey().getType()).getDimSize(3);
    blockQ = op.getBlockQ();
    blockKV = op.getBlockKv();
    keyIsValue = !op.getValue();
    scale = op.getScaleAttr() ? op.getScaleAttr().getValueAsDouble()
                              : 1.0 / std::sqrt(static_cast<double>(headDim));
  }

  Value build();

private:
  /// `[G, block_q, d]` compute-type tile of the group's query heads.
  Value loadQueryTile(Value batchIndex, Value kvHead, Value row0);
  /// `[d, block_kv]` compute-type key tile (rotated on load when asked) and
  /// `[block_kv, dv]` value tile, from one read for K=V.
  std::pair<Value, Value> loadKeyValueTiles(Value batchIndex, Value kvHead,
                                            Value key0);
  /// Scaled, biased and (when `masked`) masked scores `[G, block_q,
  /// block_kv]` of the query tile against the key tile at `key0`.
  Value scores(Value queryTile, Value keyTile, Value batchIndex, Value kvHead,
               Value row0, Value key0, bool masked);
  /// Online-softmax update of (m, l, acc) with one key tile.
  SmallVector<Value> update(Value scoreTile, Value valueTile, ValueRange state);
  /// The output tile acc / l of one query block.
  KernelBuilder::TileWrite store(Value acc, Value sum, Value batchIndex,
                                 Value kvHead, Value row0);
  /// Keeps the key loop of one query block; returns its output tile.
  KernelBuilder::TileWrite buildQueryBlock(Value batchIndex, Value kvHead,
                                           Value queryBlock);

  FlashAttentionOp op;
  bool parallel;
  KernelBuilder kb;
  int64_t numHeads, group, headDim, valueDim, blockQ, blockKV;
  bool keyIsValue;
  double scale;

  // Values shared by every tile, set by build().
  Value queries, keys, offset;
  Value query, key, value, bias, keyMask;
  RopeTables queryRope, keyRope;
};

Value FlashAttentionLowering::build() {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Value batch = kb.dim(op.getQuery(), 0);
  queries = kb.dim(op.getQuery(), 1);
  keys = kb.dim(op.getKey(), 1);
  Value numQueryBlocks = kb.ceilDiv(queries, blockQ);
  Value paddedQueries = kb.mul(numQueryBlocks, blockQ);
  Value paddedKeys = kb.mul(kb.ceilDiv(keys, blockKV), blockKV);
  // Query i sits at position i + (T - S) of the keys.
  offset = kb.sub(keys, queries);

  query = kb.padDimTo(op.getQuery(), 1, paddedQueries);
  key = kb.padDimTo(op.getKey(), 1, paddedKeys);
  value = keyIsValue ? key : kb.padDimTo(op.getValue(), 1, paddedKeys);
  if (Value biasOperand = op.getBias()) {
    int64_t rank = cast<RankedTensorType>(biasOperand.getType()).getRank();
    bias = kb.padDimTo(kb.padDimTo(biasOperand, rank - 2, paddedQueries),
                       rank - 1, paddedKeys);
  }

  // Padded keys read a zero mask: masked like the keys past the end.
  if (Value mask = op.getKeyMask())
    keyMask = kb.padDimTo(mask, 1, paddedKeys);

  Value positions = kb.max(paddedQueries, paddedKeys);
  queryRope = buildRopeTables(kb, op.getQueryRopeAttr(), headDim, positions);
  keyRope = op.getKeyRopeAttr() == op.getQueryRopeAttr()
                ? queryRope
                : buildRopeTables(kb, op.getKeyRopeAttr(), headDim, positions);

  Value output =
      kb.empty({ShapedType::kDynamic, ShapedType::kDynamic, numHeads, valueDim},
               kb.elementType, {batch, paddedQueries});
  // Query blocks are independent: each owns its rows of the output and
  // keeps its softmax state and key loop to itself.
  Value tiled = kb.tileLoops(
      {batch, kb.index(numHeads / group), numQueryBlocks}, ValueRange{output},
      parallel, [&](ValueRange ivs) -> SmallVector<KernelBuilder::TileWrite> {
        return {buildQueryBlock(ivs[0], ivs[1], ivs[2])};
      })[0];

  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {batch, queries, b.getIndexAttr(numHeads),
                                     b.getIndexAttr(valueDim)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value result =
      tensor::ExtractSliceOp::create(b, loc, tiled, offsets, sizes, strides);
  if (result.getType() != op.getType())
    result = tensor::CastOp::create(b, loc, op.getType(), result);
  return result;
}

Value FlashAttentionLowering::loadQueryTile(Value batchIndex, Value kvHead,
                                            Value row0) {
  OpBuilder &b = kb.builder;
  Value head0 = kb.mul(kvHead, group);
  Value slab = kb.slice(query, {batchIndex, row0, head0, b.getIndexAttr(0)},
                        {1, blockQ, group, headDim}, {blockQ, group, headDim});
  Value init = kb.empty({group, blockQ, headDim}, kb.computeType);
  const RopeTables &rope = queryRope;
  return kb.generic(
      {slab}, init, {kb.map(3, {1, 0, 2}), kb.map(3, {0, 1, 2})},
      {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value element = kb.toCompute(nb, args[0]);
        if (!rope)
          return element;
        Value head = linalg::IndexOp::create(nb, l, 0);
        Value row = linalg::IndexOp::create(nb, l, 1);
        Value dim = linalg::IndexOp::create(nb, l, 2);
        Value partner = kb.toCompute(
            nb, tensor::ExtractOp::create(
                    nb, l, slab,
                    ValueRange{row, head, ropePartner(nb, l, dim, rope)}));
        Value position = arith::AddIOp::create(nb, l, row0, row);
        return applyRope(nb, l, rope, element, partner, position, dim);
      });
}

std::pair<Value, Value>
FlashAttentionLowering::loadKeyValueTiles(Value batchIndex, Value kvHead,
                                          Value key0) {
  OpBuilder &b = kb.builder;
  // One read of the key rows; for K=V it is also the value tile.
  Value keySlab = kb.slice(key, {batchIndex, key0, kvHead, b.getIndexAttr(0)},
                           {1, blockKV, 1, headDim}, {blockKV, headDim});
  Value keyTile = loadKeyTile(kb, keySlab, keyRope, key0);
  Value valueSlab =
      keyIsValue
          ? keySlab
          : kb.slice(value, {batchIndex, key0, kvHead, b.getIndexAttr(0)},
                     {1, blockKV, 1, valueDim}, {blockKV, valueDim});
  Value valueTile = kb.convert(valueSlab, kb.computeType);
  return {keyTile, valueTile};
}

Value FlashAttentionLowering::scores(Value queryTile, Value keyTile,
                                     Value batchIndex, Value kvHead, Value row0,
                                     Value key0, bool masked) {
  // s[g, i, c] = sum_e q[g, i, e] k[e, c]: c innermost and contiguous.
  Value init = kb.fill(kb.empty({group, blockQ, blockKV}, kb.computeType),
                       kb.constant(0.0));
  Value products = kb.generic(
      {queryTile, keyTile}, init,
      {kb.map(4, {0, 1, 2}), kb.map(4, {2, 3}), kb.map(4, {0, 1, 3})},
      {kPar, kPar, kRed, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], product);
      });

  // Scale, bias and mask in one pass over the tile.
  OpBuilder &b = kb.builder;
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (bias) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() == 3) {
      Value head0 = kb.mul(kvHead, group);
      inputs.push_back(kb.slice(bias, {head0, row0, key0},
                                {group, blockQ, blockKV},
                                {group, blockQ, blockKV}));
      maps.push_back(kb.map(3, {0, 1, 2}));
    } else {
      inputs.push_back(
          kb.slice(bias, {row0, key0}, {blockQ, blockKV}, {blockQ, blockKV}));
      maps.push_back(kb.map(3, {1, 2}));
    }
  }
  unsigned keyMaskArg = inputs.size();
  if (masked && keyMask) {
    inputs.push_back(
        kb.slice(keyMask, {batchIndex, key0}, {1, blockKV}, {blockKV}));
    maps.push_back(kb.map(3, {2}));
  }
  maps.push_back(kb.map(3, {0, 1, 2}));
  Value scaleValue = kb.constant(scale);
  Value negInf = kb.constant(-std::numeric_limits<double>::infinity());
  bool causal = op.getCausal();
  std::optional<int64_t> window = op.getWindow();
  Value windowValue = window ? kb.index(*window) : Value();
  (void)b;
  return kb.generic(
      inputs, products, maps, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value score = arith::MulFOp::create(nb, l, args.back(), scaleValue);
        if (bias)
          score =
              arith::AddFOp::create(nb, l, score, kb.toCompute(nb, args[0]));
        if (!masked)
          return score;
        Value row = linalg::IndexOp::create(nb, l, 1);
        Value column = linalg::IndexOp::create(nb, l, 2);
        Value queryPosition = arith::AddIOp::create(
            nb, l, arith::AddIOp::create(nb, l, row0, row), offset);
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

SmallVector<Value> FlashAttentionLowering::update(Value scoreTile,
                                                  Value valueTile,
                                                  ValueRange state) {
  Value maxOld = state[0], sumOld = state[1], accOld = state[2];
  Value negInf = kb.constant(-std::numeric_limits<double>::infinity());
  Value fzero = kb.constant(0.0), fone = kb.constant(1.0);

  auto isNegInf = [&](OpBuilder &nb, Location l, Value x) -> Value {
    return arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, x, negInf);
  };
  // The tile's row maxima, then alpha = exp(m - max(m, tile max)) before m
  // is overwritten in place. A row with no visible key so far keeps
  // m = -inf: its correction factor is 1 and its p is 0, not NaN.
  Value tileMax = kb.generic(
      {scoreTile}, kb.fill(kb.empty({group, blockQ}, kb.computeType), negInf),
      {kb.map(3, {0, 1, 2}), kb.map(3, {0, 1})}, {kPar, kPar, kRed},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MaximumFOp::create(nb, l, args[0], args[1]);
      });
  Value alpha = kb.generic(
      {maxOld, tileMax}, kb.empty({group, blockQ}, kb.computeType),
      {kb.map(2, {0, 1}), kb.map(2, {0, 1}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value maxNew = arith::MaximumFOp::create(nb, l, args[0], args[1]);
        Value correction = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[0], maxNew));
        return arith::SelectOp::create(nb, l, isNegInf(nb, l, maxNew), fone,
                                       correction);
      });
  Value maxNew = kb.generic(
      {tileMax}, maxOld, {kb.map(2, {0, 1}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MaximumFOp::create(nb, l, args[0], args[1]);
      });
  // p = exp(s - m_new).
  Value probabilities = kb.generic(
      {scoreTile, maxNew}, kb.empty({group, blockQ, blockKV}, kb.computeType),
      {kb.map(3, {0, 1, 2}), kb.map(3, {0, 1}), kb.map(3, {0, 1, 2})},
      {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value p = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
        return arith::SelectOp::create(nb, l, isNegInf(nb, l, args[1]), fzero,
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
                 {kb.map(3, {0, 1, 2}), kb.map(3, {0, 1})}, {kPar, kPar, kRed},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::AddFOp::create(nb, l, args[1], args[0]);
                 });
  // acc_new = acc * alpha + p V: f innermost and contiguous.
  Value accScaled =
      kb.generic({alpha}, accOld, {kb.map(3, {0, 1}), kb.map(3, {0, 1, 2})},
                 {kPar, kPar, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[1], args[0]);
                 });
  Value accNew = kb.generic(
      {probabilities, valueTile}, accScaled,
      {kb.map(4, {0, 1, 2}), kb.map(4, {2, 3}), kb.map(4, {0, 1, 3})},
      {kPar, kPar, kRed, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], product);
      });
  return {maxNew, sumNew, accNew};
}

KernelBuilder::TileWrite FlashAttentionLowering::store(Value acc, Value sum,
                                                       Value batchIndex,
                                                       Value kvHead,
                                                       Value row0) {
  OpBuilder &b = kb.builder;
  Value fzero = kb.constant(0.0);
  // o = acc / l, and 0 for a row that saw no key.
  Value tile = kb.generic(
      {acc, sum}, kb.empty({blockQ, group, valueDim}, kb.elementType),
      {kb.map(3, {0, 1, 2}), kb.map(3, {0, 1}), kb.map(3, {1, 0, 2})},
      {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value empty = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            args[1], fzero);
        Value normalized = arith::DivFOp::create(nb, l, args[0], args[1]);
        return kb.toElement(
            nb, arith::SelectOp::create(nb, l, empty, fzero, normalized));
      });
  return {tile,
          0,
          {batchIndex, row0, kb.mul(kvHead, group), b.getIndexAttr(0)},
          {1, blockQ, group, valueDim}};
}

KernelBuilder::TileWrite
FlashAttentionLowering::buildQueryBlock(Value batchIndex, Value kvHead,
                                        Value queryBlock) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Value row0 = kb.mul(queryBlock, blockQ);
  Value queryTile = loadQueryTile(batchIndex, kvHead, row0);

  // Visible keys of the block: positions [loKey, hiKey).
  Value firstQuery = kb.add(row0, offset);
  Value lastQuery = kb.add(firstQuery, blockQ - 1);
  Value hiKey = keys;
  if (op.getCausal())
    hiKey = kb.min(keys, kb.max(kb.add(lastQuery, 1), kb.index(0)));
  Value loKey = kb.index(0);
  if (std::optional<int64_t> window = op.getWindow())
    loKey = kb.max(loKey, kb.sub(firstQuery, kb.index(*window - 1)));
  Value loBlock = kb.floorDiv(loKey, blockKV);
  Value hiBlock = kb.max(loBlock, kb.ceilDiv(hiKey, blockKV));

  Value maxInit =
      kb.fill(kb.empty({group, blockQ}, kb.computeType),
              kb.constant(-std::numeric_limits<double>::infinity()));
  Value sumInit =
      kb.fill(kb.empty({group, blockQ}, kb.computeType), kb.constant(0.0));
  Value accInit = kb.fill(kb.empty({group, blockQ, valueDim}, kb.computeType),
                          kb.constant(0.0));

  auto keyLoop = scf::ForOp::create(
      b, loc, loBlock, hiBlock, kb.index(1),
      ValueRange{maxInit, sumInit, accInit},
      [&](OpBuilder &, Location, Value keyBlock, ValueRange state) {
        Value key0 = kb.mul(keyBlock, blockKV);
        Value keyTile, valueTile;
        std::tie(keyTile, valueTile) =
            loadKeyValueTiles(batchIndex, kvHead, key0);
        // A key mask can hide any key: every tile is masked. Otherwise
        // only tiles crossing the end of the keys, the diagonal or the
        // window edge need the mask.
        Value scoreTile;
        if (keyMask) {
          scoreTile = scores(queryTile, keyTile, batchIndex, kvHead, row0, key0,
                             /*masked=*/true);
        } else {
          Value lastKey = kb.add(key0, blockKV - 1);
          Value needsMask = kb.lessThan(kb.sub(keys, kb.index(1)), lastKey);
          if (op.getCausal())
            needsMask = kb.orI(needsMask, kb.lessThan(firstQuery, lastKey));
          if (std::optional<int64_t> window = op.getWindow())
            needsMask = kb.orI(needsMask, kb.lessThan(kb.index(*window - 1),
                                                      kb.sub(lastQuery, key0)));
          auto branch = scf::IfOp::create(
              b, loc, needsMask,
              [&](OpBuilder &, Location) {
                scf::YieldOp::create(b, loc,
                                     scores(queryTile, keyTile, batchIndex,
                                            kvHead, row0, key0,
                                            /*masked=*/true));
              },
              [&](OpBuilder &, Location) {
                scf::YieldOp::create(b, loc,
                                     scores(queryTile, keyTile, batchIndex,
                                            kvHead, row0, key0,
                                            /*masked=*/false));
              });
          scoreTile = branch.getResult(0);
        }
        scf::YieldOp::create(b, loc, update(scoreTile, valueTile, state));
      });
  return store(keyLoop.getResult(2), keyLoop.getResult(1), batchIndex, kvHead,
               row0);
}

struct LowerFlashAttention : OpRewritePattern<FlashAttentionOp> {
  LowerFlashAttention(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(FlashAttentionOp op,
                                PatternRewriter &rewriter) const override {
    FlashAttentionLowering lowering(op, rewriter, parallel);
    rewriter.replaceOp(op, lowering.build());
    return success();
  }
};

} // namespace

void attnfuse::populateFlashAttentionToSCFPatterns(RewritePatternSet &patterns,
                                                   bool parallel) {
  patterns.add<LowerFlashAttention>(patterns.getContext(), parallel);
}
