//===- SM90aOptions.h - options of an sm_90a compilation --------*- C++ -*-===//
//
// What `attnfuse-compile --target=sm_90a`, the Python package and
// `writeSM90aArtifacts` take, each default written once. Plain C++ (no MLIR
// header), so the Python extension can hold it too.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_TARGET_SM90AOPTIONS_H
#define ATTNFUSE_TARGET_SM90AOPTIONS_H

#include <cstdint>
#include <string>

namespace attnfuse {

struct SM90aOptions {
  /// Kernel element type: bf16 or f16.
  std::string elemType = "bf16";
  /// Flash attention query rows per CTA (64, 128 or 192: one consumer
  /// warpgroup per 64 rows) and keys per tile (64 or 128); attn-fuse writes
  /// them on the fused ops, which the kernels honour (head dims above 128
  /// stream at most 64 keys per tile).
  int64_t blockQ = 128;
  int64_t blockKV = 128;
  /// Depth of the shared-memory K/V (or A/B) ring.
  int64_t stages = 2;
  /// ptxas to run; empty: PATH, then $CUDA_HOME/bin, /usr/local/cuda/bin.
  std::string ptxasPath;
  /// false: PTX and the manifest only.
  bool cubin = true;
  /// false: no device programs (kernels to launch one by one).
  bool programs = true;
};

} // namespace attnfuse

#endif // ATTNFUSE_TARGET_SM90AOPTIONS_H
