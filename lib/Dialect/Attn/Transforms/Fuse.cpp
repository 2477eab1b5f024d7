//===- Fuse.cpp - attn primitives to fused kernel ops -----------*- C++ -*-===//
//
// Forms the fused kernel ops from the primitives `attn-decompose` produces,
// in three phases so that the larger fusions see their producers intact:
//   1. the CCA chain feeding an attn.sdpa -> attn.cca_prologue;
//   2. attn.sdpa -> attn.flash_attention (K=V and RoPE-on-load recognized);
//   3. head-split projections (and their RoPE) -> attn.fused_projection;
//   4. the remaining projections (the up-projection) -> attn.fused_projection
//      with one head, a tiled GEMM.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNFUSE
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse::attn;

namespace {

struct TileSizes {
  int64_t blockQ, blockKV, blockS, blockN, blockK;
};

/// The `[B, S, H * d]` source of a `[B, S, H, d]` head split, or null.
Value getHeadSplitSource(Value heads) {
  auto expand = heads.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || expand.getResultType().getRank() != 4 ||
      expand.getSrcType().getRank() != 3)
    return {};
  SmallVector<ReassociationIndices> expected = {{0}, {1}, {2, 3}};
  if (expand.getReassociationIndices() != expected)
    return {};
  return expand.getSrc();
}

/// The bias-free projection of `input` producing `value`, or null.
ProjectOp getUnbiasedProjectionOf(Value value, Value input) {
  auto project = value.getDefiningOp<ProjectOp>();
  if (!project || project.getBias() || project.getInput() != input)
    return {};
  return project;
}

/// Whether `value` is a static slice of channels `[offset, offset + width)`
/// of all of `source`'s batch and sequence, and returns `source`.
Value getChannelSliceSource(Value value, int64_t offset, int64_t width) {
  auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getSourceType().getRank() != 3 ||
      slice.getResultType().getRank() != 3 || !slice.hasUnitStride())
    return {};
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  std::optional<int64_t> channelOffset = getConstantIntValue(offsets[2]);
  std::optional<int64_t> channelWidth = getConstantIntValue(sizes[2]);
  if (!isZeroInteger(offsets[0]) || !isZeroInteger(offsets[1]) ||
      channelOffset != offset || channelWidth != width)
    return {};
  // The slice must cover the whole batch and sequence.
  for (int64_t dim : {0, 1}) {
    std::optional<int64_t> size = getConstantIntValue(sizes[dim]);
    int64_t sourceSize = slice.getSourceType().getDimSize(dim);
    if (size && *size == sourceSize)
      continue;
    auto dimOp = dyn_cast_if_present<tensor::DimOp>(
        dyn_cast_if_present<Value>(sizes[dim]).getDefiningOp());
    if (!dimOp || dimOp.getSource() != slice.getSource() ||
        dimOp.getConstantIndex() != dim)
      return {};
  }
  return slice.getSource();
}

/// The single user of `value`, or null.
Operation *getSingleUser(Value value) {
  return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
}

//===----------------------------------------------------------------------===//
// Phase 1: the CCA prologue
//===----------------------------------------------------------------------===//

/// Matches, from its attn.qk_norm, the chain attn-decompose makes of an
/// attn.cca layer up to the attention, and replaces it with one
/// attn.cca_prologue that writes the rotated query and key and the value.
struct FuseCCAPrologue : OpRewritePattern<QKNormOp> {
  FuseCCAPrologue(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(QKNormOp norm,
                                PatternRewriter &rewriter) const override {
    // Norm inputs: the QK-mean results, or the split convolution output.
    Value convQuery = norm.getQ(), convKey = norm.getK();
    QKMeanOp mean = convQuery.getDefiningOp<QKMeanOp>();
    if (mean) {
      if (convKey.getDefiningOp<QKMeanOp>() != mean)
        return rewriter.notifyMatchFailure(norm,
                                           "query and key QK-mean differ");
      convQuery = mean.getQConv();
      convKey = mean.getKConv();
    }

    auto queryType = cast<RankedTensorType>(norm.getQ().getType());
    auto keyType = cast<RankedTensorType>(norm.getK().getType());
    int64_t numHeads = queryType.getDimSize(2);
    int64_t numKvHeads = keyType.getDimSize(2);
    int64_t headDim = queryType.getDimSize(3);
    int64_t queryLatent = numHeads * headDim, keyLatent = numKvHeads * headDim;

    // The two channel slices of the grouped convolution.
    Value querySliceSource =
        getChannelSliceSource(getHeadSplitSource(convQuery), 0, queryLatent);
    Value keySliceSource = getChannelSliceSource(getHeadSplitSource(convKey),
                                                 queryLatent, keyLatent);
    if (!querySliceSource || querySliceSource != keySliceSource)
      return rewriter.notifyMatchFailure(norm, "not a split convolution");
    auto grouped = querySliceSource.getDefiningOp<CausalConv1DOp>();
    if (!grouped || !grouped.getBias() || grouped.getPadding() != 0 ||
        static_cast<int64_t>(grouped.getGroups()) != numHeads + numKvHeads)
      return rewriter.notifyMatchFailure(norm, "no grouped convolution");
    auto depthwise = grouped.getInput().getDefiningOp<CausalConv1DOp>();
    int64_t channels = queryLatent + keyLatent;
    if (!depthwise || !depthwise.getBias() ||
        static_cast<int64_t>(depthwise.getGroups()) != channels)
      return rewriter.notifyMatchFailure(norm, "no depthwise convolution");
    int64_t k0 =
        cast<RankedTensorType>(depthwise.getWeight().getType()).getDimSize(2);
    int64_t k1 =
        cast<RankedTensorType>(grouped.getWeight().getType()).getDimSize(2);
    if (static_cast<int64_t>(depthwise.getPadding()) != (k0 - 1) + (k1 - 1))
      return rewriter.notifyMatchFailure(norm, "padding is not (k0-1)+(k1-1)");

    // u = concat(x Wq^T, x Wk^T).
    auto concat = depthwise.getInput().getDefiningOp<tensor::ConcatOp>();
    if (!concat || concat.getDim() != 2 || concat.getInputs().size() != 2)
      return rewriter.notifyMatchFailure(norm, "no packed projections");
    auto queryProjection = concat.getInputs()[0].getDefiningOp<ProjectOp>();
    if (!queryProjection || queryProjection.getBias())
      return rewriter.notifyMatchFailure(norm, "no query down-projection");
    Value input = queryProjection.getInput();
    ProjectOp keyProjection =
        getUnbiasedProjectionOf(concat.getInputs()[1], input);
    if (!keyProjection)
      return rewriter.notifyMatchFailure(norm, "no key down-projection");
    if (mean &&
        (getHeadSplitSource(mean.getQRaw()) != queryProjection.getResult() ||
         getHeadSplitSource(mean.getKRaw()) != keyProjection.getResult()))
      return rewriter.notifyMatchFailure(norm, "QK-mean reads other tensors");

    // RoPE, when present, is the only user of each normalized tensor.
    Value query = norm.getQOut(), key = norm.getKOut();
    RopeAttr rope;
    auto queryRope = dyn_cast_if_present<RoPEOp>(getSingleUser(query));
    auto keyRope = dyn_cast_if_present<RoPEOp>(getSingleUser(key));
    if (queryRope && keyRope && queryRope.getRope() == keyRope.getRope() &&
        !queryRope.getPositions() && !keyRope.getPositions()) {
      rope = queryRope.getRope();
      query = queryRope.getResult();
      key = keyRope.getResult();
    }

    // The attention reading them, and its value.
    auto sdpa = dyn_cast_if_present<SDPAOp>(getSingleUser(key));
    if (!sdpa || sdpa.getKey() != key || sdpa.getQuery() != query ||
        !query.hasOneUse() || !sdpa.getValue().hasOneUse())
      return rewriter.notifyMatchFailure(norm, "no attention reads the chain");
    Value valueFlat = getHeadSplitSource(sdpa.getValue());
    if (!valueFlat)
      return rewriter.notifyMatchFailure(norm, "value is not a head split");
    Value currentWeight, previousWeight;
    if (auto shift = valueFlat.getDefiningOp<ValueShiftOp>()) {
      ProjectOp current = getUnbiasedProjectionOf(shift.getCurrent(), input);
      ProjectOp previous = getUnbiasedProjectionOf(shift.getPrevious(), input);
      if (!current || !previous)
        return rewriter.notifyMatchFailure(norm, "value shift of other values");
      currentWeight = current.getWeight();
      previousWeight = previous.getWeight();
    } else if (ProjectOp value = getUnbiasedProjectionOf(valueFlat, input)) {
      currentWeight = value.getWeight();
    } else {
      return rewriter.notifyMatchFailure(norm, "value is not a projection");
    }

    // Every operand must be available where the attention runs.
    SmallVector<Value> operands = {input,
                                   queryProjection.getWeight(),
                                   keyProjection.getWeight(),
                                   currentWeight,
                                   depthwise.getWeight(),
                                   depthwise.getBias(),
                                   grouped.getWeight(),
                                   grouped.getBias(),
                                   norm.getTemp()};
    if (previousWeight)
      operands.push_back(previousWeight);
    DominanceInfo dominance;
    if (!llvm::all_of(operands, [&](Value operand) {
          return dominance.properlyDominates(operand, sdpa);
        }))
      return rewriter.notifyMatchFailure(norm, "operands do not dominate");

    rewriter.setInsertionPoint(sdpa);
    auto prologue = CCAPrologueOp::create(
        rewriter, norm.getLoc(),
        TypeRange{query.getType(), key.getType(), sdpa.getValue().getType()},
        input, queryProjection.getWeight(), keyProjection.getWeight(),
        currentWeight, previousWeight, depthwise.getWeight(),
        depthwise.getBias(), grouped.getWeight(), grouped.getBias(),
        norm.getTemp(), rewriter.getI64IntegerAttr(numHeads),
        rewriter.getI64IntegerAttr(numKvHeads),
        rewriter.getI64IntegerAttr(headDim),
        rewriter.getDenseI64ArrayAttr({k0, k1}),
        mean ? rewriter.getUnitAttr() : UnitAttr(),
        previousWeight ? rewriter.getUnitAttr() : UnitAttr(),
        norm.getTemperatureAttr(), norm.getEpsAttr(), rope,
        rewriter.getI64IntegerAttr(tiles.blockS));
    rewriter.modifyOpInPlace(sdpa, [&] {
      sdpa.getQueryMutable().assign(prologue.getQuery());
      sdpa.getKeyMutable().assign(prologue.getKey());
      sdpa.getValueMutable().assign(prologue.getValue());
    });
    return success();
  }

  TileSizes tiles;
};

//===----------------------------------------------------------------------===//
// Phase 2: flash attention
//===----------------------------------------------------------------------===//

struct FuseFlashAttention : OpRewritePattern<SDPAOp> {
  FuseFlashAttention(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(SDPAOp op,
                                PatternRewriter &rewriter) const override {
    // Queries at per-sequence positions over a cache are decode attention.
    if (op.getPositions())
      return rewriter.notifyMatchFailure(op, "attention over a cache");
    Value query = op.getQuery(), key = op.getKey(), value = op.getValue();
    RopeAttr queryRope, keyRope;
    // K=V with RoPE: the key is the rotated value. Read the un-rotated tensor
    // once and rotate the key role on load (and the query role too when the
    // query is that same rotated tensor, mode qkv).
    if (auto rope = key.getDefiningOp<RoPEOp>();
        rope && rope.getInput() == value) {
      keyRope = rope.getRope();
      if (query == key) {
        queryRope = keyRope;
        query = value;
      }
      key = value;
    }
    bool keyIsValue = key == value;
    rewriter.replaceOpWithNewOp<FlashAttentionOp>(
        op, op.getType(), query, key, keyIsValue ? Value() : value,
        op.getBias(), op.getCausalAttr(), op.getWindowAttr(), op.getScaleAttr(),
        queryRope, keyRope, rewriter.getI64IntegerAttr(tiles.blockQ),
        rewriter.getI64IntegerAttr(tiles.blockKV));
    return success();
  }

  TileSizes tiles;
};

//===----------------------------------------------------------------------===//
// Phase 3: projections
//===----------------------------------------------------------------------===//

/// `expand_shape(project(x, W, b))` -> `fused_projection(x, W, b)`, when the
/// projection feeds nothing else (it is then written once, split in heads).
struct FuseHeadProjection : OpRewritePattern<tensor::ExpandShapeOp> {
  FuseHeadProjection(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(tensor::ExpandShapeOp expand,
                                PatternRewriter &rewriter) const override {
    Value source = getHeadSplitSource(expand.getResult());
    auto project = source ? source.getDefiningOp<ProjectOp>() : ProjectOp();
    if (!project || !project->hasOneUse())
      return rewriter.notifyMatchFailure(expand, "not a projection head split");
    int64_t headDim = expand.getResultType().getDimSize(3);
    rewriter.replaceOpWithNewOp<FusedProjectionOp>(
        expand, expand.getResultType(), project.getInput(), project.getWeight(),
        project.getBias(), rewriter.getI64IntegerAttr(headDim), RopeAttr(),
        rewriter.getI64IntegerAttr(tiles.blockS),
        rewriter.getI64IntegerAttr(tiles.blockN),
        rewriter.getI64IntegerAttr(tiles.blockK));
    return success();
  }

  TileSizes tiles;
};

/// `rope(fused_projection(...))` -> `fused_projection(...) {rope}`: the
/// rotation becomes the GEMM's epilogue, with output tiles of whole heads.
struct FuseProjectionRope : OpRewritePattern<RoPEOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RoPEOp rope,
                                PatternRewriter &rewriter) const override {
    // The epilogue rotates by token index: not at per-sequence positions.
    if (rope.getPositions())
      return rewriter.notifyMatchFailure(rope, "rotation at cache positions");
    auto projection = rope.getInput().getDefiningOp<FusedProjectionOp>();
    if (!projection || projection.getRopeAttr() || !projection->hasOneUse())
      return rewriter.notifyMatchFailure(rope, "not a plain fused projection");
    int64_t headDim = projection.getHeadDim();
    int64_t blockN =
        llvm::divideCeil(projection.getBlockN(), headDim) * headDim;
    rewriter.replaceOpWithNewOp<FusedProjectionOp>(
        rope, rope.getType(), projection.getInput(), projection.getWeight(),
        projection.getBias(), projection.getHeadDimAttr(), rope.getRope(),
        projection.getBlockSAttr(), rewriter.getI64IntegerAttr(blockN),
        projection.getBlockKAttr());
    return success();
  }
};

/// Any other `project(x, W, b)`, such as the up-projection, becomes a tiled
/// GEMM too: a `fused_projection` with one head of all output features,
/// collapsed back to `[B, S, N]`.
struct FuseLinearProjection : OpRewritePattern<ProjectOp> {
  FuseLinearProjection(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(ProjectOp project,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(project.getType());
    int64_t features = resultType.getDimSize(2);
    auto headsType = RankedTensorType::get(
        {resultType.getDimSize(0), resultType.getDimSize(1), 1, features},
        resultType.getElementType());
    Value heads = FusedProjectionOp::create(
        rewriter, project.getLoc(), headsType, project.getInput(),
        project.getWeight(), project.getBias(),
        rewriter.getI64IntegerAttr(features), RopeAttr(),
        rewriter.getI64IntegerAttr(tiles.blockS),
        rewriter.getI64IntegerAttr(tiles.blockN),
        rewriter.getI64IntegerAttr(tiles.blockK));
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        project, resultType, heads,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    return success();
  }

  TileSizes tiles;
};

struct AttnFusePass : public attnfuse::attn::impl::AttnFuseBase<AttnFusePass> {
  using AttnFuseBase::AttnFuseBase;

  void runOnOperation() override {
    for (auto [name, size] : {std::pair<StringRef, int64_t>{"block-q", blockQ},
                              {"block-kv", blockKV},
                              {"block-s", blockS},
                              {"block-n", blockN},
                              {"block-k", blockK}}) {
      if (size <= 0) {
        getOperation()->emitError()
            << "attn-fuse: " << name << " must be positive, got " << size;
        return signalPassFailure();
      }
    }
    TileSizes tiles{blockQ, blockKV, blockS, blockN, blockK};
    MLIRContext *context = &getContext();

    // Each phase runs to a fixpoint before the next sees the IR.
    RewritePatternSet prologue(context), attention(context),
        projections(context), gemms(context);
    prologue.add<FuseCCAPrologue>(context, tiles);
    attention.add<FuseFlashAttention>(context, tiles);
    projections.add<FuseHeadProjection>(context, tiles);
    projections.add<FuseProjectionRope>(context);
    gemms.add<FuseLinearProjection>(context, tiles);
    for (RewritePatternSet *phase :
         {&prologue, &attention, &projections, &gemms}) {
      if (failed(applyPatternsGreedily(getOperation(), std::move(*phase))))
        return signalPassFailure();
    }
  }
};

} // namespace
