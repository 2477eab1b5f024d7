//===- CostReport.h - the attn-cost-report as a function --------*- C++ -*-===//
//
// The report `attn-cost-report` prints, for callers that want it as a string
// (the Python package) rather than on standard output.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_COSTREPORT_H
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_COSTREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <string>

namespace attnfuse::attn {

/// Sequence length priced when neither the options nor the IR give one.
constexpr int64_t kDefaultCostSeqLen = 32768;

/// The options of `attn-cost-report`.
struct CostReportOptions {
  /// Tokens per sequence; unset: the static sequence length, else
  /// kDefaultCostSeqLen.
  std::optional<int64_t> seqLen;
  /// Sequences per batch; unset: the static batch, else 1.
  std::optional<int64_t> batch;
  /// f32, f16, bf16 or fp8; empty: the IR's element type.
  std::string elemType;
  /// "text" or "json".
  std::string format = "text";
  /// Only the layers of this function (a decode module's @step, say);
  /// empty: every function.
  std::string function;
};

/// Writes the cost report of every attn layer of `module` to `os`. Bad
/// options and layers priced at different sizes are errors emitted on the
/// module or the layer; nothing is written then.
mlir::LogicalResult writeCostReport(mlir::ModuleOp module,
                                    const CostReportOptions &options,
                                    llvm::raw_ostream &os);

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_COSTREPORT_H
