//===- Bridge.cpp - the MLIR side of the Python extension -------*- C++ -*-===//

#include "Bridge.h"

#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Conversion/Pipelines.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/CostReport.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/ExecutionEngine/JitFunction.h"
#include "attnfuse/Target/SM90aArtifacts.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;
using namespace attnfuse::python;

namespace {

/// The process-wide context with every dialect, pass and pipeline of
/// attnfuse-opt registered.
MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    registry.insert<attnfuse::attn::AttnDialect>();
    attnfuse::registerJitDialects(registry);
    attnfuse::registerSM90aDialects(registry);
    registerCanonicalizerPass();
    registerCSEPass();
    registerSymbolDCEPass();
    attnfuse::attn::registerAttnPasses();
    attnfuse::registerAttnFuseConversionPasses();
    attnfuse::registerAttnToCPUPipeline();
    attnfuse::registerAttnToPTXPipeline();
    registerGPUPasses();
    registerConvertGpuOpsToNVVMOpsPass();
    registerConvertNVVMToLLVMPass();
    registerSCFToControlFlowPass();
    registerReconcileUnrealizedCastsPass();
    auto *created = new MLIRContext(registry);
    // Diagnostics carry their location; the op's generic form adds nothing
    // a Python user can act on.
    created->printOpOnDiagnostic(false);
    return created;
  }();
  return *context;
}

/// Operations that may emit diagnostics run one at a time: the handler
/// below is the context's, not the thread's.
std::mutex &getDiagnosticMutex() {
  static std::mutex mutex;
  return mutex;
}

std::string formatLocation(Location loc) {
  if (auto fileLoc = loc->findInstanceOf<FileLineColLoc>())
    return (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine()) +
            ":" + Twine(fileLoc.getColumn()))
        .str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

const char *getSeverityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

/// Collects the diagnostics of one operation into `failure`.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(Failure &failure)
      : lock(getDiagnosticMutex()),
        handler(&getContext(), [&failure](mlir::Diagnostic &diag) {
          auto add = [&](mlir::Diagnostic &d) {
            failure.diagnostics.push_back({getSeverityName(d.getSeverity()),
                                           formatLocation(d.getLocation()),
                                           d.str()});
          };
          add(diag);
          for (mlir::Diagnostic &note : diag.getNotes())
            add(note);
          return success();
        }) {}

private:
  std::lock_guard<std::mutex> lock;
  ScopedDiagnosticHandler handler;
};

} // namespace

struct Module::Impl {
  OwningOpRef<ModuleOp> module;
};

Module::Module(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Module::~Module() = default;

std::unique_ptr<Module> Module::parse(const std::string &text,
                                      const std::string &sourceName,
                                      bool verify, Failure &failure) {
  MLIRContext &context = getContext();
  DiagnosticCapture capture(failure);
  ParserConfig config(&context, /*verifyAfterParse=*/verify);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, sourceName);
  if (!module) {
    failure.message = "cannot parse '" + sourceName + "'";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->module = std::move(module);
  return std::unique_ptr<Module>(new Module(std::move(impl)));
}

std::string Module::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  impl->module->print(os);
  return text;
}

std::unique_ptr<Module> Module::clone() const {
  auto copy = std::make_unique<Impl>();
  copy->module = cast<ModuleOp>(impl->module->getOperation()->clone());
  return std::unique_ptr<Module>(new Module(std::move(copy)));
}

bool Module::verify(Failure &failure) const {
  DiagnosticCapture capture(failure);
  if (succeeded(mlir::verify(*impl->module)))
    return true;
  failure.message = "the module does not verify";
  return false;
}

bool Module::runPipeline(const std::string &pipeline, Failure &failure) {
  DiagnosticCapture capture(failure);
  // The pass manager is anchored on builtin.module: parse the passes
  // inside "builtin.module(...)", or the bare list "attn-decompose,...".
  StringRef passes = StringRef(pipeline).trim();
  if (passes.consume_front("builtin.module(")) {
    if (!passes.consume_back(")")) {
      failure.message = "invalid pass pipeline '" + pipeline +
                        "': no ')' closes 'builtin.module('";
      return false;
    }
  }
  PassManager pm(&getContext());
  std::string parseErrors;
  llvm::raw_string_ostream os(parseErrors);
  if (failed(parsePassPipeline(passes, pm, os))) {
    failure.message = "invalid pass pipeline '" + pipeline +
                      "': " + StringRef(parseErrors).trim().str();
    return false;
  }
  if (failed(pm.run(*impl->module))) {
    failure.message = "pass pipeline '" + pipeline + "' failed";
    return false;
  }
  return true;
}

std::vector<std::string> Module::functionNames() const {
  std::vector<std::string> names;
  for (auto func : impl->module->getOps<func::FuncOp>())
    if (!func.isExternal())
      names.push_back(func.getSymName().str());
  return names;
}

static std::vector<Spec> toSpecs(ArrayRef<attnfuse::TensorSpec> specs) {
  std::vector<Spec> converted;
  for (const attnfuse::TensorSpec &spec : specs) {
    Spec out{attnfuse::getElementTypeName(spec.elementType).str(), {}};
    for (int64_t dim : spec.shape)
      out.shape.push_back(ShapedType::isDynamic(dim) ? -1 : dim);
    converted.push_back(std::move(out));
  }
  return converted;
}

bool Module::signature(const std::string &name, std::vector<Spec> &arguments,
                       std::vector<Spec> &results, Failure &failure) const {
  std::vector<attnfuse::TensorSpec> args, res;
  if (llvm::Error error =
          attnfuse::JitFunction::getSignature(*impl->module, name, args, res)) {
    failure.message = llvm::toString(std::move(error));
    return false;
  }
  arguments = toSpecs(args);
  results = toSpecs(res);
  return true;
}

bool Module::costReport(std::optional<int64_t> seqLen,
                        std::optional<int64_t> batch,
                        const std::string &elemType,
                        const std::string &function, std::string &json,
                        Failure &failure) const {
  DiagnosticCapture capture(failure);
  attnfuse::attn::CostReportOptions options;
  options.function = function;
  options.seqLen = seqLen;
  options.batch = batch;
  options.elemType = elemType;
  options.format = "json";
  llvm::raw_string_ostream os(json);
  if (failed(attnfuse::attn::writeCostReport(*impl->module, options, os))) {
    failure.message = "attn-cost-report failed";
    return false;
  }
  return true;
}

struct CpuFunction::Impl {
  std::unique_ptr<attnfuse::JitFunction> function;
};

CpuFunction::CpuFunction(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
CpuFunction::~CpuFunction() = default;

std::unique_ptr<CpuFunction>
Module::compileCpu(const std::string &entry, const std::string &pipelineOptions,
                   std::optional<bool> fused, bool runtimeChecks,
                   unsigned optLevel, bool inPlaceCaches, unsigned numThreads,
                   bool passiveWait, Failure &failure) const {
  DiagnosticCapture capture(failure);
  OwningOpRef<ModuleOp> copy(
      cast<ModuleOp>(impl->module->getOperation()->clone()));
  attnfuse::JitOptions options;
  options.pipelineOptions = pipelineOptions;
  options.fused = fused;
  options.runtimeChecks = runtimeChecks;
  options.optLevel = optLevel;
  options.inPlaceCaches = inPlaceCaches;
  if (numThreads)
    options.numThreads = numThreads;
  options.passiveWait = passiveWait;
  auto function = attnfuse::JitFunction::create(*copy, entry, options);
  if (!function) {
    failure.message = llvm::toString(function.takeError());
    return nullptr;
  }
  auto cpuImpl = std::make_unique<CpuFunction::Impl>();
  cpuImpl->function = std::move(*function);
  return std::make_unique<CpuFunction>(std::move(cpuImpl));
}

bool Module::compileSM90a(const SM90aRequest &request, SM90aResult &result,
                          Failure &failure) const {
  DiagnosticCapture capture(failure);
  OwningOpRef<ModuleOp> copy(
      cast<ModuleOp>(impl->module->getOperation()->clone()));
  auto artifacts = attnfuse::writeSM90aArtifacts(
      *copy, request.sourceName, request.outputDir, request.options);
  if (!artifacts) {
    failure.message = llvm::toString(artifacts.takeError());
    return false;
  }
  result.outputDir = artifacts->outputDir;
  result.files = artifacts->files;
  result.warnings = artifacts->warnings;
  result.numKernels = artifacts->numKernels;
  return true;
}

std::string CpuFunction::name() const {
  return impl->function->getName().str();
}

std::vector<Spec> CpuFunction::arguments() const {
  return toSpecs(impl->function->getArguments());
}

std::vector<Spec> CpuFunction::results() const {
  return toSpecs(impl->function->getResults());
}

std::vector<int64_t> CpuFunction::resultArguments() const {
  std::vector<int64_t> indices;
  for (size_t i = 0; i < impl->function->getResults().size(); ++i) {
    std::optional<unsigned> argument = impl->function->getResultArgument(i);
    indices.push_back(argument ? int64_t(*argument) : -1);
  }
  return indices;
}

std::vector<int64_t> CpuFunction::writtenArguments() const {
  std::vector<int64_t> indices;
  for (size_t i = 0; i < impl->function->getArguments().size(); ++i)
    if (impl->function->isArgumentWritten(i))
      indices.push_back(i);
  return indices;
}

bool CpuFunction::call(const std::vector<ArgumentBuffer> &arguments,
                       std::vector<ResultBuffer> &results, Failure &failure) {
  std::vector<attnfuse::TensorRef> refs;
  for (const ArgumentBuffer &argument : arguments) {
    auto elementType = attnfuse::getElementTypeFromName(argument.elementType);
    if (!elementType) {
      failure.message =
          "unsupported element type '" + argument.elementType + "'";
      return false;
    }
    refs.push_back({*elementType, argument.shape, argument.data});
  }
  auto outputs = impl->function->call(refs);
  if (!outputs) {
    failure.message = llvm::toString(outputs.takeError());
    return false;
  }
  for (attnfuse::Tensor &output : *outputs)
    results.push_back({attnfuse::getElementTypeName(output.elementType).str(),
                       std::move(output.shape), std::move(output.data),
                       output.argument ? int64_t(*output.argument) : -1});
  return true;
}
