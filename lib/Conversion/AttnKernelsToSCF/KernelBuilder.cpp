//===- KernelBuilder.cpp - helpers for the tiled CPU kernels ----*- C++ -*-===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse::kernels;

KernelBuilder::KernelBuilder(OpBuilder &builder, Location loc, Type elementType)
    : builder(builder), loc(loc), elementType(elementType) {
  auto floatType = cast<FloatType>(elementType);
  computeType = floatType.getWidth() < 32 ? Float32Type::get(loc.getContext())
                                          : floatType;
}

Value KernelBuilder::index(int64_t value) {
  return arith::ConstantIndexOp::create(builder, loc, value);
}
Value KernelBuilder::add(Value lhs, Value rhs) {
  return arith::AddIOp::create(builder, loc, lhs, rhs);
}
Value KernelBuilder::sub(Value lhs, Value rhs) {
  return arith::SubIOp::create(builder, loc, lhs, rhs);
}
Value KernelBuilder::mul(Value lhs, Value rhs) {
  return arith::MulIOp::create(builder, loc, lhs, rhs);
}
Value KernelBuilder::min(Value lhs, Value rhs) {
  return arith::MinSIOp::create(builder, loc, lhs, rhs);
}
Value KernelBuilder::max(Value lhs, Value rhs) {
  return arith::MaxSIOp::create(builder, loc, lhs, rhs);
}
Value KernelBuilder::ceilDiv(Value lhs, int64_t rhs) {
  return arith::CeilDivSIOp::create(builder, loc, lhs, index(rhs));
}
Value KernelBuilder::floorDiv(Value lhs, int64_t rhs) {
  return arith::FloorDivSIOp::create(builder, loc, lhs, index(rhs));
}
Value KernelBuilder::lessThan(Value lhs, Value rhs) {
  return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, lhs,
                               rhs);
}
Value KernelBuilder::orI(Value lhs, Value rhs) {
  return arith::OrIOp::create(builder, loc, lhs, rhs);
}
Value KernelBuilder::dim(Value tensor, int64_t dim) {
  return getValueOrCreateConstantIndexOp(
      builder, loc, tensor::getMixedSize(builder, loc, tensor, dim));
}

Value KernelBuilder::constant(double value) {
  return constant(computeType, value);
}
Value KernelBuilder::constant(FloatType type, double value) {
  return arith::ConstantOp::create(builder, loc, type,
                                   builder.getFloatAttr(type, value));
}

Value KernelBuilder::toCompute(OpBuilder &b, Value value) {
  if (value.getType() == computeType)
    return value;
  return arith::ExtFOp::create(b, loc, computeType, value);
}
Value KernelBuilder::toElement(OpBuilder &b, Value value) {
  if (value.getType() == elementType)
    return value;
  return arith::TruncFOp::create(b, loc, elementType, value);
}

Value KernelBuilder::empty(ArrayRef<int64_t> shape, Type type,
                           ValueRange dynamicSizes) {
  return tensor::EmptyOp::create(builder, loc, shape, type, dynamicSizes);
}
Value KernelBuilder::fill(Value tensor, Value value) {
  return linalg::FillOp::create(builder, loc, ValueRange{value},
                                ValueRange{tensor})
      .getResult(0);
}

Value KernelBuilder::slice(Value source, ArrayRef<OpFoldResult> offsets,
                           ArrayRef<int64_t> sizes,
                           ArrayRef<int64_t> resultShape) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  auto resultType =
      RankedTensorType::get(resultShape, sourceType.getElementType());
  SmallVector<OpFoldResult> staticSizes =
      getAsIndexOpFoldResult(builder.getContext(), sizes);
  SmallVector<OpFoldResult> strides(sizes.size(), builder.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(builder, loc, resultType, source,
                                        offsets, staticSizes, strides);
}

Value KernelBuilder::insert(Value tile, Value dest,
                            ArrayRef<OpFoldResult> offsets,
                            ArrayRef<int64_t> sizes) {
  SmallVector<OpFoldResult> staticSizes =
      getAsIndexOpFoldResult(builder.getContext(), sizes);
  SmallVector<OpFoldResult> strides(sizes.size(), builder.getIndexAttr(1));
  return tensor::InsertSliceOp::create(builder, loc, tile, dest, offsets,
                                       staticSizes, strides);
}

Value KernelBuilder::padDimTo(Value source, int64_t dim, Value size) {
  return padDimsTo(source, {{dim, size}});
}

Value KernelBuilder::padDimsTo(Value source,
                               ArrayRef<std::pair<int64_t, Value>> dimSizes) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> low(type.getRank(), builder.getIndexAttr(0));
  SmallVector<OpFoldResult> high(type.getRank(), builder.getIndexAttr(0));
  SmallVector<int64_t> shape(type.getShape());
  for (auto [dim, size] : dimSizes) {
    high[dim] = sub(size, this->dim(source, dim));
    shape[dim] = ShapedType::kDynamic;
  }
  auto paddedType = RankedTensorType::get(shape, type.getElementType());
  Value zero =
      arith::ConstantOp::create(builder, loc, type.getElementType(),
                                builder.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(builder, loc, paddedType, source, low, high,
                               zero);
}

Value KernelBuilder::packWeightBlocks(Value weight, int64_t blockN,
                                      int64_t blockK) {
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t numBlocks = llvm::divideCeil(type.getDimSize(0), blockN);
  int64_t numSteps = llvm::divideCeil(type.getDimSize(1), blockK);
  if (numBlocks * blockN != type.getDimSize(0) ||
      numSteps * blockK != type.getDimSize(1)) {
    // Zero rows and columns up to whole blocks (static sizes).
    auto paddedType = RankedTensorType::get(
        {numBlocks * blockN, numSteps * blockK}, type.getElementType());
    SmallVector<mlir::OpFoldResult> low(2, builder.getIndexAttr(0));
    SmallVector<mlir::OpFoldResult> high = {
        builder.getIndexAttr(numBlocks * blockN - type.getDimSize(0)),
        builder.getIndexAttr(numSteps * blockK - type.getDimSize(1))};
    Value zero = mlir::arith::ConstantOp::create(
        builder, loc, type.getElementType(),
        builder.getZeroAttr(type.getElementType()));
    weight = mlir::tensor::PadOp::create(builder, loc, paddedType, weight, low,
                                         high, zero);
  }
  Value blocks = tensor::ExpandShapeOp::create(
      builder, loc,
      RankedTensorType::get({numBlocks, blockN, numSteps, blockK},
                            type.getElementType()),
      weight, llvm::ArrayRef<mlir::ReassociationIndices>{{0, 1}, {2, 3}});
  return generic(
      {blocks}, empty({numBlocks, numSteps, blockK, blockN}, computeType),
      {map(4, {0, 2, 1, 3}), map(4, {0, 1, 3, 2})}, {kPar, kPar, kPar, kPar},
      [&](OpBuilder &b, Location, ValueRange args) -> Value {
        return toCompute(b, args[0]);
      });
}

Value KernelBuilder::packInputBlocks(Value input, int64_t blockS,
                                     int64_t blockK) {
  auto type = cast<RankedTensorType>(input.getType());
  const int64_t width = type.getDimSize(2);
  OpFoldResult zero = builder.getIndexAttr(0);
  OpFoldResult batch = tensor::getMixedSize(builder, loc, input, 0);
  Value wholeBlocks = floorDiv(dim(input, 1), blockS);
  Value whole = tensor::ExtractSliceOp::create(
      builder, loc,
      RankedTensorType::get({type.getDimSize(0), ShapedType::kDynamic, width},
                            type.getElementType()),
      input, SmallVector<OpFoldResult>{zero, zero, zero},
      SmallVector<OpFoldResult>{batch, mul(wholeBlocks, blockS),
                                builder.getIndexAttr(width)},
      SmallVector<OpFoldResult>(3, builder.getIndexAttr(1)));
  Value blocks = tensor::ExpandShapeOp::create(
      builder, loc,
      RankedTensorType::get({type.getDimSize(0), ShapedType::kDynamic, blockS,
                             width / blockK, blockK},
                            type.getElementType()),
      whole, llvm::ArrayRef<mlir::ReassociationIndices>{{0}, {1, 2}, {3, 4}},
      SmallVector<OpFoldResult>{batch, wholeBlocks,
                                builder.getIndexAttr(blockS),
                                builder.getIndexAttr(width / blockK),
                                builder.getIndexAttr(blockK)});
  Value packed = tensor::EmptyOp::create(
      builder, loc,
      SmallVector<OpFoldResult>{batch, wholeBlocks,
                                builder.getIndexAttr(width / blockK),
                                builder.getIndexAttr(blockS),
                                builder.getIndexAttr(blockK)},
      computeType);
  // Loops in the input's order (batch, block, token, step, k): each token's
  // row is read once, in order.
  return generic({blocks}, packed,
                 {map(5, {0, 1, 2, 3, 4}), map(5, {0, 1, 3, 2, 4})},
                 {kPar, kPar, kPar, kPar, kPar},
                 [&](OpBuilder &b, Location, ValueRange args) -> Value {
                   return toCompute(b, args[0]);
                 });
}

Value KernelBuilder::multiplyWeightBlock(Value acc, Value rows, Value packed,
                                         Value featureBlock) {
  auto packedType = cast<RankedTensorType>(packed.getType());
  int64_t numSteps = packedType.getDimSize(1);
  int64_t blockK = packedType.getDimSize(2), blockN = packedType.getDimSize(3);
  auto rowsType = cast<RankedTensorType>(rows.getType());
  const bool rowsPacked = rowsType.getRank() == 3;
  int64_t numRows = rowsType.getDimSize(rowsPacked ? 1 : 0);
  auto loop = mlir::scf::ForOp::create(
      builder, loc, index(0), index(numSteps), index(1), mlir::ValueRange{acc},
      [&](OpBuilder &, Location, Value step, mlir::ValueRange args) {
        Value rowTile =
            rowsPacked
                ? slice(rows, {step, index(0), index(0)},
                        {1, numRows, blockK}, {numRows, blockK})
                : slice(rows, {index(0), mul(step, blockK)},
                        {numRows, blockK}, {numRows, blockK});
        Value weightTile =
            slice(packed, {featureBlock, step, index(0), index(0)},
                  {1, 1, blockK, blockN}, {blockK, blockN});
        Value sum = generic(
            {rowTile, weightTile}, args[0],
            {map(3, {0, 1}), map(3, {1, 2}), map(3, {0, 2})},
            {kPar, kRed, kPar},
            [&](OpBuilder &b, Location l, ValueRange values) -> Value {
              Value product = mlir::arith::MulFOp::create(
                  b, l, toCompute(b, values[0]), values[1]);
              return mlir::arith::AddFOp::create(b, l, values[2], product);
            });
        mlir::scf::YieldOp::create(builder, loc, sum);
      });
  return loop.getResult(0);
}

Value KernelBuilder::multiplyRowsUnpacked(Value rows, Value realRows,
                                          Value weight) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  const int64_t features = weightType.getDimSize(0);
  const int64_t width = weightType.getDimSize(1);
  const int64_t numRows = cast<RankedTensorType>(rows.getType()).getDimSize(0);
  const int64_t blockN = largestDivisorAtMost(features, 64);
  // Partial sums over up to 64 interleaved input features keep the
  // innermost loop parallel and long enough for the loop vectorizer.
  int64_t lanes = 64;
  while (width % lanes != 0)
    lanes /= 2;
  const int64_t laneSteps = width / lanes;
  Value zeroRows = fill(empty({numRows, features}, computeType), constant(0.0));
  auto blocks = mlir::scf::ForOp::create(
      builder, loc, index(0), index(features / blockN), index(1),
      mlir::ValueRange{zeroRows},
      [&](OpBuilder &, Location, Value featureBlock, mlir::ValueRange outer) {
        Value firstFeature = mul(featureBlock, blockN);
        Value weightRows = mlir::tensor::ExpandShapeOp::create(
            builder, loc,
            RankedTensorType::get({blockN, laneSteps, lanes},
                                  weightType.getElementType()),
            slice(weight, {firstFeature, index(0)}, {blockN, width},
                  {blockN, width}),
            llvm::ArrayRef<mlir::ReassociationIndices>{{0}, {1, 2}});
        auto perRow = mlir::scf::ForOp::create(
            builder, loc, index(0), realRows, index(1),
            mlir::ValueRange{outer[0]},
            [&](OpBuilder &, Location, Value row, mlir::ValueRange inner) {
              Value xRow = mlir::tensor::ExpandShapeOp::create(
                  builder, loc,
                  RankedTensorType::get(
                      {laneSteps, lanes},
                      cast<RankedTensorType>(rows.getType()).getElementType()),
                  slice(rows, {row, index(0)}, {1, width}, {width}),
                  llvm::ArrayRef<mlir::ReassociationIndices>{{0, 1}});
              Value partial = generic(
                  {xRow, weightRows},
                  fill(empty({blockN, lanes}, computeType), constant(0.0)),
                  {map(3, {1, 2}), map(3, {0, 1, 2}), map(3, {0, 2})},
                  {kPar, kRed, kPar},
                  [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                    Value product = mlir::arith::MulFOp::create(
                        b, l, toCompute(b, args[0]), toCompute(b, args[1]));
                    return mlir::arith::AddFOp::create(b, l, args[2], product);
                  });
              Value sum = generic(
                  {partial},
                  fill(empty({1, blockN}, computeType), constant(0.0)),
                  {map(3, {1, 2}), map(3, {0, 1})}, {kPar, kPar, kRed},
                  [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                    return mlir::arith::AddFOp::create(b, l, args[1], args[0]);
                  });
              mlir::scf::YieldOp::create(
                  builder, loc,
                  insert(sum, inner[0], {row, firstFeature}, {1, blockN}));
            });
        mlir::scf::YieldOp::create(builder, loc, perRow.getResult(0));
      });
  return blocks.getResult(0);
}

Value KernelBuilder::generic(ValueRange inputs, Value init,
                             ArrayRef<AffineMap> maps,
                             ArrayRef<utils::IteratorType> iterators,
                             BodyFn body) {
  auto op = linalg::GenericOp::create(
      builder, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
        linalg::YieldOp::create(b, bodyLoc, body(b, bodyLoc, args));
      });
  return op.getResult(0);
}

Value KernelBuilder::convert(Value source, ArrayRef<int64_t> shape, Type type,
                             AffineMap sourceMap) {
  auto identity = builder.getMultiDimIdentityMap(shape.size());
  SmallVector<utils::IteratorType> iterators(shape.size(), kPar);
  return generic({source}, empty(shape, type),
                 {sourceMap ? sourceMap : identity, identity}, iterators,
                 [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                   Value value = args[0];
                   auto from = cast<FloatType>(value.getType());
                   auto to = cast<FloatType>(type);
                   if (from.getWidth() < to.getWidth())
                     return arith::ExtFOp::create(b, l, to, value);
                   if (from.getWidth() > to.getWidth())
                     return arith::TruncFOp::create(b, l, to, value);
                   return value;
                 });
}

Value KernelBuilder::convert(Value source, Type type) {
  return convert(source, cast<RankedTensorType>(source.getType()).getShape(),
                 type);
}

AffineMap KernelBuilder::map(unsigned numDims, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> results;
  for (unsigned dim : dims)
    results.push_back(builder.getAffineDimExpr(dim));
  return AffineMap::get(numDims, 0, results, builder.getContext());
}

Value KernelBuilder::keyTemperatures(Value temp, bool clamped) {
  int64_t numKvHeads = cast<RankedTensorType>(temp.getType()).getDimSize(0);
  return generic({temp}, empty({numKvHeads}, computeType),
                 {map(1, {0}), map(1, {0})}, {utils::IteratorType::parallel},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value tau = toCompute(nb, args[0]);
                   if (!clamped)
                     return tau;
                   tau = arith::MaximumFOp::create(nb, l, tau, constant(1e-7));
                   tau = arith::MinimumFOp::create(nb, l, tau, constant(2.0));
                   return math::ExpOp::create(nb, l, tau);
                 });
}

Value KernelBuilder::normalizeHeads(Value residual, Value tau,
                                    int64_t numQueryHeads, double eps,
                                    bool clampEps) {
  using utils::IteratorType;
  constexpr IteratorType par = IteratorType::parallel;
  auto type = cast<RankedTensorType>(residual.getType());
  int64_t rows = type.getDimSize(0), heads = type.getDimSize(1);
  int64_t headDim = type.getDimSize(2);
  SmallVector<Value> dynamicRows;
  if (ShapedType::isDynamic(rows))
    dynamicRows.push_back(dim(residual, 0));
  Value squares = generic(
      {residual},
      fill(empty({rows, heads}, computeType, dynamicRows), constant(0.0)),
      {map(3, {0, 1, 2}), map(3, {0, 1})}, {par, par, IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::AddFOp::create(
            nb, l, args[1], arith::MulFOp::create(nb, l, args[0], args[0]));
      });
  Value sqrtDim = constant(std::sqrt(static_cast<double>(headDim)));
  // max(|x|, eps) is sqrt(max(|x|^2, eps^2)).
  Value epsValue = constant(clampEps ? eps * eps : eps);
  return generic(
      {residual, squares},
      empty({rows, heads, headDim}, computeType, dynamicRows),
      {map(3, {0, 1, 2}), map(3, {0, 1}), map(3, {0, 1, 2})}, {par, par, par},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value floored =
            clampEps
                ? arith::MaximumFOp::create(nb, l, args[1], epsValue)
                      .getResult()
                : arith::AddFOp::create(nb, l, args[1], epsValue).getResult();
        Value norm = math::SqrtOp::create(nb, l, floored);
        Value value = arith::DivFOp::create(
            nb, l, arith::MulFOp::create(nb, l, args[0], sqrtDim), norm);
        Value head = linalg::IndexOp::create(nb, l, 1);
        Value numHeadsValue =
            arith::ConstantIndexOp::create(nb, l, numQueryHeads);
        Value isKey = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge,
                                            head, numHeadsValue);
        Value kvIndex = arith::SubIOp::create(
            nb, l, arith::MaxUIOp::create(nb, l, head, numHeadsValue),
            numHeadsValue);
        Value keyScale =
            tensor::ExtractOp::create(nb, l, tau, ValueRange{kvIndex});
        return arith::SelectOp::create(
            nb, l, isKey, arith::MulFOp::create(nb, l, value, keyScale), value);
      });
}

std::pair<Value, Value> KernelBuilder::ropeTables(attn::RopeAttr rope,
                                                  int64_t headDim,
                                                  Value positions,
                                                  Value first) {
  int64_t rotated = *rope.getRotatedDim(headDim);
  int64_t half = rotated / 2;
  // Angles in f64: position * theta^(-2i/r), as the reference computes them.
  // Position first + 64 j + f takes its cosine and sine from those of
  // (first + 64 j) and f by the angle-addition formulas, in f64: the
  // transcendental functions run on positions / 64 + 64 rows instead of one
  // per position. Rounded to f32, about 3 entries in 10^5 differ from the
  // direct evaluation, by one ulp.
  double logTheta = std::log(rope.getThetaValue());
  constexpr int64_t fineRows = 64;
  if (!first)
    first = index(0);
  auto f64 = builder.getF64Type();
  // cos or sin of (offset + step * row) * frequency(pair), [rows, r/2] f64.
  auto angleTable = [&](Value rows, Value offset, int64_t step, bool sine) {
    SmallVector<Value> dynamicRows;
    int64_t staticRows = ShapedType::kDynamic;
    if (std::optional<int64_t> constantRows = getConstantIntValue(rows))
      staticRows = *constantRows;
    else
      dynamicRows.push_back(rows);
    return generic(
        {}, empty({staticRows, half}, f64, dynamicRows), {map(2, {0, 1})},
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          auto i64 = b.getI64Type();
          Value row = linalg::IndexOp::create(b, l, 0);
          Value pair = linalg::IndexOp::create(b, l, 1);
          auto toF64 = [&](Value indexValue) -> Value {
            Value asInt = arith::IndexCastOp::create(b, l, i64, indexValue);
            return arith::SIToFPOp::create(b, l, f64, asInt);
          };
          Value exponent = arith::MulFOp::create(
              b, l, toF64(pair),
              arith::ConstantOp::create(
                  b, l, f64,
                  b.getF64FloatAttr(-2.0 * logTheta /
                                    static_cast<double>(rotated))));
          Value frequency = math::ExpOp::create(b, l, exponent);
          Value position = arith::AddIOp::create(
              b, l, offset,
              arith::MulIOp::create(
                  b, l, row, arith::ConstantIndexOp::create(b, l, step)));
          Value angle = arith::MulFOp::create(b, l, toF64(position), frequency);
          return sine ? Value(math::SinOp::create(b, l, angle))
                      : Value(math::CosOp::create(b, l, angle));
        });
  };
  Value coarseRows = ceilDiv(positions, fineRows);
  Value coarseCos = angleTable(coarseRows, first, fineRows, false);
  Value coarseSin = angleTable(coarseRows, first, fineRows, true);
  Value fineCos = angleTable(index(fineRows), index(0), 1, false);
  Value fineSin = angleTable(index(fineRows), index(0), 1, true);

  MLIRContext *context = builder.getContext();
  AffineExpr row = getAffineDimExpr(0, context),
             pair = getAffineDimExpr(1, context);
  AffineMap coarseMap =
      AffineMap::get(2, 0, {row.floorDiv(fineRows), pair}, context);
  AffineMap fineMap = AffineMap::get(2, 0, {row % fineRows, pair}, context);
  Value init = empty({ShapedType::kDynamic, half}, computeType, {positions});
  auto table = [&](bool sine) {
    return generic(
        {coarseCos, coarseSin, fineCos, fineSin}, init,
        {coarseMap, coarseMap, fineMap, fineMap, map(2, {0, 1})},
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          // cos(a + b) = cos a cos b - sin a sin b,
          // sin(a + b) = sin a cos b + cos a sin b.
          Value lhs = arith::MulFOp::create(b, l, args[sine ? 1 : 0], args[2]);
          Value rhs = arith::MulFOp::create(b, l, args[sine ? 0 : 1], args[3]);
          Value result = sine ? Value(arith::AddFOp::create(b, l, lhs, rhs))
                              : Value(arith::SubFOp::create(b, l, lhs, rhs));
          if (computeType.getWidth() < 64)
            result = arith::TruncFOp::create(b, l, computeType, result);
          return result;
        });
  };
  return {table(false), table(true)};
}

std::pair<Value, AffineMap>
KernelBuilder::logitBiasTile(Value bias, OpFoldResult row0, Value key0,
                             int64_t group, int64_t blockQ, int64_t blockKV) {
  OpFoldResult zero = builder.getIndexAttr(0);
  // The bias is stored [.., i, c].
  if (cast<RankedTensorType>(bias.getType()).getRank() == 3)
    return {slice(bias, {zero, row0, key0}, {group, blockQ, blockKV},
                  {group, blockQ, blockKV}),
            map(3, {0, 2, 1})};
  return {slice(bias, {row0, key0}, {blockQ, blockKV}, {blockQ, blockKV}),
          map(3, {2, 1})};
}

FailureOr<Operation *>
attnfuse::kernels::tileKernelOp(RewriterBase &rewriter, TilingInterface op,
                                ArrayRef<OpFoldResult> tileSizes,
                                bool parallel) {
  scf::SCFTilingOptions options;
  options.setTileSizes(tileSizes);
  options.setLoopType(parallel ? scf::SCFTilingOptions::LoopType::ForallOp
                               : scf::SCFTilingOptions::LoopType::ForOp);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, op, options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  Operation *tile = tiled->tiledOps.front();
  rewriter.setInsertionPoint(tile);
  return tile;
}

Value attnfuse::kernels::distributeLoop(RewriterBase &rewriter, Value result,
                                        unsigned dim) {
  auto op = result.getDefiningOp<TilingInterface>();
  if (!op)
    return result;
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<OpFoldResult> tileSizes(op.getLoopIteratorTypes().size(),
                                      rewriter.getIndexAttr(0));
  tileSizes[dim] = rewriter.getIndexAttr(1);
  FailureOr<Operation *> tile =
      tileKernelOp(rewriter, op, tileSizes, /*parallel=*/true);
  if (failed(tile))
    return result;
  return (*tile)->getParentOfType<scf::ForallOp>().getResult(0);
}
