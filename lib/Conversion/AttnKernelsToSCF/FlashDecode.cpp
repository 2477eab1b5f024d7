//===- FlashDecode.cpp - attn.flash_decode to loops -------------*- C++ -*-===//
//
// The op is tiled through its TilingInterface, one tile per (sequence, KV
// head) (per KV head for a paged cache, whose sequences share the pages),
// after the RoPE tables every tile shares are built. A tile is the
// executable semantics of one decode step on tensors. Per batch entry b
// with p = positions[b]: the new key (and value) is inserted into the cache
// at p (cf.assert first that p lies inside the capacity, and for a paged
// cache that the page the block table names exists); then per KV head the
// G query heads of the group, rotated at position p, stream over the keys
// [lo, p] in tiles of block_kv rows with an f32 online softmax. Each key tile
// is read once and serves all G heads; for K=V the same rows are the value
// tile, un-rotated, while the key role is rotated on load.
//
// A contiguous cache's tiles that end at or before p are read in place. The
// tile holding p (and every tile of a paged cache, row by row through the
// block table) is gathered with the row indices clamped to p, so that the
// read never leaves the cache; its rows past p (and those before the window)
// are masked. The RoPE tables cover the positions of the tiles the step
// reads, whatever the capacity. The splits of the GPU kernel do not exist
// here: one pass over the keys gives the same result.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Rope.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
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

class FlashDecodeLowering {
public:
  FlashDecodeLowering(FlashDecodeOp op, OpBuilder &builder)
      : op(op),
        kb(builder, op.getLoc(),
           cast<RankedTensorType>(op.getQuery().getType()).getElementType()) {
    auto queryType = cast<RankedTensorType>(op.getQuery().getType());
    group = queryType.getDimSize(2) /
            cast<RankedTensorType>(op.getKeyNew().getType()).getDimSize(2);
    headDim = queryType.getDimSize(3);
    valueDim =
        cast<RankedTensorType>(op.getValueOrKeyCache().getType()).getDimSize(3);
    blockKV = op.getBlockKv();
    keyIsValue = op.isKeyValue();
    scale = op.getScaleAttr() ? op.getScaleAttr().getValueAsDouble()
                              : 1.0 / std::sqrt(static_cast<double>(headDim));
    bind(op);
  }

  /// The RoPE tables every tile shares, for the positions of all of op's
  /// sequences, built at the builder's insertion point.
  void buildShared();
  /// The results of `tile`, a tile of op (any sequences and KV heads).
  SmallVector<Value> buildTile(FlashDecodeOp tile);

private:
  /// Makes `kernelOp` (op or one of its tiles) the op whose operands the
  /// helpers read.
  void bind(FlashDecodeOp kernelOp);
  /// Sequence `batchIndex`'s position p, from `positions`.
  Value readPosition(Value batchIndex);
  /// The first key block a sequence at `position` reads (the window's).
  Value firstKeyBlock(Value position);
  /// Cache (row, slot) of token `token` of sequence `batchIndex`.
  std::pair<Value, Value> cacheSlot(OpBuilder &b, Location loc,
                                    Value batchIndex, Value token);
  /// Writes the new token of `batchIndex` at position `position`.
  Value writeNewToken(Value cache, Value newRows, int64_t dim, Value batchIndex,
                      Value position);
  /// `[G, d]` compute-type query rows of the group, rotated at `position`.
  Value loadQuery(Value batchIndex, Value kvHead, Value position);
  /// `[block_kv, dim]` element-type rows of `cache` for tokens key0 + c,
  /// clamped to `last`.
  Value gatherRows(Value cache, int64_t dim, Value batchIndex, Value kvHead,
                   Value key0, Value last);
  /// Online-softmax update of (m [G], l [G], acc [G, dv]) with one tile.
  SmallVector<Value> update(Value queryRows, Value keySlab, Value valueSlab,
                            Value key0, Value lo, Value hi, ValueRange state);
  /// `output` with the tile acc / l of one (sequence, KV head) written.
  Value store(Value acc, Value sum, Value batchIndex, Value kvHead,
              Value output);

  FlashDecodeOp op;
  KernelBuilder kb;
  int64_t numKvHeads, group, headDim, valueDim, blockKV;
  bool keyIsValue;
  double scale;

  Value pageSize, capacity, numPages;
  RopeTables queryRope, keyRope;
};

std::pair<Value, Value> FlashDecodeLowering::cacheSlot(OpBuilder &b,
                                                       Location loc,
                                                       Value batchIndex,
                                                       Value token) {
  Value table = op.getBlockTable();
  if (!table)
    return {batchIndex, token};
  Value pageIndex = arith::DivSIOp::create(b, loc, token, pageSize);
  Value slot = arith::RemSIOp::create(b, loc, token, pageSize);
  Value page = tensor::ExtractOp::create(b, loc, table,
                                         ValueRange{batchIndex, pageIndex});
  return {arith::IndexCastOp::create(b, loc, b.getIndexType(), page), slot};
}

void FlashDecodeLowering::bind(FlashDecodeOp kernelOp) {
  op = kernelOp;
  numKvHeads = cast<RankedTensorType>(op.getKeyNew().getType()).getDimSize(2);
  Value keyCache = op.getKeyCache();
  if (op.isPaged()) {
    pageSize = kb.dim(keyCache, 1);
    numPages = kb.dim(keyCache, 0);
    capacity = kb.mul(kb.dim(op.getBlockTable(), 1), pageSize);
  } else {
    capacity = kb.dim(keyCache, 1);
  }
}

Value FlashDecodeLowering::readPosition(Value batchIndex) {
  OpBuilder &b = kb.builder;
  return arith::IndexCastOp::create(
      b, kb.loc, b.getIndexType(),
      tensor::ExtractOp::create(b, kb.loc, op.getPositions(),
                                ValueRange{batchIndex}));
}

Value FlashDecodeLowering::firstKeyBlock(Value position) {
  if (std::optional<int64_t> window = op.getWindow())
    return kb.floorDiv(
        kb.max(kb.index(0), kb.sub(position, kb.index(*window - 1))), blockKV);
  return kb.index(0);
}

void FlashDecodeLowering::buildShared() {
  if (!op.getQueryRopeAttr() && !op.getKeyRopeAttr())
    return;
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Value zero = kb.index(0), one = kb.index(1);
  // The RoPE tables cover the positions this step rotates at: the key
  // tiles of every sequence, from its first to the one holding its
  // position p (rows past p are rotated, then masked), not the whole
  // capacity. Positions are clamped into the cache here only to bound the
  // tables: one outside it fails its check before any rotation.
  Value last = kb.sub(capacity, one);
  auto range = scf::ForOp::create(
      b, loc, zero, kb.dim(op.getQuery(), 0), one, ValueRange{capacity, zero},
      [&](OpBuilder &, Location, Value batchIndex, ValueRange bounds) {
        Value position = kb.min(kb.max(readPosition(batchIndex), zero), last);
        Value start = kb.mul(firstKeyBlock(position), blockKV);
        Value end = kb.mul(kb.ceilDiv(kb.add(position, 1), blockKV), blockKV);
        scf::YieldOp::create(
            b, loc,
            ValueRange{kb.min(bounds[0], start), kb.max(bounds[1], end)});
      });
  Value first = range.getResult(0);
  Value rows = kb.max(zero, kb.sub(range.getResult(1), first));
  queryRope = buildRopeTables(kb, op.getQueryRopeAttr(), headDim, rows, first);
  keyRope =
      op.getKeyRopeAttr() == op.getQueryRopeAttr()
          ? queryRope
          : buildRopeTables(kb, op.getKeyRopeAttr(), headDim, rows, first);
}

SmallVector<Value> FlashDecodeLowering::buildTile(FlashDecodeOp tile) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  bind(tile);
  Value zero = kb.index(0), one = kb.index(1);
  Value batch = kb.dim(op.getQuery(), 0);
  SmallVector<Value> init(op.getDpsInits());

  auto checkPosition = [&](Value position) {
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, position,
                              zero),
        kb.lessThan(position, capacity));
    cf::AssertOp::create(
        b, loc, inside,
        "attn.flash_decode: positions[b] is outside the cache capacity");
  };
  // The G query heads of one KV head of sequence `batchIndex` over the keys
  // [lo, p] of the updated caches, written into `output`.
  auto attendHead = [&](Value batchIndex, Value kvHead, Value position,
                        Value keys, Value values, Value output) -> Value {
    Value lo = zero;
    if (std::optional<int64_t> window = op.getWindow())
      lo = kb.max(zero, kb.sub(position, kb.index(*window - 1)));
    Value hi = position;
    Value loBlock = firstKeyBlock(position);
    Value endBlock = kb.ceilDiv(kb.add(position, 1), blockKV);
    Value queryRows = loadQuery(batchIndex, kvHead, position);
    Value maxInit =
        kb.fill(kb.empty({group}, kb.computeType),
                kb.constant(-std::numeric_limits<double>::infinity()));
    Value sumInit =
        kb.fill(kb.empty({group}, kb.computeType), kb.constant(0.0));
    Value accInit =
        kb.fill(kb.empty({group, valueDim}, kb.computeType), kb.constant(0.0));
    // Tiles whose rows all lie at or before p are read in place from a
    // contiguous cache; the tile holding p (when p + 1 is not a whole number
    // of tiles), and every tile of a paged cache, is gathered row by row
    // with the rows past p clamped to p.
    Value wholeEnd =
        op.isPaged()
            ? loBlock
            : kb.max(loBlock, kb.floorDiv(kb.add(position, 1), blockKV));
    auto keyLoop = [&](Value fromBlock, Value toBlock, ValueRange state,
                       bool gather) {
      auto loop = scf::ForOp::create(
          b, loc, fromBlock, toBlock, one, state,
          [&](OpBuilder &, Location, Value keyBlock, ValueRange carried) {
            Value key0 = kb.mul(keyBlock, blockKV);
            auto readRows = [&](Value cache, int64_t dim) -> Value {
              if (gather)
                return gatherRows(cache, dim, batchIndex, kvHead, key0,
                                  position);
              return kb.slice(cache, {batchIndex, key0, kvHead, zero},
                              {1, blockKV, 1, dim}, {blockKV, dim});
            };
            // One read per tile; for K=V it is also the values.
            Value keySlab = readRows(keys, headDim);
            Value valueSlab = keyIsValue ? keySlab : readRows(values, valueDim);
            scf::YieldOp::create(
                b, loc,
                update(queryRows, keySlab, valueSlab, key0, lo, hi, carried));
          });
      return SmallVector<Value>(loop.getResults());
    };
    SmallVector<Value> state =
        keyLoop(loBlock, wholeEnd, ValueRange{maxInit, sumInit, accInit},
                /*gather=*/false);
    state = keyLoop(wholeEnd, endBlock, state, /*gather=*/true);
    return store(state[2], state[1], batchIndex, kvHead, output);
  };

  // Sequence by sequence: the new rows go into the caches, then the KV
  // heads of the tile attend to the updated caches.
  SmallVector<Value> loopResults;
  auto batchLoop = scf::ForOp::create(
      b, loc, zero, batch, one, init,
      [&](OpBuilder &, Location, Value batchIndex, ValueRange args) {
        Value position = readPosition(batchIndex);
        checkPosition(position);
        Value keys = writeNewToken(args[1], op.getKeyNew(), headDim, batchIndex,
                                   position);
        Value values = keyIsValue
                           ? keys
                           : writeNewToken(args[2], op.getValueNew(), valueDim,
                                           batchIndex, position);
        auto heads = scf::ForOp::create(
            b, loc, zero, kb.index(numKvHeads), one, ValueRange{args[0]},
            [&](OpBuilder &, Location, Value kvHead, ValueRange output) {
              scf::YieldOp::create(b, loc,
                                   attendHead(batchIndex, kvHead, position,
                                              keys, values, output[0]));
            });
        Value attended = heads.getResult(0);
        SmallVector<Value> results = {attended, keys};
        if (!keyIsValue)
          results.push_back(values);
        scf::YieldOp::create(b, loc, results);
      });
  loopResults.assign(batchLoop.getResults().begin(),
                     batchLoop.getResults().end());
  SmallVector<Value> results;
  for (auto [value, result] : llvm::zip(loopResults, op.getResults())) {
    Value cast = value;
    if (cast.getType() != result.getType())
      cast = tensor::CastOp::create(b, loc, result.getType(), cast);
    results.push_back(cast);
  }
  return results;
}

Value FlashDecodeLowering::writeNewToken(Value cache, Value newRows,
                                         int64_t dim, Value batchIndex,
                                         Value position) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  auto [row, slot] = cacheSlot(b, loc, batchIndex, position);
  if (op.isPaged()) {
    Value pageExists = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, row,
                              kb.index(0)),
        kb.lessThan(row, numPages));
    cf::AssertOp::create(b, loc, pageExists,
                         "attn.flash_decode: block_table names a page "
                         "outside the paged cache");
  }
  Value token = kb.slice(
      newRows,
      {batchIndex, b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
      {1, 1, numKvHeads, dim}, {1, 1, numKvHeads, dim});
  return kb.insert(token, cache,
                   {row, slot, b.getIndexAttr(0), b.getIndexAttr(0)},
                   {1, 1, numKvHeads, dim});
}

Value FlashDecodeLowering::loadQuery(Value batchIndex, Value kvHead,
                                     Value position) {
  OpBuilder &b = kb.builder;
  Value rows = kb.slice(
      op.getQuery(),
      {batchIndex, b.getIndexAttr(0), kb.mul(kvHead, group), b.getIndexAttr(0)},
      {1, 1, group, headDim}, {group, headDim});
  const RopeTables &rope = queryRope;
  return kb.generic(
      {rows}, kb.empty({group, headDim}, kb.computeType),
      {kb.map(2, {0, 1}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value element = kb.toCompute(nb, args[0]);
        if (!rope)
          return element;
        Value head = linalg::IndexOp::create(nb, l, 0);
        Value dim = linalg::IndexOp::create(nb, l, 1);
        Value partner = kb.toCompute(
            nb,
            tensor::ExtractOp::create(
                nb, l, rows, ValueRange{head, ropePartner(nb, l, dim, rope)}));
        return applyRope(nb, l, rope, element, partner, position, dim);
      });
}

Value FlashDecodeLowering::gatherRows(Value cache, int64_t dim,
                                      Value batchIndex, Value kvHead,
                                      Value key0, Value last) {
  return kb.generic(
      {}, kb.empty({blockKV, dim}, kb.elementType), {kb.map(2, {0, 1})},
      {kPar, kPar}, [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value c = linalg::IndexOp::create(nb, l, 0);
        Value e = linalg::IndexOp::create(nb, l, 1);
        // Rows past p are masked later; reading row p instead stays inside.
        Value token = arith::MinSIOp::create(
            nb, l, arith::AddIOp::create(nb, l, key0, c), last);
        auto [row, slot] = cacheSlot(nb, l, batchIndex, token);
        if (op.isPaged()) {
          // Entries of pages before p were checked when they were written.
          Value lastPage = arith::SubIOp::create(
              nb, l, numPages, arith::ConstantIndexOp::create(nb, l, 1));
          row = arith::MaxSIOp::create(
              nb, l, arith::ConstantIndexOp::create(nb, l, 0),
              arith::MinSIOp::create(nb, l, row, lastPage));
        }
        return tensor::ExtractOp::create(nb, l, cache,
                                         ValueRange{row, slot, kvHead, e});
      });
}

SmallVector<Value> FlashDecodeLowering::update(Value queryRows, Value keySlab,
                                               Value valueSlab, Value key0,
                                               Value lo, Value hi,
                                               ValueRange state) {
  Value maxOld = state[0], sumOld = state[1], accOld = state[2];
  Value negInf = kb.constant(-std::numeric_limits<double>::infinity());
  Value fzero = kb.constant(0.0), fone = kb.constant(1.0);
  Value scaleValue = kb.constant(scale);

  // Key rows in the compute type as a [d, block_kv] tile, rotated at their
  // positions (the tables cover the whole tile) for the scores.
  Value keyTile = loadRotatedKeyTile(kb, keySlab, keyRope, key0);
  Value valueTile = valueSlab;
  if (kb.elementType != kb.computeType)
    valueTile = kb.convert(valueSlab, kb.computeType);

  Value products =
      kb.generic({queryRows, keyTile},
                 kb.fill(kb.empty({group, blockKV}, kb.computeType), fzero),
                 {kb.map(3, {0, 1}), kb.map(3, {1, 2}), kb.map(3, {0, 2})},
                 {kPar, kRed, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value product =
                       arith::MulFOp::create(nb, l, args[0], args[1]);
                   return arith::AddFOp::create(nb, l, args[2], product);
                 });
  // s[g, c] = scale * q[g] . k[c], -inf outside [lo, hi].
  Value scores = kb.generic(
      {}, products, {kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value score = arith::MulFOp::create(nb, l, args[0], scaleValue);
        Value column = linalg::IndexOp::create(nb, l, 1);
        Value token = arith::AddIOp::create(nb, l, key0, column);
        Value valid = arith::AndIOp::create(
            nb, l,
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, token, lo),
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle, token, hi));
        return arith::SelectOp::create(nb, l, valid, score, negInf);
      });

  auto isNegInf = [&](OpBuilder &nb, Location l, Value x) -> Value {
    return arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, x, negInf);
  };
  Value tileMax =
      kb.generic({scores}, kb.fill(kb.empty({group}, kb.computeType), negInf),
                 {kb.map(2, {0, 1}), kb.map(2, {0})}, {kPar, kRed},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MaxNumFOp::create(nb, l, args[0], args[1]);
                 });
  // alpha = exp(m_old - m_new); 1 while no key was visible (m = -inf).
  Value alpha = kb.generic(
      {maxOld, tileMax}, kb.empty({group}, kb.computeType),
      {kb.map(1, {0}), kb.map(1, {0}), kb.map(1, {0})}, {kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value maxNew = arith::MaxNumFOp::create(nb, l, args[0], args[1]);
        Value correction = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[0], maxNew));
        return arith::SelectOp::create(nb, l, isNegInf(nb, l, maxNew), fone,
                                       correction);
      });
  Value maxNew =
      kb.generic({tileMax}, maxOld, {kb.map(1, {0}), kb.map(1, {0})}, {kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MaxNumFOp::create(nb, l, args[0], args[1]);
                 });
  Value probabilities = kb.generic(
      {scores, maxNew}, kb.empty({group, blockKV}, kb.computeType),
      {kb.map(2, {0, 1}), kb.map(2, {0}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value p = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
        return arith::SelectOp::create(nb, l, isNegInf(nb, l, args[0]), fzero,
                                       p);
      });
  Value sumScaled =
      kb.generic({alpha}, sumOld, {kb.map(1, {0}), kb.map(1, {0})}, {kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[1], args[0]);
                 });
  Value sumNew = kb.generic(
      {probabilities}, sumScaled, {kb.map(2, {0, 1}), kb.map(2, {0})},
      {kPar, kRed}, [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::AddFOp::create(nb, l, args[1], args[0]);
      });
  Value accScaled = kb.generic(
      {alpha}, accOld, {kb.map(2, {0}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MulFOp::create(nb, l, args[1], args[0]);
      });
  Value accNew =
      kb.generic({probabilities, valueTile}, accScaled,
                 {kb.map(3, {0, 1}), kb.map(3, {1, 2}), kb.map(3, {0, 2})},
                 {kPar, kRed, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value product =
                       arith::MulFOp::create(nb, l, args[0], args[1]);
                   return arith::AddFOp::create(nb, l, args[2], product);
                 });
  return {maxNew, sumNew, accNew};
}

Value FlashDecodeLowering::store(Value acc, Value sum, Value batchIndex,
                                 Value kvHead, Value output) {
  OpBuilder &b = kb.builder;
  Value fzero = kb.constant(0.0);
  Value tile = kb.generic(
      {acc, sum}, kb.empty({group, valueDim}, kb.elementType),
      {kb.map(2, {0, 1}), kb.map(2, {0}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value empty = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            args[1], fzero);
        Value normalized = arith::DivFOp::create(nb, l, args[0], args[1]);
        return kb.toElement(
            nb, arith::SelectOp::create(nb, l, empty, fzero, normalized));
      });
  return kb.insert(
      tile, output,
      {batchIndex, b.getIndexAttr(0), kb.mul(kvHead, group), b.getIndexAttr(0)},
      {1, 1, group, valueDim});
}

struct LowerFlashDecode : OpRewritePattern<FlashDecodeOp> {
  LowerFlashDecode(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(FlashDecodeOp op,
                                PatternRewriter &rewriter) const override {
    FlashDecodeLowering lowering(op, rewriter);
    lowering.buildShared();
    // One tile per (sequence, KV head); the sequences of a paged cache
    // share its pages, so there one tile per KV head takes every sequence.
    OpFoldResult one = rewriter.getIndexAttr(1);
    OpFoldResult batchTile = op.isPaged() ? rewriter.getIndexAttr(0) : one;
    FailureOr<Operation *> tiled =
        tileKernelOp(rewriter, op, {batchTile, one}, parallel);
    if (failed(tiled))
      return failure();
    auto tile = cast<FlashDecodeOp>(*tiled);
    rewriter.replaceOp(tile, lowering.buildTile(tile));
    return success();
  }
};

} // namespace

void attnfuse::populateFlashDecodeToSCFPatterns(RewritePatternSet &patterns,
                                                bool parallel) {
  patterns.add<LowerFlashDecode>(patterns.getContext(), parallel);
}
