//===- VerifyUtils.cpp - shape checks of the attn verifiers -----*- C++ -*-===//

#include "VerifyUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace attnfuse::attn;
using namespace attnfuse::attn::verify;

std::string verify::formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t dim) {
    if (ShapedType::isDynamic(dim))
      os << "?";
    else
      os << dim;
  });
  os << "]";
  return text;
}

static std::string formatExpected(ArrayRef<ExpectedDim> expected) {
  std::string names, sizes;
  llvm::raw_string_ostream namesOs(names), sizesOs(sizes);
  llvm::interleaveComma(expected, namesOs,
                        [&](const ExpectedDim &dim) { namesOs << dim.name; });
  llvm::interleaveComma(expected, sizesOs, [&](const ExpectedDim &dim) {
    if (ShapedType::isDynamic(dim.size))
      sizesOs << "?";
    else
      sizesOs << dim.size;
  });
  return "[" + names + "] = [" + sizes + "]";
}

static bool dimsCompatible(int64_t actual, int64_t expected) {
  return ShapedType::isDynamic(actual) || ShapedType::isDynamic(expected) ||
         actual == expected;
}

LogicalResult verify::verifyShape(Operation *op, StringRef name, Value value,
                                  ArrayRef<ExpectedDim> expected,
                                  bool requireStatic) {
  auto type = cast<RankedTensorType>(value.getType());
  bool matches = type.getRank() == static_cast<int64_t>(expected.size());
  for (auto [actual, want] : llvm::zip(type.getShape(), expected))
    matches = matches && dimsCompatible(actual, want.size) &&
              !(requireStatic && ShapedType::isDynamic(actual));
  if (matches)
    return success();
  return op->emitOpError() << "'" << name << "' must have shape "
                           << formatExpected(expected) << ", got "
                           << formatShape(type.getShape());
}

LogicalResult verify::verifyStaticDim(Operation *op, StringRef name,
                                      Value value, int64_t dim,
                                      StringRef dimName) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.isDynamicDim(dim))
    return success();
  return op->emitOpError() << "'" << name << "' must have a static " << dimName
                           << " (dimension " << dim << "), got "
                           << formatShape(type.getShape());
}

LogicalResult verify::verifyRank(Operation *op, StringRef name, Value value,
                                 int64_t rank, StringRef layout) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << "'" << name << "' must be a rank-" << rank
                           << " tensor " << layout << ", got rank "
                           << type.getRank();
}

LogicalResult verify::verifyRope(Operation *op, RopeAttr rope, int64_t headDim,
                                 StringRef name) {
  if (!rope)
    return success();
  FailureOr<int64_t> rotated = rope.getRotatedDim(headDim);
  if (failed(rotated))
    return op->emitOpError()
           << name << " fraction " << rope.getFractionValue() << " of head_dim "
           << headDim << " is not a whole number of dimensions";
  if (*rotated % 2 != 0)
    return op->emitOpError()
           << name << " rotates " << *rotated
           << " dimensions of each head; the rotated width must be even";
  return success();
}

LogicalResult verify::verifyNormEps(Operation *op, llvm::APFloat eps,
                                    NormMode norm) {
  double value = eps.convertToDouble();
  if (!(value > 0.0))
    return op->emitOpError() << "eps must be positive, got " << value;
  // The lowerings clamp |x|^2 at eps^2 in f32: eps^2 must not underflow.
  if (norm == NormMode::clamp_eps && value < 1.1e-19) {
    llvm::SmallString<16> text;
    eps.toString(text);
    return op->emitOpError() << "norm = clamp_eps needs eps >= 1.1e-19 "
                                "(eps^2 must be a normal f32), got "
                             << text;
  }
  return success();
}

LogicalResult verify::verifyHeads(Operation *op, int64_t numHeads,
                                  int64_t numKvHeads) {
  if (numHeads % numKvHeads != 0)
    return op->emitOpError()
           << "num_heads (" << numHeads
           << ") must be a multiple of num_kv_heads (" << numKvHeads << ")";
  return success();
}

int64_t verify::dimOf(Value value, int64_t dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}
