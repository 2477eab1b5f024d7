//===- CostModel.cpp - memory and compute cost of attn layers ---*- C++ -*-===//

#include "attnfuse/Dialect/Attn/Transforms/CostModel.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnfuse::attn;

int64_t attnfuse::attn::countAttentionPairs(int64_t seqLen, bool causal,
                                            std::optional<int64_t> window) {
  int64_t s = seqLen;
  if (!causal) {
    if (!window || *window >= s)
      return s * s;
    // Query i sees keys j > i - w: all but the (i - w + 1) oldest ones.
    int64_t excluded = s - *window;
    return s * s - excluded * (excluded + 1) / 2;
  }
  if (!window || *window >= s)
    return s * (s + 1) / 2;
  // Query i sees min(i + 1, w) keys.
  int64_t w = *window;
  return w * (w + 1) / 2 + (s - w) * w;
}

int64_t attnfuse::attn::getElementBytes(Type type) {
  return (type.getIntOrFloatBitWidth() + 7) / 8;
}

static int64_t numElements(Value value) {
  if (!value)
    return 0;
  auto type = cast<RankedTensorType>(value.getType());
  return type.hasStaticShape() ? type.getNumElements() : 0;
}

/// Shape, cached tokens and attention FLOPs of a layer whose queries score
/// `pairs` (query, key) pairs per head and sequence.
template <typename LayerOp>
static void fillAttention(LayerOp op, bool causal, int64_t seqLen,
                          int64_t pairs, int64_t batch, LayerCost &cost) {
  cost.modelWidth =
      cast<RankedTensorType>(op.getInput().getType()).getDimSize(2);
  cost.numHeads = op.getNumHeads();
  cost.numKvHeads = op.getNumKvHeads();
  cost.headDim = op.getHeadDim();
  cost.causal = causal;
  cost.window = op.getWindow();
  cost.cachedTokensPerSequence =
      cost.window ? std::min(seqLen, *cost.window) : seqLen;
  cost.mhaCacheValuesPerToken = 2 * cost.modelWidth;
  cost.attentionPairs = pairs;
  // Q K^T and P V: two multiply-adds per pair, head dim and query head.
  cost.attentionFlops = 4.0 * static_cast<double>(cost.attentionPairs) *
                        static_cast<double>(cost.numHeads * cost.headDim) *
                        static_cast<double>(batch);
}

/// A prefill of `seqLen` tokens per sequence.
template <typename LayerOp>
static void fillCommon(LayerOp op, int64_t seqLen, int64_t batch,
                       LayerCost &cost) {
  fillAttention(op, op.getCausal(), seqLen,
                countAttentionPairs(seqLen, op.getCausal(), op.getWindow()),
                batch, cost);
}

/// Two FLOPs per weight per token for every (distinct) projection matrix.
static double projectionFlops(ArrayRef<Value> matrices, int64_t seqLen,
                              int64_t batch) {
  double weights = 0;
  for (Value matrix : matrices)
    weights += static_cast<double>(numElements(matrix));
  return 2.0 * weights * static_cast<double>(seqLen) *
         static_cast<double>(batch);
}

/// Cache and parameters of a projection-sharing layer; `tokens` new tokens
/// per sequence are projected.
template <typename SharingOp>
static void fillSharingCost(SharingOp op, int64_t tokens, int64_t batch,
                            LayerCost &cost) {
  int64_t keyWidth = op.getNumKvHeads() * op.getHeadDim();
  // K=V modes cache the one shared tensor; the others K and V.
  cost.cacheValuesPerToken = op.sharesKeyValue() ? keyWidth : 2 * keyWidth;
  for (Value param : {op.getWq(), op.getWk(), op.getWv(), op.getWo(),
                      op.getBq(), op.getBk(), op.getBv(), op.getBo()})
    cost.parameters += numElements(param);
  cost.projectionFlops = projectionFlops(
      {op.getWq(), op.getWk(), op.getWv(), op.getWo()}, tokens, batch);
}

/// Cache, state, parameters and convolutions of a CCA layer; `tokens` new
/// tokens per sequence are projected and convolved.
template <typename CCALikeOp>
static void fillCCACost(CCALikeOp op, int64_t tokens, int64_t batch,
                        LayerCost &cost) {
  int64_t keyLatent = op.getKeyLatentDim();
  int64_t channels = op.getConvChannels();
  // Post-RoPE keys and value-shifted values.
  cost.cacheValuesPerToken = 2 * keyLatent;
  // The last P pre-conv vectors u, and the previous token's value half.
  cost.stateValuesPerSequence =
      op.getConvPadding() * channels + (op.getValueShift() ? keyLatent / 2 : 0);
  for (Value param :
       {op.getWq(), op.getWk(), op.getWv(), op.getWvPrev(),
        op.getConvDwWeight(), op.getConvDwBias(), op.getConvGWeight(),
        op.getConvGBias(), op.getTemp(), op.getWo()})
    cost.parameters += numElements(param);
  cost.projectionFlops = projectionFlops(
      {op.getWq(), op.getWk(), op.getWv(), op.getWvPrev(), op.getWo()}, tokens,
      batch);
  // Depthwise (k0 taps) and grouped (head_dim x k1 taps) convolutions over
  // every token.
  ArrayRef<int64_t> kernels = op.getConvKernelSizes();
  double convMacsPerToken =
      static_cast<double>(channels) *
      static_cast<double>(kernels[0] + op.getHeadDim() * kernels[1]);
  cost.otherFlops = 2.0 * convMacsPerToken * static_cast<double>(tokens) *
                    static_cast<double>(batch);
}

static LayerCost computeCost(QKVAttentionOp op, int64_t seqLen, int64_t batch) {
  LayerCost cost;
  cost.kind =
      ("qkv_attention <" + stringifySharingMode(op.getSharing()) + ">").str();
  fillCommon(op, seqLen, batch, cost);
  fillSharingCost(op, seqLen, batch, cost);
  return cost;
}

static LayerCost computeCost(CCAOp op, int64_t seqLen, int64_t batch) {
  LayerCost cost;
  cost.kind = "cca";
  fillCommon(op, seqLen, batch, cost);
  fillCCACost(op, seqLen, batch, cost);
  return cost;
}

/// A decode step: each of `batch` sequences adds one token that attends to
/// the `seqLen` tokens its cache holds (at most the window).
template <typename DecodeOp>
static void fillDecodeStep(DecodeOp op, int64_t seqLen, int64_t batch,
                           LayerCost &cost) {
  cost.decodeStep = true;
  std::optional<int64_t> window = op.getWindow();
  // The new token scores every cached token its window keeps.
  fillAttention(op, /*causal=*/true, seqLen,
                window ? std::min(seqLen, *window) : seqLen, batch, cost);
}

static LayerCost computeCost(QKVDecodeOp op, int64_t seqLen, int64_t batch) {
  LayerCost cost;
  cost.kind =
      ("qkv_decode <" + stringifySharingMode(op.getSharing()) + ">").str();
  fillDecodeStep(op, seqLen, batch, cost);
  fillSharingCost(op, /*tokens=*/1, batch, cost);
  return cost;
}

static LayerCost computeCost(CCADecodeOp op, int64_t seqLen, int64_t batch) {
  LayerCost cost;
  cost.kind = "cca_decode";
  fillDecodeStep(op, seqLen, batch, cost);
  fillCCACost(op, /*tokens=*/1, batch, cost);
  return cost;
}

FailureOr<LayerCost>
attnfuse::attn::computeLayerCost(Operation *op, int64_t seqLen, int64_t batch) {
  return llvm::TypeSwitch<Operation *, FailureOr<LayerCost>>(op)
      .Case<QKVAttentionOp, CCAOp, QKVDecodeOp, CCADecodeOp>(
          [&](auto layer) -> FailureOr<LayerCost> {
            return computeCost(layer, seqLen, batch);
          })
      .Default([](Operation *) { return failure(); });
}
