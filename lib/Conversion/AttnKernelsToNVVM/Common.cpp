//===- Common.cpp - helpers shared by the sm_90a kernels --------*- C++ -*-===//

#include "Kernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;

//===----------------------------------------------------------------------===//
// Description attributes
//===----------------------------------------------------------------------===//

DictBuilder &DictBuilder::set(StringRef name, Attribute value) {
  attrs.set(StringAttr::get(ctx, name), value);
  return *this;
}
DictBuilder &DictBuilder::set(StringRef name, StringRef value) {
  return set(name, StringAttr::get(ctx, value));
}
DictBuilder &DictBuilder::set(StringRef name, int64_t value) {
  return set(name, intAttr(ctx, value));
}
DictBuilder &DictBuilder::set(StringRef name, double value) {
  return set(name, FloatAttr::get(Float64Type::get(ctx), value));
}
DictBuilder &DictBuilder::setBool(StringRef name, bool value) {
  return set(name, BoolAttr::get(ctx, value));
}
DictionaryAttr DictBuilder::get() const {
  return DictionaryAttr::get(ctx, attrs.getAttrs());
}

Attribute attnfuse::sm90::intAttr(MLIRContext *ctx, int64_t v) {
  return IntegerAttr::get(IntegerType::get(ctx, 64), v);
}
Attribute attnfuse::sm90::strAttr(MLIRContext *ctx, StringRef v) {
  return StringAttr::get(ctx, v);
}
ArrayAttr attnfuse::sm90::arrayAttr(MLIRContext *ctx,
                                    ArrayRef<Attribute> values) {
  return ArrayAttr::get(ctx, values);
}
ArrayAttr attnfuse::sm90::intArray(MLIRContext *ctx, ArrayRef<int64_t> v) {
  SmallVector<Attribute> values;
  for (int64_t x : v)
    values.push_back(intAttr(ctx, x));
  return ArrayAttr::get(ctx, values);
}
Attribute attnfuse::sm90::scaled(MLIRContext *ctx, int64_t factor,
                                 StringRef symbol) {
  if (symbol.empty())
    return intAttr(ctx, factor);
  if (factor == 1)
    return strAttr(ctx, symbol);
  return strAttr(ctx, (Twine(factor) + "*" + symbol).str());
}

DictionaryAttr attnfuse::sm90::describeTma(MLIRContext *ctx, const TmaInfo &tma,
                                           ElemKind elem) {
  SmallVector<int64_t> elementStrides(tma.boxDim.size(), 1);
  return DictBuilder(ctx)
      .set("param", StringRef(tma.param))
      .set("tensor", StringRef(tma.tensor))
      .set("use", StringRef(tma.role))
      .set("rank", static_cast<int64_t>(tma.globalDim.size()))
      .set("element_type", elem == ElemKind::bf16
                               ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
                               : "CU_TENSOR_MAP_DATA_TYPE_FLOAT16")
      .set("global_dim", arrayAttr(ctx, tma.globalDim))
      .set("global_strides_bytes", arrayAttr(ctx, tma.globalStridesBytes))
      .set("box_dim", intArray(ctx, tma.boxDim))
      .set("element_strides", intArray(ctx, elementStrides))
      .set("interleave", "CU_TENSOR_MAP_INTERLEAVE_NONE")
      .set("swizzle", "CU_TENSOR_MAP_SWIZZLE_128B")
      .set("l2_promotion", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B")
      .set("oob_fill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
      .get();
}

FailureOr<int64_t> attnfuse::sm90::maskElementBits(Operation *op,
                                                   StringRef name, Value mask) {
  if (!mask)
    return int64_t(0);
  Type type = cast<RankedTensorType>(mask.getType()).getElementType();
  if (type.isInteger(32) || type.isInteger(64))
    return int64_t(type.getIntOrFloatBitWidth());
  return op->emitOpError() << "the sm_90a kernels read a " << name
                           << " of i32 or i64, got " << type;
}

FailureOr<ElemKind> attnfuse::sm90::kernelElemKind(Operation *op,
                                                   Type elementType,
                                                   const TargetOptions &options,
                                                   bool &hostCast) {
  hostCast = false;
  if (elementType.isBF16() || elementType.isF16()) {
    ElemKind kind = elementType.isBF16() ? ElemKind::bf16 : ElemKind::f16;
    if (kind != options.elem)
      return op->emitOpError()
             << "has " << elementType << " tensors but the sm_90a kernels "
             << "were asked for elem-type=" << elemName(options.elem);
    return kind;
  }
  if (elementType.isF32()) {
    // f32 models run the kernel in the requested 16-bit type; the manifest
    // tells the host to convert.
    hostCast = true;
    return options.elem;
  }
  return op->emitOpError() << "element type " << elementType
                           << " is not supported on sm_90a (bf16, f16, or "
                              "f32 converted by the host)";
}

LogicalResult KernelPlan::setElementType(Operation *op, Type elementType,
                                         const TargetOptions &options) {
  FailureOr<ElemKind> kind =
      kernelElemKind(op, elementType, options, hostCastFromF32);
  if (failed(kind))
    return failure();
  elem = *kind;
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel functions
//===----------------------------------------------------------------------===//

gpu::GPUFuncOp attnfuse::sm90::createKernelFunc(
    OpBuilder &b, Location loc, gpu::GPUModuleOp module, StringRef name,
    ArrayRef<Type> argTypes, ArrayRef<int32_t> tmaArgs, int64_t threads,
    int64_t minBlocks) {
  MLIRContext *ctx = b.getContext();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  if (!module.lookupSymbol(kSharedSymbol)) {
    // extern .shared .align 1024 .b8 attn_dynamic_smem[];
    auto global = LLVM::GlobalOp::create(
        b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
        /*isConstant=*/false, LLVM::Linkage::External, kSharedSymbol,
        Attribute(), /*alignment=*/1024, /*addrSpace=*/3);
    (void)global;
  }
  auto func = gpu::GPUFuncOp::create(b, loc, name,
                                     FunctionType::get(ctx, argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr("nvvm.maxntid",
                b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  func->setAttr("nvvm.minctasm",
                b.getI32IntegerAttr(static_cast<int32_t>(minBlocks)));
  func->setAttr(kTmaArgsAttr, b.getDenseI32ArrayAttr(tmaArgs));
  for (int32_t arg : tmaArgs)
    func.setArgAttr(arg, "llvm.align", b.getI64IntegerAttr(64));
  return func;
}

KernelSignature &KernelSignature::tma(int64_t count, bool present) {
  for (int64_t i = 0; present && i < count; ++i) {
    tmaIndices.push_back(static_cast<int32_t>(argTypes.size()));
    argTypes.push_back(LLVM::LLVMPointerType::get(ctx));
  }
  return *this;
}

KernelSignature &KernelSignature::pointer(int64_t count, bool present) {
  if (present)
    argTypes.append(count, LLVM::LLVMPointerType::get(ctx, 1));
  return *this;
}

KernelSignature &KernelSignature::scalar(int64_t count, bool present) {
  if (present)
    argTypes.append(count, IntegerType::get(ctx, 32));
  return *this;
}

/// `b` placed at the start of `func`'s body.
static gpu::GPUFuncOp enterBody(OpBuilder &b, gpu::GPUFuncOp func) {
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

KernelBody::KernelBody(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                       StringRef name, const KernelSignature &signature,
                       int64_t threads, int64_t minBlocks, ElemKind elem)
    : guard(b),
      func(enterBody(b, createKernelFunc(b, loc, module, name,
                                         signature.types(), signature.tmaArgs(),
                                         threads, minBlocks))),
      d(b, loc, elem), arguments(func) {}

void attnfuse::sm90::splitRegisters(int64_t consumers, int64_t minBlocks,
                                    int64_t producer, int64_t &cap,
                                    int64_t &consumer) {
  int64_t threads = 128 * (1 + consumers);
  cap = kRegistersPerSM / (threads * minBlocks) / 8 * 8;
  if (cap > 248)
    cap = 248;
  consumer = (cap * (1 + consumers) - producer) / consumers / 8 * 8;
  if (consumer > 240)
    consumer = 240;
  // setmaxnreg.inc may not go below the count at entry (one consumer alone
  // on an SM starts with 248).
  if (consumer < cap)
    consumer = cap;
}

//===----------------------------------------------------------------------===//
// RoPE on a swizzled shared-memory tile
//===----------------------------------------------------------------------===//

Value attnfuse::sm90::swizzledChunk(DeviceBuilder &d, Value row, Value chunk,
                                    int64_t rows) {
  Value block = d.divu(chunk, 8);
  Value inBlock = d.andi(chunk, 7);
  Value swizzled = d.xori(inBlock, d.andi(row, 7));
  return d.add(d.add(d.mul(block, rows * 128), d.mul(row, 128)),
               d.shl(swizzled, 4));
}

void attnfuse::sm90::rotateTile(DeviceBuilder &d, Value src, Value dst,
                                int64_t rows, int64_t dim, int64_t rotated,
                                const std::function<Value(Value)> &position,
                                Value cosTable, Value sinTable, Value thread,
                                int64_t threads) {
  bool inPlace = src == dst;
  int64_t pairChunks = rotated / 16;
  int64_t copyChunks = inPlace ? 0 : (dim - rotated) / 8;
  int64_t perRow = pairChunks + copyChunks;
  if (perRow == 0)
    return;
  OpBuilder &b = d.b;
  Location loc = d.loc;
  auto vecElem = VectorType::get({8}, d.elemType);
  auto vecF32 = VectorType::get({8}, d.f32);
  auto sptrAt = [&](Value base, Value offset) { return d.sAt(base, offset); };
  d.forLoop(thread, d.c32(rows * perRow), d.c32(threads), ValueRange(),
            [&](Value item, ValueRange) -> SmallVector<Value> {
              Value row = d.divu(item, perRow);
              Value c = d.remu(item, perRow);
              auto rotatePair = [&]() {
                Value off0 = swizzledChunk(d, row, c, rows);
                Value off1 = swizzledChunk(d, row, d.add(c, pairChunks), rows);
                Value x = d.load(vecElem, sptrAt(src, off0), 16);
                Value y = d.load(vecElem, sptrAt(src, off1), 16);
                Value tableIndex =
                    d.add(d.mul(position(row), rotated / 2), d.mul(c, 8));
                Value cs =
                    d.load(vecF32, d.gAt(cosTable, tableIndex, d.f32), 16);
                Value sn =
                    d.load(vecF32, d.gAt(sinTable, tableIndex, d.f32), 16);
                Value xf = arith::ExtFOp::create(b, loc, vecF32, x);
                Value yf = arith::ExtFOp::create(b, loc, vecF32, y);
                auto [o0, o1] = d.rotatePair(xf, yf, cs, sn);
                d.store(arith::TruncFOp::create(b, loc, vecElem, o0),
                        sptrAt(dst, off0), 16);
                d.store(arith::TruncFOp::create(b, loc, vecElem, o1),
                        sptrAt(dst, off1), 16);
              };
              if (copyChunks == 0) {
                rotatePair();
              } else {
                d.ifThenElse(d.cmp(arith::CmpIPredicate::ult, c, pairChunks),
                             rotatePair, [&]() {
                               Value chunk = d.add(c, rotated / 8 - pairChunks);
                               Value off = swizzledChunk(d, row, chunk, rows);
                               d.store(d.load(vecElem, sptrAt(src, off), 16),
                                       sptrAt(dst, off), 16);
                             });
              }
              return {};
            });
}

attn::KernelParamAttr
attnfuse::sm90::describeParam(MLIRContext *ctx, StringRef name, StringRef kind,
                              StringRef detail, StringRef value) {
  return attn::KernelParamAttr::get(ctx, name, kind, detail, value);
}

std::string attnfuse::sm90::ccaKernelNameSuffix(bool qkMean, bool valueShift,
                                                bool clamped, bool clampEps,
                                                int64_t rotated) {
  std::string suffix;
  if (qkMean)
    suffix += "_qkmean";
  if (valueShift)
    suffix += "_vshift";
  if (clamped)
    suffix += "_tclamp";
  if (clampEps)
    suffix += "_nclamp";
  if (rotated)
    suffix += "_rope" + std::to_string(rotated);
  return suffix;
}

void attnfuse::sm90::describeRopeTables(MLIRContext *ctx, StringRef prefix,
                                        double theta, int64_t rotated,
                                        StringRef positions,
                                        SmallVectorImpl<Attribute> &params,
                                        SmallVectorImpl<Attribute> &tables) {
  for (StringRef fn : {"cos", "sin"}) {
    std::string name = (prefix + "_" + fn).str();
    params.push_back(describeParam(ctx, name, "pointer", "f32", ""));
    tables.push_back(
        DictBuilder(ctx)
            .set("param", StringRef(name))
            .set("dtype", "f32")
            .set("shape", arrayAttr(ctx, {strAttr(ctx, positions),
                                          intAttr(ctx, rotated / 2)}))
            .set("formula", (fn + "(p * theta^(-2 i / r)), p = position, "
                                  "i < r/2, computed in f64 and rounded to f32")
                                .str())
            .set("theta", theta)
            .set("rotated_dims", rotated)
            .get());
  }
}

attn::KernelLaunchAttr attnfuse::sm90::describeLaunch(
    MLIRContext *ctx, const LaunchIdentity &identity,
    const LaunchOperands &operands, DictionaryAttr config,
    const LaunchHostCast &hostCast, const LaunchChain &chain) {
  std::string castNote;
  if (hostCast.fromF32)
    castNote = ("the op's tensors are f32: the host converts inputs to the "
                "kernel type and the " +
                hostCast.castBack + " back")
                   .str();
  auto optionalArray = [&](ArrayRef<Attribute> values) {
    return values.empty() ? ArrayAttr() : arrayAttr(ctx, values);
  };
  return attn::KernelLaunchAttr::get(
      ctx, identity.kernel, identity.kind, identity.symbols,
      {identity.threads, 1, 1}, arrayAttr(ctx, operands.grid),
      identity.sharedBytes, arrayAttr(ctx, operands.params),
      arrayAttr(ctx, operands.tensors), arrayAttr(ctx, operands.tmas),
      optionalArray(operands.ropeTables), castNote,
      optionalArray(operands.aliases), chain.then, chain.workspace, config);
}

//===----------------------------------------------------------------------===//
// Launch symbols and tensor entries of the SIMT kernels
//===----------------------------------------------------------------------===//

Attribute LaunchSymbols::get(int64_t size, StringRef meaning) {
  if (!ShapedType::isDynamic(size))
    return intAttr(ctx, size);
  if (meaning == "batch")
    return strAttr(ctx, "B");
  for (auto &[m, symbol] : named)
    if (m == meaning)
      return strAttr(ctx, symbol);
  const char *symbol = named.empty() ? "S" : named.size() == 1 ? "T" : nullptr;
  if (!symbol) {
    if (overflow.empty())
      overflow = meaning.str();
    return strAttr(ctx, "T");
  }
  named.emplace_back(meaning.str(), symbol);
  return strAttr(ctx, symbol);
}

Attribute LaunchSymbols::dim(Value v, int64_t dim, StringRef meaning) {
  return get(cast<ShapedType>(v.getType()).getDimSize(dim), meaning);
}

std::string LaunchSymbols::describe() const {
  std::string text = "B = batch";
  for (auto &[meaning, symbol] : named)
    text += ", " + symbol + " = " + meaning;
  return text;
}

std::string attnfuse::sm90::sizeText(Attribute size) {
  if (auto s = dyn_cast<StringAttr>(size))
    return s.getValue().str();
  return std::to_string(cast<IntegerAttr>(size).getInt());
}

Attribute attnfuse::sm90::scaledSize(MLIRContext *ctx, Attribute size,
                                     int64_t factor) {
  if (auto i = dyn_cast<IntegerAttr>(size))
    return intAttr(ctx, i.getInt() * factor);
  return scaled(ctx, factor, cast<StringAttr>(size).getValue());
}

DictionaryAttr attnfuse::sm90::gridEntry(MLIRContext *ctx, Attribute size) {
  DictBuilder entry(ctx);
  if (auto s = dyn_cast<StringAttr>(size))
    return entry.set("expr", s.getValue()).get();
  return entry.set("value", size).get();
}

DictionaryAttr attnfuse::sm90::gridCeilDiv(MLIRContext *ctx, StringRef symbol,
                                           int64_t n) {
  std::string expr =
      n == 1 ? symbol.str() : llvm::formatv("ceil_div({0}, {1})", symbol, n);
  return DictBuilder(ctx)
      .set("expr", StringRef(expr))
      .set("symbol", symbol)
      .set("ceil_div", n)
      .get();
}

DictionaryAttr attnfuse::sm90::gridConstant(MLIRContext *ctx, int64_t n) {
  return DictBuilder(ctx)
      .set("expr", StringRef(std::to_string(n)))
      .set("value", n)
      .get();
}

attn::KernelTensorAttr attnfuse::sm90::describeTensor(
    MLIRContext *ctx, StringRef name, StringRef role, int64_t operand,
    StringRef dtype, ArrayRef<Attribute> shape, ArrayRef<Attribute> strides,
    StringRef layout, StringRef updates) {
  return attn::KernelTensorAttr::get(
      ctx, name, role, operand, dtype, arrayAttr(ctx, shape),
      strides.empty() ? ArrayAttr() : arrayAttr(ctx, strides), layout, updates);
}

StringRef attnfuse::sm90::indexDtype(int64_t bits) {
  return bits == 64 ? "i64" : "i32";
}

FailureOr<int64_t>
attnfuse::sm90::indexElementBits(Operation *op, StringRef name, Value value) {
  Type type = cast<ShapedType>(value.getType()).getElementType();
  if (type.isInteger(32) || type.isInteger(64))
    return int64_t(type.getIntOrFloatBitWidth());
  return op->emitOpError() << "the sm_90a kernels read " << name
                           << " of i32 or i64, got " << type;
}

std::string attnfuse::sm90::describeShape(LaunchSymbols &sym,
                                          ArrayRef<int64_t> shape,
                                          int64_t factor,
                                          SmallVectorImpl<Attribute> &sizes) {
  std::string product;
  int64_t staticProduct = factor;
  for (auto [dim, size] : llvm::enumerate(shape)) {
    bool first = ShapedType::isDynamic(size) && product.empty();
    Attribute entry =
        sym.get(size, first ? StringRef("batch")
                            : StringRef("dimension " + std::to_string(dim)));
    sizes.push_back(entry);
    if (ShapedType::isDynamic(size))
      product += (product.empty() ? "" : "*") + sizeText(entry);
    else
      staticProduct *= size;
  }
  if (product.empty())
    return std::to_string(staticProduct);
  return staticProduct == 1 ? product
                            : std::to_string(staticProduct) + "*" + product;
}

bool attnfuse::sm90::staticHeads(RankedTensorType query, RankedTensorType key,
                                 int64_t &numHeads, int64_t &numKvHeads,
                                 int64_t &headDim, StringRef kernel,
                                 std::string &unsupported) {
  numHeads = query.getDimSize(2);
  numKvHeads = key.getDimSize(2);
  headDim = query.getDimSize(3);
  if (!ShapedType::isDynamic(numHeads) && !ShapedType::isDynamic(numKvHeads) &&
      !ShapedType::isDynamic(headDim))
    return true;
  unsupported =
      ("the sm_90a " + kernel + " kernel needs static heads and head dim")
          .str();
  return false;
}

Value attnfuse::sm90::keyTemperature(DeviceBuilder &d, Value temp,
                                     bool clamped) {
  if (!clamped)
    return temp;
  // exp(min(max(temp, 1e-7), 2)), as exp2 of the scaled exponent.
  Value t = arith::MinimumFOp::create(d.b, d.loc, d.maxf(temp, d.cf(1e-7)),
                                      d.cf(2.0));
  return d.exp2(d.mulf(t, d.cf(1.4426950408889634)));
}

Value attnfuse::sm90::headNorm(DeviceBuilder &d, Value squares, bool clampEps,
                               double eps) {
  // max(|x|, eps) is sqrt(max(|x|^2, eps^2)).
  return d.sqrtRn(clampEps ? d.maxf(squares, d.cf(eps * eps))
                           : d.addf(squares, d.cf(eps)));
}

int64_t attnfuse::sm90::vectorWidth(ArrayRef<int64_t> sizes) {
  for (int64_t v : {8, 4, 2})
    if (llvm::all_of(sizes, [&](int64_t s) { return s % v == 0; }))
      return v;
  return 1;
}

int64_t attnfuse::sm90::rotatedDims(attn::RopeAttr rope, int64_t headDim) {
  if (!rope)
    return 0;
  FailureOr<int64_t> rotated = rope.getRotatedDim(headDim);
  return succeeded(rotated) ? *rotated : -1;
}

double attnfuse::sm90::softmaxScale(FloatAttr scale, int64_t headDim) {
  return scale ? scale.getValueAsDouble()
               : 1.0 / std::sqrt(static_cast<double>(headDim));
}

std::string CCAConfig::configKey() const {
  return llvm::formatv("{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}:{8}:{9}:{10}:{11}:{12}:"
                       "{13}",
                       elemName(elem), hostCastFromF32, numHeads, numKvHeads,
                       headDim, k0, k1, padding, qkMean, valueShift, clamped,
                       llvm::formatv("{0:e}", eps), clampEps,
                       llvm::formatv("{0}:{1:e}", rotated, theta))
      .str();
}

DictBuilder attnfuse::sm90::ccaConfig(MLIRContext *ctx, const CCAConfig &c) {
  DictBuilder config(ctx);
  config.set("elem_type", elemName(c.elem))
      .set("num_heads", c.numHeads)
      .set("num_kv_heads", c.numKvHeads)
      .set("head_dim", c.headDim)
      .set("conv_kernel_sizes", intArray(ctx, {c.k0, c.k1}))
      .setBool("qk_mean", c.qkMean)
      .setBool("value_shift", c.valueShift)
      .set("temperature", c.clamped ? "clamped" : "raw")
      .set("eps", c.eps)
      .set("norm", c.clampEps ? "clamp_eps" : "sqrt_eps")
      .set("rope_dims", c.rotated);
  return config;
}

template <typename OpTy>
LogicalResult attnfuse::sm90::planCCAConfig(OpTy op, Type elementType,
                                            const TargetOptions &options,
                                            CCAConfig &c,
                                            std::string &unsupported) {
  if (failed(c.setElementType(op, elementType, options)))
    return failure();
  c.numHeads = op.getNumHeads();
  c.numKvHeads = op.getNumKvHeads();
  c.headDim = op.getHeadDim();
  c.group = c.numHeads / c.numKvHeads;
  c.k0 = op.getConvKernelSizes()[0];
  c.k1 = op.getConvKernelSizes()[1];
  c.padding = op.getConvPadding();
  c.qkMean = op.getQkMean();
  c.valueShift = op.getValueShift();
  c.clamped = op.getTemperature() == attn::TemperatureMode::clamped;
  c.eps = op.getEps().convertToDouble();
  c.clampEps = op.getNorm() == attn::NormMode::clamp_eps;
  if (attn::RopeAttr rope = op.getRopeAttr()) {
    c.rotated = rotatedDims(rope, c.headDim);
    if (c.rotated < 0 || c.rotated % 2 != 0) {
      unsupported = "the sm_90a CCA prologue rotates a whole, even number of "
                    "dims per head";
      return failure();
    }
    c.theta = rope.getThetaValue();
  }
  return success();
}

template LogicalResult
attnfuse::sm90::planCCAConfig<attn::CCAPrologueOp>(attn::CCAPrologueOp, Type,
                                                   const TargetOptions &,
                                                   CCAConfig &, std::string &);
template LogicalResult attnfuse::sm90::planCCAConfig<attn::CCADecodePrologueOp>(
    attn::CCADecodePrologueOp, Type, const TargetOptions &, CCAConfig &,
    std::string &);
