//===- ShapeChecks.cpp - size relations checked before a JIT call ---------===//
//
// Every tensor value of the function gets one symbolic size per dimension:
// a dimension of an argument, a constant, a sum or product of other sizes,
// or an unknown. Walking the ops in order, each op's semantics tie the sizes
// of its operands together (relations, checked per call) and give the sizes
// of its results. Unknown sizes take the value of whatever they are found
// equal to while checking.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/ExecutionEngine/ShapeChecks.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

using namespace mlir;
using namespace attnfuse;
using Size = ShapeChecks::Size;
using Relation = ShapeChecks::Relation;

namespace attnfuse {

class ShapeRelationBuilder {
public:
  explicit ShapeRelationBuilder(ShapeChecks &checks) : checks(checks) {}

  void run(func::FuncOp func) {
    for (auto [index, argument] : llvm::enumerate(func.getArguments())) {
      auto type = dyn_cast<RankedTensorType>(argument.getType());
      if (!type)
        continue;
      std::vector<unsigned> argSizes;
      for (int64_t dim = 0; dim < type.getRank(); ++dim)
        argSizes.push_back(
            type.isDynamicDim(dim)
                ? add({Size::Kind::Argument, int64_t(index), dim})
                : constant(type.getDimSize(dim)));
      valueSizes[argument] = std::move(argSizes);
    }
    func.walk([&](Operation *op) { visit(op); });
  }

private:
  ShapeChecks &checks;
  llvm::DenseMap<Value, std::vector<unsigned>> valueSizes;
  std::map<int64_t, unsigned> constants;
  /// Where the current op is, for the reasons.
  std::string opText;

  unsigned add(Size size) {
    checks.sizes.push_back(size);
    return checks.sizes.size() - 1;
  }
  unsigned constant(int64_t value) {
    auto [it, inserted] = constants.try_emplace(value, 0);
    if (inserted)
      it->second = add({Size::Kind::Constant, value, 0});
    return it->second;
  }
  unsigned unknown() { return add({Size::Kind::Unknown, 0, 0}); }
  unsigned sum(unsigned size, int64_t addend) {
    if (addend == 0)
      return size;
    const Size &s = checks.sizes[size];
    if (s.kind == Size::Kind::Constant)
      return constant(s.first + addend);
    return add({Size::Kind::Sum, int64_t(size), addend});
  }
  unsigned product(unsigned lhs, unsigned rhs) {
    return add({Size::Kind::Product, int64_t(lhs), int64_t(rhs)});
  }

  /// The sizes of `value`: those derived so far, else one per dimension of
  /// its type (constants where static).
  const std::vector<unsigned> &sizesOf(Value value) {
    auto it = valueSizes.find(value);
    if (it != valueSizes.end())
      return it->second;
    std::vector<unsigned> result;
    if (auto type = dyn_cast<RankedTensorType>(value.getType()))
      for (int64_t dim : type.getShape())
        result.push_back(ShapedType::isDynamic(dim) ? unknown()
                                                    : constant(dim));
    return valueSizes[value] = std::move(result);
  }
  unsigned dim(Value value, int64_t index) {
    const std::vector<unsigned> &all = sizesOf(value);
    return index < int64_t(all.size()) ? all[index] : unknown();
  }

  /// The size an index value stands for: a constant, or tensor.dim of a
  /// value whose sizes are known.
  unsigned indexSize(OpFoldResult ofr) {
    if (auto attr = dyn_cast<Attribute>(ofr))
      return constant(cast<IntegerAttr>(attr).getInt());
    Value value = cast<Value>(ofr);
    APInt constantValue;
    if (matchPattern(value, m_ConstantInt(&constantValue)))
      return constant(constantValue.getSExtValue());
    if (auto dimOp = value.getDefiningOp<tensor::DimOp>())
      if (std::optional<int64_t> index = dimOp.getConstantIndex())
        return dim(dimOp.getSource(), *index);
    return unknown();
  }
  /// indexSize of each of `sizes`.
  std::vector<unsigned> indexSizes(ArrayRef<OpFoldResult> sizes) {
    std::vector<unsigned> result;
    for (OpFoldResult size : sizes)
      result.push_back(indexSize(size));
    return result;
  }

  void require(unsigned lhs, unsigned rhs, const Twine &what) {
    if (lhs == rhs)
      return;
    checks.relations.push_back(
        {Relation::Kind::Equal, lhs, rhs, (opText + " needs " + what).str()});
  }
  void requireNonNegative(unsigned size, const Twine &what) {
    checks.relations.push_back({Relation::Kind::NonNegative, size, size,
                                (opText + " needs " + what).str()});
  }
  void requireSameShape(Value lhs, StringRef lhsName, Value rhs,
                        StringRef rhsName) {
    const std::vector<unsigned> a = sizesOf(lhs), b = sizesOf(rhs);
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      require(a[i], b[i],
              lhsName + " and " + rhsName + " to agree in dimension " +
                  Twine(i));
  }

  /// Gives `result` the sizes `derived`; a static size of its type must
  /// match the derived one.
  void setResult(Value result, std::vector<unsigned> derived,
                 StringRef name = "result") {
    if (auto type = dyn_cast<RankedTensorType>(result.getType()))
      for (int64_t i = 0; i < type.getRank() && i < int64_t(derived.size());
           ++i)
        if (!type.isDynamicDim(i))
          require(derived[i], constant(type.getDimSize(i)),
                  "the static dimension " + Twine(i) + " of its " + name +
                      " type (" + Twine(type.getDimSize(i)) + ")");
    valueSizes[result] = std::move(derived);
  }

  void visit(Operation *op) {
    std::string location;
    llvm::raw_string_ostream os(location);
    if (auto fileLoc = op->getLoc()->findInstanceOf<FileLineColLoc>())
      os << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine() << ":"
         << fileLoc.getColumn();
    else
      op->getLoc().print(os);
    opText = (op->getName().getStringRef() + " at " + location).str();

    if (auto project = dyn_cast<attn::ProjectOp>(op)) {
      Value input = project.getInput(), weight = project.getWeight();
      require(dim(input, 2), dim(weight, 1),
              "'input' in_features == 'weight' in_features");
      if (Value bias = project.getBias())
        require(dim(bias, 0), dim(weight, 0),
                "'bias' out_features == 'weight' out_features");
      setResult(project.getResult(),
                {dim(input, 0), dim(input, 1), dim(weight, 0)});
      return;
    }
    if (auto conv = dyn_cast<attn::CausalConv1DOp>(op)) {
      Value input = conv.getInput(), weight = conv.getWeight();
      auto weightType = cast<RankedTensorType>(weight.getType());
      require(dim(weight, 0), dim(input, 2), "'weight' channels == channels");
      if (Value bias = conv.getBias())
        require(dim(bias, 0), dim(input, 2), "'bias' channels == channels");
      unsigned out = dim(input, 1);
      if (!weightType.isDynamicDim(2)) {
        out = sum(out, conv.getPadding() - (weightType.getDimSize(2) - 1));
        requireNonNegative(out, "seq + padding - (kernel - 1) >= 0");
      } else {
        out = unknown();
      }
      setResult(conv.getResult(), {dim(input, 0), out, dim(input, 2)});
      return;
    }
    if (auto mean = dyn_cast<attn::QKMeanOp>(op)) {
      requireQueryKeyHeads(mean.getQConv(), "q_conv", mean.getKConv(), "k_conv",
                           /*sameSeqAndDim=*/true);
      requireSameShape(mean.getQRaw(), "'q_raw'", mean.getQConv(), "'q_conv'");
      requireSameShape(mean.getKRaw(), "'k_raw'", mean.getKConv(), "'k_conv'");
      setResult(mean.getQ(), sizesOf(mean.getQConv()));
      setResult(mean.getK(), sizesOf(mean.getKConv()));
      return;
    }
    if (auto norm = dyn_cast<attn::QKNormOp>(op)) {
      requireQueryKeyHeads(norm.getQ(), "q", norm.getK(), "k",
                           /*sameSeqAndDim=*/true);
      require(dim(norm.getTemp(), 0), dim(norm.getK(), 2),
              "'temp' size == 'k' kv_heads");
      setResult(norm.getQOut(), sizesOf(norm.getQ()));
      setResult(norm.getKOut(), sizesOf(norm.getK()));
      return;
    }
    if (auto shift = dyn_cast<attn::ValueShiftOp>(op)) {
      Value current = shift.getCurrent();
      requireSameShape(shift.getPrevious(), "'previous'", current, "'current'");
      if (Value state = shift.getState()) {
        require(dim(state, 0), dim(current, 0), "'state' batch == batch");
        require(dim(state, 1), constant(1), "'state' rows == 1");
        require(dim(state, 2), dim(current, 2), "'state' channels == channels");
      }
      auto type = cast<RankedTensorType>(current.getType());
      unsigned channels =
          type.isDynamicDim(2) ? unknown() : constant(2 * type.getDimSize(2));
      setResult(shift.getResult(),
                {dim(current, 0), dim(current, 1), channels});
      return;
    }
    if (auto rope = dyn_cast<attn::RoPEOp>(op)) {
      if (Value positions = rope.getPositions())
        require(dim(positions, 0), dim(rope.getInput(), 0),
                "'positions' size == 'input' batch");
      setResult(rope.getResult(), sizesOf(rope.getInput()));
      return;
    }
    if (auto masked = dyn_cast<attn::MaskTokensOp>(op)) {
      Value input = masked.getInput(), mask = masked.getMask();
      require(dim(mask, 0), dim(input, 0), "'mask' batch == 'input' batch");
      require(dim(mask, 1), dim(input, 1), "'mask' seq == 'input' seq");
      setResult(masked.getResult(), sizesOf(input));
      return;
    }
    if (auto sdpa = dyn_cast<attn::SDPAOp>(op)) {
      Value query = sdpa.getQuery(), key = sdpa.getKey(),
            value = sdpa.getValue();
      requireQueryKeyHeads(query, "query", key, "key", /*sameSeqAndDim=*/false);
      require(dim(value, 0), dim(query, 0), "'value' batch == 'query' batch");
      require(dim(value, 1), dim(key, 1), "'value' T == 'key' T");
      require(dim(value, 2), dim(key, 2), "'value' kv_heads == 'key' kv_heads");
      if (Value bias = sdpa.getBias()) {
        auto rank = cast<RankedTensorType>(bias.getType()).getRank();
        int64_t first = rank == 3 ? 1 : 0;
        if (rank == 3)
          require(dim(bias, 0), dim(query, 2),
                  "'bias' num_heads == 'query' num_heads");
        require(dim(bias, first), dim(query, 1), "'bias' S == 'query' S");
        require(dim(bias, first + 1), dim(key, 1), "'bias' T == 'key' T");
      }
      if (Value positions = sdpa.getPositions())
        require(dim(positions, 0), dim(query, 0),
                "'positions' size == 'query' batch");
      if (Value keyMask = sdpa.getKeyMask()) {
        require(dim(keyMask, 0), dim(query, 0),
                "'key_mask' batch == 'query' batch");
        require(dim(keyMask, 1), dim(key, 1), "'key_mask' T == 'key' T");
      }
      setResult(sdpa.getResult(),
                {dim(query, 0), dim(query, 1), dim(query, 2), dim(value, 3)});
      return;
    }
    if (visitGradient(op))
      return;
    if (auto update = dyn_cast<attn::CacheUpdateOp>(op)) {
      Value rows = update.getNewRows(), cache = update.getCache();
      unsigned batch = dim(rows, 0);
      require(dim(update.getPositions(), 0), batch,
              "'positions' size == 'new_rows' batch");
      if (Value lengths = update.getLengths())
        require(dim(lengths, 0), batch, "'lengths' size == 'new_rows' batch");
      if (Value table = update.getBlockTable())
        require(dim(table, 0), batch,
                "'block_table' batch == 'new_rows' batch");
      else
        require(dim(cache, 0), batch, "'cache' batch == 'new_rows' batch");
      require(dim(cache, 2), dim(rows, 2),
              "'cache' kv_heads == 'new_rows' "
              "kv_heads");
      require(dim(cache, 3), dim(rows, 3),
              "'cache' head_dim == 'new_rows' "
              "head_dim");
      setResult(update.getResult(), sizesOf(cache));
      return;
    }
    if (auto gather = dyn_cast<attn::CacheGatherOp>(op)) {
      Value cache = gather.getCache(), table = gather.getBlockTable();
      setResult(gather.getResult(),
                {dim(table, 0), product(dim(table, 1), dim(cache, 1)),
                 dim(cache, 2), dim(cache, 3)});
      return;
    }
    if (auto update = dyn_cast<attn::StateUpdateOp>(op)) {
      Value state = update.getState(), rows = update.getNewRows();
      require(dim(rows, 0), dim(state, 0), "'new_rows' batch == 'state' batch");
      require(dim(rows, 2), dim(state, 2),
              "'new_rows' channels == 'state' channels");
      if (Value lengths = update.getLengths())
        require(dim(lengths, 0), dim(state, 0),
                "'lengths' size == 'state' batch");
      setResult(update.getResult(), sizesOf(state));
      return;
    }
    if (auto castOp = dyn_cast<tensor::CastOp>(op)) {
      setResult(castOp.getResult(), sizesOf(castOp.getSource()));
      return;
    }
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      std::vector<unsigned> result;
      for (const ReassociationIndices &group :
           collapse.getReassociationIndices()) {
        unsigned size = dim(collapse.getSrc(), group.front());
        for (int64_t i : ArrayRef<int64_t>(group).drop_front())
          size = product(size, dim(collapse.getSrc(), i));
        result.push_back(size);
      }
      setResult(collapse.getResult(), std::move(result));
      return;
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      std::vector<unsigned> result = indexSizes(expand.getMixedOutputShape());
      // Groups of one keep the source size.
      for (auto [sourceDim, group] :
           llvm::enumerate(expand.getReassociationIndices()))
        if (group.size() == 1)
          require(result[group.front()], dim(expand.getSrc(), sourceDim),
                  "the expanded size " + Twine(group.front()) +
                      " == the source size " + Twine(sourceDim));
      setResult(expand.getResult(), std::move(result));
      return;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // Rank-reducing slices drop sizes: leave those to their type.
      if (slice.getSourceType().getRank() != slice.getType().getRank())
        return;
      setResult(slice.getResult(), indexSizes(slice.getMixedSizes()));
      return;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      setResult(empty.getResult(), indexSizes(empty.getMixedSizes()));
      return;
    }
    if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
      int64_t axis = concat.getDim();
      Value first = concat.getInputs().front();
      std::vector<unsigned> result = sizesOf(first);
      int64_t staticSum = 0;
      std::optional<unsigned> dynamicPart;
      bool manyDynamic = false;
      for (auto [index, input] : llvm::enumerate(concat.getInputs())) {
        auto type = cast<RankedTensorType>(input.getType());
        for (int64_t i = 0; i < type.getRank(); ++i)
          if (i != axis && index > 0)
            require(dim(input, i), dim(first, i),
                    "input #" + Twine(index) +
                        " and input #0 to agree in "
                        "dimension " +
                        Twine(i));
        const Size &size = checks.sizes[dim(input, axis)];
        if (size.kind == Size::Kind::Constant)
          staticSum += size.first;
        else if (dynamicPart)
          manyDynamic = true;
        else
          dynamicPart = dim(input, axis);
      }
      result[axis] = manyDynamic   ? unknown()
                     : dynamicPart ? sum(*dynamicPart, staticSum)
                                   : constant(staticSum);
      setResult(concat.getResult(), std::move(result));
      return;
    }
    if (op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() == 1 &&
        isa<RankedTensorType>(op->getResult(0).getType())) {
      Value first;
      std::string firstName;
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isa<RankedTensorType>(operand.get().getType()))
          continue;
        std::string name =
            "operand #" + std::to_string(operand.getOperandNumber());
        if (!first) {
          first = operand.get();
          firstName = name;
        } else {
          requireSameShape(operand.get(), name, first, firstName);
        }
      }
      if (first)
        setResult(op->getResult(0), sizesOf(first));
      return;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (isa<func::FuncOp>(ret->getParentOp()))
        for (Value operand : ret.getOperands())
          checks.resultSizes.push_back(sizesOf(operand));
      return;
    }
    // Anything else: results sized by their types alone.
  }

  /// The gradient ops: each cotangent has the shape of what it is the
  /// cotangent of, and each gradient the shape of what it differentiates.
  bool visitGradient(Operation *op) {
    if (auto project = dyn_cast<attn::ProjectGradOp>(op)) {
      Value input = project.getInput(), weight = project.getWeight();
      Value grad = project.getResultGrad();
      require(dim(input, 2), dim(weight, 1),
              "'input' in_features == 'weight' in_features");
      require(dim(grad, 0), dim(input, 0),
              "'result_grad' batch == 'input' batch");
      require(dim(grad, 1), dim(input, 1), "'result_grad' seq == 'input' seq");
      require(dim(grad, 2), dim(weight, 0),
              "'result_grad' features == 'weight' out_features");
      setResult(project.getInputGrad(), sizesOf(input), "input_grad");
      setResult(project.getWeightGrad(), sizesOf(weight), "weight_grad");
      setResult(project.getBiasGrad(), {dim(weight, 0)}, "bias_grad");
      return true;
    }
    if (auto conv = dyn_cast<attn::CausalConv1DGradOp>(op)) {
      Value input = conv.getInput(), weight = conv.getWeight();
      Value grad = conv.getResultGrad();
      auto weightType = cast<RankedTensorType>(weight.getType());
      require(dim(weight, 0), dim(input, 2), "'weight' channels == channels");
      require(dim(grad, 0), dim(input, 0),
              "'result_grad' batch == 'input' batch");
      require(dim(grad, 2), dim(input, 2),
              "'result_grad' channels == channels");
      if (!weightType.isDynamicDim(2))
        require(dim(grad, 1),
                sum(dim(input, 1),
                    conv.getPadding() - (weightType.getDimSize(2) - 1)),
                "'result_grad' seq == seq + padding - (kernel - 1)");
      setResult(conv.getInputGrad(), sizesOf(input), "input_grad");
      setResult(conv.getWeightGrad(), sizesOf(weight), "weight_grad");
      setResult(conv.getBiasGrad(), {dim(input, 2)}, "bias_grad");
      return true;
    }
    if (auto mean = dyn_cast<attn::QKMeanGradOp>(op)) {
      requireQueryKeyHeads(mean.getQGrad(), "q_grad", mean.getKGrad(),
                           "k_grad", /*sameSeqAndDim=*/true);
      setResult(mean.getQRawGrad(), sizesOf(mean.getQGrad()));
      setResult(mean.getKRawGrad(), sizesOf(mean.getKGrad()));
      return true;
    }
    if (auto norm = dyn_cast<attn::QKNormGradOp>(op)) {
      requireQueryKeyHeads(norm.getQ(), "q", norm.getK(), "k",
                           /*sameSeqAndDim=*/true);
      require(dim(norm.getTemp(), 0), dim(norm.getK(), 2),
              "'temp' size == 'k' kv_heads");
      requireSameShape(norm.getQOutGrad(), "'q_out_grad'", norm.getQ(), "'q'");
      requireSameShape(norm.getKOutGrad(), "'k_out_grad'", norm.getK(), "'k'");
      setResult(norm.getQGrad(), sizesOf(norm.getQ()));
      setResult(norm.getKGrad(), sizesOf(norm.getK()));
      setResult(norm.getTempGrad(), sizesOf(norm.getTemp()));
      return true;
    }
    if (auto shift = dyn_cast<attn::ValueShiftGradOp>(op)) {
      Value grad = shift.getResultGrad();
      auto type = cast<RankedTensorType>(grad.getType());
      unsigned half =
          type.isDynamicDim(2) ? unknown() : constant(type.getDimSize(2) / 2);
      setResult(shift.getCurrentGrad(), {dim(grad, 0), dim(grad, 1), half});
      setResult(shift.getPreviousGrad(), {dim(grad, 0), dim(grad, 1), half});
      return true;
    }
    if (auto rope = dyn_cast<attn::RoPEGradOp>(op)) {
      if (Value positions = rope.getPositions())
        require(dim(positions, 0), dim(rope.getResultGrad(), 0),
                "'positions' size == 'result_grad' batch");
      setResult(rope.getInputGrad(), sizesOf(rope.getResultGrad()));
      return true;
    }
    auto sdpa = dyn_cast<attn::SDPAGradOp>(op);
    if (!sdpa)
      return false;
    Value query = sdpa.getQuery(), key = sdpa.getKey(), value = sdpa.getValue();
    requireQueryKeyHeads(query, "query", key, "key", /*sameSeqAndDim=*/false);
    require(dim(value, 0), dim(query, 0), "'value' batch == 'query' batch");
    require(dim(value, 1), dim(key, 1), "'value' T == 'key' T");
    require(dim(value, 2), dim(key, 2), "'value' kv_heads == 'key' kv_heads");
    std::vector<unsigned> outputSizes = {dim(query, 0), dim(query, 1),
                                         dim(query, 2), dim(value, 3)};
    for (auto [operand, name] : {std::pair(sdpa.getOutput(), "output"),
                                 std::pair(sdpa.getOutputGrad(),
                                           "output_grad")})
      for (auto [i, size] : llvm::enumerate(outputSizes))
        require(dim(operand, i), size,
                "'" + Twine(name) + "' dimension " + Twine(i) +
                    " == that of the attention's output");
    if (Value bias = sdpa.getBias()) {
      auto rank = cast<RankedTensorType>(bias.getType()).getRank();
      int64_t first = rank == 3 ? 1 : 0;
      require(dim(bias, first), dim(query, 1), "'bias' S == 'query' S");
      require(dim(bias, first + 1), dim(key, 1), "'bias' T == 'key' T");
      setResult(sdpa.getBiasGrad(), sizesOf(bias), "bias_grad");
    }
    if (Value keyMask = sdpa.getKeyMask()) {
      require(dim(keyMask, 0), dim(query, 0),
              "'key_mask' batch == 'query' batch");
      require(dim(keyMask, 1), dim(key, 1), "'key_mask' T == 'key' T");
    }
    setResult(sdpa.getQueryGrad(), sizesOf(query), "query_grad");
    setResult(sdpa.getKeyGrad(), sizesOf(key), "key_grad");
    setResult(sdpa.getValueGrad(), sizesOf(value), "value_grad");
    return true;
  }

  /// Query `[B, S, Hq, d]` and key `[B, S', Hk, d]` heads.
  void requireQueryKeyHeads(Value query, StringRef queryName, Value key,
                            StringRef keyName, bool sameSeqAndDim) {
    require(dim(key, 0), dim(query, 0),
            "'" + keyName + "' batch == '" + queryName + "' batch");
    if (sameSeqAndDim)
      require(dim(key, 1), dim(query, 1),
              "'" + keyName + "' seq == '" + queryName + "' seq");
    require(dim(key, 3), dim(query, 3),
            "'" + keyName + "' head_dim == '" + queryName + "' head_dim");
  }
};

} // namespace attnfuse

ShapeChecks ShapeChecks::derive(func::FuncOp func) {
  ShapeChecks checks;
  ShapeRelationBuilder(checks).run(func);
  return checks;
}

namespace {
/// A size's value in one call, and where it comes from.
struct Known {
  std::optional<int64_t> value;
  std::string origin;
};
} // namespace

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error ShapeChecks::check(StringRef function,
                               ArrayRef<ArrayRef<int64_t>> shapes,
                               ArrayRef<size_t> argumentBytes,
                               ArrayRef<size_t> resultBytes) const {
  auto describeArg = [&](int64_t arg, int64_t dim) {
    return ("argument #" + Twine(arg) + " dimension " + Twine(dim)).str();
  };
  std::string failed =
      ("run-time size check of '" + function + "' failed before the call: ")
          .str();
  // Every argument's byte size fits in int64 (its strides and offsets too).
  for (auto [index, shape] : llvm::enumerate(shapes)) {
    int64_t bytes = index < argumentBytes.size() ? argumentBytes[index] : 1;
    for (int64_t dim : shape)
      if (dim > 0 && __builtin_mul_overflow(bytes, dim, &bytes))
        return makeError(failed + "argument #" + Twine(index) +
                         " is too large: its byte size overflows int64");
  }

  std::vector<Known> known(sizes.size());
  auto evaluate = [&](unsigned index) -> bool {
    Known &k = known[index];
    if (k.value)
      return false;
    const Size &size = sizes[index];
    switch (size.kind) {
    case Size::Kind::Argument:
      if (size.first < int64_t(shapes.size()) &&
          size.second < int64_t(shapes[size.first].size())) {
        k.value = shapes[size.first][size.second];
        k.origin = describeArg(size.first, size.second);
      }
      break;
    case Size::Kind::Constant:
      k.value = size.first;
      k.origin = "the static size " + std::to_string(size.first);
      break;
    case Size::Kind::Unknown:
      break;
    case Size::Kind::Sum: {
      const Known &operand = known[size.first];
      int64_t value;
      if (operand.value &&
          !__builtin_add_overflow(*operand.value, size.second, &value)) {
        k.value = value;
        k.origin = "(" + operand.origin + ") " +
                   (size.second < 0 ? "- " : "+ ") +
                   std::to_string(std::abs(size.second));
      }
      break;
    }
    case Size::Kind::Product: {
      const Known &lhs = known[size.first], &rhs = known[size.second];
      int64_t value;
      if (lhs.value && rhs.value &&
          !__builtin_mul_overflow(*lhs.value, *rhs.value, &value)) {
        k.value = value;
        k.origin = "(" + lhs.origin + ") * (" + rhs.origin + ")";
      }
      break;
    }
    }
    return k.value.has_value();
  };

  // Derived sizes come after the sizes they use; unknown ones take the value
  // of what they must equal. Repeat until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (unsigned i = 0; i < sizes.size(); ++i)
      changed |= evaluate(i);
    for (const Relation &relation : relations) {
      if (relation.kind != Relation::Kind::Equal)
        continue;
      Known &lhs = known[relation.lhs], &rhs = known[relation.rhs];
      if (lhs.value.has_value() == rhs.value.has_value())
        continue;
      Known &from = lhs.value ? lhs : rhs, &to = lhs.value ? rhs : lhs;
      to.value = from.value;
      to.origin = from.origin;
      changed = true;
    }
  }

  for (const Relation &relation : relations) {
    const Known &lhs = known[relation.lhs], &rhs = known[relation.rhs];
    if (relation.kind == Relation::Kind::NonNegative) {
      if (lhs.value && *lhs.value < 0)
        return makeError(failed + lhs.origin + " is " + Twine(*lhs.value) +
                         "; " + relation.reason);
      continue;
    }
    if (lhs.value && rhs.value && *lhs.value != *rhs.value)
      return makeError(failed + lhs.origin + " is " + Twine(*lhs.value) +
                       " but " + rhs.origin + " is " + Twine(*rhs.value) +
                       "; " + relation.reason);
  }

  // Results whose byte size would overflow: the compiled code's size
  // arithmetic would wrap.
  for (auto [index, resultDims] : llvm::enumerate(resultSizes)) {
    int64_t bytes = index < resultBytes.size() ? resultBytes[index] : 1;
    bool overflow = false;
    for (unsigned size : resultDims) {
      const Known &k = known[size];
      const Size &s = sizes[size];
      if (!k.value && s.kind == Size::Kind::Product)
        overflow = true; // its own evaluation overflowed
      if (k.value && *k.value > 0 &&
          __builtin_mul_overflow(bytes, *k.value, &bytes))
        overflow = true;
    }
    if (overflow)
      return makeError(failed + "result #" + Twine(index) +
                       " would be too large: its byte size overflows int64");
  }
  return llvm::Error::success();
}

std::string ShapeChecks::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::function<void(unsigned)> print = [&](unsigned index) {
    const Size &size = sizes[index];
    switch (size.kind) {
    case Size::Kind::Argument:
      os << "arg" << size.first << "[" << size.second << "]";
      return;
    case Size::Kind::Constant:
      os << size.first;
      return;
    case Size::Kind::Unknown:
      os << "?" << index;
      return;
    case Size::Kind::Sum:
      os << "(";
      print(size.first);
      os << (size.second < 0 ? " - " : " + ") << std::abs(size.second) << ")";
      return;
    case Size::Kind::Product:
      os << "(";
      print(size.first);
      os << " * ";
      print(size.second);
      os << ")";
      return;
    }
  };
  for (const Relation &relation : relations) {
    print(relation.lhs);
    if (relation.kind == Relation::Kind::Equal) {
      os << " == ";
      print(relation.rhs);
    } else {
      os << " >= 0";
    }
    os << ": " << relation.reason << "\n";
  }
  return text;
}
