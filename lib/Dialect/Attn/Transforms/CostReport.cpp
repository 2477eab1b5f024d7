//===- CostReport.cpp - attn-cost-report pass -------------------*- C++ -*-===//

#include "attnfuse/Dialect/Attn/Transforms/CostReport.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"
#include "attnfuse/Dialect/Attn/Transforms/CostModel.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNCOSTREPORT
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse::attn;

namespace {

/// One layer of the report: its cost and the element type it is priced at.
struct ReportedLayer {
  Operation *op;
  LayerCost cost;
  int64_t elementBytes;
  std::string elementType;

  int64_t cacheBytesPerToken() const {
    return cost.cacheValuesPerToken * elementBytes;
  }
  int64_t mhaCacheBytesPerToken() const {
    return cost.mhaCacheValuesPerToken * elementBytes;
  }
  int64_t stateBytesPerSequence() const {
    return cost.stateValuesPerSequence * elementBytes;
  }
  /// Cache and state of one sequence.
  int64_t bytesPerSequence() const {
    return cacheBytesPerToken() * cost.cachedTokensPerSequence +
           stateBytesPerSequence();
  }
  int64_t mhaBytesPerSequence(int64_t seqLen) const {
    return mhaCacheBytesPerToken() * seqLen;
  }
};

/// Sums of the per-layer figures over the module.
struct ModelTotals {
  int64_t cacheBytesPerToken = 0, mhaCacheBytesPerToken = 0;
  int64_t stateBytesPerSequence = 0;
  int64_t bytesPerSequence = 0, mhaBytesPerSequence = 0;
  int64_t parameters = 0;
  double attentionFlops = 0, projectionFlops = 0, otherFlops = 0;

  ModelTotals(ArrayRef<ReportedLayer> layers, int64_t seq) {
    for (const ReportedLayer &layer : layers) {
      cacheBytesPerToken += layer.cacheBytesPerToken();
      mhaCacheBytesPerToken += layer.mhaCacheBytesPerToken();
      stateBytesPerSequence += layer.stateBytesPerSequence();
      bytesPerSequence += layer.bytesPerSequence();
      mhaBytesPerSequence += layer.mhaBytesPerSequence(seq);
      parameters += layer.cost.parameters;
      attentionFlops += layer.cost.attentionFlops;
      projectionFlops += layer.cost.projectionFlops;
      otherFlops += layer.cost.otherFlops;
    }
  }
};

/// Decimal units, the convention of memory capacities (docs/semantics.md):
/// 92274688 B prints as "92.3 MB", 5905580032 B as "5.906 GB".
std::string formatBytes(double bytes) {
  static const char *units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  // Thresholds on the value as it will be rounded, so that 999.7 kB prints
  // as "1.000 MB", not "1000 kB".
  int unit = 0;
  while (bytes >= 999.5 && unit < 5) {
    bytes /= 1000.0;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (unit == 0)
    os << static_cast<int64_t>(bytes);
  else if (bytes < 9.9995)
    os << llvm::format("%.3f", bytes);
  else if (bytes < 99.95)
    os << llvm::format("%.1f", bytes);
  else
    os << llvm::format("%.0f", bytes);
  os << " " << units[unit];
  return text;
}

/// Large counts with an SI suffix: 8.52 M, 1.23 T.
std::string formatCount(double count) {
  static const char *suffixes[] = {"", " k", " M", " G", " T", " P", " E"};
  // 999.7 k has three significant digits only as "1 M" ("%.3g" would print
  // "1e+03 k").
  int suffix = 0;
  while (std::fabs(count) >= 999.5 && suffix < 6) {
    count /= 1000.0;
    ++suffix;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (suffix == 0)
    os << static_cast<int64_t>(count);
  else
    os << llvm::format("%.3g", count) << suffixes[suffix];
  return text;
}

/// "64x" for whole ratios, "3.56x" otherwise.
std::string formatRatio(double ratio) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (std::fabs(ratio - std::round(ratio)) < 1e-9)
    os << static_cast<int64_t>(std::round(ratio)) << "x";
  else
    os << llvm::format("%.2f", ratio) << "x";
  return text;
}

std::string formatPercent(double fraction) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.3f", 100.0 * fraction);
  // Trim trailing zeros: 50.000 -> 50, 96.875 stays.
  while (text.back() == '0')
    text.pop_back();
  if (text.back() == '.')
    text.pop_back();
  return text + "%";
}

/// Prices the layers of one module under the report's options.
class CostReporter {
public:
  explicit CostReporter(const CostReportOptions &options) : options(options) {}

  LogicalResult write(ModuleOp module, raw_ostream &os);

private:
  /// Element bytes and name for `op`: from `elemType` if set (then `op`
  /// may be null), else from the op's input element type.
  FailureOr<std::pair<int64_t, std::string>> getElementType(Operation *op);
  /// Sequence length and batch for `op`: options if set, else static IR
  /// dimensions, else the defaults.
  std::pair<int64_t, int64_t> getSequenceAndBatch(Operation *op);

  void printText(ArrayRef<ReportedLayer> layers, int64_t seq, int64_t batch,
                 raw_ostream &os);
  void printJson(ArrayRef<ReportedLayer> layers, int64_t seq, int64_t batch,
                 raw_ostream &os);

  const CostReportOptions &options;
};

struct AttnCostReportPass
    : public attnfuse::attn::impl::AttnCostReportBase<AttnCostReportPass> {
  using AttnCostReportBase::AttnCostReportBase;

  void runOnOperation() override {
    CostReportOptions options;
    if (seqLen.hasValue())
      options.seqLen = seqLen;
    if (batch.hasValue())
      options.batch = batch;
    options.elemType = elemType;
    options.format = format;
    options.function = function;
    if (failed(writeCostReport(getOperation(), options, llvm::outs())))
      return signalPassFailure();
    llvm::outs().flush();
    markAllAnalysesPreserved();
  }
};

} // namespace

FailureOr<std::pair<int64_t, std::string>>
CostReporter::getElementType(Operation *op) {
  const std::string &elemType = options.elemType;
  if (!elemType.empty()) {
    int64_t bytes = llvm::StringSwitch<int64_t>(elemType)
                        .Case("f32", 4)
                        .Cases({"f16", "bf16"}, 2)
                        .Case("fp8", 1)
                        .Default(0);
    if (bytes == 0)
      return failure();
    return std::make_pair(bytes, elemType);
  }
  Type type = getElementTypeOrSelf(op->getOperand(0).getType());
  std::string name;
  llvm::raw_string_ostream os(name);
  os << type;
  return std::make_pair(getElementBytes(type), name);
}

std::pair<int64_t, int64_t> CostReporter::getSequenceAndBatch(Operation *op) {
  auto inputType = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t seq = options.seqLen.value_or(kDefaultCostSeqLen);
  int64_t batchSize = options.batch.value_or(1);
  // A decode layer holds as many tokens as its cache: the static capacity of
  // a contiguous cache (paged ones need seq-len).
  Value cache;
  if (auto decode = dyn_cast<QKVDecodeOp>(op);
      decode && !decode.getBlockTable())
    cache = decode.getKeyCache();
  if (auto decode = dyn_cast<CCADecodeOp>(op);
      decode && !decode.getBlockTable())
    cache = decode.getKeyCache();
  if (isa<QKVDecodeOp, CCADecodeOp>(op)) {
    auto cacheType =
        cache ? cast<RankedTensorType>(cache.getType()) : RankedTensorType();
    if (!options.seqLen && cacheType && !cacheType.isDynamicDim(1))
      seq = cacheType.getDimSize(1);
  } else if (!options.seqLen && !inputType.isDynamicDim(1)) {
    seq = inputType.getDimSize(1);
  }
  if (!options.batch && !inputType.isDynamicDim(0))
    batchSize = inputType.getDimSize(0);
  return {seq, batchSize};
}

LogicalResult attnfuse::attn::writeCostReport(ModuleOp module,
                                              const CostReportOptions &options,
                                              raw_ostream &os) {
  return CostReporter(options).write(module, os);
}

LogicalResult CostReporter::write(ModuleOp module, raw_ostream &os) {
  const std::string &format = options.format;
  if (format != "text" && format != "json")
    return module.emitError() << "attn-cost-report: unknown format '" << format
                              << "', expected 'text' or 'json'";
  int64_t seqLen = options.seqLen.value_or(kDefaultCostSeqLen);
  int64_t batch = options.batch.value_or(1);
  if (seqLen <= 0 || batch <= 0)
    return module.emitError()
           << "attn-cost-report: seq-len and batch must be positive, got "
           << seqLen << " and " << batch;
  // Check elem-type once, not once per layer (and also without layers).
  if (!options.elemType.empty() && failed(getElementType(nullptr)))
    return module.emitError()
           << "attn-cost-report: unknown elem-type '" << options.elemType
           << "', expected f32, f16, bf16 or fp8";

  SmallVector<ReportedLayer> layers;
  int64_t reportSeq = seqLen, reportBatch = batch;
  bool failedLayer = false;
  Operation *scope = module;
  if (!options.function.empty()) {
    scope = SymbolTable::lookupSymbolIn(module, options.function);
    if (!scope)
      return module.emitError() << "attn-cost-report: no function '"
                                << options.function << "' in the module";
  }
  scope->walk([&](Operation *op) {
    if (!isa<QKVAttentionOp, CCAOp, QKVDecodeOp, CCADecodeOp>(op))
      return;
    auto [seq, batchSize] = getSequenceAndBatch(op);
    if (layers.empty()) {
      reportSeq = seq;
      reportBatch = batchSize;
    } else if (seq != reportSeq || batchSize != reportBatch) {
      op->emitError() << "attn-cost-report: layer runs " << batchSize << " x "
                      << seq << " tokens but an earlier one " << reportBatch
                      << " x " << reportSeq
                      << "; pass seq-len and batch to price them alike";
      failedLayer = true;
      return;
    }
    // elem-type was checked above.
    FailureOr<std::pair<int64_t, std::string>> element = getElementType(op);
    FailureOr<LayerCost> cost = computeLayerCost(op, seq, batchSize);
    if (failed(cost)) {
      failedLayer = true;
      return;
    }
    layers.push_back({op, *cost, element->first, element->second});
  });
  if (failedLayer)
    return failure();

  if (format == "json")
    printJson(layers, reportSeq, reportBatch, os);
  else
    printText(layers, reportSeq, reportBatch, os);
  return success();
}

void CostReporter::printText(ArrayRef<ReportedLayer> layers, int64_t seq,
                             int64_t batchSize, raw_ostream &os) {
  os << "attn-cost-report: " << layers.size() << " attention layer"
     << (layers.size() == 1 ? "" : "s") << ", " << seq
     << " tokens per sequence, batch " << batchSize << "\n";
  if (layers.empty())
    return;

  os << llvm::format("%-6s %-20s %-6s %-7s %-5s %-17s %-10s %-9s %-10s "
                     "%-10s %s\n",
                     "layer", "op", "width", "heads", "d", "cache/token",
                     "state/seq", "params", "attn FLOP", "proj FLOP",
                     "vs MHA cache");
  std::string elementType = layers.front().elementType;
  bool mixedTypes = false;
  for (auto [index, layer] : llvm::enumerate(layers)) {
    const LayerCost &cost = layer.cost;
    std::string heads =
        std::to_string(cost.numHeads) + "/" + std::to_string(cost.numKvHeads);
    std::string cache = std::to_string(cost.cacheValuesPerToken) + " (" +
                        formatBytes(layer.cacheBytesPerToken()) + ")";
    double ratio = static_cast<double>(cost.mhaCacheValuesPerToken) /
                   static_cast<double>(cost.cacheValuesPerToken);
    double reduction = 1.0 - 1.0 / ratio;
    os << llvm::format(
        "%-6zu %-20s %-6lld %-7s %-5lld %-17s %-10s %-9s %-10s %-10s "
        "%s, %s less\n",
        index, cost.kind.c_str(), static_cast<long long>(cost.modelWidth),
        heads.c_str(), static_cast<long long>(cost.headDim), cache.c_str(),
        formatBytes(layer.stateBytesPerSequence()).c_str(),
        formatCount(cost.parameters).c_str(),
        formatCount(cost.attentionFlops).c_str(),
        formatCount(cost.projectionFlops + cost.otherFlops).c_str(),
        formatRatio(ratio).c_str(), formatPercent(reduction).c_str());
    mixedTypes |= layer.elementType != elementType;
  }
  if (mixedTypes)
    elementType = "mixed element types";

  ModelTotals totals(layers, seq);
  double ratio = static_cast<double>(totals.mhaBytesPerSequence) /
                 static_cast<double>(totals.bytesPerSequence);
  os << "total over " << layers.size() << " layers (" << elementType << "):\n";
  os << "  kv cache per token:    " << formatBytes(totals.cacheBytesPerToken)
     << " vs " << formatBytes(totals.mhaCacheBytesPerToken) << " (MHA)\n";
  os << "  per-sequence state:    " << formatBytes(totals.stateBytesPerSequence)
     << "\n";
  os << "  kv cache per sequence: " << formatBytes(totals.bytesPerSequence)
     << " vs " << formatBytes(totals.mhaBytesPerSequence)
     << " (MHA) per sequence at " << seq << " tokens in " << elementType << " ("
     << formatRatio(ratio) << " smaller, " << formatPercent(1.0 - 1.0 / ratio)
     << " less)\n";
  if (batchSize != 1)
    os << "  kv cache per batch:    "
       << formatBytes(static_cast<double>(totals.bytesPerSequence) * batchSize)
       << " for " << batchSize << " sequences\n";
  os << "  parameters:            " << formatCount(totals.parameters) << "\n";
  bool decode = llvm::any_of(
      layers, [](const ReportedLayer &layer) { return layer.cost.decodeStep; });
  bool prefill = llvm::any_of(layers, [](const ReportedLayer &layer) {
    return !layer.cost.decodeStep;
  });
  os << (decode && prefill ? "  FLOPs (prefill/step):  "
         : decode          ? "  decode-step FLOPs:     "
                           : "  prefill FLOPs:         ")
     << formatCount(totals.attentionFlops + totals.projectionFlops +
                    totals.otherFlops)
     << " (attention " << formatCount(totals.attentionFlops) << ", projections "
     << formatCount(totals.projectionFlops);
  if (totals.otherFlops > 0)
    os << ", convolutions " << formatCount(totals.otherFlops);
  os << ")\n";
}

void CostReporter::printJson(ArrayRef<ReportedLayer> layers, int64_t seq,
                             int64_t batchSize, raw_ostream &os) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  ModelTotals totals(layers, seq);
  json.object([&] {
    json.attribute("seq_len", seq);
    json.attribute("batch", batchSize);
    json.attributeArray("layers", [&] {
      for (const ReportedLayer &layer : layers) {
        const LayerCost &cost = layer.cost;
        json.object([&] {
          json.attribute("op", cost.kind);
          json.attribute("element_type", layer.elementType);
          json.attribute("element_bytes", layer.elementBytes);
          json.attribute("model_width", cost.modelWidth);
          json.attribute("num_heads", cost.numHeads);
          json.attribute("num_kv_heads", cost.numKvHeads);
          json.attribute("head_dim", cost.headDim);
          json.attribute("causal", cost.causal);
          if (cost.window)
            json.attribute("window", *cost.window);
          json.attribute("cache_values_per_token", cost.cacheValuesPerToken);
          json.attribute("cache_bytes_per_token", layer.cacheBytesPerToken());
          json.attribute("cached_tokens_per_sequence",
                         cost.cachedTokensPerSequence);
          json.attribute("state_values_per_sequence",
                         cost.stateValuesPerSequence);
          json.attribute("state_bytes_per_sequence",
                         layer.stateBytesPerSequence());
          json.attribute("bytes_per_sequence", layer.bytesPerSequence());
          json.attribute("mha_cache_values_per_token",
                         cost.mhaCacheValuesPerToken);
          json.attribute("mha_bytes_per_sequence",
                         layer.mhaBytesPerSequence(seq));
          json.attribute("cache_reduction_vs_mha",
                         1.0 - static_cast<double>(cost.cacheValuesPerToken) /
                                   cost.mhaCacheValuesPerToken);
          json.attribute("parameters", cost.parameters);
          json.attribute("attention_pairs", cost.attentionPairs);
          json.attribute("attention_flops", cost.attentionFlops);
          json.attribute("projection_flops", cost.projectionFlops);
          json.attribute("other_flops", cost.otherFlops);
          json.attribute("decode_step", cost.decodeStep);
        });
      }
    });
    json.attributeObject("total", [&] {
      json.attribute("layers", static_cast<int64_t>(layers.size()));
      json.attribute("cache_bytes_per_token", totals.cacheBytesPerToken);
      json.attribute("mha_cache_bytes_per_token", totals.mhaCacheBytesPerToken);
      json.attribute("state_bytes_per_sequence", totals.stateBytesPerSequence);
      json.attribute("bytes_per_sequence", totals.bytesPerSequence);
      json.attribute("mha_bytes_per_sequence", totals.mhaBytesPerSequence);
      json.attribute("parameters", totals.parameters);
      json.attribute("attention_flops", totals.attentionFlops);
      json.attribute("projection_flops", totals.projectionFlops);
      json.attribute("other_flops", totals.otherFlops);
    });
  });
  os << "\n";
}
