//===- Conv.cpp - attn.causal_conv1d and its gradient on sm_90a -*- C++ -*-===//
//
// The grouped causal convolution over time as SIMT kernels.
//
// Forward: one CTA per (output time step t, sequence b); its threads stride
// over the output channels o, each summing in f32 over the k taps and the Cg
// input channels of o's group g = o / Cg
//   y[b, t, o] = bias[o] + sum_k sum_i w[o, i, k] x[b, t + k - padding, g Cg +
//   i]
// (x zero outside [0, S)) and rounding once to the element type. Depthwise
// convolutions (Cg = 1) are k products per output. Threads of a warp share
// a group's inputs (one broadcast load each).
//
// Gradient: the input gradient with the same layout over the input steps
// (the correlation with the flipped kernel), then the weight and bias
// gradients, a thread per element summing over every sequence and output
// step in a fixed order, so every run gives the same bits.
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
  return llvm::formatv("conv:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}", elemName(elem),
                       hostCastFromF32, channels, groupWidth, taps, padding,
                       hasBias, gradient)
      .str();
}

/// `steps + shift` as a size: a number, or an expression of the symbol.
static Attribute shiftedSteps(MLIRContext *ctx, Attribute steps,
                              int64_t shift) {
  if (auto known = dyn_cast<IntegerAttr>(steps))
    return intAttr(ctx, known.getInt() + shift);
  if (shift == 0)
    return steps;
  return strAttr(ctx, sizeText(steps) + (shift > 0 ? "+" : "") +
                          std::to_string(shift));
}

/// The sizes a convolution launch names: the batch, the input's and the
/// output's steps, the channels and the weight's shape. `named`'s steps are
/// the symbol S (a launch binds its sizes from an operand): the input's
/// (`namedIsOutput` false) or the cotangent's, the output's.
struct ConvLaunchSizes {
  ConvLaunchSizes(MLIRContext *ctx, const ConvPlan &p, Value named,
                  bool namedIsOutput)
      : sym(ctx) {
    int64_t shift = p.padding - (p.taps - 1);
    batch = sym.dim(named, 0, "batch");
    Attribute own = sym.dim(
        named, 1, namedIsOutput ? "output time steps" : "input time steps");
    steps = namedIsOutput ? shiftedSteps(ctx, own, -shift) : own;
    outSteps = namedIsOutput ? own : shiftedSteps(ctx, own, shift);
    channels = intAttr(ctx, p.channels);
    weight = {channels, intAttr(ctx, p.groupWidth), intAttr(ctx, p.taps)};
  }
  LaunchSymbols sym;
  Attribute batch, steps, outSteps, channels;
  SmallVector<Attribute> weight;
};

static DictBuilder convConfig(MLIRContext *ctx, const ConvPlan &p) {
  DictBuilder config(ctx);
  config.set("elem_type", elemName(p.elem))
      .set("channels", p.channels)
      .set("groups", p.channels / p.groupWidth)
      .set("kernel_size", p.taps)
      .set("padding", p.padding);
  return config;
}

/// The plan of attn.causal_conv1d or (`gradient`) attn.causal_conv1d_grad,
/// whose input and weight are `input` and `weight`.
static FailureOr<ConvPlan> planConv(Operation *op, Value input, Value weight,
                                    bool hasBias, int64_t padding,
                                    bool gradient, const TargetOptions &options,
                                    std::string &unsupported) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  ConvPlan p;
  p.gradient = gradient;
  if (failed(p.setElementType(op, inputType.getElementType(), options)))
    return failure();
  p.channels = inputType.getDimSize(2);
  p.groupWidth = weightType.getDimSize(1);
  p.taps = weightType.getDimSize(2);
  if (ShapedType::isDynamic(p.channels) ||
      ShapedType::isDynamic(p.groupWidth) || ShapedType::isDynamic(p.taps)) {
    unsupported = "the sm_90a convolution kernel needs static channels and "
                  "a static weight";
    return failure();
  }
  p.padding = padding;
  p.hasBias = hasBias;
  p.threads = std::min<int64_t>(256, (p.channels + 31) / 32 * 32);
  p.name = llvm::formatv("attn_conv_{0}_c{1}_g{2}_k{3}_p{4}{5}",
                         elemName(p.elem), p.channels, p.groupWidth, p.taps,
                         p.padding, p.hasBias ? "_bias" : "")
               .str();
  if (gradient) {
    p.name = llvm::formatv("attn_conv_grad_{0}_c{1}_g{2}_k{3}_p{4}",
                           elemName(p.elem), p.channels, p.groupWidth, p.taps,
                           p.padding)
                 .str();
    p.weightGradName = p.name + "_dw";
    p.weightSumName = p.name + "_dw_sum";
    p.name += "_dx";
    // Enough CTAs for two waves over 132 SMs at batch 1: a depthwise
    // weight has few elements, so its output steps are split instead.
    int64_t itemBlocks =
        llvm::divideCeil(p.gradItems(), ConvPlan::kWeightGradThreads);
    p.tokenChunks = std::clamp<int64_t>(llvm::divideCeil(264, itemBlocks), 1,
                                        ConvPlan::kMaxTokenChunks);
  }
  return p;
}

FailureOr<ConvPlan> attnfuse::sm90::planCausalConv1d(
    CausalConv1DOp op, const TargetOptions &options, std::string &unsupported) {
  return planConv(op, op.getInput(), op.getWeight(),
                  static_cast<bool>(op.getBias()), op.getPadding(),
                  /*gradient=*/false, options, unsupported);
}

FailureOr<ConvPlan>
attnfuse::sm90::planCausalConv1dGrad(attn::CausalConv1DGradOp op,
                                     const TargetOptions &options,
                                     std::string &unsupported) {
  return planConv(op, op.getInput(), op.getWeight(), /*hasBias=*/false,
                  op.getPadding(), /*gradient=*/true, options, unsupported);
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
  Value in = d.gAt(input, d.rowStart64(batch, steps, d.c32(0), c), d.elemType);
  Value out = d.gAt(output, d.rowStart64(batch, outSteps, t, c), d.elemType);
  d.forLoop(d.tid(), d.c32(c), d.c32(p.threads), ValueRange(),
            [&](Value o, ValueRange) -> SmallVector<Value> {
              Value acc = p.hasBias ? d.loadF32(bias, o) : d.cf(0.0);
              Value firstInput = d.mul(d.divu(o, cg), cg);
              Value taps = d.gAt(weight, d.mul(o, cg * k), d.elemType);
              for (int64_t tap = 0; tap < k; ++tap) {
                Value source = d.add(t, tap - p.padding);
                Value inside = d.andb(d.cmp(Pred::sge, source, d.c32(0)),
                                      d.cmp(Pred::slt, source, steps));
                SmallVector<Value> summed = d.ifThenElseValues(
                    inside, TypeRange{d.f32},
                    [&]() -> SmallVector<Value> {
                      Value row = d.gAt(in, d.add(d.mul(source, c), firstInput),
                                        d.elemType);
                      return d.forLoop(
                          d.c32(0), d.c32(cg), d.c32(1), ValueRange{acc},
                          [&](Value i, ValueRange sums) -> SmallVector<Value> {
                            Value x = d.loadF32(row, i);
                            Value w = d.loadF32(taps, d.add(d.mul(i, k), tap));
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
  ConvLaunchSizes z(ctx, p, op.getInput(), /*namedIsOutput=*/false);
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "input", "input", 0, elem,
                     {z.batch, z.steps, z.channels}),
      describeTensor(ctx, "weight", "weight [channels, channels / groups, k]",
                     1, elem, z.weight)};
  SmallVector<Attribute> params = {
      describeParam(ctx, "input", "pointer", elem, "input"),
      describeParam(ctx, "weight", "pointer", elem, "weight")};
  if (p.hasBias) {
    tensors.push_back(
        describeTensor(ctx, "bias", "bias", 2, elem, {z.channels}));
    params.push_back(describeParam(ctx, "bias", "pointer", elem, "bias"));
  }
  tensors.push_back(describeTensor(ctx, "output", "result", -1, elem,
                                   {z.batch, z.outSteps, z.channels}));
  params.push_back(describeParam(ctx, "output", "pointer", elem, "output"));
  params.push_back(
      describeParam(ctx, "steps", "scalar", "i32", sizeText(z.steps)));
  SmallVector<Attribute> grid = {gridEntry(ctx, z.outSteps),
                                 gridEntry(ctx, z.batch)};
  DictBuilder config = convConfig(ctx, p);
  config.setBool("bias", p.hasBias)
      .set("cta", "one per (output time step, sequence); threads stride "
                  "over the output channels, f32 sums");
  return describeLaunch(
      ctx, {p.name, "causal_conv1d", z.sym.describe(), p.threads},
      {grid, params, tensors}, config.get(), {p.hostCastFromF32});
}

//===----------------------------------------------------------------------===//
// The gradient: dx, then dw and db
//===----------------------------------------------------------------------===//

void attnfuse::sm90::buildCausalConv1dInputGradKernel(OpBuilder &b,
                                                      Location loc,
                                                      gpu::GPUModuleOp module,
                                                      const ConvPlan &p) {
  // weight, result_grad, input_grad, output steps.
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext()).pointer(3).scalar(),
                  p.threads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value weight = arguments.next();
  Value resultGrad = arguments.next();
  Value inputGrad = arguments.next();
  Value outSteps = arguments.next();

  // dx[b, s, ci] = sum_k sum_cl w[g Cg + cl, ci mod Cg, k] dy[b, s + padding
  // - k, g Cg + cl] over the output steps that exist.
  Value s = d.ctaid(0), batch = d.ctaid(1), inSteps = d.nctaid(0);
  int64_t c = p.channels, cg = p.groupWidth, k = p.taps;
  Value dy =
      d.gAt(resultGrad, d.rowStart64(batch, outSteps, d.c32(0), c), d.elemType);
  Value dx = d.gAt(inputGrad, d.rowStart64(batch, inSteps, s, c), d.elemType);
  d.forLoop(
      d.tid(), d.c32(c), d.c32(p.threads), ValueRange(),
      [&](Value ci, ValueRange) -> SmallVector<Value> {
        Value firstOutput = d.mul(d.divu(ci, cg), cg);
        Value within = d.remu(ci, cg);
        Value acc = d.cf(0.0);
        for (int64_t tap = 0; tap < k; ++tap) {
          Value t = d.add(s, p.padding - tap);
          Value inside = d.andb(d.cmp(Pred::sge, t, d.c32(0)),
                                d.cmp(Pred::slt, t, outSteps));
          acc =
              d.ifThenElseValues(
                   inside, TypeRange{d.f32},
                   [&]() -> SmallVector<Value> {
                     Value row =
                         d.gAt(dy, d.add(d.mul(t, c), firstOutput), d.elemType);
                     return d.forLoop(
                         d.c32(0), d.c32(cg), d.c32(1), ValueRange{acc},
                         [&](Value cl, ValueRange sums) -> SmallVector<Value> {
                           Value g = d.loadF32(row, cl);
                           // w[firstOutput + cl, within, tap].
                           Value at = d.add(
                               d.mul(d.add(d.mul(d.add(firstOutput, cl), cg),
                                           within),
                                     k),
                               tap);
                           Value w = d.loadF32(weight, at);
                           return {d.fma(w, g, sums[0])};
                         });
                   },
                   [&]() -> SmallVector<Value> { return {acc}; })
                  .front();
        }
        d.store(arith::TruncFOp::create(b, loc, d.elemType, acc),
                d.gAt(dx, ci, d.elemType), 2);
        return {};
      });
  gpu::ReturnOp::create(b, loc);
}

/// A weight-gradient kernel: three pointers and an i32 (`args`), a thread
/// per item: items [0, C Cg k) are the weight's elements (o, cl, tap), the
/// next C the bias's. `body` runs for the items that exist.
static void buildItemKernel(
    OpBuilder &b, Location loc, gpu::GPUModuleOp module, StringRef name,
    const ConvPlan &p,
    llvm::function_ref<void(DeviceBuilder &, ArrayRef<Value>, Value)> body) {
  KernelBody kernel(b, loc, module, name,
                    KernelSignature(b.getContext()).pointer(3).scalar(),
                    ConvPlan::kWeightGradThreads, /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = kernel.d;
  SmallVector<Value> args;
  for (int i = 0; i < 4; ++i)
    args.push_back(kernel.arguments.next());
  Value item = d.add(d.mul(d.ctaid(0), ConvPlan::kWeightGradThreads), d.tid());
  d.ifThen(d.cmp(Pred::slt, item, d.c32(p.gradItems())),
           [&]() { body(d, args, item); });
  gpu::ReturnOp::create(b, loc);
}

/// Element (row, item) of the f32 partials `[batch * chunks, items]`.
static Value partialAt(DeviceBuilder &d, const ConvPlan &p, Value partials,
                       Value row, Value item) {
  Value at = d.add(d.mul(d.ext64(row), d.c64(p.gradItems())), d.ext64(item));
  return d.gAt(partials, at, d.f32);
}

void attnfuse::sm90::buildCausalConv1dWeightGradKernel(OpBuilder &b,
                                                       Location loc,
                                                       gpu::GPUModuleOp module,
                                                       const ConvPlan &p) {
  // input, result_grad, partials, input steps. CTA (x, chunk, seq) sums its
  // items over the chunk's output steps of one sequence, in order.
  int64_t c = p.channels, cg = p.groupWidth, k = p.taps;
  int64_t weights = p.weightElements();
  buildItemKernel(
      b, loc, module, p.weightGradName, p,
      [&](DeviceBuilder &d, ArrayRef<Value> args, Value item) {
        Value inSteps = args[3];
        Value outSteps = d.add(inSteps, p.padding - (k - 1));
        Value chunk = d.ctaid(1), seq = d.ctaid(2);
        Value chunkSteps = d.ceilDivs(outSteps, p.tokenChunks);
        Value first = d.mul(chunk, chunkSteps);
        Value end = d.mins(d.add(first, chunkSteps), outSteps);
        Value x =
            d.gAt(args[0], d.rowStart64(seq, inSteps, d.c32(0), c), d.elemType);
        Value dy = d.gAt(args[1], d.rowStart64(seq, outSteps, d.c32(0), c),
                         d.elemType);
        auto sumSteps = [&](const std::function<Value(Value, Value)> &term) {
          return d
              .forLoop(first, end, d.c32(1), ValueRange{d.cf(0.0)},
                       [&](Value t, ValueRange acc) -> SmallVector<Value> {
                         return {term(t, acc[0])};
                       })
              .front();
        };
        auto weightTerm = [&]() -> SmallVector<Value> {
          Value o = d.divu(item, cg * k);
          Value cl = d.remu(d.divu(item, k), cg);
          Value tap = d.remu(item, k);
          Value column = d.add(d.mul(d.divu(o, cg), cg), cl);
          return {sumSteps([&](Value t, Value acc) {
            // xp[t + tap] = x[t + tap - padding], 0 outside.
            Value src = d.add(d.add(t, tap), -p.padding);
            Value inside = d.andb(d.cmp(Pred::sge, src, d.c32(0)),
                                  d.cmp(Pred::slt, src, inSteps));
            return d
                .ifThenElseValues(
                    inside, TypeRange{d.f32},
                    [&]() -> SmallVector<Value> {
                      Value g = d.loadF32(dy, d.add(d.mul(t, c), o));
                      Value xv = d.loadF32(x, d.add(d.mul(src, c), column));
                      return {d.fma(g, xv, acc)};
                    },
                    [&]() -> SmallVector<Value> { return {acc}; })
                .front();
          })};
        };
        auto biasTerm = [&]() -> SmallVector<Value> {
          Value o = d.sub(item, d.c32(weights));
          return {sumSteps([&](Value t, Value acc) {
            return d.addf(acc, d.loadF32(dy, d.add(d.mul(t, c), o)));
          })};
        };
        Value sum = d.ifThenElseValues(d.cmp(Pred::slt, item, d.c32(weights)),
                                       TypeRange{d.f32}, weightTerm, biasTerm)
                        .front();
        Value row = d.add(d.mul(seq, p.tokenChunks), chunk);
        d.store(sum, partialAt(d, p, args[2], row, item), 4);
      });
}

void attnfuse::sm90::buildCausalConv1dWeightSumKernel(OpBuilder &b,
                                                      Location loc,
                                                      gpu::GPUModuleOp module,
                                                      const ConvPlan &p) {
  // partials, weight_grad, bias_grad, batch. A thread sums its item's
  // partials, rows (sequence, chunk) in order: the same bits every run.
  int64_t weights = p.weightElements();
  buildItemKernel(
      b, loc, module, p.weightSumName, p,
      [&](DeviceBuilder &d, ArrayRef<Value> args, Value item) {
        Value rows = d.mul(args[3], p.tokenChunks);
        Value sum =
            d.forLoop(d.c32(0), rows, d.c32(1), ValueRange{d.cf(0.0)},
                      [&](Value row, ValueRange acc) -> SmallVector<Value> {
                        Value part = d.load(
                            d.f32, partialAt(d, p, args[0], row, item), 4);
                        return {d.addf(acc[0], part)};
                      })
                .front();
        Value rounded = arith::TruncFOp::create(d.b, d.loc, d.elemType, sum);
        d.ifThenElse(
            d.cmp(Pred::slt, item, d.c32(weights)),
            [&]() { d.store(rounded, d.gAt(args[1], item, d.elemType), 2); },
            [&]() {
              d.store(rounded,
                      d.gAt(args[2], d.sub(item, d.c32(weights)), d.elemType),
                      2);
            });
      });
}

attn::KernelLaunchAttr attnfuse::sm90::describeCausalConv1dInputGrad(
    MLIRContext *ctx, attn::CausalConv1DGradOp op, const ConvPlan &p) {
  StringRef elem = elemName(p.elem);
  // S is the cotangent's steps (a launch binds its sizes from its operands);
  // the input has S - (padding - (k - 1)).
  ConvLaunchSizes z(ctx, p, op.getResultGrad(), /*namedIsOutput=*/true);
  // Operands of the launch: (weight, result_grad).
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "weight", "weight [channels, channels / groups, k]",
                     0, elem, z.weight),
      describeTensor(ctx, "result_grad", "cotangent of the convolution", 1,
                     elem, {z.batch, z.outSteps, z.channels}),
      describeTensor(ctx, "input_grad", "result", -1, elem,
                     {z.batch, z.steps, z.channels})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "weight", "pointer", elem, "weight"),
      describeParam(ctx, "result_grad", "pointer", elem, "result_grad"),
      describeParam(ctx, "input_grad", "pointer", elem, "input_grad"),
      describeParam(ctx, "output_steps", "scalar", "i32",
                    sizeText(z.outSteps))};
  SmallVector<Attribute> grid = {gridEntry(ctx, z.steps),
                                 gridEntry(ctx, z.batch)};
  DictBuilder config = convConfig(ctx, p);
  config.set("cta", "one per (input time step, sequence); threads stride "
                    "over the input channels, f32 sums");
  return describeLaunch(
      ctx, {p.name, "causal_conv1d_input_grad", z.sym.describe(), p.threads},
      {grid, params, tensors}, config.get(), {p.hostCastFromF32});
}

RankedTensorType ConvPlan::partialsType(attn::CausalConv1DGradOp op) const {
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  return RankedTensorType::get(
      {inputType.getDimSize(0), tokenChunks, gradItems()},
      Float32Type::get(op.getContext()));
}

/// The f32 partial sums between the two weight-gradient kernels:
/// `[batch, chunks, weight elements + channels]`.
static attn::KernelTensorAttr partialsTensor(MLIRContext *ctx,
                                             const ConvPlan &p, StringRef role,
                                             int64_t operand, Attribute batch) {
  return describeTensor(
      ctx, "partials", role, operand, "f32",
      {batch, intAttr(ctx, p.tokenChunks), intAttr(ctx, p.gradItems())});
}

attn::KernelLaunchAttr attnfuse::sm90::describeCausalConv1dWeightGrad(
    MLIRContext *ctx, attn::CausalConv1DGradOp op, const ConvPlan &p) {
  StringRef elem = elemName(p.elem);
  ConvLaunchSizes z(ctx, p, op.getInput(), /*namedIsOutput=*/false);
  // Operands of the launch: (input, result_grad).
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "input", "the convolution's input", 0, elem,
                     {z.batch, z.steps, z.channels}),
      describeTensor(ctx, "result_grad", "cotangent of the convolution", 1,
                     elem, {z.batch, z.outSteps, z.channels}),
      partialsTensor(ctx, p, "result", -1, z.batch)};
  SmallVector<Attribute> params = {
      describeParam(ctx, "input", "pointer", elem, "input"),
      describeParam(ctx, "result_grad", "pointer", elem, "result_grad"),
      describeParam(ctx, "partials", "pointer", "f32", "partials"),
      describeParam(ctx, "steps", "scalar", "i32", sizeText(z.steps))};
  SmallVector<Attribute> grid = {
      gridConstant(
          ctx, llvm::divideCeil(p.gradItems(), ConvPlan::kWeightGradThreads)),
      gridConstant(ctx, p.tokenChunks), gridEntry(ctx, z.batch)};
  DictBuilder config = convConfig(ctx, p);
  config.set("token_chunks", p.tokenChunks)
      .set("cta", "one per (items, chunk of output steps, sequence); a "
                  "thread per weight or bias element sums the chunk in "
                  "order (f32)");
  return describeLaunch(ctx,
                        {p.weightGradName, "causal_conv1d_weight_grad",
                         z.sym.describe(), ConvPlan::kWeightGradThreads},
                        {grid, params, tensors}, config.get(),
                        {p.hostCastFromF32});
}

attn::KernelLaunchAttr
attnfuse::sm90::describeCausalConv1dWeightSum(MLIRContext *ctx,
                                              const ConvPlan &p) {
  StringRef elem = elemName(p.elem);
  Attribute channels = intAttr(ctx, p.channels);
  SmallVector<Attribute> tensors = {
      partialsTensor(ctx, p, "input", 0, strAttr(ctx, "B")),
      describeTensor(
          ctx, "weight_grad", "result", -1, elem,
          {channels, intAttr(ctx, p.groupWidth), intAttr(ctx, p.taps)}),
      describeTensor(ctx, "bias_grad", "result", -1, elem, {channels})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "partials", "pointer", "f32", "partials"),
      describeParam(ctx, "weight_grad", "pointer", elem, "weight_grad"),
      describeParam(ctx, "bias_grad", "pointer", elem, "bias_grad"),
      describeParam(ctx, "batch", "scalar", "i32", "B")};
  SmallVector<Attribute> grid = {gridConstant(
      ctx, llvm::divideCeil(p.gradItems(), ConvPlan::kWeightGradThreads))};
  DictBuilder config = convConfig(ctx, p);
  config.set("token_chunks", p.tokenChunks)
      .set("cta", "a thread per weight or bias element sums its partials, "
                  "(sequence, chunk) in order");
  return describeLaunch(ctx,
                        {p.weightSumName, "causal_conv1d_weight_sum",
                         "B = batch", ConvPlan::kWeightGradThreads},
                        {grid, params, tensors}, config.get(),
                        {p.hostCastFromF32, "outputs"});
}
