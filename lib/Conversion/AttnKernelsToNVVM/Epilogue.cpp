//===- Epilogue.cpp - accumulator tiles to global memory --------*- C++ -*-===//

#include "Epilogue.h"
#include "Kernels.h"
#include "Pipeline.h"

using namespace mlir;
using namespace attnfuse::sm90;
using arith::CmpIPredicate;

void attnfuse::sm90::stageAccumulator(DeviceBuilder &d,
                                      const AccumulatorTile &tile, Value lane,
                                      ArrayRef<Value> values, Value slab,
                                      ArrayRef<Value> rowScale) {
  Value quadByte = d.mul(d.andi(lane, 3), 4);
  for (size_t i = 0; i + 1 < values.size(); i += 2) {
    int64_t h = AccumulatorTile::half(i);
    Value lo = values[i], hi = values[i + 1];
    if (!rowScale.empty()) {
      lo = d.mulf(lo, rowScale[h]);
      hi = d.mulf(hi, rowScale[h]);
    }
    Value packed = d.packHalf2(lo, hi);
    Value chunk = d.c32(i / 4);
    Value off = d.add(swizzledChunk(d, tile.rows[h], chunk, 64), quadByte);
    d.store(packed, d.sAt(slab, off), 4);
  }
}

void attnfuse::sm90::storeStagedTile(
    DeviceBuilder &d, Value c, int64_t consumers, Value threadInWarpgroup,
    Value desc, Value slab, int64_t columnBlocks,
    const std::function<SmallVector<Value>(int64_t)> &coords) {
  d.fenceProxyAsync();
  consumerBarrier(d, c, consumers);
  d.ifThen(d.cmp(CmpIPredicate::eq, threadInWarpgroup, 0), [&]() {
    for (int64_t cb = 0; cb < columnBlocks; ++cb)
      d.tmaStore(desc, d.sAt(slab, cb * 64 * 128), coords(cb));
    d.bulkCommit();
    d.bulkWaitRead0();
  });
}
