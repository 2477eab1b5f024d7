//===- FusedWeightGrad.cpp - attn.fused_weight_grad to tiled loops -*- C++ -*-//
//
// The op is tiled with upstream scf::tileUsingSCF through its
// TilingInterface: one tile per (block_m output features, block_n input
// features), an attn.fused_weight_grad of the cotangent's and the input's
// columns, decomposed here into a GEMM over the tokens in chunks of
// block_k, with the input features innermost (contiguous vector reads of
// x) and the tile's f32 accumulator added to the init tile once, at the end.
//
// Before the tile loops, the whole chunks of both operands are packed once
// into compute-type panels, `[columns / block, chunks, block_k, block]`: a
// tile then reads one contiguous [block_k, block] block per operand and
// chunk. Read in place, a chunk's rows lie a whole row of the tensor apart
// (4 KiB for 1024 features): every row is its own page, so each chunk of
// each tile missed the TLB and every row mapped to the same L1 sets. The
// last partial chunk is zero-padded to a whole one from the tensors.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::kernels;

namespace {

/// `packed[b, c, t, j] = source[c * chunk + t, b * block + j]` for the
/// whole chunks of `source [T, C]`, in the compute type: the tokens' rows
/// are read in order, each once.
Value packTokenPanels(KernelBuilder &kb, Value source, Value wholeChunks,
                      int64_t block, int64_t chunk) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  auto type = cast<RankedTensorType>(source.getType());
  const int64_t columns = type.getDimSize(1);
  OpFoldResult zero = b.getIndexAttr(0);
  Value tokens = kb.mul(wholeChunks, chunk);
  Value whole = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({ShapedType::kDynamic, columns},
                                    type.getElementType()),
      source, SmallVector<OpFoldResult>{zero, zero},
      SmallVector<OpFoldResult>{tokens, b.getIndexAttr(columns)},
      SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
  Value blocks = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get(
          {ShapedType::kDynamic, chunk, columns / block, block},
          type.getElementType()),
      whole, ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}},
      SmallVector<OpFoldResult>{wholeChunks, b.getIndexAttr(chunk),
                                b.getIndexAttr(columns / block),
                                b.getIndexAttr(block)});
  Value packed = tensor::EmptyOp::create(
      b, loc,
      SmallVector<OpFoldResult>{b.getIndexAttr(columns / block), wholeChunks,
                                b.getIndexAttr(chunk), b.getIndexAttr(block)},
      kb.computeType);
  // Loops in the source's order (chunk, token, column block, column): the
  // reads stream through the tensor.
  return kb.generic({blocks}, packed,
                    {kb.map(4, {0, 1, 2, 3}), kb.map(4, {2, 0, 1, 3})},
                    {kPar, kPar, kPar, kPar},
                    [&](OpBuilder &nb, Location, ValueRange args) -> Value {
                      return kb.toCompute(nb, args[0]);
                    });
}

/// Decomposes one tile: `init [m, n] + result_grad[:, m]^T input[:, n]`,
/// the whole chunks read from the panels of `packedGrad` and
/// `packedInput` at panel `gradPanel` and `inputPanel`.
Value buildWeightGradTile(FusedWeightGradOp op, OpBuilder &b,
                          Value wholeChunks, Value packedGrad, Value gradPanel,
                          Value packedInput, Value inputPanel) {
  Location loc = op.getLoc();
  KernelBuilder kb(
      b, loc,
      cast<RankedTensorType>(op.getInput().getType()).getElementType());
  auto initType = cast<RankedTensorType>(op.getInit().getType());
  const int64_t rows = initType.getDimSize(0), columns = initType.getDimSize(1);
  const int64_t chunk = op.getBlockK();
  Value tokens = kb.dim(op.getInput(), 0);

  // acc[o, i] += sum_t dy[t, o] x[t, i] over one chunk of `chunk` tokens
  // (compute-type tiles).
  auto multiplyChunk = [&](Value acc, Value gradChunk, Value inputChunk) {
    return kb.generic(
        {gradChunk, inputChunk}, acc,
        {kb.map(3, {1, 0}), kb.map(3, {1, 2}), kb.map(3, {0, 2})},
        {kPar, kRed, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
          return arith::AddFOp::create(nb, l, args[2], product);
        });
  };
  OpFoldResult zero = b.getIndexAttr(0);
  Value acc = kb.fill(kb.empty({rows, columns}, kb.computeType),
                      kb.constant(0.0));
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), wholeChunks, kb.index(1), ValueRange{acc},
      [&](OpBuilder &, Location, Value step, ValueRange carried) {
        Value grad = kb.slice(packedGrad, {gradPanel, step, zero, zero},
                              {1, 1, chunk, rows}, {chunk, rows});
        Value input = kb.slice(packedInput, {inputPanel, step, zero, zero},
                               {1, 1, chunk, columns}, {chunk, columns});
        scf::YieldOp::create(b, loc,
                             multiplyChunk(carried[0], grad, input));
      });
  acc = loop.getResult(0);

  // The remaining tokens, zero-padded to a whole chunk.
  Value done = kb.mul(wholeChunks, chunk);
  Value remaining = kb.sub(tokens, done);
  Value hasRemainder = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sgt, remaining, kb.index(0));
  auto padded = [&](Value source, int64_t width) -> Value {
    Value part = tensor::ExtractSliceOp::create(
        b, loc, source, SmallVector<OpFoldResult>{done, zero},
        SmallVector<OpFoldResult>{remaining, b.getIndexAttr(width)},
        SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
    Value whole = kb.padDimTo(part, 0, kb.index(chunk));
    return kb.convert(
        tensor::CastOp::create(
            b, loc,
            RankedTensorType::get({chunk, width},
                                  cast<RankedTensorType>(source.getType())
                                      .getElementType()),
            whole),
        kb.computeType);
  };
  auto last = scf::IfOp::create(
      b, loc, hasRemainder,
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(
            b, loc,
            multiplyChunk(acc, padded(op.getResultGrad(), rows),
                          padded(op.getInput(), columns)));
      },
      [&](OpBuilder &, Location) { scf::YieldOp::create(b, loc, acc); });
  acc = last.getResult(0);

  return kb.generic({acc}, op.getInit(), {kb.map(2, {0, 1}), kb.map(2, {0, 1})},
                    {kPar, kPar},
                    [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      Value sum = arith::AddFOp::create(
                          nb, l, args[0], kb.toCompute(nb, args[1]));
                      return kb.toElement(nb, sum);
                    });
}

/// The panel of a tile's operand: its first column (the offset of the
/// slice that tiling made) over the panel width.
Value panelOf(KernelBuilder &kb, Value tileOperand, int64_t block) {
  auto columns = tileOperand.getDefiningOp<tensor::ExtractSliceOp>();
  Value first = getValueOrCreateConstantIndexOp(kb.builder, kb.loc,
                                                columns.getMixedOffsets()[1]);
  return kb.floorDiv(first, block);
}

/// Tiles attn.fused_weight_grad through its TilingInterface and decomposes
/// each tile.
struct LowerFusedWeightGrad : OpRewritePattern<FusedWeightGradOp> {
  LowerFusedWeightGrad(MLIRContext *context, bool parallel)
      : OpRewritePattern(context), parallel(parallel) {}
  bool parallel;

  LogicalResult matchAndRewrite(FusedWeightGradOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    // Tile sizes that divide the result's: every tile has a static shape.
    const int64_t blockM =
        largestDivisorAtMost(resultType.getDimSize(0), op.getBlockM());
    const int64_t blockN =
        largestDivisorAtMost(resultType.getDimSize(1), op.getBlockN());
    const int64_t chunk = op.getBlockK();
    KernelBuilder kb(
        rewriter, op.getLoc(),
        cast<RankedTensorType>(op.getInput().getType()).getElementType());
    Value wholeChunks = kb.floorDiv(kb.dim(op.getInput(), 0), chunk);
    Value packedGrad =
        packTokenPanels(kb, op.getResultGrad(), wholeChunks, blockM, chunk);
    Value packedInput =
        packTokenPanels(kb, op.getInput(), wholeChunks, blockN, chunk);
    if (parallel) { // one chunk of tokens per iteration
      packedGrad = distributeLoop(rewriter, packedGrad, 0);
      packedInput = distributeLoop(rewriter, packedInput, 0);
    }

    FailureOr<Operation *> tiled = tileKernelOp(
        rewriter, op,
        {rewriter.getIndexAttr(blockM), rewriter.getIndexAttr(blockN)},
        parallel);
    if (failed(tiled))
      return failure();
    auto tile = cast<FusedWeightGradOp>(*tiled);
    Value gradPanel = panelOf(kb, tile.getResultGrad(), blockM);
    Value inputPanel = panelOf(kb, tile.getInput(), blockN);
    rewriter.replaceOp(tile,
                       buildWeightGradTile(tile, rewriter, wholeChunks,
                                           packedGrad, gradPanel, packedInput,
                                           inputPanel));
    return success();
  }
};

} // namespace

void attnfuse::populateFusedWeightGradToSCFPatterns(RewritePatternSet &patterns,
                                                    bool parallel) {
  patterns.add<LowerFusedWeightGrad>(patterns.getContext(), parallel);
}
