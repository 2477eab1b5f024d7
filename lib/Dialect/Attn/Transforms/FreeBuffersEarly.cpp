//===- FreeBuffersEarly.cpp - buffer lifetimes after deallocation -*- C++ -*-=//
//
// The ownership-based deallocation pipeline frees a buffer at the end of
// the block that allocated it. In a function body that is the return: the
// peak memory of a call is then the sum of all its temporaries. Freeing each
// one after its last use bounds it by what is live at once
// (attn-free-buffers-early). In a loop body it is the end of the iteration:
// a kernel's tile buffers are allocated and freed once per key tile, which
// allocating them once per loop avoids (attn-reuse-loop-buffers).
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNFREEBUFFERSEARLY
#define GEN_PASS_DEF_ATTNREUSELOOPBUFFERS
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;

namespace {

/// The last op of `block` that uses `buffer` or a view of it (null when
/// nothing but `dealloc` does), or failure when a view may outlive what the
/// uses show: it is yielded, returned, passed to a call, taken as an
/// address, or made by an op that is not a view. (A memref is never an
/// element of memory, so loads and stores only access it.)
FailureOr<Operation *> lastUseInBlock(Value buffer, Block *block,
                                      Operation *dealloc) {
  SmallVector<Value> worklist = {buffer};
  llvm::SmallPtrSet<Value, 8> seen = {buffer};
  Operation *last = nullptr;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc)
        continue;
      // The address as an integer (the deallocation helpers compare them)
      // must not be one a later allocation may reuse.
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          isa<CallOpInterface, memref::ExtractAlignedPointerAsIndexOp>(user))
        return failure();
      // Results that hold memory alias the buffer only through views;
      // anything else producing a memref from it might keep it.
      bool producesBuffer = llvm::any_of(
          user->getResultTypes(), [](Type t) { return isa<MemRefType>(t); });
      if (producesBuffer) {
        if (!isa<ViewLikeOpInterface, memref::ExtractStridedMetadataOp,
                 memref::CastOp>(user))
          return failure();
        for (Value result : user->getResults())
          if (isa<MemRefType>(result.getType()) && seen.insert(result).second)
            worklist.push_back(result);
      }
      Operation *point = block->findAncestorOpInBlock(*user);
      if (!point)
        return failure();
      if (!last || last->isBeforeInBlock(point))
        last = point;
    }
  }
  return last;
}

struct AttnFreeBuffersEarlyPass
    : attnfuse::attn::impl::AttnFreeBuffersEarlyBase<
          AttnFreeBuffersEarlyPass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation()->walk(
        [&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (memref::DeallocOp dealloc : deallocs) {
      auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
      Block *block = dealloc->getBlock();
      if (!alloc || alloc->getBlock() != block)
        continue;
      FailureOr<Operation *> lastUse = lastUseInBlock(alloc, block, dealloc);
      if (failed(lastUse))
        continue;
      // A buffer nothing uses is freed at once.
      Operation *last = *lastUse ? *lastUse : alloc.getOperation();
      if (last->isBeforeInBlock(dealloc) && last->getNextNode() != dealloc)
        dealloc->moveAfter(last);
    }
  }
};

/// The memref.dealloc of `alloc` in its own block, or null.
memref::DeallocOp deallocInBlock(memref::AllocOp alloc) {
  for (Operation *user : alloc->getUsers())
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user);
        dealloc && dealloc->getBlock() == alloc->getBlock())
      return dealloc;
  return {};
}

struct AttnReuseLoopBuffersPass
    : attnfuse::attn::impl::AttnReuseLoopBuffersBase<AttnReuseLoopBuffersPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation()->walk([&](memref::AllocOp alloc) {
      if (alloc.getMemref().getType().hasStaticShape() &&
          alloc.getSymbolOperands().empty())
        allocs.push_back(alloc);
    });
    for (memref::AllocOp alloc : allocs) {
      // Out of each enclosing scf.for whose iteration frees it, innermost
      // first. Never out of a parallel loop: its iterations run at once.
      while (auto loop = dyn_cast<scf::ForOp>(alloc->getParentOp())) {
        memref::DeallocOp dealloc = deallocInBlock(alloc);
        if (!dealloc ||
            failed(lastUseInBlock(alloc, alloc->getBlock(), dealloc)))
          break;
        alloc->moveBefore(loop);
        dealloc->moveAfter(loop);
      }
    }
  }
};

} // namespace
