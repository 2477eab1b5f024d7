//===- CostModel.h - memory and compute cost of attn layers -----*- C++ -*-===//
//
// The analytical cost model behind `attn-cost-report`: KV-cache and
// per-sequence state, parameters and prefill FLOPs of one attention layer,
// following the cost model of docs/semantics.md (section "Cost model").
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_COSTMODEL_H
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <string>

namespace attnfuse::attn {

/// Costs of one attention layer for `batch` sequences of `seqLen` tokens.
struct LayerCost {
  /// "qkv_attention <kv>", "cca", "qkv_decode <kv>", ...
  std::string kind;
  /// A decode layer: the FLOPs are those of one step (one new token per
  /// sequence over `cachedTokensPerSequence` cached ones), not a prefill.
  bool decodeStep = false;
  int64_t modelWidth = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  bool causal = false;
  std::optional<int64_t> window;

  /// Values the KV cache holds per token (this layer).
  int64_t cacheValuesPerToken = 0;
  /// Tokens the cache holds per sequence: the sequence, or the window.
  int64_t cachedTokensPerSequence = 0;
  /// Per-sequence decode state besides the cache (CCA conv and value shift).
  int64_t stateValuesPerSequence = 0;
  /// Cache values per token of an MHA layer of the same width: K and V of
  /// `E` values each.
  int64_t mhaCacheValuesPerToken = 0;

  /// Weights and biases of the layer.
  int64_t parameters = 0;

  /// Query-key pairs the attention scores, per head and sequence.
  int64_t attentionPairs = 0;
  /// Prefill FLOPs of the batch: the two attention matmuls, the projection
  /// matmuls, and everything else (CCA convolutions).
  double attentionFlops = 0;
  double projectionFlops = 0;
  double otherFlops = 0;

  double totalFlops() const {
    return attentionFlops + projectionFlops + otherFlops;
  }
};

/// Number of (query, key) pairs a length-`seqLen` self-attention scores under
/// the given mask.
int64_t countAttentionPairs(int64_t seqLen, bool causal,
                            std::optional<int64_t> window);

/// Costs of an `attn.qkv_attention` or `attn.cca` op for `batch` prefills
/// of `seqLen` tokens, or of a decode step of `attn.qkv_decode` or
/// `attn.cca_decode` with `seqLen` cached tokens; failure for any other op.
mlir::FailureOr<LayerCost> computeLayerCost(mlir::Operation *op, int64_t seqLen,
                                            int64_t batch);

/// Bytes of one element of `type` (sub-byte types round up).
int64_t getElementBytes(mlir::Type type);

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_COSTMODEL_H
