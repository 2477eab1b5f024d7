//===- ManifestTensors.h - buffers shaped as a manifest asks ----*- C++ -*-===//
//
// Shared by the runtime fuzzers: the afr_tensor arguments of one kernel with
// the shapes and strides its manifest entry gives for the sizes (where the
// expressions evaluate; the rest stay 0), all at one fake address.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_FUZZ_MANIFESTTENSORS_H
#define ATTNFUSE_FUZZ_MANIFESTTENSORS_H

#include "attnfuse/runtime.h"
#include "internal.h"

#include <string>

inline afr_tensor manifestTensor(const afr::TensorSpec &spec,
                                 const afr_sizes &sizes, uint64_t address) {
  afr_tensor tensor{};
  tensor.name = spec.name.c_str();
  tensor.data = address;
  tensor.dtype = spec.dtype;
  tensor.rank = static_cast<int32_t>(spec.shape.size());
  for (size_t d = 0; d < spec.shape.size() && d < AFR_MAX_RANK; ++d) {
    int64_t value = 0;
    std::string error;
    if (afr::evalExpr(spec.shape[d].text, sizes, value, error))
      tensor.shape[d] = value;
    if (d < spec.strides.size() &&
        afr::evalExpr(spec.strides[d].text, sizes, value, error))
      tensor.strides[d] = value;
  }
  return tensor;
}

#endif // ATTNFUSE_FUZZ_MANIFESTTENSORS_H
