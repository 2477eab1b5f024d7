//===- MaskTokens.cpp - attn.mask_tokens on sm_90a --------------*- C++ -*-===//
//
// A padded batch's gradient program zeroes the padded tokens' rows (the
// forward's masking, and its own transpose on the cotangent):
//   result[b, t] = mask[b, t] != 0 ? input[b, t] : 0.
// One CTA per (token, sequence) reads the token's mask once; its threads copy
// or zero the row in 16-byte chunks (narrower when the width asks).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;

std::string MaskTokensPlan::key() const {
  return llvm::formatv("mask_tokens:{0}:{1}:{2}:{3}", elemName(elem),
                       hostCastFromF32, width, maskBits)
      .str();
}

FailureOr<MaskTokensPlan>
attnfuse::sm90::planMaskTokens(attn::MaskTokensOp op,
                               const TargetOptions &options,
                               std::string &unsupported) {
  MaskTokensPlan p;
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (failed(p.setElementType(op, type.getElementType(), options)))
    return failure();
  if (type.getRank() != 3 || ShapedType::isDynamic(type.getDimSize(2))) {
    unsupported = "the sm_90a token-mask kernel needs a [batch, seq, width] "
                  "input of static width";
    return failure();
  }
  p.width = type.getDimSize(2);
  FailureOr<int64_t> bits = maskElementBits(op, "mask", op.getMask());
  if (failed(bits))
    return failure();
  p.maskBits = *bits;
  p.vector = vectorWidth({p.width});
  p.threads = std::min<int64_t>(256, (p.width / p.vector + 31) / 32 * 32);
  p.name = llvm::formatv("attn_mask_tokens_{0}_w{1}_mask{2}", elemName(p.elem),
                         p.width, p.maskBits)
               .str();
  return p;
}

void attnfuse::sm90::buildMaskTokensKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const MaskTokensPlan &p) {
  // input, mask, result.
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext()).pointer(3), p.threads,
                  /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value input = arguments.next(), mask = arguments.next(),
        result = arguments.next();
  Value t = d.ctaid(0), batch = d.ctaid(1), tokens = d.nctaid(0);
  Value real = d.nonZeroAt(mask, d.row64(batch, tokens, t), p.maskBits);
  Value row = d.rowStart64(batch, tokens, t, p.width);
  Value from = d.gAt(input, row, d.elemType),
        to = d.gAt(result, row, d.elemType);
  Type chunk = d.vec(d.elemType, p.vector);
  int align = 2 * p.vector;
  d.forLoop(
      d.mul(d.tid(), p.vector), d.c32(p.width), d.c32(p.threads * p.vector),
      ValueRange(), [&](Value column, ValueRange) -> SmallVector<Value> {
        Value out = d.gAt(to, column, d.elemType);
        d.ifThenElse(
            real,
            [&] {
              d.store(d.load(chunk, d.gAt(from, column, d.elemType), align),
                      out, align);
            },
            [&] { d.store(d.zerosOf(chunk), out, align); });
        return {};
      });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeMaskTokens(MLIRContext *ctx, attn::MaskTokensOp op,
                                   const MaskTokensPlan &p) {
  StringRef elem = elemName(p.elem);
  Attribute batch = strAttr(ctx, "B"), tokens = strAttr(ctx, "S"),
            width = intAttr(ctx, p.width);
  StringRef maskType = indexDtype(p.maskBits);
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "input", "input", 0, elem, {batch, tokens, width}),
      describeTensor(ctx, "mask",
                     "token t of sequence b is real where mask[b, t] != 0, "
                     "else its row is zeroed",
                     1, maskType, {batch, tokens}),
      describeTensor(ctx, "result", "result", -1, elem,
                     {batch, tokens, width})};
  SmallVector<Attribute> params = {
      describeParam(ctx, "input", "pointer", elem, "input"),
      describeParam(ctx, "mask", "pointer", maskType, "mask"),
      describeParam(ctx, "result", "pointer", elem, "result")};
  (void)op;
  SmallVector<Attribute> grid = {gridCeilDiv(ctx, "S", 1),
                                 gridCeilDiv(ctx, "B", 1)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("width", p.width)
      .set("mask_bits", p.maskBits)
      .set("elements_per_thread", p.vector)
      .set("cta", "one per (token, sequence); threads over its row");
  return describeLaunch(
      ctx,
      {p.name, "mask_tokens", "B = batch, S = tokens per sequence", p.threads},
      {grid, params, tensors}, config.get(), {p.hostCastFromF32});
}
