//===- BiasGrad.cpp - weight gradients of one input feature -----*- C++ -*-===//
//
// attn.fused_weight_grad with one input feature: dW[o, 0] = init[o, 0] +
// sum_t dY[t, o] X[t, 0]. That is a bias gradient (attn-fuse forms it with
// X a `linalg.fill` of ones), a sum over the tokens of each column of dY,
// which the GEMM cannot take (X's 2-byte rows are no TMA stride) and would
// waste 127 of 128 wgmma columns on. So it is a SIMT kernel, bound by the
// read of dY:
//
// * A CTA of 8 warps owns 32 * `vector` columns: each lane loads `vector`
//   adjacent columns of a row (16 bytes when the row allows), so a warp
//   reads whole row segments and the 8 warps take every 8th row, 4 rows per
//   step in flight.
// * A constant X (the fill) is not read: the sum is scaled once at the end.
//   Otherwise each row's X[t] is read and multiplies the row.
// * The 8 warps' f32 partial sums meet in shared memory; one thread per
//   column adds them, adds the init when it is not a zero fill, and stores
//   the 16-bit result.
//
// All tokens of a column block go through one CTA: out / (32 vector) CTAs,
// enough for a bias of a few thousand features to stream dY from a fraction
// of the SMs; a split over the tokens is not built.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;
using arith::CmpIPredicate;

void attnfuse::sm90::planBiasGrad(WeightGradPlan &p) {
  int64_t out = p.outFeatures;
  p.vector = out % 8 == 0 ? 8 : out % 2 == 0 ? 2 : 1;
  p.threads = WeightGradPlan::kBiasWarps * 32;
  p.sharedBytes = WeightGradPlan::kBiasWarps * p.biasColumnsPerCta() * 4;
  std::string name = "attn_wgrad_colsum_" + elemName(p.elem).str() + "_out" +
                     std::to_string(out);
  if (!p.inputFill)
    name += "_x";
  if (p.readsInit)
    name += "_acc";
  p.name = name;
}

void attnfuse::sm90::buildBiasGradKernel(OpBuilder &b, Location loc,
                                         gpu::GPUModuleOp module,
                                         const WeightGradPlan &p) {
  // [x], dy, dw, tokens, [init].
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext())
                      .pointer(1, !p.inputFill)
                      .pointer(2)
                      .scalar()
                      .pointer(1, p.readsInit),
                  p.threads, 1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value input = arguments.nextIf(!p.inputFill);
  Value grad = arguments.next();
  Value result = arguments.next();
  Value tokens = arguments.next();
  Value init = arguments.nextIf(p.readsInit);

  constexpr int64_t kRowsInFlight = 4;
  int64_t warps = WeightGradPlan::kBiasWarps, columns = p.biasColumnsPerCta();
  Value tid = d.tid(), warp = d.divu(tid, 32), lane = d.remu(tid, 32);
  Value blockColumn = d.mul(d.ctaid(0), columns);
  Value column = d.add(blockColumn, d.mul(lane, p.vector));
  // `out` is a multiple of `vector`: a lane's columns are all in or all out.
  Value active = d.cmp(CmpIPredicate::slt, column, d.c32(p.outFeatures));
  Value safeColumn = d.select(active, column, d.c32(0));
  Value lastToken = d.sub(tokens, d.c32(1));
  Type chunkType = d.vec(d.elemType, p.vector);

  SmallVector<Value> zeros(p.vector, d.cf(0.0));
  SmallVector<Value> sums = d.forLoop(
      warp, tokens, d.c32(warps * kRowsInFlight), zeros,
      [&](Value first, ValueRange acc) -> SmallVector<Value> {
        SmallVector<Value> next(acc.begin(), acc.end());
        // Loads of all rows first, then the sums: kRowsInFlight loads in
        // flight per thread. A row past the tokens reads the last one and
        // adds nothing.
        SmallVector<Value> chunks, weights, real;
        for (int64_t r = 0; r < kRowsInFlight; ++r) {
          Value token = d.add(first, r * warps);
          Value row = d.mins(token, lastToken);
          Value offset = d.add(d.mul(row, p.outFeatures), safeColumn);
          chunks.push_back(
              d.load(chunkType, d.gAt(grad, offset, d.elemType), 2 * p.vector));
          real.push_back(
              d.andb(active, d.cmp(CmpIPredicate::slt, token, tokens)));
          if (!p.inputFill)
            weights.push_back(arith::ExtFOp::create(
                b, loc, d.f32,
                d.load(d.elemType, d.gAt(input, row, d.elemType), 2)));
        }
        for (int64_t r = 0; r < kRowsInFlight; ++r)
          for (int64_t k = 0; k < p.vector; ++k) {
            Value element = p.vector == 1
                                ? chunks[r]
                                : Value(LLVM::ExtractElementOp::create(
                                      b, loc, chunks[r], d.c32(k)));
            Value value = arith::ExtFOp::create(b, loc, d.f32, element);
            if (!p.inputFill)
              value = d.mulf(value, weights[r]);
            next[k] = d.addf(next[k], d.select(real[r], value, d.cf(0.0)));
          }
        return next;
      });

  // The warps' partial sums: [warp][column] f32 in shared memory.
  Value smem = d.alignedDynamicShared(kSharedSymbol);
  for (int64_t k = 0; k < p.vector; ++k)
    d.store(sums[k],
            d.sAt(smem, d.mul(d.add(d.mul(warp, columns),
                                    d.add(d.mul(lane, p.vector), k)),
                              4)),
            4);
  d.barrierAll();
  Value own = d.add(blockColumn, tid);
  d.ifThen(
      d.andb(d.cmp(CmpIPredicate::slt, tid, d.c32(columns)),
             d.cmp(CmpIPredicate::slt, own, d.c32(p.outFeatures))),
      [&]() {
        Value total = d.cf(0.0);
        for (int64_t w = 0; w < warps; ++w)
          total = d.addf(
              total,
              d.load(d.f32, d.sAt(smem, d.mul(d.add(tid, w * columns), 4)), 4));
        if (p.inputFill && *p.inputFill != 1.0)
          total = d.mulf(total, d.cf(*p.inputFill));
        if (p.readsInit)
          total = d.addf(
              total, arith::ExtFOp::create(
                         b, loc, d.f32,
                         d.load(d.elemType, d.gAt(init, own, d.elemType), 2)));
        d.store(arith::TruncFOp::create(b, loc, d.elemType, total),
                d.gAt(result, own, d.elemType), 2);
      });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeBiasGrad(MLIRContext *ctx, const WeightGradPlan &p) {
  StringRef elem = elemName(p.elem);
  int64_t out = p.outFeatures;
  // Launch operands: [input], result_grad, [init].
  int64_t operand = 0;
  SmallVector<Attribute> tensors, params;
  if (!p.inputFill) {
    tensors.push_back(describeTensor(ctx, "input", "input", operand++, elem,
                                     {strAttr(ctx, "T"), intAttr(ctx, 1)}));
    params.push_back(describeParam(ctx, "input", "pointer", elem, "input"));
  }
  tensors.push_back(
      describeTensor(ctx, "result_grad", "result_grad", operand++, elem,
                     {strAttr(ctx, "T"), intAttr(ctx, out)}, {},
                     "row-major [tokens, out_features], contiguous"));
  if (p.readsInit)
    tensors.push_back(describeTensor(ctx, "init", "init", operand++, elem,
                                     {intAttr(ctx, out), intAttr(ctx, 1)}));
  tensors.push_back(describeTensor(ctx, "weight_grad", "result", -1, elem,
                                   {intAttr(ctx, out), intAttr(ctx, 1)}));
  params.push_back(
      describeParam(ctx, "result_grad", "pointer", elem, "result_grad"));
  params.push_back(
      describeParam(ctx, "weight_grad", "pointer", elem, "weight_grad"));
  params.push_back(describeParam(ctx, "tokens", "scalar", "i32", "T"));
  if (p.readsInit)
    params.push_back(describeParam(ctx, "init", "pointer", elem, "init"));
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("out_features", out)
      .set("columns_per_thread", p.vector)
      .set("warps", WeightGradPlan::kBiasWarps)
      .set("input", p.inputFill ? StringRef("a constant, not read")
                                : StringRef("read per token"))
      .setBool("init", p.readsInit);
  if (p.inputFill)
    config.set("input_value", *p.inputFill);
  SmallVector<Attribute> grid = {
      gridConstant(ctx, llvm::divideCeil(out, p.biasColumnsPerCta()))};
  return describeLaunch(
      ctx,
      {p.name, "weight_grad_colsum", "T = tokens", p.threads, p.sharedBytes},
      {grid, params, tensors}, config.get(),
      {p.hostCastFromF32, "weight_grad"});
}
