//===- Elementwise.cpp - element-wise tensor ops on sm_90a ------*- C++ -*-===//
//
// The host side of a lowered model adds residual streams (`arith.addf` on
// whole activations). A whole-model program runs them on the device too: one
// small grid-stride-free kernel per (op, element type, shape), each thread one
// 16-byte chunk (8 bf16/f16 or 4 f32 values), the tail element by element.
// bf16/f16 adds are computed in f32 and rounded once, as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;

std::string ElementwisePlan::key() const {
  return "ewise:" + opName + ":" + dtype + ":" + shape;
}

FailureOr<ElementwisePlan> attnfuse::sm90::planElementwise(Operation *op) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type)
    return op->emitOpError("has no sm_90a kernel for a non-tensor result");
  ElementwisePlan plan;
  Type elem = type.getElementType();
  if (elem.isBF16())
    plan.dtype = "bf16";
  else if (elem.isF16())
    plan.dtype = "f16";
  else if (elem.isF32())
    plan.dtype = "f32";
  else
    return op->emitOpError() << "has no sm_90a kernel for element type " << elem
                             << " (bf16, f16 or f32)";
  if (type.getNumDynamicDims() > 3)
    return op->emitOpError() << "has no sm_90a kernel for " << type
                             << ": at most 3 dynamic dimensions (B, S, T)";
  if (isa<arith::AddFOp>(op))
    plan.opName = "add";
  else
    return op->emitOpError("has no sm_90a element-wise kernel");
  llvm::raw_string_ostream shape(plan.shape);
  llvm::interleave(
      type.getShape(), shape,
      [&](int64_t size) {
        if (ShapedType::isDynamic(size))
          shape << "?";
        else
          shape << size;
      },
      "x");
  plan.vector = plan.dtype == "f32" ? 4 : 8;
  plan.name = "attn_ewise_" + plan.opName + "_" + plan.dtype;
  return plan;
}

void attnfuse::sm90::buildElementwiseKernel(OpBuilder &b, Location loc,
                                            gpu::GPUModuleOp module,
                                            const ElementwisePlan &p) {
  KernelBody body(b, loc, module, p.name,
                  KernelSignature(b.getContext()).pointer(3).scalar(),
                  p.threads, 1, ElemKind::bf16);
  DeviceBuilder &d = body.d;
  Type scalar = p.dtype == "f32"   ? d.f32
                : p.dtype == "f16" ? Type(b.getF16Type())
                                   : Type(b.getBF16Type());
  KernelArguments &arguments = body.arguments;
  Value lhs = arguments.next(), rhs = arguments.next(), out = arguments.next(),
        count = arguments.next();
  auto combine = [&](Value x, Value y) -> Value {
    if (p.dtype == "f32")
      return arith::AddFOp::create(b, loc, x, y);
    // f32 arithmetic, one rounding to the element type.
    Type narrow = x.getType();
    Type wide = isa<VectorType>(narrow)
                    ? Type(VectorType::get({p.vector}, d.f32))
                    : d.f32;
    Value sum =
        arith::AddFOp::create(b, loc, arith::ExtFOp::create(b, loc, wide, x),
                              arith::ExtFOp::create(b, loc, wide, y));
    return arith::TruncFOp::create(b, loc, narrow, sum);
  };
  Value chunk = d.add(d.mul(d.ctaid(0), p.threads), d.tid());
  Value start = d.mul(chunk, p.vector);
  Value end = d.add(start, p.vector);
  Value full = d.cmp(arith::CmpIPredicate::sle, end, count);
  d.ifThenElse(
      full,
      [&] {
        auto vec = VectorType::get({p.vector}, scalar);
        Value x = d.load(vec, d.gAt(lhs, start, scalar), 16);
        Value y = d.load(vec, d.gAt(rhs, start, scalar), 16);
        d.store(combine(x, y), d.gAt(out, start, scalar), 16);
      },
      [&] {
        // The tail: fewer than one chunk left.
        d.forLoop(start, d.mins(end, count), d.c32(1), ValueRange(),
                  [&](Value i, ValueRange) -> SmallVector<Value> {
                    int align = p.dtype == "f32" ? 4 : 2;
                    Value x = d.load(scalar, d.gAt(lhs, i, scalar), align);
                    Value y = d.load(scalar, d.gAt(rhs, i, scalar), align);
                    d.store(combine(x, y), d.gAt(out, i, scalar), align);
                    return {};
                  });
      });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeElementwise(MLIRContext *ctx, Operation *op,
                                    const ElementwisePlan &p) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  // The first dynamic size is B, the others S and T (planElementwise allows
  // three).
  LaunchSymbols sym(ctx);
  SmallVector<Attribute> shape;
  std::string countExpr = describeShape(sym, type.getShape(), 1, shape);
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "lhs", "input", 0, p.dtype, shape),
      describeTensor(ctx, "rhs", "input", 1, p.dtype, shape),
      describeTensor(ctx, "output", "result", -1, p.dtype, shape)};
  SmallVector<Attribute> params = {
      describeParam(ctx, "lhs", "pointer", p.dtype, "lhs"),
      describeParam(ctx, "rhs", "pointer", p.dtype, "rhs"),
      describeParam(ctx, "output", "pointer", p.dtype, "output"),
      describeParam(ctx, "count", "scalar", "i32", countExpr)};
  int64_t perCta = p.threads * p.vector;
  SmallVector<Attribute> grid = {
      gridEntry(ctx, strAttr(ctx, "ceil_div(" + countExpr + ", " +
                                      std::to_string(perCta) + ")"))};
  std::string symbols = sym.describe();
  DictionaryAttr config = DictBuilder(ctx)
                              .set("op", StringRef(p.opName))
                              .set("elements_per_thread", p.vector)
                              .set("count", StringRef(countExpr))
                              .get();
  return describeLaunch(ctx, {p.name, "elementwise", symbols, p.threads},
                        {grid, params, tensors}, config);
}
