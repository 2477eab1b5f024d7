//===- FusedWeightGrad.cpp - attn.fused_weight_grad to tiled loops -*- C++ -*-//
//
// The op is tiled with upstream scf::tileUsingSCF through its
// TilingInterface: one tile per (block_m output features, block_n input
// features), an attn.fused_weight_grad of the cotangent's and the input's
// columns, decomposed here into a GEMM over the tokens. The tokens go by in
// chunks of block_k: a chunk's operands ([block_k, block_m] of dy and
// [block_k, block_n] of x) are copied into contiguous compute-type tiles
// that stay in the L1 cache while the register blocks of the tile's f32
// accumulator run over them, with the input features innermost (contiguous
// vector reads of x). The last partial chunk is zero-padded to a whole one. The accumulator
// is added to the init tile once, at the end.
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

/// Decomposes one tile: `init [m, n] + result_grad[:, m]^T input[:, n]`.
Value buildWeightGradTile(FusedWeightGradOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  KernelBuilder kb(
      b, loc,
      cast<RankedTensorType>(op.getInput().getType()).getElementType());
  auto initType = cast<RankedTensorType>(op.getInit().getType());
  const int64_t rows = initType.getDimSize(0), columns = initType.getDimSize(1);
  const int64_t chunk = op.getBlockK();
  Value tokens = kb.dim(op.getInput(), 0);

  // acc[o, i] += sum_t dy[t, o] x[t, i] over one chunk of `chunk` tokens,
  // both copied first into contiguous compute-type tiles: rows of the
  // tensors lie `out` and `in` elements apart (for 1024 features every row
  // maps to the same L1 cache sets).
  auto multiplyChunk = [&](Value acc, Value gradChunk, Value inputChunk) {
    return kb.generic(
        {kb.convert(gradChunk, kb.computeType),
         kb.convert(inputChunk, kb.computeType)},
        acc, {kb.map(3, {1, 0}), kb.map(3, {1, 2}), kb.map(3, {0, 2})},
        {kPar, kRed, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
          return arith::AddFOp::create(nb, l, args[2], product);
        });
  };
  OpFoldResult zero = b.getIndexAttr(0);
  Value acc = kb.fill(kb.empty({rows, columns}, kb.computeType),
                      kb.constant(0.0));
  Value wholeChunks = kb.floorDiv(tokens, chunk);
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), wholeChunks, kb.index(1), ValueRange{acc},
      [&](OpBuilder &, Location, Value step, ValueRange carried) {
        Value first = kb.mul(step, chunk);
        Value grad = kb.slice(op.getResultGrad(), {first, zero},
                              {chunk, rows}, {chunk, rows});
        Value input = kb.slice(op.getInput(), {first, zero}, {chunk, columns},
                               {chunk, columns});
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
    return tensor::CastOp::create(
        b, loc,
        RankedTensorType::get({chunk, width},
                              cast<RankedTensorType>(source.getType())
                                  .getElementType()),
        whole);
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
    SmallVector<OpFoldResult> tileSizes = {
        rewriter.getIndexAttr(
            largestDivisorAtMost(resultType.getDimSize(0), op.getBlockM())),
        rewriter.getIndexAttr(
            largestDivisorAtMost(resultType.getDimSize(1), op.getBlockN()))};
    FailureOr<Operation *> tiled =
        tileKernelOp(rewriter, op, tileSizes, parallel);
    if (failed(tiled))
      return failure();
    auto tile = cast<FusedWeightGradOp>(*tiled);
    rewriter.replaceOp(tile, buildWeightGradTile(tile, rewriter));
    return success();
  }
};

} // namespace

void attnfuse::populateFusedWeightGradToSCFPatterns(RewritePatternSet &patterns,
                                                    bool parallel) {
  patterns.add<LowerFusedWeightGrad>(patterns.getContext(), parallel);
}
