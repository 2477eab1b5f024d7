//===- ValueShift.cpp - attn.value_shift and its gradient on sm_90a -*- C++
//-*-===//
//
// CCA's value shift joins each token's value channels with the previous
// token's, and its gradient splits the cotangent back, the delayed half one
// token earlier. Both are copies: one CTA per (token t, sequence b), threads
// over the token's channels.
//   forward   v[b, t] = concat(current[b, t], previous[b, t - 1]), where
//             previous[b, -1] is state[b, 0] when given, else zero
//   gradient  dcurrent[b, t] = dv[b, t, :C]
//             dprevious[b, t] = dv[b, t + 1, C:], zero for the last token
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using Pred = arith::CmpIPredicate;

std::string ValueShiftPlan::key() const {
  return llvm::formatv("value_shift:{0}:{1}:{2}:{3}:{4}", elemName(elem),
                       hostCastFromF32, channels, gradient, hasState)
      .str();
}

FailureOr<ValueShiftPlan>
attnfuse::sm90::planValueShift(Operation *op, const TargetOptions &options,
                               std::string &unsupported) {
  ValueShiftPlan p;
  Value current;
  if (auto shift = dyn_cast<attn::ValueShiftOp>(op)) {
    current = shift.getCurrent();
    p.hasState = static_cast<bool>(shift.getState());
  } else {
    current = cast<attn::ValueShiftGradOp>(op).getCurrentGrad();
    p.gradient = true;
  }
  auto type = cast<RankedTensorType>(current.getType());
  if (failed(p.setElementType(op, type.getElementType(), options)))
    return failure();
  p.channels = type.getDimSize(2);
  if (ShapedType::isDynamic(p.channels)) {
    unsupported = "the sm_90a value-shift kernel needs static channels";
    return failure();
  }
  int64_t items = p.gradient ? p.channels : 2 * p.channels;
  p.threads = std::min<int64_t>(256, (items + 31) / 32 * 32);
  p.name = llvm::formatv("attn_value_shift{0}_{1}_c{2}{3}",
                         p.gradient ? "_grad" : "", elemName(p.elem),
                         p.channels, p.hasState ? "_state" : "")
               .str();
  return p;
}

void attnfuse::sm90::buildValueShiftKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const ValueShiftPlan &p) {
  // Forward: current, previous[, state], result. Gradient: dv, dcurrent,
  // dprevious.
  KernelBody body(
      b, loc, module, p.name,
      KernelSignature(b.getContext()).pointer(p.gradient ? 3 : 3 + p.hasState),
      p.threads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  int64_t c = p.channels;
  Value t = d.ctaid(0), batch = d.ctaid(1), tokens = d.nctaid(0);
  // Element offset of [batch, token, 0] in a [B, S, width] tensor.
  auto rowOf = [&](Value token, int64_t width) {
    return d.rowStart64(batch, tokens, token, width);
  };
  auto copy = [&](Value from, Value to) {
    d.store(d.load(d.elemType, from, 2), to, 2);
  };
  auto zero = [&](Value to) {
    d.store(arith::ConstantOp::create(b, loc, d.elemType,
                                      b.getFloatAttr(d.elemType, 0.0)),
            to, 2);
  };
  if (p.gradient) {
    Value resultGrad = arguments.next();
    Value currentGrad = arguments.next();
    Value previousGrad = arguments.next();
    Value next = d.add(t, 1);
    Value hasNext = d.cmp(Pred::slt, next, tokens);
    // The next token's row is read only when it exists (t + 1 < S).
    Value nextRow = rowOf(d.mins(next, d.sub(tokens, d.c32(1))), 2 * c);
    Value dv = d.gAt(resultGrad, rowOf(t, 2 * c), d.elemType);
    Value dvNext = d.gAt(resultGrad, nextRow, d.elemType);
    Value dCurrent = d.gAt(currentGrad, rowOf(t, c), d.elemType);
    Value dPrevious = d.gAt(previousGrad, rowOf(t, c), d.elemType);
    d.forLoop(
        d.tid(), d.c32(c), d.c32(p.threads), ValueRange(),
        [&](Value i, ValueRange) -> SmallVector<Value> {
          copy(d.gAt(dv, i, d.elemType), d.gAt(dCurrent, i, d.elemType));
          Value out = d.gAt(dPrevious, i, d.elemType);
          d.ifThenElse(
              hasNext,
              [&]() { copy(d.gAt(dvNext, d.add(i, c), d.elemType), out); },
              [&]() { zero(out); });
          return {};
        });
    gpu::ReturnOp::create(b, loc);
    return;
  }
  Value current = arguments.next();
  Value previous = arguments.next();
  Value state = arguments.nextIf(p.hasState);
  Value result = arguments.next();
  Value isFirst = d.cmp(Pred::eq, t, d.c32(0));
  Value cur = d.gAt(current, rowOf(t, c), d.elemType);
  // The previous token's row (row 0 for t = 0, not read then).
  Value prev = d.gAt(previous, rowOf(d.maxs(d.sub(t, d.c32(1)), d.c32(0)), c),
                     d.elemType);
  Value out = d.gAt(result, rowOf(t, 2 * c), d.elemType);
  d.forLoop(d.tid(), d.c32(2 * c), d.c32(p.threads), ValueRange(),
            [&](Value i, ValueRange) -> SmallVector<Value> {
              Value to = d.gAt(out, i, d.elemType);
              d.ifThenElse(
                  d.cmp(Pred::slt, i, d.c32(c)),
                  [&]() { copy(d.gAt(cur, i, d.elemType), to); },
                  [&]() {
                    Value channel = d.sub(i, d.c32(c));
                    d.ifThenElse(
                        isFirst,
                        [&]() {
                          if (!state)
                            return zero(to);
                          Value stateRow = arith::MulIOp::create(
                              b, loc, d.ext64(batch), d.c64(c));
                          copy(d.gAt(d.gAt(state, stateRow, d.elemType),
                                     channel, d.elemType),
                               to);
                        },
                        [&]() { copy(d.gAt(prev, channel, d.elemType), to); });
                  });
              return {};
            });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeValueShift(MLIRContext *ctx, Operation *op,
                                   const ValueShiftPlan &p) {
  StringRef elem = elemName(p.elem);
  Attribute batch = strAttr(ctx, "B"), tokens = strAttr(ctx, "S");
  Attribute narrow = intAttr(ctx, p.channels),
            wide = intAttr(ctx, 2 * p.channels);
  SmallVector<Attribute> tensors, params;
  auto add = [&](StringRef name, StringRef role, int64_t operand,
                 ArrayRef<Attribute> shape) {
    tensors.push_back(describeTensor(ctx, name, role, operand, elem, shape));
    params.push_back(describeParam(ctx, name, "pointer", elem, name));
  };
  if (p.gradient) {
    add("result_grad", "cotangent of the shifted values", 0,
        {batch, tokens, wide});
    add("current_grad", "result", -1, {batch, tokens, narrow});
    add("previous_grad", "result", -1, {batch, tokens, narrow});
  } else {
    add("current", "input", 0, {batch, tokens, narrow});
    add("previous", "input", 1, {batch, tokens, narrow});
    if (p.hasState)
      add("state", "the previous token of each sequence's first", 2,
          {batch, intAttr(ctx, 1), narrow});
    add("result", "result", -1, {batch, tokens, wide});
  }
  (void)op;
  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "S", 1),
                                 gridCeilDiv(ctx, "B", 1)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("channels", p.channels)
      .setBool("gradient", p.gradient)
      .setBool("state", p.hasState)
      .set("cta", "one per (token, sequence); threads over its channels");
  return describeLaunch(ctx,
                        {p.name,
                         p.gradient ? "value_shift_grad" : "value_shift",
                         "B = batch, S = tokens per sequence", p.threads},
                        {grid, params, tensors}, config.get(),
                        {p.hostCastFromF32, p.gradient ? "outputs" : "output"});
}
