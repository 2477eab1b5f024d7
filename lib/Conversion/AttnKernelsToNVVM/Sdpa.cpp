//===- Sdpa.cpp - attn.sdpa on sm_90a (SIMT) --------------------*- C++ -*-===//
//
// The general attention of attn.sdpa (GQA/MQA, causal and window masks with
// or without positions, key mask, bias, scale) as a SIMT kernel: one CTA of
// four warps per (block of 16 query rows, query head, sequence), each warp
// four rows. Per tile of 32 keys the CTA stages K and V in shared memory as
// f32 (16-byte global loads); lane l scores key l of the tile against the
// warp's rows, the warp reduces the running maximum and sum of an online
// softmax in the log2 domain (f32), and each lane accumulates value_dim / 32
// output columns of P V. The key range of a CTA is cut to the keys its rows
// can see (causal: up to the last row's position; window: from the first
// row's position - window + 1), so a causal prefill does half the work.
//
// Not the hot path: prompts whose attention attn-fuse can fuse run the
// wgmma FlashAttention kernel; this one covers every attn.sdpa left over (a
// paged decoder's prefill over its gathered cache, for instance).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::sm90;
using attn::SDPAOp;
using Pred = arith::CmpIPredicate;

std::string SdpaPlan::key() const {
  return llvm::formatv("sdpa:{0}:{1}:{2}:{3}:{4}:{5}:{6}:{7}:{8}:{9}:{10}",
                       elemName(elem), headDim, valueDim, numHeads, numKvHeads,
                       causal, window ? *window : -1, scale, biasRank,
                       positionBits, keyMaskBits)
      .str();
}

static LaunchSymbols sdpaSymbols(MLIRContext *ctx, SDPAOp op) {
  LaunchSymbols sym(ctx);
  sym.dim(op.getQuery(), 0, "batch");
  sym.dim(op.getQuery(), 1, "query tokens per sequence");
  sym.dim(op.getKey(), 1, "key tokens per sequence");
  return sym;
}

FailureOr<SdpaPlan> attnfuse::sm90::planSdpa(SDPAOp op,
                                             const TargetOptions &options,
                                             std::string &unsupported) {
  auto queryType = cast<RankedTensorType>(op.getQuery().getType());
  auto keyType = cast<RankedTensorType>(op.getKey().getType());
  auto valueType = cast<RankedTensorType>(op.getValue().getType());
  SdpaPlan p;
  if (failed(p.setElementType(op, queryType.getElementType(), options)))
    return failure();
  Type elementType = queryType.getElementType();
  auto sameType = [&](Value v, StringRef name) -> LogicalResult {
    Type t = cast<ShapedType>(v.getType()).getElementType();
    if (t == elementType)
      return success();
    return op.emitOpError()
           << "the sm_90a kernel needs " << name
           << " of the query's element type " << elementType << ", got " << t;
  };
  if (failed(sameType(op.getKey(), "a key")) ||
      failed(sameType(op.getValue(), "a value")) ||
      (op.getBias() && failed(sameType(op.getBias(), "a bias"))))
    return failure();
  p.numHeads = queryType.getDimSize(2);
  p.headDim = queryType.getDimSize(3);
  p.numKvHeads = keyType.getDimSize(2);
  p.valueDim = valueType.getDimSize(3);
  for (int64_t size : {p.numHeads, p.headDim, p.numKvHeads, p.valueDim})
    if (ShapedType::isDynamic(size)) {
      unsupported = "the sm_90a sdpa kernel needs static head counts and "
                    "head dims";
      return failure();
    }
  if (p.headDim % 8 || p.valueDim % 8) {
    unsupported = llvm::formatv("the sm_90a sdpa kernel needs head dims that "
                                "are multiples of 8, got {0} and {1}",
                                p.headDim, p.valueDim)
                      .str();
    return failure();
  }
  p.group = p.numHeads / p.numKvHeads;
  p.causal = op.getCausal();
  p.window = op.getWindow();
  p.scale = softmaxScale(op.getScaleAttr(), p.headDim);
  if (op.getBias())
    p.biasRank = cast<ShapedType>(op.getBias().getType()).getRank();
  if (op.getPositions()) {
    FailureOr<int64_t> bits =
        indexElementBits(op, "positions", op.getPositions());
    if (failed(bits))
      return failure();
    p.positionBits = *bits;
  }
  if (op.getKeyMask()) {
    FailureOr<int64_t> bits = maskElementBits(op, "key_mask", op.getKeyMask());
    if (failed(bits))
      return failure();
    p.keyMaskBits = *bits;
  }
  (void)sdpaSymbols(op.getContext(), op); // B, S and T always suffice

  p.warps = 4;
  p.rowsPerWarp = 4;
  p.blockQ = p.warps * p.rowsPerWarp;
  p.blockKV = 32;
  p.threads = 32 * p.warps;
  // f32 rows; +4 on Q and K keeps the per-lane 16-byte reads of K rows free
  // of bank conflicts (and 16-byte aligned).
  p.qStride = p.headDim + 4;
  p.kStride = p.headDim + 4;
  p.vStride = p.valueDim;
  p.qOff = 0;
  p.kOff = p.qOff + p.blockQ * p.qStride * 4;
  p.vOff = p.kOff + p.blockKV * p.kStride * 4;
  p.pOff = p.vOff + p.blockKV * p.vStride * 4;
  p.sharedBytes = p.pOff + p.warps * p.blockKV * 4;
  if (p.sharedBytes > kMaxDynamicSharedBytes) {
    unsupported = "head dims too large for the sm_90a sdpa kernel's shared "
                  "memory";
    return failure();
  }
  p.name =
      llvm::formatv("attn_sdpa_{0}_h{1}_{2}_d{3}_{4}{5}{6}{7}{8}{9}",
                    elemName(p.elem), p.numHeads, p.numKvHeads, p.headDim,
                    p.valueDim, p.causal ? "_causal" : "",
                    p.window ? "_win" + std::to_string(*p.window) : "",
                    p.positionBits ? "_pos" : "", p.keyMaskBits ? "_kmask" : "",
                    p.biasRank ? "_bias" : "")
          .str();
  return p;
}

namespace {
/// Emits the sdpa kernel body.
class SdpaEmitter {
public:
  SdpaEmitter(DeviceBuilder &d, const SdpaPlan &p, gpu::GPUFuncOp func)
      : d(d), b(d.b), loc(d.loc), p(p) {
    KernelArguments args(func);
    query = args.next();
    key = args.next();
    value = args.next();
    bias = args.nextIf(p.biasRank);
    positions = args.nextIf(p.positionBits);
    keyMask = args.nextIf(p.keyMaskBits);
    output = args.next();
    queries = args.next();
    keys = args.next();
  }

  void emit();

private:
  Value i64(Value v) { return d.ext64(v); }
  Value add64(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
  Value mul64(Value a, Value c) { return arith::MulIOp::create(b, loc, a, c); }
  /// Element offset (i64) of row `row` (i32) of head `head` of sequence
  /// `batch` in a [B, rows, heads, dim] tensor.
  Value headRow(Value batch, Value rows, Value row, int64_t heads, Value head,
                int64_t dim) {
    Value r = add64(mul64(i64(batch), i64(rows)), i64(row));
    return mul64(add64(mul64(r, d.c64(heads)), i64(head)), d.c64(dim));
  }
  /// Stages `rows` rows of `dim` elements from global (row `r` at element
  /// offset `rowOffset(r)` of `src`, zeros where `rowValid(r)` is false) to
  /// shared f32 rows of `stride` at `dst`.
  void stage(Value src, Value dst, int64_t rows, int64_t dim, int64_t stride,
             const std::function<Value(Value)> &rowOffset,
             const std::function<Value(Value)> &rowValid);

  /// One key tile: stage K and V, then update every row of the warp.
  SmallVector<Value> processTile(Value tile, ValueRange carried);
  /// The online softmax and P V of the warp's row `r` for key `j` (this
  /// lane's), `dot` its raw score.
  void updateRow(int64_t r, MutableArrayRef<Value> st, Value dot, Value j,
                 Value jValid, Value jSafe);
  /// out = o / l (zeros for a row that saw no key).
  void writeOutput(ArrayRef<Value> state);

  DeviceBuilder &d;
  OpBuilder &b;
  Location loc;
  const SdpaPlan &p;
  Value query, key, value, bias, positions, keyMask, output, queries, keys;
  // Per CTA (emit).
  int64_t cols = 0, perRowState = 0;
  Value sQ, sK, sV, sP, batch, head, kvHead, warp, lane, firstRow, p0, kvEnd;
  Value scaleLog2;
  SmallVector<Value> rowIndex;
};
} // namespace

void SdpaEmitter::stage(Value src, Value dst, int64_t rows, int64_t dim,
                        int64_t stride,
                        const std::function<Value(Value)> &rowOffset,
                        const std::function<Value(Value)> &rowValid) {
  const int64_t v = 8;
  Type vecElem = d.vec(d.elemType, v), vecF32 = d.vec(d.f32, v);
  int64_t perRow = dim / v;
  d.forLoop(
      d.tid(), d.c32(rows * perRow), d.c32(p.threads), ValueRange(),
      [&](Value item, ValueRange) -> SmallVector<Value> {
        Value row = d.divu(item, perRow);
        Value c = d.mul(d.remu(item, perRow), v);
        Value valid = rowValid(row);
        Value x = d.ifThenElseValues(
            valid, vecF32,
            [&]() -> SmallVector<Value> {
              Value at = add64(rowOffset(row), i64(c));
              Value raw = d.load(vecElem, d.gAt(src, at, d.elemType), 16);
              return {arith::ExtFOp::create(b, loc, vecF32, raw)};
            },
            [&]() -> SmallVector<Value> { return {d.zerosOf(vecF32)}; })[0];
        Value off = d.mul(d.add(d.mul(row, stride), c), 4);
        d.store(x, d.sAt(dst, off), 16);
        return {};
      });
}

static constexpr float kNegInf = -std::numeric_limits<float>::infinity();
static constexpr double kLog2e = 1.4426950408889634;

void SdpaEmitter::emit() {
  const int64_t rpw = p.rowsPerWarp, kv = p.blockKV;
  cols = (p.valueDim + 31) / 32; // output columns per lane
  Value smem = d.alignedDynamicShared(kSharedSymbol);
  sQ = d.sAt(smem, p.qOff);
  sK = d.sAt(smem, p.kOff);
  sV = d.sAt(smem, p.vOff);
  sP = d.sAt(smem, p.pOff);

  Value qBlock = d.ctaid(0);
  head = d.ctaid(1);
  batch = d.ctaid(2);
  kvHead = d.divu(head, p.group);
  Value tid = d.tid();
  warp = d.divu(tid, 32);
  lane = d.remu(tid, 32);
  firstRow = d.mul(qBlock, p.blockQ);

  // Query i sits at p0 + i: p0 = positions[b], or T - S.
  if (positions)
    p0 = arith::TruncIOp::create(b, loc, d.i32,
                                 d.loadIndex(positions, batch, p.positionBits));
  else
    p0 = d.sub(keys, queries);

  // Keys any row of the block can see: [kvStart, kvEnd).
  Value lastRow = d.sub(d.mins(queries, d.add(firstRow, p.blockQ)), d.c32(1));
  kvEnd = keys;
  if (p.causal)
    kvEnd = d.mins(keys, d.add(d.add(p0, lastRow), d.c32(1)));
  Value kvStart = d.c32(0);
  if (p.window)
    kvStart = d.maxs(
        kvStart, d.add(d.sub(d.add(p0, firstRow), d.c32(*p.window)), d.c32(1)));

  // The block's query rows, f32 in shared memory.
  stage(
      query, sQ, p.blockQ, p.headDim, p.qStride,
      [&](Value row) {
        return headRow(batch, queries, d.add(firstRow, row), p.numHeads, head,
                       p.headDim);
      },
      [&](Value row) {
        return d.cmp(Pred::slt, d.add(firstRow, row), queries);
      });

  // Per row: running max m (log2 domain), sum l, output columns.
  SmallVector<Value> init;
  for (int64_t r = 0; r < rpw; ++r) {
    init.push_back(d.cf(kNegInf));
    init.push_back(d.cf(0.0));
    for (int64_t c = 0; c < cols; ++c)
      init.push_back(d.cf(0.0));
  }
  perRowState = 2 + cols;
  scaleLog2 = d.cf(p.scale * kLog2e);
  SmallVector<Value> state = d.forLoop(kvStart, kvEnd, d.c32(kv), init,
                                       [&](Value tile, ValueRange carried) {
                                         return processTile(tile, carried);
                                       });
  writeOutput(state);
}

SmallVector<Value> SdpaEmitter::processTile(Value tile, ValueRange carried) {
  const int64_t rpw = p.rowsPerWarp, kv = p.blockKV;
  Type vec4 = d.vec(d.f32, 4);
  SmallVector<Value> st(carried.begin(), carried.end());
  d.barrierAll(); // the previous tile's readers are done
  auto keyRow = [&](Value row) { return d.add(tile, row); };
  auto keyValid = [&](Value row) {
    return d.cmp(Pred::slt, keyRow(row), kvEnd);
  };
  stage(
      key, sK, kv, p.headDim, p.kStride,
      [&](Value row) {
        return headRow(batch, keys, keyRow(row), p.numKvHeads, kvHead,
                       p.headDim);
      },
      keyValid);
  stage(
      value, sV, kv, p.valueDim, p.vStride,
      [&](Value row) {
        return headRow(batch, keys, keyRow(row), p.numKvHeads, kvHead,
                       p.valueDim);
      },
      keyValid);
  d.barrierAll();

  // Lane l scores key j = tile + l against the warp's rows.
  Value j = d.add(tile, lane);
  Value jValid = d.cmp(Pred::slt, j, kvEnd);
  Value jSafe = d.select(jValid, j, d.c32(0));
  if (keyMask) {
    Value at = add64(mul64(i64(batch), i64(keys)), i64(jSafe));
    jValid = d.andb(jValid, d.nonZeroAt(keyMask, at, p.keyMaskBits));
  }
  rowIndex.clear();
  for (int64_t r = 0; r < rpw; ++r)
    rowIndex.push_back(d.add(firstRow, d.add(d.mul(warp, rpw), d.c32(r))));
  SmallVector<Value> zeroAcc(rpw, d.zerosOf(vec4));
  SmallVector<Value> acc = d.forLoop(
      d.c32(0), d.c32(p.headDim), d.c32(4), zeroAcc,
      [&](Value c, ValueRange accs) -> SmallVector<Value> {
        Value k4 = d.load(
            vec4, d.sAt(sK, d.mul(d.add(d.mul(lane, p.kStride), c), 4)), 16);
        SmallVector<Value> next;
        for (int64_t r = 0; r < rpw; ++r) {
          Value qRow = d.add(d.mul(warp, rpw), d.c32(r));
          Value q4 = d.load(
              vec4, d.sAt(sQ, d.mul(d.add(d.mul(qRow, p.qStride), c), 4)), 16);
          next.push_back(LLVM::FMAOp::create(b, loc, q4, k4, accs[r]));
        }
        return next;
      });

  for (int64_t r = 0; r < rpw; ++r) {
    Value dot = d.cf(0.0);
    for (int64_t e = 0; e < 4; ++e)
      dot =
          d.addf(dot, LLVM::ExtractElementOp::create(b, loc, acc[r], d.c32(e)));
    updateRow(r, st, dot, j, jValid, jSafe);
  }
  return st;
}

void SdpaEmitter::updateRow(int64_t r, MutableArrayRef<Value> st, Value dot,
                            Value j, Value jValid, Value jSafe) {
  const int64_t kv = p.blockKV;
  Value *m = &st[r * perRowState], *l = &st[r * perRowState + 1];
  Value *o = &st[r * perRowState + 2];
  Value i = rowIndex[r];
  Value pos = d.add(p0, i);
  Value s = d.mulf(dot, scaleLog2);
  if (bias) {
    // bias[h?, i, j], added after the scale: log2e * bias.
    Value iSafe = d.select(d.cmp(Pred::slt, i, queries), i, d.c32(0));
    Value at = add64(mul64(i64(iSafe), i64(keys)), i64(jSafe));
    if (p.biasRank == 3)
      at = add64(mul64(mul64(i64(head), i64(queries)), i64(keys)), at);
    Value raw = d.load(d.elemType, d.gAt(bias, at, d.elemType), 2);
    Value bf = arith::ExtFOp::create(b, loc, d.f32, raw);
    s = d.fma(bf, d.cf(kLog2e), s);
  }
  Value visible = jValid;
  if (p.causal)
    visible = d.andb(visible, d.cmp(Pred::sle, j, pos));
  if (p.window)
    visible =
        d.andb(visible, d.cmp(Pred::slt, d.sub(pos, j), d.c32(*p.window)));
  s = d.select(visible, s, d.cf(kNegInf));
  Value mNew = d.maxf(*m, d.warpMax(s));
  Value mSafe = d.select(d.cmpf(arith::CmpFPredicate::OEQ, mNew, d.cf(kNegInf)),
                         d.cf(0.0), mNew);
  Value prob = d.exp2(d.subf(s, mSafe));
  Value alpha = d.exp2(d.subf(*m, mSafe));
  *l = d.fma(*l, alpha, d.warpSum(prob));
  *m = mNew;
  // P V: the warp's probabilities through shared memory.
  Value pRow = d.sAt(sP, d.mul(d.mul(warp, kv), 4));
  d.store(prob, d.sAt(pRow, d.mul(lane, 4)), 4);
  d.warpSync();
  SmallVector<Value> scaled;
  for (int64_t c = 0; c < cols; ++c)
    scaled.push_back(d.mulf(o[c], alpha));
  Value colBase = lane;
  SmallVector<Value> outCols = d.forLoop(
      d.c32(0), d.c32(kv), d.c32(1), scaled,
      [&](Value jj, ValueRange os) -> SmallVector<Value> {
        Value pj = d.load(d.f32, d.sAt(pRow, d.mul(jj, 4)), 4);
        SmallVector<Value> next;
        for (int64_t c = 0; c < cols; ++c) {
          Value col = d.add(colBase, d.c32(32 * c));
          if ((c + 1) * 32 > p.valueDim)
            col = d.mins(col, d.c32(p.valueDim - 1));
          Value vv = d.load(
              d.f32, d.sAt(sV, d.mul(d.add(d.mul(jj, p.vStride), col), 4)), 4);
          next.push_back(d.fma(pj, vv, os[c]));
        }
        return next;
      });
  d.warpSync(); // every lane read the probabilities
  for (int64_t c = 0; c < cols; ++c)
    o[c] = outCols[c];
}

void SdpaEmitter::writeOutput(ArrayRef<Value> state) {
  const int64_t rpw = p.rowsPerWarp;
  for (int64_t r = 0; r < rpw; ++r) {
    Value i = d.add(firstRow, d.add(d.mul(warp, rpw), d.c32(r)));
    Value l = state[r * perRowState + 1];
    Value none = d.cmpf(arith::CmpFPredicate::OLE, l, d.cf(0.0));
    Value inv = d.select(none, d.cf(0.0), d.divf(d.cf(1.0), l));
    d.ifThen(d.cmp(Pred::slt, i, queries), [&]() {
      Value base = headRow(batch, queries, i, p.numHeads, head, p.valueDim);
      for (int64_t c = 0; c < cols; ++c) {
        Value col = d.add(lane, d.c32(32 * c));
        auto write = [&]() {
          Value x = d.mulf(state[r * perRowState + 2 + c], inv);
          d.store(arith::TruncFOp::create(b, loc, d.elemType, x),
                  d.gAt(output, add64(base, i64(col)), d.elemType), 2);
        };
        if ((c + 1) * 32 > p.valueDim)
          d.ifThen(d.cmp(Pred::slt, col, p.valueDim), write);
        else
          write();
      }
    });
  }
}

void attnfuse::sm90::buildSdpaKernel(OpBuilder &b, Location loc,
                                     gpu::GPUModuleOp module,
                                     const SdpaPlan &p) {
  // query, key, value[, bias][, positions][, key_mask], output, then the
  // query and key counts.
  KernelSignature signature(b.getContext());
  signature.pointer(3)
      .pointer(1, p.biasRank)
      .pointer(1, p.positionBits)
      .pointer(1, p.keyMaskBits)
      .pointer()
      .scalar(2);
  KernelBody body(b, loc, module, p.name, signature, p.threads,
                  /*minBlocks=*/1, p.elem);
  SdpaEmitter(body.d, p, body.func).emit();
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr attnfuse::sm90::describeSdpa(MLIRContext *ctx, SDPAOp op,
                                                    const SdpaPlan &p) {
  StringRef elem = elemName(p.elem);
  LaunchSymbols sym = sdpaSymbols(ctx, op);
  Attribute batch = sym.dim(op.getQuery(), 0, "batch");
  Attribute queries = sym.dim(op.getQuery(), 1, "query tokens per sequence");
  Attribute keys = sym.dim(op.getKey(), 1, "key tokens per sequence");
  auto I = [&](int64_t v) { return intAttr(ctx, v); };
  SmallVector<Attribute> tensors, params;
  int64_t operand = 0;
  auto add = [&](StringRef name, StringRef role, StringRef dtype,
                 ArrayRef<Attribute> shape) {
    tensors.push_back(describeTensor(ctx, name, role, operand++, dtype, shape));
    params.push_back(describeParam(ctx, name, "pointer", dtype, name));
  };
  add("query", "query", elem, {batch, queries, I(p.numHeads), I(p.headDim)});
  add("key", "key", elem, {batch, keys, I(p.numKvHeads), I(p.headDim)});
  add("value", "value", elem, {batch, keys, I(p.numKvHeads), I(p.valueDim)});
  if (p.biasRank == 2)
    add("bias", "additive bias, shared by the heads", elem, {queries, keys});
  else if (p.biasRank == 3)
    add("bias", "additive bias per head", elem, {I(p.numHeads), queries, keys});
  if (p.positionBits)
    add("positions", "position of each sequence's query 0",
        indexDtype(p.positionBits), {batch});
  if (p.keyMaskBits)
    add("key_mask", "keys with a nonzero entry are visible",
        indexDtype(p.keyMaskBits), {batch, keys});
  tensors.push_back(
      describeTensor(ctx, "output", "result", -1, elem,
                     {batch, queries, I(p.numHeads), I(p.valueDim)}));
  params.push_back(describeParam(ctx, "output", "pointer", elem, "output"));
  params.push_back(
      describeParam(ctx, "queries", "scalar", "i32", sizeText(queries)));
  params.push_back(describeParam(ctx, "keys", "scalar", "i32", sizeText(keys)));

  Attribute qBlocks =
      isa<IntegerAttr>(queries)
          ? I((cast<IntegerAttr>(queries).getInt() + p.blockQ - 1) / p.blockQ)
          : strAttr(ctx, llvm::formatv("ceil_div({0}, {1})", sizeText(queries),
                                       p.blockQ)
                             .str());
  SmallVector<Attribute> grid = {gridEntry(ctx, qBlocks),
                                 gridEntry(ctx, I(p.numHeads)),
                                 gridEntry(ctx, batch)};
  DictBuilder config(ctx);
  config.set("elem_type", elem)
      .set("head_dim", p.headDim)
      .set("value_dim", p.valueDim)
      .set("num_heads", p.numHeads)
      .set("num_kv_heads", p.numKvHeads)
      .set("group", p.group)
      .setBool("causal", p.causal)
      .set("scale", p.scale)
      .set("block_q", p.blockQ)
      .set("block_kv", p.blockKV)
      .set("query_position",
           p.positionBits ? "positions[b] + i" : "i + (T - S)");
  if (p.window)
    config.set("window", *p.window);
  std::string symbols = sym.describe();
  return describeLaunch(
      ctx, {p.name, "sdpa", symbols, p.threads, p.sharedBytes},
      {grid, params, tensors}, config.get(), {p.hostCastFromF32});
}
