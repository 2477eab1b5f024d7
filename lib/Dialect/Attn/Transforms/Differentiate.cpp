//===- Differentiate.cpp - vector-Jacobian products of attn functions ----===//
//
// Reverse-mode differentiation of a function of attn ops: the function is
// cloned, its layer ops are decomposed into primitives, and the primitives
// are walked backwards, each contributing the gradients of its operands.
// Gradients of a value read by several ops are summed.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/IR/ShapeUtils.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNDIFFERENTIATE
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse::attn;

namespace {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// The gradients of the values of one function, built backwards at the end
/// of its body.
class GradientBuilder {
public:
  explicit GradientBuilder(OpBuilder &builder) : b(builder) {}

  /// Adds `grad` to the gradient of `value` (float tensors only).
  void accumulate(Location loc, Value value, Value grad) {
    if (!grad || !isFloatTensor(value.getType()))
      return;
    if (grad.getType() != value.getType())
      grad = tensor::CastOp::create(b, loc, value.getType(), grad);
    auto [it, inserted] = grads.try_emplace(value, grad);
    if (!inserted)
      it->second = arith::AddFOp::create(b, loc, it->second, grad);
  }

  /// The gradient of `value`, or null when nothing reads it.
  Value lookup(Value value) {
    gatherSliceGrads(value);
    return grads.lookup(value);
  }

  /// The gradient of `value`, zeros when nothing reads it.
  Value lookupOrZeros(Location loc, Value value) {
    if (Value grad = lookup(value))
      return grad;
    return zerosLike(loc, value);
  }

  Value zerosLike(Location loc, Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    Value empty = tensor::EmptyOp::create(
        b, loc, tensor::getMixedSizes(b, loc, value), type.getElementType());
    Value zero = arith::ConstantOp::create(
        b, loc, type.getElementType(), b.getZeroAttr(type.getElementType()));
    Value filled =
        linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
            .getResult(0);
    if (filled.getType() != type)
      filled = tensor::CastOp::create(b, loc, type, filled);
    return filled;
  }

  /// Adds the gradients of the operands of `op` given those of its results;
  /// fails with a diagnostic on an op it cannot differentiate.
  LogicalResult backprop(Operation *op);

private:
  LogicalResult backpropSlice(tensor::ExtractSliceOp op, Value grad);
  LogicalResult backpropConcat(tensor::ConcatOp op, Value grad);
  void gatherSliceGrads(Value source);
  Value
  concatSliceGrads(Value source,
                   ArrayRef<std::pair<tensor::ExtractSliceOp, Value>> slices);

  OpBuilder &b;
  llvm::DenseMap<Value, Value> grads;
  /// The gradients of the slices of a value, kept until its own gradient is
  /// read: slices that split it into consecutive parts along one dimension
  /// (a fused projection's Q and K columns) give their gradients' concat,
  /// not a zero-filled tensor per slice and their sum.
  llvm::DenseMap<Value, SmallVector<std::pair<tensor::ExtractSliceOp, Value>>>
      sliceGrads;
};

LogicalResult GradientBuilder::backpropSlice(tensor::ExtractSliceOp op,
                                             Value grad) {
  if (!llvm::all_of(op.getMixedStrides(), [](OpFoldResult stride) {
        return isConstantIntValue(stride, 1);
      }))
    return op.emitOpError("cannot be differentiated with non-unit strides");
  if (op.getSourceType().getRank() != op.getResultType().getRank())
    return op.emitOpError(
        "cannot be differentiated when it drops dimensions");
  sliceGrads[op.getSource()].emplace_back(op, grad);
  return success();
}

Value GradientBuilder::concatSliceGrads(
    Value source, ArrayRef<std::pair<tensor::ExtractSliceOp, Value>> slices) {
  auto type = cast<RankedTensorType>(source.getType());
  int64_t rank = type.getRank();
  // The one dimension along which the slices differ; the others whole.
  std::optional<int64_t> splitDim;
  for (int64_t dim = 0; dim < rank; ++dim) {
    bool whole = llvm::all_of(slices, [&](auto sliceAndGrad) {
      tensor::ExtractSliceOp slice = sliceAndGrad.first;
      return isConstantIntValue(slice.getMixedOffsets()[dim], 0) &&
             isWholeDimension(slice.getMixedSizes()[dim], source, dim);
    });
    if (whole)
      continue;
    if (splitDim)
      return Value();
    splitDim = dim;
  }
  if (!splitDim || ShapedType::isDynamic(type.getDimSize(*splitDim)))
    return Value();
  // Consecutive static parts from 0 to the end, each once.
  SmallVector<std::pair<int64_t, Value>> parts;
  for (auto [slice, grad] : slices) {
    std::optional<int64_t> offset =
        getConstantIntValue(slice.getMixedOffsets()[*splitDim]);
    if (!offset || slice.getResultType().isDynamicDim(*splitDim))
      return Value();
    parts.emplace_back(*offset, grad);
  }
  llvm::sort(parts,
             [](const auto &x, const auto &y) { return x.first < y.first; });
  int64_t next = 0;
  SmallVector<Value> inputs;
  for (const auto &[offset, grad] : parts) {
    if (offset != next)
      return Value();
    next += cast<RankedTensorType>(grad.getType()).getDimSize(*splitDim);
    inputs.push_back(grad);
  }
  if (next != type.getDimSize(*splitDim))
    return Value();
  if (inputs.size() == 1)
    return inputs.front();
  tensor::ExtractSliceOp first = slices.front().first;
  return tensor::ConcatOp::create(b, first.getLoc(), *splitDim, inputs)
      .getResult();
}

void GradientBuilder::gatherSliceGrads(Value source) {
  auto it = sliceGrads.find(source);
  if (it == sliceGrads.end())
    return;
  SmallVector<std::pair<tensor::ExtractSliceOp, Value>> slices =
      std::move(it->second);
  sliceGrads.erase(it);
  if (Value whole = concatSliceGrads(source, slices)) {
    accumulate(source.getLoc(), source, whole);
    return;
  }
  // Any other slices: each gradient scattered into zeros.
  for (auto [slice, grad] : slices) {
    Location loc = slice.getLoc();
    Value scattered = tensor::InsertSliceOp::create(
        b, loc, grad, zerosLike(loc, source), slice.getMixedOffsets(),
        slice.getMixedSizes(), slice.getMixedStrides());
    accumulate(loc, source, scattered);
  }
}

LogicalResult GradientBuilder::backpropConcat(tensor::ConcatOp op,
                                              Value grad) {
  Location loc = op.getLoc();
  int64_t dim = op.getDim();
  int64_t rank = op.getResultType().getRank();
  OpFoldResult offset = b.getIndexAttr(0);
  for (Value input : op.getInputs()) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets[dim] = offset;
    // The cotangent's own sizes (the column copies of a device program
    // check that a slice is whole there), the input's along `dim`.
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, grad);
    sizes[dim] = tensor::getMixedSize(b, loc, input, dim);
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    auto inputType = cast<RankedTensorType>(input.getType());
    Value part = tensor::ExtractSliceOp::create(b, loc, inputType, grad,
                                                offsets, sizes, strides);
    accumulate(loc, input, part);
    std::optional<int64_t> known = getConstantIntValue(offset);
    std::optional<int64_t> width = getConstantIntValue(sizes[dim]);
    if (known && width) {
      offset = b.getIndexAttr(*known + *width);
    } else {
      offset = arith::AddIOp::create(
                   b, loc, getValueOrCreateConstantIndexOp(b, loc, offset),
                   getValueOrCreateConstantIndexOp(b, loc, sizes[dim]))
                   .getResult();
    }
  }
  return success();
}

LogicalResult GradientBuilder::backprop(Operation *op) {
  // Nothing reads a result of `op`: nothing to propagate.
  if (llvm::none_of(op->getResults(),
                    [&](Value result) { return lookup(result); }))
    return success();
  Location loc = op->getLoc();
  auto gradOf = [&](Value result) { return lookupOrZeros(loc, result); };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ProjectOp project) {
        auto grad = ProjectGradOp::create(
            b, loc,
            TypeRange{project.getInput().getType(),
                      project.getWeight().getType(),
                      RankedTensorType::get(
                          {cast<RankedTensorType>(project.getWeight().getType())
                               .getDimSize(0)},
                          getElementTypeOrSelf(project.getWeight()))},
            project.getInput(), project.getWeight(),
            gradOf(project.getResult()));
        accumulate(loc, project.getInput(), grad.getInputGrad());
        accumulate(loc, project.getWeight(), grad.getWeightGrad());
        if (Value bias = project.getBias())
          accumulate(loc, bias, grad.getBiasGrad());
        return success();
      })
      .Case([&](CausalConv1DOp conv) {
        auto weightType = cast<RankedTensorType>(conv.getWeight().getType());
        auto grad = CausalConv1DGradOp::create(
            b, loc,
            TypeRange{conv.getInput().getType(), weightType,
                      RankedTensorType::get({weightType.getDimSize(0)},
                                            weightType.getElementType())},
            conv.getInput(), conv.getWeight(), gradOf(conv.getResult()),
            conv.getGroupsAttr(), conv.getPaddingAttr());
        accumulate(loc, conv.getInput(), grad.getInputGrad());
        accumulate(loc, conv.getWeight(), grad.getWeightGrad());
        if (Value bias = conv.getBias())
          accumulate(loc, bias, grad.getBiasGrad());
        return success();
      })
      .Case([&](QKMeanOp mean) {
        Value dq = gradOf(mean.getQ()), dk = gradOf(mean.getK());
        accumulate(loc, mean.getQConv(), dq);
        accumulate(loc, mean.getKConv(), dk);
        auto grad = QKMeanGradOp::create(b, loc, dq, dk);
        accumulate(loc, mean.getQRaw(), grad.getQRawGrad());
        accumulate(loc, mean.getKRaw(), grad.getKRawGrad());
        return success();
      })
      .Case([&](QKNormOp norm) {
        auto grad = QKNormGradOp::create(
            b, loc, norm.getQ(), norm.getK(), norm.getTemp(),
            gradOf(norm.getQOut()), gradOf(norm.getKOut()),
            norm.getTemperatureAttr(), norm.getEpsAttr(), norm.getNormAttr());
        accumulate(loc, norm.getQ(), grad.getQGrad());
        accumulate(loc, norm.getK(), grad.getKGrad());
        accumulate(loc, norm.getTemp(), grad.getTempGrad());
        return success();
      })
      .Case([&](ValueShiftOp shift) -> LogicalResult {
        if (shift.getState())
          return shift.emitOpError(
              "with a decoder's state cannot be differentiated");
        auto grad = ValueShiftGradOp::create(
            b, loc,
            TypeRange{shift.getCurrent().getType(),
                      shift.getPrevious().getType()},
            gradOf(shift.getResult()));
        accumulate(loc, shift.getCurrent(), grad.getCurrentGrad());
        accumulate(loc, shift.getPrevious(), grad.getPreviousGrad());
        return success();
      })
      .Case([&](RoPEOp rope) {
        Value grad = RoPEGradOp::create(b, loc, gradOf(rope.getResult()),
                                        rope.getPositions(), rope.getRope());
        accumulate(loc, rope.getInput(), grad);
        return success();
      })
      .Case([&](MaskTokensOp mask) {
        // Zeroing the padded rows is its own transpose.
        Value grad = MaskTokensOp::create(b, loc, mask.getInput().getType(),
                                          gradOf(mask.getResult()),
                                          mask.getMask());
        accumulate(loc, mask.getInput(), grad);
        return success();
      })
      .Case([&](SDPAOp sdpa) -> LogicalResult {
        if (sdpa.getPositions())
          return sdpa.emitOpError(
              "over a decoder's cache (with positions) cannot be "
              "differentiated");
        SmallVector<Type> types = {sdpa.getQuery().getType(),
                                   sdpa.getKey().getType(),
                                   sdpa.getValue().getType()};
        if (Value bias = sdpa.getBias())
          types.push_back(bias.getType());
        auto grad = SDPAGradOp::create(
            b, loc, types, sdpa.getQuery(), sdpa.getKey(), sdpa.getValue(),
            sdpa.getResult(), gradOf(sdpa.getResult()), sdpa.getBias(),
            sdpa.getKeyMask(), sdpa.getLse(), sdpa.getCausalAttr(),
            sdpa.getWindowAttr(), sdpa.getScaleAttr());
        accumulate(loc, sdpa.getQuery(), grad.getQueryGrad());
        accumulate(loc, sdpa.getKey(), grad.getKeyGrad());
        accumulate(loc, sdpa.getValue(), grad.getValueGrad());
        if (Value bias = sdpa.getBias())
          accumulate(loc, bias, grad.getBiasGrad());
        return success();
      })
      .Case([&](tensor::ExpandShapeOp expand) {
        Value grad = tensor::CollapseShapeOp::create(
            b, loc, expand.getSrcType(), gradOf(expand.getResult()),
            expand.getReassociationIndices());
        accumulate(loc, expand.getSrc(), grad);
        return success();
      })
      .Case([&](tensor::CollapseShapeOp collapse) {
        Value grad = tensor::ExpandShapeOp::create(
            b, loc, collapse.getSrcType(), gradOf(collapse.getResult()),
            collapse.getReassociationIndices(),
            tensor::getMixedSizes(b, loc, collapse.getSrc()));
        accumulate(loc, collapse.getSrc(), grad);
        return success();
      })
      .Case([&](tensor::ExtractSliceOp slice) {
        return backpropSlice(slice, gradOf(slice.getResult()));
      })
      .Case([&](tensor::ConcatOp concat) {
        return backpropConcat(concat, gradOf(concat.getResult()));
      })
      .Case([&](tensor::CastOp cast) {
        accumulate(loc, cast.getSource(), gradOf(cast.getResult()));
        return success();
      })
      .Case([&](arith::AddFOp add) {
        Value grad = gradOf(add.getResult());
        accumulate(loc, add.getLhs(), grad);
        accumulate(loc, add.getRhs(), grad);
        return success();
      })
      .Case([&](arith::SubFOp sub) {
        Value grad = gradOf(sub.getResult());
        accumulate(loc, sub.getLhs(), grad);
        accumulate(loc, sub.getRhs(), arith::NegFOp::create(b, loc, grad));
        return success();
      })
      .Case([&](arith::NegFOp neg) {
        accumulate(loc, neg.getOperand(),
                   arith::NegFOp::create(b, loc, gradOf(neg.getResult())));
        return success();
      })
      .Case([&](func::CallOp call) {
        return call.emitOpError("cannot be differentiated: inline the callee "
                                "@")
               << call.getCallee() << " first (--inline)";
      })
      .Default([&](Operation *other) {
        return other->emitOpError(
            "cannot be differentiated by attn-differentiate");
      });
}

} // namespace

namespace {

struct AttnDifferentiatePass
    : attnfuse::attn::impl::AttnDifferentiateBase<AttnDifferentiatePass> {
  using AttnDifferentiateBase::AttnDifferentiateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> targets;
    if (!function.empty()) {
      auto func = module.lookupSymbol<func::FuncOp>(function);
      if (!func) {
        module.emitError() << "attn-differentiate: no function @" << function;
        return signalPassFailure();
      }
      targets.push_back(func);
    } else {
      for (auto func : module.getOps<func::FuncOp>())
        if (func.isPublic() && !func.isExternal() &&
            !module.lookupSymbol(gradientName(func, residuals)))
          targets.push_back(func);
    }
    for (func::FuncOp func : targets)
      if (failed(differentiate(module, func)))
        return signalPassFailure();
  }

  /// The gradient function's name: `_vjp`, or with residuals `_bwd`.
  static std::string gradientName(func::FuncOp func, bool residuals) {
    return (func.getSymName() + (residuals ? "_bwd" : "_vjp")).str();
  }

  /// The indices of the arguments to differentiate, checked.
  FailureOr<SmallVector<int64_t>> selectArguments(func::FuncOp func) {
    FunctionType type = func.getFunctionType();
    SmallVector<int64_t> selected;
    if (wrt.empty()) {
      for (auto [index, input] : llvm::enumerate(type.getInputs()))
        if (isFloatTensor(input))
          selected.push_back(index);
      return selected;
    }
    for (int64_t index : wrt) {
      if (index < 0 || index >= static_cast<int64_t>(type.getNumInputs()))
        return func.emitError()
               << "attn-differentiate: wrt names argument #" << index
               << ", but @" << func.getSymName() << " has "
               << type.getNumInputs() << " arguments";
      Type input = type.getInput(index);
      if (!isFloatTensor(input))
        return func.emitError()
               << "attn-differentiate: argument #" << index << " of @"
               << func.getSymName() << " (" << input
               << ") is not a floating-point tensor and has no gradient "
                  "(masks, positions, lengths and block tables are not "
                  "differentiable)";
      if (llvm::is_contained(selected, index))
        return func.emitError() << "attn-differentiate: wrt names argument #"
                                << index << " twice";
      selected.push_back(index);
    }
    return selected;
  }

  /// Adds `@<forwardName>`: the function of `func` as the primitives of
  /// `block` (the decomposed clone, before its gradients), returning
  /// `outputs` (values of `block`) after its results.
  static void addForward(ModuleOp module, func::FuncOp func,
                         StringRef forwardName, Block &block,
                         ArrayRef<Value> outputs) {
    OpBuilder builder(module.getContext());
    builder.setInsertionPointAfter(func);
    FunctionType type = func.getFunctionType();
    SmallVector<Type> results(type.getResults());
    for (Value output : outputs)
      results.push_back(output.getType());
    auto forward =
        func::FuncOp::create(builder, func.getLoc(), forwardName,
                             builder.getFunctionType(type.getInputs(), results));
    Block *body = forward.addEntryBlock();
    IRMapping mapping;
    for (unsigned index = 0, e = type.getNumInputs(); index < e; ++index)
      mapping.map(block.getArgument(index), body->getArgument(index));
    builder.setInsertionPointToEnd(body);
    for (Operation &op : block.without_terminator())
      builder.clone(op, mapping);
    SmallVector<Value> returned;
    for (Value result : block.getTerminator()->getOperands())
      returned.push_back(mapping.lookup(result));
    for (Value output : outputs)
      returned.push_back(mapping.lookup(output));
    func::ReturnOp::create(builder, func.getLoc(), returned);
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp func) {
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return func.emitError() << "attn-differentiate: @" << func.getSymName()
                              << " must have a body of one block";
    std::string name = gradientName(func, residuals);
    std::string forwardName = (func.getSymName() + "_fwd").str();
    for (StringRef added : {StringRef(name), StringRef(forwardName)}) {
      if (added == forwardName && !residuals)
        continue;
      if (module.lookupSymbol(added))
        return func.emitError()
               << "attn-differentiate: @" << added << " exists already";
    }
    FunctionType type = func.getFunctionType();
    for (Type result : type.getResults())
      if (!isFloatTensor(result))
        return func.emitError()
               << "attn-differentiate: @" << func.getSymName()
               << " returns " << result
               << ", but only floating-point tensor results take a "
                  "cotangent";
    FailureOr<SmallVector<int64_t>> selected = selectArguments(func);
    if (failed(selected))
      return failure();
    // Decode steps update caches in place and fused kernels are the output
    // of attn-fuse: neither has gradient rules.
    WalkResult refused = func.walk([](Operation *op) {
      if (isa<QKVDecodeOp, CCADecodeOp, CacheUpdateOp, CacheGatherOp,
              StateUpdateOp, FlashDecodeOp, CCADecodePrologueOp>(op)) {
        op->emitOpError("cannot be differentiated: gradients through decode "
                        "steps and KV caches are not supported");
        return WalkResult::interrupt();
      }
      if (isa<FlashAttentionOp, FusedProjectionOp, CCAPrologueOp>(op)) {
        op->emitOpError("is a fused kernel op: run attn-differentiate "
                        "before attn-fuse");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (refused.wasInterrupted())
      return failure();

    // @f_vjp(args..., cotangents...) -> (gradients of the selected args).
    SmallVector<Type> inputs(type.getInputs());
    llvm::append_range(inputs, type.getResults());
    SmallVector<Type> results;
    for (int64_t index : *selected)
      results.push_back(type.getInput(index));
    OpBuilder builder(module.getContext());
    builder.setInsertionPointAfter(func);
    auto vjp = func::FuncOp::create(builder, func.getLoc(), name,
                                    builder.getFunctionType(inputs, results));
    Block *body = vjp.addEntryBlock();
    IRMapping mapping;
    for (auto [from, to] :
         llvm::zip(func.getArguments(), body->getArguments()))
      mapping.map(from, to);
    builder.setInsertionPointToEnd(body);
    for (Operation &op : func.getBody().front())
      builder.clone(op, mapping);

    // The forward as primitives: the gradient rules are per primitive.
    RewritePatternSet patterns(module.getContext());
    populateAttnDecomposePatterns(patterns);
    if (failed(applyPatternsGreedily(vjp, std::move(patterns))))
      return vjp.emitError("attn-differentiate: decomposing the layers did "
                           "not converge");

    Block &block = vjp.getBody().front();
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    // Every attention also returns the log-sum-exp of its rows, which its
    // gradient reads (the fused backward then makes no pass over the keys
    // to recompute it).
    SmallVector<SDPAOp> attentions;
    block.walk([&](SDPAOp sdpa) { attentions.push_back(sdpa); });
    for (SDPAOp &sdpa : attentions) {
      if (sdpa.getLse() || sdpa.getPositions())
        continue;
      auto queryType = cast<RankedTensorType>(sdpa.getQuery().getType());
      auto lseType = RankedTensorType::get(
          {queryType.getDimSize(0), queryType.getDimSize(1),
           queryType.getDimSize(2)},
          builder.getF32Type());
      builder.setInsertionPoint(sdpa);
      auto withLse = SDPAOp::create(
          builder, sdpa.getLoc(), sdpa.getResult().getType(), lseType,
          sdpa.getQuery(), sdpa.getKey(), sdpa.getValue(), sdpa.getBias(),
          sdpa.getPositions(), sdpa.getKeyMask(), sdpa.getCausalAttr(),
          sdpa.getWindowAttr(), sdpa.getScaleAttr());
      sdpa.getResult().replaceAllUsesWith(withLse.getResult());
      sdpa.erase();
      sdpa = withLse;
    }
    // The residuals, which @f_fwd returns: every attention's query, key
    // and value (those that are not arguments), output and log-sum-exp.
    // The backward then reads the attention exactly as the forward computed
    // it (recomputed operands may differ from the forward's fused kernels
    // by rounding, which a log-sum-exp of the forward's scores would not
    // normalize), and does not recompute what only feeds the attention.
    // A K=V key that is the rotated value is not kept: the backward
    // rotates the kept value again (O(S)), so the fused backward sees the
    // K=V form and keeps one gradient for the shared tensor.
    llvm::SetVector<Value> attentionOutputs;
    if (residuals) {
      for (SDPAOp sdpa : attentions) {
        Value key = sdpa.getKey();
        if (auto rope = key.getDefiningOp<RoPEOp>();
            rope && rope.getInput() == sdpa.getValue() && !rope.getPositions())
          key = Value();
        SmallVector<Value> kept = {sdpa.getQuery(), key, sdpa.getValue(),
                                   sdpa.getResult(), sdpa.getLse()};
        for (Value value : kept)
          if (value && !isa<BlockArgument>(value))
            attentionOutputs.insert(value);
      }
      addForward(module, func, forwardName, block,
                 attentionOutputs.getArrayRef());
    }
    builder.setInsertionPoint(ret);
    GradientBuilder grads(builder);
    unsigned numArgs = type.getNumInputs();
    for (auto [index, operand] : llvm::enumerate(ret.getOperands()))
      grads.accumulate(ret.getLoc(), operand, block.getArgument(numArgs + index));

    SmallVector<Operation *> forward;
    for (Operation &op : block.without_terminator())
      forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward))
      if (failed(grads.backprop(op)))
        return failure();

    SmallVector<Value> gradients;
    for (int64_t index : *selected)
      gradients.push_back(
          grads.lookupOrZeros(ret.getLoc(), block.getArgument(index)));
    func::ReturnOp::create(builder, ret.getLoc(), gradients);
    ret.erase();

    // @f_bwd reads the residuals after the arguments, before the
    // cotangents.
    if (residuals) {
      for (auto [index, output] :
           llvm::enumerate(attentionOutputs.takeVector())) {
        BlockArgument residual = block.insertArgument(
            numArgs + index, output.getType(), output.getLoc());
        output.replaceAllUsesWith(residual);
      }
      vjp.setFunctionType(builder.getFunctionType(block.getArgumentTypes(),
                                                  vjp.getResultTypes()));
    }

    // Drop the forward values no gradient reads.
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op))
        op->erase();
    return success();
  }
};

} // namespace
