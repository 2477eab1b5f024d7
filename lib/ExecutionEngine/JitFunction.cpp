//===- JitFunction.cpp - JIT-compiled attn functions on the CPU -*- C++ -*-===//

#include "attnfuse/ExecutionEngine/JitFunction.h"
#include "attnfuse/Conversion/AssertToErrorReturn/AssertToErrorReturn.h"
#include "attnfuse/Conversion/Pipelines.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace mlir;
using namespace attnfuse;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

size_t attnfuse::getElementByteSize(ElementType type) {
  switch (type) {
  case ElementType::F32:
  case ElementType::I32:
    return 4;
  case ElementType::F64:
  case ElementType::I64:
    return 8;
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  }
  return 0;
}

StringRef attnfuse::getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F64:
    return "f64";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::I32:
    return "i32";
  case ElementType::I64:
    return "i64";
  }
  return "";
}

std::optional<ElementType> attnfuse::getElementTypeFromName(StringRef name) {
  return llvm::StringSwitch<std::optional<ElementType>>(name)
      .Case("f32", ElementType::F32)
      .Case("f64", ElementType::F64)
      .Case("f16", ElementType::F16)
      .Case("bf16", ElementType::BF16)
      .Case("i32", ElementType::I32)
      .Case("i64", ElementType::I64)
      .Default(std::nullopt);
}

std::optional<ElementType> attnfuse::getElementTypeOf(Type type) {
  if (type.isF32())
    return ElementType::F32;
  if (type.isF64())
    return ElementType::F64;
  if (type.isF16())
    return ElementType::F16;
  if (type.isBF16())
    return ElementType::BF16;
  // Signless or signed: the memref ABI is the same.
  if (type.isInteger(32) && !type.isUnsignedInteger())
    return ElementType::I32;
  if (type.isInteger(64) && !type.isUnsignedInteger())
    return ElementType::I64;
  return std::nullopt;
}

std::string attnfuse::formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return text + "]";
}

int64_t Tensor::getNumElements() const {
  int64_t n = 1;
  for (int64_t dim : shape)
    n *= dim;
  return n;
}

void attnfuse::registerJitDialects(DialectRegistry &registry) {
  registerAttnToCPUDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
}

static llvm::Expected<TensorSpec> getSpec(Type type, const Twine &what) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  if (!tensorType)
    return makeError(what + " has type " + text +
                     "; only ranked tensors are supported");
  std::optional<ElementType> elementType =
      getElementTypeOf(tensorType.getElementType());
  if (!elementType)
    return makeError(what + " has type " + text +
                     "; supported element types are f32, f64, f16, bf16, "
                     "i32 and i64");
  return TensorSpec{*elementType,
                    std::vector<int64_t>(tensorType.getShape().begin(),
                                         tensorType.getShape().end())};
}

llvm::Error JitFunction::getSignature(ModuleOp module, StringRef entry,
                                      std::vector<TensorSpec> &arguments,
                                      std::vector<TensorSpec> &results) {
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func || func.isExternal()) {
    std::string names;
    for (auto candidate : module.getOps<func::FuncOp>())
      if (!candidate.isExternal())
        names += (names.empty() ? "" : ", ") + candidate.getSymName().str();
    return makeError("no function '" + entry + "' in the module (functions: " +
                     (names.empty() ? "none" : names) + ")");
  }
  arguments.clear();
  results.clear();
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto spec =
        getSpec(type, "argument #" + Twine(index) + " of '" + entry + "'");
    if (!spec)
      return spec.takeError();
    arguments.push_back(*spec);
  }
  for (auto [index, type] : llvm::enumerate(func.getResultTypes())) {
    auto spec =
        getSpec(type, "result #" + Twine(index) + " of '" + entry + "'");
    if (!spec)
      return spec.takeError();
    results.push_back(*spec);
  }
  return llvm::Error::success();
}

JitFunction::~JitFunction() = default;

/// The (cache operand, updated cache) pairs of the ops that update a KV
/// cache. The decode states (conv_state, shift_state) are a few rows per
/// sequence and are rebuilt, not updated in place.
static SmallVector<std::pair<Value, Value>> getUpdatedCaches(Operation *op) {
  SmallVector<std::pair<Value, Value>> pairs;
  auto add = [&](Value state, Value updated) {
    if (state && updated)
      pairs.push_back({state, updated});
  };
  if (auto decode = dyn_cast<attn::QKVDecodeOp>(op)) {
    add(decode.getKeyCache(), decode.getKeyCacheOut());
    add(decode.getValueCache(), decode.getValueCacheOut());
  } else if (auto decode = dyn_cast<attn::CCADecodeOp>(op)) {
    add(decode.getKeyCache(), decode.getKeyCacheOut());
    add(decode.getValueCache(), decode.getValueCacheOut());
  } else if (auto update = dyn_cast<attn::CacheUpdateOp>(op)) {
    add(update.getCache(), update.getResult());
  }
  return pairs;
}

/// The arguments of `func` that it updates and returns: the cache operand of
/// a cache update whose updated value the function returns. Should
/// an op still read the old value after the update, one-shot bufferization
/// copies the buffer as before and the result is not tied to the argument.
static llvm::BitVector getCacheArguments(func::FuncOp func) {
  llvm::BitVector caches(func.getNumArguments());
  func.walk([&](Operation *op) {
    for (auto [cache, updated] : getUpdatedCaches(op)) {
      auto argument = dyn_cast<BlockArgument>(cache);
      if (!argument || argument.getOwner() != &func.getBody().front())
        continue;
      bool returned = llvm::any_of(updated.getUsers(), [](Operation *user) {
        return isa<func::ReturnOp>(user);
      });
      if (returned)
        caches.set(argument.getArgNumber());
    }
  });
  return caches;
}

// A call's allocations and its failed check. The compiled code allocates
// through the _mlir_memref_to_llvm_* hooks below, so that when a run-time
// check fails (and the function returns at once, skipping its frees) the
// caller can free everything the call allocated; results are freed the same
// way once copied out.
namespace {
// Threads of a parallel loop other than the calling one allocate and free
// their tiles untracked (the region frees them) and record a failed check in
// the calling thread's state, hence the lock.
struct CallState {
  llvm::SmallPtrSet<void *, 16> live;
  std::mutex failedCheckLock;
  std::optional<std::string> failedCheck;

  void fail(const char *message) {
    std::lock_guard<std::mutex> lock(failedCheckLock);
    if (!failedCheck)
      failedCheck = message ? message : "";
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(failedCheckLock);
    return failedCheck.has_value();
  }
};
thread_local CallState *currentCall = nullptr;

void *trackAllocation(void *ptr) {
  if (ptr && currentCall)
    currentCall->live.insert(ptr);
  return ptr;
}

/// Large buffers the compiled functions freed, kept for their next
/// allocations. A training step calls its forward and its backward in turn,
/// and each call allocates the same buffers as its previous call; a fresh
/// large block costs a page fault and a page clear per 4 KiB page (glibc
/// maps blocks of 32 MiB and more anew, and returns the top of its heap and
/// its thread arenas to the system). Measured on a CCGQA layer's training
/// step at S 2048: page faults 10-20% of the step, more on two threads.
///
/// A request takes the smallest cached block of at least its size and at
/// most a quarter more, aligned as it asks; a miss allocates a new block
/// and keeps the cache (the forward's blocks wait there for the next
/// forward while the backward runs). Released blocks beyond the bound
/// evict the least recently released ones, so the cache adds at most
/// ATTNFUSE_ALLOC_CACHE_MB (default 512; 0 disables it) to a process's
/// peak. Large blocks come from posix_memalign at kAlignment, so one block
/// serves a plain and an aligned request, and free() frees any of them.
class LargeBlockCache {
public:
  static LargeBlockCache &get() {
    static LargeBlockCache cache;
    return cache;
  }

  /// A block of at least `size` bytes aligned to `alignment` (a power of
  /// two), or null when out of memory.
  void *allocate(uint64_t size, uint64_t alignment) {
    if (size < kMinBytes || limit == 0 || alignment > kAlignment) {
      void *ptr = nullptr;
      if (alignment <= alignof(std::max_align_t))
        return std::malloc(size);
      return posix_memalign(&ptr, alignment, size) == 0 ? ptr : nullptr;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto best = blocks.end();
      for (auto it = blocks.begin(); it != blocks.end(); ++it)
        if (it->size >= size && it->size - size <= size / 4 &&
            (best == blocks.end() || it->size < best->size))
          best = it;
      if (best != blocks.end()) {
        void *ptr = best->ptr;
        bytes -= best->size;
        blocks.erase(best);
        return ptr;
      }
    }
    void *ptr = nullptr;
    return posix_memalign(&ptr, kAlignment, size) == 0 ? ptr : nullptr;
  }

  /// Keeps `ptr` (from malloc or posix_memalign) when it is large, evicting
  /// the oldest blocks beyond the bound; frees it otherwise.
  void release(void *ptr) {
    if (!ptr)
      return;
#if defined(__GLIBC__)
    uint64_t size = malloc_usable_size(ptr);
    if (size >= kMinBytes && size <= limit &&
        reinterpret_cast<uintptr_t>(ptr) % kAlignment == 0) {
      std::vector<void *> evicted;
      {
        std::lock_guard<std::mutex> lock(mutex);
        blocks.push_back({ptr, size});
        bytes += size;
        size_t oldest = 0;
        while (bytes > limit) {
          evicted.push_back(blocks[oldest].ptr);
          bytes -= blocks[oldest].size;
          ++oldest;
        }
        blocks.erase(blocks.begin(), blocks.begin() + oldest);
      }
      for (void *block : evicted)
        std::free(block);
      return;
    }
#endif
    std::free(ptr);
  }

private:
  LargeBlockCache() {
#if defined(__GLIBC__)
    limit = uint64_t(512) << 20;
    if (const char *megabytes = std::getenv("ATTNFUSE_ALLOC_CACHE_MB"))
      limit = std::strtoull(megabytes, nullptr, 10) << 20;
#endif
  }
  ~LargeBlockCache() {
    for (Block &block : blocks)
      std::free(block.ptr);
  }

  static constexpr uint64_t kMinBytes = uint64_t(256) << 10;
  /// The alignment of every cached block: a cache line, the most the
  /// lowering asks of a buffer.
  static constexpr uint64_t kAlignment = 64;
  struct Block {
    void *ptr;
    uint64_t size;
  };
  std::mutex mutex;
  /// Oldest release first.
  std::vector<Block> blocks;
  uint64_t bytes = 0, limit = 0;
};
} // namespace

extern "C" {
static void *attnfuseJitAlloc(uint64_t size) {
  // Never null for an empty buffer: null means out of memory.
  return trackAllocation(LargeBlockCache::get().allocate(
      std::max<uint64_t>(size, 1), alignof(std::max_align_t)));
}

static void *attnfuseJitAlignedAlloc(uint64_t alignment, uint64_t size) {
  alignment = std::max<uint64_t>(alignment, sizeof(void *));
  if (alignment & (alignment - 1))
    return nullptr;
  return trackAllocation(
      LargeBlockCache::get().allocate(std::max<uint64_t>(size, 1), alignment));
}

static void attnfuseJitFree(void *ptr) {
  if (currentCall)
    currentCall->live.erase(ptr);
  LargeBlockCache::get().release(ptr);
}

static void attnfuseCheckFailed(const char *message) {
  if (currentCall)
    currentCall->fail(message);
}

static int attnfuseCheckPending() {
  return currentCall && currentCall->failed() ? 1 : 0;
}

static void *attnfuseCallState() { return currentCall; }

static void attnfuseCheckFailedIn(void *state, const char *message) {
  if (state)
    static_cast<CallState *>(state)->fail(message);
}
}

namespace {
/// A GEMM tile's register block for this host's vector registers: enough
/// independent accumulators to cover the FMA latency on both FMA ports,
/// with the k step's operand loads and broadcasts fitting beside them.
struct RegisterBlock {
  int64_t rows, columns;
};

RegisterBlock registerBlockForHost() {
  // AVX-512: 32 registers of 16 floats; 6 x 64 keeps 24 accumulators, four
  // row loads and a broadcast, 10 loads per 24 FMAs (a 1024^3 GEMM at one
  // thread: 142 -> 158 GFLOP/s over 8 x 32's 16 accumulators, which was
  // 1.3x faster than 2 x 32). AVX2 has 16 registers of 8 floats, where
  // 2 x 32 (8 accumulators) was measured best; the pipeline's default.
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (features.lookup("avx512f"))
    return {6, 64};
  return {AttnToCPUOptions().registerTileM, AttnToCPUOptions().registerTileN};
}
} // namespace

llvm::Expected<std::unique_ptr<JitFunction>>
JitFunction::create(ModuleOp module, StringRef entry,
                    const JitOptions &options) {
  std::unique_ptr<JitFunction> function(new JitFunction());
  function->name = entry.str();
  if (llvm::Error error =
          getSignature(module, entry, function->arguments, function->results))
    return std::move(error);

  AttnToCPUOptions pipelineOptions;
  if (failed(pipelineOptions.parseFromString(options.pipelineOptions)))
    return makeError("invalid attn-to-cpu options '" + options.pipelineOptions +
                     "'");
  pipelineOptions.runtimeChecks = options.runtimeChecks;
  if (options.numThreads) {
    if (!pipelineOptions.parallel)
      return makeError("num_threads=" + Twine(*options.numThreads) +
                       " needs the parallel lowering (the attn-to-cpu "
                       "option parallel=false was given)");
    pipelineOptions.numThreads = *options.numThreads;
  }
  pipelineOptions.returnOnFailedCheck = true;
  if (!pipelineOptions.registerTileM.hasValue() &&
      !pipelineOptions.registerTileN.hasValue()) {
    RegisterBlock block = registerBlockForHost();
    pipelineOptions.registerTileM = block.rows;
    pipelineOptions.registerTileN = block.columns;
  }
  if (options.fused)
    pipelineOptions.fused = *options.fused;

  // The size relations of the primitives are checked before each call. They
  // are read from the decomposed entry, on a copy: the pipeline outlines
  // repeated layers before it decomposes them, which would hide the
  // primitives behind calls.
  MLIRContext *context = module.getContext();
  {
    OwningOpRef<ModuleOp> decomposed(module.clone());
    PassManager decompose(context);
    decompose.addPass(attn::createAttnDecompose());
    if (failed(decompose.run(*decomposed)))
      return makeError("lowering with attn-to-cpu failed (attn-decompose)");
    function->shapeChecks =
        ShapeChecks::derive(decomposed->lookupSymbol<func::FuncOp>(entry));
  }
  auto func = module.lookupSymbol<func::FuncOp>(entry);

  // Lower to the LLVM dialect, with a C interface for the entry.
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
  // The caller's arrays are inputs only: without this, bufferization may
  // write a result into an argument's buffer (an elementwise op in place).
  // The caches the function updates and returns are the exception (unless
  // turned off): a decode step writes its new rows into the caller's cache
  // instead of copying the whole cache.
  llvm::BitVector caches(func.getNumArguments());
  if (options.inPlaceCaches)
    caches = getCacheArguments(func);
  pipelineOptions.inPlaceResults = options.inPlaceCaches;
  for (unsigned index = 0; index < func.getNumArguments(); ++index) {
    func.setArgAttr(index, "bufferization.writable",
                    BoolAttr::get(context, caches.test(index)));
    function->writtenArguments.push_back(caches.test(index));
  }
  PassManager bufferize(context);
  buildAttnToCPUBufferizePipeline(bufferize, pipelineOptions);
  if (failed(bufferize.run(module)))
    return makeError("lowering with attn-to-cpu failed");
  // Which results are argument buffers: the rule by which
  // drop-equivalent-buffer-results removes them from the signature.
  function->resultArguments.assign(function->results.size(), std::nullopt);
  if (options.inPlaceCaches) {
    func = module.lookupSymbol<func::FuncOp>(entry);
    auto returnOp = dyn_cast_if_present<func::ReturnOp>(
        func && func.getBody().hasOneBlock()
            ? func.getBody().front().getTerminator()
            : nullptr);
    if (returnOp) {
      llvm::BitVector tied(returnOp.getNumOperands());
      for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
        while (auto cast = value.getDefiningOp<memref::CastOp>())
          value = cast.getSource();
        auto argument = dyn_cast<BlockArgument>(value);
        if (argument && argument.getOwner() == &func.getBody().front()) {
          function->resultArguments[index] = argument.getArgNumber();
          tied.set(index);
        }
      }
      // The entry (public, so drop-equivalent-buffer-results leaves it
      // alone) stops returning them too; the caller's buffers hold them.
      returnOp->eraseOperands(tied);
      if (failed(func.eraseResults(tied)))
        return makeError("cannot drop the in-place results of '" + entry + "'");
    }
  }
  PassManager pm(context);
  buildAttnToCPUBuffersToLLVMPipeline(pm, pipelineOptions);
  if (failed(pm.run(module)))
    return makeError("lowering with attn-to-cpu failed");
  // The JIT calls the entry through its C interface only. Internal, the
  // entry is inlined into that wrapper: the wrapper reads the fields of the
  // memref descriptors it is passed where they are used, instead of passing
  // every field as one argument of a call (a 40-layer model's entry takes
  // 2700 scalars, and LLVM's instruction selection of such a call and of
  // the callee's formal arguments took a tenth of the compile time).
  if (auto entryFunction = module.lookupSymbol<LLVM::LLVMFuncOp>(entry))
    entryFunction.setLinkage(LLVM::Linkage::Internal);

  // JIT-compile, optimizing for the host: without its target machine LLVM's
  // cost models see no vector registers and the loop vectorizer does nothing.
  static std::once_flag initTargets;
  std::call_once(initTargets, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder)
    return makeError("cannot describe the host CPU: " +
                     llvm::toString(machineBuilder.takeError()));
  auto targetMachine = machineBuilder->createTargetMachine();
  if (!targetMachine)
    return makeError("cannot create a target machine for the host: " +
                     llvm::toString(targetMachine.takeError()));
  // engineOptions.transformer refers to this function object.
  auto transformer = makeOptimizingTransformer(
      options.optLevel, /*sizeLevel=*/0, targetMachine->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  // The GDB and perf listeners keep a copy of every object and write a perf
  // jitdump file per compilation: opt-in, for profiling the kernels with
  // `perf record -k 1` and `perf inject --jit`.
  const char *profiling = std::getenv("ATTNFUSE_JIT_PROFILING");
  bool listeners = profiling && StringRef(profiling) != "0";
  engineOptions.enableGDBNotificationListener = listeners;
  engineOptions.enablePerfNotificationListener = listeners;
  // The parallel loops call the OpenMP runtime (__kmpc_fork_call, ...).
  static constexpr llvm::StringLiteral openmpRuntime = ATTNFUSE_OPENMP_RUNTIME;
  SmallVector<StringRef, 1> sharedLibraries;
  if (pipelineOptions.parallel) {
    std::string loadError;
    llvm::sys::DynamicLibrary runtime =
        llvm::sys::DynamicLibrary::getPermanentLibrary(openmpRuntime.data(),
                                                       &loadError);
    if (runtime.isValid()) {
      sharedLibraries.push_back(openmpRuntime);
      // This runtime's own entry points (another OpenMP runtime in the
      // process, PyTorch's, may export the same names).
      auto setBlocktime = reinterpret_cast<void (*)(int)>(
          runtime.getAddressOfSymbol("kmp_set_blocktime"));
      auto getBlocktime = reinterpret_cast<int (*)()>(
          runtime.getAddressOfSymbol("kmp_get_blocktime"));
      if (setBlocktime && getBlocktime) {
        // The process's default, read before any call has changed it.
        static const int defaultBlocktime = getBlocktime();
        function->setBlocktime = setBlocktime;
        function->blocktime = options.passiveWait ? 0 : defaultBlocktime;
      }
    } else
      return makeError("cannot load the OpenMP runtime " + openmpRuntime +
                       " that the parallel loops call (" + loadError +
                       "); install libomp or compile with the attn-to-cpu "
                       "option parallel=false");
  }
  engineOptions.sharedLibPaths = sharedLibraries;
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine)
    return makeError("JIT compilation failed: " +
                     llvm::toString(engine.takeError()));
  function->engine = std::move(*engine);
  // memref.copy between strided views calls the C runner utilities; the
  // allocation and check hooks are the ones of this file.
  function->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto add = [&](StringRef symbol, auto *address) {
      symbols[interner(symbol)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                   llvm::JITSymbolFlags::Exported};
    };
    add("memrefCopy", &memrefCopy);
    add("_mlir_memref_to_llvm_alloc", &attnfuseJitAlloc);
    add("_mlir_memref_to_llvm_aligned_alloc", &attnfuseJitAlignedAlloc);
    add("_mlir_memref_to_llvm_free", &attnfuseJitFree);
    add(kCheckFailedFunction, &attnfuseCheckFailed);
    add(kCheckPendingFunction, &attnfuseCheckPending);
    add(kCallStateFunction, &attnfuseCallState);
    add(kCheckFailedInFunction, &attnfuseCheckFailedIn);
    return symbols;
  });
  return std::move(function);
}

llvm::Error JitFunction::checkArguments(ArrayRef<TensorRef> args) const {
  if (args.size() != arguments.size())
    return makeError("'" + name + "' takes " + Twine(arguments.size()) +
                     " argument(s), got " + Twine(args.size()));
  for (auto [index, arg, spec] : llvm::enumerate(args, arguments)) {
    if (arg.elementType != spec.elementType)
      return makeError("argument #" + Twine(index) + " of '" + name + "' is " +
                       getElementTypeName(spec.elementType) + ", got " +
                       getElementTypeName(arg.elementType));
    bool shapeOk = arg.shape.size() == spec.shape.size();
    for (size_t i = 0; shapeOk && i < spec.shape.size(); ++i)
      shapeOk = arg.shape[i] >= 0 && (ShapedType::isDynamic(spec.shape[i]) ||
                                      spec.shape[i] == arg.shape[i]);
    if (!shapeOk)
      return makeError("argument #" + Twine(index) + " of '" + name +
                       "' needs shape " + formatShape(spec.shape) + ", got " +
                       formatShape(arg.shape));
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Memref descriptors: {allocated, aligned, offset, sizes[r], strides[r]}
//===----------------------------------------------------------------------===//

static size_t getDescriptorWords(size_t rank) { return 3 + 2 * rank; }

static void fillDescriptor(int64_t *words, const TensorRef &tensor) {
  size_t rank = tensor.shape.size();
  // A non-null pointer even for empty arrays.
  static char emptyStorage[16];
  void *ptr = tensor.data ? tensor.data : static_cast<void *>(emptyStorage);
  std::memcpy(&words[0], &ptr, sizeof(void *));
  std::memcpy(&words[1], &ptr, sizeof(void *));
  words[2] = 0;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    words[3 + i] = tensor.shape[i];
    words[3 + rank + i] = stride;
    stride *= tensor.shape[i];
  }
}

/// Copies a (possibly strided) result memref into a dense array.
static Tensor readDescriptor(const int64_t *words, const TensorSpec &spec) {
  size_t rank = spec.shape.size();
  Tensor tensor;
  tensor.elementType = spec.elementType;
  char *aligned;
  std::memcpy(&aligned, &words[1], sizeof(void *));
  int64_t offset = words[2];
  for (size_t i = 0; i < rank; ++i)
    tensor.shape.push_back(words[3 + i]);
  size_t elem = getElementByteSize(spec.elementType);
  int64_t count = tensor.getNumElements();
  tensor.data.resize(size_t(count) * elem);
  // Row-major results (the usual case) are one copy.
  bool rowMajor = true;
  for (int64_t i = int64_t(rank) - 1, expected = 1; i >= 0; --i) {
    if (tensor.shape[i] != 1 && words[3 + rank + i] != expected)
      rowMajor = false;
    expected *= tensor.shape[i];
  }
  if (rowMajor) {
    if (count > 0)
      std::memcpy(tensor.data.data(), aligned + offset * elem,
                  size_t(count) * elem);
    return tensor;
  }
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t linear = offset;
    for (size_t i = 0; i < rank; ++i)
      linear += index[i] * words[3 + rank + i];
    std::memcpy(tensor.data.data() + size_t(n) * elem, aligned + linear * elem,
                elem);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < tensor.shape[i])
        break;
      index[i] = 0;
    }
  }
  return tensor;
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

llvm::Expected<std::vector<Tensor>>
JitFunction::call(ArrayRef<TensorRef> args) {
  if (llvm::Error error = checkArguments(args))
    return std::move(error);
  // The sizes must agree before any compiled code runs.
  SmallVector<ArrayRef<int64_t>> shapes;
  SmallVector<size_t> argumentBytes, resultBytes;
  for (const TensorRef &arg : args) {
    shapes.push_back(arg.shape);
    argumentBytes.push_back(getElementByteSize(arg.elementType));
  }
  for (const TensorSpec &spec : results)
    resultBytes.push_back(getElementByteSize(spec.elementType));
  if (llvm::Error error =
          shapeChecks.check(name, shapes, argumentBytes, resultBytes))
    return std::move(error);
  // An argument written in place must not share memory with another one:
  // the other would change under the compiled code.
  auto byteRange = [&](unsigned index) {
    auto begin = reinterpret_cast<uintptr_t>(args[index].data);
    Tensor sizes;
    sizes.shape = args[index].shape;
    return std::make_pair(begin, begin + uintptr_t(sizes.getNumElements()) *
                                             argumentBytes[index]);
  };
  for (unsigned written = 0; written < args.size(); ++written) {
    if (!writtenArguments[written] || !args[written].data)
      continue;
    auto [begin, end] = byteRange(written);
    for (unsigned other = 0; other < args.size(); ++other) {
      if (other == written || !args[other].data)
        continue;
      auto [otherBegin, otherEnd] = byteRange(other);
      if (begin < otherEnd && otherBegin < end)
        return makeError("argument #" + Twine(written) + " of '" + name +
                         "' is updated in place and shares memory with "
                         "argument #" +
                         Twine(other) + "; pass separate arrays");
    }
  }
  std::vector<std::vector<int64_t>> argDescriptors;
  for (const TensorRef &arg : args) {
    argDescriptors.emplace_back(getDescriptorWords(arg.shape.size()));
    fillDescriptor(argDescriptors.back().data(), arg);
  }
  // Results that are arguments updated in place are not returned by the
  // compiled function.
  size_t resultWords = 0, returnedResults = 0;
  for (auto [index, spec] : llvm::enumerate(results)) {
    if (resultArguments[index])
      continue;
    resultWords += getDescriptorWords(spec.shape.size());
    ++returnedResults;
  }
  std::vector<int64_t> resultStorage(std::max<size_t>(resultWords, 1), 0);
  void *resultPtr = resultStorage.data();
  std::vector<void *> argPtrs;
  for (auto &descriptor : argDescriptors)
    argPtrs.push_back(descriptor.data());
  SmallVector<void *> packed;
  if (returnedResults)
    packed.push_back(&resultPtr);
  for (void *&ptr : argPtrs)
    packed.push_back(&ptr);

  auto function = engine->lookupPacked("_mlir_ciface_" + name);
  if (!function)
    return makeError("calling '" + name +
                     "' failed: " + llvm::toString(function.takeError()));

  CallState state;
  CallState *outer = currentCall;
  currentCall = &state;
  // The wait policy of the teams this thread forks.
  if (setBlocktime)
    setBlocktime(blocktime);
  (*function)(packed.data());
  currentCall = outer;
  // Frees what the call allocated and still holds (all of it after a failed
  // check; the result buffers otherwise, once copied).
  auto freeAll = [&] {
    for (void *ptr : state.live)
      LargeBlockCache::get().release(ptr);
    state.live.clear();
  };
  if (state.failedCheck) {
    freeAll();
    StringRef message = StringRef(*state.failedCheck).trim();
    return makeError("a run-time check of '" + name +
                     "' failed, nothing "
                     "after it ran: " +
                     message +
                     " (for example a cache position or block table entry "
                     "out of range)");
  }

  // The buffer deallocation pipeline hands the caller ownership of the
  // result buffers (allocated by the compiled code, cloned when they would
  // alias an argument or a constant): copy them out, then free them.
  std::vector<Tensor> outputs;
  size_t wordOffset = 0;
  for (auto [index, spec] : llvm::enumerate(results)) {
    if (std::optional<unsigned> argument = resultArguments[index]) {
      Tensor tensor;
      tensor.elementType = spec.elementType;
      tensor.shape = args[*argument].shape;
      tensor.argument = argument;
      outputs.push_back(std::move(tensor));
      continue;
    }
    const int64_t *words = resultStorage.data() + wordOffset;
    outputs.push_back(readDescriptor(words, spec));
    wordOffset += getDescriptorWords(spec.shape.size());
  }
  freeAll();
  return outputs;
}
