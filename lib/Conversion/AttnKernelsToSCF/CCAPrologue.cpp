//===- CCAPrologue.cpp - attn.cca_prologue to tiled loops -------*- C++ -*-===//
//
// One tile per (batch, block of block_s tokens) computes the block's
// attention inputs from x alone:
//   u    = x W_u^T for the block and its halo of H = max(P, 1) earlier
//          tokens (P = (k0 - 1) + (k1 - 1) for the convolutions, 1 for the
//          value shift), W_u = [Wq; Wk];
//   m    = depthwise convolution (k0 taps) over u, block_s + k1 - 1 rows;
//   c    = grouped convolution (k1 taps, one d x d mix per head) over m;
//   q, k = QK-mean residual, L2 norm to sqrt(d), key temperature, RoPE;
//   v    = x_t Wv^T (| x_{t-1} Wv_prev^T with the value shift).
// The projections are tiled GEMMs over weights packed once into blocks of
// W^T (see KernelBuilder::packWeightBlocks); x is zero-padded to whole
// 64-wide reduction steps. A call with fewer than block_s tokens (a short
// prompt) packs nothing: its one tile multiplies only its real rows by the
// weights as they are laid out (packing W would cost more than the call's
// products).
// The op is tiled through its TilingInterface ([1, block_s] over (batch,
// seq)); a tile reads its tokens and up to H earlier rows of x, zero-padded
// to H rows in front at the sequence start, which is exactly the zero
// padding of u (the projections have no bias) and x_{-1} = 0 of attn.cca
// (docs/semantics.md); the depthwise bias is still added at padded
// positions, as there.
// Tiles are independent: the halo is recomputed, never carried.
// With a padding mask, the padded tokens' rows of x are zeroed first: zero
// projections, convolution inputs and delayed values, as attn.cca defines.
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

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::kernels;

namespace {

class CCAPrologueLowering {
public:
  CCAPrologueLowering(CCAPrologueOp op, OpBuilder &builder)
      : op(op),
        kb(builder, op.getLoc(),
           cast<RankedTensorType>(op.getInput().getType()).getElementType()) {
    width = cast<RankedTensorType>(op.getInput().getType()).getDimSize(2);
    numHeads = op.getNumHeads();
    numKvHeads = op.getNumKvHeads();
    headDim = op.getHeadDim();
    group = numHeads / numKvHeads;
    heads = numHeads + numKvHeads;
    channels = op.getConvChannels();
    keyLatent = op.getKeyLatentDim();
    k0 = op.getConvKernelSizes()[0];
    k1 = op.getConvKernelSizes()[1];
    padding = op.getConvPadding();
    shift = op.getValueShift();
    halo = op.getHalo();
    blockS = op.getBlockS();
    // The projections' GEMM tiles (the CPU defaults of attn-fuse).
    blockK = std::min<int64_t>(64, width);
    paddedWidth = llvm::divideCeil(width, blockK) * blockK;
    blockN = 64;
  }

  /// What every tile shares, built at the builder's insertion point (the
  /// packed weights by every thread when `parallel`).
  void buildShared(RewriterBase &rewriter, bool parallel);
  /// The results of `tile` (a tile of op with at most block_s tokens of one
  /// sequence), whose first token is token `s0` of the op's.
  SmallVector<Value> buildTile(CCAPrologueOp tile, Value s0);

private:
  /// `[rows, outputs]` = x-rows `[row0, row0 + rows)` of the block x W^T,
  /// one tiled GEMM per block of `blockN` outputs over `packedWeight`; in a
  /// short call, the first `realRows` of them times `weights` (W's row
  /// blocks as they are laid out, concatenated), zero after.
  Value project(Value block, int64_t row0, int64_t rows, Value packedWeight,
                int64_t outputs, ArrayRef<Value> weights, Value realRows);
  /// The three output tiles of one block, `tileTokens` of whose rows are
  /// the tile's tokens.
  std::tuple<Value, Value, Value> buildBlock(Value block, Value s0,
                                             Value tileTokens);

  CCAPrologueOp op;
  KernelBuilder kb;
  int64_t width, numHeads, numKvHeads, headDim, group, heads, channels,
      keyLatent, k0, k1, padding, halo, blockS;
  // Projection GEMM tiles: x is zero-padded to paddedWidth.
  int64_t blockK, blockN, paddedWidth;
  bool shift;

  // Whether the call has fewer than blockS tokens (i1): no packed weights.
  Value shortCall;
  // Parameters prepared once, in the compute type.
  Value packedWeightT, valueWeightT, previousWeightT;
  Value depthwiseWeight, depthwiseBias, groupedWeight, groupedBias;
  Value temperature;
  RopeTables rope;
};

Value CCAPrologueLowering::project(Value block, int64_t row0, int64_t rows,
                                   Value packedWeight, int64_t outputs,
                                   ArrayRef<Value> weights, Value realRows) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  OpFoldResult zero = b.getIndexAttr(0);
  int64_t numBlocks =
      cast<RankedTensorType>(packedWeight.getType()).getDimSize(0);
  Value xRows = kb.slice(block, {b.getIndexAttr(row0), zero},
                         {rows, paddedWidth}, {rows, paddedWidth});
  auto product = scf::IfOp::create(
      b, loc, shortCall,
      [&](OpBuilder &, Location) {
        Value result = kb.empty({rows, outputs}, kb.computeType);
        int64_t column = 0;
        for (Value weight : weights) {
          Value part = kb.multiplyRowsUnpacked(xRows, realRows, weight);
          int64_t partOutputs =
              cast<RankedTensorType>(weight.getType()).getDimSize(0);
          result = kb.insert(part, result, {zero, b.getIndexAttr(column)},
                             {rows, partOutputs});
          column += partOutputs;
        }
        scf::YieldOp::create(b, loc, result);
      },
      [&](OpBuilder &, Location) {
        Value result = kb.empty({rows, numBlocks * blockN}, kb.computeType);
        auto loop = scf::ForOp::create(
            b, loc, kb.index(0), kb.index(numBlocks), kb.index(1),
            ValueRange{result},
            [&](OpBuilder &, Location, Value featureBlock, ValueRange args) {
              Value acc = kb.fill(kb.empty({rows, blockN}, kb.computeType),
                                  kb.constant(0.0));
              acc = kb.multiplyWeightBlock(acc, xRows, packedWeight,
                                           featureBlock);
              scf::YieldOp::create(
                  b, loc,
                  kb.insert(acc, args[0], {zero, kb.mul(featureBlock, blockN)},
                            {rows, blockN}));
            });
        scf::YieldOp::create(b, loc,
                             kb.slice(loop.getResult(0), {zero, zero},
                                      {rows, outputs}, {rows, outputs}));
      });
  return product.getResult(0);
}

std::tuple<Value, Value, Value>
CCAPrologueLowering::buildBlock(Value block, Value s0, Value tileTokens) {
  OpBuilder &b = kb.builder;
  MLIRContext *context = b.getContext();
  int64_t rows = blockS + halo;
  // Block row i holds token s0 - halo + i; rows past the tile's tokens are
  // zero, and so are their projections.
  Value packed =
      project(block, 0, rows, packedWeightT, channels, {op.getWq(), op.getWk()},
              kb.add(tileTokens, kb.index(halo))); // [rows, C]

  // m[j, c] = b_dw[c] + sum_t w_dw[c, t] u[j + t + (halo - P), c]: m row j
  // is padded-sequence position s0 + j.
  int64_t midRows = blockS + k1 - 1;
  Value midInit = kb.generic(
      {depthwiseBias}, kb.empty({midRows, channels}, kb.computeType),
      {kb.map(2, {1}), kb.map(2, {0, 1})}, {kPar, kPar},
      [&](OpBuilder &, Location, ValueRange args) -> Value { return args[0]; });
  AffineExpr j = getAffineDimExpr(0, context), t = getAffineDimExpr(1, context),
             c = getAffineDimExpr(2, context);
  Value mid =
      kb.generic({packed, depthwiseWeight}, midInit,
                 {AffineMap::get(3, 0, {j + t + (halo - padding), c}, context),
                  kb.map(3, {2, 1}), kb.map(3, {0, 2})},
                 {kPar, kRed, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value product =
                       arith::MulFOp::create(nb, l, args[0], args[1]);
                   return arith::AddFOp::create(nb, l, args[2], product);
                 });

  // conv[i, g, o] = b_g[g, o] + sum_{t, e} w_g[g, t, e, o] m[i + t, g, e].
  auto headsShape = [&](Value flat, int64_t flatRows) {
    return tensor::ExpandShapeOp::create(
        b, kb.loc,
        RankedTensorType::get({flatRows, heads, headDim}, kb.computeType), flat,
        ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  };
  Value midHeads = headsShape(mid, midRows);
  Value convInit = kb.generic(
      {groupedBias}, kb.empty({blockS, heads, headDim}, kb.computeType),
      {kb.map(3, {1, 2}), kb.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
      [&](OpBuilder &, Location, ValueRange args) -> Value { return args[0]; });
  AffineExpr i = getAffineDimExpr(0, context), g = getAffineDimExpr(1, context),
             tap = getAffineDimExpr(2, context),
             e = getAffineDimExpr(3, context), o = getAffineDimExpr(4, context);
  Value conv =
      kb.generic({midHeads, groupedWeight}, convInit,
                 {AffineMap::get(5, 0, {i + tap, g, e}, context),
                  AffineMap::get(5, 0, {g, tap, e, o}, context),
                  AffineMap::get(5, 0, {i, g, o}, context)},
                 {kPar, kPar, kRed, kRed, kPar},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value product =
                       arith::MulFOp::create(nb, l, args[0], args[1]);
                   return arith::AddFOp::create(nb, l, args[2], product);
                 });

  // QK-mean residual from the pre-conv projections of the block's tokens.
  Value raw = headsShape(packed, rows); // [rows, heads, d]
  Value half = kb.constant(0.5);
  Value residual = conv;
  if (op.getQkMean()) {
    Value haloValue = kb.index(halo);
    residual = kb.generic(
        {}, conv, {kb.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value row = arith::AddIOp::create(
              nb, l, linalg::IndexOp::create(nb, l, 0), haloValue);
          Value head = linalg::IndexOp::create(nb, l, 1);
          Value dim = linalg::IndexOp::create(nb, l, 2);
          auto rawAt = [&](Value headIndex) -> Value {
            return tensor::ExtractOp::create(nb, l, raw,
                                             ValueRange{row, headIndex, dim});
          };
          auto constIndex = [&](int64_t v) -> Value {
            return arith::ConstantIndexOp::create(nb, l, v);
          };
          Value isQuery = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::slt, head, constIndex(numHeads));
          // Query head h: its KV head is numHeads + h / G.
          Value queryKv = arith::AddIOp::create(
              nb, l, constIndex(numHeads),
              arith::DivUIOp::create(
                  nb, l,
                  arith::MinUIOp::create(nb, l, head, constIndex(numHeads - 1)),
                  constIndex(group)));
          Value queryTerm =
              arith::AddFOp::create(nb, l, rawAt(head), rawAt(queryKv));
          // KV head j: the mean of its group's query heads.
          Value kvIndex = arith::SubIOp::create(
              nb, l, arith::MaxUIOp::create(nb, l, head, constIndex(numHeads)),
              constIndex(numHeads));
          Value groupSum;
          for (int64_t member = 0; member < group; ++member) {
            Value memberHead = arith::AddIOp::create(
                nb, l, arith::MulIOp::create(nb, l, kvIndex, constIndex(group)),
                constIndex(member));
            Value value = rawAt(memberHead);
            groupSum = groupSum ? arith::AddFOp::create(nb, l, groupSum, value)
                                : value;
          }
          Value groupMean = arith::MulFOp::create(
              nb, l, groupSum, kb.constant(1.0 / static_cast<double>(group)));
          Value keyTerm = arith::AddFOp::create(nb, l, groupMean, rawAt(head));
          Value term =
              arith::SelectOp::create(nb, l, isQuery, queryTerm, keyTerm);
          return arith::AddFOp::create(
              nb, l, args[0], arith::MulFOp::create(nb, l, half, term));
        });
  }

  // L2 norm to sqrt(d), then the key temperature.
  Value normalized = kb.normalizeHeads(residual, temperature, numHeads,
                                       op.getEps().convertToDouble(),
                                       op.getNorm() == NormMode::clamp_eps);

  // RoPE at the block's token positions, and conversion.
  Value rotated = kb.generic(
      {normalized}, kb.empty({blockS, heads, headDim}, kb.elementType),
      {kb.map(3, {0, 1, 2}), kb.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value element = args[0];
        if (rope) {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value head = linalg::IndexOp::create(nb, l, 1);
          Value dim = linalg::IndexOp::create(nb, l, 2);
          Value partner = tensor::ExtractOp::create(
              nb, l, normalized,
              ValueRange{row, head, ropePartner(nb, l, dim, rope)});
          Value position = arith::AddIOp::create(nb, l, s0, row);
          element = applyRope(nb, l, rope, element, partner, position, dim);
        }
        return kb.toElement(nb, element);
      });
  Value queryTile = kb.slice(
      rotated, {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
      {blockS, numHeads, headDim}, {blockS, numHeads, headDim});
  Value keyTile = kb.slice(
      rotated, {b.getIndexAttr(0), b.getIndexAttr(numHeads), b.getIndexAttr(0)},
      {blockS, numKvHeads, headDim}, {blockS, numKvHeads, headDim});

  // Values: the current token's projection, and with the value shift the
  // previous token's (block row halo - 1 + i) in the second half.
  Value values;
  if (shift) {
    Value current = project(block, halo, blockS, valueWeightT, keyLatent / 2,
                            op.getWv(), tileTokens);
    Value previous = project(block, halo - 1, blockS, previousWeightT,
                             keyLatent / 2, op.getWvPrev(), tileTokens);
    Value both = kb.empty({blockS, keyLatent}, kb.computeType);
    both = kb.insert(current, both, {b.getIndexAttr(0), b.getIndexAttr(0)},
                     {blockS, keyLatent / 2});
    values = kb.insert(previous, both,
                       {b.getIndexAttr(0), b.getIndexAttr(keyLatent / 2)},
                       {blockS, keyLatent / 2});
  } else {
    values = project(block, halo, blockS, valueWeightT, keyLatent, op.getWv(),
                     tileTokens);
  }
  Value valueTile = kb.convert(values, kb.elementType);
  valueTile = tensor::ExpandShapeOp::create(
      b, kb.loc,
      RankedTensorType::get({blockS, numKvHeads, headDim}, kb.elementType),
      valueTile, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  return {queryTile, keyTile, valueTile};
}

void CCAPrologueLowering::buildShared(RewriterBase &rewriter, bool parallel) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  MLIRContext *context = b.getContext();

  Value tokens = kb.dim(op.getInits()[0], 1);
  shortCall = kb.lessThan(tokens, kb.index(blockS));
  // The packed weights, when the call has a whole block of tokens; one
  // block of features per iteration.
  auto packed = [&](ValueRange weights) {
    auto pack = scf::IfOp::create(
        b, loc, shortCall,
        [&](OpBuilder &, Location) {
          int64_t outputs = 0;
          for (Value weight : weights)
            outputs += cast<RankedTensorType>(weight.getType()).getDimSize(0);
          scf::YieldOp::create(
              b, loc,
              kb.empty({static_cast<int64_t>(llvm::divideCeil(outputs, blockN)),
                        paddedWidth / blockK, blockK, blockN},
                       kb.computeType));
        },
        [&](OpBuilder &, Location) {
          Value weight =
              weights.size() == 1
                  ? weights[0]
                  : tensor::ConcatOp::create(b, loc, /*dim=*/0, weights);
          Value blocks = kb.packWeightBlocks(weight, blockN, blockK);
          scf::YieldOp::create(
              b, loc, parallel ? distributeLoop(rewriter, blocks, 0) : blocks);
        });
    return pack.getResult(0);
  };
  packedWeightT = packed({op.getWq(), op.getWk()});
  valueWeightT = packed(op.getWv());
  if (shift)
    previousWeightT = packed(op.getWvPrev());
  // [C, 1, k0] -> [C, k0].
  depthwiseWeight =
      kb.convert(op.getConvDwWeight(), {channels, k0}, kb.computeType,
                 AffineMap::get(2, 0,
                                {getAffineDimExpr(0, context),
                                 getAffineConstantExpr(0, context),
                                 getAffineDimExpr(1, context)},
                                context));
  depthwiseBias = kb.convert(op.getConvDwBias(), kb.computeType);
  // w_g[g * d + o, e, t] -> [g, t, e, o]: output channel innermost.
  Value groupedSource = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get(
          {heads, headDim, headDim, k1},
          cast<RankedTensorType>(op.getConvGWeight().getType())
              .getElementType()),
      op.getConvGWeight(), ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  groupedWeight = kb.convert(groupedSource, {heads, k1, headDim, headDim},
                             kb.computeType, kb.map(4, {0, 3, 2, 1}));
  groupedBias = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({heads, headDim}, kb.computeType),
      kb.convert(op.getConvGBias(), kb.computeType),
      ArrayRef<ReassociationIndices>{{0, 1}});
  temperature = kb.keyTemperatures(op.getTemp(), op.getTemperature() ==
                                                     TemperatureMode::clamped);
  // Positions of whole token blocks from the op's first token.
  rope = buildRopeTables(kb, op.getRopeAttr(), headDim,
                         kb.mul(kb.ceilDiv(tokens, blockS), blockS),
                         op.getTokenOffset());
}

SmallVector<Value> CCAPrologueLowering::buildTile(CCAPrologueOp tile,
                                                  Value s0) {
  // Tiling replaced op; the tile carries the same attributes.
  op = tile;
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  Type elementType = kb.elementType;
  Value padValue = arith::ConstantOp::create(b, loc, elementType,
                                             b.getZeroAttr(elementType));
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);

  // The tile's input rows: its history, then its tokens (at most block_s).
  // Only the last `halo` history rows are read.
  Value tokens = kb.dim(tile.getInits()[0], 1);
  Value inputRows = kb.dim(tile.getInput(), 1);
  Value history = kb.sub(inputRows, tokens);
  Value usedHistory = arith::MinUIOp::create(b, loc, history, kb.index(halo));
  Value firstRow = kb.sub(history, usedHistory);
  Value rows = kb.sub(inputRows, firstRow);
  auto lastRows = [&](Value source, int64_t rank) {
    SmallVector<OpFoldResult> offsets = {zero, firstRow}, sizes = {one, rows};
    if (rank == 3) {
      offsets.push_back(zero);
      sizes.push_back(b.getIndexAttr(width));
    }
    return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                          SmallVector<OpFoldResult>(rank, one));
  };
  Value source = lastRows(tile.getInput(), 3);
  if (Value mask = tile.getPaddingMask()) {
    // x[s] where mask[s] != 0, else a zero row.
    Value maskRows = lastRows(mask, 2);
    Type maskType = cast<RankedTensorType>(mask.getType()).getElementType();
    Value maskZero =
        arith::ConstantOp::create(b, loc, maskType, b.getZeroAttr(maskType));
    source = kb.generic(
        {source, maskRows},
        kb.empty({1, ShapedType::kDynamic, width}, elementType, {rows}),
        {kb.map(3, {0, 1, 2}), kb.map(3, {0, 1}), kb.map(3, {0, 1, 2})},
        {kPar, kPar, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value real = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                             args[1], maskZero);
          return arith::SelectOp::create(nb, l, real, args[0], padValue);
        });
  }
  // Zero rows for the halo before the sequence start and after the last
  // token, zero columns to whole reduction steps: block row i holds token
  // s0 - halo + i.
  Value padded = tensor::PadOp::create(
      b, loc,
      RankedTensorType::get({1, ShapedType::kDynamic, paddedWidth},
                            elementType),
      source,
      SmallVector<OpFoldResult>{zero, kb.sub(kb.index(halo), usedHistory),
                                zero},
      SmallVector<OpFoldResult>{zero, kb.sub(kb.index(blockS), tokens),
                                b.getIndexAttr(paddedWidth - width)},
      padValue);
  padded = tensor::CastOp::create(
      b, loc,
      RankedTensorType::get({1, blockS + halo, paddedWidth}, elementType),
      padded);
  Value block =
      kb.slice(padded, {zero, zero, zero}, {1, blockS + halo, paddedWidth},
               {blockS + halo, paddedWidth});
  auto [queryTile, keyTile, valueTile] = buildBlock(block, s0, tokens);

  // The tile's tokens of each block result, into its inits.
  Value blockTiles[] = {queryTile, keyTile, valueTile};
  SmallVector<Value> results;
  for (auto [blockTile, init] : llvm::zip_equal(blockTiles, tile.getInits())) {
    int64_t outHeads = cast<RankedTensorType>(init.getType()).getDimSize(2);
    SmallVector<OpFoldResult> sizes = {tokens, b.getIndexAttr(outHeads),
                                       b.getIndexAttr(headDim)};
    Value rowsOfTile = tensor::ExtractSliceOp::create(
        b, loc, blockTile, SmallVector<OpFoldResult>(3, zero), sizes,
        SmallVector<OpFoldResult>(3, one));
    sizes.insert(sizes.begin(), one);
    results.push_back(tensor::InsertSliceOp::create(
        b, loc, rowsOfTile, init, SmallVector<OpFoldResult>(4, zero), sizes,
        SmallVector<OpFoldResult>(4, one)));
  }
  return results;
}

/// Tiles attn.cca_prologue through its TilingInterface, one tile per
/// (sequence, block of block_s tokens), and decomposes each tile.
struct LowerCCAPrologue : OpRewritePattern<CCAPrologueOp> {
  LowerCCAPrologue(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(CCAPrologueOp op,
                                PatternRewriter &rewriter) const override {
    // The packed weights, convolution parameters and rotation tables serve
    // every tile: built once, before the loops.
    CCAPrologueLowering lowering(op, rewriter);
    lowering.buildShared(rewriter, parallel);
    FailureOr<Operation *> tiled = tileKernelOp(
        rewriter, op,
        {rewriter.getIndexAttr(1), rewriter.getIndexAttr(op.getBlockS())},
        parallel);
    if (failed(tiled))
      return failure();
    auto tile = cast<CCAPrologueOp>(*tiled);
    // The tile's first token, relative to the op's: its row in the tables.
    auto initRows = tile.getInits()[0].getDefiningOp<tensor::ExtractSliceOp>();
    Value s0 = getValueOrCreateConstantIndexOp(rewriter, tile.getLoc(),
                                               initRows.getMixedOffsets()[1]);
    rewriter.replaceOp(tile, lowering.buildTile(tile, s0));
    return success();
  }
};

} // namespace

void attnfuse::populateCCAPrologueToSCFPatterns(RewritePatternSet &patterns,
                                                bool parallel) {
  patterns.add<LowerCCAPrologue>(patterns.getContext(), parallel);
}
