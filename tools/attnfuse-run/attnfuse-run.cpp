//===- attnfuse-run.cpp - JIT-run attn functions on .npy data ---*- C++ -*-===//
//
// attnfuse-run model.mlir --entry=NAME [--input=a.npy ...]
//              [--random-seed=N --batch=B --seq=S] --output-dir=DIR
//
// Parses the module, lowers it with the attn-to-cpu pipeline, JIT-compiles it
// with mlir::ExecutionEngine and calls NAME through its C interface
// (`llvm.emit_c_interface` is set here). The function takes and returns
// ranked tensors of f32, f64, f16 or bf16.
//
// Inputs are .npy files (C order, little endian): `<f4` for f32, `<f8` for
// f64, `<f2` for f16 and, since numpy has no bfloat16, `<u2` holding the bf16
// bit patterns (the upper 16 bits of the f32 encoding) for bf16. Dynamic
// dimensions of the signature are taken from the input arrays. Without
// --input, every argument is filled with uniform random values in [-1, 1)
// from --random-seed; its dynamic dimensions are --batch for dimension 0 of
// a tensor of rank >= 3 and --seq for every other one; the generated arrays
// are saved as inputN.npy next to the results.
//
// Each result is written as DIR/outN.npy with the same dtype convention.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/Pipelines.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory runnerCategory("attnfuse-run options");
static cl::opt<std::string>
    inputFilename(cl::Positional, cl::desc("<model.mlir>"), cl::Required, cl::cat(runnerCategory));
static cl::opt<std::string> entryName("entry", cl::desc("Function to run"),
                                      cl::value_desc("name"), cl::Required, cl::cat(runnerCategory));
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
                                  cl::init(2), cl::Prefix, cl::cat(runnerCategory));
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

enum class DType { F32, F64, F16, BF16, I32 };

size_t byteSize(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
    return 8;
  case DType::F16:
  case DType::BF16:
    return 2;
  }
  return 0;
}

const char *npyDescr(DType type) {
  switch (type) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<u2";
  case DType::I32:
    return "<i4";
  }
  return "";
}

const char *typeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I32:
    return "i32";
  }
  return "";
}

std::optional<DType> dtypeOf(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isSignlessInteger(32))
    return DType::I32;
  return std::nullopt;
}

/// A dense C-order array.
struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> data;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t dim : shape)
      n *= dim;
    return n;
  }
};

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return text + "]";
}

/// Value of `key` in the .npy header dictionary (the text after "'key':").
std::optional<std::string> headerField(StringRef header, StringRef key) {
  std::string quoted = ("'" + key + "'").str();
  size_t pos = header.find(quoted);
  if (pos == StringRef::npos)
    return std::nullopt;
  pos = header.find(':', pos + quoted.size());
  if (pos == StringRef::npos)
    return std::nullopt;
  return header.drop_front(pos + 1).ltrim().str();
}

/// Reads a .npy file; on failure returns an error message.
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
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return fail("not a .npy file (bad magic)");
  uint8_t major = bytes[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated .npy header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return fail("unsupported .npy format version " + Twine(int(major)));
  }
  if (bytes.size() < headerStart + headerLen)
    return fail("truncated .npy header");
  StringRef header = bytes.substr(headerStart, headerLen);

  Array array;
  std::optional<std::string> descr = headerField(header, "descr");
  if (!descr || descr->size() < 2 ||
      ((*descr)[0] != '\'' && (*descr)[0] != '"'))
    return fail("malformed .npy header (no 'descr')");
  std::string type = descr->substr(1, descr->find((*descr)[0], 1) - 1);
  if (type == "<f4" || type == "=f4")
    array.dtype = DType::F32;
  else if (type == "<f8" || type == "=f8")
    array.dtype = DType::F64;
  else if (type == "<f2" || type == "=f2")
    array.dtype = DType::F16;
  else if (type == "<u2" || type == "=u2")
    array.dtype = DType::BF16;
  else if (type == "<i4" || type == "=i4")
    array.dtype = DType::I32;
  else
    return fail("unsupported dtype '" + type +
                "' (expected <f4 for f32, <f8 for f64, <f2 for f16, <u2 "
                "holding bf16 bit patterns, or <i4 for i32)");

  std::optional<std::string> fortran = headerField(header, "fortran_order");
  if (!fortran)
    return fail("malformed .npy header (no 'fortran_order')");
  if (StringRef(*fortran).starts_with("True"))
    return fail("Fortran-order arrays are not supported; save a C-contiguous "
                "array (numpy.ascontiguousarray)");

  std::optional<std::string> shapeText = headerField(header, "shape");
  if (!shapeText || shapeText->empty() || (*shapeText)[0] != '(')
    return fail("malformed .npy header (no 'shape')");
  StringRef dims = StringRef(*shapeText).drop_front();
  dims = dims.take_until([](char c) { return c == ')'; });
  SmallVector<StringRef> parts;
  dims.split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t size;
    if (part.getAsInteger(10, size) || size < 0)
      return fail("malformed shape entry '" + part + "'");
    array.shape.push_back(size);
  }

  size_t dataStart = headerStart + headerLen;
  int64_t expectedBytes = byteSize(array.dtype);
  for (int64_t dim : array.shape)
    if (llvm::MulOverflow(expectedBytes, dim, expectedBytes))
      return fail("shape " + formatShape(array.shape) + " is too large");
  uint64_t expected = expectedBytes;
  if (bytes.size() - dataStart < expected)
    return fail("holds " + Twine(bytes.size() - dataStart) +
                " data bytes, shape " + formatShape(array.shape) + " needs " +
                Twine(expected));
  array.data.assign(bytes.data() + dataStart,
                    bytes.data() + dataStart + expected);
  return array;
}

/// Writes `array` as a version 1.0 .npy file.
llvm::Error writeNpy(StringRef path, const Array &array) {
  std::string shape;
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(array.shape[i]);
  if (array.shape.size() == 1)
    shape += ","; // a 1-tuple
  std::string header = std::string("{'descr': '") + npyDescr(array.dtype) +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pad with spaces and end with a newline so that the data starts at a
  // multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write '" + path +
                                           "': " + ec.message());
  os << "\x93NUMPY";
  os << char(1) << char(0);
  os << char(header.size() & 0xff) << char((header.size() >> 8) & 0xff);
  os << header;
  os.write(array.data.data(), array.data.size());
  os.close();
  if (os.has_error())
    return llvm::createStringError(os.error(), "cannot write '" + path + "'");
  return llvm::Error::success();
}

/// Stores `value` rounded to `type` at `dst`.
void storeValue(DType type, double value, char *dst) {
  switch (type) {
  case DType::F32: {
    float f = static_cast<float>(value);
    std::memcpy(dst, &f, 4);
    return;
  }
  case DType::F64:
    std::memcpy(dst, &value, 8);
    return;
  case DType::F16:
  case DType::BF16: {
    llvm::APFloat apf(value);
    bool losesInfo;
    apf.convert(type == DType::F16 ? llvm::APFloat::IEEEhalf()
                                   : llvm::APFloat::BFloat(),
                llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    uint16_t bits = static_cast<uint16_t>(apf.bitcastToAPInt().getZExtValue());
    std::memcpy(dst, &bits, 2);
    return;
  }
  case DType::I32: {
    // Random integers (positions) in [0, 16) from a value in [-1, 1).
    int32_t integer = static_cast<int32_t>((value + 1.0) * 8.0);
    std::memcpy(dst, &integer, 4);
    return;
  }
  }
}

//===----------------------------------------------------------------------===//
// The entry function's signature
//===----------------------------------------------------------------------===//

struct TensorSpec {
  DType dtype;
  std::vector<int64_t> shape; // ShapedType::kDynamic for '?'
};

llvm::Expected<TensorSpec> specOf(Type type, const Twine &what) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  if (!tensorType)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   what + " has type " + text +
                                       "; only ranked tensors are supported");
  std::optional<DType> dtype = dtypeOf(tensorType.getElementType());
  if (!dtype)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        what + " has type " + text +
            "; supported element types are f32, f64, f16, bf16 and i32");
  return TensorSpec{*dtype, std::vector<int64_t>(tensorType.getShape().begin(),
                                                 tensorType.getShape().end())};
}

//===----------------------------------------------------------------------===//
// Memref descriptors: {allocated, aligned, offset, sizes[r], strides[r]}
//===----------------------------------------------------------------------===//

size_t descriptorWords(size_t rank) { return 3 + 2 * rank; }

void fillDescriptor(int64_t *words, Array &array) {
  size_t rank = array.shape.size();
  // A non-null pointer even for empty arrays.
  static char emptyStorage[16];
  void *ptr = array.data.empty() ? static_cast<void *>(emptyStorage)
                                 : static_cast<void *>(array.data.data());
  std::memcpy(&words[0], &ptr, sizeof(void *));
  std::memcpy(&words[1], &ptr, sizeof(void *));
  words[2] = 0;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    words[3 + i] = array.shape[i];
    words[3 + rank + i] = stride;
    stride *= array.shape[i];
  }
}

/// Copies a (possibly strided) result memref into a dense array.
Array readDescriptor(const int64_t *words, const TensorSpec &spec) {
  size_t rank = spec.shape.size();
  Array array;
  array.dtype = spec.dtype;
  char *aligned;
  std::memcpy(&aligned, &words[1], sizeof(void *));
  int64_t offset = words[2];
  for (size_t i = 0; i < rank; ++i)
    array.shape.push_back(words[3 + i]);
  size_t elem = byteSize(spec.dtype);
  int64_t count = array.numElements();
  array.data.resize(size_t(count) * elem);
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t linear = offset;
    for (size_t i = 0; i < rank; ++i)
      linear += index[i] * words[3 + rank + i];
    std::memcpy(array.data.data() + size_t(n) * elem, aligned + linear * elem,
                elem);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < array.shape[i])
        break;
      index[i] = 0;
    }
  }
  return array;
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
    if (array->dtype != spec.dtype)
      return makeError("input #" + Twine(index) + " '" + path + "' has dtype " +
                       npyDescr(array->dtype) + " (" + typeName(array->dtype) +
                       "), argument #" + Twine(index) + " of '" + entryName +
                       "' is " + typeName(spec.dtype) + " (npy dtype " +
                       npyDescr(spec.dtype) + ")");
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
    array.dtype = spec.dtype;
    for (auto [i, dim] : llvm::enumerate(spec.shape))
      array.shape.push_back(!ShapedType::isDynamic(dim) ? dim
                            : (i == 0 && spec.shape.size() >= 3)
                                ? int64_t(batchSize)
                                : int64_t(seqLen));
    size_t elem = byteSize(spec.dtype);
    array.data.resize(size_t(array.numElements()) * elem);
    for (int64_t n = 0; n < array.numElements(); ++n)
      storeValue(spec.dtype, uniform(rng), array.data.data() + n * elem);
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

/// The compiled code checks at run time that the dynamic sizes of the
/// operands agree (generate-runtime-verification); a failed check prints its
/// message on stdout and aborts. Turn that into a clean error exit.
extern "C" void onRuntimeCheckFailure(int) {
  std::fflush(stdout);
  static const char message[] =
      "attnfuse-run: error: a run-time check of the compiled function failed: "
      "the dynamic sizes of the inputs are inconsistent (for example a batch "
      "or sequence length that differs between arguments, or a logit bias "
      "that is not [S, T]); the failing op's location is printed above\n";
  ssize_t ignored = ::write(2, message, sizeof(message) - 1);
  (void)ignored;
  std::_Exit(1);
}

/// Calls `_mlir_ciface_<entry>(results*, args*...)` and returns the results
/// as dense arrays.
llvm::Expected<std::vector<Array>> invoke(ExecutionEngine &engine,
                                          std::vector<Array> &inputs,
                                          ArrayRef<TensorSpec> resultSpecs) {
  std::vector<std::vector<int64_t>> argDescriptors;
  for (Array &array : inputs) {
    argDescriptors.emplace_back(descriptorWords(array.shape.size()));
    fillDescriptor(argDescriptors.back().data(), array);
  }
  size_t resultWords = 0;
  for (const TensorSpec &spec : resultSpecs)
    resultWords += descriptorWords(spec.shape.size());
  std::vector<int64_t> resultStorage(std::max<size_t>(resultWords, 1), 0);
  void *resultPtr = resultStorage.data();
  std::vector<void *> argPtrs;
  for (auto &descriptor : argDescriptors)
    argPtrs.push_back(descriptor.data());
  SmallVector<void *> packed;
  if (!resultSpecs.empty())
    packed.push_back(&resultPtr);
  for (void *&ptr : argPtrs)
    packed.push_back(&ptr);
  struct sigaction onAbort = {}, previous = {};
  onAbort.sa_handler = onRuntimeCheckFailure;
  sigemptyset(&onAbort.sa_mask);
  sigaction(SIGABRT, &onAbort, &previous);
  llvm::Error error =
      engine.invokePacked("_mlir_ciface_" + entryName.getValue(), packed);
  sigaction(SIGABRT, &previous, nullptr);
  if (error)
    return makeError("calling '" + entryName +
                     "' failed: " + llvm::toString(std::move(error)));

  // The buffer deallocation pipeline hands the caller ownership of the
  // result buffers (malloc'ed by the compiled code, cloned when they would
  // alias an argument or a constant): copy them out and free each once.
  std::vector<Array> results;
  size_t wordOffset = 0;
  llvm::SmallPtrSet<void *, 4> toFree;
  for (const TensorSpec &spec : resultSpecs) {
    const int64_t *words = resultStorage.data() + wordOffset;
    results.push_back(readDescriptor(words, spec));
    wordOffset += descriptorWords(spec.shape.size());
    void *allocated;
    std::memcpy(&allocated, &words[0], sizeof(void *));
    if (allocated)
      toFree.insert(allocated);
  }
  for (Array &array : inputs)
    toFree.erase(array.data.data());
  for (void *ptr : toFree)
    std::free(ptr);
  return results;
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
      "no bfloat16), i32 <i4\n");

  // Which inputs: files, random, or a list of runs sharing one compilation.
  bool randomInputs = randomSeed.getNumOccurrences() > 0;
  bool listMode = runList.getNumOccurrences() > 0;
  if (int(randomInputs) + int(listMode) + int(!inputFiles.empty()) > 1)
    return fail("give one of --input files, --random-seed or --run-list");
  if (listMode && benchmarkRuns > 0)
    return fail("--benchmark times one call: give --input files or "
                "--random-seed, not --run-list");
  if (randomInputs && (batchSize < 1 || seqLen < 1))
    return fail("--batch and --seq must be positive");
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
  attnfuse::registerAttnToCPUDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
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
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto spec =
        specOf(type, "argument #" + Twine(index) + " of '" + entryName + "'");
    if (!spec)
      return fail(llvm::toString(spec.takeError()));
    argSpecs.push_back(*spec);
  }
  for (auto [index, type] : llvm::enumerate(func.getResultTypes())) {
    auto spec =
        specOf(type, "result #" + Twine(index) + " of '" + entryName + "'");
    if (!spec)
      return fail(llvm::toString(spec.takeError()));
    resultSpecs.push_back(*spec);
  }

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

  // Lower to the LLVM dialect.
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));
  PassManager pm(&context);
  attnfuse::AttnToCPUOptions pipelineOptions;
  pipelineOptions.runtimeChecks = runtimeChecks;
  if (failed(pipelineOptions.parseFromString(pipelineOptionsText)))
    return fail("invalid --pipeline-options '" + pipelineOptionsText + "'");
  pipelineOptions.fused = !referenceLowering;
  auto compileStart = std::chrono::steady_clock::now();
  attnfuse::buildAttnToCPUPipeline(pm, pipelineOptions);
  if (failed(pm.run(*module)))
    return fail("lowering '" + inputFilename + "' with attn-to-cpu failed");

  // JIT-compile.
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // Optimize for the host: without its target machine LLVM's cost models
  // see no vector registers and the loop vectorizer does nothing.
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder)
    return fail("cannot describe the host CPU: " +
                llvm::toString(machineBuilder.takeError()));
  auto targetMachine = machineBuilder->createTargetMachine();
  if (!targetMachine)
    return fail("cannot create a target machine for the host: " +
                llvm::toString(targetMachine.takeError()));
  auto transformer = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                               targetMachine->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  auto engineOr = ExecutionEngine::create(*module, engineOptions);
  if (!engineOr)
    return fail("JIT compilation failed: " +
                llvm::toString(engineOr.takeError()));
  std::unique_ptr<ExecutionEngine> engine = std::move(*engineOr);
  // memref.copy between strided views calls the C runner utilities.
  engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("memrefCopy")] = {
        llvm::orc::ExecutorAddr::fromPtr(&memrefCopy),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });

  if (!listMode && benchmarkRuns > 0) {
    // The first call also finishes the lazy JIT materialization.
    auto warmup = invoke(*engine, singleInputs, resultSpecs);
    if (!warmup)
      return fail(llvm::toString(warmup.takeError()));
    double compileSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      compileStart)
            .count();
    std::vector<double> seconds;
    for (unsigned run = 0; run < benchmarkRuns; ++run) {
      auto start = std::chrono::steady_clock::now();
      auto results = invoke(*engine, singleInputs, resultSpecs);
      seconds.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
      if (!results)
        return fail(llvm::toString(results.takeError()));
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
    auto results = invoke(*engine, singleInputs, resultSpecs);
    if (!results)
      return fail(llvm::toString(results.takeError()));
    if (llvm::Error error = writeArrays(outputDir, "out", *results))
      return fail(llvm::toString(std::move(error)));
    return 0;
  }
  for (const RunSpec &run : runs) {
    auto where = runList + ":" + Twine(run.line) + ": ";
    auto inputs = loadInputs(run.inputs, argSpecs);
    if (!inputs)
      return fail(where + llvm::toString(inputs.takeError()));
    auto results = invoke(*engine, *inputs, resultSpecs);
    if (!results)
      return fail(where + llvm::toString(results.takeError()));
    if (llvm::Error error = writeArrays(run.outputDir, "out", *results))
      return fail(where + llvm::toString(std::move(error)));
  }
  return 0;
}
