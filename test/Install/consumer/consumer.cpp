//===- consumer.cpp - AttnFuse used from another MLIR project ---*- C++ -*-===//
//
// attnfuse-consumer <input.mlir>: parses attn IR with the installed
// AttnFuse, then prints
//   1. the module after the textual pipeline attn-decompose,attn-fuse
//      (passes registered by registerAttnFusePasses), and
//   2. "api: same" when populateAttnDecomposePatterns followed by
//      applyAttnFusePatterns gives the same IR, "api: different" otherwise.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/InitAllDialects.h"
#include "attnfuse/InitAllPasses.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

static std::string print(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: attnfuse-consumer <input.mlir>\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  attnfuse::registerAllAttnFuseDialects(registry);
  attnfuse::registerAttnFusePasses();
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> viaPipeline =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  mlir::OwningOpRef<mlir::ModuleOp> viaApi =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!viaPipeline || !viaApi)
    return 1;

  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  mlir::FailureOr<mlir::OpPassManager> pipeline = mlir::parsePassPipeline(
      "builtin.module(attn-decompose,attn-fuse)", errorStream);
  if (failed(pipeline)) {
    llvm::errs() << "pipeline: " << errors << "\n";
    return 1;
  }
  mlir::PassManager pm(&context);
  static_cast<mlir::OpPassManager &>(pm) = *pipeline;
  if (failed(pm.run(*viaPipeline)))
    return 1;
  llvm::outs() << print(*viaPipeline);

  mlir::RewritePatternSet decompose(&context);
  attnfuse::attn::populateAttnDecomposePatterns(decompose);
  if (failed(mlir::applyPatternsGreedily(*viaApi, std::move(decompose))) ||
      failed(attnfuse::attn::applyAttnFusePatterns(*viaApi)))
    return 1;
  llvm::outs() << "api: "
               << (print(*viaApi) == print(*viaPipeline) ? "same" : "different")
               << "\n";
  return 0;
}
