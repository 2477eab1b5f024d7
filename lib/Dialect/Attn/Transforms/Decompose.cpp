//===- Decompose.cpp - attn layer ops to primitives -------------*- C++ -*-===//
//
// Rewrites the layer ops `attn.qkv_attention` and `attn.cca`, and their
// decode forms over a KV cache, into the primitive attn ops plus `tensor`
// reshapes, following docs/semantics.md step by step.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSE
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse::attn;

namespace {

/// Builds the primitive ops of one layer at the layer op's location.
class LayerBuilder {
public:
  LayerBuilder(PatternRewriter &rewriter, Location loc, Value input)
      : rewriter(rewriter), loc(loc), input(input), projected(input),
        inputType(cast<RankedTensorType>(input.getType())) {}

  /// `[B, S, width]` with the input's batch and sequence.
  RankedTensorType activationType(int64_t width, int64_t seq) const {
    return RankedTensorType::get({inputType.getDimSize(0), seq, width},
                                 inputType.getElementType());
  }
  RankedTensorType activationType(int64_t width) const {
    return activationType(width, inputType.getDimSize(1));
  }

  /// `x W^T + b` over `source`.
  Value project(Value source, Value weight, Value bias = {}) {
    int64_t outFeatures =
        cast<RankedTensorType>(weight.getType()).getDimSize(0);
    return ProjectOp::create(rewriter, loc, activationType(outFeatures), source,
                             weight, bias);
  }

  /// `[B, S, H * d]` -> `[B, S, H, d]`. Dynamic batch and sequence sizes
  /// are read off the layer input, which every activation shares, so the
  /// split does not keep its producer alive for shape queries.
  Value splitHeads(Value flat, int64_t headDim) {
    auto type = cast<RankedTensorType>(flat.getType());
    int64_t heads = type.getDimSize(2) / headDim;
    auto headsType = RankedTensorType::get(
        {type.getDimSize(0), type.getDimSize(1), heads, headDim},
        type.getElementType());
    SmallVector<OpFoldResult> outputShape = {
        tensor::getMixedSize(rewriter, loc, input, 0),
        tensor::getMixedSize(rewriter, loc, input, 1),
        rewriter.getIndexAttr(heads), rewriter.getIndexAttr(headDim)};
    return tensor::ExpandShapeOp::create(
        rewriter, loc, headsType, flat,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}}, outputShape);
  }

  /// `[B, S, H, d]` -> `[B, S, H * d]`.
  Value mergeHeads(Value heads) {
    return tensor::CollapseShapeOp::create(
        rewriter, loc, heads, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
  }

  /// Channels `[offset, offset + width)` of a `[B, S, C]` tensor.
  Value sliceChannels(Value source, int64_t offset, int64_t width) {
    SmallVector<OpFoldResult> offsets = {rewriter.getIndexAttr(0),
                                         rewriter.getIndexAttr(0),
                                         rewriter.getIndexAttr(offset)};
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, source);
    sizes[2] = rewriter.getIndexAttr(width);
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(rewriter, loc, source, offsets, sizes,
                                          strides);
  }

  /// RoPE of `heads`; token t of sequence b at `positions[b] + t`, or at t
  /// without positions.
  Value rope(Value heads, RopeAttr ropeAttr, Value positions = {}) {
    if (!ropeAttr)
      return heads;
    return RoPEOp::create(rewriter, loc, heads.getType(), heads, positions,
                          ropeAttr);
  }

  Value sdpa(Value query, Value key, Value value, Value bias, bool causal,
             IntegerAttr window, FloatAttr scale, Value positions = {},
             Value keyMask = {}) {
    auto queryType = cast<RankedTensorType>(query.getType());
    auto valueType = cast<RankedTensorType>(value.getType());
    auto resultType = RankedTensorType::get(
        {queryType.getDimSize(0), queryType.getDimSize(1),
         queryType.getDimSize(2), valueType.getDimSize(3)},
        queryType.getElementType());
    return SDPAOp::create(rewriter, loc, resultType, /*lse=*/Type(), query,
                          key, value, bias, positions, keyMask,
                          causal ? rewriter.getUnitAttr() : UnitAttr(), window,
                          scale)
        .getResult();
  }

  /// The layer result may be less (or more) static than the input it is
  /// derived from; cast the rebuilt value back to the op's result type.
  Value castTo(Value value, Type type) {
    if (value.getType() == type)
      return value;
    return tensor::CastOp::create(rewriter, loc, type, value);
  }

  PatternRewriter &rewriter;
  Location loc;
  /// The layer input: its sizes are those of every activation.
  Value input;
  /// What the projections read: the input, with a padding mask the input
  /// with its padded tokens zeroed.
  Value projected;
  RankedTensorType inputType;
};

/// The query, key and value heads of a projection-sharing layer: each
/// distinct projection is computed once and tied roles reuse it.
template <typename SharingOp>
static std::tuple<Value, Value, Value> projectSharedHeads(LayerBuilder &b,
                                                          SharingOp op) {
  int64_t headDim = op.getHeadDim();
  Value key = b.splitHeads(b.project(b.input, op.getWk(), op.getBk()), headDim);
  Value query =
      op.sharesQueryKey()
          ? key
          : b.splitHeads(b.project(b.input, op.getWq(), op.getBq()), headDim);
  Value value =
      op.sharesKeyValue()
          ? key
          : b.splitHeads(b.project(b.input, op.getWv(), op.getBv()), headDim);
  return {query, key, value};
}

struct DecomposeQKVAttention : OpRewritePattern<QKVAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QKVAttentionOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op.getLoc(), op.getInput());

    auto [query, key, value] = projectSharedHeads(b, op);

    // Scores use rotated queries and keys; values stay un-rotated, so for
    // K=V the value is the un-rotated shared tensor.
    Value rotatedKey = b.rope(key, op.getRopeAttr());
    Value rotatedQuery =
        op.sharesQueryKey() ? rotatedKey : b.rope(query, op.getRopeAttr());

    Value attention =
        b.sdpa(rotatedQuery, rotatedKey, value, op.getLogitBias(),
               op.getCausal(), op.getWindowAttr(), op.getScaleAttr());
    Value output = b.project(b.mergeHeads(attention), op.getWo(), op.getBo());
    rewriter.replaceOp(op, b.castTo(output, op.getType()));
    return success();
  }
};

/// Steps 1 to 5 of a CCA layer (attn.cca or its decode form), shared by
/// both decompositions.
struct CCASteps {
  Value queryRaw, keyRaw, packed; // x Wq^T, x Wk^T, u = concat(qr, kr)
  QKNormOp norm;                  // the normalized query and key
  Value previous;                 // x Wv_prev^T with value_shift
  Value value;                    // [B, S, Lk] values
};

/// Builds the steps of `op`. The convolutions run over `convState | u`
/// without padding when a decoder's `convState` is given, else over `u`
/// padded once by P; `shiftState` is the decoder's previous value half.
template <typename CCALikeOp>
static CCASteps buildCCASteps(LayerBuilder &b, CCALikeOp op, Value convState,
                              Value shiftState) {
  PatternRewriter &rewriter = b.rewriter;
  Location loc = b.loc;
  int64_t headDim = op.getHeadDim();
  int64_t queryLatent = op.getQueryLatentDim();
  int64_t keyLatent = op.getKeyLatentDim();
  int64_t channels = op.getConvChannels();
  ArrayRef<int64_t> kernels = op.getConvKernelSizes();
  CCASteps steps;

  // 1. Down-projections, packed as u = concat(qr, kr).
  steps.queryRaw = b.project(b.projected, op.getWq());
  steps.keyRaw = b.project(b.projected, op.getWk());
  steps.packed = tensor::ConcatOp::create(
      rewriter, loc, /*dim=*/2, ValueRange{steps.queryRaw, steps.keyRaw});

  // 2. A depthwise and a grouped valid convolution over the padded
  // sequence: the first yields S + k1 - 1 steps, the second S. A decoder's
  // state stands in for the padding.
  Value convInput = steps.packed;
  int64_t padding = op.getConvPadding();
  if (convState) {
    convInput = tensor::ConcatOp::create(rewriter, loc, /*dim=*/1,
                                         ValueRange{convState, steps.packed});
    padding = 0;
  }
  int64_t seq = b.inputType.getDimSize(1);
  int64_t midSeq =
      ShapedType::isDynamic(seq) ? ShapedType::kDynamic : seq + kernels[1] - 1;
  Value depthwise = CausalConv1DOp::create(
      rewriter, loc, b.activationType(channels, midSeq), convInput,
      op.getConvDwWeight(), op.getConvDwBias(),
      rewriter.getI64IntegerAttr(channels),
      rewriter.getI64IntegerAttr(padding));
  Value grouped = CausalConv1DOp::create(
      rewriter, loc, b.activationType(channels), depthwise, op.getConvGWeight(),
      op.getConvGBias(),
      rewriter.getI64IntegerAttr(op.getNumHeads() + op.getNumKvHeads()),
      rewriter.getI64IntegerAttr(0));

  Value query = b.splitHeads(b.sliceChannels(grouped, 0, queryLatent), headDim);
  Value key =
      b.splitHeads(b.sliceChannels(grouped, queryLatent, keyLatent), headDim);

  // 3. QK-mean residual from the pre-conv projections.
  if (op.getQkMean()) {
    auto mean = QKMeanOp::create(rewriter, loc, query, key,
                                 b.splitHeads(steps.queryRaw, headDim),
                                 b.splitHeads(steps.keyRaw, headDim));
    query = mean.getQ();
    key = mean.getK();
  }

  // 4. L2 norm and key temperature.
  steps.norm = QKNormOp::create(rewriter, loc, query, key, op.getTemp(),
                                op.getTemperatureAttr(), op.getEpsAttr(),
                                op.getNormAttr());

  // 5. Values, optionally shifted by one token for half of the heads.
  if (op.getValueShift()) {
    Value current = b.project(b.projected, op.getWv());
    steps.previous = b.project(b.projected, op.getWvPrev());
    steps.value =
        ValueShiftOp::create(rewriter, loc, b.activationType(keyLatent),
                             current, steps.previous, shiftState);
  } else {
    steps.value = b.project(b.projected, op.getWv());
  }
  return steps;
}

struct DecomposeCCA : OpRewritePattern<CCAOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CCAOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op.getLoc(), op.getInput());
    // Padded tokens are zero rows of x for every projection (there are no
    // projection biases, so their u, v and delayed v are zero) and masked
    // keys of the attention.
    Value paddingMask = op.getPaddingMask();
    if (paddingMask)
      b.projected = MaskTokensOp::create(rewriter, b.loc, b.input.getType(),
                                         b.input, paddingMask);
    CCASteps steps = buildCCASteps(b, op, /*convState=*/{}, /*shiftState=*/{});

    // 6. RoPE in latent space, 7. attention and up-projection.
    Value rotatedQuery = b.rope(steps.norm.getQOut(), op.getRopeAttr());
    Value rotatedKey = b.rope(steps.norm.getKOut(), op.getRopeAttr());
    Value attention = b.sdpa(
        rotatedQuery, rotatedKey, b.splitHeads(steps.value, op.getHeadDim()),
        /*bias=*/{}, op.getCausal(), op.getWindowAttr(), /*scale=*/{},
        /*positions=*/{}, paddingMask);
    Value output = b.project(b.mergeHeads(attention), op.getWo());
    rewriter.replaceOp(op, b.castTo(output, op.getType()));
    return success();
  }
};

/// The cache side of a decode layer: writes the new rows and returns the
/// updated cache and its per-sequence view (gathered when paged).
struct CacheAccess {
  Value updated;
  Value view;
};

template <typename DecodeOp>
static CacheAccess updateCache(LayerBuilder &b, DecodeOp op, Value cache,
                               Value newRows) {
  Value updated = CacheUpdateOp::create(b.rewriter, b.loc, cache.getType(),
                                        cache, newRows, op.getPositions(),
                                        op.getLengths(), op.getBlockTable());
  Value blockTable = op.getBlockTable();
  if (!blockTable)
    return {updated, updated};
  auto cacheType = cast<RankedTensorType>(cache.getType());
  auto tableType = cast<RankedTensorType>(blockTable.getType());
  int64_t pageSize = cacheType.getDimSize(1);
  int64_t pages = tableType.getDimSize(1);
  int64_t capacity =
      ShapedType::isDynamic(pageSize) || ShapedType::isDynamic(pages)
          ? ShapedType::kDynamic
          : pageSize * pages;
  auto viewType =
      RankedTensorType::get({tableType.getDimSize(0), capacity,
                             cacheType.getDimSize(2), cacheType.getDimSize(3)},
                            cacheType.getElementType());
  Value view =
      CacheGatherOp::create(b.rewriter, b.loc, viewType, updated, blockTable);
  return {updated, view};
}

struct DecomposeQKVDecode : OpRewritePattern<QKVDecodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QKVDecodeOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op.getLoc(), op.getInput());
    Value positions = op.getPositions();

    auto [query, key, value] = projectSharedHeads(b, op);

    // The cache holds un-rotated keys: for K=V they are the values too.
    CacheAccess keys = updateCache(b, op, op.getKeyCache(), key);
    CacheAccess values = op.sharesKeyValue()
                             ? keys
                             : updateCache(b, op, op.getValueCache(), value);

    // Scores rotate the new queries at their positions and the cached keys
    // at theirs (row j of the view is position j).
    Value rotatedQuery = b.rope(query, op.getRopeAttr(), positions);
    Value rotatedKeys = b.rope(keys.view, op.getRopeAttr());
    Value attention = b.sdpa(
        rotatedQuery, rotatedKeys, values.view, /*bias=*/{},
        /*causal=*/true, op.getWindowAttr(), op.getScaleAttr(), positions);
    Value output = b.project(b.mergeHeads(attention), op.getWo(), op.getBo());

    SmallVector<Value> results = {b.castTo(output, op.getResult().getType()),
                                  keys.updated};
    if (!op.sharesKeyValue())
      results.push_back(values.updated);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct DecomposeCCADecode : OpRewritePattern<CCADecodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CCADecodeOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op.getLoc(), op.getInput());
    Value positions = op.getPositions(), lengths = op.getLengths();
    CCASteps steps =
        buildCCASteps(b, op, op.getConvState(), op.getShiftState());

    // The states keep the last P pre-conv vectors and the last value half.
    Value convState =
        StateUpdateOp::create(rewriter, b.loc, op.getConvState().getType(),
                              op.getConvState(), steps.packed, lengths);
    Value shiftState;
    if (op.getValueShift())
      shiftState =
          StateUpdateOp::create(rewriter, b.loc, op.getShiftState().getType(),
                                op.getShiftState(), steps.previous, lengths);

    // 6. RoPE at the new tokens' positions; the cache holds the final keys.
    Value rotatedQuery =
        b.rope(steps.norm.getQOut(), op.getRopeAttr(), positions);
    Value rotatedKey =
        b.rope(steps.norm.getKOut(), op.getRopeAttr(), positions);
    CacheAccess keys = updateCache(b, op, op.getKeyCache(), rotatedKey);
    CacheAccess values = updateCache(
        b, op, op.getValueCache(), b.splitHeads(steps.value, op.getHeadDim()));

    // 7. Attention over the cache and up-projection.
    Value attention = b.sdpa(rotatedQuery, keys.view, values.view,
                             /*bias=*/{}, /*causal=*/true, op.getWindowAttr(),
                             /*scale=*/{}, positions);
    Value output = b.project(b.mergeHeads(attention), op.getWo());

    SmallVector<Value> results = {b.castTo(output, op.getResult().getType()),
                                  keys.updated, values.updated, convState};
    if (shiftState)
      results.push_back(shiftState);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct AttnDecomposePass
    : public attnfuse::attn::impl::AttnDecomposeBase<AttnDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateAttnDecomposePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void attnfuse::attn::populateAttnDecomposePatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeQKVAttention, DecomposeCCA, DecomposeQKVDecode,
               DecomposeCCADecode>(patterns.getContext());
}
