//===- Epilogue.h - accumulator tiles to global memory ----------*- C++ -*-===//
//
// The epilogue of the TMA kernels: the f32 accumulator of a consumer
// warpgroup is converted to 16 bits and written into a 128B-swizzled slab of
// shared memory (the layout a TMA store reads), then, once the warpgroup's
// writes are fenced for the async proxy and the warpgroup has met at its
// named barrier, one thread stores the slab with TMA and waits until the
// bulk group has read it (so the slab may be reused).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_EPILOGUE_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_EPILOGUE_H

#include "Mainloop.h"

namespace attnfuse::sm90 {

/// Writes `values` (an m64 x n accumulator, each times `rowScale[half]` when
/// given) as 16-bit pairs into `slab`, a swizzled tile of 64 rows stored as
/// n / 64 column blocks of 64 x 128 bytes.
void stageAccumulator(DeviceBuilder &d, const AccumulatorTile &tile, Value lane,
                      llvm::ArrayRef<Value> values, Value slab,
                      llvm::ArrayRef<Value> rowScale = {});

/// After `stageAccumulator` in every thread of consumer warpgroup `c` (of
/// `consumers`): fence, barrier, and the TMA store of the slab's
/// `columnBlocks` blocks by the warpgroup's first thread, block `cb` at the
/// tensor coordinates `coords(cb)`.
void storeStagedTile(
    DeviceBuilder &d, Value c, int64_t consumers, Value threadInWarpgroup,
    Value desc, Value slab, int64_t columnBlocks,
    const std::function<llvm::SmallVector<Value>(int64_t)> &coords);

} // namespace attnfuse::sm90

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_EPILOGUE_H
