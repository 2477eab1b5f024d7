//===- JitFunction.h - JIT-compiled attn functions on the CPU ---*- C++ -*-===//
//
// Lowers a module with the `attn-to-cpu` pipeline, JIT-compiles it with
// mlir::ExecutionEngine and calls one of its functions on dense C-order
// arrays through memref descriptors. Used by attnfuse-run and the Python
// package.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_EXECUTIONENGINE_JITFUNCTION_H
#define ATTNFUSE_EXECUTIONENGINE_JITFUNCTION_H

#include "attnfuse/ExecutionEngine/ShapeChecks.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class ExecutionEngine;
} // namespace mlir

namespace attnfuse {

/// Element types a JIT function may take and return.
enum class ElementType { F32, F64, F16, BF16, I32, I64 };

size_t getElementByteSize(ElementType type);
/// "f32", "f64", "f16", "bf16", "i32", "i64".
llvm::StringRef getElementTypeName(ElementType type);
std::optional<ElementType> getElementTypeFromName(llvm::StringRef name);
std::optional<ElementType> getElementTypeOf(mlir::Type type);

/// "[2, ?, 8]" (mlir::ShapedType::kDynamic prints as '?').
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Element type and shape of one argument or result; dynamic dimensions are
/// mlir::ShapedType::kDynamic.
struct TensorSpec {
  ElementType elementType;
  std::vector<int64_t> shape;
};

/// A caller-owned dense C-order array (not copied by a call).
struct TensorRef {
  ElementType elementType;
  std::vector<int64_t> shape;
  void *data;
};

/// A dense C-order array owned by the caller of JitFunction::call.
struct Tensor {
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
  std::vector<char> data;

  /// Set on a result of JitFunction::call that is this argument's buffer,
  /// updated in place (a KV cache); `data` is then empty and
  /// the caller's argument array holds the values.
  std::optional<unsigned> argument;

  int64_t getNumElements() const;
  TensorRef ref() { return {elementType, shape, data.data()}; }
};

struct JitOptions {
  /// attn-to-cpu options, e.g. "block-q=32 fused=false".
  std::string pipelineOptions;
  /// Compile in run-time checks of every linalg and tensor op's sizes
  /// (overrides the pipeline option of the same name). The size relations
  /// of the attn ops are checked before every call either way.
  bool runtimeChecks = true;
  /// When set, overrides the pipeline option `fused` (false: the reference
  /// lowering of every primitive).
  std::optional<bool> fused;
  unsigned optLevel = 2;
  /// Update the KV caches in place: an argument that the function updates
  /// and returns (the cache operands of attn.qkv_decode, attn.cca_decode and
  /// attn.cache_update whose updated value is returned) is written through
  /// the caller's buffer, and the result is that buffer (Tensor::argument),
  /// so that a decode step writes only its new tokens. The small decode
  /// states of attn.cca_decode are returned as new arrays. False: every
  /// argument is read only and every result a new array (a copy of the
  /// whole cache per call).
  bool inPlaceCaches = true;
  /// Threads of the kernels' parallel loops (overrides the pipeline option
  /// num-threads); unset or 0: the OpenMP runtime's default, OMP_NUM_THREADS
  /// or one per core. An error with the option parallel=false.
  std::optional<unsigned> numThreads;
  /// The parallel loops' threads sleep as soon as a loop ends (OpenMP's
  /// passive wait policy, a blocktime of 0) instead of spinning for the
  /// runtime's blocktime (200 ms unless KMP_BLOCKTIME says otherwise): for
  /// callers whose own threads (PyTorch's) run between calls, which spinning
  /// threads would slow. Set for each call, so functions of either policy
  /// can alternate in one process.
  bool passiveWait = false;
};

/// Inserts the dialects and translations the JIT path needs.
void registerJitDialects(mlir::DialectRegistry &registry);

/// One function of a module, lowered and JIT-compiled.
class JitFunction {
public:
  ~JitFunction();

  /// Lowers `module` in place with attn-to-cpu and JIT-compiles it for the
  /// host CPU. The function writes no argument's buffer except the caches
  /// it updates in place (JitOptions::inPlaceCaches). Errors name
  /// the function or the option; diagnostics of the lowering go to the
  /// context's handlers.
  static llvm::Expected<std::unique_ptr<JitFunction>>
  create(mlir::ModuleOp module, llvm::StringRef entry,
         const JitOptions &options);

  /// The signature of `entry` in `module`, or an error naming the function
  /// (with the module's functions) or the unsupported argument type.
  static llvm::Error getSignature(mlir::ModuleOp module, llvm::StringRef entry,
                                  std::vector<TensorSpec> &arguments,
                                  std::vector<TensorSpec> &results);

  llvm::StringRef getName() const { return name; }
  llvm::ArrayRef<TensorSpec> getArguments() const { return arguments; }
  llvm::ArrayRef<TensorSpec> getResults() const { return results; }
  /// The argument whose buffer result `index` is (updated in place), if any.
  std::optional<unsigned> getResultArgument(unsigned index) const {
    return resultArguments[index];
  }
  /// Whether the compiled code may write argument `index`'s buffer.
  bool isArgumentWritten(unsigned index) const {
    return writtenArguments[index];
  }

  /// Checks count, element types and static dimensions of `args`; messages
  /// start with "argument #N of 'entry'".
  llvm::Error checkArguments(llvm::ArrayRef<TensorRef> args) const;

  /// Calls the function. Sizes that break a relation the ops need (see
  /// ShapeChecks) are an error before any compiled code runs; a failed
  /// run-time check inside the compiled code (a cache position out of
  /// range, say) stops it at the check and is returned as an error, with
  /// everything the call allocated freed (caches updated in place keep the
  /// writes made before the failed check). A result that is an argument
  /// updated in place comes back with Tensor::argument set and no data; an
  /// argument written in place that shares memory with another argument is
  /// an error before any compiled code runs.
  llvm::Expected<std::vector<Tensor>> call(llvm::ArrayRef<TensorRef> args);

private:
  JitFunction() = default;

  std::string name;
  std::vector<TensorSpec> arguments, results;
  std::vector<std::optional<unsigned>> resultArguments;
  std::vector<bool> writtenArguments;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  ShapeChecks shapeChecks;
  /// The OpenMP runtime's kmp_set_blocktime and this function's blocktime
  /// (null without parallel loops).
  void (*setBlocktime)(int) = nullptr;
  int blocktime = 0;
};

} // namespace attnfuse

#endif // ATTNFUSE_EXECUTIONENGINE_JITFUNCTION_H
