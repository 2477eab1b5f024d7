// A fake libcuda for the runtime tests: implements the entry points the runtime resolves,
// records what it is called with, and can be told to fail one entry point. No GPU involved.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" {

struct FakeEncode {
  int dataType;
  unsigned rank;
  uint64_t address;
  uint64_t dim[5];
  uint64_t strides[4];
  unsigned box[5];
  unsigned elementStrides[5];
  int interleave, swizzle, l2, oob;
};

struct FakeState {
  int initCalls;
  int retainCalls, releaseCalls;
  int moduleLoads, moduleUnloads;
  char lastImageHead[16];      // first bytes of the last image given to cuModuleLoadData
  char lastFunction[256];
  int funcAttribute, funcAttributeValue;
  int encodeCount;
  FakeEncode encodes[16];
  int launchCount;
  unsigned grid[3], block[3], smem;
  void *stream;
  int numParams;                // set by the test: how many params to copy
  unsigned paramSizes[32];      // set by the test
  unsigned char params[32][128];
  uintptr_t paramAddress[32];
  unsigned long long nextAlloc;
};

static FakeState state;
static std::string failName;
static int failCode = 0;

FakeState *fake_cuda_state() { return &state; }
void fake_cuda_reset() {
  std::memset(&state, 0, sizeof state);
  failName.clear();
  failCode = 0;
}
void fake_cuda_fail(const char *name, int code) {
  failName = name ? name : "";
  failCode = code;
}

static int failing(const char *name) { return failName == name ? failCode : 0; }

int cuInit(unsigned) {
  ++state.initCalls;
  return failing("cuInit");
}
int cuDeviceGet(int *dev, int ordinal) {
  if (int r = failing("cuDeviceGet"))
    return r;
  if (ordinal != 0)
    return 101; // CUDA_ERROR_INVALID_DEVICE
  *dev = 0;
  return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  *v = attr == 75 ? 9 : 0;
  return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  ++state.retainCalls;
  *ctx = reinterpret_cast<void *>(0x1000);
  return failing("cuDevicePrimaryCtxRetain");
}
int cuDevicePrimaryCtxRelease_v2(int) {
  ++state.releaseCalls;
  return 0;
}
int cuCtxSetCurrent(void *) { return failing("cuCtxSetCurrent"); }
int cuModuleLoadData(void **module, const void *image) {
  std::memset(state.lastImageHead, 0, sizeof state.lastImageHead);
  std::strncpy(state.lastImageHead, static_cast<const char *>(image),
               sizeof state.lastImageHead - 1);
  // "failcubin" images do not load (like a cubin for another GPU).
  if (std::strncmp(static_cast<const char *>(image), "failcubin", 9) == 0)
    return 209; // CUDA_ERROR_NO_BINARY_FOR_GPU
  if (int r = failing("cuModuleLoadData"))
    return r;
  ++state.moduleLoads;
  *module = reinterpret_cast<void *>(0x2000);
  return 0;
}
int cuModuleUnload(void *) {
  ++state.moduleUnloads;
  return 0;
}
int cuModuleGetFunction(void **fn, void *, const char *name) {
  std::strncpy(state.lastFunction, name, sizeof state.lastFunction - 1);
  if (int r = failing("cuModuleGetFunction"))
    return r;
  *fn = reinterpret_cast<void *>(0x3000);
  return 0;
}
int cuFuncSetAttribute(void *, int attr, int value) {
  state.funcAttribute = attr;
  state.funcAttributeValue = value;
  return failing("cuFuncSetAttribute");
}
int cuTensorMapEncodeTiled(void *map, int dataType, unsigned rank, void *address,
                           const unsigned long long *dim, const unsigned long long *strides,
                           const unsigned *box, const unsigned *elementStrides, int interleave,
                           int swizzle, int l2, int oob) {
  if (int r = failing("cuTensorMapEncodeTiled"))
    return r;
  if (state.encodeCount < 16) {
    FakeEncode &e = state.encodes[state.encodeCount];
    e.dataType = dataType;
    e.rank = rank;
    e.address = reinterpret_cast<uintptr_t>(address);
    for (unsigned i = 0; i < rank && i < 5; ++i) {
      e.dim[i] = dim[i];
      e.box[i] = box[i];
      e.elementStrides[i] = elementStrides[i];
      if (i + 1 < rank)
        e.strides[i] = strides[i];
    }
    e.interleave = interleave;
    e.swizzle = swizzle;
    e.l2 = l2;
    e.oob = oob;
  }
  // Opaque content the test can recognise: the address, the rank and a tag.
  unsigned long long words[16] = {};
  words[0] = reinterpret_cast<uintptr_t>(address);
  words[1] = rank;
  words[2] = 0xFA4E00000000ull + static_cast<unsigned>(state.encodeCount);
  std::memcpy(map, words, sizeof words);
  ++state.encodeCount;
  return 0;
}
int cuGetErrorString(int code, const char **s) {
  *s = code == 209 ? "no kernel image is available for execution on the device"
                   : "fake driver error";
  return 0;
}
int cuGetErrorName(int code, const char **s) {
  switch (code) {
  case 1: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
  case 209: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
  case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  default: *s = "CUDA_ERROR_UNKNOWN"; break;
  }
  return 0;
}
int cuLaunchKernel(void *, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
  if (int r = failing("cuLaunchKernel"))
    return r;
  if (extra)
    return 1;
  ++state.launchCount;
  state.grid[0] = gx, state.grid[1] = gy, state.grid[2] = gz;
  state.block[0] = bx, state.block[1] = by, state.block[2] = bz;
  state.smem = smem;
  state.stream = stream;
  for (int i = 0; i < state.numParams && i < 32; ++i) {
    state.paramAddress[i] = reinterpret_cast<uintptr_t>(params[i]);
    std::memcpy(state.params[i], params[i], state.paramSizes[i]);
  }
  return 0;
}
int cuStreamSynchronize(void *) { return failing("cuStreamSynchronize"); }
int cuMemAlloc_v2(unsigned long long *p, size_t) {
  state.nextAlloc += 0x100000;
  *p = 0x7f0000000000ull + state.nextAlloc;
  return failing("cuMemAlloc_v2");
}
int cuMemFree_v2(unsigned long long) { return 0; }
int cuMemcpyHtoD_v2(unsigned long long, const void *, size_t) { return 0; }
int cuMemcpyDtoH_v2(void *, unsigned long long, size_t) { return 0; }

} // extern "C"
