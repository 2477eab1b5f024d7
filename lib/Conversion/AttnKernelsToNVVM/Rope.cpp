//===- Rope.cpp - attn.rope and attn.rope_grad on sm_90a --------*- C++ -*-===//
//
// One CTA per (token t, sequence b) rotates every head of the token
// (attn.rope_grad: by the opposite angle, the rotation's transpose)
// (rotate-half pairing, f32 math) at position t, or positions[b] + t with a
// positions operand. The angles come from the f32 cos/sin tables
// ([rows, rotated / 2]) the host computes, as for the other kernels; with
// positions the tables' row count is the launch symbol T and a token whose
// position lies outside [0, T) gets zeros in its rotated dimensions.
// Dimensions past the rotated width are copied.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using attn::RoPEGradOp;
using attn::RoPEOp;
using Pred = arith::CmpIPredicate;

namespace {
/// What the kernel reads of attn.rope or attn.rope_grad.
struct RopeOperands {
  explicit RopeOperands(Operation *op) {
    if (auto rope = dyn_cast<RoPEOp>(op)) {
      input = rope.getInput();
      positions = rope.getPositions();
      attr = rope.getRope();
      return;
    }
    auto grad = cast<RoPEGradOp>(op);
    input = grad.getResultGrad();
    positions = grad.getPositions();
    attr = grad.getRope();
    inverse = true;
  }
  Value input, positions;
  attn::RopeAttr attr;
  bool inverse = false;
};
} // namespace

static constexpr llvm::StringLiteral kTableRowsMeaning =
    "rows of the cos/sin tables (every positions[b] + t must be below it)";

std::string RopeKernelPlan::key() const {
  return llvm::formatv("rope:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}", elemName(elem),
                       numHeads, headDim, rotated, theta, positionBits, vector,
                       inverse)
      .str();
}

static LaunchSymbols ropeSymbols(MLIRContext *ctx, const RopeOperands &op) {
  LaunchSymbols sym(ctx);
  sym.dim(op.input, 0, "batch");
  sym.dim(op.input, 1, "tokens per sequence");
  if (op.positions)
    sym.get(ShapedType::kDynamic, kTableRowsMeaning);
  return sym;
}

FailureOr<RopeKernelPlan> attnfuse::sm90::planRope(Operation *op,
                                                   const TargetOptions &options,
                                                   std::string &unsupported) {
  RopeOperands operands(op);
  auto type = cast<RankedTensorType>(operands.input.getType());
  RopeKernelPlan p;
  p.inverse = operands.inverse;
  if (failed(p.setElementType(op, type.getElementType(), options)))
    return failure();
  p.numHeads = type.getDimSize(2);
  p.headDim = type.getDimSize(3);
  if (ShapedType::isDynamic(p.numHeads) || ShapedType::isDynamic(p.headDim)) {
    unsupported = "the sm_90a rope kernel needs a static head count and head "
                  "dim";
    return failure();
  }
  FailureOr<int64_t> rotated = operands.attr.getRotatedDim(p.headDim);
  if (failed(rotated) || *rotated % 2 != 0)
    return op->emitOpError() << "rotated width of head dim " << p.headDim
                             << " is not a whole, even number of dimensions";
  p.rotated = *rotated;
  p.theta = operands.attr.getThetaValue();
  if (operands.positions) {
    FailureOr<int64_t> bits =
        indexElementBits(op, "positions", operands.positions);
    if (failed(bits))
      return failure();
    p.positionBits = *bits;
  }
  if (!ropeSymbols(op->getContext(), operands).overflow.empty()) {
    unsupported = "the sm_90a rope launch with positions needs a static "
                  "batch or a static token count";
    return failure();
  }
  p.vector = vectorWidth({p.headDim, std::max<int64_t>(p.rotated / 2, 1)});
  int64_t items = p.numHeads * (p.headDim - p.rotated / 2) / p.vector;
  p.threads =
      std::min<int64_t>(128, std::max<int64_t>(32, (items + 31) / 32 * 32));
  p.name = llvm::formatv("attn_rope{0}_{1}_h{2}_d{3}_r{4}{5}",
                         p.inverse ? "_grad" : "", elemName(p.elem), p.numHeads,
                         p.headDim, p.rotated, p.positionBits ? "_pos" : "")
               .str();
  return p;
}

void attnfuse::sm90::buildRopeKernel(OpBuilder &b, Location loc,
                                     gpu::GPUModuleOp module,
                                     const RopeKernelPlan &p) {
  // input[, positions], output, cos, sin[, table_rows].
  KernelSignature signature(b.getContext());
  signature.pointer()
      .pointer(1, p.positionBits)
      .pointer(3)
      .scalar(1, p.positionBits);
  KernelBody body(b, loc, module, p.name, signature, p.threads,
                  /*minBlocks=*/1, p.elem);
  DeviceBuilder &d = body.d;
  KernelArguments &arguments = body.arguments;
  Value input = arguments.next();
  Value positions = arguments.nextIf(p.positionBits);
  Value output = arguments.next();
  Value cosTable = arguments.next();
  Value sinTable = arguments.next();
  Value tableRows = arguments.nextIf(p.positionBits);

  Value token = d.ctaid(0), batch = d.ctaid(1), tokens = d.nctaid(0);
  Value position = d.ext64(token);
  Value valid = d.ctrue();
  if (positions) {
    position = arith::AddIOp::create(
        b, loc, d.loadIndex(positions, batch, p.positionBits), position);
    valid = d.andb(
        arith::CmpIOp::create(b, loc, Pred::sge, position, d.c64(0)),
        arith::CmpIOp::create(b, loc, Pred::slt, position, d.ext64(tableRows)));
    position = arith::SelectOp::create(b, loc, valid, position, d.c64(0));
  }
  int64_t half = p.rotated / 2, v = p.vector;
  int64_t rowElems = p.numHeads * p.headDim;
  Value rowBase = d.rowStart64(batch, tokens, token, rowElems);
  Value in = d.gAt(input, rowBase, d.elemType);
  Value out = d.gAt(output, rowBase, d.elemType);
  Value tableRow = arith::MulIOp::create(b, loc, position, d.c64(half));
  Value cosRow = d.gAt(cosTable, tableRow, d.f32);
  Value sinRow = d.gAt(sinTable, tableRow, d.f32);

  // Per head: half / v pair items (element i with i + half), then
  // (d - rotated) / v copied items.
  int64_t pairItems = half / v, copyItems = (p.headDim - p.rotated) / v;
  int64_t perHead = pairItems + copyItems;
  Type vecElem = d.vec(d.elemType, v), vecF32 = d.vec(d.f32, v);
  int align = static_cast<int>(2 * v), alignF32 = static_cast<int>(4 * v);
  d.forLoop(d.tid(), d.c32(p.numHeads * perHead), d.c32(p.threads),
            ValueRange(), [&](Value item, ValueRange) -> SmallVector<Value> {
              Value head = d.divu(item, perHead);
              Value c = d.remu(item, perHead);
              Value headBase = d.mul(head, p.headDim);
              auto rotatePair = [&]() {
                Value i = d.mul(c, v);
                Value off0 = d.add(headBase, i);
                Value off1 = d.add(off0, half);
                Value x = arith::ExtFOp::create(
                    b, loc, vecF32,
                    d.load(vecElem, d.gAt(in, off0, d.elemType), align));
                Value y = arith::ExtFOp::create(
                    b, loc, vecF32,
                    d.load(vecElem, d.gAt(in, off1, d.elemType), align));
                Value cs = d.load(vecF32, d.gAt(cosRow, i, d.f32), alignF32);
                Value sn = d.load(vecF32, d.gAt(sinRow, i, d.f32), alignF32);
                // x' = x cos - y sin, y' = y cos + x sin (the inverse:
                // sin negated).
                if (p.inverse)
                  sn = arith::NegFOp::create(b, loc, sn);
                auto [o0, o1] = d.rotatePair(x, y, cs, sn);
                Value zero = d.zerosOf(vecF32);
                o0 = arith::SelectOp::create(b, loc, valid, o0, zero);
                o1 = arith::SelectOp::create(b, loc, valid, o1, zero);
                d.store(arith::TruncFOp::create(b, loc, vecElem, o0),
                        d.gAt(out, off0, d.elemType), align);
                d.store(arith::TruncFOp::create(b, loc, vecElem, o1),
                        d.gAt(out, off1, d.elemType), align);
              };
              auto copy = [&]() {
                Value off = d.add(
                    headBase, d.add(d.mul(d.sub(c, pairItems), v), p.rotated));
                d.store(d.load(vecElem, d.gAt(in, off, d.elemType), align),
                        d.gAt(out, off, d.elemType), align);
              };
              if (copyItems == 0)
                rotatePair();
              else if (pairItems == 0)
                copy();
              else
                d.ifThenElse(d.cmp(Pred::ult, c, pairItems), rotatePair, copy);
              return {};
            });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr attnfuse::sm90::describeRope(MLIRContext *ctx,
                                                    Operation *op,
                                                    const RopeKernelPlan &p) {
  StringRef elem = elemName(p.elem);
  RopeOperands operands(op);
  LaunchSymbols sym = ropeSymbols(ctx, operands);
  Attribute batch = sym.dim(operands.input, 0, "batch");
  Attribute tokens = sym.dim(operands.input, 1, "tokens per sequence");
  Attribute rows = p.positionBits
                       ? sym.get(ShapedType::kDynamic, kTableRowsMeaning)
                       : tokens;
  SmallVector<Attribute> shape = {batch, tokens, intAttr(ctx, p.numHeads),
                                  intAttr(ctx, p.headDim)};
  SmallVector<Attribute> tensors = {
      describeTensor(ctx, "input", "input", 0, elem, shape)};
  SmallVector<Attribute> params = {
      describeParam(ctx, "input", "pointer", elem, "input")};
  if (p.positionBits) {
    tensors.push_back(describeTensor(ctx, "positions",
                                     "position of each sequence's token 0", 1,
                                     indexDtype(p.positionBits), {batch}));
    params.push_back(describeParam(ctx, "positions", "pointer",
                                   indexDtype(p.positionBits), "positions"));
  }
  tensors.push_back(describeTensor(ctx, "output", "result", -1, elem, shape));
  params.push_back(describeParam(ctx, "output", "pointer", elem, "output"));
  SmallVector<Attribute> tables;
  describeRopeTables(ctx, "rope", p.theta, p.rotated, sizeText(rows), params,
                     tables);
  if (p.positionBits)
    params.push_back(
        describeParam(ctx, "table_rows", "scalar", "i32", sizeText(rows)));
  SmallVector<Attribute> grid = {gridEntry(ctx, tokens), gridEntry(ctx, batch)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("num_heads", p.numHeads)
      .set("head_dim", p.headDim)
      .set("rope_dims", p.rotated)
      .set("theta", p.theta)
      .setBool("positions", p.positionBits != 0)
      .setBool("inverse", p.inverse)
      .set("vector_elements", p.vector);
  if (p.positionBits)
    config.set("out_of_range", "a token whose position lies outside [0, T) "
                               "gets zeros in its rotated dimensions");
  std::string symbols = sym.describe();
  return describeLaunch(
      ctx, {p.name, p.inverse ? "rope_grad" : "rope", symbols, p.threads},
      {grid, params, tensors, {}, tables}, config.get(), {p.hostCastFromF32});
}
