// libattnfuse_cudasim.so: the CUDA driver API subset the AttnFuse runtime (and
// simple host programs) use, implemented over the PTX interpreter. Kernels run
// synchronously inside cuLaunchKernel; streams and events are ordering no-ops.
// A cubin cannot be emulated (cuModuleLoadData answers
// CUDA_ERROR_NO_BINARY_FOR_GPU), so the runtime falls back to the PTX.
#include "sim.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

namespace cudasim {

uint64_t GlobalMemory::allocate(uint64_t size) {
  Allocation a;
  a.base = next;
  a.size = size;
  a.bytes.assign(size,
                 0xFF); // uninitialised device memory reads as NaN / all ones
  // Never reuse an address; leave a guard gap so that an overrun does not land
  // in a neighbour.
  next += (size + 0xFFFF) / 0x10000 * 0x10000 + 0x10000;
  uint64_t base = a.base;
  allocs.emplace(base, std::move(a));
  last = nullptr;
  return base;
}

bool GlobalMemory::release(uint64_t base) {
  last = nullptr;
  return allocs.erase(base) != 0;
}

const Allocation *GlobalMemory::find(uint64_t addr) const {
  auto it = allocs.upper_bound(addr);
  if (it == allocs.begin())
    return nullptr;
  --it;
  return &it->second;
}

uint8_t *GlobalMemory::translate(uint64_t addr, uint64_t size) {
  const Allocation *a = last;
  if (!a || addr < a->base || addr >= a->base + a->size)
    a = find(addr);
  if (!a || addr < a->base || addr + size > a->base + a->size)
    return nullptr;
  last = a;
  return const_cast<uint8_t *>(a->bytes.data()) + (addr - a->base);
}

std::string GlobalMemory::describe(uint64_t addr) const {
  std::ostringstream os;
  os << "0x" << std::hex << addr;
  const Allocation *a = find(addr);
  if (!a)
    os << " (below every allocation)";
  else if (addr >= a->base + a->size)
    os << std::dec << " (" << addr - (a->base + a->size)
       << " bytes past the end of allocation 0x" << std::hex << a->base
       << std::dec << " of " << a->size << " bytes)";
  else
    os << std::dec << " (offset " << addr - a->base << " in allocation 0x"
       << std::hex << a->base << std::dec << " of " << a->size << " bytes)";
  return os.str();
}

uint64_t GlobalMemory::liveBytes() const {
  uint64_t n = 0;
  for (auto &kv : allocs)
    n += kv.second.size;
  return n;
}

// ---------------------------------------------------------------- tensor maps

unsigned elemBytesOf(unsigned dt) {
  // CU_TENSOR_MAP_DATA_TYPE_*: UINT8, UINT16, UINT32, INT32, UINT64, INT64,
  // FLOAT16, FLOAT32, FLOAT64, BFLOAT16, FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ.
  static const unsigned sizes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return dt < 13 ? sizes[dt] : 0;
}

namespace {

struct Packed {
  uint64_t magic;
  uint64_t address;
  uint64_t dims[5];
  uint64_t strides[4]; // bytes, dims 1..4
  uint16_t box[5];
  uint8_t elementStrides[5];
  uint8_t dataType, rank, interleave, swizzle, l2, oobFill;
};
static_assert(sizeof(Packed) <= 128, "tensor map encoding fits 128 bytes");
} // namespace

std::string validateTensorMap(const TensorMap &m, uint64_t mapAddress) {
  std::ostringstream os;
  if (mapAddress % 64)
    return "tensorMap is not 64-byte aligned";
  if (!elemBytesOf(m.dataType))
    return "tensorDataType " + std::to_string(m.dataType) +
           " is not a CUtensorMapDataType";
  if (m.interleave > 2)
    return "interleave " + std::to_string(m.interleave) +
           " is not a CUtensorMapInterleave";
  if (m.rank < 1 || m.rank > 5 || (m.interleave && m.rank < 3))
    return "tensorRank " + std::to_string(m.rank) +
           " outside [1, 5] (or < 3 with interleave)";
  unsigned align = m.interleave == 2 ? 32 : 16;
  if (m.address % align)
    return "globalAddress is not " + std::to_string(align) + "-byte aligned";
  for (unsigned i = 0; i < m.rank; ++i)
    if (m.dims[i] == 0 || m.dims[i] > (1ull << 32))
      return "globalDim[" + std::to_string(i) +
             "] = " + std::to_string(m.dims[i]) + " outside [1, 2^32]";
  for (unsigned i = 1; i < m.rank; ++i) {
    uint64_t s = m.strides[i];
    if (s % align || s >= (1ull << 40))
      return "globalStrides[" + std::to_string(i - 1) +
             "] = " + std::to_string(s) + " is not a multiple of " +
             std::to_string(align) + " below 2^40";
  }
  for (unsigned i = 0; i < m.rank; ++i) {
    if (m.box[i] == 0 || m.box[i] > 256)
      return "boxDim[" + std::to_string(i) + "] = " + std::to_string(m.box[i]) +
             " outside [1, 256]";
    if (m.elementStrides[i] == 0 || m.elementStrides[i] > 8)
      return "elementStrides[" + std::to_string(i) +
             "] = " + std::to_string(m.elementStrides[i]) + " outside [1, 8]";
  }
  unsigned innerBytes = m.box[0] * m.elemBytes;
  if (m.interleave == 0 && innerBytes % 16)
    return "boxDim[0] * element size = " + std::to_string(innerBytes) +
           " bytes is not a multiple of 16";
  if (m.swizzle > 3)
    return "swizzle " + std::to_string(m.swizzle) +
           " is not a CUtensorMapSwizzle";
  static const unsigned span[] = {0, 32, 64, 128};
  if (m.interleave == 0 && m.swizzle && innerBytes > span[m.swizzle])
    return "boxDim[0] * element size = " + std::to_string(innerBytes) +
           " bytes exceeds the swizzle span of " +
           std::to_string(span[m.swizzle]) + " bytes";
  if (m.interleave == 2 && m.swizzle != 1 && m.swizzle != 0)
    return "interleave 32B needs swizzle 32B";
  if (m.l2 > 3)
    return "l2Promotion " + std::to_string(m.l2) +
           " is not a CUtensorMapL2promotion";
  if (m.oobFill > 1)
    return "oobFill " + std::to_string(m.oobFill) +
           " is not a CUtensorMapFloatOOBfill";
  bool isFloat = m.dataType >= 6;
  if (m.oobFill == 1 && !isFloat)
    return "oobFill NAN_REQUEST_ZERO_FMA needs a floating-point data type";
  return "";
}

void encodeTensorMap(const TensorMap &m, void *out) {
  Packed p{};
  p.magic = kTensorMapMagic;
  p.address = m.address;
  for (unsigned i = 0; i < 5; ++i) {
    p.dims[i] = m.dims[i];
    p.box[i] = uint16_t(m.box[i]);
    p.elementStrides[i] = uint8_t(m.elementStrides[i]);
    if (i >= 1)
      p.strides[i - 1] = m.strides[i];
  }
  p.dataType = uint8_t(m.dataType);
  p.rank = uint8_t(m.rank);
  p.interleave = uint8_t(m.interleave);
  p.swizzle = uint8_t(m.swizzle);
  p.l2 = uint8_t(m.l2);
  p.oobFill = uint8_t(m.oobFill);
  std::memset(out, 0, 128);
  std::memcpy(out, &p, sizeof p);
}

bool decodeTensorMap(const void *in, TensorMap &m) {
  Packed p;
  std::memcpy(&p, in, sizeof p);
  if (p.magic != kTensorMapMagic)
    return false;
  m.address = p.address;
  m.dataType = p.dataType;
  m.elemBytes = elemBytesOf(p.dataType);
  m.rank = p.rank;
  for (unsigned i = 0; i < 5; ++i) {
    m.dims[i] = p.dims[i];
    m.box[i] = p.box[i];
    m.elementStrides[i] = p.elementStrides[i];
    m.strides[i] = i == 0 ? m.elemBytes : p.strides[i - 1];
  }
  m.interleave = p.interleave;
  m.swizzle = p.swizzle;
  m.l2 = p.l2;
  m.oobFill = p.oobFill;
  return true;
}

} // namespace cudasim

// ==================================================================== driver
// API

using namespace cudasim;

namespace {

constexpr int CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1,
              CUDA_ERROR_OUT_OF_MEMORY = 2, CUDA_ERROR_NOT_INITIALIZED = 3,
              CUDA_ERROR_INVALID_DEVICE = 101, CUDA_ERROR_INVALID_IMAGE = 200,
              CUDA_ERROR_INVALID_CONTEXT = 201,
              CUDA_ERROR_NO_BINARY_FOR_GPU = 209, CUDA_ERROR_INVALID_PTX = 218,
              CUDA_ERROR_INVALID_HANDLE = 400, CUDA_ERROR_NOT_FOUND = 500,
              CUDA_ERROR_ILLEGAL_ADDRESS = 700,
              CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
              CUDA_ERROR_LAUNCH_FAILED = 719,
              CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
              CUDA_ERROR_NOT_SUPPORTED = 801;

struct FunctionHandle {
  const Kernel *kernel;
  const Module *module;
  int maxDynamicSmem = int(kMaxSmemDefault);
};

struct ModuleHandle {
  Module module;
  std::vector<std::unique_ptr<FunctionHandle>> functions;
};

struct State {
  std::mutex mu;
  bool initialized = false;
  GlobalMemory mem;
  Stats stats;
  int lastCode = 0;
  std::string lastDetail;
  bool verbose = std::getenv("CUDASIM_VERBOSE") != nullptr;
} state;

int context = 0x5151; // the primary context's address is the handle

int failWith(int code, const std::string &detail) {
  state.lastCode = code;
  state.lastDetail = detail;
  if (state.verbose || code == CUDA_ERROR_LAUNCH_FAILED ||
      code == CUDA_ERROR_ILLEGAL_ADDRESS)
    std::fprintf(stderr, "cudasim: %s\n", detail.c_str());
  return code;
}

const char *errorName(int c) {
  switch (c) {
  case 0:
    return "CUDA_SUCCESS";
  case 1:
    return "CUDA_ERROR_INVALID_VALUE";
  case 2:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 101:
    return "CUDA_ERROR_INVALID_DEVICE";
  case 200:
    return "CUDA_ERROR_INVALID_IMAGE";
  case 201:
    return "CUDA_ERROR_INVALID_CONTEXT";
  case 209:
    return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 218:
    return "CUDA_ERROR_INVALID_PTX";
  case 400:
    return "CUDA_ERROR_INVALID_HANDLE";
  case 500:
    return "CUDA_ERROR_NOT_FOUND";
  case 700:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701:
    return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case 717:
    return "CUDA_ERROR_INVALID_ADDRESS_SPACE";
  case 719:
    return "CUDA_ERROR_LAUNCH_FAILED";
  case 801:
    return "CUDA_ERROR_NOT_SUPPORTED";
  default:
    return nullptr;
  }
}

const char *errorText(int c) {
  switch (c) {
  case 0:
    return "no error";
  case 1:
    return "invalid argument";
  case 2:
    return "out of memory";
  case 3:
    return "initialization error";
  case 101:
    return "invalid device ordinal";
  case 200:
    return "device kernel image is invalid";
  case 201:
    return "invalid device context";
  case 209:
    return "no kernel image is available for execution on the device";
  case 218:
    return "a PTX JIT compilation failed";
  case 400:
    return "invalid resource handle";
  case 500:
    return "named symbol not found";
  case 700:
    return "an illegal memory access was encountered";
  case 701:
    return "too many resources requested for launch";
  case 717:
    return "operation not supported on global/shared address space";
  case 719:
    return "unspecified launch failure";
  case 801:
    return "operation not supported";
  default:
    return nullptr;
  }
}

int launch(FunctionHandle *f, unsigned gx, unsigned gy, unsigned gz,
           unsigned bx, unsigned by, unsigned bz, unsigned smem, void **params,
           void **extra) {
  if (!f)
    return failWith(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel: null function");
  if (extra)
    return failWith(
        CUDA_ERROR_NOT_SUPPORTED,
        "cuLaunchKernel: the 'extra' argument form is not supported");
  const Kernel &k = *f->kernel;
  unsigned threads = bx * by * bz;
  if (!gx || !gy || !gz || !bx || !by || !bz || threads > 1024 || bz > 64 ||
      gy > 65535 || gz > 65535)
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuLaunchKernel: invalid grid or block dimensions");
  if (k.maxntid[0] && threads > k.maxntid[0] * std::max(1u, k.maxntid[1]) *
                                    std::max(1u, k.maxntid[2]))
    return failWith(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                    "cuLaunchKernel: " + std::to_string(threads) +
                        " threads exceed the kernel's .maxntid");
  if (smem > unsigned(f->maxDynamicSmem))
    return failWith(
        CUDA_ERROR_INVALID_VALUE,
        "cuLaunchKernel: " + std::to_string(smem) +
            " bytes of dynamic shared memory exceed the function's limit of " +
            std::to_string(f->maxDynamicSmem) +
            " (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (smem + k.staticSmem > kMaxSmemOptin)
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuLaunchKernel: shared memory above 227 KiB");
  std::vector<uint8_t> buf(std::max(1u, k.paramBytes), 0);
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!params || !params[i])
      return failWith(CUDA_ERROR_INVALID_VALUE,
                      "cuLaunchKernel: missing kernel parameter " +
                          std::to_string(i));
    std::memcpy(&buf[k.params[i].offset], params[i], k.params[i].size);
  }
  LaunchConfig cfg{
      {gx, gy, gz}, {bx, by, bz}, smem, unsigned(f->maxDynamicSmem)};
  bool addressError = false;
  uint64_t before = state.stats.instructions;
  double secBefore = state.stats.seconds;
  std::string err = launchKernel(*f->module, k, cfg, buf, state.mem,
                                 addressError, state.stats);
  if (state.verbose)
    std::fprintf(stderr,
                 "cudasim: %s grid (%u,%u,%u) block (%u,%u,%u): %llu "
                 "thread-instructions in %.3f s\n",
                 k.name.c_str(), gx, gy, gz, bx, by, bz,
                 (unsigned long long)(state.stats.instructions - before),
                 state.stats.seconds - secBefore);
  if (!err.empty())
    return failWith(addressError ? CUDA_ERROR_ILLEGAL_ADDRESS
                                 : CUDA_ERROR_LAUNCH_FAILED,
                    err);
  return CUDA_SUCCESS;
}

FunctionHandle *fn(void *f) { return static_cast<FunctionHandle *>(f); }

} // namespace

#define CUDASIM_API extern "C" __attribute__((visibility("default")))
#define LOCK std::lock_guard<std::mutex> lock(state.mu)
#define NEED_INIT                                                              \
  if (!state.initialized)                                                      \
  return failWith(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called")

CUDASIM_API int cuInit(unsigned flags) {
  LOCK;
  if (flags)
    return failWith(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0");
  state.initialized = true;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDriverGetVersion(int *v) {
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDeviceGetCount(int *n) {
  LOCK;
  NEED_INIT;
  if (!n)
    return CUDA_ERROR_INVALID_VALUE;
  *n = 1;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDeviceGet(int *dev, int ordinal) {
  LOCK;
  NEED_INIT;
  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0)
    return failWith(CUDA_ERROR_INVALID_DEVICE,
                    "the emulator has one device (ordinal 0)");
  *dev = 0;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDeviceGetName(char *name, int len, int dev) {
  if (!name || len <= 0 || dev != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, size_t(len),
                "AttnFuse cudasim (H100-like sm_90a emulator)");
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  if (!bytes || dev != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *bytes = size_t(80) << 30;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDeviceGetAttribute(int *v, int attr, int dev) {
  LOCK;
  NEED_INIT;
  if (!v || dev != 0)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
  case 1:
    *v = 1024;
    break; // MAX_THREADS_PER_BLOCK
  case 2:
  case 3:
    *v = 1024;
    break; // MAX_BLOCK_DIM_X/Y
  case 4:
    *v = 64;
    break; // MAX_BLOCK_DIM_Z
  case 5:
    *v = 2147483647;
    break; // MAX_GRID_DIM_X
  case 6:
  case 7:
    *v = 65535;
    break; // MAX_GRID_DIM_Y/Z
  case 8:
    *v = int(kMaxSmemDefault);
    break; // MAX_SHARED_MEMORY_PER_BLOCK
  case 9:
    *v = 65536;
    break; // TOTAL_CONSTANT_MEMORY
  case 10:
    *v = 32;
    break; // WARP_SIZE
  case 12:
    *v = 65536;
    break; // MAX_REGISTERS_PER_BLOCK
  case 13:
    *v = 1980000;
    break; // CLOCK_RATE (kHz)
  case 16:
    *v = kNumSMs;
    break; // MULTIPROCESSOR_COUNT
  case 36:
    *v = 2619000;
    break; // MEMORY_CLOCK_RATE
  case 37:
    *v = 5120;
    break; // GLOBAL_MEMORY_BUS_WIDTH
  case 38:
    *v = 50 * 1024 * 1024;
    break; // L2_CACHE_SIZE
  case 39:
    *v = 2048;
    break; // MAX_THREADS_PER_MULTIPROCESSOR
  case 41:
    *v = 1;
    break; // UNIFIED_ADDRESSING
  case 75:
    *v = 9;
    break; // COMPUTE_CAPABILITY_MAJOR
  case 76:
    *v = 0;
    break; // COMPUTE_CAPABILITY_MINOR
  case 81:
    *v = int(kSmemPerSM);
    break; // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
  case 82:
    *v = int(kRegsPerSM);
    break; // MAX_REGISTERS_PER_MULTIPROCESSOR
  case 97:
    *v = int(kMaxSmemOptin);
    break; // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  case 106:
    *v = 32;
    break; // MAX_BLOCKS_PER_MULTIPROCESSOR
  case 111:
    *v = 1024;
    break; // RESERVED_SHARED_MEMORY_PER_BLOCK
  case 120:
    *v = 1;
    break; // CLUSTER_LAUNCH
  default:
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuDeviceGetAttribute: attribute " + std::to_string(attr) +
                        " is not modelled by the emulator");
  }
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  LOCK;
  NEED_INIT;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return failWith(CUDA_ERROR_INVALID_DEVICE, "invalid device");
  *ctx = &context;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuDevicePrimaryCtxRelease_v2(int dev) {
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUDASIM_API int cuCtxSetCurrent(void *ctx) {
  return (ctx == nullptr || ctx == &context) ? CUDA_SUCCESS
                                             : CUDA_ERROR_INVALID_CONTEXT;
}
CUDASIM_API int cuCtxGetCurrent(void **ctx) {
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  *ctx = &context;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuCtxCreate_v2(void **ctx, unsigned, int dev) {
  if (!ctx || dev != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *ctx = &context;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuCtxDestroy_v2(void *) { return CUDA_SUCCESS; }
CUDASIM_API int cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUDASIM_API int cuModuleLoadData(void **module, const void *image) {
  LOCK;
  NEED_INIT;
  if (!module || !image)
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuModuleLoadData: null argument");
  const char *text = static_cast<const char *>(image);
  if (std::memcmp(text,
                  "\x7f"
                  "ELF",
                  4) == 0)
    return failWith(CUDA_ERROR_NO_BINARY_FOR_GPU,
                    "the emulator cannot run a cubin; load the PTX instead");
  auto m = std::make_unique<ModuleHandle>();
  std::string error;
  if (!parseModule(text, m->module, error))
    return failWith(CUDA_ERROR_INVALID_PTX,
                    "PTX rejected by the emulator: " + error);
  if (m->module.target.find("sm_90") == std::string::npos)
    return failWith(CUDA_ERROR_INVALID_PTX,
                    "PTX .target " + m->module.target + " is not sm_90/sm_90a");
  for (auto &k : m->module.kernels) {
    auto f = std::make_unique<FunctionHandle>();
    f->kernel = k.get();
    f->module = &m->module;
    m->functions.push_back(std::move(f));
  }
  *module = m.release();
  return CUDA_SUCCESS;
}
CUDASIM_API int cuModuleLoadDataEx(void **module, const void *image, unsigned,
                                   void *, void **) {
  return cuModuleLoadData(module, image);
}
CUDASIM_API int cuModuleUnload(void *module) {
  LOCK;
  delete static_cast<ModuleHandle *>(module);
  return CUDA_SUCCESS;
}
CUDASIM_API int cuModuleGetFunction(void **f, void *module, const char *name) {
  LOCK;
  if (!f || !module || !name)
    return CUDA_ERROR_INVALID_VALUE;
  auto *m = static_cast<ModuleHandle *>(module);
  for (auto &h : m->functions)
    if (h->kernel->name == name) {
      *f = h.get();
      return CUDA_SUCCESS;
    }
  return failWith(CUDA_ERROR_NOT_FOUND,
                  std::string("no kernel named ") + name + " in the module");
}
CUDASIM_API int cuFuncSetAttribute(void *f, int attr, int value) {
  LOCK;
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (attr == 8) { // MAX_DYNAMIC_SHARED_SIZE_BYTES
    if (value < 0 ||
        unsigned(value) + fn(f)->kernel->staticSmem > kMaxSmemOptin)
      return failWith(CUDA_ERROR_INVALID_VALUE,
                      "cuFuncSetAttribute: " + std::to_string(value) +
                          " bytes of dynamic shared memory exceed the 227 KiB "
                          "opt-in limit");
    fn(f)->maxDynamicSmem = value;
    return CUDA_SUCCESS;
  }
  if (attr == 9 || attr == 10 || attr == 11 || attr == 12 || attr == 13)
    return CUDA_SUCCESS; // carveout, cluster attributes: accepted, not modelled
  return failWith(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: attribute " +
                                                std::to_string(attr) +
                                                " not modelled");
}
CUDASIM_API int cuFuncGetAttribute(int *v, int attr, void *f) {
  LOCK;
  if (!v || !f)
    return CUDA_ERROR_INVALID_VALUE;
  const Kernel &k = *fn(f)->kernel;
  switch (attr) {
  case 0:
    *v = k.maxntid[0] ? int(k.maxntid[0] * std::max(1u, k.maxntid[1]) *
                            std::max(1u, k.maxntid[2]))
                      : 1024;
    break;
  case 1:
    *v = int(k.staticSmem);
    break;
  case 2:
  case 3:
    *v = 0;
    break;
  case 4:
    *v = k.maxnreg ? int(k.maxnreg) : 0;
    break; // unknown without ptxas: 0
  case 5:
    *v = 80;
    break;
  case 6:
    *v = 90;
    break;
  case 8:
    *v = fn(f)->maxDynamicSmem;
    break;
  default:
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuFuncGetAttribute: attribute not modelled");
  }
  return CUDA_SUCCESS;
}

CUDASIM_API int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz,
                               unsigned smem, void *, void **params,
                               void **extra) {
  LOCK;
  NEED_INIT;
  return launch(fn(f), gx, gy, gz, bx, by, bz, smem, params, extra);
}

struct CUlaunchConfigSim {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
      sharedMemBytes;
  void *hStream;
  void *attrs;
  unsigned numAttrs;
};
CUDASIM_API int cuLaunchKernelEx(const CUlaunchConfigSim *c, void *f,
                                 void **params, void **extra) {
  LOCK;
  NEED_INIT;
  if (!c)
    return CUDA_ERROR_INVALID_VALUE;
  if (c->numAttrs)
    return failWith(
        CUDA_ERROR_NOT_SUPPORTED,
        "cuLaunchKernelEx: launch attributes (clusters, ...) are not modelled");
  return launch(fn(f), c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                c->blockDimY, c->blockDimZ, c->sharedMemBytes, params, extra);
}

CUDASIM_API int
cuTensorMapEncodeTiled(void *map, int dataType, unsigned rank, void *address,
                       const unsigned long long *dims,
                       const unsigned long long *strides, const unsigned *box,
                       const unsigned *elementStrides, int interleave,
                       int swizzle, int l2, int oob) {
  if (!map || !dims || !box || !elementStrides || (rank > 1 && !strides))
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuTensorMapEncodeTiled: null argument");
  TensorMap m;
  m.dataType = unsigned(dataType);
  m.elemBytes = dataType >= 0 ? elemBytesOf(unsigned(dataType)) : 0;
  m.rank = rank;
  m.address = reinterpret_cast<uintptr_t>(address);
  for (unsigned i = 0; i < rank && i < 5; ++i) {
    m.dims[i] = dims[i];
    m.box[i] = box[i];
    m.elementStrides[i] = elementStrides[i];
    m.strides[i] = i == 0 ? m.elemBytes : strides[i - 1];
  }
  m.interleave = unsigned(interleave);
  m.swizzle = unsigned(swizzle);
  m.l2 = unsigned(l2);
  m.oobFill = unsigned(oob);
  std::string why = validateTensorMap(m, reinterpret_cast<uintptr_t>(map));
  if (!why.empty())
    return failWith(CUDA_ERROR_INVALID_VALUE, "cuTensorMapEncodeTiled: " + why);
  encodeTensorMap(m, map);
  return CUDA_SUCCESS;
}

CUDASIM_API int cuGetErrorName(int code, const char **s) {
  if (!s)
    return CUDA_ERROR_INVALID_VALUE;
  *s = errorName(code);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUDASIM_API int cuGetErrorString(int code, const char **s) {
  if (!s)
    return CUDA_ERROR_INVALID_VALUE;
  const char *base = errorText(code);
  if (!base) {
    *s = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The emulator's own diagnostic for the most recent failure with this code.
  static thread_local std::string text;
  if (code == state.lastCode && !state.lastDetail.empty()) {
    text = std::string(base) + " [cudasim: " + state.lastDetail + "]";
    *s = text.c_str();
  } else {
    *s = base;
  }
  return CUDA_SUCCESS;
}

// Memory.
CUDASIM_API int cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
  LOCK;
  NEED_INIT;
  if (!p || bytes == 0)
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuMemAlloc: zero bytes or null pointer");
  if (state.mem.liveBytes() + bytes > (size_t(16) << 30))
    return failWith(CUDA_ERROR_OUT_OF_MEMORY,
                    "cuMemAlloc: the emulator caps device memory at 16 GiB");
  *p = state.mem.allocate(bytes);
  return CUDA_SUCCESS;
}
CUDASIM_API int cuMemFree_v2(unsigned long long p) {
  LOCK;
  if (p == 0)
    return CUDA_SUCCESS;
  if (!state.mem.release(p))
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuMemFree: not the start of a live allocation");
  return CUDA_SUCCESS;
}
CUDASIM_API int cuMemGetInfo_v2(size_t *freeBytes, size_t *total) {
  LOCK;
  if (freeBytes)
    *freeBytes = (size_t(16) << 30) - state.mem.liveBytes();
  if (total)
    *total = size_t(16) << 30;
  return CUDA_SUCCESS;
}
static int copyCheck(uint64_t dev, size_t bytes, uint8_t *&p,
                     const char *what) {
  p = state.mem.translate(dev, bytes);
  if (!p && bytes)
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    std::string(what) + ": " + std::to_string(bytes) +
                        " bytes at " + state.mem.describe(dev) +
                        " are not inside one allocation");
  return CUDA_SUCCESS;
}
CUDASIM_API int cuMemcpyHtoD_v2(unsigned long long dst, const void *src,
                                size_t bytes) {
  LOCK;
  uint8_t *p;
  if (int r = copyCheck(dst, bytes, p, "cuMemcpyHtoD"))
    return r;
  if (bytes)
    std::memcpy(p, src, bytes);
  return CUDA_SUCCESS;
}
CUDASIM_API int cuMemcpyDtoH_v2(void *dst, unsigned long long src,
                                size_t bytes) {
  LOCK;
  uint8_t *p;
  if (int r = copyCheck(src, bytes, p, "cuMemcpyDtoH"))
    return r;
  if (bytes)
    std::memcpy(dst, p, bytes);
  return CUDA_SUCCESS;
}
CUDASIM_API int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src,
                                size_t bytes) {
  LOCK;
  uint8_t *d, *s;
  if (int r = copyCheck(dst, bytes, d, "cuMemcpyDtoD"))
    return r;
  if (int r = copyCheck(src, bytes, s, "cuMemcpyDtoD"))
    return r;
  if (bytes)
    std::memmove(d, s, bytes);
  return CUDA_SUCCESS;
}
CUDASIM_API int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src,
                                     size_t bytes, void *) {
  return cuMemcpyHtoD_v2(dst, src, bytes);
}
CUDASIM_API int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src,
                                     size_t bytes, void *) {
  return cuMemcpyDtoH_v2(dst, src, bytes);
}
CUDASIM_API int cuMemcpyDtoDAsync_v2(unsigned long long dst,
                                     unsigned long long src, size_t bytes,
                                     void *) {
  return cuMemcpyDtoD_v2(dst, src, bytes);
}
template <typename T>
static int memsetN(unsigned long long dst, T v, size_t n, const char *what) {
  LOCK;
  uint8_t *p;
  if (int r = copyCheck(dst, n * sizeof(T), p, what))
    return r;
  for (size_t i = 0; i < n; ++i)
    std::memcpy(p + i * sizeof(T), &v, sizeof(T));
  return CUDA_SUCCESS;
}
CUDASIM_API int cuMemsetD8_v2(unsigned long long d, unsigned char v, size_t n) {
  return memsetN(d, v, n, "cuMemsetD8");
}
CUDASIM_API int cuMemsetD16_v2(unsigned long long d, unsigned short v,
                               size_t n) {
  return memsetN(d, v, n, "cuMemsetD16");
}
CUDASIM_API int cuMemsetD32_v2(unsigned long long d, unsigned v, size_t n) {
  return memsetN(d, v, n, "cuMemsetD32");
}
CUDASIM_API int cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n,
                                void *) {
  return memsetN(d, v, n, "cuMemsetD8Async");
}
CUDASIM_API int cuMemsetD32Async(unsigned long long d, unsigned v, size_t n,
                                 void *) {
  return memsetN(d, v, n, "cuMemsetD32Async");
}

// Streams and events: everything already completed when the call returned.
static int streamTag = 0;
CUDASIM_API int cuStreamCreate(void **s, unsigned) {
  if (!s)
    return CUDA_ERROR_INVALID_VALUE;
  *s = &streamTag;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuStreamDestroy_v2(void *) { return CUDA_SUCCESS; }
CUDASIM_API int cuStreamSynchronize(void *) { return CUDA_SUCCESS; }
CUDASIM_API int cuStreamQuery(void *) { return CUDA_SUCCESS; }
struct SimEvent {
  double t = 0;
};
static double nowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
CUDASIM_API int cuEventCreate(void **e, unsigned) {
  if (!e)
    return CUDA_ERROR_INVALID_VALUE;
  *e = new SimEvent;
  return CUDA_SUCCESS;
}
CUDASIM_API int cuEventDestroy_v2(void *e) {
  delete static_cast<SimEvent *>(e);
  return CUDA_SUCCESS;
}
CUDASIM_API int cuEventRecord(void *e, void *) {
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  static_cast<SimEvent *>(e)->t = nowSeconds();
  return CUDA_SUCCESS;
}
CUDASIM_API int cuEventSynchronize(void *) { return CUDA_SUCCESS; }
CUDASIM_API int cuEventQuery(void *) { return CUDA_SUCCESS; }
// Host wall time of the emulation between the events (not a GPU time).
CUDASIM_API int cuEventElapsedTime(float *ms, void *a, void *b) {
  if (!ms || !a || !b)
    return CUDA_ERROR_INVALID_VALUE;
  *ms = float((static_cast<SimEvent *>(b)->t - static_cast<SimEvent *>(a)->t) *
              1e3);
  return CUDA_SUCCESS;
}

// Emulator-only queries: thread-instructions executed and seconds spent in
// kernels.
CUDASIM_API void cudasimStats(unsigned long long *instructions,
                              double *seconds) {
  LOCK;
  if (instructions)
    *instructions = state.stats.instructions;
  if (seconds)
    *seconds = state.stats.seconds;
}
CUDASIM_API const char *cudasimLastError(void) {
  return state.lastDetail.c_str();
}
