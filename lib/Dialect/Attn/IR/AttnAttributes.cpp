//===- AttnAttributes.cpp - attn dialect attributes -------------*- C++ -*-===//

#include "attnfuse/Dialect/Attn/IR/AttnAttributes.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdlib>

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

/// Shortest decimal that reads back exactly, always with a '.' so that it
/// parses as a float: 10000.0, 0.5, 0.1, 5.0e+05.
static std::string formatFloat(const llvm::APFloat &value) {
  double number = value.convertToDouble();
  // Positional notation in the usual range (10000.0, 0.1), else scientific.
  double magnitude = std::fabs(number);
  bool positional = magnitude == 0.0 || (magnitude >= 1e-4 && magnitude < 1e15);
  std::string text;
  for (int digits = positional ? 0 : 1; digits <= 17; ++digits) {
    text = llvm::formatv("{0}", llvm::format(positional ? "%.*f" : "%.*g",
                                             digits, number))
               .str();
    if (std::strtod(text.c_str(), nullptr) == number)
      break;
  }
  // MLIR float literals need a '.': 5e+05 -> 5.0e+05, 10000 -> 10000.0.
  if (llvm::StringRef(text).find_first_of(".n") == llvm::StringRef::npos) {
    size_t exponent = text.find_first_of("eE");
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  return text;
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

//===----------------------------------------------------------------------===//
// Kernel launch descriptions
//===----------------------------------------------------------------------===//

LogicalResult
KernelParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        StringRef name, StringRef kind, StringRef detail,
                        StringRef value) {
  if (name.empty())
    return emitError() << "a kernel parameter needs a name";
  if (kind != "tma_descriptor" && kind != "pointer" && kind != "scalar")
    return emitError() << "kernel parameter '" << name << "' has kind '" << kind
                       << "' (tma_descriptor, pointer or scalar)";
  return success();
}

/// Whether every element of `sizes` is an integer or a size expression.
static bool areSizes(ArrayAttr sizes) {
  return llvm::all_of(
      sizes, [](Attribute size) { return isa<IntegerAttr, StringAttr>(size); });
}

LogicalResult
KernelTensorAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         StringRef name, StringRef role, int64_t operand,
                         StringRef dtype, ArrayAttr shape, ArrayAttr strides,
                         StringRef layout, StringRef updates) {
  if (name.empty())
    return emitError() << "a kernel tensor needs a name";
  if (operand < -1)
    return emitError() << "kernel tensor '" << name << "' names operand "
                       << operand << " (an operand index, or -1 for a result)";
  if (!areSizes(shape) || (strides && !areSizes(strides)))
    return emitError() << "kernel tensor '" << name
                       << "' has sizes that are neither integers nor size "
                          "expressions";
  if (strides && strides.size() != shape.size())
    return emitError() << "kernel tensor '" << name << "' has "
                       << strides.size() << " strides for " << shape.size()
                       << " dimensions";
  return success();
}

LogicalResult KernelLaunchAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef kernel,
    StringRef kind, StringRef symbols, ArrayRef<int64_t> block, ArrayAttr grid,
    int64_t dynamicSmemBytes, ArrayAttr params, ArrayAttr tensors,
    ArrayAttr tmaDescriptors, ArrayAttr ropeTables, StringRef hostCast,
    ArrayAttr aliases, StringRef then, DictionaryAttr workspace,
    DictionaryAttr config) {
  if (kernel.empty())
    return emitError() << "a kernel launch needs a kernel name";
  if (block.size() != 3 ||
      llvm::any_of(block, [](int64_t n) { return n <= 0; }))
    return emitError() << "kernel launch '" << kernel
                       << "' needs a block of three positive sizes";
  if (dynamicSmemBytes < 0)
    return emitError() << "kernel launch '" << kernel
                       << "' has negative dynamic shared memory";
  if (!llvm::all_of(params, llvm::IsaPred<KernelParamAttr>))
    return emitError() << "kernel launch '" << kernel
                       << "': params must be #attn.kernel_param";
  if (!llvm::all_of(tensors, llvm::IsaPred<KernelTensorAttr>))
    return emitError() << "kernel launch '" << kernel
                       << "': tensors must be #attn.kernel_tensor";
  return success();
}
