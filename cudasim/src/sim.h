// The emulated device: global memory (allocations with guard gaps, never
// reused), tensor maps, and kernel launches of parsed PTX. Errors carry a
// message; the driver API layer turns them into CUresult codes.
#ifndef ATTNFUSE_CUDASIM_SIM_H
#define ATTNFUSE_CUDASIM_SIM_H

#include "ptx.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cudasim {

// H100-like limits reported by the device queries.
constexpr int kNumSMs = 132;
constexpr unsigned kMaxSmemOptin = 227 * 1024;  // per block, opt-in
constexpr unsigned kMaxSmemDefault = 48 * 1024; // per block without the opt-in
constexpr unsigned kSmemPerSM = 228 * 1024;
constexpr unsigned kRegsPerSM = 64 * 1024;
constexpr unsigned kReservedSmem =
    1024; // system-reserved bytes at the window's start

// Address windows. Global allocations live at kGlobalBase + ...; a generic
// address in the shared window is kSharedWindow + shared offset; param space
// (kernel parameters) at kParamWindow.
constexpr uint64_t kGlobalBase = 0x7f0000000000ull;
constexpr uint64_t kSharedWindow = 0x100000000000ull;
constexpr uint64_t kSharedWindowSize = 1ull << 32;
constexpr uint64_t kParamWindow = 0x200000000000ull;

struct Allocation {
  uint64_t base = 0, size = 0;
  std::vector<uint8_t> bytes;
};

class GlobalMemory {
public:
  uint64_t allocate(uint64_t size);
  bool release(uint64_t base);
  // Host pointer of [addr, addr + size) inside one live allocation, or nullptr.
  uint8_t *translate(uint64_t addr, uint64_t size);
  const Allocation *find(uint64_t addr) const;
  std::string describe(
      uint64_t addr) const; // "0x... (n bytes past allocation 0x.. of m bytes)"
  uint64_t liveBytes() const;

private:
  std::map<uint64_t, Allocation> allocs;
  uint64_t next = kGlobalBase;
  const Allocation *last = nullptr;
};

// Decoded CUtensorMap (the emulator's own 128-byte encoding, see
// driver_api.cpp).
struct TensorMap {
  unsigned dataType = 0, rank = 0, elemBytes = 0;
  uint64_t address = 0;
  uint64_t dims[5] = {};
  uint64_t strides[5] = {}; // bytes; strides[0] = element size
  unsigned box[5] = {}, elementStrides[5] = {};
  unsigned interleave = 0, swizzle = 0, l2 = 0, oobFill = 0;
};
constexpr uint64_t kTensorMapMagic = 0x70616d54534641ull; // "AFSTmap"
// Validates like cuTensorMapEncodeTiled; returns "" or the reason.
unsigned elemBytesOf(unsigned cuTensorMapDataType); // 0 if not a valid type
std::string validateTensorMap(const TensorMap &m, uint64_t mapAddress);
void encodeTensorMap(const TensorMap &m, void *out128);
bool decodeTensorMap(const void *in128, TensorMap &m);

struct LaunchConfig {
  unsigned grid[3], block[3], dynamicSmem;
  unsigned maxDynamicSmem; // the function's MAX_DYNAMIC_SHARED_SIZE_BYTES
};

struct Stats {
  uint64_t instructions = 0; // thread-instructions executed
  double seconds = 0;
};

// Runs a kernel to completion. `params` holds the kernel's parameter buffer
// (Kernel::paramBytes). Returns "" or a diagnostic; `isAddressError` tells an
// out-of-bounds access apart.
std::string launchKernel(const Module &module, const Kernel &kernel,
                         const LaunchConfig &cfg,
                         const std::vector<uint8_t> &params, GlobalMemory &mem,
                         bool &isAddressError, Stats &stats);

} // namespace cudasim

#endif
