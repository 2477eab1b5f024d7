//===- attnfuse-compile.cpp - attn models to target artifacts ---*- C++ -*-===//
//
// attnfuse-compile model.mlir --target=sm_90a -o DIR
//     [--elem-type=bf16|f16] [--block-q=N] [--block-kv=N] [--stages=N]
//     [--ptxas=PATH] [--no-cubin]
//
// Runs attn-decompose, attn-fuse and attn-to-ptx on the model and writes, per
// kernel, DIR/NAME.ptx and (through `ptxas -arch=sm_90a`) DIR/NAME.cubin with
// DIR/NAME.ptxas.log, then DIR/manifest.json: the kernels with their launch
// shape (grid as expressions of the dynamic sizes, block, dynamic shared
// memory), parameters, tensors and the TMA descriptors the host encodes, the
// ptxas resource figures, the launches of the host function in program
// order, and the ops left to the host. DIR/host.mlir is the host side of the
// lowered module (launch calls instead of the fused ops).
//
// Errors (bad target, unsupported head dim or element type, ptxas missing or
// failing) are diagnostics and a non-zero exit status, never an abort.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnKernelsToNVVM.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Conversion/Pipelines.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>

using namespace mlir;
namespace cl = llvm::cl;
namespace json = llvm::json;

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
                               cl::init(128), cl::cat(compilerCategory));
static cl::opt<int64_t> blockKV("block-kv",
                                cl::desc("Flash attention keys per tile"),
                                cl::init(128), cl::cat(compilerCategory));
static cl::opt<int64_t> stages("stages",
                               cl::desc("Flash attention pipeline depth"),
                               cl::init(2), cl::cat(compilerCategory));
static cl::opt<std::string>
    ptxasPath("ptxas", cl::desc("ptxas to run (default: PATH, then "
                                "$CUDA_HOME/bin, /usr/local/cuda/bin)"),
              cl::init(""), cl::cat(compilerCategory));
static cl::opt<bool> noCubin("no-cubin",
                             cl::desc("Write PTX and the manifest only"),
                             cl::init(false), cl::cat(compilerCategory));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "attnfuse-compile: error: " << message << "\n";
  return 1;
}

/// Any attribute of a launch description as JSON.
static json::Value toJson(Attribute attr) {
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getValue().getSExtValue();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.getValue().str();
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    json::Array array;
    for (Attribute e : a)
      array.push_back(toJson(e));
    return array;
  }
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    json::Object object;
    for (NamedAttribute n : d)
      object[n.getName().getValue()] = toJson(n.getValue());
    return object;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// Resource figures of one `ptxas -v` run.
struct PtxasReport {
  int64_t registers = -1, spillStores = -1, spillLoads = -1, stackFrame = -1,
          smemStatic = 0, barriers = 0;
  std::vector<std::string> notes;
};

static PtxasReport parsePtxas(StringRef log) {
  PtxasReport r;
  SmallVector<StringRef> lines;
  log.split(lines, '\n');
  llvm::Regex regs("Used ([0-9]+) registers");
  llvm::Regex spills("([0-9]+) bytes stack frame, ([0-9]+) bytes spill "
                     "stores, ([0-9]+) bytes spill loads");
  llvm::Regex smem("([0-9]+) bytes smem");
  llvm::Regex bars("used ([0-9]+) barriers");
  for (StringRef line : lines) {
    SmallVector<StringRef> m;
    if (regs.match(line, &m))
      r.registers = std::stoll(m[1].str());
    if (spills.match(line, &m)) {
      r.stackFrame = std::stoll(m[1].str());
      r.spillStores = std::stoll(m[2].str());
      r.spillLoads = std::stoll(m[3].str());
    }
    if (smem.match(line, &m))
      r.smemStatic = std::stoll(m[1].str());
    if (bars.match(line, &m))
      r.barriers = std::stoll(m[1].str());
    if (line.contains("(C7") || line.contains("warning"))
      r.notes.push_back(line.trim().str());
  }
  return r;
}

static std::optional<std::string> findPtxas() {
  if (!ptxasPath.empty()) {
    if (llvm::sys::fs::can_execute(ptxasPath))
      return ptxasPath.getValue();
    return std::nullopt;
  }
  if (auto found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  SmallVector<std::string> candidates;
  if (const char *home = std::getenv("CUDA_HOME"))
    candidates.push_back((Twine(home) + "/bin/ptxas").str());
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string &c : candidates)
    if (llvm::sys::fs::can_execute(c))
      return c;
  return std::nullopt;
}

static LogicalResult writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "attnfuse-compile: error: " << error << "\n";
    return failure();
  }
  file->os() << contents;
  file->keep();
  return success();
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
  if (target != "sm_90a") {
    std::string hint =
        target == "sm_90"
            ? " (the kernels use wgmma and setmaxnreg, which need the "
              "architecture-specific sm_90a)"
            : "";
    return fail("unsupported target '" + target + "' (supported: sm_90a)" +
                hint);
  }
  if (elemType != "bf16" && elemType != "f16")
    return fail("unsupported --elem-type '" + elemType + "' (bf16 or f16)");

  DialectRegistry registry;
  registry.insert<attnfuse::attn::AttnDialect>();
  attnfuse::registerAttnToCPUDialects(registry);
  attnfuse::registerAttnToPTXDialects(registry);
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

  PassManager pm(&context);
  pm.addPass(attnfuse::attn::createAttnDecompose());
  pm.addPass(attnfuse::attn::createAttnFuse());
  attnfuse::AttnToPTXOptions options;
  options.chip = target.getValue();
  options.elemType = elemType.getValue();
  options.blockQ = blockQ;
  options.blockKV = blockKV;
  options.stages = stages;
  attnfuse::buildAttnToPTXPipeline(pm, options);
  if (failed(pm.run(*module)))
    return fail("lowering '" + inputFile + "' to sm_90a failed");

  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail("cannot create '" + outputDir + "': " + ec.message());
  auto outPath = [&](StringRef name) {
    SmallString<256> path(outputDir.getValue());
    llvm::sys::path::append(path, name);
    return std::string(path);
  };

  // Kernel PTX: one gpu.binary per kernel.
  std::map<std::string, std::string> ptxByKernel;
  module->walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      if (auto o = dyn_cast<gpu::ObjectAttr>(object))
        ptxByKernel[binary.getName().str()] = o.getObject().getValue().str();
  });

  // Launch descriptions and the host-side schedule.
  std::map<std::string, DictionaryAttr> launchByKernel;
  std::map<std::string, std::string> kernelOfDecl, opOfDecl;
  module->walk([&](func::FuncOp func) {
    if (auto launch =
            func->getAttrOfType<DictionaryAttr>(attnfuse::kLaunchAttrName)) {
      std::string kernel =
          cast<StringAttr>(launch.get("kernel")).getValue().str();
      launchByKernel.emplace(kernel, launch);
      kernelOfDecl[func.getName().str()] = kernel;
      if (auto op = func->getAttrOfType<StringAttr>("attnfuse.op"))
        opOfDecl[func.getName().str()] = op.getValue().str();
    }
  });
  json::Array launches;
  std::map<std::string, int64_t> hostOps;
  AsmState asmState(*module);
  for (auto func : module->getOps<func::FuncOp>()) {
    if (func.isDeclaration())
      continue;
    func.walk([&](Operation *op) {
      if (op == func.getOperation() || isa<func::ReturnOp>(op))
        return;
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto it = kernelOfDecl.find(call.getCallee().str());
        if (it != kernelOfDecl.end()) {
          json::Array operands, results;
          for (Value v : call.getOperands()) {
            std::string name;
            llvm::raw_string_ostream os(name);
            v.printAsOperand(os, asmState);
            operands.push_back(name);
          }
          for (Value v : call.getResults()) {
            std::string name;
            llvm::raw_string_ostream os(name);
            v.printAsOperand(os, asmState);
            results.push_back(name);
          }
          launches.push_back(json::Object{{"function", func.getName().str()},
                                          {"kernel", it->second},
                                          {"op", opOfDecl[it->first]},
                                          {"operands", std::move(operands)},
                                          {"results", std::move(results)}});
          return;
        }
      }
      ++hostOps[op->getName().getStringRef().str()];
    });
  }

  // PTX, cubin and the ptxas figures.
  std::optional<std::string> ptxas;
  if (!noCubin) {
    ptxas = findPtxas();
    if (!ptxas)
      return fail("ptxas not found (looked at --ptxas, PATH, $CUDA_HOME/bin "
                  "and /usr/local/cuda/bin); install the CUDA toolkit or "
                  "pass --no-cubin to write PTX only");
  }
  json::Array kernels;
  bool ptxasFailed = false;
  for (auto &[kernel, ptx] : ptxByKernel) {
    std::string ptxFile = outPath(kernel + ".ptx");
    if (failed(writeFile(ptxFile, ptx)))
      return 1;
    json::Object entry;
    auto launch = launchByKernel.find(kernel);
    if (launch != launchByKernel.end())
      entry = std::move(*toJson(launch->second).getAsObject());
    entry["name"] = kernel;
    entry["ptx"] = kernel + ".ptx";
    if (ptxas) {
      std::string cubin = outPath(kernel + ".cubin");
      std::string log = outPath(kernel + ".ptxas.log");
      SmallVector<StringRef> args = {*ptxas,         "-arch=sm_90a", "-O3",
                                     "-v",           ptxFile,        "-o",
                                     cubin};
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                              StringRef(log)};
      std::string execError;
      int rc = llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt,
                                         redirects, 0, 0, &execError);
      auto logText = llvm::MemoryBuffer::getFile(log);
      PtxasReport report =
          parsePtxas(logText ? (*logText)->getBuffer() : StringRef());
      if (rc != 0) {
        llvm::errs() << "attnfuse-compile: error: ptxas failed on " << ptxFile
                     << " (exit " << rc << ") " << execError << "; see "
                     << log << "\n";
        if (logText)
          llvm::errs() << (*logText)->getBuffer();
        ptxasFailed = true;
        continue;
      }
      json::Array notes;
      for (const std::string &n : report.notes)
        notes.push_back(n);
      entry["cubin"] = kernel + ".cubin";
      entry["ptxas"] = json::Object{
          {"command", "ptxas -arch=sm_90a -O3 -v"},
          {"registers", report.registers},
          {"spill_stores_bytes", report.spillStores},
          {"spill_loads_bytes", report.spillLoads},
          {"stack_frame_bytes", report.stackFrame},
          {"static_smem_bytes", report.smemStatic},
          {"barriers", report.barriers},
          {"notes", std::move(notes)}};
    }
    kernels.push_back(std::move(entry));
  }
  if (ptxasFailed)
    return fail("ptxas rejected at least one kernel");

  json::Array hostOpList;
  for (auto &[name, count] : hostOps) {
    hostOpList.push_back(json::Object{{"op", name}, {"count", count}});
    if (StringRef(name).starts_with("attn."))
      llvm::errs() << "attnfuse-compile: warning: " << count << " x " << name
                   << " have no sm_90a kernel and stay on the host side "
                      "(listed under host_ops in the manifest)\n";
  }

  json::Object manifest{
      {"format", "attnfuse-sm90a-manifest"},
      {"version", 1},
      {"source", llvm::sys::path::filename(inputFile).str()},
      {"target",
       json::Object{{"chip", "sm_90a"},
                    {"ptx_isa", "8.0"},
                    {"llvm_features", "+ptx80"},
                    {"cubin", ptxas ? "ptxas -arch=sm_90a -O3" : "none"}}},
      {"options", json::Object{{"elem_type", elemType.getValue()},
                               {"block_q", (int64_t)blockQ},
                               {"block_kv", (int64_t)blockKV},
                               {"stages", (int64_t)stages}}},
      {"kernels", std::move(kernels)},
      {"launches", std::move(launches)},
      {"host_ops", std::move(hostOpList)},
      {"verification",
       json::Object{
           {"assembled_with_ptxas", ptxas.has_value()},
           {"numerically_verified", false},
           {"note", "kernels are checked statically (ptxas); numerics on a "
                    "device are not verified by this tool"}}}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", json::Value(std::move(manifest))) << "\n";
  if (failed(writeFile(outPath("manifest.json"), text)))
    return 1;

  // The host side: the lowered module without the kernel binaries.
  OwningOpRef<ModuleOp> host(cast<ModuleOp>((*module)->clone()));
  SmallVector<Operation *> binaries;
  host->walk([&](gpu::BinaryOp b) { binaries.push_back(b); });
  for (Operation *b : binaries)
    b->erase();
  std::string hostText;
  llvm::raw_string_ostream hos(hostText);
  host->print(hos);
  if (failed(writeFile(outPath("host.mlir"), hostText)))
    return 1;

  llvm::outs() << "attnfuse-compile: " << ptxByKernel.size()
               << " kernel(s) for sm_90a written to " << outputDir << "\n";
  return 0;
}
