//===- Bridge.h - the MLIR side of the Python extension ---------*- C++ -*-===//
//
// Plain C++ types only: the extension translation unit is compiled with
// exceptions and RTTI (nanobind needs both), the MLIR libraries without, so
// every MLIR header stays behind this interface.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_PYTHON_BRIDGE_H
#define ATTNFUSE_PYTHON_BRIDGE_H

#include "attnfuse/Target/SM90aOptions.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnfuse::python {

struct Diagnostic {
  std::string severity; // "error", "warning", "note", "remark"
  std::string location; // "file:line:col", or the location as MLIR prints it
  std::string message;
};

/// Why an operation failed: a summary and the MLIR diagnostics it emitted.
struct Failure {
  std::string message;
  std::vector<Diagnostic> diagnostics;
};

/// A tensor of a compiled function's signature; dims < 0 are dynamic.
struct Spec {
  std::string elementType; // f32, f64, f16, bf16, i32, i64
  std::vector<int64_t> shape;
};

/// An argument handed to a compiled function (not copied).
struct ArgumentBuffer {
  std::string elementType;
  std::vector<int64_t> shape;
  void *data;
};

/// A result: dense C-order bytes, or (argument >= 0) that argument's buffer,
/// updated in place, with no bytes here.
struct ResultBuffer {
  std::string elementType;
  std::vector<int64_t> shape;
  std::vector<char> data;
  int64_t argument = -1;
};

class CpuFunction;

struct SM90aRequest {
  std::string outputDir, sourceName = "module.mlir";
  attnfuse::SM90aOptions options;
};

struct SM90aResult {
  std::string outputDir;
  std::vector<std::string> files, warnings;
  int64_t numKernels = 0;
};

/// An owned builtin.module in the process-wide MLIR context.
class Module {
public:
  ~Module();

  /// nullptr (and `failure`) when `text` does not parse (or, with
  /// `verify`, does not verify).
  static std::unique_ptr<Module> parse(const std::string &text,
                                       const std::string &sourceName,
                                       bool verify, Failure &failure);

  std::string str() const;
  std::unique_ptr<Module> clone() const;
  bool verify(Failure &failure) const;
  /// Runs a textual pass pipeline in place.
  bool runPipeline(const std::string &pipeline, Failure &failure);
  std::vector<std::string> functionNames() const;
  /// The signature of function `name`.
  bool signature(const std::string &name, std::vector<Spec> &arguments,
                 std::vector<Spec> &results, Failure &failure) const;
  /// attn-cost-report in JSON.
  bool costReport(std::optional<int64_t> seqLen, std::optional<int64_t> batch,
                  const std::string &elemType, const std::string &function,
                  std::string &json, Failure &failure) const;
  /// Lowers a copy with attn-to-cpu and JIT-compiles function `entry`;
  /// `numThreads` 0 leaves the thread count to the OpenMP runtime.
  std::unique_ptr<CpuFunction>
  compileCpu(const std::string &entry, const std::string &pipelineOptions,
             std::optional<bool> fused, bool runtimeChecks, unsigned optLevel,
             bool inPlaceCaches, unsigned numThreads, bool passiveWait,
             Failure &failure) const;
  /// Lowers a copy to sm_90a and writes the artifacts.
  bool compileSM90a(const SM90aRequest &request, SM90aResult &result,
                    Failure &failure) const;

  struct Impl;

private:
  explicit Module(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

class CpuFunction {
public:
  ~CpuFunction();
  std::string name() const;
  std::vector<Spec> arguments() const;
  std::vector<Spec> results() const;
  /// Per result: the argument whose buffer it is (updated in place), or -1.
  std::vector<int64_t> resultArguments() const;
  /// The arguments whose buffers the function writes (caches in place).
  std::vector<int64_t> writtenArguments() const;
  bool call(const std::vector<ArgumentBuffer> &arguments,
            std::vector<ResultBuffer> &results, Failure &failure);

  struct Impl;
  explicit CpuFunction(std::unique_ptr<Impl> impl);

private:
  std::unique_ptr<Impl> impl;
};

} // namespace attnfuse::python

#endif // ATTNFUSE_PYTHON_BRIDGE_H
