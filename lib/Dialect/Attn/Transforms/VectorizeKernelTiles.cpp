//===- VectorizeKernelTiles.cpp - register blocks for the CPU kernels -----===//
//
// The tiled CPU kernels compute on static tiles (64 x 64 by default) with
// linalg.generic ops. Lowered to scalar loops, LLVM's loop vectorizer keeps
// a GEMM tile's accumulator in memory and reloads it at every k. Here each
// contraction is cut into register blocks whose accumulator a k loop
// carries as a vector value, and every other static generic becomes vector
// ops over rows of its innermost dimension.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNLOWERKERNELVECTORS
#define GEN_PASS_DEF_ATTNVECTORIZEKERNELTILES
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse;

namespace {

/// How one generic is cut: a tile size per loop (0: the whole loop), the
/// order of the tile loops, and whether the tile is a contraction.
struct TilePlan {
  SmallVector<int64_t> tileSizes;
  SmallVector<int64_t> interchange;
  bool contraction = false;
  /// A contraction whose rows are not a whole number of register blocks:
  /// the loop dimension of its rows and the rows of its whole blocks. The
  /// op is split there first, and the rest is one narrower block.
  std::optional<std::pair<unsigned, int64_t>> splitRows;
};

/// The largest divisor of `size` that is at most `limit`.
int64_t largestDivisorAtMost(int64_t size, int64_t limit) {
  for (int64_t candidate = std::min(size, limit); candidate > 1; --candidate)
    if (size % candidate == 0)
      return candidate;
  return 1;
}

/// The innermost result of `map` when it is a plain loop dimension.
std::optional<unsigned> innermostDim(AffineMap map) {
  if (map.getNumResults() == 0)
    return std::nullopt;
  auto dim = dyn_cast<AffineDimExpr>(map.getResults().back());
  if (!dim)
    return std::nullopt;
  return dim.getPosition();
}

/// Register blocks of `rows` x `columns` with one k per step, for a
/// contraction whose output's innermost dimension `n` is also the right
/// operand's innermost one (contiguous vector reads and writes). A block
/// narrower than `columns` (n has no such divisor) takes more rows, up to
/// twice `rows`, to keep about as many accumulators. Rows that are not a
/// whole number of blocks are split off (`splitRows`) rather than shrinking
/// every block to a divisor: 64 rows of 6-row blocks are ten blocks and a
/// 4-row one, not sixteen 4-row ones.
std::optional<TilePlan> planContraction(linalg::GenericOp op,
                                        ArrayRef<int64_t> ranges, int64_t rows,
                                        int64_t columns) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2)
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->n.empty() || dims->m.empty() || dims->k.empty())
    return std::nullopt;
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  std::optional<unsigned> n = innermostDim(outputMap);
  if (!n || !llvm::is_contained(dims->n, *n))
    return std::nullopt;
  // The operand that carries n must have it innermost too.
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getResultPosition(getAffineDimExpr(*n, op.getContext())) &&
        innermostDim(map) != n)
      return std::nullopt;
  }
  // m: the output's next dimension when it is a row dimension, else the
  // last row dimension.
  unsigned m = dims->m.back();
  if (outputMap.getNumResults() >= 2) {
    if (auto dim = dyn_cast<AffineDimExpr>(
            outputMap.getResult(outputMap.getNumResults() - 2));
        dim && llvm::is_contained(dims->m, dim.getPosition()))
      m = dim.getPosition();
  }

  TilePlan plan;
  plan.contraction = true;
  plan.tileSizes.assign(ranges.size(), 1);
  const int64_t blockColumns = largestDivisorAtMost(ranges[*n], columns);
  plan.tileSizes[*n] = blockColumns;
  const int64_t blockRows =
      std::min(rows * std::max<int64_t>(1, columns / blockColumns), 2 * rows);
  if (ranges[m] > blockRows && ranges[m] % blockRows != 0) {
    plan.splitRows = {m, ranges[m] - ranges[m] % blockRows};
    return plan;
  }
  plan.tileSizes[m] = std::min(ranges[m], blockRows);
  // Tile loops: every other dimension outermost, then the block's rows and
  // columns, then k innermost so the accumulator stays in registers.
  for (unsigned d = 0, e = ranges.size(); d < e; ++d)
    if (d != m && d != *n && !llvm::is_contained(dims->k, d))
      plan.interchange.push_back(d);
  plan.interchange.push_back(m);
  plan.interchange.push_back(*n);
  llvm::append_range(plan.interchange, dims->k);
  return plan;
}

/// Rows of the innermost loop dimension, every other dimension one at a
/// time: element-wise maps and row reductions (softmax maxima and sums).
/// A reduction row is longer: one horizontal reduction per row, not one per
/// chunk. Reductions over an outer dimension (a column sum) loop innermost,
/// so the row of results they accumulate stays in registers; that row is
/// longer too, as each of its registers is a chain of dependent FMAs (one
/// 16-wide chain waits out the FMA latency at every step).
std::optional<TilePlan> planRows(linalg::GenericOp op, ArrayRef<int64_t> ranges,
                                 int64_t maxVectorSize,
                                 int64_t maxReductionVectorSize) {
  int64_t inner = ranges.back();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (llvm::any_of(iterators, linalg::isReductionIterator))
    maxVectorSize = maxReductionVectorSize;
  if (inner > maxVectorSize && inner % maxVectorSize != 0)
    return std::nullopt;
  // A transposing read (the innermost loop dimension is an outer dimension
  // of an operand, as when a key tile is stored [d, keys]) would gather a
  // vector lane by lane through the stack; scalar loops do better.
  unsigned innermost = ranges.size() - 1;
  AffineExpr innermostExpr = getAffineDimExpr(innermost, op.getContext());
  for (AffineMap map : op.getIndexingMapsArray()) {
    std::optional<unsigned> position = map.getResultPosition(innermostExpr);
    if (position && *position + 1 != map.getNumResults())
      return std::nullopt;
  }
  TilePlan plan;
  plan.tileSizes.assign(ranges.size(), 1);
  plan.tileSizes.back() = std::min(inner, maxVectorSize);
  for (bool reductions : {false, true})
    for (unsigned d = 0, e = ranges.size(); d < e; ++d)
      if (linalg::isReductionIterator(iterators[d]) == reductions)
        plan.interchange.push_back(d);
  return plan;
}

/// `acc + a * b` on vectors -> `vector.fma a, b, acc`: one rounding per
/// step of a register block's sum (LLVM does not contract an fmul and fadd
/// without fast-math flags). The vectorizer reshapes the product of a
/// contraction step (`vector<4x1x16>` -> `vector<4x16>`): the factors are
/// reshaped instead.
struct FuseMultiplyAdd : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<VectorType>(add.getType());
    if (!type)
      return failure();
    for (unsigned i = 0; i < 2; ++i) {
      Value product = add->getOperand(i);
      auto reshape = product.getDefiningOp<vector::ShapeCastOp>();
      if (reshape && reshape->hasOneUse())
        product = reshape.getSource();
      auto mul = product.getDefiningOp<arith::MulFOp>();
      if (!mul || !mul->hasOneUse())
        continue;
      Value lhs = mul.getLhs(), rhs = mul.getRhs();
      if (reshape) {
        lhs = vector::ShapeCastOp::create(rewriter, add.getLoc(), type, lhs);
        rhs = vector::ShapeCastOp::create(rewriter, add.getLoc(), type, rhs);
      }
      rewriter.replaceOpWithNewOp<vector::FMAOp>(add, lhs, rhs,
                                                 add->getOperand(1 - i));
      return success();
    }
    return failure();
  }
};

/// Tiles of an operand indexed by a compound expression (a RoPE table read
/// at `d0 floordiv 2`, a halo at `d0 + d1`) are over-approximated by tiling
/// and could reach past the operand: only plain (projected, broadcast)
/// dimension maps are tiled.
bool hasPlainIndexing(linalg::GenericOp op) {
  return llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
    return map.isProjectedPermutation(/*allowZeroInResults=*/true);
  });
}

bool readsTensorsInBody(linalg::GenericOp op) {
  return op.getBody()
      ->walk([](tensor::ExtractOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

struct AttnVectorizeKernelTilesPass
    : attn::impl::AttnVectorizeKernelTilesBase<AttnVectorizeKernelTilesPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Tiles and vectorizes `op` along `plan`; leaves it alone on failure.
  void tileAndVectorize(RewriterBase &rewriter, linalg::GenericOp op,
                        const TilePlan &plan);
};

void AttnVectorizeKernelTilesPass::tileAndVectorize(RewriterBase &rewriter,
                                                    linalg::GenericOp op,
                                                    const TilePlan &plan) {
  // Loops of one tile are not tiled at all (size 0).
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<OpFoldResult> tileSizes;
  for (auto [size, range] : llvm::zip_equal(plan.tileSizes, ranges))
    tileSizes.push_back(rewriter.getIndexAttr(size == range ? 0 : size));

  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  options.setTileSizes(tileSizes);
  options.setInterchange(plan.interchange);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return;
  rewriter.replaceOp(op, tiled->replacements);

  // The output block of a contraction does not move with k: extract it
  // once, before the k loop, and insert it once after.
  for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops))
    hoistLoopInvariantSubsets(rewriter, loop);

  for (Operation *tiledOp : tiled->tiledOps) {
    if (!isa<linalg::LinalgOp>(tiledOp))
      continue;
    rewriter.setInsertionPoint(tiledOp);
    FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
        rewriter, tiledOp, /*inputVectorSizes=*/{},
        /*inputScalableVecDims=*/{}, /*vectorizeNDExtract=*/false,
        /*flatten1DDepthwiseConv=*/false,
        /*assumeDynamicDimsMatchVecSizes=*/false,
        /*createNamedContraction=*/plan.contraction);
    if (succeeded(vectorized))
      rewriter.replaceOp(tiledOp, vectorized->replacements);
  }
}

void AttnVectorizeKernelTilesPass::runOnOperation() {
  if (registerTileM < 1 || registerTileN < 1 || maxVectorSize < 1 ||
      maxReductionVectorSize < 1) {
    getOperation()->emitError(
        "attn-vectorize-kernel-tiles: register-tile-m, register-tile-n, "
        "max-vector-size and max-reduction-vector-size must be positive");
    return signalPassFailure();
  }
  SmallVector<linalg::GenericOp> candidates;
  getOperation()->walk([&](linalg::GenericOp op) {
    if (op.hasPureTensorSemantics() && !op.hasDynamicShape() &&
        op.getNumDpsInits() == 1 && op.getNumLoops() > 0 &&
        hasPlainIndexing(op) && !readsTensorsInBody(op))
      candidates.push_back(op);
  });

  IRRewriter rewriter(&getContext());
  while (!candidates.empty()) {
    linalg::GenericOp op = candidates.pop_back_val();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    std::optional<TilePlan> plan =
        planContraction(op, ranges, registerTileM, registerTileN);
    if (plan && plan->splitRows) {
      // Whole blocks and the remaining rows, each planned on its own.
      auto [dim, wholeRows] = *plan->splitRows;
      rewriter.setInsertionPoint(op);
      auto [whole, rest] =
          linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                          dim, rewriter.getIndexAttr(wholeRows));
      for (TilingInterface part : {whole, rest})
        if (auto generic = dyn_cast_or_null<linalg::GenericOp>(
                part ? part.getOperation() : nullptr))
          candidates.push_back(generic);
      continue;
    }
    if (!plan)
      plan = planRows(op, ranges, maxVectorSize, maxReductionVectorSize);
    if (plan)
      tileAndVectorize(rewriter, op, *plan);
  }

  // Reads and writes of slices become reads and writes of the tiles they
  // slice, which lets the accumulator's read and write leave the k loop.
  {
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(patterns);
    // A contraction step over one k is a unit-dimension multi_reduction:
    // its canonicalization makes it an add of the product.
    vector::MultiDimReductionOp::getCanonicalizationPatterns(patterns,
                                                             &getContext());
    patterns.add<FuseMultiplyAdd>(&getContext());
    vector::TransferReadOp::getCanonicalizationPatterns(patterns,
                                                        &getContext());
    vector::TransferWriteOp::getCanonicalizationPatterns(patterns,
                                                         &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
  // Innermost loops first (post-order); hoisting replaces the loop it
  // hoists from, never its parents. Only loops known to run (the register
  // blocks' loops have static, non-zero trip counts): a slice hoisted out
  // of a loop that runs zero times (a kernel's token tail, a key loop)
  // would be read even when it is out of bounds.
  SmallVector<scf::ForOp> loops;
  getOperation()->walk([&](scf::ForOp loop) {
    std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
    if (lower && upper && *lower < *upper)
      loops.push_back(loop);
  });
  for (scf::ForOp loop : loops)
    hoistLoopInvariantSubsets(rewriter, loop);
}

} // namespace

namespace {

/// An scf.if whose branches both yield a buffer of one static layout cast to
/// a dynamic one (bufferization gives an scf.if result the most general
/// layout): the result gets the static layout back. Transfers of a buffer
/// with a dynamic innermost stride cannot be vector loads; they would become
/// loops of scalar loads.
struct RefineIfResultLayouts : OpRewritePattern<scf::IfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::IfOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() == 0 || op.getElseRegion().empty())
      return failure();
    scf::YieldOp thenYield = op.thenYield(), elseYield = op.elseYield();
    SmallVector<Type> types = llvm::to_vector(op.getResultTypes());
    bool changed = false;
    for (unsigned i = 0, e = op.getNumResults(); i < e; ++i) {
      auto thenCast = thenYield.getOperand(i).getDefiningOp<memref::CastOp>();
      auto elseCast = elseYield.getOperand(i).getDefiningOp<memref::CastOp>();
      if (!thenCast || !elseCast ||
          thenCast.getSource().getType() != elseCast.getSource().getType())
        continue;
      types[i] = thenCast.getSource().getType();
      changed = true;
    }
    if (!changed)
      return failure();
    auto refined = scf::IfOp::create(rewriter, op.getLoc(), types,
                                     op.getCondition(), /*withElse=*/true);
    for (auto [from, to] :
         {std::pair(&op.getThenRegion(), &refined.getThenRegion()),
          std::pair(&op.getElseRegion(), &refined.getElseRegion())}) {
      rewriter.eraseBlock(&to->front());
      rewriter.inlineRegionBefore(*from, *to, to->end());
      auto yield = cast<scf::YieldOp>(to->front().getTerminator());
      rewriter.modifyOpInPlace(yield, [&] {
        for (unsigned i = 0, e = types.size(); i < e; ++i)
          if (types[i] != op.getResult(i).getType())
            yield->setOperand(i, yield.getOperand(i)
                                     .getDefiningOp<memref::CastOp>()
                                     .getSource());
      });
    }
    SmallVector<Value> results;
    for (auto [old, now] : llvm::zip(op.getResults(), refined.getResults()))
      results.push_back(old.getType() == now.getType()
                            ? Value(now)
                            : Value(memref::CastOp::create(
                                  rewriter, op.getLoc(), old.getType(), now)));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// memref.copy between strided views (a tile or an unpadded tensor copied
/// into a padded buffer) -> linalg.copy, which becomes loops with a
/// contiguous innermost loop; the lowering of memref.copy would call the
/// runtime's memrefCopy, which copies such views element by element.
struct CopyStridedAsLoops : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto source = dyn_cast<MemRefType>(op.getSource().getType());
    auto target = dyn_cast<MemRefType>(op.getTarget().getType());
    if (!source || !target || source.getRank() == 0 ||
        (source.getLayout().isIdentity() && target.getLayout().isIdentity()))
      return failure();
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }
};

struct AttnLowerKernelVectorsPass
    : attn::impl::AttnLowerKernelVectorsBase<AttnLowerKernelVectorsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    Operation *root = getOperation();
    // Contractions first: their lowering makes transposes, broadcasts and
    // shape casts that the next patterns take apart.
    {
      RewritePatternSet patterns(context);
      patterns.add<RefineIfResultLayouts, CopyStridedAsLoops>(context);
      memref::CastOp::getCanonicalizationPatterns(patterns, context);
      vector::TransferReadOp::getCanonicalizationPatterns(patterns, context);
      vector::TransferWriteOp::getCanonicalizationPatterns(patterns, context);
      if (failed(applyPatternsGreedily(root, std::move(patterns))))
        return signalPassFailure();
    }
    {
      RewritePatternSet patterns(context);
      vector::populateVectorContractLoweringPatterns(
          patterns, vector::VectorContractLowering::OuterProduct);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::populateVectorMultiReductionLoweringPatterns(
          patterns, vector::VectorMultiReductionLowering::InnerReduction);
      vector::populateVectorTransposeLoweringPatterns(
          patterns, vector::VectorTransposeLowering::EltWise);
      vector::populateVectorBroadcastLoweringPatterns(patterns);
      vector::populateVectorShapeCastLoweringPatterns(patterns);
      vector::populateVectorOuterProductLoweringPatterns(patterns);
      vector::populateVectorToVectorCanonicalizationPatterns(patterns);
      populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
        return name == "exp" || name == "math.exp";
      });
      if (failed(applyPatternsGreedily(root, std::move(patterns))))
        return signalPassFailure();
    }
    // n-D transfers -> fully unrolled 1-D transfers, then plain loads and
    // stores where in bounds.
    {
      RewritePatternSet patterns(context);
      populateVectorToSCFConversionPatterns(
          patterns, VectorTransferToSCFOptions().enableFullUnroll());
      vector::populateVectorTransferLoweringPatterns(patterns,
                                                     /*maxTransferRank=*/1);
      vector::populateVectorShapeCastLoweringPatterns(patterns);
      vector::populateVectorToVectorCanonicalizationPatterns(patterns);
      if (failed(applyPatternsGreedily(root, std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
