//===- FusedProjection.cpp - attn.fused_projection to tiled loops -*- C++ -*-=//
//
// A tiled GEMM: for every (batch, block_s tokens, block_n features) output
// tile, an f32 accumulator sums x-tile x W^T-tile products over the model
// width in steps of block_k, then one epilogue adds the bias, rotates the
// tile's heads (RoPE) and stores it already split into heads. W is packed
// once per call into contiguous [block_k, block_n] blocks of W^T, so the
// innermost loop runs over contiguous output features and a tile step reads
// one block (rows of a plain W^T lie E * 4 bytes apart: for E = 1024 every
// row maps to the same L1 cache sets). Tokens, features and the width are
// zero-padded to whole tiles.
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
    const int64_t paddedFeatures = llvm::divideCeil(features, blockN) * blockN;
    const int64_t blockK = std::min<int64_t>(op.getBlockK(), width);
    const int64_t paddedWidth = llvm::divideCeil(width, blockK) * blockK;
    const int64_t numFeatureBlocks = paddedFeatures / blockN;

    Value batch = kb.dim(op.getInput(), 0);
    Value tokens = kb.dim(op.getInput(), 1);
    Value numTokenBlocks = kb.ceilDiv(tokens, blockS);
    Value paddedTokens = kb.mul(numTokenBlocks, blockS);
    Value input = kb.padDimsTo(op.getInput(),
                               {{1, paddedTokens}, {2, kb.index(paddedWidth)}});

    // W^T in contiguous [BK, BN] blocks, in the compute type.
    Value weight = kb.padDimsTo(op.getWeight(), {{0, kb.index(paddedFeatures)},
                                                 {1, kb.index(paddedWidth)}});
    weight = tensor::CastOp::create(
        rewriter, loc,
        RankedTensorType::get({paddedFeatures, paddedWidth},
                              inputType.getElementType()),
        weight);
    Value packedWeight = kb.packWeightBlocks(weight, blockN, blockK);
    Value bias;
    if (op.getBias()) {
      bias = kb.convert(kb.padDimTo(op.getBias(), 0, kb.index(paddedFeatures)),
                        {paddedFeatures}, kb.computeType);
    }
    RopeTables rope =
        buildRopeTables(kb, op.getRopeAttr(), headDim, paddedTokens);

    Value output =
        kb.empty({ShapedType::kDynamic, ShapedType::kDynamic, paddedFeatures},
                 kb.elementType, {batch, paddedTokens});

    auto tileBody = [&](Value batchIndex, Value s0,
                        Value featureBlock) -> KernelBuilder::TileWrite {
      Value n0 = kb.mul(featureBlock, blockN);
      Value acc =
          kb.fill(kb.empty({blockS, blockN}, kb.computeType), kb.constant(0.0));
      Value rows = kb.slice(input, {batchIndex, s0, kb.index(0)},
                            {1, blockS, paddedWidth}, {blockS, paddedWidth});
      acc = kb.multiplyWeightBlock(acc, rows, packedWeight, featureBlock);

      // Epilogue: bias, RoPE of the tile's heads, conversion.
      SmallVector<Value> inputs = {acc};
      SmallVector<AffineMap> maps = {kb.map(2, {0, 1})};
      if (bias) {
        inputs.push_back(kb.slice(bias, {n0}, {blockN}, {blockN}));
        maps.push_back(kb.map(2, {1}));
      }
      maps.push_back(kb.map(2, {0, 1}));
      Value biased = acc;
      if (bias)
        biased = kb.generic(
            inputs, kb.empty({blockS, blockN}, kb.computeType), maps,
            {kPar, kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              return arith::AddFOp::create(nb, l, args[0], args[1]);
            });
      Value tile = kb.generic(
          {biased}, kb.empty({blockS, blockN}, kb.elementType),
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
      return {tile, 0, {batchIndex, s0, n0}, {1, blockS, blockN}};
    };

    // Every (token block, feature block) tile owns its output and its whole
    // reduction over the input features.
    Value tiled = kb.tileLoops(
        {batch, numTokenBlocks, kb.index(numFeatureBlocks)}, ValueRange{output},
        parallel, [&](ValueRange ivs) -> SmallVector<KernelBuilder::TileWrite> {
          return {tileBody(ivs[0], kb.mul(ivs[1], blockS), ivs[2])};
        })[0];

    // Drop the padding and split the features into heads.
    SmallVector<OpFoldResult> offsets(3, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {batch, tokens,
                                       rewriter.getIndexAttr(features)};
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    Value flat = tensor::ExtractSliceOp::create(rewriter, loc, tiled, offsets,
                                                sizes, strides);
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
