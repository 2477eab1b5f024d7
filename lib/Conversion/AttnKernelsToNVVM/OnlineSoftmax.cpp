//===- OnlineSoftmax.cpp - the flash online softmax on fragments -*- C++ -*-==//

#include "OnlineSoftmax.h"

#include <limits>

using namespace mlir;
using namespace attnfuse::sm90;
using arith::CmpFPredicate;

Value attnfuse::sm90::treeReduce(DeviceBuilder &d, SmallVector<Value> values,
                                 const std::function<Value(Value, Value)> &f) {
  while (values.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < values.size(); i += 2)
      next.push_back(f(values[i], values[i + 1]));
    if (values.size() % 2)
      next.push_back(values.back());
    values = std::move(next);
  }
  return values.front();
}

Value attnfuse::sm90::quadReduce(DeviceBuilder &d, Value v,
                                 const std::function<Value(Value, Value)> &f) {
  v = f(v, d.shflBfly(v, 1));
  return f(v, d.shflBfly(v, 2));
}

OnlineSoftmax::OnlineSoftmax(DeviceBuilder &d, double scale) : d(d) {
  const double log2e = 1.4426950408889634;
  scaleLog2 = d.cf(scale * log2e);
  negInf = d.cf(-std::numeric_limits<double>::infinity());
  zero = d.cf(0.0);
}

OnlineSoftmax::Step OnlineSoftmax::update(ArrayRef<Value> scores,
                                          const Value max[2],
                                          const Value sum[2]) const {
  auto maxOf = [&](Value a, Value b) { return d.maxf(a, b); };
  auto sumOf = [&](Value a, Value b) { return d.addf(a, b); };
  Step step;
  Value maxScaled[2];
  for (int h = 0; h < 2; ++h) {
    SmallVector<Value> row;
    for (size_t i = 0; i < scores.size(); ++i)
      if (AccumulatorTile::half(i) == h)
        row.push_back(scores[i]);
    Value tileMax = quadReduce(d, treeReduce(d, row, maxOf), maxOf);
    step.max[h] = d.maxf(max[h], tileMax);
    // A row that has seen no key keeps max = -inf: subtract 0 instead so
    // p = exp2(-inf) = 0 and the rescale is 0, never NaN.
    Value empty = d.cmpf(CmpFPredicate::OEQ, step.max[h], negInf);
    maxScaled[h] = d.select(empty, zero, d.mulf(step.max[h], scaleLog2));
    step.rescale[h] = d.exp2(d.subf(d.mulf(max[h], scaleLog2), maxScaled[h]));
  }
  SmallVector<Value> rowTerms[2];
  Value negScaled[2] = {arith::NegFOp::create(d.b, d.loc, maxScaled[0]),
                        arith::NegFOp::create(d.b, d.loc, maxScaled[1])};
  for (auto [i, v] : llvm::enumerate(scores)) {
    int64_t h = AccumulatorTile::half(i);
    Value e = d.exp2(d.fma(v, scaleLog2, negScaled[h]));
    step.probs.push_back(e);
    rowTerms[h].push_back(e);
  }
  for (int h = 0; h < 2; ++h)
    step.sum[h] =
        d.fma(sum[h], step.rescale[h], treeReduce(d, rowTerms[h], sumOf));
  return step;
}

Value OnlineSoftmax::rescale(Value acc, int64_t n, const Step &step) const {
  SmallVector<Value> values = d.unpack(acc, n);
  for (auto [i, v] : llvm::enumerate(values))
    v = d.mulf(v, step.rescale[AccumulatorTile::half(i)]);
  return d.pack(acc, values);
}

void OnlineSoftmax::inverseSums(const Value sum[2], Value inverse[2]) const {
  for (int h = 0; h < 2; ++h) {
    Value l =
        quadReduce(d, sum[h], [&](Value a, Value b) { return d.addf(a, b); });
    Value empty = d.cmpf(CmpFPredicate::OEQ, l, zero);
    inverse[h] = d.select(empty, zero, d.divf(d.cf(1.0), l));
  }
}

void OnlineSoftmax::logSumExp(const Value max[2], const Value sum[2],
                              Value lse[2]) const {
  const double ln2 = 0.6931471805599453;
  for (int h = 0; h < 2; ++h) {
    Value l =
        quadReduce(d, sum[h], [&](Value a, Value b) { return d.addf(a, b); });
    Value empty = d.cmpf(CmpFPredicate::OEQ, l, zero);
    Value log2Sum = d.fma(max[h], scaleLog2, d.log2Approx(l));
    lse[h] = d.select(empty, negInf, d.mulf(log2Sum, d.cf(ln2)));
  }
}

Value OnlineSoftmax::probabilityOffset(Value lse) const {
  const double log2e = 1.4426950408889634;
  Value empty = d.cmpf(CmpFPredicate::OEQ, lse, negInf);
  return d.select(empty, zero, d.mulf(lse, d.cf(log2e)));
}
