//===- Mainloop.h - wgmma tile products for sm_90a --------------*- C++ -*-===//
//
// The warpgroup matrix products of the kernels, one wgmma group each:
// `wgmma.fence`, the k/16 instructions of one tile product, `commit_group`.
// The caller chooses how many groups stay in flight (`wgmmaWait`) and when a
// stage goes back to its producer.
//
// Operands in shared memory are 128B-swizzled K-major tiles (or MN-major for
// a transposed B) laid out as blocks of 64 16-bit columns; `AccumulatorTile`
// says which rows and columns of the m64 x n f32 result a thread holds.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_MAINLOOP_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_MAINLOOP_H

#include "DeviceBuilder.h"

namespace attnfuse::sm90 {

/// The thread's part of an m64 x n wgmma accumulator: value `i` is at row
/// `rows[half(i)]` and column `colBase + column(i)` of the warpgroup's tile.
struct AccumulatorTile {
  AccumulatorTile(DeviceBuilder &d, Value warpInWarpgroup, Value lane);
  static int64_t half(size_t i) { return (i / 2) % 2; }
  static int64_t column(size_t i) { return (i % 2) + 8 * (i / 4); }
  Value rows[2];
  Value colBase;
};

/// How an operand tile lies in shared memory. K-major: rows of the M (or N)
/// dimension, k in 64-column blocks `blockBytes` apart. MN-major: rows of
/// k, 128 bytes each, so a k step of 16 is 16 rows further (the operand's
/// M or N columns in 64-column blocks, the descriptor's leading offset
/// apart).
enum class Major { K, MN };

/// D(m64 x n) (+)= A(smem) B(smem)^T over `k` (a multiple of 16): `descA` /
/// `descB` address the operands' first k step; a K-major operand's 64-column
/// k blocks lie `aBlockBytes` / `bBlockBytes` apart. The first instruction
/// starts the accumulator unless `accumulate`. One committed wgmma group.
Value mmaSharedShared(DeviceBuilder &d, Value acc, Value descA, Value descB,
                      int64_t n, int64_t k, int64_t aBlockBytes,
                      int64_t bBlockBytes, bool accumulate,
                      Major aMajor = Major::K, Major bMajor = Major::K);

class TmaRing;

/// The k loop of a TMA-fed GEMM over `numK` (>= 1) iterations of `ring`:
/// `step(it, acc, first)` waits for iteration `it`'s stage and issues its
/// committed wgmma group, the first one starting the accumulator `acc` (so
/// no register is zeroed outside wgmma). One group stays in flight; the
/// stage of the group that completed goes back to the producer. Returns the
/// accumulator once every group has completed.
Value pipelinedMainloop(
    DeviceBuilder &d, const TmaRing &ring, Value numK, Value acc,
    const std::function<Value(Value it, Value acc, bool first)> &step);

/// D(m64 x n) += A(registers) B(smem) over `k`: `a` holds 4 packed b32 per
/// k step of 16 (the A fragment layout, which an accumulator of 16-bit pairs
/// has), B is MN-major (transposed) with k steps `bStepBytes` apart. One
/// committed wgmma group.
Value mmaRegisterShared(DeviceBuilder &d, Value acc, llvm::ArrayRef<Value> a,
                        Value descB, int64_t n, int64_t k, int64_t bStepBytes);

/// The accumulator values packed as 16-bit pairs, the A operand of a
/// following register-sourced wgmma.
llvm::SmallVector<Value> packOperandA(DeviceBuilder &d,
                                      llvm::ArrayRef<Value> values);

} // namespace attnfuse::sm90

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_MAINLOOP_H
