//===- Conv.cpp - attn.causal_conv1d on sm_90a ------------------*- C++ -*-===//
//
// The grouped causal convolution over time as a SIMT kernel: one CTA per
// (output time step t, sequence b); its threads stride over the output
// channels o, each summing in f32
//   y[b, t, o] = bias[o] + sum_k sum_i w[o, i, k] x[b, t + k - padding, g Cg +
//   i]
// (g = o / Cg, x zero outside [0, S)) over the k taps and the Cg input
// channels of o's group, and rounding once to the element type. Depthwise
// convolutions (Cg = 1) are k products per output; the grouped ones of a
// CCA layer (Cg = head_dim) are k * head_dim, small against the attention.
// Threads of a warp share a group's inputs (one broadcast load each).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using attn::CausalConv1DOp;
using Pred = arith::CmpIPredicate;

std::string ConvPlan::key() const {
  return llvm::formatv("conv:{0}:{1}:{2}:{3}:{4}:{5}:{6}", elemName(elem),
                       hostCastFromF32, channels, groupWidth, taps, padding,
                       hasBias)
      .str();
}

static LaunchSymbols convSymbols(MLIRContext *ctx, CausalConv1DOp op) {
  LaunchSymbols sym(ctx);
  sym.dim(op.getInput(), 0, "batch");
  sym.dim(op.getInput(), 1, "input time steps");
  return sym;
}

FailureOr<ConvPlan> attnfuse::sm90::planCausalConv1d(
    CausalConv1DOp op, const TargetOptions &options, std::string &unsupported) {
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  auto weightType = cast<RankedTensorType>(op.getWeight().getType());
  ConvPlan p;
  FailureOr<ElemKind> elem = kernelElemKind(op, inputType.getElementType(),
                                            options, p.hostCastFromF32);
  if (failed(elem))
    return failure();
  p.elem = *elem;
  p.channels = inputType.getDimSize(2);
  p.groupWidth = weightType.getDimSize(1);
  p.taps = weightType.getDimSize(2);
  if (ShapedType::isDynamic(p.channels) ||
      ShapedType::isDynamic(p.groupWidth) || ShapedType::isDynamic(p.taps)) {
    unsupported = "the sm_90a convolution kernel needs static channels and "
                  "a static weight";
    return failure();
  }
  p.padding = op.getPadding();
  p.hasBias = static_cast<bool>(op.getBias());
  p.threads = std::min<int64_t>(256, (p.channels + 31) / 32 * 32);
  p.name = llvm::formatv("attn_conv_{0}_c{1}_g{2}_k{3}_p{4}{5}",
                         elemName(p.elem), p.channels, p.groupWidth, p.taps,
                         p.padding, p.hasBias ? "_bias" : "")
               .str();
  return p;
}

void attnfuse::sm90::buildCausalConv1dKernel(OpBuilder &b, Location loc,
                                             gpu::GPUModuleOp module,
                                             const ConvPlan &p) {
  // input, weight[, bias], output, input time steps.
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext())
                      .pointer(2)
                      .pointer(1, p.hasBias)
                      .pointer()
                      .scalar(),
                  p.threads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value input = arguments.next();
  Value weight = arguments.next();
  Value bias = arguments.nextIf(p.hasBias);
  Value output = arguments.next();
  Value steps = arguments.next();

  Value t = d.ctaid(0), batch = d.ctaid(1), outSteps = d.nctaid(0);
  int64_t c = p.channels, cg = p.groupWidth, k = p.taps;
  auto rowOf = [&](Value sequenceSteps, Value step) {
    // Element offset of [batch, step, 0] in a [B, steps, C] tensor (64-bit:
    // a tensor may pass 2^31 elements).
    Value row = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, d.ext64(batch), d.ext64(sequenceSteps)),
        d.ext64(step));
    return arith::MulIOp::create(b, loc, row, d.c64(c)).getResult();
  };
  Value in = d.gAt(input, rowOf(steps, d.c32(0)), d.elemType);
  Value out = d.gAt(output, rowOf(outSteps, t), d.elemType);
  auto widen = [&](Value v) {
    return arith::ExtFOp::create(b, loc, d.f32, v).getResult();
  };
  d.forLoop(
      d.tid(), d.c32(c), d.c32(p.threads), ValueRange(),
      [&](Value o, ValueRange) -> SmallVector<Value> {
        Value acc =
            p.hasBias ? widen(d.load(d.elemType, d.gAt(bias, o, d.elemType), 2))
                      : d.cf(0.0);
        Value firstInput = d.mul(d.divu(o, cg), cg);
        Value taps = d.gAt(weight, d.mul(o, cg * k), d.elemType);
        for (int64_t tap = 0; tap < k; ++tap) {
          Value source = d.add(t, tap - p.padding);
          Value inside = d.andb(d.cmp(Pred::sge, source, d.c32(0)),
                                d.cmp(Pred::slt, source, steps));
          SmallVector<Value> summed = d.ifThenElseValues(
              inside, TypeRange{d.f32},
              [&]() -> SmallVector<Value> {
                Value row =
                    d.gAt(in, d.add(d.mul(source, c), firstInput), d.elemType);
                return d.forLoop(
                    d.c32(0), d.c32(cg), d.c32(1), ValueRange{acc},
                    [&](Value i, ValueRange sums) -> SmallVector<Value> {
                      Value x = widen(
                          d.load(d.elemType, d.gAt(row, i, d.elemType), 2));
                      Value w = widen(d.load(
                          d.elemType,
                          d.gAt(taps, d.add(d.mul(i, k), tap), d.elemType), 2));
                      return {d.fma(w, x, sums[0])};
                    });
              },
              [&]() -> SmallVector<Value> { return {acc}; });
          acc = summed[0];
        }
        d.store(arith::TruncFOp::create(b, loc, d.elemType, acc),
                d.gAt(out, o, d.elemType), 2);
        return {};
      });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr attnfuse::sm90::describeCausalConv1d(MLIRContext *ctx,
                                                            CausalConv1DOp op,
                                                            const ConvPlan &p) {
  StringRef elem = elemName(p.elem);
  LaunchSymbols sym = convSymbols(ctx, op);
  Attribute batch = sym.dim(op.getInput(), 0, "batch");
  Attribute steps = sym.dim(op.getInput(), 1, "input time steps");
  // seq + padding - (k - 1) output steps.
  int64_t shift = p.padding - (p.taps - 1);
  Attribute outSteps;
  if (auto known = dyn_cast<IntegerAttr>(steps))
    outSteps = intAttr(ctx, known.getInt() + shift);
  else
    outSteps = shift == 0
                   ? steps
                   : strAttr(ctx, sizeText(steps) + (shift > 0 ? "+" : "") +
                                      std::to_string(shift));
  Attribute channels = intAttr(ctx, p.channels);
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "input", "input", 0, elem, {batch, steps, channels}),
      describeTensor(
          ctx, "weight", "weight [channels, channels / groups, k]", 1, elem,
          {channels, intAttr(ctx, p.groupWidth), intAttr(ctx, p.taps)})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "input", "pointer", elem, "input"),
      describeParam(ctx, "weight", "pointer", elem, "weight")};
  if (p.hasBias) {
    tensors.push_back(describeTensor(ctx, "bias", "bias", 2, elem, {channels}));
    params.push_back(describeParam(ctx, "bias", "pointer", elem, "bias"));
  }
  tensors.push_back(describeTensor(ctx, "output", "result", -1, elem,
                                   {batch, outSteps, channels}));
  params.push_back(describeParam(ctx, "output", "pointer", elem, "output"));
  params.push_back(
      describeParam(ctx, "steps", "scalar", "i32", sizeText(steps)));
  SmallVector<Attribute> grid = {gridEntry(ctx, outSteps),
                                 gridEntry(ctx, batch)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("channels", p.channels)
      .set("groups", p.channels / p.groupWidth)
      .set("kernel_size", p.taps)
      .set("padding", p.padding)
      .setBool("bias", p.hasBias)
      .set("cta", "one per (output time step, sequence); threads stride "
                  "over the output channels, f32 sums");
  return describeLaunch(
      ctx, {p.name, "causal_conv1d", sym.describe(), p.threads},
      {grid, params, tensors}, config.get(), {p.hostCastFromF32});
}
