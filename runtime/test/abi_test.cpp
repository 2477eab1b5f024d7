// The numeric enum values the runtime hard-codes (it includes no CUDA header) equal cuda.h's.
#include <cuda.h>

#include "internal.h"

#include <cstdio>

#define CHECK_ENUM(fn, name)                                                                 \
  do {                                                                                       \
    uint32_t v = 999;                                                                        \
    if (!afr::fn(#name, v) || v != static_cast<uint32_t>(name)) {                            \
      std::fprintf(stderr, "FAIL: %s: runtime %u, cuda.h %u\n", #name, v,                    \
                   static_cast<uint32_t>(name));                                             \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main() {
  // The runtime keeps host CUtensorMaps 128-byte aligned: enough for CUDA 12 (64) and 13 (128).
  static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) <= 128, "CUtensorMap ABI");
  static_assert(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES == 8, "func attribute");
  static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == 75, "cc major");
  static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == 76, "cc minor");
  CHECK_ENUM(tmaDataTypeFromName, CU_TENSOR_MAP_DATA_TYPE_UINT8);
  CHECK_ENUM(tmaDataTypeFromName, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  CHECK_ENUM(tmaDataTypeFromName, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  CHECK_ENUM(tmaDataTypeFromName, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK_ENUM(tmaDataTypeFromName, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_INTERLEAVE_NONE);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_INTERLEAVE_32B);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_SWIZZLE_NONE);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_SWIZZLE_64B);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_SWIZZLE_128B);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  CHECK_ENUM(tmaEnumFromName, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
  std::printf("cuda-abi: OK\n");
  return 0;
}
