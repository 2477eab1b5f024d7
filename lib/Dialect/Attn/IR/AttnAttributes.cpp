//===- AttnAttributes.cpp - attn dialect attributes -------------*- C++ -*-===//

#include "attnfuse/Dialect/Attn/IR/AttnAttributes.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse::attn;

#include "attnfuse/Dialect/Attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnAttributes.cpp.inc"

void AttnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attnfuse/Dialect/Attn/IR/AttnAttributes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// RopeAttr
//===----------------------------------------------------------------------===//

// #attn.rope<theta = 10000.0 [, fraction = 0.5]>
Attribute RopeAttr::parse(AsmParser &parser, Type) {
  double theta = 0.0;
  double fraction = 1.0;
  if (parser.parseLess() || parser.parseKeyword("theta") ||
      parser.parseEqual() || parser.parseFloat(theta))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("fraction") || parser.parseEqual() ||
        parser.parseFloat(fraction))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<RopeAttr>(parser.getContext(), llvm::APFloat(theta),
                                     llvm::APFloat(fraction));
}

/// Shortest decimal that reads back exactly, always with a '.' or an
/// exponent so that it parses as a float: 10000.0, 0.5, 1.0E+6.
static std::string formatFloat(const llvm::APFloat &value) {
  SmallString<16> text;
  value.toString(text, /*FormatPrecision=*/0, /*FormatMaxPadding=*/6);
  if (llvm::StringRef(text).find_first_of(".eE") == llvm::StringRef::npos)
    text.append(".0");
  return std::string(text);
}

void RopeAttr::print(AsmPrinter &printer) const {
  printer << "<theta = " << formatFloat(getTheta());
  if (getFractionValue() != 1.0)
    printer << ", fraction = " << formatFloat(getFraction());
  printer << ">";
}

LogicalResult
RopeAttr::verify(llvm::function_ref<InFlightDiagnostic()> emitError,
                 llvm::APFloat thetaValue, llvm::APFloat fractionValue) {
  double theta = thetaValue.convertToDouble();
  double fraction = fractionValue.convertToDouble();
  if (!(theta > 0.0) || !std::isfinite(theta))
    return emitError() << "rope theta must be a positive finite number, got "
                       << theta;
  if (!(fraction >= 0.0 && fraction <= 1.0))
    return emitError() << "rope fraction must be in [0, 1], got " << fraction;
  return success();
}

FailureOr<int64_t> RopeAttr::getRotatedDim(int64_t headDim) const {
  double rotated = getFractionValue() * static_cast<double>(headDim);
  double rounded = std::round(rotated);
  if (std::abs(rotated - rounded) > 1e-9)
    return failure();
  return static_cast<int64_t>(rounded);
}
