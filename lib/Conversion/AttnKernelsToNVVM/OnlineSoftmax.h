//===- OnlineSoftmax.h - the flash online softmax on fragments --*- C++ -*-===//
//
// The online softmax of a consumer warpgroup's score tile, held as a wgmma
// accumulator (`AccumulatorTile`): each thread has values of two rows, a row
// is spread over the four lanes of a quad. Scores are scaled into the log2
// domain (`scale * log2(e)`) so that each probability is one ex2.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_ONLINESOFTMAX_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_ONLINESOFTMAX_H

#include "Mainloop.h"

namespace attnfuse::sm90 {

/// `f` folded over `values` pairwise (a tree: short dependency chains).
Value treeReduce(DeviceBuilder &d, llvm::SmallVector<Value> values,
                 const std::function<Value(Value, Value)> &f);

/// `f` over the four lanes of the quad that holds one accumulator row.
Value quadReduce(DeviceBuilder &d, Value v,
                 const std::function<Value(Value, Value)> &f);

/// One key tile of the online softmax. Given the running row maxima `max`
/// and sums `sum` (of the thread's two rows, not yet summed over the quad),
/// `update` computes the tile's probabilities, the new maxima and sums, and
/// the factor that rescales what was accumulated before.
struct OnlineSoftmax {
  OnlineSoftmax(DeviceBuilder &d, double scale);

  struct Step {
    llvm::SmallVector<Value> probs;
    Value max[2], sum[2], rescale[2];
  };
  Step update(llvm::ArrayRef<Value> scores, const Value max[2],
              const Value sum[2]) const;
  /// `acc` (an accumulator of the same rows) times the step's rescale.
  Value rescale(Value acc, int64_t n, const Step &step) const;
  /// 1 / (the quad's sum) per row, 0 for a row that saw no key.
  void inverseSums(const Value sum[2], Value inverse[2]) const;
  /// The natural log-sum-exp `scale * max + ln(sum)` of the scaled scores
  /// per row (the quad's sum), -inf for a row that saw no key.
  void logSumExp(const Value max[2], const Value sum[2], Value lse[2]) const;
  /// The log2-domain offset `lse * log2(e)` that turns the scaled scores
  /// into probabilities, `exp2(score * scaleLog2 - offset)`; 0 for a row
  /// without keys (lse = -inf), whose scores are all -inf.
  Value probabilityOffset(Value lse) const;

  DeviceBuilder &d;
  Value scaleLog2, negInf, zero;
};

} // namespace attnfuse::sm90

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_ONLINESOFTMAX_H
