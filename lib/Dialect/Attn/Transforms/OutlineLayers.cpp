//===- OutlineLayers.cpp - one function per distinct attn layer -----------===//
//
// A model repeats the same layer with different weights. Lowered in place,
// every occurrence becomes its own copy of the tiled loops, and the JIT
// compiles the same code once per layer. Outlining each distinct layer into
// a function called once per occurrence compiles it once. The element-wise
// tensor ops between the layers (the residual adds) repeat as well: their
// vectorized loops, once per layer in the calling function, cost LLVM as
// much as a layer; they are outlined the same way.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNOUTLINELAYERS
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

namespace {

bool isLayerOp(Operation *op) {
  return isa<QKVAttentionOp, CCAOp, QKVDecodeOp, CCADecodeOp>(op);
}

/// An element-wise op on tensors, such as a residual `arith.addf`.
bool isElementwiseTensorOp(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() > 0 &&
         llvm::all_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
}

/// Two layers compile to the same code when they agree in everything but
/// their operands and locations.
bool isSameLayer(Operation *a, Operation *b) {
  return a->getName() == b->getName() &&
         a->getOperandTypes() == b->getOperandTypes() &&
         OperationEquivalence::isEquivalentTo(
             a, b, OperationEquivalence::ignoreValueEquivalence,
             /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

struct AttnOutlineLayersPass
    : attn::impl::AttnOutlineLayersBase<AttnOutlineLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (minUses < 1) {
      module.emitError("attn-outline-layers: min-uses must be positive, got ")
          << minUses;
      return signalPassFailure();
    }

    // Group the layer and element-wise tensor ops of every function, in
    // program order.
    SmallVector<SmallVector<Operation *>> groups;
    module.walk([&](Operation *op) {
      if (!isLayerOp(op) && !isElementwiseTensorOp(op))
        return;
      for (SmallVector<Operation *> &group : groups) {
        if (isSameLayer(group.front(), op)) {
          group.push_back(op);
          return;
        }
      }
      groups.push_back({op});
    });

    SymbolTable symbols(module);
    OpBuilder builder(module.getContext());
    llvm::StringMap<unsigned> layersOfKind;
    for (SmallVector<Operation *> &group : groups) {
      if (static_cast<int64_t>(group.size()) < minUses)
        continue;
      Operation *first = group.front();
      StringRef kind = first->getName().stripDialect();
      std::string name = (kind + (isLayerOp(first) ? "_layer_" : "_") +
                          Twine(layersOfKind[kind]++))
                             .str();
      func::FuncOp layer = outline(builder, module, first, name);
      // A clash with a symbol of the input renames the new function.
      symbols.insert(layer);
      for (Operation *op : group) {
        builder.setInsertionPoint(op);
        auto call = func::CallOp::create(builder, op->getLoc(), layer,
                                         op->getOperands());
        op->replaceAllUsesWith(call.getResults());
        op->erase();
      }
    }
  }

  /// A private function holding a copy of `op` over its arguments.
  func::FuncOp outline(OpBuilder &builder, ModuleOp module, Operation *op,
                       StringRef name) {
    MLIRContext *context = module.getContext();
    auto type =
        FunctionType::get(context, op->getOperandTypes(), op->getResultTypes());
    builder.setInsertionPointToEnd(module.getBody());
    auto func = func::FuncOp::create(builder, op->getLoc(), name, type);
    func.setPrivate();
    Block *body = func.addEntryBlock();
    IRMapping mapping;
    mapping.map(op->getOperands(), body->getArguments());
    builder.setInsertionPointToStart(body);
    Operation *copy = builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op->getLoc(), copy->getResults());
    return func;
  }
};

} // namespace
