//===- Pipeline.h - TMA pipelines and warp specialization -------*- C++ -*-===//
//
// The producer/consumer machinery of the sm_90a kernels:
//
// * the thread coordinates of a kernel of 128-thread warpgroups;
// * `TmaRing`: a multi-stage ring of shared-memory stages filled by TMA, each
//   stage guarded by a set of mbarriers (set 0 "full": the producer's
//   expect_tx plus TMA's complete_tx; set 1 "empty": the consumers' releases;
//   further sets are kernel-specific hand-offs such as a rotated key tile);
//   iteration `it` uses stage `it % stages` in phase `(it / stages) & 1`;
// * the one-thread barrier initialization that every kernel starts with;
// * warp specialization: the producer warpgroup gives registers back with
//   setmaxnreg.dec, the consumers take them with setmaxnreg.inc.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_PIPELINE_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_PIPELINE_H

#include "DeviceBuilder.h"

namespace attnfuse::sm90 {

/// A thread's place in a kernel of 128-thread warpgroups.
struct WarpgroupCoords {
  explicit WarpgroupCoords(DeviceBuilder &d);
  Value tid;               // thread of the CTA
  Value warpgroup;         // tid / 128
  Value threadInWarpgroup; // tid % 128
  Value warpInWarpgroup;   // (tid % 128) / 32
  Value lane;              // tid % 32
};

/// A ring of `stages` TMA-filled stages and their mbarriers, which lie at
/// `barrierOffset` of the shared memory `smem`: set k of stage s at byte
/// `barrierOffset + 8 (k stages + s)`.
class TmaRing {
public:
  static constexpr int64_t kFull = 0, kEmpty = 1;

  TmaRing(DeviceBuilder &d, Value smem, int64_t barrierOffset, int64_t stages)
      : d(d), smem(smem), barrierOffset(barrierOffset), stages(stages) {}

  /// Shared bytes of `sets` barrier sets of a ring of `stages`.
  static int64_t barrierBytes(int64_t stages, int64_t sets) {
    return 8 * sets * stages;
  }

  Value stageOf(Value it) const { return d.remu(it, stages); }
  Value phaseOf(Value it) const { return d.andi(d.divu(it, stages), 1); }
  /// The mbarrier of `set` of stage `stage`.
  Value barrier(int64_t set, Value stage) const;
  Value full(Value stage) const { return barrier(kFull, stage); }
  Value empty(Value stage) const { return barrier(kEmpty, stage); }

  /// mbarrier.init of every stage's barriers, `arrivals[k]` the count of set
  /// k (the full barrier's is 1: the producer's expect_tx). One thread runs
  /// it, inside `initializeBarriers`.
  void initBarriers(llvm::ArrayRef<int64_t> arrivals) const;

  /// Producer side of iteration `it`: waits until the consumers released
  /// the stage (a fresh barrier passes a wait on phase 1), then arms its full
  /// barrier for `bytes` of TMA traffic. Returns the stage.
  Value acquire(Value it, int64_t bytes) const;
  /// Arms the full barrier of iteration `it`'s stage for `bytes` without
  /// waiting (rings whose consumers hand stages back through a CTA barrier).
  Value arm(Value it, int64_t bytes) const;
  /// Consumer side: waits until the stage of `it` is full and then on each of
  /// `alsoSets` (same phase). Returns the stage.
  Value wait(Value it, llvm::ArrayRef<int64_t> alsoSets = {}) const;
  /// Consumer side: one arrival on the empty barrier of `stage`.
  void release(Value stage) const;

private:
  DeviceBuilder &d;
  Value smem;
  int64_t barrierOffset, stages;
};

/// Thread 0 runs `init` (mbarrier.init), fences the inits for the async
/// proxy, and a CTA barrier publishes them.
void initializeBarriers(DeviceBuilder &d, Value tid,
                        const std::function<void()> &init);

/// Warpgroup 0 runs `producer` with `producerRegisters` (setmaxnreg.dec), the
/// other warpgroups `consumer` with `consumerRegisters` (setmaxnreg.inc).
void warpSpecialize(DeviceBuilder &d, Value warpgroup,
                    int64_t producerRegisters, int64_t consumerRegisters,
                    const std::function<void()> &producer,
                    const std::function<void()> &consumer);

/// `body` on one elected thread of warp 0 of the warpgroup (the TMA issuer).
void onIssuingThread(DeviceBuilder &d, Value warpInWarpgroup,
                     const std::function<void()> &body);

/// bar.sync 1 + c over the 128 threads of consumer warpgroup `c` (of
/// `consumers`). The id is a constant in each branch so ptxas sees every
/// named barrier the kernel uses.
void consumerBarrier(DeviceBuilder &d, Value c, int64_t consumers);

} // namespace attnfuse::sm90

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_PIPELINE_H
