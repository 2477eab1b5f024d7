//===- Columns.cpp - last-dimension concat and slice on sm_90a --*- C++ -*-===//
//
// A gradient program joins and splits activations along their feature
// columns: the CCA convolutions run over the query and key projections side
// by side (`tensor.concat` on the last dimension), and their results and
// gradients are split back (`tensor.extract_slice` of a column range). Both
// are copies of column ranges between row-major tensors with the same rows:
// one kernel, each thread one 16-byte (or narrower) chunk of an output row,
// copied as raw bits (the element type does not matter to a copy).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "attnfuse/Dialect/Attn/IR/ShapeUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using Pred = arith::CmpIPredicate;

std::string ColumnCopyPlan::key() const {
  std::string text = llvm::formatv("columns:{0}:{1}:{2}:{3}:", dtype,
                                   elementBits, vector, leadingShape)
                         .str();
  for (const ColumnPiece &piece : pieces)
    text += llvm::formatv("{0}/{1}/{2},", piece.inputWidth, piece.sourceOffset,
                          piece.width)
                .str();
  return text;
}

int64_t ColumnCopyPlan::outputWidth() const {
  int64_t width = 0;
  for (const ColumnPiece &piece : pieces)
    width += piece.width;
  return width;
}

static std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t size) {
        if (ShapedType::isDynamic(size))
          os << "?";
        else
          os << size;
      },
      "x");
  return text;
}

FailureOr<ColumnCopyPlan>
attnfuse::sm90::planColumnCopy(Operation *op, std::string &unsupported) {
  ColumnCopyPlan p;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t last = resultType.getRank() - 1;
  SmallVector<Value> inputs;
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    if (static_cast<int64_t>(concat.getDim()) != last) {
      unsupported = "the sm_90a column-copy kernel joins along the last "
                    "dimension only";
      return failure();
    }
    for (Value input : concat.getInputs()) {
      int64_t width = cast<RankedTensorType>(input.getType()).getDimSize(last);
      p.pieces.push_back({width, 0, width});
      inputs.push_back(input);
    }
  } else {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    Value source = slice.getSource();
    auto sourceType = slice.getSourceType();
    bool columnRange = sourceType.getRank() == resultType.getRank() &&
                       llvm::all_of(slice.getMixedStrides(), [](auto stride) {
                         return isConstantIntValue(stride, 1);
                       });
    for (int64_t dim = 0; columnRange && dim < last; ++dim)
      columnRange =
          isConstantIntValue(slice.getMixedOffsets()[dim], 0) &&
          attn::isWholeDimension(slice.getMixedSizes()[dim], source, dim);
    std::optional<int64_t> offset =
        getConstantIntValue(slice.getMixedOffsets()[last]);
    if (!columnRange || !offset || resultType.isDynamicDim(last)) {
      unsupported = "the sm_90a column-copy kernel takes a static range of "
                    "the last dimension with every other dimension whole";
      return failure();
    }
    p.pieces.push_back(
        {sourceType.getDimSize(last), *offset, resultType.getDimSize(last)});
    p.slice = true;
    inputs.push_back(source);
  }
  Type elem = resultType.getElementType();
  if (elem.isBF16() || elem.isF16() || elem.isF32()) {
    llvm::raw_string_ostream(p.dtype) << elem;
  } else {
    unsupported = "the sm_90a column-copy kernel copies bf16, f16 or f32";
    return failure();
  }
  p.elementBits = elem.getIntOrFloatBitWidth();
  ArrayRef<int64_t> leading = resultType.getShape().drop_back();
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getShape().drop_back() != leading ||
        ShapedType::isDynamic(type.getDimSize(last))) {
      unsupported = "the sm_90a column-copy kernel needs the same leading "
                    "shape on every tensor and static column counts";
      return failure();
    }
  }
  if (llvm::count_if(leading, ShapedType::isDynamic) > 3) {
    unsupported = "the sm_90a column-copy kernel takes at most 3 dynamic "
                  "dimensions (B, S, T)";
    return failure();
  }
  p.leadingShape = shapeText(leading);
  // The widest chunk (at most 16 bytes) that every range starts and ends on.
  SmallVector<int64_t> sizes;
  for (const ColumnPiece &piece : p.pieces)
    sizes.append({piece.inputWidth, piece.sourceOffset, piece.width});
  p.vector = vectorWidth(sizes);
  while (p.vector * p.elementBits > 128)
    p.vector /= 2;
  p.threads = 256;
  std::string widths;
  for (const ColumnPiece &piece : p.pieces)
    widths += "_" + std::to_string(piece.width);
  p.name = p.slice ? llvm::formatv("attn_slice_{0}_c{1}_o{2}_w{3}", p.dtype,
                                   p.pieces[0].inputWidth,
                                   p.pieces[0].sourceOffset, p.pieces[0].width)
                         .str()
                   : llvm::formatv("attn_concat_{0}{1}", p.dtype, widths).str();
  return p;
}

void attnfuse::sm90::buildColumnCopyKernel(OpBuilder &b, Location loc,
                                           gpu::GPUModuleOp module,
                                           const ColumnCopyPlan &p) {
  // The inputs, the output, the number of output chunks.
  KernelBody body(
      b, loc, module, p.name,
      KernelSignature(b.getContext()).pointer(p.pieces.size() + 1).scalar(),
      p.threads, /*minBlocks=*/1, ElemKind::bf16);
  DeviceBuilder &d = body.d;
  SmallVector<Value> inputs;
  for (size_t i = 0; i < p.pieces.size(); ++i)
    inputs.push_back(body.arguments.next());
  Value output = body.arguments.next(), chunks = body.arguments.next();
  Type bits = b.getIntegerType(p.elementBits);
  Type chunkType = d.vec(bits, p.vector);
  int align = p.vector * p.elementBits / 8;
  int64_t width = p.outputWidth();
  int64_t chunksPerRow = width / p.vector;
  Value chunk = d.add(d.mul(d.ctaid(0), p.threads), d.tid());
  d.ifThen(d.cmp(Pred::slt, chunk, chunks), [&] {
    Value row = d.ext64(d.divu(chunk, chunksPerRow));
    Value column = d.mul(d.remu(chunk, chunksPerRow), p.vector);
    // Element offset of (row, column) in a row-major tensor `rowWidth` wide.
    auto at = [&](Value base, int64_t rowWidth, Value col) {
      Value start = arith::MulIOp::create(b, loc, row, d.c64(rowWidth));
      return d.gAt(d.gAt(base, start, bits), col, bits);
    };
    Value to = at(output, width, column);
    int64_t pieceStart = 0;
    for (auto [piece, input] : llvm::zip(p.pieces, inputs)) {
      int64_t pieceEnd = pieceStart + piece.width;
      Value inPiece = p.pieces.size() == 1
                          ? d.ctrue()
                          : d.andb(d.cmp(Pred::sge, column, pieceStart),
                                   d.cmp(Pred::slt, column, pieceEnd));
      Value sourceColumn = d.add(column, piece.sourceOffset - pieceStart);
      d.ifThen(inPiece, [&, input = input, inputWidth = piece.inputWidth] {
        d.store(d.load(chunkType, at(input, inputWidth, sourceColumn), align),
                to, align);
      });
      pieceStart = pieceEnd;
    }
  });
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeColumnCopy(MLIRContext *ctx, Operation *op,
                                   const ColumnCopyPlan &p) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  // The first dynamic size is B, the others S and T (the plan allows three).
  LaunchSymbols sym(ctx);
  SmallVector<Attribute> leading;
  std::string chunks = describeShape(sym, resultType.getShape().drop_back(),
                                     p.outputWidth() / p.vector, leading);
  auto shapeWith = [&](int64_t columns) {
    SmallVector<Attribute> shape = leading;
    shape.push_back(intAttr(ctx, columns));
    return shape;
  };
  SmallVector<Attribute> tensors, params;
  for (auto [index, piece] : llvm::enumerate(p.pieces)) {
    std::string name = p.slice ? "source" : "input" + std::to_string(index);
    tensors.push_back(describeTensor(ctx, name, "input", index, p.dtype,
                                     shapeWith(piece.inputWidth)));
    params.push_back(describeParam(ctx, name, "pointer", p.dtype, name));
  }
  tensors.push_back(describeTensor(ctx, "output", "result", -1, p.dtype,
                                   shapeWith(p.outputWidth())));
  params.push_back(describeParam(ctx, "output", "pointer", p.dtype, "output"));
  params.push_back(describeParam(ctx, "chunks", "scalar", "i32", chunks));
  SmallVector<Attribute> grid = {
      gridEntry(ctx, strAttr(ctx, "ceil_div(" + chunks + ", " +
                                      std::to_string(p.threads) + ")"))};
  SmallVector<Attribute> ranges;
  for (const ColumnPiece &piece : p.pieces)
    ranges.push_back(
        intArray(ctx, {piece.inputWidth, piece.sourceOffset, piece.width}));
  DictionaryAttr config =
      DictBuilder(ctx)
          .set("elements_per_thread", p.vector)
          .set("chunks", StringRef(chunks))
          .set("pieces", arrayAttr(ctx, ranges))
          .set("piece", "[input columns, first column read, columns copied]")
          .get();
  return describeLaunch(
      ctx, {p.name, p.slice ? "slice" : "concat", sym.describe(), p.threads},
      {grid, params, tensors}, config);
}
