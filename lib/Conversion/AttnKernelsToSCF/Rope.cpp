//===- Rope.cpp - rotary embedding inside tile loads ------------*- C++ -*-===//

#include "Rope.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::kernels;

RopeTables attnfuse::kernels::buildRopeTables(KernelBuilder &kb,
                                              attn::RopeAttr rope,
                                              int64_t headDim, Value positions,
                                              Value first) {
  RopeTables tables;
  if (!rope)
    return tables;
  tables.rotated = *rope.getRotatedDim(headDim);
  if (tables.rotated == 0)
    return tables;
  tables.first = first;
  std::tie(tables.cosine, tables.sine) =
      kb.ropeTables(rope, headDim, positions, first);
  return tables;
}

static Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

static Value lessThan(OpBuilder &b, Location loc, Value lhs, int64_t rhs) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lhs,
                               indexConstant(b, loc, rhs));
}

Value attnfuse::kernels::ropePartner(OpBuilder &b, Location loc, Value dim,
                                     const RopeTables &rope) {
  int64_t half = rope.rotated / 2;
  Value halfValue = indexConstant(b, loc, half);
  Value partner =
      arith::SelectOp::create(b, loc, lessThan(b, loc, dim, half),
                              arith::AddIOp::create(b, loc, dim, halfValue),
                              arith::SubIOp::create(b, loc, dim, halfValue));
  return arith::SelectOp::create(b, loc, lessThan(b, loc, dim, rope.rotated),
                                 partner, dim);
}

Value attnfuse::kernels::applyRope(OpBuilder &b, Location loc,
                                   const RopeTables &rope, Value element,
                                   Value partner, Value position, Value dim) {
  int64_t half = rope.rotated / 2;
  Value inRotated = lessThan(b, loc, dim, rope.rotated);
  // Table column i serves dims i and i + r/2; clamp outside the rotated part,
  // where the value is unused.
  Value column =
      arith::RemSIOp::create(b, loc, dim, indexConstant(b, loc, half));
  column = arith::SelectOp::create(b, loc, inRotated, column,
                                   indexConstant(b, loc, 0));
  Value row = position;
  if (rope.first)
    row = arith::SubIOp::create(b, loc, position, rope.first);
  Value cosine =
      tensor::ExtractOp::create(b, loc, rope.cosine, ValueRange{row, column});
  Value sine =
      tensor::ExtractOp::create(b, loc, rope.sine, ValueRange{row, column});
  Value elementCos = arith::MulFOp::create(b, loc, element, cosine);
  Value partnerSin = arith::MulFOp::create(b, loc, partner, sine);
  Value rotated = arith::SelectOp::create(
      b, loc, lessThan(b, loc, dim, half),
      arith::SubFOp::create(b, loc, elementCos, partnerSin),
      arith::AddFOp::create(b, loc, elementCos, partnerSin));
  return arith::SelectOp::create(b, loc, inRotated, rotated, element);
}

Value attnfuse::kernels::loadRotatedKeyTile(KernelBuilder &kb, Value keySlab,
                                            const RopeTables &rope,
                                            Value key0) {
  auto type = cast<RankedTensorType>(keySlab.getType());
  int64_t rows = type.getDimSize(0), headDim = type.getDimSize(1);
  Value source = rope ? loadRotatedKeyRows(kb, keySlab, rope, key0) : keySlab;
  return kb.convert(source, {headDim, rows}, kb.computeType, kb.map(2, {1, 0}));
}

Value attnfuse::kernels::loadRotatedKeyRows(KernelBuilder &kb, Value keySlab,
                                            const RopeTables &rope,
                                            Value key0, bool transposed) {
  OpBuilder &b = kb.builder;
  Location loc = kb.loc;
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(keySlab.getType());
  int64_t rows = type.getDimSize(0), headDim = type.getDimSize(1);
  if (!rope)
    return kb.convert(keySlab, kb.computeType);
  int64_t rotated = rope.rotated, half = rotated / 2;
  OpFoldResult zero = b.getIndexAttr(0);
  auto firstColumns = [&](Value source) -> Value {
    if (rotated == headDim)
      return source;
    return kb.slice(source, {zero, zero}, {rows, rotated}, {rows, rotated});
  };
  auto pairs = [&](Value source, Type elementType) -> Value {
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({rows, 2, half}, elementType), source,
        ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  };
  Value tableRow = key0;
  if (rope.first)
    tableRow = kb.sub(key0, rope.first);
  auto tableRows = [&](Value table) {
    return kb.slice(table, {tableRow, zero}, {rows, half}, {rows, half});
  };
  // Loops (c, a, i) over [rows, 2, r/2]: dim a r/2 + i of row c and its
  // partner (1 - a) r/2 + i, x cos - partner sin in the first half (a = 0),
  // x cos + partner sin in the second (the signs swapped when transposed);
  // every operand of the innermost loop is contiguous.
  Value tile = kb.empty({rows, headDim}, kb.computeType);
  Value source = pairs(firstColumns(keySlab), type.getElementType());
  AffineExpr c = getAffineDimExpr(0, context), a = getAffineDimExpr(1, context),
             i = getAffineDimExpr(2, context);
  Value rotatedPairs = kb.generic(
      {source, source, tableRows(rope.cosine), tableRows(rope.sine)},
      pairs(firstColumns(tile), kb.computeType),
      {kb.map(3, {0, 1, 2}), AffineMap::get(3, 0, {c, 1 - a, i}, context),
       kb.map(3, {0, 2}), kb.map(3, {0, 2}), kb.map(3, {0, 1, 2})},
      {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value elementCos =
            arith::MulFOp::create(nb, l, kb.toCompute(nb, args[0]), args[2]);
        Value partnerSin =
            arith::MulFOp::create(nb, l, kb.toCompute(nb, args[1]), args[3]);
        Value firstHalf = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::eq, linalg::IndexOp::create(nb, l, 1),
            arith::ConstantIndexOp::create(nb, l, 0));
        Value minus = arith::SubFOp::create(nb, l, elementCos, partnerSin);
        Value plus = arith::AddFOp::create(nb, l, elementCos, partnerSin);
        return arith::SelectOp::create(nb, l, firstHalf,
                                       transposed ? plus : minus,
                                       transposed ? minus : plus);
      });
  Value rotatedRows = tensor::CollapseShapeOp::create(
      b, loc, rotatedPairs, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  if (rotated < headDim) {
    tile = kb.insert(rotatedRows, tile, {zero, zero}, {rows, rotated});
    // The dims past r pass through.
    int64_t rest = headDim - rotated;
    Value passed = kb.convert(kb.slice(keySlab, {zero, b.getIndexAttr(rotated)},
                                       {rows, rest}, {rows, rest}),
                              kb.computeType);
    rotatedRows =
        kb.insert(passed, tile, {zero, b.getIndexAttr(rotated)}, {rows, rest});
  }
  return rotatedRows;
}
