//===- Fuse.cpp - attn primitives to fused kernel ops -----------*- C++ -*-===//
//
// Forms the fused kernel ops from the primitives `attn-decompose` produces,
// in three phases so that the larger fusions see their producers intact:
//   1. the CCA chain feeding an attn.sdpa -> attn.cca_prologue;
//   2. attn.sdpa -> attn.flash_attention (K=V and RoPE-on-load recognized),
//      attn.sdpa_grad -> attn.flash_attention_grad;
//   3. head-split projections (and their RoPE) -> attn.fused_projection;
//   4. the remaining projections (the up-projection) -> attn.fused_projection
//      with one head, a tiled GEMM; attn.project_grad -> that GEMM for dx
//      and attn.fused_weight_grad for dW and db; a grouped
//      attn.causal_conv1d (and its gradient) left outside a fused prologue
//      -> those GEMMs per group over the taps side by side.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNFUSE
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse::attn;

namespace {

/// The init of a fused kernel op's result of `type`: a tensor.empty whose
/// dynamic dimension `dim` is that dimension of `sizeSource(dim)`.
Value emptyResult(PatternRewriter &rewriter, Location loc,
                  RankedTensorType type,
                  llvm::function_ref<Value(int64_t)> sizeSource) {
  SmallVector<Value> dynamicSizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      dynamicSizes.push_back(
          tensor::DimOp::create(rewriter, loc, sizeSource(dim), dim));
  return tensor::EmptyOp::create(rewriter, loc, type, dynamicSizes);
}

/// A `[batch, tokens, heads, head_dim]` init of `type` whose sizes come
/// from the op's own (verified) attributes, not from a tensor of that rank.
Value headsInit(PatternRewriter &rewriter, Location loc, Type type,
                OpFoldResult batch, OpFoldResult tokens, int64_t heads,
                int64_t headDim) {
  auto initType = cast<RankedTensorType>(type);
  Value init =
      tensor::EmptyOp::create(rewriter, loc,
                              {batch, tokens, rewriter.getIndexAttr(heads),
                               rewriter.getIndexAttr(headDim)},
                              initType.getElementType());
  if (init.getType() != initType)
    init = tensor::CastOp::create(rewriter, loc, initType, init);
  return init;
}

struct TileSizes {
  int64_t blockQ, blockKV, blockS, blockN, blockK, decodeBlockKV;
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

/// The part of attn-decompose's CCA chain both prologue kernels take over:
/// down-projections, both convolutions and QK-mean, up to the norm.
struct CCAChain {
  QKMeanOp mean; // null without qk_mean
  CausalConv1DOp grouped, depthwise;
  ProjectOp queryProjection, keyProjection;
  Value input;
  Value convState; // decode: the state in front of u
  tensor::ConcatOp packed;
  int64_t numHeads, numKvHeads, headDim, k0, k1;
};

/// Matches the chain into `norm`. The prefill form pads u once by
/// (k0 - 1) + (k1 - 1); the decode form convolves [conv_state | u] unpadded.
FailureOr<CCAChain> matchCCAChain(QKNormOp norm, bool decode) {
  CCAChain chain;
  Value convQuery = norm.getQ(), convKey = norm.getK();
  chain.mean = convQuery.getDefiningOp<QKMeanOp>();
  if (chain.mean) {
    if (convKey.getDefiningOp<QKMeanOp>() != chain.mean)
      return failure();
    convQuery = chain.mean.getQConv();
    convKey = chain.mean.getKConv();
  }
  auto queryType = cast<RankedTensorType>(norm.getQ().getType());
  auto keyType = cast<RankedTensorType>(norm.getK().getType());
  chain.numHeads = queryType.getDimSize(2);
  chain.numKvHeads = keyType.getDimSize(2);
  chain.headDim = queryType.getDimSize(3);
  int64_t queryLatent = chain.numHeads * chain.headDim;
  int64_t keyLatent = chain.numKvHeads * chain.headDim;

  // The two channel slices of the grouped convolution.
  Value querySliceSource =
      getChannelSliceSource(getHeadSplitSource(convQuery), 0, queryLatent);
  Value keySliceSource = getChannelSliceSource(getHeadSplitSource(convKey),
                                               queryLatent, keyLatent);
  if (!querySliceSource || querySliceSource != keySliceSource)
    return failure();
  chain.grouped = querySliceSource.getDefiningOp<CausalConv1DOp>();
  if (!chain.grouped || !chain.grouped.getBias() ||
      chain.grouped.getPadding() != 0 ||
      static_cast<int64_t>(chain.grouped.getGroups()) !=
          chain.numHeads + chain.numKvHeads)
    return failure();
  chain.depthwise = chain.grouped.getInput().getDefiningOp<CausalConv1DOp>();
  if (!chain.depthwise || !chain.depthwise.getBias() ||
      static_cast<int64_t>(chain.depthwise.getGroups()) !=
          queryLatent + keyLatent)
    return failure();
  chain.k0 = cast<RankedTensorType>(chain.depthwise.getWeight().getType())
                 .getDimSize(2);
  chain.k1 =
      cast<RankedTensorType>(chain.grouped.getWeight().getType()).getDimSize(2);
  int64_t padding = decode ? 0 : (chain.k0 - 1) + (chain.k1 - 1);
  if (static_cast<int64_t>(chain.depthwise.getPadding()) != padding)
    return failure();

  // u = concat(x Wq^T, x Wk^T), behind the decoder's state.
  Value packed = chain.depthwise.getInput();
  if (decode) {
    auto window = packed.getDefiningOp<tensor::ConcatOp>();
    if (!window || window.getDim() != 1 || window.getInputs().size() != 2)
      return failure();
    chain.convState = window.getInputs()[0];
    packed = window.getInputs()[1];
  }
  chain.packed = packed.getDefiningOp<tensor::ConcatOp>();
  if (!chain.packed || chain.packed.getDim() != 2 ||
      chain.packed.getInputs().size() != 2)
    return failure();
  chain.queryProjection =
      chain.packed.getInputs()[0].getDefiningOp<ProjectOp>();
  if (!chain.queryProjection || chain.queryProjection.getBias())
    return failure();
  chain.input = chain.queryProjection.getInput();
  chain.keyProjection =
      getUnbiasedProjectionOf(chain.packed.getInputs()[1], chain.input);
  if (!chain.keyProjection)
    return failure();
  if (chain.mean && (getHeadSplitSource(chain.mean.getQRaw()) !=
                         chain.queryProjection.getResult() ||
                     getHeadSplitSource(chain.mean.getKRaw()) !=
                         chain.keyProjection.getResult()))
    return failure();
  return chain;
}

/// Whether every user of `value` outside `ignored` comes after `point`.
bool usersFollow(Value value, Operation *point,
                 ArrayRef<Operation *> ignored = {}) {
  DominanceInfo dominance;
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    return llvm::is_contained(ignored, user) ||
           dominance.properlyDominates(point, user);
  });
}

/// Matches, from its attn.qk_norm, the chain attn-decompose makes of an
/// attn.cca layer up to the attention, and replaces it with one
/// attn.cca_prologue that writes the rotated query and key and the value.
struct FuseCCAPrologue : OpRewritePattern<QKNormOp> {
  FuseCCAPrologue(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(QKNormOp norm,
                                PatternRewriter &rewriter) const override {
    FailureOr<CCAChain> chain = matchCCAChain(norm, /*decode=*/false);
    if (failed(chain))
      return rewriter.notifyMatchFailure(norm, "not a CCA prefill chain");
    // A gradient function's backward reads the norm's inputs (and every
    // step below them): the chain is computed whole either way, and the
    // prologue would only repeat it.
    if (!norm.getQ().hasOneUse() || !norm.getK().hasOneUse())
      return rewriter.notifyMatchFailure(norm, "other ops read the chain");
    // The prefill form has no state in front of u.
    [[maybe_unused]] auto [mean, grouped, depthwise, queryProjection,
                           keyProjection, input, convState, packed, numHeads,
                           numKvHeads, headDim, k0, k1] = *chain;

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

    // The attention reading them, and its value. Other readers (a gradient
    // function's forward returns them for the backward) come after it and
    // read the kernel's results.
    SDPAOp sdpa;
    for (Operation *user : key.getUsers())
      if (auto attention = dyn_cast<SDPAOp>(user);
          attention && attention.getKey() == key) {
        if (sdpa && sdpa != attention)
          return rewriter.notifyMatchFailure(norm, "two attentions read it");
        sdpa = attention;
      }
    if (!sdpa || sdpa.getQuery() != query ||
        !usersFollow(key, sdpa, {sdpa}) || !usersFollow(query, sdpa, {sdpa}) ||
        !usersFollow(sdpa.getValue(), sdpa, {sdpa}))
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

    // A padded batch: the kernel zeroes the padded tokens' rows itself.
    Value paddingMask;
    if (auto masked = input.getDefiningOp<MaskTokensOp>()) {
      input = masked.getInput();
      paddingMask = masked.getMask();
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
    if (paddingMask)
      operands.push_back(paddingMask);
    DominanceInfo dominance;
    if (!llvm::all_of(operands, [&](Value operand) {
          return dominance.properlyDominates(operand, sdpa);
        }))
      return rewriter.notifyMatchFailure(norm, "operands do not dominate");

    rewriter.setInsertionPoint(sdpa);
    SmallVector<Type> resultTypes = {query.getType(), key.getType(),
                                     sdpa.getValue().getType()};
    // [batch, seq] of the input for all three.
    OpFoldResult batch =
        tensor::getMixedSize(rewriter, norm.getLoc(), input, 0);
    OpFoldResult seq = tensor::getMixedSize(rewriter, norm.getLoc(), input, 1);
    int64_t resultHeads[] = {numHeads, numKvHeads, numKvHeads};
    SmallVector<Value> inits;
    for (auto [type, heads] : llvm::zip_equal(resultTypes, resultHeads))
      inits.push_back(
          headsInit(rewriter, norm.getLoc(), type, batch, seq, heads, headDim));
    auto prologue = CCAPrologueOp::create(
        rewriter, norm.getLoc(), resultTypes, input,
        queryProjection.getWeight(), keyProjection.getWeight(), currentWeight,
        previousWeight, depthwise.getWeight(), depthwise.getBias(),
        grouped.getWeight(), grouped.getBias(), norm.getTemp(), paddingMask,
        /*token_offset=*/Value(), inits, rewriter.getI64IntegerAttr(numHeads),
        rewriter.getI64IntegerAttr(numKvHeads),
        rewriter.getI64IntegerAttr(headDim),
        rewriter.getDenseI64ArrayAttr({k0, k1}),
        mean ? rewriter.getUnitAttr() : UnitAttr(),
        previousWeight ? rewriter.getUnitAttr() : UnitAttr(),
        norm.getTemperatureAttr(), norm.getEpsAttr(), norm.getNormAttr(), rope,
        rewriter.getI64IntegerAttr(tiles.blockS));
    Value value = sdpa.getValue();
    rewriter.replaceAllUsesWith(query, prologue.getQuery());
    rewriter.replaceAllUsesWith(key, prologue.getKey());
    rewriter.replaceAllUsesWith(value, prologue.getValue());
    return success();
  }

  TileSizes tiles;
};

/// Whether `value` has a static size 1 along dimension 1: one new token per
/// sequence, the shape the decode kernels serve.
bool isOneTokenPerSequence(Value value) {
  return cast<RankedTensorType>(value.getType()).getDimSize(1) == 1;
}

/// The decode form of the CCA chain: attn-decompose's rewrite of an
/// attn.cca_decode step with one token per sequence (convolutions over
/// [conv_state | u], state updates, QK-mean, norm, RoPE at the positions,
/// value shift from the shift state) -> one attn.cca_decode_prologue, which
/// writes the attention inputs and rolls both states.
struct FuseCCADecodePrologue : OpRewritePattern<QKNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QKNormOp norm,
                                PatternRewriter &rewriter) const override {
    if (cast<RankedTensorType>(norm.getQ().getType()).getDimSize(1) != 1)
      return rewriter.notifyMatchFailure(norm, "not one token per sequence");
    FailureOr<CCAChain> chain = matchCCAChain(norm, /*decode=*/true);
    if (failed(chain))
      return rewriter.notifyMatchFailure(norm, "not a CCA decode chain");
    auto [mean, grouped, depthwise, queryProjection, keyProjection, input,
          convState, packed, numHeads, numKvHeads, headDim, k0, k1] = *chain;

    // The conv state update: the state rolled by this token, no lengths.
    StateUpdateOp convUpdate;
    for (Operation *user : packed->getUsers())
      if (auto update = dyn_cast<StateUpdateOp>(user);
          update && update.getState() == convState && !update.getLengths())
        convUpdate = update;
    if (!convUpdate)
      return rewriter.notifyMatchFailure(norm, "no conv state update");

    // RoPE at the positions, when present, on both normalized tensors.
    Value query = norm.getQOut(), key = norm.getKOut();
    RopeAttr rope;
    Value positions;
    auto queryRope = dyn_cast_if_present<RoPEOp>(getSingleUser(query));
    auto keyRope = dyn_cast_if_present<RoPEOp>(getSingleUser(key));
    if (queryRope || keyRope) {
      if (!queryRope || !keyRope || queryRope.getRope() != keyRope.getRope() ||
          !queryRope.getPositions() ||
          queryRope.getPositions() != keyRope.getPositions())
        return rewriter.notifyMatchFailure(norm, "RoPE not at the positions");
      rope = queryRope.getRope();
      positions = queryRope.getPositions();
      query = queryRope.getResult();
      key = keyRope.getResult();
    }

    // The new key goes into the cache; without RoPE the cache write gives
    // the positions.
    auto keyWrite = dyn_cast_if_present<CacheUpdateOp>(getSingleUser(key));
    if (!keyWrite || keyWrite.getLengths() ||
        (positions && keyWrite.getPositions() != positions))
      return rewriter.notifyMatchFailure(norm, "the key is not cached");
    positions = keyWrite.getPositions();

    // The value written next to it: the head split of the value shift over
    // the shift state, or of a plain projection.
    Value valueHeads;
    Value shiftState;
    ProjectOp currentProjection, previousProjection;
    StateUpdateOp shiftUpdate;
    {
      // Find the attention reading the cache writes; its value is the value
      // cache write.
      SDPAOp sdpa;
      for (Operation *user : keyWrite->getUsers())
        if (auto attention = dyn_cast<SDPAOp>(user))
          sdpa = attention;
      if (!sdpa)
        for (Operation *user : keyWrite->getUsers())
          if (auto gather = dyn_cast<CacheGatherOp>(user))
            for (Operation *gatherUser : gather->getUsers())
              if (auto attention = dyn_cast<SDPAOp>(gatherUser))
                sdpa = attention;
      if (!sdpa)
        return rewriter.notifyMatchFailure(norm, "no attention over the cache");
      Value valueView = sdpa.getValue();
      if (auto gather = valueView.getDefiningOp<CacheGatherOp>())
        valueView = gather.getCache();
      auto write = valueView.getDefiningOp<CacheUpdateOp>();
      if (!write || write.getLengths() || write.getPositions() != positions)
        return rewriter.notifyMatchFailure(norm, "the value is not cached");
      valueHeads = write.getNewRows();
    }
    Value valueFlat = getHeadSplitSource(valueHeads);
    if (!valueFlat || !valueHeads.hasOneUse())
      return rewriter.notifyMatchFailure(norm, "value is not a head split");
    if (auto shift = valueFlat.getDefiningOp<ValueShiftOp>()) {
      currentProjection = getUnbiasedProjectionOf(shift.getCurrent(), input);
      previousProjection = getUnbiasedProjectionOf(shift.getPrevious(), input);
      shiftState = shift.getState();
      if (!currentProjection || !previousProjection || !shiftState)
        return rewriter.notifyMatchFailure(norm, "value shift of other values");
      for (Operation *user : previousProjection->getUsers())
        if (auto update = dyn_cast<StateUpdateOp>(user);
            update && update.getState() == shiftState && !update.getLengths())
          shiftUpdate = update;
      if (!shiftUpdate)
        return rewriter.notifyMatchFailure(norm, "no shift state update");
    } else if (!(currentProjection =
                     getUnbiasedProjectionOf(valueFlat, input))) {
      return rewriter.notifyMatchFailure(norm, "value is not a projection");
    }

    // The prologue goes after its last operand; everything it replaces must
    // be used only after it.
    SmallVector<Value> operands = {queryProjection.getResult(),
                                   keyProjection.getResult(),
                                   currentProjection.getResult(),
                                   depthwise.getWeight(),
                                   depthwise.getBias(),
                                   grouped.getWeight(),
                                   grouped.getBias(),
                                   norm.getTemp(),
                                   convState,
                                   positions};
    if (previousProjection)
      operands.append({previousProjection.getResult(), shiftState});
    Operation *insertAfter = nullptr;
    Block *block = norm->getBlock();
    for (Value operand : operands) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      if (def->getBlock() != block)
        return rewriter.notifyMatchFailure(norm, "operands in other blocks");
      if (!insertAfter || insertAfter->isBeforeInBlock(def))
        insertAfter = def;
    }
    for (Value replaced :
         SmallVector<Value>{query, key, valueHeads, convUpdate.getResult()})
      if (!usersFollow(replaced, insertAfter))
        return rewriter.notifyMatchFailure(norm, "results used too early");
    if (shiftUpdate && !usersFollow(shiftUpdate.getResult(), insertAfter))
      return rewriter.notifyMatchFailure(norm, "shift state used too early");

    if (insertAfter)
      rewriter.setInsertionPointAfter(insertAfter);
    else
      rewriter.setInsertionPointToStart(block);
    SmallVector<Type> resultTypes = {query.getType(), key.getType(),
                                     valueHeads.getType(), convState.getType()};
    if (shiftState)
      resultTypes.push_back(shiftState.getType());
    // The outputs' inits: [batch, 1, heads, head_dim].
    OpFoldResult batch = tensor::getMixedSize(rewriter, norm.getLoc(),
                                              queryProjection.getResult(), 0);
    int64_t resultHeads[] = {numHeads, numKvHeads, numKvHeads};
    SmallVector<Value> inits;
    for (auto [type, heads] :
         llvm::zip(ArrayRef(resultTypes).take_front(3), resultHeads))
      inits.push_back(headsInit(rewriter, norm.getLoc(), type, batch,
                                rewriter.getIndexAttr(1), heads, headDim));
    auto prologue = CCADecodePrologueOp::create(
        rewriter, norm.getLoc(), resultTypes, queryProjection.getResult(),
        keyProjection.getResult(), currentProjection.getResult(),
        previousProjection ? previousProjection.getResult() : Value(),
        depthwise.getWeight(), depthwise.getBias(), grouped.getWeight(),
        grouped.getBias(), norm.getTemp(), inits[0], inits[1], inits[2],
        convState, shiftState, positions, rewriter.getI64IntegerAttr(numHeads),
        rewriter.getI64IntegerAttr(numKvHeads),
        rewriter.getI64IntegerAttr(headDim),
        rewriter.getDenseI64ArrayAttr({k0, k1}),
        mean ? rewriter.getUnitAttr() : UnitAttr(),
        shiftState ? rewriter.getUnitAttr() : UnitAttr(),
        norm.getTemperatureAttr(), norm.getEpsAttr(), norm.getNormAttr(), rope);
    rewriter.replaceAllUsesWith(query, prologue.getQuery());
    rewriter.replaceAllUsesWith(key, prologue.getKey());
    rewriter.replaceAllUsesWith(valueHeads, prologue.getValue());
    rewriter.replaceAllUsesWith(convUpdate.getResult(),
                                prologue.getConvStateOut());
    if (shiftUpdate)
      rewriter.replaceAllUsesWith(shiftUpdate.getResult(),
                                  prologue.getShiftStateOut());
    return success();
  }
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
    // The result [B, S, Hq, dv] takes B, S and Hq from the query, dv from the
    // value.
    Value init = emptyResult(
        rewriter, op.getLoc(), cast<RankedTensorType>(op.getResult().getType()),
        [&](int64_t dim) { return dim < 3 ? op.getQuery() : value; });
    // The log-sum-exp [B, S, Hq] takes its sizes from the query.
    Value lseInit;
    if (Value lse = op.getLse())
      lseInit = emptyResult(rewriter, op.getLoc(),
                            cast<RankedTensorType>(lse.getType()),
                            [&](int64_t) { return op.getQuery(); });
    rewriter.replaceOpWithNewOp<FlashAttentionOp>(
        op, op.getResult().getType(),
        lseInit ? lseInit.getType() : Type(), query, key,
        keyIsValue ? Value() : value, op.getBias(), op.getKeyMask(),
        /*query_row_offset=*/Value(), /*query_row_count=*/Value(), init,
        lseInit, op.getCausalAttr(), op.getWindowAttr(), op.getScaleAttr(),
        queryRope, keyRope, rewriter.getI64IntegerAttr(tiles.blockQ),
        rewriter.getI64IntegerAttr(tiles.blockKV));
    return success();
  }

  TileSizes tiles;
};

/// The sum `dk_role + dv` that reverse mode builds for a K=V attention's
/// shared tensor, when nothing else reads the two gradients: `dk_role` is
/// `dk` itself (no rotation) or `attn.rope_grad` of it (`keyRope`).
static arith::AddFOp getSharedKeyValueGradSum(SDPAGradOp op, RoPEOp keyRope) {
  Value keyGrad = op.getKeyGrad(), valueGrad = op.getValueGrad();
  if (!keyGrad.hasOneUse() || !valueGrad.hasOneUse())
    return {};
  Value keyRoleGrad = keyGrad;
  if (keyRope) {
    auto transposed = dyn_cast<RoPEGradOp>(*keyGrad.user_begin());
    if (!transposed || transposed.getPositions() ||
        transposed.getRope() != keyRope.getRope() ||
        !transposed.getInputGrad().hasOneUse())
      return {};
    keyRoleGrad = transposed.getInputGrad();
  }
  auto sum = dyn_cast<arith::AddFOp>(*valueGrad.user_begin());
  if (!sum || !llvm::is_contained(sum->getOperands(), keyRoleGrad) ||
      sum.getLhs() == sum.getRhs())
    return {};
  return sum;
}

/// The gradient of the logit `bias` (`[S, T]` or `[Hq, S, T]`) from the
/// `[Hq, S, T]` sum of dS over the batch (f32 or f64): summed over the heads
/// for an `[S, T]` bias (in that type), then rounded to the bias's element
/// type.
static Value logitBiasGradOf(PatternRewriter &rewriter, Location loc,
                             Value scoreGradSum, Value bias) {
  auto biasType = cast<RankedTensorType>(bias.getType());
  Type sumType = getElementTypeOrSelf(scoreGradSum.getType());
  MLIRContext *context = rewriter.getContext();
  auto elementwise = [&](Value source, Value init, AffineMap sourceMap,
                         ArrayRef<utils::IteratorType> iterators) {
    unsigned rank = sourceMap.getNumDims();
    AffineMap initMap = AffineMap::getMultiDimIdentityMap(rank, context);
    if (cast<RankedTensorType>(init.getType()).getRank() < rank)
      initMap = initMap.dropResult(0);
    return linalg::GenericOp::create(
               rewriter, loc, init.getType(), source, init,
               ArrayRef<AffineMap>{sourceMap, initMap}, iterators,
               [&](OpBuilder &b, Location l, ValueRange args) {
                 Value value = args[0];
                 if (iterators.front() == utils::IteratorType::reduction)
                   value = arith::AddFOp::create(b, l, args[1], value);
                 else if (value.getType() != args[1].getType())
                   value =
                       arith::TruncFOp::create(b, l, args[1].getType(), value);
                 linalg::YieldOp::create(b, l, value);
               })
        .getResult(0);
  };
  auto initOf = [&](Type elementType) {
    return emptyResult(rewriter, loc,
                       RankedTensorType::get(biasType.getShape(), elementType),
                       [&](int64_t) { return bias; });
  };
  Value grad = scoreGradSum;
  if (biasType.getRank() == 2) {
    Value zero = arith::ConstantOp::create(rewriter, loc, sumType,
                                           rewriter.getZeroAttr(sumType));
    Value init = linalg::FillOp::create(rewriter, loc, zero, initOf(sumType))
                     .getResult(0);
    grad = elementwise(
        grad, init, AffineMap::getMultiDimIdentityMap(3, context),
        {utils::IteratorType::reduction, utils::IteratorType::parallel,
         utils::IteratorType::parallel});
  }
  if (biasType.getElementType() == sumType)
    return grad;
  unsigned rank = biasType.getRank();
  return elementwise(
      grad, initOf(biasType.getElementType()),
      AffineMap::getMultiDimIdentityMap(rank, context),
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
}

/// The gradients of an attention: the memory-O(S) backward. With a bias
/// whose gradient is used, dS summed over the batch accumulates into an
/// `[Hq, S, T]` init (f32, f64 for f64 operands), the only `S x T` tensor. K=V (the key is the
/// value, or its rotation) whose two role gradients are only summed becomes
/// the K=V form, whose kernel rotates the key role on load, transposes the
/// rotation on each dK tile and adds dV before one store.
struct FuseFlashAttentionGrad : OpRewritePattern<SDPAGradOp> {
  FuseFlashAttentionGrad(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(SDPAGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // Each gradient takes its shape from the value it differentiates.
    auto initFor = [&](Value primal) {
      return emptyResult(rewriter, loc,
                         cast<RankedTensorType>(primal.getType()),
                         [&](int64_t) { return primal; });
    };
    Value value = op.getValue();
    RoPEOp keyRope = op.getKey().getDefiningOp<RoPEOp>();
    if (keyRope && (keyRope.getInput() != value || keyRope.getPositions()))
      keyRope = {};
    arith::AddFOp sharedSum;
    if (keyRope || op.getKey() == value)
      sharedSum = getSharedKeyValueGradSum(op, keyRope);

    // dS summed over the batch, [Hq, S, T] from zero in the kernel's
    // arithmetic type (f32, f64 for f64 operands).
    Value biasGradInit;
    Type elementType = getElementTypeOrSelf(op.getQuery().getType());
    FloatType arithmeticType = elementType.isF64()
                                   ? cast<FloatType>(elementType)
                                   : rewriter.getF32Type();
    Value biasGrad = op.getBiasGrad();
    if (biasGrad && !biasGrad.use_empty()) {
      Value query = op.getQuery(), key = op.getKey();
      auto type = RankedTensorType::get(
          {cast<RankedTensorType>(query.getType()).getDimSize(2),
           cast<RankedTensorType>(query.getType()).getDimSize(1),
           cast<RankedTensorType>(key.getType()).getDimSize(1)},
          arithmeticType);
      // Sizes (heads, S, T) from (query dim 2, query dim 1, key dim 1).
      SmallVector<Value> dynamicSizes;
      for (auto [dim, source, sourceDim] :
           {std::tuple(0, query, 2), std::tuple(1, query, 1),
            std::tuple(2, key, 1)})
        if (type.isDynamicDim(dim))
          dynamicSizes.push_back(
              tensor::DimOp::create(rewriter, loc, source, sourceDim));
      Value empty = tensor::EmptyOp::create(rewriter, loc, type, dynamicSizes);
      Value zero = arith::ConstantOp::create(
          rewriter, loc, rewriter.getFloatAttr(arithmeticType, 0.0));
      biasGradInit =
          linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    }

    SmallVector<Type> resultTypes = {op.getQuery().getType()};
    Value keyOperand = sharedSum ? value : op.getKey();
    Value valueOperand = sharedSum ? Value() : value;
    resultTypes.push_back(keyOperand.getType());
    if (valueOperand)
      resultTypes.push_back(value.getType());
    if (biasGradInit)
      resultTypes.push_back(biasGradInit.getType());
    auto fused = FlashAttentionGradOp::create(
        rewriter, loc, resultTypes, op.getQuery(), keyOperand, valueOperand,
        op.getOutput(), op.getOutputGrad(), op.getBias(), op.getKeyMask(),
        op.getLse(), initFor(op.getQuery()), initFor(keyOperand),
        valueOperand ? initFor(valueOperand) : Value(), biasGradInit,
        op.getCausalAttr(), op.getWindowAttr(), op.getScaleAttr(),
        sharedSum && keyRope ? keyRope.getRope() : RopeAttr(),
        rewriter.getI64IntegerAttr(tiles.blockQ),
        rewriter.getI64IntegerAttr(tiles.blockKV));
    if (biasGradInit)
      rewriter.replaceAllUsesWith(
          biasGrad,
          logitBiasGradOf(rewriter, loc, fused.getBiasGrad(), op.getBias()));
    rewriter.replaceAllUsesWith(op.getQueryGrad(), fused.getQueryGrad());
    if (!sharedSum) {
      rewriter.replaceAllUsesWith(op.getKeyGrad(), fused.getKeyGrad());
      rewriter.replaceAllUsesWith(op.getValueGrad(), fused.getValueGrad());
      rewriter.eraseOp(op);
      return success();
    }
    // At the attention gradient: its users (dq's too) all come after it.
    Operation *keyRoleTranspose =
        keyRope ? *op.getKeyGrad().user_begin() : nullptr;
    rewriter.replaceOp(sharedSum, fused.getKeyGrad());
    if (keyRoleTranspose)
      rewriter.eraseOp(keyRoleTranspose);
    rewriter.eraseOp(op);
    return success();
  }

  TileSizes tiles;
};

/// One side (key or value) of a decode step's cache access: the write of
/// the new rows and, for a paged cache, the per-sequence view.
struct CacheWrite {
  CacheUpdateOp update;
  CacheGatherOp gather;
};

/// The cache write behind `view` (the updated cache, or its gathered view),
/// when it writes at `positions` with no lengths.
std::optional<CacheWrite> getCacheWrite(Value view, Value positions) {
  CacheWrite write;
  if ((write.gather = view.getDefiningOp<CacheGatherOp>()))
    view = write.gather.getCache();
  write.update = view.getDefiningOp<CacheUpdateOp>();
  if (!write.update || write.update.getLengths() ||
      write.update.getPositions() != positions)
    return std::nullopt;
  Value blockTable = write.gather ? write.gather.getBlockTable() : Value();
  if (write.update.getBlockTable() != blockTable)
    return std::nullopt;
  return write;
}

/// A decode step's attention: attn.sdpa at per-sequence positions over the
/// caches the step has just written (one new token per sequence) ->
/// attn.flash_decode, which writes the token and attends in one kernel
/// pair. K=V (the value view is the key's un-rotated view) reads one cache;
/// RoPE of the new query at its position and of the cached keys at theirs
/// becomes rotation on load.
struct FuseFlashDecode : OpRewritePattern<SDPAOp> {
  FuseFlashDecode(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context, /*benefit=*/2), tiles(tiles) {}

  LogicalResult matchAndRewrite(SDPAOp op,
                                PatternRewriter &rewriter) const override {
    Value positions = op.getPositions();
    if (!positions || !op.getCausal() || op.getBias() || op.getLse())
      return rewriter.notifyMatchFailure(op, "not a decode step's attention");
    if (!isOneTokenPerSequence(op.getQuery()))
      return rewriter.notifyMatchFailure(op, "not one token per sequence");

    Value query = op.getQuery();
    RopeAttr queryRope, keyRope;
    if (auto rope = query.getDefiningOp<RoPEOp>()) {
      if (rope.getPositions() != positions)
        return rewriter.notifyMatchFailure(op, "query RoPE elsewhere");
      queryRope = rope.getRope();
      query = rope.getInput();
    }
    Value keyView = op.getKey();
    RoPEOp keyRopeOp = keyView.getDefiningOp<RoPEOp>();
    if (keyRopeOp) {
      // Row j of the view is position j: rotation by row index.
      if (keyRopeOp.getPositions())
        return rewriter.notifyMatchFailure(op, "key RoPE at other positions");
      keyRope = keyRopeOp.getRope();
      keyView = keyRopeOp.getInput();
    }
    std::optional<CacheWrite> keys = getCacheWrite(keyView, positions);
    if (!keys)
      return rewriter.notifyMatchFailure(op, "the keys are not a cache write");
    // The kernel reads 32-bit positions and page numbers. Wider ones stay on
    // the primitives (correct on the CPU; the sm_90a lowering then reports
    // the unfused op) rather than be narrowed here without a range check.
    auto hasI32Elements = [](Value value) {
      return !value || cast<RankedTensorType>(value.getType())
                           .getElementType()
                           .isSignlessInteger(32);
    };
    if (!hasI32Elements(positions) ||
        !hasI32Elements(keys->update.getBlockTable()))
      return rewriter.notifyMatchFailure(
          op, "positions or block table wider than i32");
    bool keyIsValue = op.getValue() == keyView;
    std::optional<CacheWrite> values;
    if (!keyIsValue) {
      values = getCacheWrite(op.getValue(), positions);
      if (!values ||
          values->update.getBlockTable() != keys->update.getBlockTable())
        return rewriter.notifyMatchFailure(op, "the values are not cached");
    }

    // Whatever else reads the updated caches (the layer's results) must come
    // after the attention, where the kernel returns them.
    SmallVector<Operation *> replacedReaders = {op};
    if (keyRopeOp)
      replacedReaders.push_back(keyRopeOp);
    for (const std::optional<CacheWrite> &write : {keys, values})
      if (write && write->gather)
        replacedReaders.push_back(write->gather);
    for (std::optional<CacheWrite> write : {keys, values})
      if (write && !usersFollow(write->update.getResult(), op, replacedReaders))
        return rewriter.notifyMatchFailure(op, "updated cache read earlier");
    if (keyRopeOp && !keyRopeOp->hasOneUse())
      return rewriter.notifyMatchFailure(op, "rotated keys read elsewhere");
    for (const std::optional<CacheWrite> &write : {keys, values})
      if (write && write->gather &&
          !llvm::all_of(write->gather->getUsers(), [&](Operation *user) {
            return llvm::is_contained(replacedReaders, user);
          }))
        return rewriter.notifyMatchFailure(op, "paged view read elsewhere");

    SmallVector<Type> resultTypes = {op.getResult().getType(),
                                     keys->update.getResult().getType()};
    if (values)
      resultTypes.push_back(values->update.getResult().getType());
    Value init = emptyResult(rewriter, op.getLoc(),
                             cast<RankedTensorType>(op.getResult().getType()),
                             [&](int64_t) { return query; });
    auto decode = FlashDecodeOp::create(
        rewriter, op.getLoc(), resultTypes, query, keys->update.getNewRows(),
        values ? values->update.getNewRows() : Value(), init,
        keys->update.getCache(), values ? values->update.getCache() : Value(),
        positions, keys->update.getBlockTable(), op.getWindowAttr(),
        op.getScaleAttr(), queryRope, keyRope,
        rewriter.getI64IntegerAttr(tiles.decodeBlockKV),
        rewriter.getI64IntegerAttr(0));
    rewriter.replaceOp(op, decode.getResult());
    // The view and its rotation are dead now; drop them before the writes
    // they read are replaced by the kernel's later results.
    if (keyRopeOp)
      rewriter.eraseOp(keyRopeOp);
    for (const std::optional<CacheWrite> &write : {keys, values})
      if (write && write->gather && write->gather->use_empty())
        rewriter.eraseOp(write->gather);
    rewriter.replaceOp(keys->update, decode.getKeyCacheOut());
    if (values)
      rewriter.replaceOp(values->update, decode.getValueCacheOut());
    return success();
  }

  TileSizes tiles;
};

//===----------------------------------------------------------------------===//
// Phase 3: projections
//===----------------------------------------------------------------------===//

/// `fused_projection(input, weight, bias)` of type `resultType`
/// ([B, S, H, d]). One token per sequence (S = 1, a decode step) is projected
/// as ONE sequence of B tokens ([1, B, E]): the GEMM tiles then cover the
/// batch and read the weights once, not once per sequence.
Value createFusedProjection(PatternRewriter &rewriter, Location loc,
                            RankedTensorType resultType, Value input,
                            Value weight, Value bias, RopeAttr rope,
                            int64_t blockS, int64_t blockN, int64_t blockK,
                            bool foldBatch, bool transposedWeight = false) {
  int64_t headDim = resultType.getDimSize(3);
  auto build = [&](RankedTensorType type, Value source) -> Value {
    return FusedProjectionOp::create(
        rewriter, loc, type, source, weight, bias,
        /*token_offset=*/Value(),
        emptyResult(rewriter, loc, type, [&](int64_t) { return source; }),
        rewriter.getI64IntegerAttr(headDim), rope,
        rewriter.getI64IntegerAttr(blockS), rewriter.getI64IntegerAttr(blockN),
        rewriter.getI64IntegerAttr(blockK),
        transposedWeight ? rewriter.getUnitAttr() : UnitAttr());
  };
  auto inputType = cast<RankedTensorType>(input.getType());
  if (!foldBatch || inputType.getDimSize(1) != 1 ||
      inputType.getDimSize(0) == 1)
    return build(resultType, input);
  int64_t batch = inputType.getDimSize(0);
  OpFoldResult batchSize = tensor::getMixedSize(rewriter, loc, input, 0);
  Value flat = tensor::CollapseShapeOp::create(
      rewriter, loc, input, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  auto sequenceType = RankedTensorType::get({1, batch, inputType.getDimSize(2)},
                                            inputType.getElementType());
  Value sequence = tensor::ExpandShapeOp::create(
      rewriter, loc, sequenceType, flat,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}},
      SmallVector<OpFoldResult>{
          rewriter.getIndexAttr(1), batchSize,
          rewriter.getIndexAttr(inputType.getDimSize(2))});
  auto projectedType =
      RankedTensorType::get({1, batch, resultType.getDimSize(2), headDim},
                            resultType.getElementType());
  Value projected = build(projectedType, sequence);
  Value heads = tensor::CollapseShapeOp::create(
      rewriter, loc, projected,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  return tensor::ExpandShapeOp::create(
      rewriter, loc, resultType, heads,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}},
      SmallVector<OpFoldResult>{batchSize, rewriter.getIndexAttr(1),
                                rewriter.getIndexAttr(resultType.getDimSize(2)),
                                rewriter.getIndexAttr(headDim)});
}

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
    // A RoPE by token index fuses into this projection's epilogue next:
    // keep the projection where that pattern finds it.
    bool ropeByIndex = llvm::any_of(expand->getUsers(), [](Operation *user) {
      auto rope = dyn_cast<RoPEOp>(user);
      return rope && !rope.getPositions();
    });
    rewriter.replaceOp(
        expand, createFusedProjection(
                    rewriter, expand.getLoc(), expand.getResultType(),
                    project.getInput(), project.getWeight(), project.getBias(),
                    RopeAttr(), tiles.blockS, tiles.blockN, tiles.blockK,
                    /*foldBatch=*/!ropeByIndex));
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
        projection.getBias(), projection.getTokenOffset(), projection.getInit(),
        projection.getHeadDimAttr(), rope.getRope(), projection.getBlockSAttr(),
        rewriter.getI64IntegerAttr(blockN), projection.getBlockKAttr(),
        projection.getTransposedWeightAttr());
    return success();
  }
};

/// `[B, S, N]` = `input W^T (+ bias)` as a tiled GEMM: a `fused_projection`
/// with one head of all `N` output features, collapsed back to `[B, S, N]`.
/// With `transposedWeight`, `weight` is `W^T` as stored.
Value linearProjection(PatternRewriter &rewriter, Location loc,
                       RankedTensorType resultType, Value input, Value weight,
                       Value bias, const TileSizes &tiles,
                       bool transposedWeight = false) {
  int64_t features = resultType.getDimSize(2);
  auto headsType = RankedTensorType::get(
      {resultType.getDimSize(0), resultType.getDimSize(1), 1, features},
      resultType.getElementType());
  Value heads = createFusedProjection(
      rewriter, loc, headsType, input, weight, bias, RopeAttr(), tiles.blockS,
      tiles.blockN, tiles.blockK, /*foldBatch=*/true, transposedWeight);
  return tensor::CollapseShapeOp::create(
      rewriter, loc, resultType, heads,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
}

/// Any other `project(x, W, b)`, such as the up-projection, becomes a tiled
/// GEMM too.
struct FuseLinearProjection : OpRewritePattern<ProjectOp> {
  FuseLinearProjection(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(ProjectOp project,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        project, linearProjection(rewriter, project.getLoc(),
                                  cast<RankedTensorType>(project.getType()),
                                  project.getInput(), project.getWeight(),
                                  project.getBias(), tiles));
    return success();
  }

  TileSizes tiles;
};

/// `[B, S, F]` -> `[B * S, F]`: one row per token.
Value collapseTokens(PatternRewriter &rewriter, Location loc, Value tokens) {
  return tensor::CollapseShapeOp::create(
      rewriter, loc, tokens, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// A zero `[rows, columns]` tensor of `elementType`.
Value zeros(PatternRewriter &rewriter, Location loc, int64_t rows,
            int64_t columns, Type elementType) {
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, {rows, columns}, elementType);
  Value zero = arith::ConstantOp::create(rewriter, loc, elementType,
                                         rewriter.getZeroAttr(elementType));
  return linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
}

/// `dy^T x` over the token rows of `gradRows` `[tokens, out]` and
/// `inputRows` `[tokens, in]`: an attn.fused_weight_grad from zero.
Value weightGradOf(PatternRewriter &rewriter, Location loc, Value inputRows,
                   Value gradRows, const TileSizes &tiles) {
  auto gradType = cast<RankedTensorType>(gradRows.getType());
  int64_t outFeatures = gradType.getDimSize(1);
  int64_t inFeatures =
      cast<RankedTensorType>(inputRows.getType()).getDimSize(1);
  Type elementType = gradType.getElementType();
  return FusedWeightGradOp::create(
      rewriter, loc,
      RankedTensorType::get({outFeatures, inFeatures}, elementType), inputRows,
      gradRows, zeros(rewriter, loc, outFeatures, inFeatures, elementType),
      rewriter.getI64IntegerAttr(tiles.blockS),
      rewriter.getI64IntegerAttr(tiles.blockN),
      rewriter.getI64IntegerAttr(tiles.blockK));
}

/// `db = dy^T 1` over the token rows of `gradRows` `[tokens, out]`: the
/// weight gradient of a constant input feature, `[out]`.
Value biasGradOf(PatternRewriter &rewriter, Location loc, Value gradRows,
                 const TileSizes &tiles) {
  Type elementType = cast<RankedTensorType>(gradRows.getType()).getElementType();
  Value numTokens = tensor::DimOp::create(rewriter, loc, gradRows, 0);
  Value ones = tensor::EmptyOp::create(
      rewriter, loc, RankedTensorType::get({ShapedType::kDynamic, 1}, elementType),
      ValueRange{numTokens});
  Value one = arith::ConstantOp::create(rewriter, loc, elementType,
                                        rewriter.getFloatAttr(elementType, 1.0));
  ones = linalg::FillOp::create(rewriter, loc, one, ones).getResult(0);
  return tensor::CollapseShapeOp::create(
      rewriter, loc, weightGradOf(rewriter, loc, ones, gradRows, tiles),
      ArrayRef<ReassociationIndices>{{0, 1}});
}

/// `attn.project_grad` -> tiled GEMMs: `dx = dy W` is a projection of `dy`
/// by `W^T` (a fused_projection reading `W` as stored), `dW = dy^T x` and
/// `db = dy^T 1` are `attn.fused_weight_grad` over the tokens. Only the
/// gradients in use are computed.
struct FuseProjectGrad : OpRewritePattern<ProjectGradOp> {
  FuseProjectGrad(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(ProjectGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> replacements(3);
    if (!op.getInputGrad().use_empty())
      replacements[0] = linearProjection(
          rewriter, loc, cast<RankedTensorType>(op.getInputGrad().getType()),
          op.getResultGrad(), op.getWeight(), /*bias=*/Value(), tiles,
          /*transposedWeight=*/true);
    Value gradRows;
    if (!op.getWeightGrad().use_empty() || !op.getBiasGrad().use_empty())
      gradRows = collapseTokens(rewriter, loc, op.getResultGrad());
    if (!op.getWeightGrad().use_empty())
      replacements[1] = weightGradOf(
          rewriter, loc, collapseTokens(rewriter, loc, op.getInput()), gradRows,
          tiles);
    if (!op.getBiasGrad().use_empty())
      replacements[2] = biasGradOf(rewriter, loc, gradRows, tiles);
    // Unused results get the values of a dead op: none are left in use.
    for (auto [result, replacement] :
         llvm::zip_equal(op->getResults(), replacements))
      if (replacement)
        rewriter.replaceAllUsesWith(result, replacement);
    rewriter.eraseOp(op);
    return success();
  }

  TileSizes tiles;
};

/// Groups at least this wide make a grouped convolution's GEMMs worth their
/// tiles; narrower ones (a depthwise convolution) keep the reference loops.
constexpr int64_t kMinConvGroupWidth = 16;

/// `input [B, S, C]` with `padding` zero steps in front.
Value padSteps(PatternRewriter &rewriter, Location loc, Value input,
               int64_t padding) {
  if (padding == 0)
    return input;
  auto type = cast<RankedTensorType>(input.getType());
  OpFoldResult zero = rewriter.getIndexAttr(0);
  Value zeroValue =
      arith::ConstantOp::create(rewriter, loc, type.getElementType(),
                                rewriter.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(
      rewriter, loc,
      RankedTensorType::get({type.getDimSize(0), ShapedType::kDynamic,
                             type.getDimSize(2)},
                            type.getElementType()),
      input, SmallVector<OpFoldResult>{zero, rewriter.getIndexAttr(padding),
                                       zero},
      SmallVector<OpFoldResult>(3, zero), zeroValue);
}

/// The taps of group `group` (channels `group * width ..`) of the padded
/// input side by side: `[B, outSeq, taps * width]`, column `k * width + i`
/// holding `padded[b, t + k, group * width + i]`.
Value unfoldTaps(PatternRewriter &rewriter, Location loc, Value padded,
                 int64_t group, int64_t width, int64_t taps,
                 OpFoldResult outSeq) {
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  OpFoldResult batch = tensor::getMixedSize(rewriter, loc, padded, 0);
  SmallVector<Value> shifted;
  for (int64_t tap = 0; tap < taps; ++tap)
    shifted.push_back(tensor::ExtractSliceOp::create(
        rewriter, loc, padded,
        SmallVector<OpFoldResult>{zero, rewriter.getIndexAttr(tap),
                                  rewriter.getIndexAttr(group * width)},
        SmallVector<OpFoldResult>{batch, outSeq, rewriter.getIndexAttr(width)},
        SmallVector<OpFoldResult>(3, one)));
  if (taps == 1)
    return shifted.front();
  return tensor::ConcatOp::create(rewriter, loc, 2, shifted).getResult();
}

/// Whether a convolution of `input [B, S, C]` by `weight [C, width, taps]`
/// in `groups` groups has groups wide enough for GEMMs.
bool hasWideGroups(Value input, Value weight, int64_t groups) {
  int64_t channels = cast<RankedTensorType>(input.getType()).getDimSize(2);
  int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  return !ShapedType::isDynamic(channels) && width >= kMinConvGroupWidth &&
         width * groups == channels;
}

/// The block `[width, width, taps]` (out, in, tap) of group `group` of a
/// convolution weight `[C, width, taps]`, with its dimensions in the order
/// `permutation` and the two groups of `reassociation` collapsed.
Value convWeightBlock(PatternRewriter &rewriter, Location loc, Value weight,
                      int64_t group, int64_t width, int64_t taps,
                      ArrayRef<int64_t> permutation,
                      ArrayRef<ReassociationIndices> reassociation) {
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  Value block = tensor::ExtractSliceOp::create(
      rewriter, loc, weight,
      SmallVector<OpFoldResult>{rewriter.getIndexAttr(group * width), zero,
                                zero},
      SmallVector<OpFoldResult>{rewriter.getIndexAttr(width),
                                rewriter.getIndexAttr(width),
                                rewriter.getIndexAttr(taps)},
      SmallVector<OpFoldResult>(3, one));
  return tensor::CollapseShapeOp::create(
      rewriter, loc, createBlockedTranspose(rewriter, loc, block, permutation),
      reassociation);
}

/// A grouped `attn.causal_conv1d` (groups at least kMinConvGroupWidth wide)
/// -> one attn.project per group of its unfolded taps by its unfolded
/// weight block (with the group's bias), the groups concatenated.
struct FuseGroupedConv : OpRewritePattern<CausalConv1DOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CausalConv1DOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto weightType = cast<RankedTensorType>(op.getWeight().getType());
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    const int64_t groups = op.getGroups();
    const int64_t width = weightType.getDimSize(1);
    const int64_t taps = weightType.getDimSize(2);
    if (!hasWideGroups(op.getInput(), op.getWeight(), groups))
      return rewriter.notifyMatchFailure(op, "not a grouped convolution");
    OpFoldResult outSeq =
        arith::AddIOp::create(
            rewriter, loc,
            tensor::DimOp::create(rewriter, loc, op.getInput(), 1),
            arith::ConstantIndexOp::create(rewriter, loc,
                                           op.getPadding() - (taps - 1)))
            .getResult();
    Value padded = padSteps(rewriter, loc, op.getInput(), op.getPadding());
    SmallVector<Value> outputs;
    for (int64_t group = 0; group < groups; ++group) {
      Value bias;
      if (op.getBias())
        bias = tensor::ExtractSliceOp::create(
            rewriter, loc, op.getBias(),
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(group * width)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(width)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
      Value unfolded =
          unfoldTaps(rewriter, loc, padded, group, width, taps, outSeq);
      auto unfoldedType = cast<RankedTensorType>(unfolded.getType());
      outputs.push_back(ProjectOp::create(
          rewriter, loc,
          RankedTensorType::get({unfoldedType.getDimSize(0),
                                 unfoldedType.getDimSize(1), width},
                                resultType.getElementType()),
          unfolded,
          // [out, taps * in]: column k * width + i is w[g width + o, i, k].
          convWeightBlock(rewriter, loc, op.getWeight(), group, width, taps,
                          {0, 2, 1}, {{0}, {1, 2}}),
          bias));
    }
    Value result = groups == 1 ? outputs.front()
                               : tensor::ConcatOp::create(rewriter, loc, 2,
                                                          outputs)
                                     .getResult();
    if (result.getType() != resultType)
      result = tensor::CastOp::create(rewriter, loc, resultType, result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// `attn.causal_conv1d_grad` of a grouped convolution (every group at least
/// kMinConvGroupWidth channels wide) -> per group, the GEMMs of its block of
/// the weight: with `x_k` the padded input shifted by tap k (the forward's
/// `y[t] = b + sum_k W_k x[t + k]`, padding zeros in front),
///   dW_g = dy_g^T [x_0 | x_1 | ...]_g  (one attn.fused_weight_grad over the
///          tokens against the taps side by side, `[Cg, K * Cg]`),
///   z_g  = dy_g [W_0 | W_1 | ...]_g    (one attn.project, `[.., K * Cg]`),
///   dx_g[s] = sum_k z_g[s + padding - k, tap k],
/// and db = dy^T 1. The reference lowering's loops stream the whole weight
/// gradient once per token (9 GFLOP/s for ZAYA1's grouped convolution at S
/// 2048); depthwise convolutions (one channel per group) stay there.
struct FuseGroupedConvGrad : OpRewritePattern<CausalConv1DGradOp> {
  FuseGroupedConvGrad(MLIRContext *context, TileSizes tiles)
      : OpRewritePattern(context), tiles(tiles) {}

  LogicalResult matchAndRewrite(CausalConv1DGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto weightType = cast<RankedTensorType>(op.getWeight().getType());
    Type elementType = inputType.getElementType();
    const int64_t groups = op.getGroups();
    const int64_t width = weightType.getDimSize(1);
    const int64_t taps = weightType.getDimSize(2);
    const int64_t padding = op.getPadding();
    if (!hasWideGroups(op.getInput(), op.getWeight(), groups))
      return rewriter.notifyMatchFailure(op, "not a grouped convolution");
    MLIRContext *context = rewriter.getContext();
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);
    OpFoldResult batch = tensor::getMixedSize(rewriter, loc, op.getInput(), 0);
    OpFoldResult seq = tensor::getMixedSize(rewriter, loc, op.getInput(), 1);
    OpFoldResult outSeq =
        tensor::getMixedSize(rewriter, loc, op.getResultGrad(), 1);
    Value dy = op.getResultGrad();
    auto slice = [&](Value source, ArrayRef<OpFoldResult> offsets,
                     ArrayRef<OpFoldResult> sizes) -> Value {
      return tensor::ExtractSliceOp::create(
          rewriter, loc, source, offsets, sizes,
          SmallVector<OpFoldResult>(offsets.size(), one));
    };
    Value padded = padSteps(rewriter, loc, op.getInput(), padding);
    Value gradRows = collapseTokens(rewriter, loc, dy);
    OpFoldResult rows = tensor::getMixedSize(rewriter, loc, gradRows, 0);

    SmallVector<Value> inputGrads, weightGrads;
    for (int64_t group = 0; group < groups; ++group) {
      OpFoldResult first = rewriter.getIndexAttr(group * width);
      OpFoldResult groupWidth = rewriter.getIndexAttr(width);
      Value gradColumns = slice(gradRows, {zero, first}, {rows, groupWidth});
      if (!op.getWeightGrad().use_empty()) {
        // The taps of the group's input side by side: [tokens, K * Cg].
        Value unfolded = collapseTokens(
            rewriter, loc,
            unfoldTaps(rewriter, loc, padded, group, width, taps, outSeq));
        Value grad =
            weightGradOf(rewriter, loc, unfolded, gradColumns, tiles);
        // [Cg, K, Cg] -> the weight's [Cg, Cg, K].
        Value byTap = tensor::ExpandShapeOp::create(
            rewriter, loc,
            RankedTensorType::get({width, taps, width}, elementType), grad,
            ArrayRef<ReassociationIndices>{{0}, {1, 2}});
        weightGrads.push_back(
            createBlockedTranspose(rewriter, loc, byTap, {0, 2, 1}));
      }
      if (!op.getInputGrad().use_empty()) {
        // [W_0 | W_1 | ..]_g^T as a projection weight [K * Cg, Cg]:
        // row k * Cg + i, column o is w[g Cg + o, i, k].
        Value projectionWeight =
            convWeightBlock(rewriter, loc, op.getWeight(), group, width, taps,
                            {2, 1, 0}, {{0, 1}, {2}});
        Value groupGrad = slice(dy, {zero, zero, first},
                                {batch, outSeq, groupWidth});
        auto gradType = cast<RankedTensorType>(groupGrad.getType());
        Value perTap = ProjectOp::create(
            rewriter, loc,
            RankedTensorType::get({gradType.getDimSize(0),
                                   gradType.getDimSize(1), taps * width},
                                  elementType),
            groupGrad, projectionWeight, /*bias=*/Value());
        // dx[b, s, i] = sum_k z[b, s + padding - k, k, i]: z padded with
        // K - 1 zero steps on both sides so every read is inside it.
        Value byTap = tensor::ExpandShapeOp::create(
            rewriter, loc,
            RankedTensorType::get({gradType.getDimSize(0),
                                   gradType.getDimSize(1), taps, width},
                                  elementType),
            perTap, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}},
            SmallVector<OpFoldResult>{batch, outSeq,
                                      rewriter.getIndexAttr(taps),
                                      groupWidth});
        Value zeroValue = arith::ConstantOp::create(
            rewriter, loc, elementType, rewriter.getZeroAttr(elementType));
        SmallVector<OpFoldResult> low = {
            zero, rewriter.getIndexAttr(taps - 1), zero, zero};
        Value zPadded = tensor::PadOp::create(
            rewriter, loc,
            RankedTensorType::get({gradType.getDimSize(0), ShapedType::kDynamic,
                                   taps, width},
                                  elementType),
            byTap, low, low, zeroValue);
        // Tap k's rows: z[b, s + padding - k, k, :] for s < S.
        SmallVector<Value> inputs;
        auto rowsType = RankedTensorType::get(
            {gradType.getDimSize(0), inputType.getDimSize(1), width},
            elementType);
        for (int64_t tap = 0; tap < taps; ++tap)
          inputs.push_back(tensor::ExtractSliceOp::create(
              rewriter, loc, rowsType, zPadded,
              SmallVector<OpFoldResult>{
                  zero, rewriter.getIndexAttr(padding + taps - 1 - tap),
                  rewriter.getIndexAttr(tap), zero},
              SmallVector<OpFoldResult>{batch, seq, one, groupWidth},
              SmallVector<OpFoldResult>(4, one)));
        SmallVector<AffineMap> maps(
            taps + 1, AffineMap::getMultiDimIdentityMap(3, context));
        Value init = tensor::EmptyOp::create(
            rewriter, loc, SmallVector<OpFoldResult>{batch, seq, groupWidth},
            elementType);
        Type computeType = elementType.getIntOrFloatBitWidth() < 32
                               ? Type(rewriter.getF32Type())
                               : elementType;
        inputGrads.push_back(
            linalg::GenericOp::create(
                rewriter, loc, init.getType(), inputs, init, maps,
                SmallVector<utils::IteratorType>(3,
                                                 utils::IteratorType::parallel),
                [&](OpBuilder &nb, Location l, ValueRange args) {
                  auto widen = [&](Value value) -> Value {
                    return value.getType() == computeType
                               ? value
                               : arith::ExtFOp::create(nb, l, computeType,
                                                       value);
                  };
                  Value sum = widen(args[0]);
                  for (int64_t tap = 1; tap < taps; ++tap)
                    sum = arith::AddFOp::create(nb, l, sum, widen(args[tap]));
                  if (computeType != elementType)
                    sum = arith::TruncFOp::create(nb, l, elementType, sum);
                  linalg::YieldOp::create(nb, l, sum);
                })
                .getResult(0));
      }
    }
    SmallVector<Value> replacements(3);
    if (!inputGrads.empty())
      replacements[0] =
          groups == 1 ? inputGrads.front()
                      : tensor::ConcatOp::create(rewriter, loc, 2, inputGrads)
                            .getResult();
    if (!weightGrads.empty())
      replacements[1] =
          groups == 1 ? weightGrads.front()
                      : tensor::ConcatOp::create(rewriter, loc, 0, weightGrads)
                            .getResult();
    if (!op.getBiasGrad().use_empty())
      replacements[2] = biasGradOf(rewriter, loc, gradRows, tiles);
    for (auto [result, replacement] :
         llvm::zip_equal(op->getResults(), replacements)) {
      if (!replacement)
        continue;
      if (replacement.getType() != result.getType())
        replacement = tensor::CastOp::create(rewriter, loc, result.getType(),
                                             replacement);
      rewriter.replaceAllUsesWith(result, replacement);
    }
    rewriter.eraseOp(op);
    return success();
  }

  TileSizes tiles;
};

/// `fused_weight_grad(a) + fused_weight_grad(b)` (the gradient of a weight
/// that two projections share) -> one accumulating into the other's result.
struct AccumulateWeightGrads : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    auto first = add.getLhs().getDefiningOp<FusedWeightGradOp>();
    auto second = add.getRhs().getDefiningOp<FusedWeightGradOp>();
    auto zeroInit = [](FusedWeightGradOp op) {
      auto fill = op.getInit().getDefiningOp<linalg::FillOp>();
      return fill && matchPattern(fill.value(), m_AnyZeroFloat());
    };
    if (!first || !second || first == second || !second->hasOneUse() ||
        !zeroInit(second))
      return rewriter.notifyMatchFailure(add, "not two weight gradients");
    // The accumulating op takes the add's place, after its new init.
    rewriter.replaceOpWithNewOp<FusedWeightGradOp>(
        add, add.getType(), second.getInput(), second.getResultGrad(),
        first.getResult(), second.getBlockMAttr(), second.getBlockNAttr(),
        second.getBlockKAttr());
    if (second->use_empty())
      rewriter.eraseOp(second);
    return success();
  }
};

struct AttnFusePass : public attnfuse::attn::impl::AttnFuseBase<AttnFusePass> {
  using AttnFuseBase::AttnFuseBase;

  void runOnOperation() override {
    AttnFuseOptions options{blockQ, blockKV,       blockS,          blockN,
                            blockK, decodeBlockKV, groupedConvGemms};
    if (failed(applyAttnFusePatterns(getOperation(), options)))
      return signalPassFailure();
  }
};

} // namespace

static TileSizes getTileSizes(const AttnFuseOptions &options) {
  return {options.blockQ, options.blockKV, options.blockS,
          options.blockN, options.blockK,  options.decodeBlockKV};
}

void attnfuse::attn::populateAttnFusePatterns(RewritePatternSet &patterns,
                                              AttnFusePhase phase,
                                              const AttnFuseOptions &options) {
  MLIRContext *context = patterns.getContext();
  TileSizes tiles = getTileSizes(options);
  switch (phase) {
  case AttnFusePhase::Prologue:
    patterns.add<FuseCCAPrologue>(context, tiles);
    patterns.add<FuseCCADecodePrologue>(context);
    return;
  case AttnFusePhase::Attention:
    patterns.add<FuseFlashDecode, FuseFlashAttention, FuseFlashAttentionGrad>(
        context, tiles);
    return;
  case AttnFusePhase::Projections:
    patterns.add<FuseHeadProjection>(context, tiles);
    patterns.add<FuseProjectionRope>(context);
    return;
  case AttnFusePhase::Gemms:
    patterns.add<FuseLinearProjection, FuseProjectGrad>(context, tiles);
    if (options.groupedConvGemms) {
      patterns.add<FuseGroupedConvGrad>(context, tiles);
      patterns.add<FuseGroupedConv>(context);
    }
    patterns.add<AccumulateWeightGrads>(context);
    return;
  }
}

LogicalResult
attnfuse::attn::applyAttnFusePatterns(Operation *root,
                                      const AttnFuseOptions &options) {
  for (auto [name, size] :
       {std::pair<StringRef, int64_t>{"block-q", options.blockQ},
        {"block-kv", options.blockKV},
        {"block-s", options.blockS},
        {"block-n", options.blockN},
        {"block-k", options.blockK},
        {"decode-block-kv", options.decodeBlockKV}}) {
    if (size <= 0)
      return root->emitError()
             << "attn-fuse: " << name << " must be positive, got " << size;
  }
  // Each phase runs to a fixpoint before the next sees the IR: the attention
  // patterns match the prologue's results, the projection patterns what the
  // attention patterns left.
  for (AttnFusePhase phase :
       {AttnFusePhase::Prologue, AttnFusePhase::Attention,
        AttnFusePhase::Projections, AttnFusePhase::Gemms}) {
    RewritePatternSet patterns(root->getContext());
    populateAttnFusePatterns(patterns, phase, options);
    if (failed(applyPatternsGreedily(root, std::move(patterns))))
      return failure();
  }
  return success();
}

Value attnfuse::attn::createBlockedTranspose(RewriterBase &rewriter,
                                             Location loc, Value source,
                                             ArrayRef<int64_t> permutation) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<int64_t> shape;
  for (int64_t dim : permutation)
    shape.push_back(type.getDimSize(dim));
  Value init =
      tensor::EmptyOp::create(rewriter, loc, shape, type.getElementType());
  auto transpose =
      linalg::TransposeOp::create(rewriter, loc, source, init, permutation);
  constexpr int64_t kBlock = 64;
  // (Without the linalg TilingInterface models registered, element by
  // element.)
  auto tileable = dyn_cast<TilingInterface>(transpose.getOperation());
  if (!tileable || type.getRank() != 2 || !type.hasStaticShape() ||
      type.getDimSize(0) < 2 * kBlock || type.getDimSize(1) < 2 * kBlock)
    return transpose.getResult()[0];
  scf::SCFTilingOptions options;
  options.setTileSizes(
      {rewriter.getIndexAttr(kBlock), rewriter.getIndexAttr(kBlock)});
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, tileable, options);
  if (failed(tiled))
    return transpose.getResult()[0];
  rewriter.replaceOp(transpose, tiled->replacements);
  return tiled->replacements.front();
}
