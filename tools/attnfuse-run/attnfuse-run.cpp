//===- attnfuse-run.cpp - JIT-run attn functions on .npy data ---*- C++ -*-===//
//
// attnfuse-run model.mlir --entry=NAME [--input=a.npy ...]
//              [--random-seed=N --batch=B --seq=S] --output-dir=DIR
//
// Parses the module, lowers it with the attn-to-cpu pipeline, JIT-compiles it
// with mlir::ExecutionEngine and calls NAME through its C interface
// (`llvm.emit_c_interface` is set here), through the AttnFuseExecution
// library. The function takes and returns ranked tensors of f32, f64, f16,
// bf16, i32 or i64.
//
// Inputs are .npy files (read as numpy reads them; Fortran order and
// big-endian data are converted): `<f4` for f32, `<f8` for
// f64, `<f2` for f16 and, since numpy has no bfloat16, `<u2` holding the bf16
// bit patterns (the upper 16 bits of the f32 encoding) for bf16, `<i4` for
// i32 and `<i8` for i64. Dynamic dimensions of the signature are taken from
// the input arrays. Without --input, every argument is filled with uniform
// random values in [-1, 1) (integers: in [0, 16)) from --random-seed; its
// dynamic dimensions are --batch for dimension 0 of a tensor of rank >= 3
// and --seq for every other one; the generated arrays are saved as
// inputN.npy next to the results.
//
// Each result is written as DIR/outN.npy with the same dtype convention.
//
// KV caches are updated in place (--in-place-caches, default on): a cache
// that the function updates and returns is written through the input array,
// and its outN.npy is that array after the call. With --benchmark the same
// inputs serve every call, so the caches carry the previous calls' writes
// (the timing is that of a decode step).
//
//===----------------------------------------------------------------------===//

#include "attnfuse/ExecutionEngine/JitFunction.h"
#include "attnfuse/Support/NpyFormat.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory runnerCategory("attnfuse-run options");
static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.mlir>"),
                                          cl::Required,
                                          cl::cat(runnerCategory));
static cl::opt<std::string> entryName("entry", cl::desc("Function to run"),
                                      cl::value_desc("name"), cl::Required,
                                      cl::cat(runnerCategory));
static cl::list<std::string>
    inputFiles("input", cl::desc("Input .npy file, one per argument, in order"),
               cl::value_desc("file.npy"), cl::cat(runnerCategory));
static cl::opt<std::string>
    outputDir("output-dir", cl::desc("Directory for out0.npy, out1.npy, ..."),
              cl::value_desc("dir"), cl::cat(runnerCategory));
static cl::opt<std::string> runList(
    "run-list",
    cl::desc("Compile once, run many: each line of the file is an output "
             "directory followed by the input .npy files of one call "
             "('#' starts a comment line)"),
    cl::value_desc("file"), cl::cat(runnerCategory));
static cl::opt<uint64_t>
    randomSeed("random-seed",
               cl::desc("Fill every argument with uniform [-1, 1) values "
                        "from this seed (instead of --input)"),
               cl::value_desc("N"), cl::cat(runnerCategory));
static cl::opt<int64_t>
    batchSize("batch",
              cl::desc("Random inputs: size of a dynamic batch dimension"),
              cl::init(1), cl::cat(runnerCategory));
static cl::opt<int64_t>
    seqLen("seq",
           cl::desc("Random inputs: size of a dynamic sequence dimension"),
           cl::init(8), cl::cat(runnerCategory));
static cl::opt<bool> runtimeChecks(
    "runtime-checks",
    cl::desc("Compile in checks that the dynamic sizes of the inputs agree "
             "(default on; a failed check is reported as an error)"),
    cl::init(true), cl::cat(runnerCategory));
static cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level"),
                                  cl::init(2), cl::Prefix,
                                  cl::cat(runnerCategory));
static cl::opt<bool> referenceLowering(
    "reference",
    cl::desc("Lower every primitive through the reference path "
             "(attn-to-cpu fused=false) instead of the fused kernels"),
    cl::init(false), cl::cat(runnerCategory));
static cl::opt<std::string> pipelineOptionsText(
    "pipeline-options",
    cl::desc("Options of the attn-to-cpu pipeline, e.g. \"block-q=32 "
             "block-kv=128\" (see attnfuse-opt --help)"),
    cl::value_desc("options"), cl::init(""), cl::cat(runnerCategory));
static cl::opt<bool> inPlaceCaches(
    "in-place-caches",
    cl::desc("Write the KV caches that the function updates and returns "
             "into its input arrays (default on); off: every call copies "
             "each cache into a new result"),
    cl::init(true), cl::cat(runnerCategory));
// Not "threads": Debian's LLVM 22 shared library registers an option of
// that name already.
static cl::opt<unsigned> numThreads(
    "num-threads",
    cl::desc("Threads of the kernels' parallel loops (default 0: the OpenMP "
             "runtime's choice, OMP_NUM_THREADS or one per core); the "
             "results are the same for every count"),
    cl::init(0), cl::cat(runnerCategory));
static cl::opt<unsigned> benchmarkRuns(
    "benchmark",
    cl::desc("After one warm-up call, time N more calls and print a JSON "
             "line with the compile time, the min and median call time and "
             "the peak resident memory"),
    cl::value_desc("N"), cl::init(0), cl::cat(runnerCategory));

namespace {

//===----------------------------------------------------------------------===//
// Element types and .npy files
//===----------------------------------------------------------------------===//

using attnfuse::ElementType;
using attnfuse::formatShape;
using attnfuse::getElementByteSize;
using attnfuse::getElementTypeName;
using attnfuse::TensorSpec;
/// A dense C-order array.
using Array = attnfuse::Tensor;

const char *npyDescr(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "<f4";
  case ElementType::F64:
    return "<f8";
  case ElementType::F16:
    return "<f2";
  case ElementType::BF16:
    return "<u2";
  case ElementType::I32:
    return "<i4";
  case ElementType::I64:
    return "<i8";
  }
  return "";
}

/// Reads a .npy file (numpy's header grammar, see NpyFormat.h); on failure
/// returns an error message.
llvm::Expected<Array> readNpy(StringRef path) {
  auto fail = [&](const Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'" + path + "': " + message);
  };
  auto bufferOr = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
  if (!bufferOr)
    return fail("cannot read file: " + bufferOr.getError().message());
  StringRef bytes = (*bufferOr)->getBuffer();
  attnfuse::npy::NpyArray npyArray;
  std::string error;
  if (!attnfuse::npy::parseNpy(bytes.data(), bytes.size(), npyArray, error))
    return fail(error);

  Array array;
  // The byte order is settled by parseNpy (little-endian data).
  StringRef code = StringRef(npyArray.descr).ltrim("<=|>");
  if (code == "f4")
    array.elementType = ElementType::F32;
  else if (code == "f8")
    array.elementType = ElementType::F64;
  else if (code == "f2")
    array.elementType = ElementType::F16;
  else if (code == "u2")
    array.elementType = ElementType::BF16;
  else if (code == "i4")
    array.elementType = ElementType::I32;
  else if (code == "i8")
    array.elementType = ElementType::I64;
  else
    return fail("unsupported dtype '" + npyArray.descr +
                "' (expected <f4 for f32, <f8 for f64, <f2 for f16, <u2 "
                "holding bf16 bit patterns, <i4 for i32 or <i8 for i64)");
  array.shape = std::move(npyArray.shape);
  array.data = std::move(npyArray.data);
  return array;
}

/// Writes `array` as a version 1.0 .npy file.
llvm::Error writeNpy(StringRef path, const Array &array) {
  attnfuse::npy::NpyArray npyArray;
  npyArray.descr = npyDescr(array.elementType);
  npyArray.shape = array.shape;
  npyArray.data = array.data;
  std::string bytes = attnfuse::npy::writeNpy(npyArray);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write '" + path +
                                           "': " + ec.message());
  os << bytes;
  os.close();
  if (os.has_error())
    return llvm::createStringError(os.error(), "cannot write '" + path + "'");
  return llvm::Error::success();
}

/// Stores `value` rounded to `type` at `dst`.
void storeValue(ElementType type, double value, char *dst) {
  switch (type) {
  case ElementType::F32: {
    float f = static_cast<float>(value);
    std::memcpy(dst, &f, 4);
    return;
  }
  case ElementType::F64:
    std::memcpy(dst, &value, 8);
    return;
  case ElementType::F16:
  case ElementType::BF16: {
    llvm::APFloat apf(value);
    bool losesInfo;
    apf.convert(type == ElementType::F16 ? llvm::APFloat::IEEEhalf()
                                         : llvm::APFloat::BFloat(),
                llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    uint16_t bits = static_cast<uint16_t>(apf.bitcastToAPInt().getZExtValue());
    std::memcpy(dst, &bits, 2);
    return;
  }
  case ElementType::I32: {
    int32_t i = static_cast<int32_t>(value);
    std::memcpy(dst, &i, 4);
    return;
  }
  case ElementType::I64: {
    int64_t i = static_cast<int64_t>(value);
    std::memcpy(dst, &i, 8);
    return;
  }
  }
}

bool isInteger(ElementType type) {
  return type == ElementType::I32 || type == ElementType::I64;
}

int fail(const Twine &message) {
  llvm::errs() << "attnfuse-run: error: " << message << "\n";
  return 1;
}

llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads the .npy `paths` and checks them against the entry's signature.
llvm::Expected<std::vector<Array>> loadInputs(ArrayRef<std::string> paths,
                                              ArrayRef<TensorSpec> argSpecs) {
  if (paths.size() != argSpecs.size())
    return makeError("'" + entryName + "' takes " + Twine(argSpecs.size()) +
                     " argument(s), got " + Twine(paths.size()) +
                     " input file(s)");
  std::vector<Array> inputs;
  for (auto [index, path] : llvm::enumerate(paths)) {
    auto array = readNpy(path);
    if (!array)
      return makeError("input #" + Twine(index) + ": " +
                       llvm::toString(array.takeError()));
    const TensorSpec &spec = argSpecs[index];
    if (array->elementType != spec.elementType)
      return makeError("input #" + Twine(index) + " '" + path + "' has dtype " +
                       npyDescr(array->elementType) + " (" +
                       getElementTypeName(array->elementType) +
                       "), argument #" + Twine(index) + " of '" + entryName +
                       "' is " + getElementTypeName(spec.elementType) +
                       " (npy dtype " + npyDescr(spec.elementType) + ")");
    bool shapeOk = array->shape.size() == spec.shape.size();
    for (size_t i = 0; shapeOk && i < spec.shape.size(); ++i)
      shapeOk = ShapedType::isDynamic(spec.shape[i]) ||
                spec.shape[i] == array->shape[i];
    if (!shapeOk)
      return makeError("input #" + Twine(index) + " '" + path + "' has shape " +
                       formatShape(array->shape) + ", argument #" +
                       Twine(index) + " of '" + entryName + "' needs " +
                       formatShape(spec.shape));
    inputs.push_back(std::move(*array));
  }
  return inputs;
}

/// Uniform [-1, 1) inputs for every argument.
std::vector<Array> randomInputsFor(ArrayRef<TensorSpec> argSpecs) {
  std::mt19937_64 rng(randomSeed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Array> inputs;
  for (const TensorSpec &spec : argSpecs) {
    Array array;
    array.elementType = spec.elementType;
    for (auto [i, dim] : llvm::enumerate(spec.shape))
      array.shape.push_back(!ShapedType::isDynamic(dim) ? dim
                            : (i == 0 && spec.shape.size() >= 3)
                                ? int64_t(batchSize)
                                : int64_t(seqLen));
    size_t elem = getElementByteSize(spec.elementType);
    array.data.resize(size_t(array.getNumElements()) * elem);
    for (int64_t n = 0; n < array.getNumElements(); ++n) {
      // Integers (positions, indices) are drawn from [0, 16).
      double value = isInteger(spec.elementType)
                         ? std::floor((uniform(rng) + 1) * 8)
                         : uniform(rng);
      storeValue(spec.elementType, value, array.data.data() + n * elem);
    }
    inputs.push_back(std::move(array));
  }
  return inputs;
}

llvm::Error writeArrays(StringRef dir, StringRef prefix,
                        ArrayRef<Array> arrays) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("cannot create output directory '" + dir +
                     "': " + ec.message());
  for (auto [index, array] : llvm::enumerate(arrays)) {
    SmallString<256> path(dir);
    llvm::sys::path::append(path, prefix + Twine(index) + ".npy");
    if (llvm::Error error = writeNpy(path, array))
      return error;
  }
  return llvm::Error::success();
}

/// Calls the function on `inputs` and returns its results as dense arrays.
llvm::Expected<std::vector<Array>> invoke(attnfuse::JitFunction &function,
                                          std::vector<Array> &inputs) {
  std::vector<attnfuse::TensorRef> args;
  for (Array &array : inputs)
    args.push_back(array.ref());
  auto results = function.call(args);
  if (!results)
    return results.takeError();
  // A cache updated in place: the result is the input array after the call.
  for (Array &result : *results)
    if (result.argument)
      result.data = inputs[*result.argument].data;
  return results;
}

/// Calls the function for its time only (results that are updated caches
/// are not copied).
llvm::Error invokeForTime(attnfuse::JitFunction &function,
                          std::vector<Array> &inputs) {
  std::vector<attnfuse::TensorRef> args;
  for (Array &array : inputs)
    args.push_back(array.ref());
  auto results = function.call(args);
  return results ? llvm::Error::success() : results.takeError();
}

/// One line of a --run-list file: an output directory and the input files.
struct RunSpec {
  std::string outputDir;
  std::vector<std::string> inputs;
  unsigned line;
};

llvm::Expected<std::vector<RunSpec>> readRunList(StringRef path) {
  auto bufferOr = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!bufferOr)
    return makeError("cannot read run list '" + path +
                     "': " + bufferOr.getError().message());
  std::vector<RunSpec> runs;
  SmallVector<StringRef> lines;
  (*bufferOr)->getBuffer().split(lines, '\n');
  for (auto [index, line] : llvm::enumerate(lines)) {
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    SmallVector<StringRef> fields;
    llvm::SplitString(line, fields);
    RunSpec run;
    run.line = index + 1;
    run.outputDir = fields[0].str();
    for (StringRef field : llvm::drop_begin(fields))
      run.inputs.push_back(field.str());
    runs.push_back(std::move(run));
  }
  if (runs.empty())
    return makeError("run list '" + path + "' names no runs");
  return runs;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Hide the many LLVM backend options from --help.
  cl::HideUnrelatedOptions(runnerCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "AttnFuse runner: lower with attn-to-cpu, JIT-execute one function on "
      ".npy inputs and write its results as .npy files\n\n"
      "dtypes: f32 <f4, f64 <f8, f16 <f2, bf16 <u2 (bit patterns; numpy has "
      "no bfloat16), i32 <i4, i64 <i8\n");

  // Which inputs: files, random, or a list of runs sharing one compilation.
  bool randomInputs = randomSeed.getNumOccurrences() > 0;
  bool listMode = runList.getNumOccurrences() > 0;
  if (int(randomInputs) + int(listMode) + int(!inputFiles.empty()) > 1)
    return fail("give one of --input files, --random-seed or --run-list");
  if (listMode && benchmarkRuns > 0)
    return fail("--benchmark times one call: give --input files or "
                "--random-seed, not --run-list");
  if (randomInputs && (batchSize < 0 || seqLen < 0))
    return fail("--batch and --seq must not be negative");
  if (!listMode && outputDir.empty())
    return fail("--output-dir is required (except with --run-list)");
  std::vector<RunSpec> runs;
  if (listMode) {
    auto list = readRunList(runList);
    if (!list)
      return fail(llvm::toString(list.takeError()));
    runs = std::move(*list);
  }

  DialectRegistry registry;
  attnfuse::registerJitDialects(registry);
  MLIRContext context(registry);

  // Parse the module.
  std::string errorMessage;
  auto file = openInputFile(inputFilename, &errorMessage);
  if (!file)
    return fail("cannot read '" + inputFilename + "': " + errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse '" + inputFilename + "'");

  // The entry function and its signature.
  auto func = module->lookupSymbol<func::FuncOp>(entryName);
  if (!func || func.isExternal()) {
    std::string names;
    for (auto candidate : module->getOps<func::FuncOp>())
      if (!candidate.isExternal())
        names += (names.empty() ? "" : ", ") + candidate.getSymName().str();
    return fail("no function '" + entryName + "' in '" + inputFilename +
                "' (functions: " + (names.empty() ? "none" : names) + ")");
  }
  std::vector<TensorSpec> argSpecs, resultSpecs;
  if (llvm::Error error = attnfuse::JitFunction::getSignature(
          *module, entryName, argSpecs, resultSpecs))
    return fail(llvm::toString(std::move(error)));

  // Check the inputs before the (slower) compilation.
  std::vector<Array> singleInputs;
  if (randomInputs) {
    singleInputs = randomInputsFor(argSpecs);
    if (llvm::Error error = writeArrays(outputDir, "input", singleInputs))
      return fail(llvm::toString(std::move(error)));
  } else if (!listMode) {
    auto inputs = loadInputs(inputFiles, argSpecs);
    if (!inputs)
      return fail(llvm::toString(inputs.takeError()));
    singleInputs = std::move(*inputs);
  } else {
    for (const RunSpec &run : runs)
      if (run.inputs.size() != argSpecs.size())
        return fail(runList + ":" + Twine(run.line) + ": '" + entryName +
                    "' takes " + Twine(argSpecs.size()) +
                    " argument(s), the line names " + Twine(run.inputs.size()) +
                    " input file(s)");
  }

  // Lower and JIT-compile.
  attnfuse::JitOptions jitOptions;
  jitOptions.pipelineOptions = pipelineOptionsText;
  jitOptions.runtimeChecks = runtimeChecks;
  jitOptions.fused = !referenceLowering;
  jitOptions.optLevel = optLevel;
  jitOptions.inPlaceCaches = inPlaceCaches;
  if (numThreads)
    jitOptions.numThreads = numThreads;
  auto compileStart = std::chrono::steady_clock::now();
  auto compiled = attnfuse::JitFunction::create(*module, entryName, jitOptions);
  if (!compiled)
    return fail("'" + inputFilename +
                "': " + llvm::toString(compiled.takeError()));
  attnfuse::JitFunction &engine = **compiled;

  if (!listMode && benchmarkRuns > 0) {
    // The first call also finishes the lazy JIT materialization.
    auto warmup = invoke(engine, singleInputs);
    if (!warmup)
      return fail(llvm::toString(warmup.takeError()));
    double compileSeconds = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - compileStart)
                                .count();
    std::vector<double> seconds;
    for (unsigned run = 0; run < benchmarkRuns; ++run) {
      auto start = std::chrono::steady_clock::now();
      llvm::Error error = invokeForTime(engine, singleInputs);
      seconds.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
      if (error)
        return fail(llvm::toString(std::move(error)));
    }
    std::sort(seconds.begin(), seconds.end());
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    llvm::outs() << llvm::formatv(
        "{{\"compile_and_first_call_s\": {0:f4}, \"runs\": {1}, "
        "\"call_s_min\": {2:e}, \"call_s_median\": {3:e}, "
        "\"peak_rss_bytes\": {4}}\n",
        compileSeconds, seconds.size(), seconds.front(),
        seconds[seconds.size() / 2],
        static_cast<int64_t>(usage.ru_maxrss) * 1024);
    if (llvm::Error error = writeArrays(outputDir, "out", *warmup))
      return fail(llvm::toString(std::move(error)));
    return 0;
  }
  if (!listMode) {
    auto results = invoke(engine, singleInputs);
    if (!results)
      return fail(llvm::toString(results.takeError()));
    if (llvm::Error error = writeArrays(outputDir, "out", *results))
      return fail(llvm::toString(std::move(error)));
    return 0;
  }
  for (const RunSpec &run : runs) {
    // A std::string: a Twine must not outlive its operands.
    std::string where = (runList + ":" + Twine(run.line) + ": ").str();
    auto inputs = loadInputs(run.inputs, argSpecs);
    if (!inputs)
      return fail(where + llvm::toString(inputs.takeError()));
    auto results = invoke(engine, *inputs);
    if (!results)
      return fail(where + llvm::toString(results.takeError()));
    if (llvm::Error error = writeArrays(run.outputDir, "out", *results))
      return fail(where + llvm::toString(std::move(error)));
  }
  return 0;
}
