//===- Pipeline.cpp - TMA pipelines and warp specialization -----*- C++ -*-===//

#include "Pipeline.h"

using namespace mlir;
using namespace attnfuse::sm90;
using arith::CmpIPredicate;

WarpgroupCoords::WarpgroupCoords(DeviceBuilder &d) {
  tid = d.tid();
  warpgroup = d.divu(tid, 128);
  threadInWarpgroup = d.remu(tid, 128);
  warpInWarpgroup = d.divu(threadInWarpgroup, 32);
  lane = d.remu(tid, 32);
}

Value TmaRing::barrier(int64_t set, Value stage) const {
  return d.sAt(smem, d.add(d.shl(stage, 3), barrierOffset + 8 * set * stages));
}

void TmaRing::initBarriers(ArrayRef<int64_t> arrivals) const {
  for (int64_t s = 0; s < stages; ++s) {
    Value stage = d.c32(s);
    for (auto [set, count] : llvm::enumerate(arrivals))
      d.mbarInit(barrier(set, stage), count);
  }
}

Value TmaRing::acquire(Value it, int64_t bytes) const {
  Value stage = stageOf(it);
  d.mbarWait(empty(stage), d.xori(phaseOf(it), 1));
  d.mbarArriveExpectTx(full(stage), bytes);
  return stage;
}

Value TmaRing::arm(Value it, int64_t bytes) const {
  Value stage = stageOf(it);
  d.mbarArriveExpectTx(full(stage), bytes);
  return stage;
}

Value TmaRing::wait(Value it, ArrayRef<int64_t> alsoSets) const {
  Value stage = stageOf(it);
  Value phase = phaseOf(it);
  d.mbarWait(full(stage), phase);
  for (int64_t set : alsoSets)
    d.mbarWait(barrier(set, stage), phase);
  return stage;
}

void TmaRing::release(Value stage) const { d.mbarArrive(empty(stage)); }

void attnfuse::sm90::initializeBarriers(DeviceBuilder &d, Value tid,
                                        const std::function<void()> &init) {
  d.ifThen(d.cmp(CmpIPredicate::eq, tid, 0), [&]() {
    init();
    d.fenceMbarrierInit();
  });
  d.barrierAll();
}

void attnfuse::sm90::warpSpecialize(DeviceBuilder &d, Value warpgroup,
                                    int64_t producerRegisters,
                                    int64_t consumerRegisters,
                                    const std::function<void()> &producer,
                                    const std::function<void()> &consumer) {
  d.ifThenElse(
      d.cmp(CmpIPredicate::eq, warpgroup, 0),
      [&]() {
        d.setMaxRegisters(false, producerRegisters);
        producer();
      },
      [&]() {
        d.setMaxRegisters(true, consumerRegisters);
        consumer();
      });
}

void attnfuse::sm90::onIssuingThread(DeviceBuilder &d, Value warpInWarpgroup,
                                     const std::function<void()> &body) {
  d.ifThen(d.cmp(CmpIPredicate::eq, warpInWarpgroup, 0),
           [&]() { d.ifThen(d.electSync(), body); });
}

void attnfuse::sm90::consumerBarrier(DeviceBuilder &d, Value c,
                                     int64_t consumers) {
  if (consumers == 1) {
    d.namedBarrier(1, 128);
    return;
  }
  for (int64_t k = 0; k < consumers; ++k)
    d.ifThen(d.cmp(CmpIPredicate::eq, c, k),
             [&]() { d.namedBarrier(1 + k, 128); });
}
