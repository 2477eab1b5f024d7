// Driver half of the runtime: libcuda.so.1 through dlopen, module loading, TMA encoding, launch.
// No CUDA header is needed: the few driver types are declared here with their cuda.h ABI.
#include "internal.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

namespace afr {
namespace cu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
// cuda.h (CUDA 13) aligns the host-side struct to 128 bytes (CUDA 12: 64); use 128.
struct alignas(128) CUtensorMap {
  unsigned long long opaque[16];
};
static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap is 128 bytes");
static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "cuuint64_t");

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

struct Api {
  void *lib = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **) = nullptr;
  CUresult (*cuTensorMapEncodeTiled)(void * /* CUtensorMap* */, int, unsigned, void *,
                                     const unsigned long long *, const unsigned long long *,
                                     const unsigned *, const unsigned *, int, int, int,
                                     int) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
};

} // namespace cu

namespace {

std::mutex driverMutex;
// The driver library: ATTNFUSE_CUDA_DRIVER names another one (e.g. the emulator,
// libattnfuse_cudasim.so), read when the driver is first needed; libcuda.so.1 otherwise.
std::string driverLibrary;
bool driverLibraryForced = false; // setDriverLibraryForTesting
cu::Api *loadedApi = nullptr;
bool initialized = false; // cuInit(0) succeeded

// Returns the API or sets the error (AFR_ERR_NO_DRIVER) and returns nullptr.
cu::Api *api() {
  std::lock_guard<std::mutex> lock(driverMutex);
  if (loadedApi)
    return loadedApi;
  bool fromEnvironment = false;
  if (!driverLibraryForced) {
    const char *env = std::getenv("ATTNFUSE_CUDA_DRIVER");
    fromEnvironment = env && *env;
    driverLibrary = fromEnvironment ? env : "libcuda.so.1";
  }
  void *lib = dlopen(driverLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    setError(AFR_ERR_NO_DRIVER,
             "no CUDA driver (" + driverLibrary + " not found" +
                 (fromEnvironment && why ? std::string(", from ATTNFUSE_CUDA_DRIVER: ") + why
                                         : std::string()) +
                 ")");
    return nullptr;
  }
  auto *a = new cu::Api;
  a->lib = lib;
  std::string missing;
  auto sym = [&](auto &fn, const char *name) {
    void *p = dlsym(lib, name);
    if (!p && missing.empty())
      missing = name;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  sym(a->cuInit, "cuInit");
  sym(a->cuDeviceGet, "cuDeviceGet");
  sym(a->cuDeviceGetAttribute, "cuDeviceGetAttribute");
  sym(a->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  sym(a->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  sym(a->cuCtxSetCurrent, "cuCtxSetCurrent");
  sym(a->cuModuleLoadData, "cuModuleLoadData");
  sym(a->cuModuleUnload, "cuModuleUnload");
  sym(a->cuModuleGetFunction, "cuModuleGetFunction");
  sym(a->cuFuncSetAttribute, "cuFuncSetAttribute");
  sym(a->cuLaunchKernel, "cuLaunchKernel");
  sym(a->cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  sym(a->cuGetErrorString, "cuGetErrorString");
  sym(a->cuGetErrorName, "cuGetErrorName");
  sym(a->cuStreamSynchronize, "cuStreamSynchronize");
  sym(a->cuMemAlloc, "cuMemAlloc_v2");
  sym(a->cuMemFree, "cuMemFree_v2");
  sym(a->cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  sym(a->cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  if (!missing.empty()) {
    dlclose(lib);
    delete a;
    setError(AFR_ERR_NO_DRIVER, "CUDA driver " + driverLibrary + " has no entry point " +
                                    missing + " (driver too old for sm_90a TMA?)");
    return nullptr;
  }
  loadedApi = a;
  return a;
}

std::string cuErrorText(cu::Api *a, cu::CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (a->cuGetErrorName(r, &name) != cu::CUDA_SUCCESS || !name)
    name = "CUDA_ERROR_UNKNOWN";
  if (a->cuGetErrorString(r, &text) != cu::CUDA_SUCCESS || !text)
    text = "unknown error";
  return std::string(name) + " (" + std::to_string(r) + "): " + text;
}

afr_status check(cu::Api *a, cu::CUresult r, const std::string &what) {
  if (r == cu::CUDA_SUCCESS)
    return AFR_OK;
  return setError(AFR_ERR_CUDA, what + " failed: " + cuErrorText(a, r));
}

afr_status initDriver(cu::Api *&a) {
  a = api();
  if (!a)
    return AFR_ERR_NO_DRIVER;
  std::lock_guard<std::mutex> lock(driverMutex);
  if (!initialized) {
    if (afr_status s = check(a, a->cuInit(0), "cuInit"))
      return s;
    initialized = true;
  }
  return AFR_OK;
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

} // namespace

void setDriverLibraryForTesting(const std::string &name) {
  std::lock_guard<std::mutex> lock(driverMutex);
  if (loadedApi) {
    dlclose(loadedApi->lib);
    delete loadedApi;
    loadedApi = nullptr;
  }
  initialized = false;
  driverLibrary = name;
  driverLibraryForced = true;
}

} // namespace afr

using namespace afr;

struct afr_context {
  cu::Api *api = nullptr;
  cu::CUdevice device = 0;
  cu::CUcontext ctx = nullptr;
};

struct afr_kernel {
  afr_context *context = nullptr;
  const afr_manifest *manifest = nullptr;
  int index = 0;
  cu::CUmodule module = nullptr;
  cu::CUfunction function = nullptr;
  std::string loadedFrom;
};

extern "C" {

int afr_driver_available(void) { return api() != nullptr ? 1 : 0; }

afr_status afr_context_create(int device_ordinal, afr_context **out) {
  if (!out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_context_create: null argument");
  *out = nullptr;
  cu::Api *a;
  if (afr_status s = initDriver(a))
    return s;
  auto *c = new afr_context;
  c->api = a;
  afr_status s = check(a, a->cuDeviceGet(&c->device, device_ordinal),
                       "cuDeviceGet(" + std::to_string(device_ordinal) + ")");
  if (!s)
    s = check(a, a->cuDevicePrimaryCtxRetain(&c->ctx, c->device), "cuDevicePrimaryCtxRetain");
  if (s) {
    delete c;
    return s;
  }
  if ((s = check(a, a->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent"))) {
    a->cuDevicePrimaryCtxRelease(c->device);
    delete c;
    return s;
  }
  *out = c;
  return ok();
}

void afr_context_destroy(afr_context *c) {
  if (!c)
    return;
  c->api->cuDevicePrimaryCtxRelease(c->device);
  delete c;
}

afr_status afr_context_make_current(afr_context *c) {
  if (!c)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_context_make_current: null context");
  if (afr_status s = check(c->api, c->api->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent"))
    return s;
  return ok();
}

afr_status afr_context_compute_capability(afr_context *c, int *cc) {
  if (!c || !cc)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_context_compute_capability: null argument");
  int major = 0, minor = 0;
  if (afr_status s = check(c->api,
                           c->api->cuDeviceGetAttribute(
                               &major, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               c->device),
                           "cuDeviceGetAttribute"))
    return s;
  if (afr_status s = check(c->api,
                           c->api->cuDeviceGetAttribute(
                               &minor, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               c->device),
                           "cuDeviceGetAttribute"))
    return s;
  *cc = major * 10 + minor;
  return ok();
}

afr_status afr_kernel_load(afr_context *c, const afr_manifest *m, int index, afr_kernel **out) {
  if (!c || !m || !out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_kernel_load: null argument");
  *out = nullptr;
  if (index < 0 || index >= static_cast<int>(m->m.kernels.size()))
    return setError(AFR_ERR_INVALID_ARGUMENT,
                    "kernel index " + std::to_string(index) + " out of range");
  const KernelSpec &k = m->m.kernels[index];
  cu::Api *a = c->api;
  if (afr_status s = check(a, a->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent"))
    return s;
  std::string dir = m->m.baseDir.empty() ? "" : m->m.baseDir + "/";
  cu::CUmodule module = nullptr;
  std::string loadedFrom, errors;
  // The cubin first (no JIT); the PTX (JIT-compiled by the driver) when the cubin is missing
  // or does not load (e.g. a newer sm_90a revision).
  for (const std::string &file : {k.cubin, k.ptx}) {
    if (file.empty())
      continue;
    std::string image;
    if (!readFile(dir + file, image)) {
      errors += (errors.empty() ? "" : "; ") + std::string("cannot read ") + dir + file;
      continue;
    }
    image.push_back('\0'); // PTX must be NUL-terminated
    cu::CUresult r = a->cuModuleLoadData(&module, image.data());
    if (r == cu::CUDA_SUCCESS) {
      loadedFrom = dir + file;
      break;
    }
    errors += (errors.empty() ? "" : "; ") + std::string("cuModuleLoadData(") + dir + file +
              ") failed: " + cuErrorText(a, r);
    module = nullptr;
  }
  if (!module)
    return setError(errors.find("cuModuleLoadData") != std::string::npos ? AFR_ERR_CUDA
                                                                          : AFR_ERR_IO,
                    "kernel '" + k.name + "': " + errors);
  cu::CUfunction fn = nullptr;
  afr_status s = check(a, a->cuModuleGetFunction(&fn, module, k.symbol.c_str()),
                       "cuModuleGetFunction(" + k.symbol + ")");
  if (!s && k.dynamicSmem > 0)
    s = check(a,
              a->cuFuncSetAttribute(fn, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(k.dynamicSmem)),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                  std::to_string(k.dynamicSmem) + ")");
  if (s) {
    a->cuModuleUnload(module);
    return setError(s, "kernel '" + k.name + "': " + afr_last_error());
  }
  auto *kr = new afr_kernel;
  kr->context = c;
  kr->manifest = m;
  kr->index = index;
  kr->module = module;
  kr->function = fn;
  kr->loadedFrom = loadedFrom;
  *out = kr;
  return ok();
}

void afr_kernel_destroy(afr_kernel *k) {
  if (!k)
    return;
  k->context->api->cuModuleUnload(k->module);
  delete k;
}

afr_status afr_launch(afr_kernel *kr, const afr_sizes *sizes, const afr_tensor *tensors,
                      int num_tensors, void *stream) {
  if (!kr || !sizes)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_launch: null argument");
  const KernelSpec &k = kr->manifest->m.kernels[kr->index];
  cu::Api *a = kr->context->api;
  if (afr_status s = validate(k, *sizes, tensors, num_tensors))
    return s;
  afr_launch_dims dims{};
  if (afr_status s = launchDims(k, *sizes, dims))
    return s;
  std::vector<afr_param_slot> slots;
  uint32_t total = 0;
  paramLayout(k, slots, total);

  // Host copies of the arguments: the descriptors in their own 128-byte aligned CUtensorMaps
  // (cuTensorMapEncodeTiled's alignment), scalars and pointers in a buffer laid out like the
  // kernel's parameter space. cuLaunchKernel copies each one by the kernel's parameter sizes.
  std::vector<cu::CUtensorMap> maps(k.tmas.size() + 1);
  std::vector<uint64_t> scalarBuf((total + 7) / 8 + 1, 0);
  auto *buf = reinterpret_cast<unsigned char *>(scalarBuf.data());
  std::vector<void *> args(slots.size());
  size_t nextMap = 0;

  for (size_t i = 0; i < k.params.size(); ++i) {
    const ParamSpec &p = k.params[i];
    unsigned char *dst = buf + slots[i].offset;
    args[i] = dst;
    if (p.kind == AFR_PARAM_TMA_DESCRIPTOR) {
      auto *map = &maps[nextMap++];
      args[i] = map;
      const TmaSpec *tma = nullptr;
      for (const TmaSpec &t : k.tmas)
        if (t.param == p.tma)
          tma = &t;
      afr_tma_params tp{};
      if (afr_status s = tmaParams(k, *tma, *sizes, tensors, num_tensors, tp))
        return s;
      cu::CUresult r = a->cuTensorMapEncodeTiled(
          map, static_cast<int>(tp.data_type), tp.rank,
          reinterpret_cast<void *>(static_cast<uintptr_t>(tp.global_address)),
          reinterpret_cast<const unsigned long long *>(tp.global_dim),
          reinterpret_cast<const unsigned long long *>(tp.global_strides), tp.box_dim, tp.element_strides, static_cast<int>(tp.interleave),
          static_cast<int>(tp.swizzle), static_cast<int>(tp.l2_promotion),
          static_cast<int>(tp.oob_fill));
      if (afr_status s =
              check(a, r, "kernel '" + k.name + "': cuTensorMapEncodeTiled(" + p.name + ")"))
        return s;
    } else if (p.kind == AFR_PARAM_POINTER) {
      uint64_t ptr = 0;
      for (int j = 0; j < num_tensors; ++j)
        if (tensors[j].name && p.value == tensors[j].name)
          ptr = tensors[j].data;
      std::memcpy(dst, &ptr, 8);
    } else if (p.dtype == "f32") {
      float f = std::strtof(p.value.c_str(), nullptr);
      std::memcpy(dst, &f, 4);
    } else {
      int64_t v = 0;
      std::string e;
      if (!evalExpr(p.value, *sizes, v, e))
        return setError(AFR_ERR_MANIFEST, "kernel '" + k.name + "': " + e);
      if (p.dtype == "i64") {
        std::memcpy(dst, &v, 8);
      } else {
        int32_t v32 = static_cast<int32_t>(v);
        std::memcpy(dst, &v32, 4);
      }
    }
  }
  if (afr_status s = check(a, a->cuCtxSetCurrent(kr->context->ctx), "cuCtxSetCurrent"))
    return s;
  cu::CUresult r = a->cuLaunchKernel(kr->function, dims.grid[0], dims.grid[1], dims.grid[2],
                                     dims.block[0], dims.block[1], dims.block[2],
                                     dims.dynamic_smem_bytes, stream, args.data(), nullptr);
  char what[160];
  std::snprintf(what, sizeof what, "cuLaunchKernel(grid %u,%u,%u block %u,%u,%u smem %u)",
                dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0], dims.block[1],
                dims.block[2], dims.dynamic_smem_bytes);
  if (afr_status s = check(a, r, "kernel '" + k.name + "': " + what))
    return s;
  return ok();
}

afr_status afr_mem_alloc(afr_context *c, size_t bytes, uint64_t *ptr) {
  if (!c || !ptr)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_mem_alloc: null argument");
  cu::CUdeviceptr p = 0;
  if (afr_status s = check(c->api, c->api->cuMemAlloc(&p, bytes), "cuMemAlloc"))
    return s;
  *ptr = p;
  return ok();
}

afr_status afr_mem_free(afr_context *c, uint64_t ptr) {
  if (!c)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_mem_free: null context");
  if (afr_status s = check(c->api, c->api->cuMemFree(ptr), "cuMemFree"))
    return s;
  return ok();
}

afr_status afr_memcpy_htod(afr_context *c, uint64_t dst, const void *src, size_t bytes) {
  if (!c || !src)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_memcpy_htod: null argument");
  if (afr_status s = check(c->api, c->api->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD"))
    return s;
  return ok();
}

afr_status afr_memcpy_dtoh(afr_context *c, void *dst, uint64_t src, size_t bytes) {
  if (!c || !dst)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_memcpy_dtoh: null argument");
  if (afr_status s = check(c->api, c->api->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH"))
    return s;
  return ok();
}

afr_status afr_stream_synchronize(afr_context *c, void *stream) {
  if (!c)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_stream_synchronize: null context");
  if (afr_status s = check(c->api, c->api->cuStreamSynchronize(stream), "cuStreamSynchronize"))
    return s;
  return ok();
}

} // extern "C"
