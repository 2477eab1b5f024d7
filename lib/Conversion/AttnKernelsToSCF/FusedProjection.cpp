//===- FusedProjection.cpp - attn.fused_projection to tiled loops -*- C++ -*-=//
//
// The op is tiled with upstream scf::tileUsingSCF through its
// TilingInterface: one tile per (batch, block_s tokens, block_n features),
// an attn.flash_projection of the tile's tokens by the tile's weight rows,
// which is then decomposed here. A whole block of tokens is a GEMM: an f32
// accumulator sums x-tile x W^T-tile products over the model width in steps
// of block_k against W packed (once per call, before the tile loops) into
// contiguous [block_k, block_n] blocks of W^T, so the innermost loop runs
// over contiguous output features and a step reads one block (rows of a
// plain W^T lie E * 4 bytes apart: for E = 1024 every row maps to the same
// L1 cache sets). The tokens of a last partial block (a decode step's few
// tokens) are matrix-vector products over W as it is laid out: no token
// padding, and no packed copy of W when there is no whole block. One
// epilogue adds the bias, rotates the tile's heads (RoPE) and writes the
// tile into the op's init, already split into heads.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Rope.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::kernels;

namespace {

/// Decomposes one tile of attn.fused_projection: batch 1, at most block_s
/// tokens and at most `blockN` features, the features of block
/// `featureBlock` of `packedWeight` (null when the call has no whole block
/// of tokens).
class FusedProjectionTile {
public:
  FusedProjectionTile(FusedProjectionOp op, OpBuilder &builder, int64_t blockN,
                      Value packedWeight, Value featureBlock, Value packedInput,
                      const RopeTables &rope)
      : op(op),
        kb(builder, op.getLoc(),
           cast<RankedTensorType>(op.getInput().getType()).getElementType()),
        blockN(blockN), packedWeight(packedWeight), featureBlock(featureBlock),
        packedInput(packedInput), rope(rope) {}

  /// The tile's output, written into the op's init.
  Value build();

private:
  /// Bias and rotation of an `[rows, blockN]` accumulator for the tile's
  /// rows `row0 ..`, converted to the element type into `dest`.
  Value epilogue(Value acc, int64_t rows, Value row0, Value dest);
  /// The GEMM of a whole block of tokens against the packed weight, into
  /// `tile`.
  Value multiplyBlock(Value tile);
  /// One row of matrix-vector products per token, over W as laid out.
  Value multiplyRows(Value tile);

  FusedProjectionOp op;
  KernelBuilder kb;
  int64_t blockN;
  Value packedWeight, featureBlock;
  /// The input's whole token blocks from packInputBlocks, or null (the
  /// tile's rows are read in place).
  Value packedInput;

  /// Rotation tables whose rows include the tile's token positions.
  const RopeTables &rope;

  // Set by build().
  Value tokens, tokenOffset, bias, weight;
};

Value FusedProjectionTile::build() {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  const int64_t blockS = op.getBlockS();
  tokens = kb.dim(op.getInput(), 1);
  tokenOffset = op.getTokenOffset();
  if (!tokenOffset)
    tokenOffset = kb.index(0);
  // W [block_n, E] as given and the bias [block_n] in the compute type.
  weight = kb.padDimTo(op.getWeight(), 0, kb.index(blockN));
  if (op.getBias())
    bias = kb.convert(kb.padDimTo(op.getBias(), 0, kb.index(blockN)), {blockN},
                      kb.computeType);

  // Row r, feature h * d + i of a [block_s, block_n] tile is element
  // [0, r, h, i] of the init (the tile's first rows and features: linalg
  // takes the loop sizes from the first operand).
  auto writeInit = [&](Value tile) -> Value {
    int64_t features =
        cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
    tile = tensor::ExtractSliceOp::create(
        b, loc, tile, SmallVector<OpFoldResult>(2, b.getIndexAttr(0)),
        SmallVector<OpFoldResult>{tokens, b.getIndexAttr(features)},
        SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
    int64_t headDim = op.getHeadDim();
    MLIRContext *context = b.getContext();
    AffineExpr row = getAffineDimExpr(1, context),
               head = getAffineDimExpr(2, context),
               dim = getAffineDimExpr(3, context);
    return kb.generic(
        {tile}, op.getInit(),
        {AffineMap::get(4, 0, {row, head * headDim + dim}, context),
         kb.map(4, {0, 1, 2, 3})},
        {kPar, kPar, kPar, kPar},
        [&](OpBuilder &, Location, ValueRange args) -> Value {
          return args[0];
        });
  };
  auto rowsIntoInit = [&]() {
    return writeInit(multiplyRows(kb.empty({blockS, blockN}, kb.elementType)));
  };
  if (!packedWeight)
    return rowsIntoInit();
  // Each branch writes the init itself: both results are its buffer.
  auto wholeBlock = scf::IfOp::create(
      b, loc, kb.lessThan(tokens, kb.index(blockS)),
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, loc, rowsIntoInit());
      },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, loc,
                             writeInit(multiplyBlock(
                                 kb.empty({blockS, blockN}, kb.elementType))));
      });
  return wholeBlock.getResult(0);
}

Value FusedProjectionTile::epilogue(Value acc, int64_t rows, Value row0,
                                    Value dest) {
  Value biased = acc;
  if (bias)
    biased = kb.generic(
        {acc, bias}, kb.empty({rows, blockN}, kb.computeType),
        {kb.map(2, {0, 1}), kb.map(2, {1}), kb.map(2, {0, 1})}, {kPar, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return arith::AddFOp::create(nb, l, args[0], args[1]);
        });
  if (rope) {
    // Tiles hold whole heads: each head's rows are rotated as a
    // [rows, 2, r/2] view, a dim beside its partner in the other half, so the
    // rotation is vector code (a per-element partner read is not).
    const int64_t headDim = op.getHeadDim();
    OpFoldResult zero = kb.builder.getIndexAttr(0);
    Value firstPosition = kb.add(tokenOffset, row0);
    Value rotated = kb.empty({rows, blockN}, kb.computeType);
    for (int64_t head = 0; head < blockN / headDim; ++head) {
      OpFoldResult column = kb.builder.getIndexAttr(head * headDim);
      Value headRows =
          kb.slice(biased, {zero, column}, {rows, headDim}, {rows, headDim});
      rotated = kb.insert(loadRotatedKeyRows(kb, headRows, rope, firstPosition),
                          rotated, {zero, column}, {rows, headDim});
    }
    biased = rotated;
  }
  return kb.generic({biased}, dest, {kb.map(2, {0, 1}), kb.map(2, {0, 1})},
                    {kPar, kPar},
                    [&](OpBuilder &nb, Location, ValueRange args) -> Value {
                      return kb.toElement(nb, args[0]);
                    });
}

Value FusedProjectionTile::multiplyBlock(Value tile) {
  const int64_t blockS = op.getBlockS();
  int64_t paddedWidth =
      cast<RankedTensorType>(packedWeight.getType()).getDimSize(1) *
      cast<RankedTensorType>(packedWeight.getType()).getDimSize(2);
  Value input = op.getInput();
  if (cast<RankedTensorType>(input.getType()).getDimSize(2) != paddedWidth)
    input = kb.padDimTo(input, 2, kb.index(paddedWidth));
  OpFoldResult zero = kb.builder.getIndexAttr(0);
  Value rows = kb.slice(input, {zero, zero, zero}, {1, blockS, paddedWidth},
                        {blockS, paddedWidth});
  if (packedInput) {
    // The tile's token block: the offsets of the slice that tiling made.
    auto tileRows = op.getInput().getDefiningOp<tensor::ExtractSliceOp>();
    OpBuilder &b = kb.builder;
    Value batch = getValueOrCreateConstantIndexOp(
        b, kb.loc, tileRows.getMixedOffsets()[0]);
    Value block = kb.floorDiv(getValueOrCreateConstantIndexOp(
                                  b, kb.loc, tileRows.getMixedOffsets()[1]),
                              blockS);
    auto packedType = cast<RankedTensorType>(packedWeight.getType());
    int64_t steps = packedType.getDimSize(1), blockK = packedType.getDimSize(2);
    rows = kb.slice(packedInput, {batch, block, zero, zero, zero},
                    {1, 1, steps, blockS, blockK}, {steps, blockS, blockK});
  }
  Value acc =
      kb.fill(kb.empty({blockS, blockN}, kb.computeType), kb.constant(0.0));
  acc = kb.multiplyWeightBlock(acc, rows, packedWeight, featureBlock);
  return epilogue(acc, blockS, kb.index(0), tile);
}

Value FusedProjectionTile::multiplyRows(Value tile) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  const int64_t width =
      cast<RankedTensorType>(op.getInput().getType()).getDimSize(2);
  // Partial sums over up to 64 interleaved input features keep the
  // innermost loop parallel and long enough for the loop vectorizer (a
  // shorter one is unrolled first and stays scalar); they are added up at
  // the end.
  int64_t lanes = 64;
  while (width % lanes != 0)
    lanes /= 2;
  const int64_t laneSteps = width / lanes;
  Type weightElement =
      cast<RankedTensorType>(weight.getType()).getElementType();
  Value weightRows = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({blockN, laneSteps, lanes}, weightElement),
      kb.slice(weight, {b.getIndexAttr(0), b.getIndexAttr(0)}, {blockN, width},
               {blockN, width}),
      ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), tokens, kb.index(1), ValueRange{tile},
      [&](OpBuilder &, Location, Value token, ValueRange carried) {
        OpFoldResult zero = b.getIndexAttr(0);
        Value xRow = kb.slice(op.getInput(), {zero, token, zero}, {1, 1, width},
                              {width});
        xRow = tensor::ExpandShapeOp::create(
            b, loc, RankedTensorType::get({laneSteps, lanes}, kb.elementType),
            xRow, ArrayRef<ReassociationIndices>{{0, 1}});
        Value partial = kb.generic(
            {xRow, weightRows},
            kb.fill(kb.empty({blockN, lanes}, kb.computeType),
                    kb.constant(0.0)),
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
        Value row =
            epilogue(acc, 1, token, kb.empty({1, blockN}, kb.elementType));
        scf::YieldOp::create(
            b, loc, kb.insert(row, carried[0], {token, zero}, {1, blockN}));
      });
  return loop.getResult(0);
}

/// Tiles attn.fused_projection through its TilingInterface and decomposes
/// each tile.
struct LowerFusedProjection : OpRewritePattern<FusedProjectionOp> {
  LowerFusedProjection(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(FusedProjectionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // The tiles and the weight packing read W's rows: a weight given as W^T
    // is transposed first, in blocks.
    if (op.getTransposedWeight()) {
      Value weight =
          attn::createBlockedTranspose(rewriter, loc, op.getWeight(), {1, 0});
      rewriter.modifyOpInPlace(op, [&]() {
        op.getWeightMutable().assign(weight);
        op.setTransposedWeight(false);
      });
    }
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    KernelBuilder kb(rewriter, loc, inputType.getElementType());
    const int64_t width = inputType.getDimSize(2);
    const int64_t features =
        cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
    const int64_t headDim = op.getHeadDim();
    const int64_t numHeads = features / headDim;
    const int64_t blockS = op.getBlockS();

    // A tile holds whole heads (about block_n features of them), or, for a
    // head wider than block_n without rotation, a part of one head; its
    // features divide the op's so every tile has a static shape.
    OpFoldResult untiled = rewriter.getIndexAttr(0);
    SmallVector<OpFoldResult> tileSizes = {rewriter.getIndexAttr(1),
                                           rewriter.getIndexAttr(blockS)};
    int64_t blockN;
    if (static_cast<int64_t>(op.getBlockN()) < headDim && !op.getRopeAttr()) {
      blockN = largestDivisorAtMost(headDim, op.getBlockN());
      tileSizes.append(
          {rewriter.getIndexAttr(1), rewriter.getIndexAttr(blockN)});
    } else {
      int64_t headsPerTile =
          largestDivisorAtMost(numHeads, op.getBlockN() / headDim);
      blockN = headsPerTile * headDim;
      tileSizes.append({rewriter.getIndexAttr(headsPerTile), untiled});
    }
    const int64_t blockK = std::min<int64_t>(op.getBlockK(), width);

    // The rotation tables serve every tile: built once, before the loops,
    // for the positions of whole token blocks.
    Value tokens = kb.dim(op.getInput(), 1);
    RopeTables rope = buildRopeTables(
        kb, op.getRopeAttr(), headDim,
        kb.mul(kb.ceilDiv(tokens, blockS), blockS), op.getTokenOffset());

    // W packed into blocks once, before the tile loops, when there is a
    // whole block of tokens. A call statically shorter than a block (a
    // decode step) has no packed weight at all.
    Value packed, packedInput;
    int64_t staticTokens = inputType.getDimSize(1);
    if (ShapedType::isDynamic(staticTokens) || staticTokens >= blockS) {
      auto packedType = RankedTensorType::get(
          {features / blockN,
           static_cast<int64_t>(llvm::divideCeil(width, blockK)), blockK,
           blockN},
          kb.computeType);
      auto pack = scf::IfOp::create(
          rewriter, loc, kb.lessThan(tokens, kb.index(blockS)),
          [&](OpBuilder &, Location) {
            scf::YieldOp::create(
                rewriter, loc,
                kb.empty(packedType.getShape(), packedType.getElementType()));
          },
          [&](OpBuilder &, Location) {
            Value weightBlocks =
                kb.packWeightBlocks(op.getWeight(), blockN, blockK);
            if (parallel) // one block of features per iteration
              weightBlocks = distributeLoop(rewriter, weightBlocks, 0);
            scf::YieldOp::create(rewriter, loc, weightBlocks);
          });
      packed = pack.getResult(0);
      // The input's whole token blocks, likewise packed once (a width that
      // is not a whole number of steps is read in place, padded).
      if (width % blockK == 0) {
        packedInput = kb.packInputBlocks(op.getInput(), blockS, blockK);
        if (parallel) // one block of tokens per iteration
          packedInput = distributeLoop(rewriter, packedInput, 1);
      }
    }

    FailureOr<Operation *> tiled =
        tileKernelOp(rewriter, op, tileSizes, parallel);
    if (failed(tiled))
      return failure();
    auto tile = cast<FusedProjectionOp>(*tiled);
    // The tile's first feature is the offset of its weight rows.
    auto weightRows = tile.getWeight().getDefiningOp<tensor::ExtractSliceOp>();
    Value firstFeature = getValueOrCreateConstantIndexOp(
        rewriter, loc, weightRows.getMixedOffsets()[0]);
    Value featureBlock = kb.floorDiv(firstFeature, blockN);
    rewriter.replaceOp(tile,
                       FusedProjectionTile(tile, rewriter, blockN, packed,
                                           featureBlock, packedInput, rope)
                           .build());
    return success();
  }
};

} // namespace

void attnfuse::populateFusedProjectionToSCFPatterns(RewritePatternSet &patterns,
                                                    bool parallel) {
  patterns.add<LowerFusedProjection>(patterns.getContext(), parallel);
}
