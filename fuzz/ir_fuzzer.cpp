//===- ir_fuzzer.cpp - the IR front end on any text -----------------------===//
//
// Parses the input as MLIR with the attn dialect (and everything the
// pipelines use) registered, verifies it, and on a module that verifies runs
// the cost report (text and JSON), attn-decompose and attn-fuse (each on its
// own copy). Diagnostics are swallowed: bad IR must give diagnostics, never
// a crash, an assertion, a sanitizer report or a hang.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/Transforms/CostReport.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/InitAllDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

using namespace mlir;

namespace {
MLIRContext &context() {
  // One context for the whole run (creating one per input would dominate
  // the time); never destroyed, so the leak check does not see its storage.
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    attnfuse::registerAllAttnFuseDialects(registry);
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    c->allowUnregisteredDialects(false);
    return c;
  }();
  return *ctx;
}

void runPass(ModuleOp module, std::unique_ptr<Pass> pass) {
  OwningOpRef<ModuleOp> copy(module.clone());
  PassManager pm(copy.get()->getContext());
  pm.enableVerifier(true);
  pm.addPass(std::move(pass));
  (void)pm.run(copy.get());
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  (void)context();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler swallow(&ctx, [](Diagnostic &) { return success(); });
  std::string text(reinterpret_cast<const char *>(data), size);
  ParserConfig config(&ctx, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, "fuzz-input");
  if (!module || failed(verify(*module)))
    return 0;
  for (const char *format : {"text", "json"}) {
    attnfuse::attn::CostReportOptions options;
    options.format = format;
    std::string report;
    llvm::raw_string_ostream os(report);
    (void)attnfuse::attn::writeCostReport(*module, options, os);
  }
  runPass(*module, attnfuse::attn::createAttnDecompose());
  runPass(*module, attnfuse::attn::createAttnFuse());
  return 0;
}
