//===- AttnOps.cpp - attn dialect operations --------------------*- C++ -*-===//
//
// Verifiers, folders and canonicalization patterns of the attn ops. Every
// verifier error names the operand or attribute at fault and states the
// expected and the actual value.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "TileSlices.h"
#include "VerifyUtils.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse::attn;
using namespace attnfuse::attn::verify;

//===----------------------------------------------------------------------===//
// Shape checking helpers
//===----------------------------------------------------------------------===//

/// Checks that every float operand and result has the element type of the
/// first operand. Integer operands (positions) are typed by their ODS
/// constraints and are not named in `operandNames`; they come last. The
/// values of `ownType` (a log-sum-exp, f32 by its ODS constraint) are not
/// checked.
static LogicalResult verifySameElementType(Operation *op,
                                           ArrayRef<StringRef> operandNames,
                                           ArrayRef<Value> ownType = {}) {
  Type expected = getElementTypeOrSelf(op->getOperand(0).getType());
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    Type actual = getElementTypeOrSelf(operand.getType());
    if (actual == expected || isa<IntegerType, IndexType>(actual) ||
        llvm::is_contained(ownType, operand))
      continue;
    StringRef name = index < operandNames.size() ? operandNames[index]
                                                 : StringRef("operand");
    return op->emitOpError()
           << "'" << name << "' has element type " << actual << ", expected "
           << expected << " (the element type of '" << operandNames[0] << "')";
  }
  for (Value result : op->getResults()) {
    Type actual = getElementTypeOrSelf(result.getType());
    if (actual != expected && !llvm::is_contained(ownType, result))
      return op->emitOpError() << "result has element type " << actual
                               << ", expected " << expected;
  }
  return success();
}

static LogicalResult verifyWindow(Operation *op,
                                  std::optional<int64_t> window) {
  if (window && *window <= 0)
    return op->emitOpError()
           << "window must be a positive number of keys, got " << *window;
  return success();
}

static LogicalResult verifyScale(Operation *op, FloatAttr scaleAttr) {
  if (!scaleAttr)
    return success();
  double scale = scaleAttr.getValueAsDouble();
  if (!(scale > 0.0 && std::isfinite(scale)))
    return op->emitOpError()
           << "scale must be a positive finite number, got " << scale;
  return success();
}

/// Shared check of the `[S, T]` or `[num_heads, S, T]` additive logit bias.
static LogicalResult verifyLogitBias(Operation *op, StringRef name, Value bias,
                                     int64_t numHeads, int64_t queries,
                                     int64_t keys) {
  if (!bias)
    return success();
  auto rank = cast<RankedTensorType>(bias.getType()).getRank();
  if (rank == 2)
    return verifyShape(op, name, bias, {{queries, "S"}, {keys, "T"}});
  if (rank == 3)
    return verifyShape(op, name, bias,
                       {{numHeads, "num_heads"}, {queries, "S"}, {keys, "T"}});
  return op->emitOpError() << "'" << name
                           << "' must be [S, T] or [num_heads, S, T], got rank "
                           << rank;
}

/// Checks that the named float `values` share the element type of the
/// first one (integer operands such as positions are not listed).
static LogicalResult
verifyFloatElementTypes(Operation *op,
                        ArrayRef<std::pair<StringRef, Value>> values) {
  Type expected = getElementTypeOrSelf(values.front().second.getType());
  for (auto [name, value] : values) {
    if (!value)
      continue;
    Type actual = getElementTypeOrSelf(value.getType());
    if (actual != expected)
      return op->emitOpError()
             << "'" << name << "' has element type " << actual << ", expected "
             << expected << " (the element type of '" << values.front().first
             << "')";
  }
  return success();
}

/// Checks an optional `[batch]` integer operand (positions, lengths).
static LogicalResult verifyPerSequence(Operation *op, StringRef name,
                                       Value value, int64_t batch) {
  if (!value)
    return success();
  return verifyShape(op, name, value, {{batch, "batch"}});
}

/// Checks an optional token mask `[batch, seq]`; `seqName` names the
/// sequence dimension it follows (`seq`, or `T` for the keys).
static LogicalResult verifyTokenMask(Operation *op, StringRef name, Value mask,
                                     int64_t batch, int64_t seq,
                                     StringRef seqName) {
  if (!mask)
    return success();
  std::string layout = ("[batch, " + seqName + "]").str();
  return failure(
      failed(verifyRank(op, name, mask, 2, layout)) ||
      failed(verifyShape(op, name, mask, {{batch, "batch"}, {seq, seqName}})));
}

/// Checks a KV cache `[batch, capacity, kv_heads, head_dim]`, or, with a
/// block table `[batch, pages_per_sequence]`, a paged cache `[num_pages,
/// page_size, kv_heads, head_dim]`.
static LogicalResult verifyCache(Operation *op, StringRef name, Value cache,
                                 Value blockTable, int64_t batch,
                                 int64_t numKvHeads, int64_t headDim) {
  if (failed(verifyRank(op, name, cache, 4,
                        blockTable
                            ? "[num_pages, page_size, kv_heads, head_dim]"
                            : "[batch, capacity, kv_heads, head_dim]")))
    return failure();
  if (blockTable)
    return failure(
        failed(verifyShape(op, name, cache,
                           {{ShapedType::kDynamic, "num_pages"},
                            {ShapedType::kDynamic, "page_size"},
                            {numKvHeads, "kv_heads"},
                            {headDim, "head_dim"}},
                           /*requireStatic=*/false)) ||
        failed(verifyStaticDim(op, name, cache, 2, "kv head count")) ||
        failed(verifyStaticDim(op, name, cache, 3, "head dim")) ||
        failed(verifyShape(
            op, "block_table", blockTable,
            {{batch, "batch"}, {ShapedType::kDynamic, "pages_per_sequence"}})));
  return failure(failed(verifyShape(op, name, cache,
                                    {{batch, "batch"},
                                     {ShapedType::kDynamic, "capacity"},
                                     {numKvHeads, "kv_heads"},
                                     {headDim, "head_dim"}})) ||
                 failed(verifyStaticDim(op, name, cache, 2, "kv head count")) ||
                 failed(verifyStaticDim(op, name, cache, 3, "head dim")));
}

/// Checks that a result has exactly the type of the operand it updates.
static LogicalResult verifyUpdatedType(Operation *op, StringRef resultName,
                                       Value result, StringRef operandName,
                                       Value operand) {
  if (result.getType() == operand.getType())
    return success();
  return op->emitOpError() << "result '" << resultName
                           << "' must have the type " << operand.getType()
                           << " of '" << operandName << "', got "
                           << result.getType();
}

/// Verifies a `[batch, seq, E]` layer input, its static width, and a result
/// of the same shape.
static LogicalResult verifyLayerInputAndResult(Operation *op, Value input,
                                               Value result) {
  if (failed(verifyRank(op, "input", input, 3, "[batch, seq, E]")) ||
      failed(verifyStaticDim(op, "input", input, 2, "model width E")))
    return failure();
  return verifyShape(op, "result", result,
                     {{dimOf(input, 0), "batch"},
                      {dimOf(input, 1), "seq"},
                      {dimOf(input, 2), "E"}});
}

//===----------------------------------------------------------------------===//
// QKVAttentionOp
//===----------------------------------------------------------------------===//

/// The checks `attn.qkv_attention` and `attn.qkv_decode` share: heads, the
/// projections the sharing mode needs, and their shapes.
template <typename SharingOp>
static LogicalResult verifySharedProjections(SharingOp op) {
  Operation *operation = op.getOperation();
  int64_t numHeads = op.getNumHeads(), numKvHeads = op.getNumKvHeads();
  int64_t headDim = op.getHeadDim(), width = dimOf(op.getInput(), 2);
  if (failed(verifyHeads(operation, numHeads, numKvHeads)))
    return failure();

  StringRef mode = stringifySharingMode(op.getSharing());
  bool needsQuery = !op.sharesQueryKey();
  bool needsValue = !op.sharesKeyValue();
  if (needsQuery && !op.getWq())
    return op.emitOpError()
           << "sharing mode '" << mode << "' needs a query projection 'wq'";
  if (!needsQuery && op.getWq())
    return op.emitOpError() << "sharing mode '" << mode
                            << "' uses the key projection as the query; 'wq' "
                               "must be absent";
  if (needsValue && !op.getWv())
    return op.emitOpError()
           << "sharing mode '" << mode << "' needs a value projection 'wv'";
  if (!needsValue && op.getWv())
    return op.emitOpError() << "sharing mode '" << mode
                            << "' uses the key projection as the value; 'wv' "
                               "must be absent";
  if (op.sharesQueryKey() && numHeads != numKvHeads)
    return op.emitOpError()
           << "sharing mode '" << mode
           << "' uses the key as the query, so num_heads (" << numHeads
           << ") must equal num_kv_heads (" << numKvHeads << ")";
  if (op.getBq() && !op.getWq())
    return op.emitOpError() << "'bq' is given without a query projection 'wq'";
  if (op.getBv() && !op.getWv())
    return op.emitOpError() << "'bv' is given without a value projection 'wv'";

  // Weights and biases have static shapes: widths are static.
  auto verifyParam = [&](StringRef name, Value value,
                         ArrayRef<ExpectedDim> expected) {
    return verifyShape(operation, name, value, expected,
                       /*requireStatic=*/true);
  };
  int64_t queryWidth = numHeads * headDim, keyWidth = numKvHeads * headDim;
  ExpectedDim modelDim{width, "E"};
  ExpectedDim queryDim{queryWidth, "num_heads * head_dim"};
  ExpectedDim keyDim{keyWidth, "num_kv_heads * head_dim"};
  if ((op.getWq() &&
       failed(verifyParam("wq", op.getWq(), {queryDim, modelDim}))) ||
      failed(verifyParam("wk", op.getWk(), {keyDim, modelDim})) ||
      (op.getWv() &&
       failed(verifyParam("wv", op.getWv(), {keyDim, modelDim}))) ||
      failed(verifyParam("wo", op.getWo(), {modelDim, queryDim})) ||
      (op.getBq() && failed(verifyParam("bq", op.getBq(), {queryDim}))) ||
      (op.getBk() && failed(verifyParam("bk", op.getBk(), {keyDim}))) ||
      (op.getBv() && failed(verifyParam("bv", op.getBv(), {keyDim}))) ||
      (op.getBo() && failed(verifyParam("bo", op.getBo(), {modelDim}))))
    return failure();
  return failure(failed(verifyWindow(operation, op.getWindow())) ||
                 failed(verifyScale(operation, op.getScaleAttr())) ||
                 failed(verifyRope(operation, op.getRopeAttr(), headDim)));
}

/// Names of the present projection operands of a sharing op, in operand
/// order, starting with "input".
template <typename SharingOp>
static SmallVector<StringRef> getProjectionOperandNames(SharingOp op) {
  StringRef operandNames[] = {"wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"};
  Value operands[] = {op.getWq(), op.getWk(), op.getWv(), op.getWo(),
                      op.getBq(), op.getBk(), op.getBv(), op.getBo()};
  SmallVector<StringRef> names = {"input"};
  for (auto [name, value] : llvm::zip_equal(operandNames, operands))
    if (value)
      names.push_back(name);
  return names;
}

LogicalResult QKVAttentionOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyLayerInputAndResult(op, getInput(), getResult())) ||
      failed(verifySharedProjections(*this)))
    return failure();
  int64_t seq = dimOf(getInput(), 1);
  if (failed(verifyLogitBias(op, "logit_bias", getLogitBias(), getNumHeads(),
                             seq, seq)))
    return failure();
  SmallVector<StringRef> names = getProjectionOperandNames(*this);
  if (getLogitBias())
    names.push_back("logit_bias");
  return verifySameElementType(op, names);
}

//===----------------------------------------------------------------------===//
// CCAOp
//===----------------------------------------------------------------------===//

/// The checks `attn.cca` and `attn.cca_prologue` share: heads, kernel
/// sizes, value shift, and the shapes of every projection and convolution
/// parameter. `modelWidth` is the static E of the input.
template <typename CCALikeOp>
static LogicalResult verifyCCAParameters(CCALikeOp op, int64_t modelWidth) {
  Operation *operation = op.getOperation();
  int64_t numHeads = op.getNumHeads(), numKvHeads = op.getNumKvHeads();
  int64_t headDim = op.getHeadDim();
  if (failed(verifyHeads(operation, numHeads, numKvHeads)))
    return failure();

  ArrayRef<int64_t> kernels = op.getConvKernelSizes();
  if (kernels.size() != 2 || kernels[0] < 1 || kernels[1] < 1)
    return op.emitOpError() << "conv_kernel_sizes must hold two positive "
                               "kernel sizes [k0, k1], got "
                            << formatShape(kernels);

  // Weights and biases have static shapes: widths are static.
  auto verifyParam = [&](StringRef name, Value value,
                         ArrayRef<ExpectedDim> expected) {
    return verifyShape(operation, name, value, expected,
                       /*requireStatic=*/true);
  };
  int64_t queryLatent = op.getQueryLatentDim();
  int64_t keyLatent = op.getKeyLatentDim();
  ExpectedDim modelDim{modelWidth, "E"};
  ExpectedDim queryDim{queryLatent, "num_heads * head_dim"};
  ExpectedDim keyDim{keyLatent, "num_kv_heads * head_dim"};
  ExpectedDim channelDim{op.getConvChannels(),
                         "(num_heads + num_kv_heads) * head_dim"};

  if (op.getValueShift()) {
    if (keyLatent % 2 != 0)
      return op.emitOpError()
             << "value_shift splits the num_kv_heads * head_dim = " << keyLatent
             << " value channels in two halves; it must be even";
    if (!op.getWvPrev())
      return op.emitOpError()
             << "value_shift needs the previous-token projection 'wv_prev'";
  } else if (op.getWvPrev()) {
    return op.emitOpError() << "'wv_prev' is given but value_shift is not set";
  }
  ExpectedDim valueDim =
      op.getValueShift()
          ? ExpectedDim{keyLatent / 2, "num_kv_heads * head_dim / 2"}
          : keyDim;

  if (failed(verifyParam("wq", op.getWq(), {queryDim, modelDim})) ||
      failed(verifyParam("wk", op.getWk(), {keyDim, modelDim})) ||
      failed(verifyParam("wv", op.getWv(), {valueDim, modelDim})) ||
      (op.getWvPrev() &&
       failed(verifyParam("wv_prev", op.getWvPrev(), {valueDim, modelDim}))) ||
      failed(verifyParam("conv_dw_weight", op.getConvDwWeight(),
                         {channelDim, {1, "1"}, {kernels[0], "k0"}})) ||
      failed(verifyParam("conv_dw_bias", op.getConvDwBias(), {channelDim})) ||
      failed(verifyParam(
          "conv_g_weight", op.getConvGWeight(),
          {channelDim, {headDim, "head_dim"}, {kernels[1], "k1"}})) ||
      failed(verifyParam("conv_g_bias", op.getConvGBias(), {channelDim})) ||
      failed(verifyParam("temp", op.getTemp(), {{numKvHeads, "num_kv_heads"}})))
    return failure();

  if (failed(verifyNormEps(operation, op.getEps(), op.getNorm())))
    return failure();
  return verifyRope(operation, op.getRopeAttr(), headDim);
}

/// Operand names of a CCA-like op in operand order, for element type
/// diagnostics; `trailing` names the operands after `temp`.
template <typename CCALikeOp>
static SmallVector<StringRef> getCCAOperandNames(CCALikeOp op,
                                                 ArrayRef<StringRef> trailing) {
  SmallVector<StringRef> names = {"input", "wq", "wk", "wv"};
  if (op.getWvPrev())
    names.push_back("wv_prev");
  names.append({"conv_dw_weight", "conv_dw_bias", "conv_g_weight",
                "conv_g_bias", "temp"});
  names.append(trailing.begin(), trailing.end());
  return names;
}

LogicalResult CCAOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyLayerInputAndResult(op, getInput(), getResult())))
    return failure();
  int64_t width = dimOf(getInput(), 2);
  if (failed(verifyCCAParameters(*this, width)) ||
      failed(verifyShape(
          op, "wo", getWo(),
          {{width, "E"}, {getQueryLatentDim(), "num_heads * head_dim"}},
          /*requireStatic=*/true)) ||
      failed(verifyWindow(op, getWindow())) ||
      failed(verifyTokenMask(op, "padding_mask", getPaddingMask(),
                             dimOf(getInput(), 0), dimOf(getInput(), 1),
                             "seq")))
    return failure();
  return verifySameElementType(op, getCCAOperandNames(*this, {"wo"}));
}

//===----------------------------------------------------------------------===//
// Layer canonicalization
//===----------------------------------------------------------------------===//

namespace {
/// A window of at least the static sequence length masks nothing: every
/// query sees at most `seq` keys, all within `seq - 1` positions.
template <typename LayerOp>
struct DropNoOpLayerWindow : OpRewritePattern<LayerOp> {
  using OpRewritePattern<LayerOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> window = op.getWindow();
    int64_t seq = dimOf(op.getInput(), 1);
    if (!window || ShapedType::isDynamic(seq) || *window < seq)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.removeWindowAttr(); });
    return success();
  }
};

/// RoPE that rotates no dimension is the identity.
template <typename LayerOp>
struct DropNoOpLayerRope : OpRewritePattern<LayerOp> {
  using OpRewritePattern<LayerOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerOp op,
                                PatternRewriter &rewriter) const override {
    RopeAttr rope = op.getRopeAttr();
    if (!rope || rope.getFractionValue() != 0.0)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.removeRopeAttr(); });
    return success();
  }
};
} // namespace

void QKVAttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                 MLIRContext *context) {
  results.add<DropNoOpLayerWindow<QKVAttentionOp>,
              DropNoOpLayerRope<QKVAttentionOp>>(context);
}

void CCAOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<DropNoOpLayerWindow<CCAOp>, DropNoOpLayerRope<CCAOp>>(context);
}

//===----------------------------------------------------------------------===//
// ProjectOp
//===----------------------------------------------------------------------===//

/// The shapes of a projection `[B, S, in] x [out, in] -> [B, S, out]`, whose
/// `[B, S, out]` side is `output` (the result, or its cotangent).
static LogicalResult verifyProjection(Operation *op, Value input, Value weight,
                                      Value output, StringRef outputName) {
  if (failed(verifyRank(op, "input", input, 3, "[batch, seq, in]")) ||
      failed(verifyRank(op, "weight", weight, 2,
                        "[out_features, in_features]")) ||
      failed(verifyStaticDim(op, "weight", weight, 0, "out_features")))
    return failure();
  int64_t outFeatures = dimOf(weight, 0);
  return failure(
      failed(verifyShape(op, "weight", weight,
                         {{outFeatures, "out_features"},
                          {dimOf(input, 2), "in_features"}})) ||
      failed(verifyShape(op, outputName, output,
                         {{dimOf(input, 0), "batch"},
                          {dimOf(input, 1), "seq"},
                          {outFeatures, "out_features"}})));
}

LogicalResult ProjectOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyProjection(op, getInput(), getWeight(), getResult(),
                              "result")) ||
      (getBias() && failed(verifyShape(op, "bias", getBias(),
                                       {{dimOf(getWeight(), 0),
                                         "out_features"}}))))
    return failure();
  SmallVector<StringRef> names = {"input", "weight"};
  if (getBias())
    names.push_back("bias");
  return verifySameElementType(op, names);
}

//===----------------------------------------------------------------------===//
// CausalConv1DOp
//===----------------------------------------------------------------------===//

/// The shapes of a grouped causal convolution `[B, S, C] x [C, C / groups,
/// k] -> [B, S + padding - (k - 1), C]`, whose output side is `output` (the
/// result, or its cotangent).
static LogicalResult verifyConvolution(Operation *op, Value input, Value weight,
                                       int64_t groups, int64_t padding,
                                       Value output, StringRef outputName) {
  if (failed(
          verifyRank(op, "input", input, 3, "[batch, seq, channels]")) ||
      failed(verifyStaticDim(op, "input", input, 2, "channel count")) ||
      failed(verifyRank(op, "weight", weight, 3,
                        "[channels, channels / groups, kernel]")) ||
      failed(verifyStaticDim(op, "weight", weight, 2, "kernel size")))
    return failure();
  int64_t channels = dimOf(input, 2);
  if (channels % groups != 0)
    return op->emitOpError() << "groups (" << groups
                             << ") must divide the channel count (" << channels
                             << ")";
  int64_t kernel = dimOf(weight, 2);
  if (kernel < 1)
    return op->emitOpError() << "'weight' must have at least one tap, got "
                             << kernel;
  if (failed(verifyShape(op, "weight", weight,
                         {{channels, "channels"},
                          {channels / groups, "channels / groups"},
                          {kernel, "kernel"}})))
    return failure();
  int64_t seq = dimOf(input, 1);
  int64_t outSeq = ShapedType::kDynamic;
  if (!ShapedType::isDynamic(seq)) {
    outSeq = seq + padding - (kernel - 1);
    if (outSeq < 0)
      return op->emitOpError()
             << "a kernel of " << kernel << " taps over " << seq
             << " time steps padded by " << padding
             << " yields a negative length " << outSeq;
  }
  return verifyShape(op, outputName, output,
                     {{dimOf(input, 0), "batch"},
                      {outSeq, "seq + padding - (kernel - 1)"},
                      {channels, "channels"}});
}

LogicalResult CausalConv1DOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyConvolution(op, getInput(), getWeight(), getGroups(),
                               getPadding(), getResult(), "result")) ||
      (getBias() && failed(verifyShape(op, "bias", getBias(),
                                       {{dimOf(getInput(), 2),
                                         "channels"}}))))
    return failure();
  SmallVector<StringRef> names = {"input", "weight"};
  if (getBias())
    names.push_back("bias");
  return verifySameElementType(op, names);
}

//===----------------------------------------------------------------------===//
// Per-head primitives
//===----------------------------------------------------------------------===//

/// Verifies query `[B, S, Hq, d]` and key `[B, S', Hk, d']` head tensors:
/// matching batch, Hq a multiple of Hk, and (when `sameSeqAndDim`) the same
/// sequence and head dim.
static LogicalResult verifyQueryKeyHeads(Operation *op, StringRef queryName,
                                         Value query, StringRef keyName,
                                         Value key, bool sameSeqAndDim) {
  if (failed(verifyRank(op, queryName, query, 4,
                        "[batch, seq, heads, head_dim]")) ||
      failed(
          verifyRank(op, keyName, key, 4, "[batch, seq, heads, head_dim]")) ||
      failed(verifyStaticDim(op, queryName, query, 2, "head count")) ||
      failed(verifyStaticDim(op, keyName, key, 2, "head count")) ||
      failed(verifyStaticDim(op, queryName, query, 3, "head dim")))
    return failure();
  int64_t numHeads = dimOf(query, 2), numKvHeads = dimOf(key, 2);
  if (numKvHeads < 1 || numHeads % numKvHeads != 0)
    return op->emitOpError() << "the " << numHeads << " heads of '" << queryName
                             << "' must be a multiple of the " << numKvHeads
                             << " heads of '" << keyName << "'";
  return verifyShape(op, keyName, key,
                     {{dimOf(query, 0), "batch"},
                      {sameSeqAndDim ? dimOf(query, 1) : dimOf(key, 1),
                       sameSeqAndDim ? "seq" : "T"},
                      {numKvHeads, "kv_heads"},
                      {dimOf(query, 3), "head_dim"}});
}

LogicalResult QKMeanOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyQueryKeyHeads(op, "q_conv", getQConv(), "k_conv", getKConv(),
                                 /*sameSeqAndDim=*/true)))
    return failure();
  return verifySameElementType(op, {"q_conv", "k_conv", "q_raw", "k_raw"});
}

LogicalResult QKNormOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyQueryKeyHeads(op, "q", getQ(), "k", getK(),
                                 /*sameSeqAndDim=*/true)) ||
      failed(
          verifyShape(op, "temp", getTemp(), {{dimOf(getK(), 2), "kv_heads"}})))
    return failure();
  if (failed(verifyNormEps(op, getEps(), getNorm())))
    return failure();
  return verifySameElementType(op, {"q", "k", "temp"});
}

LogicalResult ValueShiftOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "current", getCurrent(), 3,
                        "[batch, seq, channels]")) ||
      failed(verifyStaticDim(op, "current", getCurrent(), 2, "channel count")))
    return failure();
  int64_t batch = dimOf(getCurrent(), 0), seq = dimOf(getCurrent(), 1);
  int64_t half = dimOf(getCurrent(), 2);
  if (failed(
          verifyShape(op, "previous", getPrevious(),
                      {{batch, "batch"}, {seq, "seq"}, {half, "channels"}})) ||
      failed(verifyShape(
          op, "result", getResult(),
          {{batch, "batch"}, {seq, "seq"}, {2 * half, "2 * channels"}})) ||
      (getState() &&
       failed(verifyShape(op, "state", getState(),
                          {{batch, "batch"}, {1, "1"}, {half, "channels"}}))))
    return failure();
  SmallVector<StringRef> names = {"current", "previous"};
  if (getState())
    names.push_back("state");
  return verifySameElementType(op, names);
}

LogicalResult RoPEOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "input", getInput(), 4,
                        "[batch, seq, heads, head_dim]")) ||
      failed(verifyStaticDim(op, "input", getInput(), 3, "head dim")))
    return failure();
  if (getPositions() &&
      (failed(verifyRank(op, "positions", getPositions(), 1, "[batch]")) ||
       failed(verifyPerSequence(op, "positions", getPositions(),
                                dimOf(getInput(), 0)))))
    return failure();
  return verifyRope(op, getRope(), dimOf(getInput(), 3));
}

OpFoldResult RoPEOp::fold(FoldAdaptor) {
  // Rotating no dimension is the identity.
  if (getRope().getFractionValue() == 0.0)
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// SDPAOp
//===----------------------------------------------------------------------===//

/// The additive logit bias of an attention op.
template <typename AttentionOp> static Value getLogitBias(AttentionOp op) {
  return op.getBias();
}

/// The log-sum-exp operands and results of an attention op (f32 whatever
/// the element type), null where absent.
static SmallVector<Value> getLogSumExps(SDPAOp op) { return {op.getLse()}; }
static SmallVector<Value> getLogSumExps(FlashAttentionOp op) {
  return {op.getLseInit(), op.getLse()};
}
static SmallVector<Value> getLogSumExps(SDPAGradOp op) { return {op.getLse()}; }
static SmallVector<Value> getLogSumExps(FlashAttentionGradOp op) {
  return {op.getLse()};
}

/// The bias gradient's init and result of attn.flash_attention_grad (f32 or
/// f64 whatever the element type), null where absent.
template <typename AttentionOp>
static SmallVector<Value> getBiasGradAccumulators(AttentionOp) {
  return {};
}
static SmallVector<Value> getBiasGradAccumulators(FlashAttentionGradOp op) {
  return {op.getBiasGradInit(), op.getBiasGrad()};
}

/// The checks the attention ops (attn.sdpa, attn.flash_attention and their
/// gradients) share. `value` is the tensor read for `P V` (the key itself
/// for K=V).
template <typename AttentionOp>
static LogicalResult verifyAttention(AttentionOp op, Value value,
                                     Value output,
                                     StringRef outputName = "result") {
  Operation *operation = op.getOperation();
  Value query = op.getQuery(), key = op.getKey();
  if (failed(verifyQueryKeyHeads(operation, "query", query, "key", key,
                                 /*sameSeqAndDim=*/false)) ||
      failed(verifyRank(operation, "value", value, 4,
                        "[batch, T, kv_heads, value_dim]")) ||
      failed(verifyStaticDim(operation, "value", value, 3, "value dim")))
    return failure();
  int64_t batch = dimOf(query, 0), queries = dimOf(query, 1);
  int64_t numHeads = dimOf(query, 2), numKvHeads = dimOf(key, 2);
  int64_t keys = dimOf(key, 1), valueDim = dimOf(value, 3);
  if (failed(verifyShape(operation, "value", value,
                         {{batch, "batch"},
                          {keys, "T"},
                          {numKvHeads, "kv_heads"},
                          {valueDim, "value_dim"}})) ||
      failed(verifyShape(operation, outputName, output,
                         {{batch, "batch"},
                          {queries, "S"},
                          {numHeads, "num_heads"},
                          {valueDim, "value_dim"}})) ||
      failed(verifyLogitBias(operation, "bias", getLogitBias(op), numHeads,
                             queries, keys)) ||
      failed(verifyWindow(operation, op.getWindow())) ||
      failed(verifyScale(operation, op.getScaleAttr())) ||
      failed(verifyTokenMask(operation, "key_mask", op.getKeyMask(), batch,
                             keys, "T")))
    return failure();
  // The log-sum-exp of each query row: [batch, S, num_heads].
  SmallVector<Value> logSumExps = getLogSumExps(op);
  for (Value lse : logSumExps) {
    if (!lse)
      continue;
    StringRef name = isa<FlashAttentionOp>(operation) && !isa<OpResult>(lse)
                         ? "lse_init"
                         : "lse";
    if (failed(verifyRank(operation, name, lse, 3, "[batch, S, num_heads]")) ||
        failed(verifyShape(operation, name, lse,
                           {{batch, "batch"},
                            {queries, "S"},
                            {numHeads, "num_heads"}})))
      return failure();
  }
  SmallVector<StringRef> names = {"query", "key"};
  if (value != key)
    names.push_back("value");
  if (getLogitBias(op))
    names.push_back("bias");
  SmallVector<Value> ownType = logSumExps;
  llvm::append_range(ownType, getBiasGradAccumulators(op));
  return verifySameElementType(operation, names, ownType);
}

LogicalResult MaskTokensOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "input", getInput(), 3, "[batch, seq, width]")))
    return failure();
  return verifyTokenMask(op, "mask", getMask(), dimOf(getInput(), 0),
                         dimOf(getInput(), 1), "seq");
}

LogicalResult SDPAOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyAttention(*this, getValue(), getResult())))
    return failure();
  if (!getPositions())
    return success();
  return failure(
      failed(verifyRank(op, "positions", getPositions(), 1, "[batch]")) ||
      failed(verifyPerSequence(op, "positions", getPositions(),
                               dimOf(getQuery(), 0))));
}

namespace {
/// A window of at least T keys masks nothing: the distance between a query
/// and a visible key is at most T - 1.
struct DropNoOpSdpaWindow : OpRewritePattern<SDPAOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SDPAOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> window = op.getWindow();
    int64_t keys = dimOf(op.getKey(), 1);
    // With or without a causal mask the distance (i + T - S) - j to an
    // earlier key never exceeds (S - 1) + (T - S) = T - 1.
    if (!window || ShapedType::isDynamic(keys) || *window < keys)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.removeWindowAttr(); });
    return success();
  }
};
} // namespace

void SDPAOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<DropNoOpSdpaWindow>(context);
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

/// Checks that gradient result `name` has exactly the type of the value it
/// differentiates.
static LogicalResult verifyGradType(Operation *op, StringRef name, Value grad,
                                    StringRef primalName, Value primal) {
  if (grad.getType() == primal.getType())
    return success();
  return op->emitOpError() << "result '" << name << "' must have the type of '"
                           << primalName << "', " << primal.getType()
                           << ", got " << grad.getType();
}

/// The gradients of an op with an input, a weight and a bias: the input's
/// and the weight's have their types, the bias's is `[biasSize]`.
template <typename GradOp>
static LogicalResult verifyWeightedGradients(GradOp op, ExpectedDim biasSize) {
  Operation *operation = op.getOperation();
  return failure(
      failed(verifyGradType(operation, "input_grad", op.getInputGrad(),
                            "input", op.getInput())) ||
      failed(verifyGradType(operation, "weight_grad", op.getWeightGrad(),
                            "weight", op.getWeight())) ||
      failed(verifyShape(operation, "bias_grad", op.getBiasGrad(), {biasSize})));
}

LogicalResult ProjectGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyProjection(op, getInput(), getWeight(), getResultGrad(),
                              "result_grad")) ||
      failed(verifyStaticDim(op, "weight", getWeight(), 1, "in_features")) ||
      failed(verifyWeightedGradients(*this, {dimOf(getWeight(), 0),
                                             "out_features"})))
    return failure();
  return verifySameElementType(op, {"input", "weight", "result_grad"});
}

LogicalResult CausalConv1DGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyConvolution(op, getInput(), getWeight(), getGroups(),
                               getPadding(), getResultGrad(), "result_grad")) ||
      failed(verifyWeightedGradients(*this, {dimOf(getInput(), 2),
                                             "channels"})))
    return failure();
  return verifySameElementType(op, {"input", "weight", "result_grad"});
}

LogicalResult QKMeanGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyQueryKeyHeads(op, "q_grad", getQGrad(), "k_grad", getKGrad(),
                                 /*sameSeqAndDim=*/true)))
    return failure();
  return verifySameElementType(op, {"q_grad", "k_grad"});
}

LogicalResult QKNormGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyQueryKeyHeads(op, "q", getQ(), "k", getK(),
                                 /*sameSeqAndDim=*/true)) ||
      failed(
          verifyShape(op, "temp", getTemp(), {{dimOf(getK(), 2), "kv_heads"}})))
    return failure();
  if (failed(verifyNormEps(op, getEps(), getNorm())))
    return failure();
  return verifySameElementType(op, {"q", "k", "temp", "q_out_grad",
                                    "k_out_grad"});
}

LogicalResult ValueShiftGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "result_grad", getResultGrad(), 3,
                        "[batch, seq, 2 * channels]")) ||
      failed(verifyStaticDim(op, "result_grad", getResultGrad(), 2,
                             "channel count")))
    return failure();
  int64_t width = dimOf(getResultGrad(), 2);
  if (width % 2 != 0)
    return emitOpError() << "'result_grad' must have an even channel count "
                            "(current and previous halves), got "
                         << width;
  if (failed(verifyShape(op, "current_grad", getCurrentGrad(),
                         {{dimOf(getResultGrad(), 0), "batch"},
                          {dimOf(getResultGrad(), 1), "seq"},
                          {width / 2, "channels / 2"}})))
    return failure();
  return verifySameElementType(op, {"result_grad"});
}

LogicalResult RoPEGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "result_grad", getResultGrad(), 4,
                        "[batch, seq, heads, head_dim]")) ||
      failed(verifyStaticDim(op, "result_grad", getResultGrad(), 3,
                             "head dim")))
    return failure();
  if (getPositions() &&
      (failed(verifyRank(op, "positions", getPositions(), 1, "[batch]")) ||
       failed(verifyPerSequence(op, "positions", getPositions(),
                                dimOf(getResultGrad(), 0)))))
    return failure();
  return verifyRope(op, getRope(), dimOf(getResultGrad(), 3));
}

LogicalResult SDPAGradOp::verify() {
  Operation *op = getOperation();
  SmallVector<StringRef> names = {"query", "key", "value", "output",
                                  "output_grad"};
  if (getBias())
    names.push_back("bias");
  if (failed(verifySameElementType(op, names, {getLse()})) ||
      failed(verifyAttention(*this, getValue(), getOutput(), "output")) ||
      failed(verifyShape(op, "output_grad", getOutputGrad(),
                         {{dimOf(getOutput(), 0), "batch"},
                          {dimOf(getOutput(), 1), "S"},
                          {dimOf(getOutput(), 2), "num_heads"},
                          {dimOf(getOutput(), 3), "value_dim"}})) ||
      failed(verifyGradType(op, "query_grad", getQueryGrad(), "query",
                            getQuery())) ||
      failed(verifyGradType(op, "key_grad", getKeyGrad(), "key", getKey())) ||
      failed(verifyGradType(op, "value_grad", getValueGrad(), "value",
                            getValue())))
    return failure();
  if (static_cast<bool>(getBias()) != static_cast<bool>(getBiasGrad()))
    return emitOpError() << "has a 'bias_grad' result exactly when it has a "
                            "'bias' operand";
  if (getBias() &&
      failed(verifyGradType(op, "bias_grad", getBiasGrad(), "bias", getBias())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Fused kernel ops
//===----------------------------------------------------------------------===//

LogicalResult FusedProjectionOp::verify() {
  Operation *op = getOperation();
  if (getInit().getType() != getResult().getType())
    return emitOpError() << "'init' must have the result type "
                         << getResult().getType() << ", got "
                         << getInit().getType();
  // The weight is [heads * head_dim, E], or [E, heads * head_dim] with
  // transposed_weight.
  bool transposed = getTransposedWeight();
  int64_t featureAxis = transposed ? 1 : 0;
  if (failed(verifyRank(op, "input", getInput(), 3, "[batch, seq, E]")) ||
      failed(verifyStaticDim(op, "input", getInput(), 2, "model width E")) ||
      failed(verifyRank(op, "weight", getWeight(), 2,
                        transposed ? "[E, heads * head_dim] (transposed)"
                                   : "[heads * head_dim, E]")) ||
      failed(verifyStaticDim(op, "weight", getWeight(), featureAxis,
                             "out_features")))
    return failure();
  int64_t headDim = getHeadDim(), outFeatures = dimOf(getWeight(), featureAxis);
  if (outFeatures % headDim != 0)
    return emitOpError() << "the " << outFeatures
                         << " output features of 'weight' are not a whole "
                            "number of heads of head_dim "
                         << headDim;
  ExpectedDim featureDim{outFeatures, "heads * head_dim"};
  ExpectedDim widthDim{dimOf(getInput(), 2), "E"};
  SmallVector<ExpectedDim> weightDims = {featureDim, widthDim};
  if (transposed)
    std::swap(weightDims[0], weightDims[1]);
  if (failed(verifyShape(op, "weight", getWeight(), weightDims)) ||
      (getBias() && failed(verifyShape(op, "bias", getBias(), {featureDim}))) ||
      failed(verifyShape(op, "result", getResult(),
                         {{dimOf(getInput(), 0), "batch"},
                          {dimOf(getInput(), 1), "seq"},
                          {outFeatures / headDim, "heads"},
                          {headDim, "head_dim"}})) ||
      failed(verifyRope(op, getRopeAttr(), headDim)))
    return failure();
  // The RoPE epilogue rotates pairs within a head: a tile holds whole heads.
  if (getRopeAttr() && getBlockN() % headDim != 0)
    return emitOpError() << "block_n (" << getBlockN()
                         << ") must be a multiple of head_dim (" << headDim
                         << ") for the RoPE epilogue";
  SmallVector<StringRef> names = {"input", "weight"};
  if (getBias())
    names.push_back("bias");
  return verifySameElementType(op, names);
}

LogicalResult FusedWeightGradOp::verify() {
  Operation *op = getOperation();
  if (getInit().getType() != getResult().getType())
    return emitOpError() << "'init' must have the result type "
                         << getResult().getType() << ", got "
                         << getInit().getType();
  if (failed(verifyRank(op, "input", getInput(), 2, "[tokens, in]")) ||
      failed(verifyStaticDim(op, "input", getInput(), 1, "in_features")) ||
      failed(verifyRank(op, "result_grad", getResultGrad(), 2,
                        "[tokens, out]")) ||
      failed(verifyStaticDim(op, "result_grad", getResultGrad(), 1,
                             "out_features")))
    return failure();
  int64_t outFeatures = dimOf(getResultGrad(), 1);
  if (failed(verifyShape(op, "result_grad", getResultGrad(),
                         {{dimOf(getInput(), 0), "tokens"},
                          {outFeatures, "out"}})) ||
      failed(verifyShape(op, "result", getResult(),
                         {{outFeatures, "out"}, {dimOf(getInput(), 1), "in"}},
                         /*requireStatic=*/true)))
    return failure();
  return verifySameElementType(op, {"input", "result_grad", "init"});
}

LogicalResult CCAPrologueOp::verify() {
  Operation *op = getOperation();
  if (getInits().size() != getNumResults())
    return emitOpError() << "takes one 'outs' per result (query, key, value), "
                            "got "
                         << getInits().size();
  for (auto [index, init, result] : llvm::enumerate(getInits(), getResults()))
    if (init.getType() != result.getType())
      return emitOpError() << "'outs' #" << index << " must have the type "
                           << result.getType() << " of result #" << index
                           << ", got " << init.getType();
  if (failed(verifyRank(op, "input", getInput(), 3, "[batch, seq, E]")) ||
      failed(verifyStaticDim(op, "input", getInput(), 2, "model width E")) ||
      failed(verifyCCAParameters(*this, dimOf(getInput(), 2))))
    return failure();
  int64_t numHeads = getNumHeads(), numKvHeads = getNumKvHeads();
  ExpectedDim batchDim{dimOf(getInput(), 0), "batch"};
  ExpectedDim seqDim{dimOf(getInput(), 1), "seq"};
  ExpectedDim headDim{static_cast<int64_t>(getHeadDim()), "head_dim"};
  // A tile's results are its tokens; its input adds their history.
  ExpectedDim tokensDim = seqDim;
  if (getTokenOffset()) {
    if (failed(verifyRank(op, "query", getQuery(), 4,
                          "[batch, tokens, num_heads, head_dim]")))
      return failure();
    int64_t tokens = dimOf(getQuery(), 1);
    if (!ShapedType::isDynamic(tokens) && !ShapedType::isDynamic(seqDim.size) &&
        tokens > seqDim.size)
      return emitOpError() << "with 'token_offset' the results' " << tokens
                           << " tokens must be at most the input's "
                           << seqDim.size;
    tokensDim = {tokens, "the query's tokens"};
  }
  if (failed(verifyShape(
          op, "query", getQuery(),
          {batchDim, tokensDim, {numHeads, "num_heads"}, headDim})) ||
      failed(verifyShape(
          op, "key", getKey(),
          {batchDim, tokensDim, {numKvHeads, "num_kv_heads"}, headDim})) ||
      failed(verifyShape(
          op, "value", getValue(),
          {batchDim, tokensDim, {numKvHeads, "num_kv_heads"}, headDim})) ||
      failed(verifyTokenMask(op, "padding_mask", getPaddingMask(),
                             batchDim.size, seqDim.size, "seq")))
    return failure();
  return verifySameElementType(op, getCCAOperandNames(*this, {}));
}

LogicalResult FlashAttentionOp::verify() {
  if (getInit().getType() != getResult().getType())
    return emitOpError() << "'init' must have the result type "
                         << getResult().getType() << ", got "
                         << getInit().getType();
  if (static_cast<bool>(getLseInit()) != static_cast<bool>(getLse()))
    return emitOpError() << "has an 'lse' result exactly when it has an "
                            "'lse_init'";
  if (getLse() && getLseInit().getType() != getLse().getType())
    return emitOpError() << "'lse_init' must have the type "
                         << getLse().getType() << " of result 'lse', got "
                         << getLseInit().getType();
  if (static_cast<bool>(getQueryRowOffset()) !=
      static_cast<bool>(getQueryRowCount()))
    return emitOpError() << "'query_rows' takes an offset and a count";
  if (failed(verifyAttention(*this, getValueOrKey(), getResult())))
    return failure();
  int64_t headDim = dimOf(getQuery(), 3);
  return failure(
      failed(verifyRope(getOperation(), getQueryRopeAttr(), headDim)) ||
      failed(verifyRope(getOperation(), getKeyRopeAttr(), headDim)));
}

LogicalResult FlashAttentionGradOp::verify() {
  Operation *op = getOperation();
  if (!getValue() != !getValueGradInit())
    return emitOpError()
           << (getValue() ? "has a value but no value gradient init: 'outs' "
                            "takes three inits (dq, dk, dv)"
                          : "is K=V (no value) but has a value gradient "
                            "init: 'outs' takes two inits (dq, dkv)");
  if (getBiasGradInit() && !getBias())
    return emitOpError() << "has an 'accumulate' init for the bias gradient "
                            "but no bias";
  unsigned numInits = getDpsInits().size();
  if (op->getNumResults() != numInits)
    return emitOpError() << "has " << op->getNumResults()
                         << " results, but its inits give " << numInits;
  for (auto [index, init, result] :
       llvm::enumerate(getDpsInits(), op->getResults()))
    if (init.getType() != result.getType())
      return emitOpError() << "'outs' #" << index << " must have the type "
                           << result.getType() << " of result #" << index
                           << ", got " << init.getType();
  SmallVector<StringRef> names = {"query", "key"};
  if (getValue())
    names.push_back("value");
  names.append({"output", "output_grad"});
  if (getBias())
    names.push_back("bias");
  if (getKeyMask())
    names.push_back("key_mask");
  if (getLse())
    names.push_back("lse");
  names.append({"outs #0", "outs #1"});
  if (getValue())
    names.push_back("outs #2");
  if (failed(verifySameElementType(
          op, names, {getLse(), getBiasGradInit(), getBiasGrad()})) ||
      failed(verifyAttention(*this, getValueOrKey(), getOutput(), "output")) ||
      failed(
          verifyRope(op, getKeyRopeAttr(), dimOf(getKey(), 3), "key_rope")) ||
      failed(verifyShape(op, "output_grad", getOutputGrad(),
                         {{dimOf(getOutput(), 0), "batch"},
                          {dimOf(getOutput(), 1), "S"},
                          {dimOf(getOutput(), 2), "num_heads"},
                          {dimOf(getOutput(), 3), "value_dim"}})))
    return failure();
  // The bias gradient per query head, whatever the bias's rank: an [S, T]
  // bias's is its sum over the heads.
  if (Value biasGrad = getBiasGradInit())
    if (failed(
            verifyRank(op, "accumulate", biasGrad, 3, "[num_heads, S, T]")) ||
        failed(verifyShape(op, "accumulate", biasGrad,
                           {{dimOf(getQuery(), 2), "num_heads"},
                            {dimOf(getQuery(), 1), "S"},
                            {dimOf(getKey(), 1), "T"}})))
      return failure();
  // Accumulated in the kernel's arithmetic type.
  if (Value biasGrad = getBiasGradInit()) {
    Type queryType = getElementTypeOrSelf(getQuery().getType());
    Type expected =
        queryType.isF64() ? queryType : Float32Type::get(getContext());
    if (getElementTypeOrSelf(biasGrad.getType()) != expected)
      return emitOpError() << "'accumulate' must have element type " << expected
                           << " (the arithmetic type for " << queryType
                           << " operands), got "
                           << getElementTypeOrSelf(biasGrad.getType());
  }
  return failure(
      failed(verifyGradType(op, "query_grad", getQueryGrad(), "query",
                            getQuery())) ||
      failed(verifyGradType(op, "key_grad", getKeyGrad(), "key", getKey())) ||
      (getValue() && failed(verifyGradType(op, "value_grad", getValueGrad(),
                                           "value", getValue()))));
}

/// The results are one variadic list; they print under their roles' names.
void FlashAttentionGradOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getQueryGrad(), "query_grad");
  setNameFn(getKeyGrad(), "key_grad");
  if (Value valueGrad = getValueGrad())
    setNameFn(valueGrad, "value_grad");
  if (Value biasGrad = getBiasGrad())
    setNameFn(biasGrad, "bias_grad");
}

using tiling::TileSlices;

/// The result tile of an op whose iteration space is its result's own
/// dimensions: the iteration tile itself.
static LogicalResult
identityTilePosition(ArrayRef<OpFoldResult> offsets,
                     ArrayRef<OpFoldResult> sizes,
                     SmallVector<OpFoldResult> &resultOffsets,
                     SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets.assign(offsets.begin(), offsets.end());
  resultSizes.assign(sizes.begin(), sizes.end());
  return success();
}

/// The iteration space is (batch, token, head, head dim): every point owns
/// its output element and reduces over the whole model width itself.
SmallVector<utils::IteratorType> FusedProjectionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel);
}

SmallVector<Range> FusedProjectionOp::getIterationDomain(OpBuilder &builder) {
  Location loc = getLoc();
  OpFoldResult zero = builder.getIndexAttr(0), one = builder.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t dim = 0; dim < 4; ++dim)
    domain.push_back(
        {zero, tensor::getMixedSize(builder, loc, getInit(), dim), one});
  return domain;
}

FailureOr<TilingResult>
FusedProjectionOp::getTiledImplementation(OpBuilder &builder,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  int64_t headDim = getHeadDim();
  std::optional<int64_t> tileHeads = getConstantIntValue(sizes[2]);
  std::optional<int64_t> tileDims = getConstantIntValue(sizes[3]);
  // The tile's weight rows must be one contiguous range: whole heads, or
  // a part of one head. A RoPE pair spans its head: only whole heads.
  bool wholeHeads = tileDims == headDim;
  if (!wholeHeads && (getRopeAttr() || tileHeads != 1 || !tileDims))
    return emitOpError() << "a tile takes whole heads, or a static part of "
                            "one head without rope";
  AffineExpr d0 = builder.getAffineDimExpr(0), d1 = builder.getAffineDimExpr(1);
  OpFoldResult firstFeature = affine::makeComposedFoldedAffineApply(
      builder, loc, d0 * headDim + d1, {offsets[2], offsets[3]});
  OpFoldResult features = wholeHeads
                              ? affine::makeComposedFoldedAffineApply(
                                    builder, loc, d0 * headDim, {sizes[2]})
                              : sizes[3];
  if (!getConstantIntValue(features))
    return emitOpError() << "a tile needs a static number of features (its "
                            "weight rows)";
  OpFoldResult zero = builder.getIndexAttr(0);
  OpFoldResult width = tensor::getMixedSize(builder, loc, getInput(), 2);
  TileSlices slices(builder, loc);
  Value input = slices.extract(getInput(), {offsets[0], offsets[1], zero},
                               {sizes[0], sizes[1], width});
  Value weight =
      getTransposedWeight()
          ? slices.extract(getWeight(), {zero, firstFeature}, {width, features})
          : slices.extract(getWeight(), {firstFeature, zero},
                           {features, width});
  Value bias = getBias() ? slices.extract(getBias(), {firstFeature}, {features})
                         : Value();
  Value init = slices.extract(getInit(), offsets, sizes);
  // The tile's tokens keep their positions for the rotation.
  Value tokenOffset = getValueOrCreateConstantIndexOp(builder, loc, offsets[1]);
  if (Value enclosing = getTokenOffset())
    tokenOffset = arith::AddIOp::create(builder, loc, enclosing, tokenOffset);

  auto tiled = FusedProjectionOp::create(
      builder, loc, init.getType(), input, weight, bias, tokenOffset, init,
      builder.getI64IntegerAttr(wholeHeads ? headDim : *tileDims),
      getRopeAttr(), getBlockSAttr(), getBlockNAttr(), getBlockKAttr(),
      getTransposedWeightAttr());
  return TilingResult{{tiled}, {tiled.getResult()}, slices.ops};
}

LogicalResult FusedProjectionOp::getResultTilePosition(
    OpBuilder &builder, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  return identityTilePosition(offsets, sizes, resultOffsets, resultSizes);
}

/// The iteration space is (out, in): every point owns its result element and
/// reduces over all the tokens itself.
SmallVector<utils::IteratorType> FusedWeightGradOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel);
}

SmallVector<Range> FusedWeightGradOp::getIterationDomain(OpBuilder &builder) {
  OpFoldResult zero = builder.getIndexAttr(0), one = builder.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t dim = 0; dim < 2; ++dim)
    domain.push_back(
        {zero, tensor::getMixedSize(builder, getLoc(), getInit(), dim), one});
  return domain;
}

FailureOr<TilingResult>
FusedWeightGradOp::getTiledImplementation(OpBuilder &builder,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  if (!getConstantIntValue(sizes[0]) || !getConstantIntValue(sizes[1]))
    return emitOpError() << "a tile needs static numbers of output and input "
                            "features (tile sizes that divide "
                         << getType() << ")";
  OpFoldResult zero = builder.getIndexAttr(0);
  OpFoldResult tokens = tensor::getMixedSize(builder, loc, getInput(), 0);
  TileSlices slices(builder, loc);
  Value input = slices.extract(getInput(), {zero, offsets[1]},
                               {tokens, sizes[1]});
  Value resultGrad = slices.extract(getResultGrad(), {zero, offsets[0]},
                                    {tokens, sizes[0]});
  Value init = slices.extract(getInit(), offsets, sizes);
  auto tiled = FusedWeightGradOp::create(
      builder, loc, init.getType(), input, resultGrad, init, getBlockMAttr(),
      getBlockNAttr(), getBlockKAttr());
  return TilingResult{{tiled}, {tiled.getResult()}, slices.ops};
}

LogicalResult FusedWeightGradOp::getResultTilePosition(
    OpBuilder &builder, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  return identityTilePosition(offsets, sizes, resultOffsets, resultSizes);
}

/// The iteration space is (batch, kv head, query row): every point owns its
/// output rows and reads all the keys of its batch and head, so all three
/// dimensions are parallel and the reduction over keys stays in the op.
SmallVector<utils::IteratorType> FlashAttentionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
}

SmallVector<Range> FlashAttentionOp::getIterationDomain(OpBuilder &builder) {
  Location loc = getLoc();
  OpFoldResult zero = builder.getIndexAttr(0), one = builder.getIndexAttr(1);
  return {{zero, tensor::getMixedSize(builder, loc, getQuery(), 0), one},
          {zero, tensor::getMixedSize(builder, loc, getKey(), 2), one},
          {zero, tensor::getMixedSize(builder, loc, getQuery(), 1), one}};
}

/// Offsets and sizes of the `[batch, seq, heads, dim]` slice of `tensor`
/// that (batch, heads, rows) tile covers, `headsPerTile` heads per kv head.
static void perHeadSlice(OpBuilder &builder, Location loc, Value tensor,
                         ArrayRef<OpFoldResult> offsets,
                         ArrayRef<OpFoldResult> sizes, OpFoldResult rowOffset,
                         OpFoldResult rowCount, int64_t headsPerTile,
                         SmallVectorImpl<OpFoldResult> &sliceOffsets,
                         SmallVectorImpl<OpFoldResult> &sliceSizes) {
  AffineExpr d0 = builder.getAffineDimExpr(0);
  sliceOffsets.assign({offsets[0], rowOffset,
                       affine::makeComposedFoldedAffineApply(
                           builder, loc, d0 * headsPerTile, {offsets[1]}),
                       builder.getIndexAttr(0)});
  sliceSizes.assign({sizes[0], rowCount,
                     affine::makeComposedFoldedAffineApply(
                         builder, loc, d0 * headsPerTile, {sizes[1]}),
                     tensor::getMixedSize(builder, loc, tensor, 3)});
}

/// Offsets and sizes of the `[batch, seq, heads]` slice of a log-sum-exp
/// tensor that (batch, heads, rows) tile covers, `headsPerTile` heads per kv
/// head.
static void perHeadRowSlice(OpBuilder &builder, Location loc,
                            ArrayRef<OpFoldResult> offsets,
                            ArrayRef<OpFoldResult> sizes,
                            OpFoldResult rowOffset, OpFoldResult rowCount,
                            int64_t headsPerTile,
                            SmallVectorImpl<OpFoldResult> &sliceOffsets,
                            SmallVectorImpl<OpFoldResult> &sliceSizes) {
  AffineExpr d0 = builder.getAffineDimExpr(0);
  sliceOffsets.assign({offsets[0], rowOffset,
                       affine::makeComposedFoldedAffineApply(
                           builder, loc, d0 * headsPerTile, {offsets[1]})});
  sliceSizes.assign({sizes[0], rowCount,
                     affine::makeComposedFoldedAffineApply(
                         builder, loc, d0 * headsPerTile, {sizes[1]})});
}

FailureOr<TilingResult>
FlashAttentionOp::getTiledImplementation(OpBuilder &builder,
                                         ArrayRef<OpFoldResult> offsets,
                                         ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  int64_t group = dimOf(getQuery(), 2) / dimOf(getKey(), 2);
  OpFoldResult zero = builder.getIndexAttr(0);
  OpFoldResult keys = tensor::getMixedSize(builder, loc, getKey(), 1);
  TileSlices slices(builder, loc);
  SmallVector<OpFoldResult> sliceOffsets, sliceSizes;
  auto headSlice = [&](Value tensor, OpFoldResult rowOffset,
                       OpFoldResult rowCount, int64_t headsPerTile) {
    perHeadSlice(builder, loc, tensor, offsets, sizes, rowOffset, rowCount,
                 headsPerTile, sliceOffsets, sliceSizes);
    return slices.extract(tensor, sliceOffsets, sliceSizes);
  };

  Value query = headSlice(getQuery(), offsets[2], sizes[2], group);
  Value key = headSlice(getKey(), zero, keys, 1);
  Value value = getValue() ? headSlice(getValue(), zero, keys, 1) : Value();
  Value init = headSlice(getInit(), offsets[2], sizes[2], group);
  Value lseInit;
  if (getLseInit()) {
    perHeadRowSlice(builder, loc, offsets, sizes, offsets[2], sizes[2], group,
                    sliceOffsets, sliceSizes);
    lseInit = slices.extract(getLseInit(), sliceOffsets, sliceSizes);
  }
  Value bias;
  if (Value fullBias = getBias()) {
    if (cast<RankedTensorType>(fullBias.getType()).getRank() == 3) {
      AffineExpr d0 = builder.getAffineDimExpr(0);
      bias = slices.extract(fullBias,
                            {affine::makeComposedFoldedAffineApply(
                                 builder, loc, d0 * group, {offsets[1]}),
                             offsets[2], zero},
                            {affine::makeComposedFoldedAffineApply(
                                 builder, loc, d0 * group, {sizes[1]}),
                             sizes[2], keys});
    } else {
      bias = slices.extract(fullBias, {offsets[2], zero}, {sizes[2], keys});
    }
  }
  Value keyMask;
  if (Value fullMask = getKeyMask())
    keyMask = slices.extract(fullMask, {offsets[0], zero}, {sizes[0], keys});

  // The tile's rows keep their place among the whole attention's rows.
  Value rowOffset = getValueOrCreateConstantIndexOp(builder, loc, offsets[2]);
  Value rowCount = getQueryRowCount();
  if (Value enclosingOffset = getQueryRowOffset())
    rowOffset = arith::AddIOp::create(builder, loc, enclosingOffset, rowOffset);
  else
    rowCount = tensor::DimOp::create(builder, loc, getQuery(), 1);

  auto tiled = FlashAttentionOp::create(
      builder, loc, init.getType(),
      lseInit ? lseInit.getType() : Type(), query, key, value, bias, keyMask,
      rowOffset, rowCount, init, lseInit, getCausalAttr(), getWindowAttr(),
      getScaleAttr(), getQueryRopeAttr(), getKeyRopeAttr(), getBlockQAttr(),
      getBlockKvAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slices.ops};
}

LogicalResult FlashAttentionOp::getResultTilePosition(
    OpBuilder &builder, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  int64_t group = dimOf(getQuery(), 2) / dimOf(getKey(), 2);
  if (resultNumber == 1)
    perHeadRowSlice(builder, getLoc(), offsets, sizes, offsets[2], sizes[2],
                    group, resultOffsets, resultSizes);
  else
    perHeadSlice(builder, getLoc(), getInit(), offsets, sizes, offsets[2],
                 sizes[2], group, resultOffsets, resultSizes);
  return success();
}

/// The iteration space is (batch, kv head): the gradients of a KV head and
/// of its query heads depend on nothing else, so both are parallel; the
/// reductions over query rows and keys stay in the op. The bias gradient
/// sums every batch entry's dS: with it, the batch is a reduction.
SmallVector<utils::IteratorType> FlashAttentionGradOp::getLoopIteratorTypes() {
  return {getBiasGradInit() ? utils::IteratorType::reduction
                            : utils::IteratorType::parallel,
          utils::IteratorType::parallel};
}

SmallVector<Range>
FlashAttentionGradOp::getIterationDomain(OpBuilder &builder) {
  Location loc = getLoc();
  OpFoldResult zero = builder.getIndexAttr(0), one = builder.getIndexAttr(1);
  return {{zero, tensor::getMixedSize(builder, loc, getQuery(), 0), one},
          {zero, tensor::getMixedSize(builder, loc, getKey(), 2), one}};
}

/// Offsets and sizes of the slice of the `[batch, rows, heads, dim]`
/// operand `tensor` that a (batch, kv heads) tile of attn.flash_attention_grad
/// covers: all its rows, `headsPerTile` heads per KV head (G on the query
/// side, 1 on the key side).
static void gradHeadSlice(OpBuilder &builder, Location loc, Value tensor,
                          ArrayRef<OpFoldResult> offsets,
                          ArrayRef<OpFoldResult> sizes, int64_t headsPerTile,
                          SmallVectorImpl<OpFoldResult> &sliceOffsets,
                          SmallVectorImpl<OpFoldResult> &sliceSizes) {
  perHeadSlice(builder, loc, tensor, offsets, sizes, builder.getIndexAttr(0),
               tensor::getMixedSize(builder, loc, tensor, 1), headsPerTile,
               sliceOffsets, sliceSizes);
}

/// Heads per KV head of operand or result `tensor`: G on the query side.
static int64_t gradHeadsPerTile(FlashAttentionGradOp op, Value tensor) {
  return dimOf(tensor, 2) / dimOf(op.getKey(), 2);
}

/// Offsets and sizes of the `[heads, S, T]` slice (a per-head bias or its
/// gradient) that a (batch, kv heads) tile reads: `group` query heads per
/// KV head, every row and key.
static void gradBiasSlice(OpBuilder &builder, Location loc, Value tensor,
                          ArrayRef<OpFoldResult> offsets,
                          ArrayRef<OpFoldResult> sizes, int64_t group,
                          SmallVectorImpl<OpFoldResult> &sliceOffsets,
                          SmallVectorImpl<OpFoldResult> &sliceSizes) {
  AffineExpr d0 = builder.getAffineDimExpr(0);
  OpFoldResult zero = builder.getIndexAttr(0);
  sliceOffsets.assign({affine::makeComposedFoldedAffineApply(
                           builder, loc, d0 * group, {offsets[1]}),
                       zero, zero});
  sliceSizes.assign({affine::makeComposedFoldedAffineApply(
                         builder, loc, d0 * group, {sizes[1]}),
                     tensor::getMixedSize(builder, loc, tensor, 1),
                     tensor::getMixedSize(builder, loc, tensor, 2)});
}

FailureOr<TilingResult>
FlashAttentionGradOp::getTiledImplementation(OpBuilder &builder,
                                             ArrayRef<OpFoldResult> offsets,
                                             ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  TileSlices slices(builder, loc);
  SmallVector<OpFoldResult> sliceOffsets, sliceSizes;
  auto headSlice = [&](Value tensor) {
    gradHeadSlice(builder, loc, tensor, offsets, sizes,
                  gradHeadsPerTile(*this, tensor), sliceOffsets, sliceSizes);
    return slices.extract(tensor, sliceOffsets, sliceSizes);
  };
  Value query = headSlice(getQuery()), key = headSlice(getKey());
  Value value = getValue() ? headSlice(getValue()) : Value();
  Value output = headSlice(getOutput()),
        outputGrad = headSlice(getOutputGrad());
  int64_t group = gradHeadsPerTile(*this, getQuery());
  auto biasSlice = [&](Value tensor) {
    gradBiasSlice(builder, loc, tensor, offsets, sizes, group, sliceOffsets,
                  sliceSizes);
    return slices.extract(tensor, sliceOffsets, sliceSizes);
  };
  // An [S, T] bias serves every head whole.
  Value bias = getBias();
  if (bias && cast<RankedTensorType>(bias.getType()).getRank() == 3)
    bias = biasSlice(bias);
  SmallVector<Value> inits = llvm::map_to_vector(
      getDpsInits().take_front(getValue() ? 3 : 2), headSlice);
  Value biasGradInit =
      getBiasGradInit() ? biasSlice(getBiasGradInit()) : Value();
  if (biasGradInit)
    inits.push_back(biasGradInit);
  Value keyMask;
  if (Value fullMask = getKeyMask())
    keyMask = slices.extract(
        fullMask, {offsets[0], builder.getIndexAttr(0)},
        {sizes[0], tensor::getMixedSize(builder, loc, fullMask, 1)});
  Value lse;
  if (Value fullLse = getLse()) {
    perHeadRowSlice(builder, loc, offsets, sizes, builder.getIndexAttr(0),
                    tensor::getMixedSize(builder, loc, fullLse, 1), group,
                    sliceOffsets, sliceSizes);
    lse = slices.extract(fullLse, sliceOffsets, sliceSizes);
  }

  auto tiled = FlashAttentionGradOp::create(
      builder, loc, ValueRange(inits).getTypes(), query, key, value, output,
      outputGrad, bias, keyMask, lse, inits[0], inits[1],
      value ? inits[2] : Value(), biasGradInit, getCausalAttr(),
      getWindowAttr(), getScaleAttr(), getKeyRopeAttr(), getBlockQAttr(),
      getBlockKvAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slices.ops};
}

LogicalResult FlashAttentionGradOp::getResultTilePosition(
    OpBuilder &builder, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  Value init = getDpsInits()[resultNumber];
  if (init == getBiasGradInit())
    gradBiasSlice(builder, getLoc(), init, offsets, sizes,
                  gradHeadsPerTile(*this, getQuery()), resultOffsets,
                  resultSizes);
  else
    gradHeadSlice(builder, getLoc(), init, offsets, sizes,
                  gradHeadsPerTile(*this, init), resultOffsets, resultSizes);
  return success();
}

/// The iteration space is (batch, token): a token's three results read its
/// own input row and the halo before it, so both dimensions are parallel.
SmallVector<utils::IteratorType> CCAPrologueOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel);
}

SmallVector<Range> CCAPrologueOp::getIterationDomain(OpBuilder &builder) {
  Location loc = getLoc();
  OpFoldResult zero = builder.getIndexAttr(0), one = builder.getIndexAttr(1);
  return {{zero, tensor::getMixedSize(builder, loc, getInits()[0], 0), one},
          {zero, tensor::getMixedSize(builder, loc, getInits()[0], 1), one}};
}

FailureOr<TilingResult>
CCAPrologueOp::getTiledImplementation(OpBuilder &builder,
                                      ArrayRef<OpFoldResult> offsets,
                                      ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  // The op's input rows are its H = seq - R history rows, then its R tokens.
  // Tile tokens [o, o + n) read input rows [max(0, H + o - halo), H + o + n).
  AffineExpr d0 = builder.getAffineDimExpr(0), d1 = builder.getAffineDimExpr(1),
             d2 = builder.getAffineDimExpr(2);
  OpFoldResult inputRows = tensor::getMixedSize(builder, loc, getInput(), 1);
  OpFoldResult tokens = tensor::getMixedSize(builder, loc, getInits()[0], 1);
  OpFoldResult history = affine::makeComposedFoldedAffineApply(
      builder, loc, d0 - d1, {inputRows, tokens});
  OpFoldResult firstRow = affine::makeComposedFoldedAffineMax(
      builder, loc,
      AffineMap::get(2, 0,
                     {d0 + d1 - getHalo(), builder.getAffineConstantExpr(0)},
                     builder.getContext()),
      {history, offsets[1]});
  OpFoldResult rows = affine::makeComposedFoldedAffineApply(
      builder, loc, d0 + d1 + d2 - builder.getAffineDimExpr(3),
      {history, offsets[1], sizes[1], firstRow});

  TileSlices slices(builder, loc);
  OpFoldResult rowOffsets[] = {offsets[0], firstRow};
  OpFoldResult rowSizes[] = {sizes[0], rows};
  Value input = slices.extractLeading(getInput(), rowOffsets, rowSizes);
  Value mask = getPaddingMask() ? slices.extractLeading(getPaddingMask(),
                                                        rowOffsets, rowSizes)
                                : Value();
  SmallVector<Value> inits;
  SmallVector<Type> resultTypes;
  for (Value init : getInits()) {
    inits.push_back(slices.extractLeading(init, offsets, sizes));
    resultTypes.push_back(inits.back().getType());
  }
  // The tile's tokens keep their positions for the rotation.
  Value tokenOffset = getValueOrCreateConstantIndexOp(builder, loc, offsets[1]);
  if (Value enclosing = getTokenOffset())
    tokenOffset = arith::AddIOp::create(builder, loc, enclosing, tokenOffset);

  auto tiled = CCAPrologueOp::create(
      builder, loc, resultTypes, input, getWq(), getWk(), getWv(), getWvPrev(),
      getConvDwWeight(), getConvDwBias(), getConvGWeight(), getConvGBias(),
      getTemp(), mask, tokenOffset, inits, getNumHeadsAttr(),
      getNumKvHeadsAttr(), getHeadDimAttr(), getConvKernelSizesAttr(),
      getQkMeanAttr(), getValueShiftAttr(), getTemperatureAttr(), getEpsAttr(),
      getNormAttr(), getRopeAttr(), getBlockSAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slices.ops};
}

LogicalResult CCAPrologueOp::getResultTilePosition(
    OpBuilder &builder, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  tiling::leadingDimsSlice(builder, getLoc(), getInits()[resultNumber], offsets,
                           sizes, resultOffsets, resultSizes);
  return success();
}

//===----------------------------------------------------------------------===//
// KV cache and decode ops
//===----------------------------------------------------------------------===//

/// The checks the decode layer ops share: the input, result, positions,
/// lengths and the caches.
template <typename DecodeOp>
static LogicalResult verifyDecodeOperands(DecodeOp op, Value valueCache,
                                          Value valueCacheOut) {
  Operation *operation = op.getOperation();
  if (failed(
          verifyLayerInputAndResult(operation, op.getInput(), op.getResult())))
    return failure();
  int64_t batch = dimOf(op.getInput(), 0);
  int64_t numKvHeads = op.getNumKvHeads(), headDim = op.getHeadDim();
  if (failed(verifyRank(operation, "positions", op.getPositions(), 1,
                        "[batch]")) ||
      failed(verifyPerSequence(operation, "positions", op.getPositions(),
                               batch)) ||
      (op.getLengths() &&
       (failed(
            verifyRank(operation, "lengths", op.getLengths(), 1, "[batch]")) ||
        failed(verifyPerSequence(operation, "lengths", op.getLengths(),
                                 batch)))) ||
      (op.getBlockTable() &&
       failed(verifyRank(operation, "block_table", op.getBlockTable(), 2,
                         "[batch, pages_per_sequence]"))) ||
      failed(verifyCache(operation, "key_cache", op.getKeyCache(),
                         op.getBlockTable(), batch, numKvHeads, headDim)) ||
      failed(verifyUpdatedType(operation, "key_cache", op.getKeyCacheOut(),
                               "key_cache", op.getKeyCache())))
    return failure();
  if (!valueCache)
    return success();
  if (valueCache.getType() != op.getKeyCache().getType())
    return op.emitOpError()
           << "'value_cache' must have the type " << op.getKeyCache().getType()
           << " of 'key_cache', got " << valueCache.getType();
  return verifyUpdatedType(operation, "value_cache", valueCacheOut,
                           "value_cache", valueCache);
}

LogicalResult QKVDecodeOp::verify() {
  Operation *op = getOperation();
  if (failed(verifySharedProjections(*this)))
    return failure();
  StringRef mode = stringifySharingMode(getSharing());
  if (sharesKeyValue() && getValueCache())
    return emitOpError() << "sharing mode '" << mode
                         << "' caches one tensor (the shared key/value); "
                            "'cache' takes one operand, got two";
  if (!sharesKeyValue() && !getValueCache())
    return emitOpError() << "sharing mode '" << mode
                         << "' caches keys and values; 'cache' takes two "
                            "operands (key, value), got one";
  if (static_cast<bool>(getValueCache()) !=
      static_cast<bool>(getValueCacheOut()))
    return emitOpError() << "the updated value cache is returned exactly when "
                            "a value cache is given";
  if (failed(verifyDecodeOperands(*this, getValueCache(), getValueCacheOut())))
    return failure();
  SmallVector<std::pair<StringRef, Value>> floats;
  for (auto [name, value] : llvm::zip_equal(
           getProjectionOperandNames(*this),
           getOperands().take_front(getProjectionOperandNames(*this).size())))
    floats.push_back({name, value});
  floats.push_back({"key_cache", getKeyCache()});
  floats.push_back({"value_cache", getValueCache()});
  return verifyFloatElementTypes(op, floats);
}

LogicalResult CCADecodeOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "input", getInput(), 3, "[batch, seq, E]")) ||
      failed(verifyStaticDim(op, "input", getInput(), 2, "model width E")))
    return failure();
  int64_t width = dimOf(getInput(), 2), batch = dimOf(getInput(), 0);
  if (failed(verifyCCAParameters(*this, width)) ||
      failed(verifyShape(
          op, "wo", getWo(),
          {{width, "E"}, {getQueryLatentDim(), "num_heads * head_dim"}},
          /*requireStatic=*/true)) ||
      failed(verifyWindow(op, getWindow())) ||
      failed(verifyDecodeOperands(*this, getValueCache(), getValueCacheOut())))
    return failure();

  if (failed(verifyShape(
          op, "conv_state", getConvState(),
          {{batch, "batch"},
           {getConvPadding(), "(k0 - 1) + (k1 - 1)"},
           {getConvChannels(), "(num_heads + num_kv_heads) * head_dim"}})) ||
      failed(verifyUpdatedType(op, "conv_state", getConvStateOut(),
                               "conv_state", getConvState())))
    return failure();
  if (getValueShift() != static_cast<bool>(getShiftState()))
    return emitOpError() << (getValueShift()
                                 ? "value_shift needs the previous token's "
                                   "value half: 'shift_state' is missing"
                                 : "'shift_state' is given but value_shift "
                                   "is not set");
  if (static_cast<bool>(getShiftState()) !=
      static_cast<bool>(getShiftStateOut()))
    return emitOpError() << "the updated shift state is returned exactly when "
                            "a shift state is given";
  if (getShiftState() &&
      (failed(verifyShape(
           op, "shift_state", getShiftState(),
           {{batch, "batch"},
            {1, "1"},
            {getKeyLatentDim() / 2, "num_kv_heads * head_dim / 2"}})) ||
       failed(verifyUpdatedType(op, "shift_state", getShiftStateOut(),
                                "shift_state", getShiftState()))))
    return failure();

  return verifyFloatElementTypes(op, {{"input", getInput()},
                                      {"wq", getWq()},
                                      {"wk", getWk()},
                                      {"wv", getWv()},
                                      {"wv_prev", getWvPrev()},
                                      {"conv_dw_weight", getConvDwWeight()},
                                      {"conv_dw_bias", getConvDwBias()},
                                      {"conv_g_weight", getConvGWeight()},
                                      {"conv_g_bias", getConvGBias()},
                                      {"temp", getTemp()},
                                      {"wo", getWo()},
                                      {"key_cache", getKeyCache()},
                                      {"value_cache", getValueCache()},
                                      {"conv_state", getConvState()},
                                      {"shift_state", getShiftState()}});
}

void QKVDecodeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropNoOpLayerRope<QKVDecodeOp>>(context);
}

void CCADecodeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropNoOpLayerRope<CCADecodeOp>>(context);
}

LogicalResult CacheUpdateOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "new_rows", getNewRows(), 4,
                        "[batch, T, kv_heads, head_dim]")) ||
      failed(
          verifyStaticDim(op, "new_rows", getNewRows(), 2, "kv head count")) ||
      failed(verifyStaticDim(op, "new_rows", getNewRows(), 3, "head dim")))
    return failure();
  int64_t batch = dimOf(getNewRows(), 0);
  if (failed(verifyRank(op, "positions", getPositions(), 1, "[batch]")) ||
      failed(verifyPerSequence(op, "positions", getPositions(), batch)) ||
      (getLengths() &&
       (failed(verifyRank(op, "lengths", getLengths(), 1, "[batch]")) ||
        failed(verifyPerSequence(op, "lengths", getLengths(), batch)))) ||
      (getBlockTable() &&
       failed(verifyRank(op, "block_table", getBlockTable(), 2,
                         "[batch, pages_per_sequence]"))) ||
      failed(verifyCache(op, "cache", getCache(), getBlockTable(), batch,
                         dimOf(getNewRows(), 2), dimOf(getNewRows(), 3))))
    return failure();
  return verifyFloatElementTypes(
      op, {{"cache", getCache()}, {"new_rows", getNewRows()}});
}

LogicalResult CacheGatherOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "cache", getCache(), 4,
                        "[num_pages, page_size, kv_heads, head_dim]")) ||
      failed(verifyRank(op, "block_table", getBlockTable(), 2,
                        "[batch, pages_per_sequence]")))
    return failure();
  int64_t pageSize = dimOf(getCache(), 1);
  int64_t pages = dimOf(getBlockTable(), 1);
  int64_t capacity =
      ShapedType::isDynamic(pageSize) || ShapedType::isDynamic(pages)
          ? ShapedType::kDynamic
          : pageSize * pages;
  if (failed(verifyShape(op, "result", getResult(),
                         {{dimOf(getBlockTable(), 0), "batch"},
                          {capacity, "pages_per_sequence * page_size"},
                          {dimOf(getCache(), 2), "kv_heads"},
                          {dimOf(getCache(), 3), "head_dim"}})))
    return failure();
  return verifyFloatElementTypes(
      op, {{"cache", getCache()}, {"result", getResult()}});
}

LogicalResult StateUpdateOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, "state", getState(), 3, "[batch, P, channels]")) ||
      failed(verifyStaticDim(op, "state", getState(), 1, "row count P")))
    return failure();
  int64_t batch = dimOf(getState(), 0);
  if (failed(verifyShape(op, "new_rows", getNewRows(),
                         {{batch, "batch"},
                          {ShapedType::kDynamic, "T"},
                          {dimOf(getState(), 2), "channels"}})) ||
      (getLengths() &&
       (failed(verifyRank(op, "lengths", getLengths(), 1, "[batch]")) ||
        failed(verifyPerSequence(op, "lengths", getLengths(), batch)))))
    return failure();
  return verifyFloatElementTypes(
      op, {{"state", getState()}, {"new_rows", getNewRows()}});
}

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `%q, %k, %v, %o, %do`, or `%q, %kv, %o, %do` for K=V (no value).
static ParseResult
parseAttentionGradOperands(OpAsmParser &parser,
                           OpAsmParser::UnresolvedOperand &query,
                           OpAsmParser::UnresolvedOperand &key,
                           std::optional<OpAsmParser::UnresolvedOperand> &value,
                           OpAsmParser::UnresolvedOperand &output,
                           OpAsmParser::UnresolvedOperand &outputGrad) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<OpAsmParser::UnresolvedOperand, 5> operands;
  if (parser.parseOperandList(operands))
    return failure();
  if (operands.size() != 4 && operands.size() != 5)
    return parser.emitError(loc)
           << "expected the query, key, value, output and output gradient "
              "(or, for K=V, the query, the shared key, the output and the "
              "output gradient), got "
           << operands.size() << " operands";
  query = operands[0];
  key = operands[1];
  if (operands.size() == 5)
    value = operands[2];
  output = operands[operands.size() - 2];
  outputGrad = operands.back();
  return success();
}

static void printAttentionGradOperands(OpAsmPrinter &printer, Operation *,
                                       Value query, Value key, Value value,
                                       Value output, Value outputGrad) {
  printer << query << ", " << key << ", ";
  if (value)
    printer << value << ", ";
  printer << output << ", " << outputGrad;
}

#define GET_OP_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnOps.cpp.inc"
