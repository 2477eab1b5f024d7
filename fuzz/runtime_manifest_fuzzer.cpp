//===- runtime_manifest_fuzzer.cpp - afr_manifest_parse and its users -----===//
//
// Parses the input as a manifest; when it parses, asks every kernel for its
// launch dimensions, workspace, parameter layout, and validates a set of
// buffers built from the manifest's own tensor shapes (so that validation
// and the TMA encode arguments are reached, not only refused). Sizes come
// from the first bytes of the input. Every call must return a status; none
// may crash, trap or leak.
//
//===----------------------------------------------------------------------===//

#include "ManifestTensors.h"
#include "attnfuse/runtime.h"
#include "internal.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  afr_sizes sizes{1, 1, 1};
  // Sizes from a short prefix: small, zero, negative and huge values.
  if (size >= 3) {
    static const int64_t table[] = {0, 1, 2, 3, 64, 1000, -1, INT64_MAX,
                                    INT64_MIN, 1 << 20, 127, 4096, 65536,
                                    (int64_t)1 << 40, 7, 130};
    sizes.B = table[data[0] & 15];
    sizes.S = table[data[1] & 15];
    sizes.T = table[data[2] & 15];
  }
  afr_manifest *manifest = nullptr;
  if (afr_manifest_parse(reinterpret_cast<const char *>(data), size, "",
                         &manifest) != AFR_OK)
    return 0;
  int kernels = afr_manifest_num_kernels(manifest);
  for (int k = 0; k < kernels; ++k) {
    (void)afr_manifest_kernel_name(manifest, k);
    (void)afr_manifest_kernel_kind(manifest, k);
    (void)afr_manifest_kernel_config_json(manifest, k);
    afr_launch_dims dims;
    (void)afr_kernel_launch_dims(manifest, k, &sizes, &dims);
    int64_t bytes;
    (void)afr_kernel_workspace_bytes(manifest, k, &sizes, &bytes);
    int count = 0;
    uint32_t total = 0;
    afr_param_slot slots[16];
    (void)afr_kernel_param_layout(manifest, k, slots, 16, &count, &total);

    // Buffers shaped as the manifest asks (where its expressions evaluate).
    const afr::KernelSpec &spec = manifest->m.kernels[k];
    std::vector<afr_tensor> tensors;
    for (const afr::TensorSpec &ts : spec.tensors) {
      tensors.push_back(manifestTensor(ts, sizes, 0x10000));
    }
    (void)afr_validate(manifest, k, &sizes, tensors.data(),
                       static_cast<int>(tensors.size()));
    for (int i = 0; i < afr_kernel_num_tma(manifest, k); ++i) {
      afr_tma_params params;
      (void)afr_tma_encode_params(manifest, k, i, &sizes, tensors.data(),
                                  static_cast<int>(tensors.size()), &params);
    }
  }
  // Out-of-range indices and null arguments.
  (void)afr_manifest_kernel_name(manifest, kernels);
  (void)afr_manifest_kernel_name(manifest, -1);
  (void)afr_manifest_launch_kernel(manifest, -1);
  int index;
  (void)afr_manifest_find_kernel(manifest, "", &index);
  (void)afr_validate(manifest, 0, &sizes, nullptr, 3);
  afr_manifest_destroy(manifest);
  return 0;
}
