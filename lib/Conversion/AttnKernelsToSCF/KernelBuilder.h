//===- KernelBuilder.h - helpers for the tiled CPU kernels ------*- C++ -*-===//
//
// Small builders shared by the tiled lowerings of the fused attn kernel ops:
// index arithmetic, tiles as tensor slices, linalg.generic bodies and RoPE
// tables. Everything stays on tensors; bufferization comes later.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTOSCF_KERNELBUILDER_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTOSCF_KERNELBUILDER_H

#include "attnfuse/Dialect/Attn/IR/AttnAttributes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <algorithm>

namespace attnfuse::kernels {

constexpr mlir::utils::IteratorType kPar = mlir::utils::IteratorType::parallel;
constexpr mlir::utils::IteratorType kRed = mlir::utils::IteratorType::reduction;

using mlir::Location;
using mlir::OpBuilder;
using mlir::Type;
using mlir::Value;

/// Builds the ops of one kernel at a fixed location, with the arithmetic
/// type `computeType` (f32 for 16-bit element types).
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &builder, Location loc, Type elementType);

  OpBuilder &builder;
  Location loc;
  Type elementType;
  mlir::FloatType computeType;

  // Index arithmetic (signed where it can go negative).
  Value index(int64_t value);
  Value add(Value lhs, Value rhs);
  Value sub(Value lhs, Value rhs);
  Value mul(Value lhs, Value rhs);
  Value mul(Value lhs, int64_t rhs) { return mul(lhs, index(rhs)); }
  Value add(Value lhs, int64_t rhs) { return add(lhs, index(rhs)); }
  Value min(Value lhs, Value rhs);
  Value max(Value lhs, Value rhs);
  Value ceilDiv(Value lhs, int64_t rhs);
  Value floorDiv(Value lhs, int64_t rhs);
  Value lessThan(Value lhs, Value rhs);
  Value orI(Value lhs, Value rhs);
  Value dim(Value tensor, int64_t dim);

  // Floats in the compute type.
  Value constant(double value);
  Value constant(mlir::FloatType type, double value);
  /// Converts a loaded element to the compute type, or a computed value back
  /// to the element type.
  Value toCompute(OpBuilder &b, Value value);
  Value toElement(OpBuilder &b, Value value);

  /// `tensor.empty` of `shape` (kDynamic entries take `dynamicSizes`).
  Value empty(llvm::ArrayRef<int64_t> shape, Type type,
              mlir::ValueRange dynamicSizes = {});
  Value fill(Value tensor, Value value);

  /// A slice of `source` at `offsets` with static `sizes`, rank-reduced to
  /// the dimensions of `sizes` that are not 1 in `droppedDims`.
  Value slice(Value source, llvm::ArrayRef<mlir::OpFoldResult> offsets,
              llvm::ArrayRef<int64_t> sizes,
              llvm::ArrayRef<int64_t> resultShape);
  Value insert(Value tile, Value dest,
               llvm::ArrayRef<mlir::OpFoldResult> offsets,
               llvm::ArrayRef<int64_t> sizes);

  /// Pads dimension `dim` of `source` with zeros at the end up to `size`.
  Value padDimTo(Value source, int64_t dim, Value size);
  /// Pads each (dimension, size) of `dimSizes` so, in one copy.
  Value padDimsTo(Value source,
                  llvm::ArrayRef<std::pair<int64_t, Value>> dimSizes);

  /// linalg.generic with one output; `body` gets the block arguments
  /// (inputs, then the output) and returns the value to yield.
  using BodyFn =
      llvm::function_ref<Value(OpBuilder &, Location, mlir::ValueRange)>;
  Value generic(mlir::ValueRange inputs, Value init,
                llvm::ArrayRef<mlir::AffineMap> maps,
                llvm::ArrayRef<mlir::utils::IteratorType> iterators,
                BodyFn body);

  /// A static-shape tensor of `shape` whose element at index `i` is the
  /// element `sourceMap(i)` of `source` (identity when null) converted to
  /// `type`: element type conversions, transposes and slices of a dim.
  Value convert(Value source, llvm::ArrayRef<int64_t> shape, Type type,
                mlir::AffineMap sourceMap = {});
  /// `source` (static shape) with its elements converted to `type`.
  Value convert(Value source, Type type);

  /// Blocks of W^T for tiled GEMMs: a static `[N, E]` weight, zero-padded
  /// to whole blocks, packed once into
  /// `[ceil(N / blockN), ceil(E / blockK), blockK, blockN]` in the compute
  /// type,
  /// `packed[nb, kb, k, n] = W[nb * blockN + n, kb * blockK + k]`. A GEMM
  /// step then reads one contiguous block: the rows of a plain W^T lie
  /// E * 4 bytes apart, which for E = 1024 maps them all to the same L1
  /// sets. The packing loops run k innermost (contiguous reads of W).
  Value packWeightBlocks(Value weight, int64_t blockN, int64_t blockK);
  /// The whole blocks of `blockS` tokens of `input` `[B, S, E]` (E a
  /// multiple of `blockK`) in the compute type as `[B, S / blockS,
  /// E / blockK, blockS, blockK]`: a GEMM step's rows lie `blockK` elements
  /// apart. Read in place they lie E apart (4 KiB for E = 1024), and the
  /// register block's broadcasts from its rows all map to the same L1 sets.
  Value packInputBlocks(Value input, int64_t blockS, int64_t blockK);
  /// `acc + rows x W^T[:, featureBlock * blockN, + blockN)` for `rows`
  /// `[m, E]` (static), or `[E / blockK, m, blockK]` as packInputBlocks
  /// lays them out, and `packed` from packWeightBlocks: an scf.for over the
  /// E / blockK steps, each one `[m, blockK] x [blockK, blockN]`
  /// contraction on `acc` `[m, blockN]` (compute type).
  Value multiplyWeightBlock(Value acc, Value rows, Value packed,
                            Value featureBlock);
  /// `[m, N]` (compute type): rows `[0, realRows)` of `rows` `[m, >= E]`
  /// (static) times `weight^T` for `weight` `[N, E]` as it is laid out, and
  /// zero rows after. Matrix-vector products per row, the rows innermost so
  /// that a block of W's rows is read from memory once: for calls too short
  /// to pay for packing W.
  Value multiplyRowsUnpacked(Value rows, Value realRows, Value weight);

  /// Affine map of `numDims` loop dims to the results `dims`.
  mlir::AffineMap map(unsigned numDims, llvm::ArrayRef<unsigned> dims);

  /// The key temperatures `[Hk]` in the compute type: `temp`, or
  /// `exp(clamp(temp, 1e-7, 2))` when `clamped`.
  Value keyTemperatures(Value temp, bool clamped);
  /// The CCA norm of `residual` (`[rows, heads, d]` in the compute type,
  /// query heads first): every head scaled to norm sqrt(d) (divided by
  /// `sqrt(|x|^2 + eps)`, or by `max(|x|, eps)` when `clampEps`), the key
  /// heads (index >= numQueryHeads) also by their temperature `tau`
  /// (`[Hk]`).
  Value normalizeHeads(Value residual, Value tau, int64_t numQueryHeads,
                       double eps, bool clampEps);

  /// Cosine and sine tables `[positions, r/2]` in the compute type for
  /// `rope` over heads of `headDim`, positions first .. first+positions-1
  /// (row i is position first + i; first is 0 when null).
  std::pair<Value, Value> ropeTables(attn::RopeAttr rope, int64_t headDim,
                                     Value positions, Value first = {});

  /// The `[G, block_q, block_kv]` (or `[block_q, block_kv]`) tile at rows
  /// `row0` and keys `key0` of a logit bias `[G, rows, keys]` (or
  /// `[rows, keys]`, shared by the heads), with its indexing map over the
  /// `(g, c, i)` loops of a transposed `[G, block_kv, block_q]` score tile.
  std::pair<Value, mlir::AffineMap>
  logitBiasTile(Value bias, mlir::OpFoldResult row0, Value key0, int64_t group,
                int64_t blockQ, int64_t blockKV);
};

/// The largest divisor of `n` that is at most `limit` (at least 1): a tile
/// size that divides a static dimension, so every tile has a static shape.
inline int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, std::max<int64_t>(limit, 1)); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

/// Tiles `op` through its TilingInterface with `tileSizes` (one
/// `scf.forall` when `parallel`, nested `scf.for` otherwise), replaces it by
/// the loops' results and returns the one tile op, with the insertion point
/// before it. On failure (the op refuses the tile, with an error on it)
/// the op is left in place.
mlir::FailureOr<mlir::Operation *>
tileKernelOp(mlir::RewriterBase &rewriter, mlir::TilingInterface op,
             llvm::ArrayRef<mlir::OpFoldResult> tileSizes, bool parallel);

/// `result` of a linalg op (a packing copy before a kernel's tile loops)
/// recomputed by one `scf.forall` over loop `dim` of the op, one iteration
/// each: the copy runs on every thread instead of before the threads start
/// (a projection's packed weight and input were a serial 6% of it at one
/// thread). Returns `result` itself when the op does not tile; the
/// insertion point is kept.
mlir::Value distributeLoop(mlir::RewriterBase &rewriter, mlir::Value result,
                           unsigned dim);

} // namespace attnfuse::kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTOSCF_KERNELBUILDER_H
