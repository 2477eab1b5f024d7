//===- Decompose.cpp - attn layer ops to primitives -------------*- C++ -*-===//
//
// Rewrites the layer ops `attn.qkv_attention` and `attn.cca` into the
// primitive attn ops plus `tensor` reshapes, following the attention-variants
// spec step by step.
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
      : rewriter(rewriter), loc(loc), input(input),
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
    return ProjectOp::create(rewriter, loc, activationType(outFeatures),
                             source, weight, bias);
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
        rewriter, loc, heads,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
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
    return tensor::ExtractSliceOp::create(rewriter, loc, source, offsets,
                                          sizes, strides);
  }

  Value rope(Value heads, RopeAttr ropeAttr) {
    if (!ropeAttr)
      return heads;
    return RoPEOp::create(rewriter, loc, heads.getType(), heads, ropeAttr);
  }

  Value sdpa(Value query, Value key, Value value, Value bias, bool causal,
             IntegerAttr window, FloatAttr scale) {
    auto queryType = cast<RankedTensorType>(query.getType());
    auto valueType = cast<RankedTensorType>(value.getType());
    auto resultType = RankedTensorType::get(
        {queryType.getDimSize(0), queryType.getDimSize(1),
         queryType.getDimSize(2), valueType.getDimSize(3)},
        queryType.getElementType());
    return SDPAOp::create(rewriter, loc, resultType, query, key, value, bias,
                          causal ? rewriter.getUnitAttr() : UnitAttr(),
                          window, scale);
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
  Value input;
  RankedTensorType inputType;
};

struct DecomposeQKVAttention : OpRewritePattern<QKVAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QKVAttentionOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op.getLoc(), op.getInput());
    int64_t headDim = op.getHeadDim();

    // Each distinct projection is computed once; tied roles reuse it.
    Value key = b.splitHeads(b.project(b.input, op.getWk(), op.getBk()),
                             headDim);
    Value query = op.sharesQueryKey()
                      ? key
                      : b.splitHeads(b.project(b.input, op.getWq(),
                                               op.getBq()),
                                     headDim);
    Value value = op.sharesKeyValue()
                      ? key
                      : b.splitHeads(b.project(b.input, op.getWv(),
                                               op.getBv()),
                                     headDim);

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

struct DecomposeCCA : OpRewritePattern<CCAOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CCAOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op.getLoc(), op.getInput());
    Location loc = op.getLoc();
    int64_t headDim = op.getHeadDim();
    int64_t queryLatent = op.getQueryLatentDim();
    int64_t keyLatent = op.getKeyLatentDim();
    int64_t channels = op.getConvChannels();
    ArrayRef<int64_t> kernels = op.getConvKernelSizes();

    // 1. Down-projections, packed as u = concat(qr, kr).
    Value queryRaw = b.project(b.input, op.getWq());
    Value keyRaw = b.project(b.input, op.getWk());
    Value packed = tensor::ConcatOp::create(rewriter, loc, /*dim=*/2,
                                            ValueRange{queryRaw, keyRaw});

    // 2. Pad once by P, then a depthwise and a grouped valid convolution:
    // the first yields S + k1 - 1 steps, the second S.
    int64_t seq = b.inputType.getDimSize(1);
    int64_t midSeq =
        ShapedType::isDynamic(seq) ? ShapedType::kDynamic : seq + kernels[1] - 1;
    Value depthwise = CausalConv1DOp::create(
        rewriter, loc, b.activationType(channels, midSeq), packed,
        op.getConvDwWeight(), op.getConvDwBias(),
        rewriter.getI64IntegerAttr(channels),
        rewriter.getI64IntegerAttr(op.getConvPadding()));
    Value grouped = CausalConv1DOp::create(
        rewriter, loc, b.activationType(channels), depthwise,
        op.getConvGWeight(), op.getConvGBias(),
        rewriter.getI64IntegerAttr(op.getNumHeads() + op.getNumKvHeads()),
        rewriter.getI64IntegerAttr(0));

    Value query =
        b.splitHeads(b.sliceChannels(grouped, 0, queryLatent), headDim);
    Value key = b.splitHeads(b.sliceChannels(grouped, queryLatent, keyLatent),
                             headDim);

    // 3. QK-mean residual from the pre-conv projections.
    if (op.getQkMean()) {
      auto mean = QKMeanOp::create(rewriter, loc, query, key,
                                   b.splitHeads(queryRaw, headDim),
                                   b.splitHeads(keyRaw, headDim));
      query = mean.getQ();
      key = mean.getK();
    }

    // 4. L2 norm and key temperature.
    auto norm = QKNormOp::create(rewriter, loc, query, key, op.getTemp(),
                                 op.getTemperatureAttr(), op.getEpsAttr());

    // 5. Values, optionally shifted by one token for half of the heads.
    Value value;
    if (op.getValueShift()) {
      Value current = b.project(b.input, op.getWv());
      Value previous = b.project(b.input, op.getWvPrev());
      value = ValueShiftOp::create(rewriter, loc, b.activationType(keyLatent),
                                   current, previous);
    } else {
      value = b.project(b.input, op.getWv());
    }

    // 6. RoPE in latent space, 7. attention and up-projection.
    Value rotatedQuery = b.rope(norm.getQOut(), op.getRopeAttr());
    Value rotatedKey = b.rope(norm.getKOut(), op.getRopeAttr());
    Value attention = b.sdpa(rotatedQuery, rotatedKey,
                             b.splitHeads(value, headDim), /*bias=*/{},
                             op.getCausal(), op.getWindowAttr(),
                             /*scale=*/{});
    Value output = b.project(b.mergeHeads(attention), op.getWo());
    rewriter.replaceOp(op, b.castTo(output, op.getType()));
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
  patterns.add<DecomposeQKVAttention, DecomposeCCA>(patterns.getContext());
}
