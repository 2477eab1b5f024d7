//===- SM90aArtifacts.h - attn modules to sm_90a artifacts ------*- C++ -*-===//
//
// What `attnfuse-compile --target=sm_90a` writes: per kernel NAME.ptx,
// NAME.cubin (ptxas) and NAME.ptxas.log, manifest.json (launch shapes,
// shared memory, parameters, tensors, TMA descriptors, ptxas figures, the
// host's launches in program order, the ops left to the host) and host.mlir.
// Used by attnfuse-compile and the Python package.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_TARGET_SM90AARTIFACTS_H
#define ATTNFUSE_TARGET_SM90AARTIFACTS_H

#include "attnfuse/Target/SM90aOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace attnfuse {

struct SM90aArtifacts {
  std::string outputDir;
  /// Paths of the files written, manifest.json and host.mlir included.
  std::vector<std::string> files;
  int64_t numKernels = 0;
  /// Ops without an sm_90a kernel that stay on the host side.
  std::vector<std::string> warnings;
};

/// Inserts the dialects the sm_90a lowering needs.
void registerSM90aDialects(mlir::DialectRegistry &registry);

/// Checks a target name; the error says which targets exist.
llvm::Error checkSM90aTarget(llvm::StringRef target);

/// Lowers `module` in place (attn-decompose, attn-fuse, attn-to-ptx) and
/// writes the artifacts to `outputDir`. `sourceName` is recorded in the
/// manifest. Lowering diagnostics go to the context's handlers.
llvm::Expected<SM90aArtifacts> writeSM90aArtifacts(mlir::ModuleOp module,
                                                   llvm::StringRef sourceName,
                                                   llvm::StringRef outputDir,
                                                   const SM90aOptions &options);

} // namespace attnfuse

#endif // ATTNFUSE_TARGET_SM90AARTIFACTS_H
