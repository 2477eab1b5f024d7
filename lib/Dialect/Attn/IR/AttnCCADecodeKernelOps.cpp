//===- AttnCCADecodeKernelOps.cpp - attn.cca_decode_prologue ----*- C++ -*-===//
//
// Verifier and TilingInterface of the CCA decode-step prologue kernel op.
// As for every attn op,
// each error names the operand, result or attribute at fault and states the
// expected and the actual value.
//
//===----------------------------------------------------------------------===//

#include "TileSlices.h"
#include "VerifyUtils.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace attnfuse::attn;

namespace {

using verify::ExpectedDim;
using verify::formatShape;

/// Checks the decode prologue's operands and results one after the other;
/// the first mismatch is reported and the rest skipped.
class DecodePrologueVerifier {
public:
  explicit DecodePrologueVerifier(CCADecodePrologueOp op) : op(op) {}

  LogicalResult verify();

private:
  /// `value` (named `name`) has rank `expected.size()` and matching sizes;
  /// with `requireStatic` (parameters) no dimension may be dynamic.
  LogicalResult shape(StringRef name, Value value,
                      ArrayRef<ExpectedDim> expected,
                      bool requireStatic = false);
  LogicalResult elementTypes();

  CCADecodePrologueOp op;
};

LogicalResult DecodePrologueVerifier::shape(StringRef name, Value value,
                                            ArrayRef<ExpectedDim> expected,
                                            bool requireStatic) {
  return verify::verifyShape(op, name, value, expected, requireStatic);
}

LogicalResult DecodePrologueVerifier::elementTypes() {
  Type expected = getElementTypeOrSelf(op.getQr().getType());
  std::pair<StringRef, Value> floats[] = {
      {"kr", op.getKr()},
      {"v_cur", op.getVCur()},
      {"v_prev", op.getVPrev()},
      {"conv_dw_weight", op.getConvDwWeight()},
      {"conv_dw_bias", op.getConvDwBias()},
      {"conv_g_weight", op.getConvGWeight()},
      {"conv_g_bias", op.getConvGBias()},
      {"temp", op.getTemp()},
      {"conv_state", op.getConvState()},
      {"shift_state", op.getShiftState()},
      {"query", op.getQuery()},
      {"key", op.getKey()},
      {"value", op.getValue()},
      {"conv_state_out", op.getConvStateOut()},
      {"shift_state_out", op.getShiftStateOut()}};
  for (auto [name, value] : floats) {
    if (!value)
      continue;
    Type actual = getElementTypeOrSelf(value.getType());
    if (actual != expected)
      return op.emitOpError()
             << "'" << name << "' has element type " << actual << ", expected "
             << expected << " (the element type of 'qr')";
  }
  return success();
}

LogicalResult DecodePrologueVerifier::verify() {
  int64_t numHeads = op.getNumHeads(), numKvHeads = op.getNumKvHeads();
  int64_t headDim = op.getHeadDim();
  if (failed(verify::verifyHeads(op, numHeads, numKvHeads)))
    return failure();
  ArrayRef<int64_t> kernels = op.getConvKernelSizes();
  if (kernels.size() != 2 || kernels[0] < 1 || kernels[1] < 1)
    return op.emitOpError() << "conv_kernel_sizes must hold two positive "
                               "kernel sizes [k0, k1], got "
                            << formatShape(kernels);

  int64_t keyLatent = op.getKeyLatentDim();
  bool shift = op.getValueShift();
  if (shift && keyLatent % 2 != 0)
    return op.emitOpError()
           << "value_shift splits the num_kv_heads * head_dim = " << keyLatent
           << " value channels in two halves; it must be even";
  auto presence = [&](StringRef name, bool present) -> LogicalResult {
    if (present == shift)
      return success();
    if (shift)
      return op.emitOpError() << "value_shift needs '" << name << "'";
    return op.emitOpError()
           << "'" << name << "' is given but value_shift is not set";
  };
  if (failed(presence("v_prev", op.getVPrev() != nullptr)) ||
      failed(presence("shift_state", op.getShiftState() != nullptr)) ||
      failed(presence("shift_state_out", op.getShiftStateOut() != nullptr)))
    return failure();
  auto qrType = cast<RankedTensorType>(op.getQr().getType());
  if (failed(verify::verifyRank(op, "qr", op.getQr(), 3,
                                "[batch, 1, num_heads * head_dim]")))
    return failure();
  ExpectedDim batch{qrType.getDimSize(0), "batch"};
  ExpectedDim one{1, "1"};
  ExpectedDim queryDim{op.getQueryLatentDim(), "num_heads * head_dim"};
  ExpectedDim keyDim{keyLatent, "num_kv_heads * head_dim"};
  ExpectedDim halfKeyDim{keyLatent / 2, "num_kv_heads * head_dim / 2"};
  ExpectedDim valueDim = shift ? halfKeyDim : keyDim;
  ExpectedDim channels{op.getConvChannels(),
                       "(num_heads + num_kv_heads) * head_dim"};
  ExpectedDim padding{op.getConvPadding(), "(k0 - 1) + (k1 - 1)"};
  ExpectedDim head{headDim, "head_dim"};
  ExpectedDim queryHeads{numHeads, "num_heads"};
  ExpectedDim kvHeads{numKvHeads, "num_kv_heads"};
  auto param = [&](StringRef name, Value value,
                   ArrayRef<ExpectedDim> expected) {
    return shape(name, value, expected, /*requireStatic=*/true);
  };

  if (failed(shape("qr", op.getQr(), {batch, one, queryDim})) ||
      failed(shape("kr", op.getKr(), {batch, one, keyDim})) ||
      failed(shape("v_cur", op.getVCur(), {batch, one, valueDim})) ||
      (shift &&
       failed(shape("v_prev", op.getVPrev(), {batch, one, halfKeyDim}))) ||
      failed(param("conv_dw_weight", op.getConvDwWeight(),
                   {channels, one, {kernels[0], "k0"}})) ||
      failed(param("conv_dw_bias", op.getConvDwBias(), {channels})) ||
      failed(param("conv_g_weight", op.getConvGWeight(),
                   {channels, head, {kernels[1], "k1"}})) ||
      failed(param("conv_g_bias", op.getConvGBias(), {channels})) ||
      failed(param("temp", op.getTemp(), {kvHeads})) ||
      failed(
          shape("conv_state", op.getConvState(), {batch, padding, channels})) ||
      (shift && failed(shape("shift_state", op.getShiftState(),
                             {batch, one, halfKeyDim}))) ||
      failed(shape("positions", op.getPositions(), {batch})) ||
      failed(shape("query", op.getQuery(), {batch, one, queryHeads, head})) ||
      failed(shape("key", op.getKey(), {batch, one, kvHeads, head})) ||
      failed(shape("value", op.getValue(), {batch, one, kvHeads, head})) ||
      failed(shape("conv_state_out", op.getConvStateOut(),
                   {batch, padding, channels})) ||
      (shift && failed(shape("shift_state_out", op.getShiftStateOut(),
                             {batch, one, halfKeyDim}))))
    return failure();

  if (failed(verify::verifyNormEps(op, op.getEps(), op.getNorm())) ||
      failed(verify::verifyRope(op, op.getRopeAttr(), headDim)) ||
      failed(elementTypes()))
    return failure();
  // Each init has its result's type: the states are updated in place.
  StringRef initNames[] = {"query_init", "key_init", "value_init", "conv_state",
                           "shift_state"};
  for (auto [name, init, result] :
       llvm::zip(initNames, op.getDpsInits(), op->getResults()))
    if (init.getType() != result.getType())
      return op.emitOpError()
             << "'" << name << "' must have the type " << result.getType()
             << " of its result, got " << init.getType();
  return success();
}

} // namespace

LogicalResult CCADecodePrologueOp::verify() {
  return DecodePrologueVerifier(*this).verify();
}

/// The iteration space is the batch: each sequence's step reads and writes
/// only its own rows and states.
SmallVector<utils::IteratorType> CCADecodePrologueOp::getLoopIteratorTypes() {
  return {utils::IteratorType::parallel};
}

SmallVector<Range> CCADecodePrologueOp::getIterationDomain(OpBuilder &builder) {
  return {{builder.getIndexAttr(0),
           tensor::getMixedSize(builder, getLoc(), getQr(), 0),
           builder.getIndexAttr(1)}};
}

FailureOr<TilingResult>
CCADecodePrologueOp::getTiledImplementation(OpBuilder &builder,
                                            ArrayRef<OpFoldResult> offsets,
                                            ArrayRef<OpFoldResult> sizes) {
  tiling::TileSlices slices(builder, getLoc());
  auto rows = [&](Value value) {
    return value ? slices.extractLeading(value, offsets, sizes) : Value();
  };
  Value queryInit = rows(getQueryInit()), keyInit = rows(getKeyInit());
  Value valueInit = rows(getValueInit()), convState = rows(getConvState());
  Value shiftState = rows(getShiftState());
  SmallVector<Type> resultTypes = {queryInit.getType(), keyInit.getType(),
                                   valueInit.getType(), convState.getType()};
  if (shiftState)
    resultTypes.push_back(shiftState.getType());
  auto tiled = CCADecodePrologueOp::create(
      builder, getLoc(), resultTypes, rows(getQr()), rows(getKr()),
      rows(getVCur()), rows(getVPrev()), getConvDwWeight(), getConvDwBias(),
      getConvGWeight(), getConvGBias(), getTemp(), queryInit, keyInit,
      valueInit, convState, shiftState, rows(getPositions()), getNumHeadsAttr(),
      getNumKvHeadsAttr(), getHeadDimAttr(), getConvKernelSizesAttr(),
      getQkMeanAttr(), getValueShiftAttr(), getTemperatureAttr(), getEpsAttr(),
      getNormAttr(), getRopeAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slices.ops};
}

LogicalResult CCADecodePrologueOp::getResultTilePosition(
    OpBuilder &builder, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  tiling::leadingDimsSlice(builder, getLoc(), getDpsInits()[resultNumber],
                           offsets, sizes, resultOffsets, resultSizes);
  return success();
}
