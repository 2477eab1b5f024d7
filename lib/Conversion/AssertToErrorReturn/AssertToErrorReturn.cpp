//===- AssertToErrorReturn.cpp - failed checks return errors --------------===//
//
// A failed cf.assert aborts the process once lowered by convert-cf-to-llvm.
// A JIT host that wants to report the failure and carry on needs the
// function to stop at the check and return instead: nothing after the check
// may run, since the check guards the memory accesses that follow it.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Conversion/AssertToErrorReturn/AssertToErrorReturn.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTASSERTTOERRORRETURNPASS
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse;

namespace {

bool isAllocationFunction(StringRef name) {
  return name == "malloc" || name == "aligned_alloc" ||
         name == "_mlir_memref_to_llvm_alloc" ||
         name == "_mlir_memref_to_llvm_aligned_alloc";
}

struct ConvertAssertToErrorReturnPass
    : attnfuse::impl::ConvertAssertToErrorReturnPassBase<
          ConvertAssertToErrorReturnPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();

    // The functions that can fail: those with a check (or a checked
    // allocation), then their callers, transitively.
    llvm::StringSet<> failing;
    auto canFailItself = [&](LLVM::LLVMFuncOp func) {
      return func
          .walk([&](Operation *op) {
            if (isa<cf::AssertOp>(op))
              return WalkResult::interrupt();
            if (auto call = dyn_cast<LLVM::CallOp>(op))
              if (checkAllocations && call.getCallee() &&
                  isAllocationFunction(*call.getCallee()))
                return WalkResult::interrupt();
            return WalkResult::advance();
          })
          .wasInterrupted();
    };
    SmallVector<LLVM::LLVMFuncOp> functions;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
      if (func.isExternal())
        continue;
      functions.push_back(func);
      if (canFailItself(func))
        failing.insert(func.getSymName());
    }
    auto callsFailing = [&](LLVM::CallOp call) {
      return call.getCallee() && failing.contains(*call.getCallee());
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (LLVM::LLVMFuncOp func : functions) {
        if (failing.contains(func.getSymName()))
          continue;
        bool calls = func.walk([&](LLVM::CallOp call) {
                           return callsFailing(call) ? WalkResult::interrupt()
                                                     : WalkResult::advance();
                         })
                         .wasInterrupted();
        if (calls) {
          failing.insert(func.getSymName());
          changed = true;
        }
      }
    }
    if (failing.empty())
      return;

    OpBuilder builder(context);
    auto pointerType = LLVM::LLVMPointerType::get(context);
    auto i32Type = IntegerType::get(context, 32);
    FailureOr<LLVM::LLVMFuncOp> failedFn =
        LLVM::lookupOrCreateFn(builder, module, kCheckFailedFunction,
                               {pointerType}, LLVM::LLVMVoidType::get(context));
    FailureOr<LLVM::LLVMFuncOp> pendingFn = LLVM::lookupOrCreateFn(
        builder, module, kCheckPendingFunction, {}, i32Type);
    if (failed(failedFn) || failed(pendingFn)) {
      module.emitError() << "'" << kCheckFailedFunction << "' or '"
                         << kCheckPendingFunction
                         << "' is declared with another signature";
      return signalPassFailure();
    }
    // Declared when a check sits in a parallel region.
    FailureOr<LLVM::LLVMFuncOp> stateFn, failedInFn;
    auto declareParallelHooks = [&]() -> LogicalResult {
      if (succeeded(stateFn))
        return success();
      stateFn = LLVM::lookupOrCreateFn(builder, module, kCallStateFunction, {},
                                       pointerType);
      failedInFn = LLVM::lookupOrCreateFn(
          builder, module, kCheckFailedInFunction, {pointerType, pointerType},
          LLVM::LLVMVoidType::get(context));
      if (failed(stateFn) || failed(failedInFn)) {
        module.emitError() << "'" << kCallStateFunction << "' or '"
                           << kCheckFailedInFunction
                           << "' is declared with another signature";
        return failure();
      }
      return success();
    };

    unsigned messageCount = 0;
    for (LLVM::LLVMFuncOp func : functions) {
      if (!failing.contains(func.getSymName()))
        continue;
      SmallVector<Operation *> sites;
      func.walk([&](Operation *op) {
        if (isa<cf::AssertOp>(op))
          sites.push_back(op);
        else if (auto call = dyn_cast<LLVM::CallOp>(op))
          if (callsFailing(call) || (checkAllocations && call.getCallee() &&
                                     isAllocationFunction(*call.getCallee())))
            sites.push_back(op);
      });
      if (sites.empty())
        continue;

      // One block returns (poison) from the function.
      Region &body = func.getBody();
      Block *returnBlock = new Block();
      body.push_back(returnBlock);
      builder.setInsertionPointToEnd(returnBlock);
      Location loc = func.getLoc();
      Type resultType = func.getFunctionType().getReturnType();
      if (isa<LLVM::LLVMVoidType>(resultType))
        LLVM::ReturnOp::create(builder, loc, ValueRange());
      else
        LLVM::ReturnOp::create(
            builder, loc,
            ValueRange{LLVM::PoisonOp::create(builder, loc, resultType)});

      auto messagePointer = [&](Location at, StringRef message) -> Value {
        std::string name;
        do {
          name = "__attnfuse_check_message_" + std::to_string(messageCount++);
        } while (module.lookupSymbol(name));
        std::string text = message.str();
        text.push_back('\0');
        return LLVM::createGlobalString(at, builder, name, text,
                                        LLVM::Linkage::Internal);
      };
      // A block that reports `message` and returns.
      auto failureBlock = [&](Location at, StringRef message) {
        Block *block = new Block();
        body.push_back(block);
        builder.setInsertionPointToEnd(block);
        Value pointer = messagePointer(at, message);
        LLVM::CallOp::create(builder, at, *failedFn, ValueRange{pointer});
        LLVM::BrOp::create(builder, at, ValueRange(), returnBlock);
        return block;
      };

      // Sites inside a region of an op (the omp.parallel / omp.loop_nest of
      // a parallel loop, run by several threads) cannot return from the
      // function: a failure there is recorded in the calling thread's state
      // and ends the region's iteration, and the function returns right
      // after the op that holds the region.
      Value callState;
      llvm::SetVector<Operation *> parallelOps;
      DenseMap<Region *, Block *> skipBlocks;
      auto skipBlock = [&](Region *region, Location at) -> Block * {
        if (Block *block = skipBlocks.lookup(region))
          return block;
        // Ends the region as its own terminators do (omp.yield,
        // omp.terminator: no operands, no successors).
        Operation *terminator = nullptr;
        for (Block &block : *region) {
          Operation *candidate = &block.back();
          if (candidate->hasTrait<OpTrait::IsTerminator>() &&
              candidate->getNumOperands() == 0 &&
              candidate->getNumSuccessors() == 0) {
            terminator = candidate;
            break;
          }
        }
        if (!terminator)
          return nullptr;
        Block *block = new Block();
        region->push_back(block);
        builder.setInsertionPointToEnd(block);
        builder.clone(*terminator);
        skipBlocks[region] = block;
        return block;
      };
      for (Operation *site : sites) {
        if (site->getParentRegion() == &body)
          continue;
        if (isa<LLVM::CallOp>(site) && callsFailing(cast<LLVM::CallOp>(site))) {
          site->emitOpError()
              << "calls a function that can fail a run-time check from "
                 "inside '"
              << site->getParentOp()->getName()
              << "'; only checks and allocations there can become error "
                 "returns";
          return signalPassFailure();
        }
        if (failed(declareParallelHooks()))
          return signalPassFailure();
        if (!callState) {
          builder.setInsertionPointToStart(&body.front());
          callState = LLVM::CallOp::create(builder, func.getLoc(), *stateFn,
                                           ValueRange())
                          .getResult();
        }
        parallelOps.insert(body.findAncestorOpInRegion(*site));
      }

      for (Operation *site : sites) {
        Block *before = site->getBlock();
        Block *after = before->splitBlock(site->getNextNode());
        Location at = site->getLoc();
        Region *region = site->getParentRegion();
        if (region != &body) {
          Block *skip = skipBlock(region, at);
          if (!skip) {
            site->emitOpError() << "cannot become an error return inside '"
                                << site->getParentOp()->getName()
                                << "': its region has no terminator without "
                                   "operands to end it with";
            return signalPassFailure();
          }
          Block *failure = new Block();
          region->push_back(failure);
          builder.setInsertionPointToEnd(failure);
          StringRef message =
              isa<cf::AssertOp>(site)
                  ? cast<cf::AssertOp>(site).getMsg()
                  : StringRef("out of memory: an allocation of the compiled "
                              "function failed");
          LLVM::CallOp::create(
              builder, at, *failedInFn,
              ValueRange{callState, messagePointer(at, message)});
          LLVM::BrOp::create(builder, at, ValueRange(), skip);
          builder.setInsertionPointToEnd(before);
          if (auto assertOp = dyn_cast<cf::AssertOp>(site)) {
            LLVM::CondBrOp::create(builder, at, assertOp.getArg(), after,
                                   failure);
            assertOp.erase();
          } else {
            auto call = cast<LLVM::CallOp>(site);
            Value null = LLVM::ZeroOp::create(builder, at, pointerType);
            Value isNull = LLVM::ICmpOp::create(
                builder, at, LLVM::ICmpPredicate::eq, call.getResult(), null);
            LLVM::CondBrOp::create(builder, at, isNull, failure, after);
          }
          continue;
        }
        if (auto assertOp = dyn_cast<cf::AssertOp>(site)) {
          Block *failure = failureBlock(at, assertOp.getMsg());
          builder.setInsertionPointToEnd(before);
          LLVM::CondBrOp::create(builder, at, assertOp.getArg(), after,
                                 failure);
          assertOp.erase();
          continue;
        }
        auto call = cast<LLVM::CallOp>(site);
        builder.setInsertionPointToEnd(before);
        if (callsFailing(call)) {
          Value pending =
              LLVM::CallOp::create(builder, at, *pendingFn, ValueRange())
                  .getResult();
          Value zero = LLVM::ConstantOp::create(builder, at, i32Type,
                                                builder.getI32IntegerAttr(0));
          Value failedCall = LLVM::ICmpOp::create(
              builder, at, LLVM::ICmpPredicate::ne, pending, zero);
          LLVM::CondBrOp::create(builder, at, failedCall, returnBlock, after);
          continue;
        }
        Value null = LLVM::ZeroOp::create(builder, at, pointerType);
        Value isNull = LLVM::ICmpOp::create(
            builder, at, LLVM::ICmpPredicate::eq, call.getResult(), null);
        Block *failure = failureBlock(
            at, "out of memory: an allocation of the compiled function "
                "failed");
        builder.setInsertionPointToEnd(before);
        LLVM::CondBrOp::create(builder, at, isNull, failure, after);
      }

      // After a parallel op whose region can fail: return if it did.
      for (Operation *parallelOp : parallelOps) {
        Location at = parallelOp->getLoc();
        Block *before = parallelOp->getBlock();
        Block *after = before->splitBlock(parallelOp->getNextNode());
        builder.setInsertionPointToEnd(before);
        Value pending =
            LLVM::CallOp::create(builder, at, *pendingFn, ValueRange())
                .getResult();
        Value zero = LLVM::ConstantOp::create(builder, at, i32Type,
                                              builder.getI32IntegerAttr(0));
        Value failedRegion = LLVM::ICmpOp::create(
            builder, at, LLVM::ICmpPredicate::ne, pending, zero);
        LLVM::CondBrOp::create(builder, at, failedRegion, returnBlock, after);
      }
    }
  }
};

} // namespace
