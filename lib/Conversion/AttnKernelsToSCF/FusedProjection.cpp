//===- FusedProjection.cpp - attn.fused_projection to tiled loops -*- C++ -*-=//
//
// A tiled GEMM: for every (batch, block_s tokens, block_n features) output
// tile, an f32 accumulator sums x-tile x W^T-tile products over the model
// width in steps of block_k, then one epilogue adds the bias, rotates the
// tile's heads (RoPE) and stores it already split into heads. W is packed
// once per call into contiguous [block_k, block_n] blocks of W^T, so the
// innermost loop runs over contiguous output features and a tile step reads
// one block (rows of a plain W^T lie E * 4 bytes apart: for E = 1024 every
// row maps to the same L1 cache sets). The tokens past the last whole block
// (a decode step's one token per sequence) are matrix-vector products over
// W as it is laid out, with the same epilogue: no token padding, and no
// packed copy of W when there is no whole block. Features are zero-padded
// to whole tiles, and the width to whole reduction steps for the GEMM.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Rope.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::kernels;

namespace {

struct LowerFusedProjection : OpRewritePattern<FusedProjectionOp> {
  LowerFusedProjection(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(FusedProjectionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    KernelBuilder kb(rewriter, loc, inputType.getElementType());
    const int64_t width = inputType.getDimSize(2);
    const int64_t features =
        cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
    const int64_t headDim = op.getHeadDim();
    const int64_t blockS = op.getBlockS();
    // Tiles never exceed the (padded) feature count or the width.
    const int64_t blockN = std::min<int64_t>(
        op.getBlockN(), llvm::divideCeil(features, headDim) * headDim);
    const int64_t blockK = std::min<int64_t>(op.getBlockK(), width);
    const int64_t paddedWidth = llvm::divideCeil(width, blockK) * blockK;
    const int64_t paddedFeatures = llvm::divideCeil(features, blockN) * blockN;
    const int64_t numFeatureBlocks = paddedFeatures / blockN;

    Value batch = kb.dim(op.getInput(), 0);
    Value tokens = kb.dim(op.getInput(), 1);
    Value numFullBlocks = kb.floorDiv(tokens, blockS);
    Value tailStart = kb.mul(numFullBlocks, blockS);
    Value zero = kb.index(0);

    // W [N_padded, E] as given and the bias [N_padded] in the compute type.
    Value weight = kb.padDimTo(op.getWeight(), 0, kb.index(paddedFeatures));
    Value bias;
    if (op.getBias()) {
      bias = kb.convert(kb.padDimTo(op.getBias(), 0, kb.index(paddedFeatures)),
                        {paddedFeatures}, kb.computeType);
    }
    RopeTables rope = buildRopeTables(kb, op.getRopeAttr(), headDim, tokens);

    Value output =
        kb.empty({ShapedType::kDynamic, ShapedType::kDynamic, paddedFeatures},
                 kb.elementType, {batch, tokens});

    // Epilogue of an `[rows, BN]` accumulator for tokens s0 .. s0 + rows - 1
    // and features n0 ..: bias, RoPE of the tile's heads, conversion.
    auto epilogue = [&](Value acc, int64_t rows, Value batchIndex, Value s0,
                        Value n0) -> KernelBuilder::TileWrite {
      Value biased = acc;
      if (bias)
        biased = kb.generic(
            {acc, kb.slice(bias, {n0}, {blockN}, {blockN})},
            kb.empty({rows, blockN}, kb.computeType),
            {kb.map(2, {0, 1}), kb.map(2, {1}), kb.map(2, {0, 1})},
            {kPar, kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              return arith::AddFOp::create(nb, l, args[0], args[1]);
            });
      Value tile = kb.generic(
          {biased}, kb.empty({rows, blockN}, kb.elementType),
          {kb.map(2, {0, 1}), kb.map(2, {0, 1})}, {kPar, kPar},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            Value element = args[0];
            if (rope) {
              // Tiles hold whole heads: the partner is in this tile.
              Value row = linalg::IndexOp::create(nb, l, 0);
              Value column = linalg::IndexOp::create(nb, l, 1);
              Value headDimValue =
                  arith::ConstantIndexOp::create(nb, l, headDim);
              Value dim = arith::RemSIOp::create(nb, l, column, headDimValue);
              Value headStart = arith::SubIOp::create(nb, l, column, dim);
              Value partnerColumn = arith::AddIOp::create(
                  nb, l, headStart, ropePartner(nb, l, dim, rope));
              Value partner = tensor::ExtractOp::create(
                  nb, l, biased, ValueRange{row, partnerColumn});
              Value position = arith::AddIOp::create(nb, l, s0, row);
              element = applyRope(nb, l, rope, element, partner, position, dim);
            }
            return kb.toElement(nb, element);
          });
      return {tile, 0, {batchIndex, s0, n0}, {1, rows, blockN}};
    };

    // Whole blocks of block_s tokens: a tiled GEMM against W^T packed into
    // [block_k, block_n] blocks (only when there is a whole block).
    auto blockBody = [&](Value input, Value packedWeight, Value batchIndex,
                         Value s0,
                         Value featureBlock) -> KernelBuilder::TileWrite {
      Value acc =
          kb.fill(kb.empty({blockS, blockN}, kb.computeType), kb.constant(0.0));
      Value rows = kb.slice(input, {batchIndex, s0, zero},
                            {1, blockS, paddedWidth}, {blockS, paddedWidth});
      acc = kb.multiplyWeightBlock(acc, rows, packedWeight, featureBlock);
      return epilogue(acc, blockS, batchIndex, s0,
                      kb.mul(featureBlock, blockN));
    };
    auto hasFullBlocks = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sgt, numFullBlocks, zero);
    auto ifFullBlocks = scf::IfOp::create(
        rewriter, loc, TypeRange{output.getType()}, hasFullBlocks,
        /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifFullBlocks.thenBlock());
      Value input = op.getInput();
      if (paddedWidth != width)
        input = kb.padDimTo(input, 2, kb.index(paddedWidth));
      Value packedWeight = kb.packWeightBlocks(op.getWeight(), blockN, blockK);
      // Every (token block, feature block) tile owns its output and its
      // whole reduction over the input features.
      Value tiled = kb.tileLoops(
          {batch, numFullBlocks, kb.index(numFeatureBlocks)},
          ValueRange{output}, parallel,
          [&](ValueRange ivs) -> SmallVector<KernelBuilder::TileWrite> {
            return {blockBody(input, packedWeight, ivs[0],
                              kb.mul(ivs[1], blockS), ivs[2])};
          })[0];
      scf::YieldOp::create(rewriter, loc, tiled);
      rewriter.setInsertionPointToStart(ifFullBlocks.elseBlock());
      scf::YieldOp::create(rewriter, loc, output);
    }

    // The last tokens % block_s tokens (all of them for a decode step's few
    // tokens) one at a time, as matrix-vector products over W in its own
    // layout: each weight row is read once and contiguously. Partial sums
    // over up to 64 interleaved input features keep the innermost loop
    // parallel and long enough for the loop vectorizer (a shorter one is
    // unrolled first and stays scalar); they are added up at the end.
    int64_t lanes = 64;
    while (width % lanes != 0)
      lanes /= 2;
    const int64_t laneSteps = width / lanes;
    auto tokenBody = [&](Value batchIndex, Value s,
                         Value n0) -> KernelBuilder::TileWrite {
      Value xRow = kb.slice(op.getInput(), {batchIndex, s, zero}, {1, 1, width},
                            {width});
      xRow = tensor::ExpandShapeOp::create(
          rewriter, loc,
          RankedTensorType::get({laneSteps, lanes}, kb.elementType), xRow,
          ArrayRef<ReassociationIndices>{{0, 1}});
      Value wRows =
          kb.slice(weight, {n0, zero}, {blockN, width}, {blockN, width});
      Type weightElement =
          cast<RankedTensorType>(weight.getType()).getElementType();
      wRows = tensor::ExpandShapeOp::create(
          rewriter, loc,
          RankedTensorType::get({blockN, laneSteps, lanes}, weightElement),
          wRows, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
      Value partial = kb.generic(
          {xRow, wRows},
          kb.fill(kb.empty({blockN, lanes}, kb.computeType), kb.constant(0.0)),
          {kb.map(3, {1, 2}), kb.map(3, {0, 1, 2}), kb.map(3, {0, 2})},
          {kPar, kRed, kPar},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            Value product = arith::MulFOp::create(
                nb, l, kb.toCompute(nb, args[0]), kb.toCompute(nb, args[1]));
            return arith::AddFOp::create(nb, l, args[2], product);
          });
      Value acc = kb.generic(
          {partial},
          kb.fill(kb.empty({1, blockN}, kb.computeType), kb.constant(0.0)),
          {kb.map(3, {1, 2}), kb.map(3, {0, 1})}, {kPar, kPar, kRed},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            return arith::AddFOp::create(nb, l, args[1], args[0]);
          });
      return epilogue(acc, 1, batchIndex, s, n0);
    };
    Value projected = kb.tileLoops(
        {batch, kb.sub(tokens, tailStart), kb.index(numFeatureBlocks)},
        ValueRange{ifFullBlocks.getResult(0)}, parallel,
        [&](ValueRange ivs) -> SmallVector<KernelBuilder::TileWrite> {
          return {tokenBody(ivs[0], kb.add(tailStart, ivs[1]),
                            kb.mul(ivs[2], blockN))};
        })[0];

    // Drop the feature padding and split the features into heads.
    SmallVector<OpFoldResult> offsets(3, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {batch, tokens,
                                       rewriter.getIndexAttr(features)};
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    Value flat = tensor::ExtractSliceOp::create(rewriter, loc, projected,
                                                offsets, sizes, strides);
    auto resultType = cast<RankedTensorType>(op.getType());
    auto headsType =
        RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                               features / headDim, headDim},
                              inputType.getElementType());
    SmallVector<OpFoldResult> headsShape = {
        batch, tokens, rewriter.getIndexAttr(features / headDim),
        rewriter.getIndexAttr(headDim)};
    Value heads = tensor::ExpandShapeOp::create(
        rewriter, loc, headsType, flat,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}}, headsShape);
    if (heads.getType() != resultType)
      heads = tensor::CastOp::create(rewriter, loc, resultType, heads);
    rewriter.replaceOp(op, heads);
    return success();
  }
};

} // namespace

void attnfuse::populateFusedProjectionToSCFPatterns(RewritePatternSet &patterns,
                                                    bool parallel) {
  patterns.add<LowerFusedProjection>(patterns.getContext(), parallel);
}
