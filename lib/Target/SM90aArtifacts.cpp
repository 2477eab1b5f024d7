//===- SM90aArtifacts.cpp - attn modules to sm_90a artifacts ----*- C++ -*-===//

#include "attnfuse/Target/SM90aArtifacts.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnKernelsToNVVM.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Conversion/Pipelines.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

using namespace mlir;
using namespace attnfuse;
namespace json = llvm::json;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
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

static std::optional<std::string> findPtxas(StringRef ptxasPath) {
  if (!ptxasPath.empty()) {
    if (llvm::sys::fs::can_execute(ptxasPath))
      return ptxasPath.str();
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

static llvm::Error writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return makeError(error);
  file->os() << contents;
  file->keep();
  return llvm::Error::success();
}

void attnfuse::registerSM90aDialects(DialectRegistry &registry) {
  registry.insert<attn::AttnDialect>();
  registerAttnToCPUDialects(registry);
  registerAttnToPTXDialects(registry);
}

llvm::Error attnfuse::checkSM90aTarget(StringRef target) {
  if (target == "sm_90a")
    return llvm::Error::success();
  std::string hint =
      target == "sm_90"
          ? " (the kernels use wgmma and setmaxnreg, which need the "
            "architecture-specific sm_90a)"
          : "";
  return makeError("unsupported target '" + target + "' (supported: sm_90a)" +
                   hint);
}

llvm::Expected<SM90aArtifacts>
attnfuse::writeSM90aArtifacts(ModuleOp module, StringRef sourceName,
                              StringRef outputDir,
                              const SM90aOptions &options) {
  if (options.elemType != "bf16" && options.elemType != "f16")
    return makeError("unsupported element type '" + options.elemType +
                     "' (bf16 or f16)");
  MLIRContext &context = *module.getContext();
  SM90aArtifacts artifacts;
  artifacts.outputDir = outputDir.str();
  PassManager pm(&context);
  pm.addPass(attnfuse::attn::createAttnDecompose());
  // The flash attention tiles go into the fused ops; the kernels honour
  // the ops' block_q / block_kv.
  attnfuse::attn::AttnFuseOptions fuseOptions;
  fuseOptions.blockQ = options.blockQ;
  fuseOptions.blockKV = options.blockKV;
  pm.addPass(attnfuse::attn::createAttnFuse(fuseOptions));
  attnfuse::AttnToPTXOptions ptxOptions;
  ptxOptions.chip = "sm_90a";
  ptxOptions.elemType = options.elemType;
  ptxOptions.stages = options.stages;
  attnfuse::buildAttnToPTXPipeline(pm, ptxOptions);
  if (failed(pm.run(module)))
    return makeError("lowering '" + sourceName + "' to sm_90a failed");

  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return makeError("cannot create '" + outputDir + "': " + ec.message());
  auto outPath = [&](StringRef name) {
    SmallString<256> path(outputDir);
    llvm::sys::path::append(path, name);
    return std::string(path);
  };

  // Kernel PTX: one gpu.binary per kernel.
  std::map<std::string, std::string> ptxByKernel;
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      if (auto o = dyn_cast<gpu::ObjectAttr>(object))
        ptxByKernel[binary.getName().str()] = o.getObject().getValue().str();
  });

  // Launch descriptions and the host-side schedule.
  std::map<std::string, DictionaryAttr> launchByKernel;
  std::map<std::string, std::string> kernelOfDecl, opOfDecl;
  module.walk([&](func::FuncOp func) {
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
  AsmState asmState(module);
  for (auto func : module.getOps<func::FuncOp>()) {
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
  if (options.cubin) {
    ptxas = findPtxas(options.ptxasPath);
    if (!ptxas)
      return makeError(
          "ptxas not found (looked at --ptxas, PATH, $CUDA_HOME/bin "
          "and /usr/local/cuda/bin); install the CUDA toolkit or "
          "pass --no-cubin to write PTX only");
  }
  json::Array kernels;
  bool ptxasFailed = false;
  std::string ptxasErrors;
  for (auto &[kernel, ptx] : ptxByKernel) {
    std::string ptxFile = outPath(kernel + ".ptx");
    if (llvm::Error error = writeFile(ptxFile, ptx))
      return std::move(error);
    artifacts.files.push_back(ptxFile);
    json::Object entry;
    auto launch = launchByKernel.find(kernel);
    if (launch != launchByKernel.end())
      entry = std::move(*toJson(launch->second).getAsObject());
    entry["name"] = kernel;
    entry["ptx"] = kernel + ".ptx";
    if (ptxas) {
      std::string cubin = outPath(kernel + ".cubin");
      std::string log = outPath(kernel + ".ptxas.log");
      SmallVector<StringRef> args = {*ptxas,  "-arch=sm_90a", "-O3", "-v",
                                     ptxFile, "-o",           cubin};
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                              StringRef(log)};
      std::string execError;
      int rc = llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, redirects,
                                         0, 0, &execError);
      auto logText = llvm::MemoryBuffer::getFile(log);
      PtxasReport report =
          parsePtxas(logText ? (*logText)->getBuffer() : StringRef());
      if (rc != 0) {
        llvm::raw_string_ostream os(ptxasErrors);
        os << "ptxas failed on " << ptxFile << " (exit " << rc << ") "
           << execError << "; see " << log << "\n";
        if (logText)
          os << (*logText)->getBuffer();
        ptxasFailed = true;
        continue;
      }
      json::Array notes;
      for (const std::string &n : report.notes)
        notes.push_back(n);
      artifacts.files.push_back(cubin);
      artifacts.files.push_back(log);
      entry["cubin"] = kernel + ".cubin";
      entry["ptxas"] = json::Object{{"command", "ptxas -arch=sm_90a -O3 -v"},
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
    return makeError(ptxasErrors + "ptxas rejected at least one kernel");

  json::Array hostOpList;
  for (auto &[name, count] : hostOps) {
    hostOpList.push_back(json::Object{{"op", name}, {"count", count}});
    if (StringRef(name).starts_with("attn."))
      artifacts.warnings.push_back(
          (Twine(count) + " x " + name +
           " have no sm_90a kernel and stay on the host side (listed under "
           "host_ops in the manifest)")
              .str());
  }

  json::Object manifest{
      {"format", "attnfuse-sm90a-manifest"},
      {"version", 1},
      {"source", llvm::sys::path::filename(sourceName).str()},
      {"target",
       json::Object{{"chip", "sm_90a"},
                    {"ptx_isa", "8.0"},
                    {"llvm_features", "+ptx80"},
                    {"cubin", ptxas ? "ptxas -arch=sm_90a -O3" : "none"}}},
      {"options", json::Object{{"elem_type", options.elemType},
                               {"block_q", options.blockQ},
                               {"block_kv", options.blockKV},
                               {"stages", options.stages}}},
      {"kernels", std::move(kernels)},
      {"launches", std::move(launches)},
      {"host_ops", std::move(hostOpList)},
      {"verification",
       json::Object{{"assembled_with_ptxas", ptxas.has_value()},
                    {"numerically_verified", false},
                    {"note",
                     "kernels are checked statically (ptxas); numerics on a "
                     "device are not verified by this tool"}}}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", json::Value(std::move(manifest))) << "\n";
  if (llvm::Error error = writeFile(outPath("manifest.json"), text))
    return std::move(error);
  artifacts.files.push_back(outPath("manifest.json"));

  // The host side: the lowered module without the kernel binaries.
  OwningOpRef<ModuleOp> host(cast<ModuleOp>(module->clone()));
  SmallVector<Operation *> binaries;
  host->walk([&](gpu::BinaryOp b) { binaries.push_back(b); });
  for (Operation *b : binaries)
    b->erase();
  std::string hostText;
  llvm::raw_string_ostream hos(hostText);
  host->print(hos);
  if (llvm::Error error = writeFile(outPath("host.mlir"), hostText))
    return std::move(error);
  artifacts.files.push_back(outPath("host.mlir"));
  artifacts.numKernels = static_cast<int64_t>(ptxByKernel.size());
  return artifacts;
}
