//===- attnfuse-compile.cpp - attn models to target artifacts ---*- C++ -*-===//
//
// attnfuse-compile model.mlir --target=sm_90a -o DIR
//     [--elem-type=bf16|f16] [--block-q=N] [--block-kv=N] [--stages=N]
//     [--ptxas=PATH] [--no-cubin] [--no-programs]
//
// Runs attn-decompose, attn-fuse and attn-to-ptx on the model and writes, per
// kernel, DIR/NAME.ptx and (through `ptxas -arch=sm_90a`) DIR/NAME.cubin with
// DIR/NAME.ptxas.log, then DIR/manifest.json: the kernels with their launch
// shape (grid as expressions of the dynamic sizes, block, dynamic shared
// memory), parameters, tensors and the TMA descriptors the host encodes, the
// ptxas resource figures, the launches of the host function in program
// order, the device program of every public function (its launches over
// numbered values, which the runtime executes; an op no kernel runs is an
// error) and the ops between launches (views). DIR/host.mlir is the host side
// of the lowered module (launch calls instead of the fused ops).
//
// The work is done by writeSM90aArtifacts (AttnFuseSM90aTarget), which the
// Python package calls too.
//
// Errors (bad target, unsupported head dim or element type, ptxas missing or
// failing) are diagnostics and a non-zero exit status, never an abort.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Target/SM90aArtifacts.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory compilerCategory("attnfuse-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::Required, cl::cat(compilerCategory));
static cl::opt<std::string>
    target("target", cl::desc("Target: sm_90a (PTX + cubin + manifest)"),
           cl::init("sm_90a"), cl::cat(compilerCategory));
static cl::opt<std::string> outputDir("o", cl::desc("Output directory"),
                                      cl::value_desc("DIR"), cl::Required, cl::cat(compilerCategory));
static cl::opt<std::string> elemType("elem-type",
                                     cl::desc("Kernel element type (bf16|f16)"),
                                     cl::init("bf16"), cl::cat(compilerCategory));
static cl::opt<int64_t> blockQ("block-q",
                               cl::desc("Flash attention query rows per CTA"),
                               cl::init(attnfuse::SM90aOptions().blockQ),
                               cl::cat(compilerCategory));
static cl::opt<int64_t> blockKV("block-kv",
                                cl::desc("Flash attention keys per tile"),
                                cl::init(attnfuse::SM90aOptions().blockKV),
                                cl::cat(compilerCategory));
static cl::opt<int64_t> stages("stages",
                               cl::desc("Flash attention pipeline depth"),
                               cl::init(attnfuse::SM90aOptions().stages),
                               cl::cat(compilerCategory));
static cl::opt<std::string>
    ptxasPath("ptxas", cl::desc("ptxas to run (default: PATH, then "
                                "$CUDA_HOME/bin, /usr/local/cuda/bin)"),
              cl::init(""), cl::cat(compilerCategory));
static cl::opt<bool>
    noPrograms("no-programs",
               cl::desc("Write the kernels without device programs (to "
                        "launch them one by one)"),
               cl::init(false), cl::cat(compilerCategory));
static cl::opt<bool> noCubin("no-cubin",
                             cl::desc("Write PTX and the manifest only"),
                             cl::init(false), cl::cat(compilerCategory));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "attnfuse-compile: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Hide the many LLVM backend options from --help.
  llvm::cl::HideUnrelatedOptions(compilerCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "AttnFuse compiler driver: attn model -> sm_90a PTX, cubin and "
      "manifest\n");

  if (target == "cpu")
    return fail("--target=cpu is not built into this attnfuse-compile; use "
                "attnfuse-opt --attn-to-cpu or attnfuse-run");
  if (llvm::Error error = attnfuse::checkSM90aTarget(target))
    return fail(llvm::toString(std::move(error)));
  if (elemType != "bf16" && elemType != "f16")
    return fail("unsupported --elem-type '" + elemType + "' (bf16 or f16)");

  DialectRegistry registry;
  attnfuse::registerSM90aDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the model's source lines; the generic form of the
  // op adds nothing for a user.
  context.printOpOnDiagnostic(false);

  std::string error;
  auto buffer = openInputFile(inputFile, &error);
  if (!buffer)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("could not parse '" + inputFile + "'");

  attnfuse::SM90aOptions options;
  options.elemType = elemType;
  options.blockQ = blockQ;
  options.blockKV = blockKV;
  options.stages = stages;
  options.ptxasPath = ptxasPath;
  options.cubin = !noCubin;
  options.programs = !noPrograms;
  auto artifacts =
      attnfuse::writeSM90aArtifacts(*module, inputFile, outputDir, options);
  if (!artifacts)
    return fail(llvm::toString(artifacts.takeError()));
  for (const std::string &warning : artifacts->warnings)
    llvm::errs() << "attnfuse-compile: warning: " << warning << "\n";
  llvm::outs() << "attnfuse-compile: " << artifacts->numKernels
               << " kernel(s) for sm_90a written to " << outputDir << "\n";
  return 0;
}
