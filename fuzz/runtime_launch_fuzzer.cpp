//===- runtime_launch_fuzzer.cpp - launch sizes and buffer validation -----===//
//
// Takes the committed test manifests (prefill and decode kernels) and lets
// the input choose the kernel, the sizes B, S, T and, per tensor, the dtype,
// rank, shape, strides and address, starting from the ones the manifest
// asks for. Launch dimensions, workspace size, validation and the TMA encode
// arguments must give a status for all of them.
//
//===----------------------------------------------------------------------===//

#include "ManifestTensors.h"
#include "attnfuse/runtime.h"
#include "internal.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {
struct Input {
  const uint8_t *data;
  size_t size;
  template <typename T> T take() {
    T value{};
    size_t n = size < sizeof(T) ? size : sizeof(T);
    std::memcpy(&value, data, n);
    data += n;
    size -= n;
    return value;
  }
};

/// Never destroyed: kept reachable until exit for the leak checker.
std::vector<afr_manifest *> &manifests() {
  static auto *loaded = new std::vector<afr_manifest *>();
  return *loaded;
}
} // namespace

// Loaded once, before the first input (so that the leak check of each input
// does not count them).
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  for (const char *name : {"manifest.json", "decode-manifest.json"}) {
    afr_manifest *m = nullptr;
    std::string path = std::string(ATTNFUSE_FUZZ_MANIFEST_DIR) + "/" + name;
    if (afr_manifest_load(path.c_str(), &m) == AFR_OK)
      manifests().push_back(m);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<afr_manifest *> &all = manifests();
  if (all.empty())
    __builtin_trap(); // the fixtures must load
  Input in{data, size};
  afr_manifest *m = all[in.take<uint8_t>() % all.size()];
  int kernels = afr_manifest_num_kernels(m);
  int k = int(in.take<uint8_t>()) % (kernels + 1) - (kernels ? 0 : 1);
  uint8_t mode = in.take<uint8_t>();
  afr_sizes sizes{1, 128, 128};
  // Either small sizes or raw 64-bit ones.
  if (mode & 1) {
    sizes.B = in.take<int64_t>();
    sizes.S = in.take<int64_t>();
    sizes.T = in.take<int64_t>();
  } else {
    sizes.B = in.take<uint8_t>() % 9;
    sizes.S = in.take<uint16_t>() % 5000;
    sizes.T = in.take<uint16_t>() % 5000;
  }
  afr_launch_dims dims;
  (void)afr_kernel_launch_dims(m, k, &sizes, &dims);
  int64_t bytes;
  (void)afr_kernel_workspace_bytes(m, k, &sizes, &bytes);
  if (k < 0 || k >= kernels)
    return 0;

  const afr::KernelSpec &spec = m->m.kernels[k];
  std::vector<afr_tensor> tensors;
  for (const afr::TensorSpec &ts : spec.tensors) {
    afr_tensor t = manifestTensor(ts, sizes, 0x100000);
    // Perturb one property per tensor as the input says.
    uint8_t what = in.take<uint8_t>();
    switch (what % 8) {
    case 1:
      t.shape[what / 8 % AFR_MAX_RANK] = in.take<int64_t>();
      break;
    case 2:
      t.strides[what / 8 % AFR_MAX_RANK] = in.take<int64_t>();
      break;
    case 3:
      t.data = in.take<uint64_t>();
      break;
    case 4:
      t.dtype = static_cast<afr_dtype>(in.take<uint8_t>() % 8);
      break;
    case 5:
      t.rank = in.take<int8_t>();
      break;
    case 6:
      t.name = "";
      break;
    default:
      break;
    }
    tensors.push_back(t);
  }
  int count = static_cast<int>(tensors.size());
  if (in.take<uint8_t>() % 8 == 0 && count > 0)
    --count; // a missing tensor
  (void)afr_validate(m, k, &sizes, tensors.data(), count);
  for (int i = 0; i < afr_kernel_num_tma(m, k); ++i) {
    afr_tma_params params;
    (void)afr_tma_encode_params(m, k, i, &sizes, tensors.data(), count,
                                &params);
  }
  return 0;
}
