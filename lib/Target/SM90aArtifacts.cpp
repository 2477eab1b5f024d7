//===- SM90aArtifacts.cpp - attn modules to sm_90a artifacts ----*- C++ -*-===//

#include "attnfuse/Target/SM90aArtifacts.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnKernelsToNVVM.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Conversion/Pipelines.h"
#include "attnfuse/Dialect/Attn/IR/AttnAttributes.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
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
  if (auto param = dyn_cast<attn::KernelParamAttr>(attr)) {
    json::Object object{{"name", param.getName().str()},
                        {"kind", param.getKind().str()}};
    bool tma = param.getKind() == "tma_descriptor";
    if (!param.getDetail().empty())
      object[tma ? "tma" : "dtype"] = param.getDetail().str();
    if (!param.getValue().empty())
      object["value"] = param.getValue().str();
    if (tma)
      object["abi"] = "CUtensorMap (128 bytes, 64-byte aligned) passed by "
                      "value as a __grid_constant__ parameter";
    return object;
  }
  if (auto tensor = dyn_cast<attn::KernelTensorAttr>(attr)) {
    json::Object object{{"name", tensor.getName().str()},
                        {"role", tensor.getRole().str()},
                        {"operand", tensor.getOperand()},
                        {"dtype", tensor.getDtype().str()},
                        {"shape", toJson(tensor.getShape())},
                        {"layout", tensor.getLayout().str()}};
    if (tensor.getStrides())
      object["strides_elements"] = toJson(tensor.getStrides());
    if (!tensor.getUpdates().empty()) {
      object["updates"] = tensor.getUpdates().str();
      object["in_place"] = ("may be the same buffer as '" +
                            tensor.getUpdates() + "' (updated in place)")
                               .str();
    }
    return object;
  }
  if (auto launch = dyn_cast<attn::KernelLaunchAttr>(attr)) {
    json::Array block;
    for (int64_t n : launch.getBlock())
      block.push_back(n);
    json::Object object{{"kernel", launch.getKernel().str()},
                        {"kind", launch.getKind().str()},
                        {"symbols", launch.getSymbols().str()},
                        {"block", std::move(block)},
                        {"grid", toJson(launch.getGrid())},
                        {"dynamic_smem_bytes", launch.getDynamicSmemBytes()},
                        {"params", toJson(launch.getParams())},
                        {"tensors", toJson(launch.getTensors())},
                        {"tma_descriptors", toJson(launch.getTmaDescriptors())},
                        {"config", toJson(launch.getConfig())}};
    if (launch.getRopeTables())
      object["rope_tables"] = toJson(launch.getRopeTables());
    if (!launch.getHostCast().empty())
      object["host_cast"] = launch.getHostCast().str();
    if (launch.getAliases())
      object["aliases"] = toJson(launch.getAliases());
    if (!launch.getThen().empty())
      object["then"] = launch.getThen().str();
    if (launch.getWorkspace())
      object["workspace"] = toJson(launch.getWorkspace());
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

/// The element type name the runtime uses, or empty.
static std::string dtypeOf(Type type) {
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (type.isF32())
    return "f32";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  if (type.isInteger(8))
    return "u8";
  return "";
}

/// The static shape of a tensor type, -1 for dynamic dimensions.
static json::Array staticShape(RankedTensorType type) {
  json::Array shape;
  for (int64_t size : type.getShape())
    shape.push_back(ShapedType::isDynamic(size) ? int64_t(-1) : size);
  return shape;
}

static json::Array reassociation(ArrayRef<ReassociationIndices> groups) {
  json::Array result;
  for (const ReassociationIndices &group : groups) {
    json::Array g;
    for (int64_t i : group)
      g.push_back(i);
    result.push_back(std::move(g));
  }
  return result;
}

/// Whether `op` computes sizes (index values) used only by reshapes, directly
/// or through other such ops.
static bool feedsOnlyReshapes(Operation *op) {
  if (op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIndex(); }) ||
      !isa<arith::ArithDialect, tensor::TensorDialect>(op->getDialect()))
    return false;
  return llvm::all_of(op->getUsers(), [](Operation *user) {
    return isa<tensor::ExpandShapeOp>(user) || feedsOnlyReshapes(user);
  });
}

/// The device program of `func`: its inputs, the launches and views between
/// them over numbered values, its outputs. Every op must be a kernel launch,
/// a reshape of a contiguous tensor (a view) or the index arithmetic that
/// feeds a reshape; anything else is an error on the op, since nothing would
/// execute it.
static FailureOr<json::Object> buildProgram(
    func::FuncOp func, const std::map<std::string, std::string> &kernelOfDecl,
    const std::map<std::string, attn::KernelLaunchAttr> &launchByKernel) {
  llvm::DenseMap<Value, int64_t> ids;
  int64_t next = 0;
  json::Array inputs, steps, outputs;
  auto describeValue = [](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    return json::Object{{"dtype", dtypeOf(type.getElementType())},
                        {"shape", staticShape(type)}};
  };
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || dtypeOf(type.getElementType()).empty())
      return func.emitError()
             << "argument " << arg.getArgNumber() << " of type "
             << arg.getType() << " cannot be a device buffer";
    ids[arg] = next++;
    json::Object input = describeValue(arg);
    input["value"] = ids[arg];
    inputs.push_back(std::move(input));
  }
  auto idOf = [&](Operation *user, Value v) -> FailureOr<int64_t> {
    auto it = ids.find(v);
    if (it == ids.end())
      return user->emitError("uses a value that is not a device tensor");
    return it->second;
  };
  auto define = [&](Value v) {
    ids[v] = next++;
    return ids[v];
  };
  // The most tokens a cache of the function holds: the rows of the RoPE
  // tables of a rotation at given positions (every position is a cache
  // slot). A static count, or a dimension of a cache argument (times the
  // page size) when the capacity is dynamic.
  int64_t cacheTokens = 0;
  std::optional<json::Object> cacheTokensOf;
  func.walk([&](func::CallOp call) {
    auto kernel = kernelOfDecl.find(call.getCallee().str());
    if (kernel == kernelOfDecl.end())
      return;
    attn::KernelLaunchAttr launch = launchByKernel.at(kernel->second);
    bool paged = false;
    int64_t cacheOperand = -1;
    for (attn::KernelTensorAttr tensor : launch.getTensorList()) {
      StringRef name = tensor.getName();
      int64_t operand = tensor.getOperand();
      paged |= name == "block_table";
      if ((name == "cache" || name == "key_cache") && operand >= 0)
        cacheOperand = operand;
    }
    if (cacheOperand < 0 ||
        cacheOperand >= static_cast<int64_t>(call.getNumOperands()))
      return;
    Value cache = call.getOperand(cacheOperand);
    auto type = dyn_cast<RankedTensorType>(cache.getType());
    if (!type || type.getRank() != 4 || (paged && type.isDynamicDim(1)))
      return;
    int64_t dim = paged ? 0 : 1, times = paged ? type.getDimSize(1) : 1;
    if (!type.isDynamicDim(dim)) {
      cacheTokens = std::max(cacheTokens, type.getDimSize(dim) * times);
    } else if (auto arg = dyn_cast<BlockArgument>(cache);
               arg && arg.getOwner()->getParentOp() == func) {
      cacheTokensOf = json::Object{{"value", int64_t(arg.getArgNumber())},
                                   {"dim", dim},
                                   {"times", times}};
    }
  });
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        FailureOr<int64_t> id = idOf(ret, v);
        if (failed(id))
          return failure();
        outputs.push_back(*id);
      }
      continue;
    }
    // Index arithmetic that only feeds reshapes: the runtime derives the
    // reshaped sizes from the source's own.
    if (feedsOnlyReshapes(&op))
      continue;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      FailureOr<int64_t> src = idOf(&op, collapse.getSrc());
      if (failed(src))
        return failure();
      json::Object step = describeValue(collapse.getResult());
      step["op"] = "view";
      step["source"] = *src;
      step["collapse"] = reassociation(collapse.getReassociationIndices());
      step["result"] = define(collapse.getResult());
      steps.push_back(std::move(step));
      continue;
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      FailureOr<int64_t> src = idOf(&op, expand.getSrc());
      if (failed(src))
        return failure();
      auto type = expand.getResultType();
      for (const ReassociationIndices &group : expand.getReassociationIndices())
        if (llvm::count_if(group,
                           [&](int64_t d) { return type.isDynamicDim(d); }) > 1)
          return expand.emitError()
                 << "expands into two dynamic sizes of one group; the device "
                    "program derives at most one per group";
      json::Object step = describeValue(expand.getResult());
      step["op"] = "view";
      step["source"] = *src;
      step["expand"] = reassociation(expand.getReassociationIndices());
      step["result"] = define(expand.getResult());
      steps.push_back(std::move(step));
      continue;
    }
    auto call = dyn_cast<func::CallOp>(op);
    auto kernel =
        call ? kernelOfDecl.find(call.getCallee().str()) : kernelOfDecl.end();
    if (kernel == kernelOfDecl.end()) {
      // Name the model's op without a kernel rather than the constant or
      // fill that feeds it: the first attn op left, if any.
      Operation *culprit = &op;
      for (Operation &later :
           llvm::make_range(Block::iterator(op), func.getBody().front().end()))
        if (isa<attn::AttnDialect>(later.getDialect())) {
          culprit = &later;
          break;
        }
      return culprit->emitError()
             << "has no sm_90a kernel: the device program of @"
             << func.getName() << " cannot execute '" << culprit->getName()
             << "'";
    }
    attn::KernelLaunchAttr launch = launchByKernel.at(kernel->second);
    if (!launch.getHostCast().empty())
      return op.emitError()
             << "runs its kernel on f32 tensors converted by the host; the "
                "device program runs bf16 or f16 models (build the model "
                "with dtype bf16 or f16)";
    // Operands bind the tensors that name their operand index; results the
    // tensors without one, in order, then the tensors updated in place.
    json::Object tensors;
    SmallVector<std::string> resultTensors;
    for (attn::KernelTensorAttr tensor : launch.getTensorList()) {
      std::string name = tensor.getName().str();
      int64_t operand = tensor.getOperand();
      if (operand < 0) {
        resultTensors.push_back(name);
        continue;
      }
      if (operand >= static_cast<int64_t>(call.getNumOperands()))
        return call.emitError()
               << "kernel tensor '" << name << "' names operand " << operand
               << " of a call with " << call.getNumOperands();
      FailureOr<int64_t> id = idOf(call, call.getOperand(operand));
      if (failed(id))
        return failure();
      tensors[name] = *id;
    }
    // A size no operand gives (the rows of the RoPE tables of a rotation at
    // given positions) is the function's largest cache.
    json::Object sizes;
    if (ArrayAttr tables = launch.getRopeTables()) {
      std::set<std::string> bound;
      for (attn::KernelTensorAttr tensor : launch.getTensorList()) {
        if (tensor.getOperand() < 0)
          continue;
        for (Attribute d : tensor.getShape())
          if (auto symbol = dyn_cast<StringAttr>(d))
            bound.insert(symbol.getValue().str());
      }
      for (Attribute t : tables) {
        auto rows = cast<DictionaryAttr>(t).getAs<ArrayAttr>("shape")[0];
        auto symbol = dyn_cast<StringAttr>(rows);
        if (!symbol || bound.count(symbol.getValue().str()) ||
            (symbol.getValue() != "B" && symbol.getValue() != "S" &&
             symbol.getValue() != "T"))
          continue;
        if (cacheTokens <= 0 && cacheTokensOf) {
          sizes[symbol.getValue()] = json::Object(*cacheTokensOf);
          continue;
        }
        if (cacheTokens <= 0)
          return call.emitError()
                 << "rotates at given positions, but @" << func.getName()
                 << " has no cache of static capacity to size its RoPE "
                    "tables by (compile without device programs to launch "
                    "the kernel by hand with tables of your size)";
        sizes[symbol.getValue()] = cacheTokens;
      }
    }
    json::Object aliases;
    if (ArrayAttr list = launch.getAliases())
      for (Attribute a : list) {
        auto alias = cast<DictionaryAttr>(a);
        std::string result =
            cast<StringAttr>(alias.get("result")).getValue().str();
        resultTensors.push_back(result);
        aliases[result] = cast<StringAttr>(alias.get("tensor")).getValue();
      }
    if (resultTensors.size() != call.getNumResults())
      return call.emitError()
             << "kernel '" << kernel->second << "' describes "
             << resultTensors.size() << " results for a call with "
             << call.getNumResults();
    // A result's type may view the kernel's tensor (a projection's
    // [B, S, N] output as [B, S, heads, head_dim]): the runtime takes the
    // rank and static sizes from the type.
    json::Array results;
    for (auto [name, value] : llvm::zip(resultTensors, call.getResults())) {
      json::Object result = describeValue(value);
      result["tensor"] = name;
      result["value"] = define(value);
      results.push_back(std::move(result));
    }
    steps.push_back(json::Object{{"op", "launch"},
                                 {"kernel", kernel->second},
                                 {"tensors", std::move(tensors)},
                                 {"results", std::move(results)},
                                 {"sizes", std::move(sizes)},
                                 {"aliases", std::move(aliases)}});
  }
  return json::Object{{"function", func.getName().str()},
                      {"inputs", std::move(inputs)},
                      {"values", next},
                      {"steps", std::move(steps)},
                      {"outputs", std::move(outputs)}};
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
  // The convolution kernels take a grouped convolution whole: per-group
  // GEMMs of 16-64 channels would leave most of a wgmma tile empty.
  fuseOptions.groupedConvGemms = false;
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
  std::map<std::string, attn::KernelLaunchAttr> launchByKernel;
  std::map<std::string, std::string> kernelOfDecl, opOfDecl;
  module.walk([&](func::FuncOp func) {
    if (auto launch = func->getAttrOfType<attn::KernelLaunchAttr>(
            attnfuse::kLaunchAttrName)) {
      std::string kernel = launch.getKernel().str();
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

  // The device program of every public function.
  json::Array programs;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!options.programs || func.isDeclaration() || func.isPrivate())
      continue;
    FailureOr<json::Object> program =
        buildProgram(func, kernelOfDecl, launchByKernel);
    if (failed(program))
      return makeError("'" + sourceName +
                       "' cannot run on the device as sm_90a kernels");
    programs.push_back(std::move(*program));
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
      {"programs", std::move(programs)},
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
