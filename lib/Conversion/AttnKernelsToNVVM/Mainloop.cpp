//===- Mainloop.cpp - wgmma tile products for sm_90a ------------*- C++ -*-===//

#include "Mainloop.h"
#include "Pipeline.h"

using namespace mlir;
using namespace attnfuse::sm90;

AccumulatorTile::AccumulatorTile(DeviceBuilder &d, Value warpInWarpgroup,
                                 Value lane) {
  Value groupRow = d.add(d.mul(warpInWarpgroup, 16), d.divu(lane, 4));
  rows[0] = groupRow;
  rows[1] = d.add(groupRow, 8);
  colBase = d.mul(d.andi(lane, 3), 2);
}

Value attnfuse::sm90::mmaSharedShared(DeviceBuilder &d, Value acc, Value descA,
                                      Value descB, int64_t n, int64_t k,
                                      int64_t aBlockBytes, int64_t bBlockBytes,
                                      bool accumulate, Major aMajor,
                                      Major bMajor) {
  // K-major: four k steps of 16 (32 bytes) per 64-column block. MN-major:
  // 16 rows of 128 bytes per k step.
  auto offset = [](Major major, int64_t blockBytes, int64_t kk) {
    if (major == Major::MN)
      return kk * 16 * 128;
    return (kk / 4) * blockBytes + (kk % 4) * 32;
  };
  d.wgmmaFence();
  for (int64_t kk = 0; kk < k / 16; ++kk)
    acc = d.wgmmaSS(acc, d.descAdd(descA, offset(aMajor, aBlockBytes, kk)),
                    d.descAdd(descB, offset(bMajor, bBlockBytes, kk)), n,
                    /*accumulate=*/accumulate || kk > 0,
                    /*transB=*/bMajor == Major::MN,
                    /*transA=*/aMajor == Major::MN);
  d.wgmmaCommit();
  return acc;
}

Value attnfuse::sm90::pipelinedMainloop(
    DeviceBuilder &d, const TmaRing &ring, Value numK, Value acc,
    const std::function<Value(Value, Value, bool)> &step) {
  acc = step(d.c32(0), acc, /*first=*/true);
  SmallVector<Value> state =
      d.forLoop(d.c32(1), numK, d.c32(1), ValueRange{acc},
                [&](Value it, ValueRange args) -> SmallVector<Value> {
                  Value next = step(it, args[0], /*first=*/false);
                  d.wgmmaWait(1);
                  ring.release(ring.stageOf(d.sub(it, 1)));
                  return {next};
                });
  d.wgmmaWait(0);
  return state[0];
}

Value attnfuse::sm90::mmaRegisterShared(DeviceBuilder &d, Value acc,
                                        ArrayRef<Value> a, Value descB,
                                        int64_t n, int64_t k,
                                        int64_t bStepBytes) {
  d.wgmmaFence();
  for (int64_t kk = 0; kk < k / 16; ++kk)
    acc = d.wgmmaRS(acc, a.slice(4 * kk, 4), d.descAdd(descB, kk * bStepBytes),
                    n, /*transB=*/true);
  d.wgmmaCommit();
  return acc;
}

SmallVector<Value> attnfuse::sm90::packOperandA(DeviceBuilder &d,
                                                ArrayRef<Value> values) {
  // The A fragment of k step kk is value pairs 8kk + {0,1}, {2,3}, {4,5},
  // {6,7}: the accumulator order.
  SmallVector<Value> regs;
  for (size_t j = 0; j + 1 < values.size(); j += 2)
    regs.push_back(d.packHalf2(values[j], values[j + 1]));
  return regs;
}
