//===- CCADecodePrologue.cpp - attn.cca_decode_prologue for sm_90a -*- C++
//-*-===//
//
// One CCA decode step (attn.cca_decode_prologue) as one sm_90a kernel. One
// CTA of 256 threads (8 warps) per (head, sequence): the grid is (num_heads
// + num_kv_heads) x batch, heads in conv channel order (query heads, then
// key heads), so a model's few heads still spread over many SMs at small
// batch. The QK-mean residual needs only the PRE-conv projections of the
// head's KV group, which are kernel inputs: a CTA reads them directly and
// no CTA waits for another.
//
// 1. Thread e < d owns conv channel e of the head: it reads its P state
//    rows and the new u value, computes the k1 depthwise outputs the grouped
//    conv needs (f32, into shared memory, laid out [e][tap] like a weight
//    row) and writes its channel of the rolled state. The same thread reads
//    and then writes the same state elements, and channels are disjoint
//    between CTAs, so the state may be updated in place.
// 2. The grouped conv (the heavy part: d x d x k1 weights per head, read
//    once): warp w takes weight rows o = w, w + 8, ...; a row [e][tap] is
//    d * k1 contiguous 16-bit values, read by the 32 lanes as 16-byte
//    vectors (8 values each) against the same 8 depthwise outputs, which
//    each lane keeps in registers for all its rows. Rows are unrolled in
//    batches so several vector loads are in flight per lane; a butterfly
//    sums each row over the lanes (f32 throughout).
// 3. Thread o < d finishes output channel o: conv bias, QK-mean from the
//    group's pre-conv projections, L2 norm (warp shuffles + a cross-warp
//    shared sum) to sqrt(d), key temperature, RoPE at positions[b] (partner
//    through shared memory, cos/sin from host tables [T, r/2]) and a 16-bit
//    store.
// 4. Key-head CTAs also assemble value head j: v_cur, or with the value
//    shift v_cur | shift_state, and write v_prev as the new shift state
//    (again each element read and written by one thread: in place is safe).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::sm90;
using arith::CmpIPredicate;

std::string DecodePrologueKernelPlan::key() const {
  return "cca_decode:" + configKey();
}

FailureOr<DecodePrologueKernelPlan>
attnfuse::sm90::planCCADecodePrologue(CCADecodePrologueOp op,
                                      const TargetOptions &options,
                                      std::string &unsupported) {
  DecodePrologueKernelPlan p;
  auto qrType = cast<RankedTensorType>(op.getQr().getType());
  if (failed(
          planCCAConfig(op, qrType.getElementType(), options, p, unsupported)))
    return failure();
  auto positionsType = cast<RankedTensorType>(op.getPositions().getType());
  if (!positionsType.getElementType().isInteger(32)) {
    unsupported = "the sm_90a decode prologue reads i32 positions";
    return failure();
  }
  p.threads = 256;
  p.warps = p.threads / 32;
  if (p.headDim % 32 != 0 || p.headDim > p.threads) {
    unsupported = "the sm_90a decode prologue needs a head_dim that is a "
                  "multiple of 32 and at most 256";
    return failure();
  }
  if (p.padding == 0) {
    unsupported = "the sm_90a decode prologue needs a convolution state "
                  "(conv kernel sizes 1 and 1 leave none)";
    return failure();
  }
  p.rowsPerWarp = p.headDim / p.warps;
  p.chunksPerRow = p.headDim * p.k1 / 8;
  p.chunksPerLane = (p.chunksPerRow + 31) / 32;
  if (p.chunksPerLane > 4) {
    unsupported = "the sm_90a decode prologue holds at most 4 x 8 depthwise "
                  "outputs per lane (head_dim * k1 <= 1024)";
    return failure();
  }
  p.rowBatch = p.rowsPerWarp % 8 == 0 ? 8 : 4;
  p.mOff = 0;
  p.convOff = llvm::alignTo(p.headDim * p.k1 * 4, 16);
  p.partOff = p.convOff + p.headDim * 4;
  p.rotOff = llvm::alignTo(p.partOff + p.warps * 4, 16);
  p.sharedBytes = p.rotOff + p.headDim * 4 + 1024;

  std::string name = llvm::formatv("attn_cca_decode_prologue_{0}_h{1}_g{2}_d{3}"
                                   "_k{4}x{5}",
                                   elemName(p.elem), p.numHeads, p.group,
                                   p.headDim, p.k0, p.k1);
  p.name = name + ccaKernelNameSuffix(p.qkMean, p.valueShift, p.clamped,
                                      p.clampEps, p.rotated);
  return p;
}

namespace {

class DecodePrologueEmitter {
public:
  DecodePrologueEmitter(DeviceBuilder &d, const DecodePrologueKernelPlan &p,
                        gpu::GPUFuncOp func)
      : d(d), p(p), func(func) {
    queryLatent = p.numHeads * p.headDim;
    keyLatent = p.numKvHeads * p.headDim;
    channels = queryLatent + keyLatent;
  }
  void emit();

private:
  /// Element offset `batch * batchStride + rest` in i64 (batch-scaled
  /// offsets of the state can pass 2^31).
  Value gIndex(int64_t batchStride, Value rest) {
    Value scaled =
        arith::MulIOp::create(d.b, d.loc, i64(batch), d.c64(batchStride));
    return arith::AddIOp::create(d.b, d.loc, scaled, i64(rest));
  }
  Value i64(Value v) { return arith::ExtUIOp::create(d.b, d.loc, d.i64, v); }
  Value loadElem(Value ptr, Value index) {
    return d.load(d.elemType, d.gAt(ptr, index, d.elemType), 2);
  }
  Value toF32(Value v) { return arith::ExtFOp::create(d.b, d.loc, d.f32, v); }
  Value toElem(Value v) {
    return arith::TruncFOp::create(d.b, d.loc, d.elemType, v);
  }
  Value sharedF32(int64_t base, Value index) {
    return d.sAt(smem, d.add(d.shl(index, 2), base));
  }

  void depthwiseAndRoll();
  void groupedConv();
  void finish();
  void values();

  DeviceBuilder &d;
  const DecodePrologueKernelPlan &p;
  gpu::GPUFuncOp func;
  int64_t queryLatent, keyLatent, channels;
  Value qr, kr, vCur, vPrev, dwW, dwB, gW, gB, temp, convState, shiftState,
      positions, ropeCos, ropeSin, ropeRows, outQ, outK, outV, convStateOut,
      shiftStateOut;
  Value smem, tid, warp, lane, head, batch, isKey, kvHead;
};

void DecodePrologueEmitter::emit() {
  KernelArguments args(func);
  qr = args.next();
  kr = args.next();
  vCur = args.next();
  vPrev = args.nextIf(p.valueShift);
  dwW = args.next();
  dwB = args.next();
  gW = args.next();
  gB = args.next();
  temp = args.next();
  convState = args.next();
  shiftState = args.nextIf(p.valueShift);
  positions = args.next();
  ropeCos = args.nextIf(p.rotated);
  ropeSin = args.nextIf(p.rotated);
  ropeRows = args.nextIf(p.rotated);
  outQ = args.next();
  outK = args.next();
  outV = args.next();
  convStateOut = args.next();
  shiftStateOut = args.nextIf(p.valueShift);

  tid = d.tid();
  warp = d.divu(tid, 32);
  lane = d.remu(tid, 32);
  head = d.ctaid(0);
  batch = d.ctaid(1);
  smem = d.alignedDynamicShared(kSharedSymbol);
  isKey = d.cmp(CmpIPredicate::uge, head, p.numHeads);
  // The KV group of the head (for a key head: itself).
  kvHead = d.select(isKey, d.sub(head, p.numHeads), d.divu(head, p.group));

  depthwiseAndRoll();
  d.barrierAll();
  groupedConv();
  d.barrierAll();
  finish();
  d.ifThen(isKey, [&]() { values(); });
}

void DecodePrologueEmitter::depthwiseAndRoll() {
  int64_t dim = p.headDim, P = p.padding;
  d.ifThen(d.cmp(CmpIPredicate::ult, tid, dim), [&]() {
    Value channel = d.add(d.mul(head, dim), tid);
    // The window [state rows | u], oldest first, in the element type.
    SmallVector<Value> window;
    for (int64_t r = 0; r < P; ++r)
      window.push_back(loadElem(
          convState, gIndex(P * channels, d.add(channel, r * channels))));
    Value rawPtr = d.select(isKey, kr, qr);
    Value rawIndex =
        d.select(isKey, d.add(d.mul(d.sub(head, p.numHeads), dim), tid),
                 d.add(d.mul(head, dim), tid));
    Value rawStride = d.select(isKey, d.c32(keyLatent), d.c32(queryLatent));
    Value rawOffset = arith::AddIOp::create(
        d.b, d.loc,
        arith::MulIOp::create(d.b, d.loc, i64(batch), i64(rawStride)),
        i64(rawIndex));
    window.push_back(loadElem(rawPtr, rawOffset));

    // m_t = b_dw + sum_i w_dw[i] W[t + i] for the k1 rows the grouped conv
    // reads (window rows k0 - 1 .. P), stored at [e][t].
    SmallVector<Value> weights;
    for (int64_t i = 0; i < p.k0; ++i)
      weights.push_back(toF32(loadElem(dwW, d.add(d.mul(channel, p.k0), i))));
    Value bias = toF32(loadElem(dwB, channel));
    for (int64_t t = 0; t < p.k1; ++t) {
      Value m = bias;
      for (int64_t i = 0; i < p.k0; ++i)
        m = d.fma(weights[i], toF32(window[t + i]), m);
      d.store(m, sharedF32(p.mOff, d.add(d.mul(tid, p.k1), t)), 4);
    }
    // The rolled state: rows 1 .. P of the window.
    for (int64_t r = 0; r < P; ++r)
      d.store(window[r + 1],
              d.gAt(convStateOut,
                    gIndex(P * channels, d.add(channel, r * channels)),
                    d.elemType),
              2);
  });
}

void DecodePrologueEmitter::groupedConv() {
  int64_t dim = p.headDim, rowElems = dim * p.k1;
  auto vec8 = VectorType::get({8}, d.elemType);
  auto vec4f = VectorType::get({4}, d.f32);
  // This lane's depthwise outputs: 8 per chunk it reads in every row.
  SmallVector<Value> chunkIndex, mValues;
  SmallVector<Value> chunkValid;
  for (int64_t j = 0; j < p.chunksPerLane; ++j) {
    Value chunk = d.add(lane, 32 * j);
    Value valid = d.cmp(CmpIPredicate::ult, chunk, p.chunksPerRow);
    Value clamped = d.mins(chunk, d.c32(p.chunksPerRow - 1));
    chunkIndex.push_back(clamped);
    chunkValid.push_back(valid);
    for (int64_t half = 0; half < 2; ++half) {
      Value v = d.load(
          vec4f, sharedF32(p.mOff, d.add(d.mul(clamped, 8), 4 * half)), 16);
      for (int64_t k = 0; k < 4; ++k) {
        Value element = LLVM::ExtractElementOp::create(d.b, d.loc, v, d.c32(k));
        // Chunks past the row (when d * k1 / 8 is not a multiple of 32)
        // contribute nothing.
        mValues.push_back(d.select(valid, element, d.cf(0.0)));
      }
    }
  }
  int64_t batches = p.rowsPerWarp / p.rowBatch;
  Value rowBase = d.mul(head, dim);
  d.forLoop(
      d.c32(0), d.c32(batches), d.c32(1), ValueRange(),
      [&](Value rowBatchIndex, ValueRange) -> SmallVector<Value> {
        // Issue the batch's loads first, then reduce.
        SmallVector<Value> rows, loaded;
        for (int64_t r = 0; r < p.rowBatch; ++r) {
          Value row = d.add(
              d.mul(d.add(d.mul(rowBatchIndex, p.rowBatch), r), p.warps), warp);
          rows.push_back(row);
          Value rowStart = d.mul(d.add(rowBase, row), rowElems);
          for (int64_t j = 0; j < p.chunksPerLane; ++j)
            loaded.push_back(d.load(
                vec8,
                d.gAt(gW, d.add(rowStart, d.mul(chunkIndex[j], 8)), d.elemType),
                16));
        }
        for (int64_t r = 0; r < p.rowBatch; ++r) {
          Value sum = d.cf(0.0);
          for (int64_t j = 0; j < p.chunksPerLane; ++j) {
            Value w =
                arith::ExtFOp::create(d.b, d.loc, VectorType::get({8}, d.f32),
                                      loaded[r * p.chunksPerLane + j]);
            for (int64_t k = 0; k < 8; ++k)
              sum =
                  d.fma(LLVM::ExtractElementOp::create(d.b, d.loc, w, d.c32(k)),
                        mValues[j * 8 + k], sum);
          }
          sum = d.warpSum(sum);
          Value row = rows[r];
          d.ifThen(d.cmp(CmpIPredicate::eq, lane, 0), [&]() {
            Value bias = toF32(loadElem(gB, d.add(rowBase, row)));
            d.store(d.addf(sum, bias), sharedF32(p.convOff, row), 4);
          });
        }
        return {};
      });
}

void DecodePrologueEmitter::finish() {
  int64_t dim = p.headDim, G = p.group;
  Value active = d.cmp(CmpIPredicate::ult, tid, dim);
  Value o = d.mins(tid, d.c32(dim - 1));
  Value value = d.load(d.f32, sharedF32(p.convOff, o), 4);

  // QK-mean from the pre-conv projections of the token.
  if (p.qkMean) {
    auto rawQuery = [&](Value queryHead) {
      return toF32(
          loadElem(qr, gIndex(queryLatent, d.add(d.mul(queryHead, dim), o))));
    };
    Value rawKey =
        toF32(loadElem(kr, gIndex(keyLatent, d.add(d.mul(kvHead, dim), o))));
    Value term = d.ifThenElseValues(
        isKey, d.f32,
        [&]() -> SmallVector<Value> {
          Value sum;
          for (int64_t m = 0; m < G; ++m) {
            Value q = rawQuery(d.add(d.mul(kvHead, G), m));
            sum = sum ? d.addf(sum, q) : q;
          }
          return {d.mulf(sum, d.cf(1.0 / static_cast<double>(G)))};
        },
        [&]() -> SmallVector<Value> { return {rawQuery(head)}; })[0];
    value = d.fma(d.addf(term, rawKey), d.cf(0.5), value);
  }

  // L2 norm over the head's d channels (warps 0 .. d/32 - 1).
  Value square = d.warpSum(d.mulf(value, value));
  d.ifThen(d.cmp(CmpIPredicate::eq, lane, 0),
           [&]() { d.store(square, sharedF32(p.partOff, warp), 4); });
  d.barrierAll();
  Value sum;
  for (int64_t w = 0; w < dim / 32; ++w) {
    Value part = d.load(d.f32, sharedF32(p.partOff, d.c32(w)), 4);
    sum = sum ? d.addf(sum, part) : part;
  }
  Value norm = headNorm(d, sum, p.clampEps, p.eps);
  Value keyTau = keyTemperature(d, toF32(loadElem(temp, kvHead)), p.clamped);
  Value tau = d.select(isKey, keyTau, d.cf(1.0));
  Value scale = d.mulf(d.cf(std::sqrt(static_cast<double>(dim))), tau);
  value = d.divf(d.mulf(value, scale), norm);

  // RoPE at the sequence's position: the partner dim o +- r/2 is another
  // thread's value.
  if (p.rotated) {
    int64_t half = p.rotated / 2;
    d.ifThen(active, [&]() { d.store(value, sharedF32(p.rotOff, o), 4); });
    d.barrierAll();
    Value low = d.cmp(CmpIPredicate::slt, o, half);
    Value inRotated = d.cmp(CmpIPredicate::slt, o, p.rotated);
    Value partnerDim = d.select(low, d.add(o, half), d.sub(o, half));
    partnerDim = d.select(inRotated, partnerDim, o);
    Value frequency = d.mins(d.select(low, o, d.sub(o, half)), d.c32(half - 1));
    Value sign = d.select(low, d.cf(-1.0), d.cf(1.0));
    // Positions past the tables read the last row (the host keeps every
    // position below T).
    Value position = d.load(d.i32, d.gAt(positions, batch, d.i32), 4);
    position = d.maxs(d.mins(position, d.sub(ropeRows, 1)), d.c32(0));
    Value index = arith::AddIOp::create(
        d.b, d.loc,
        arith::MulIOp::create(d.b, d.loc, i64(position), d.c64(half)),
        i64(frequency));
    Value cosine = d.load(d.f32, d.gAt(ropeCos, index, d.f32), 4);
    Value sine = d.load(d.f32, d.gAt(ropeSin, index, d.f32), 4);
    Value partner = d.load(d.f32, sharedF32(p.rotOff, partnerDim), 4);
    Value rotated = d.fma(d.mulf(partner, sign), sine, d.mulf(value, cosine));
    value = d.select(inRotated, rotated, value);
  }

  // query [B, 1, Hq, d] or key [B, 1, Hk, d].
  d.ifThen(active, [&]() {
    Value outPtr = d.select(isKey, outK, outQ);
    Value outHeads = d.select(isKey, d.c32(p.numKvHeads), d.c32(p.numHeads));
    Value outHead = d.select(isKey, kvHead, head);
    Value index = arith::AddIOp::create(
        d.b, d.loc,
        arith::MulIOp::create(
            d.b, d.loc,
            arith::AddIOp::create(
                d.b, d.loc,
                arith::MulIOp::create(d.b, d.loc, i64(batch), i64(outHeads)),
                i64(outHead)),
            d.c64(dim)),
        i64(o));
    d.store(toElem(value), d.gAt(outPtr, index, d.elemType), 2);
  });
}

void DecodePrologueEmitter::values() {
  int64_t dim = p.headDim;
  d.ifThen(d.cmp(CmpIPredicate::ult, tid, dim), [&]() {
    Value channel = d.add(d.mul(kvHead, dim), tid); // of [0, Lk)
    Value out = d.gAt(outV, gIndex(keyLatent, channel), d.elemType);
    if (!p.valueShift) {
      d.store(loadElem(vCur, gIndex(keyLatent, channel)), out, 2);
      return;
    }
    int64_t half = keyLatent / 2;
    d.ifThenElse(
        d.cmp(CmpIPredicate::ult, channel, half),
        [&]() { d.store(loadElem(vCur, gIndex(half, channel)), out, 2); },
        [&]() {
          // The previous token's v_prev, then this token's becomes the
          // state.
          Value shifted = gIndex(half, d.sub(channel, half));
          d.store(loadElem(shiftState, shifted), out, 2);
          d.store(loadElem(vPrev, shifted),
                  d.gAt(shiftStateOut, shifted, d.elemType), 2);
        });
  });
}

} // namespace

void attnfuse::sm90::buildCCADecodePrologueKernel(
    OpBuilder &b, Location loc, gpu::GPUModuleOp module,
    const DecodePrologueKernelPlan &p) {
  // Inputs, parameters and state in operand order, then the results.
  KernelSignature signature(b.getContext());
  signature.pointer(3)
      .pointer(1, p.valueShift)
      .pointer(6)
      .pointer(1, p.valueShift)
      .pointer() // positions
      .pointer(2, p.rotated)
      .scalar(1, p.rotated)
      .pointer(4)
      .pointer(1, p.valueShift);
  KernelBody body(b, loc, module, p.name, signature, p.threads,
                  /*minBlocks=*/2, p.elem);
  DecodePrologueEmitter(body.d, p, body.func).emit();
  gpu::ReturnOp::create(b, loc);
}

attn::KernelLaunchAttr
attnfuse::sm90::describeCCADecodePrologue(MLIRContext *ctx,
                                          CCADecodePrologueOp op,
                                          const DecodePrologueKernelPlan &p) {
  StringRef elem = elemName(p.elem);
  int64_t dim = p.headDim, hq = p.numHeads, hk = p.numKvHeads;
  int64_t lq = hq * dim, lk = hk * dim, c = lq + lk;
  int64_t valueWidth = p.valueShift ? lk / 2 : lk;
  auto I = [&](int64_t v) { return intAttr(ctx, v); };
  auto S = [&](StringRef v) { return strAttr(ctx, v); };
  auto tensor = [&](StringRef name, StringRef role, int64_t operand,
                    ArrayRef<Attribute> shape, StringRef dtype,
                    StringRef layout, StringRef updates = "") {
    return describeTensor(ctx, name, role, operand, dtype, shape, {}, layout,
                          updates);
  };
  StringRef rowMajor = "row-major, contiguous";
  SmallVector<Attribute> tensors;
  int64_t operand = 0;
  tensors.push_back(
      tensor("qr", "input", operand++, {S("B"), I(1), I(lq)}, elem, rowMajor));
  tensors.push_back(
      tensor("kr", "input", operand++, {S("B"), I(1), I(lk)}, elem, rowMajor));
  tensors.push_back(tensor("v_cur", "input", operand++,
                           {S("B"), I(1), I(valueWidth)}, elem, rowMajor));
  if (p.valueShift)
    tensors.push_back(tensor("v_prev", "input", operand++,
                             {S("B"), I(1), I(lk / 2)}, elem, rowMajor));
  tensors.push_back(tensor("conv_dw_weight", "weight", operand++,
                           {I(c), I(1), I(p.k0)}, elem, "contiguous"));
  tensors.push_back(
      tensor("conv_dw_bias", "bias", operand++, {I(c)}, elem, "contiguous"));
  tensors.push_back(tensor("conv_g_weight", "weight", operand++,
                           {I(c), I(dim), I(p.k1)}, elem,
                           "contiguous (rows read as 16-byte vectors)"));
  tensors.push_back(
      tensor("conv_g_bias", "bias", operand++, {I(c)}, elem, "contiguous"));
  tensors.push_back(
      tensor("temp", "weight", operand++, {I(hk)}, elem, "contiguous"));
  tensors.push_back(tensor("conv_state", "state", operand++,
                           {S("B"), I(p.padding), I(c)}, elem,
                           "row-major [batch, P, C], oldest row first"));
  if (p.valueShift)
    tensors.push_back(tensor("shift_state", "state", operand++,
                             {S("B"), I(1), I(lk / 2)}, elem, rowMajor));
  tensors.push_back(tensor("positions", "positions", operand++, {S("B")}, "i32",
                           "contiguous; every position < T"));
  auto stateResult = [&](StringRef name, StringRef state,
                         ArrayRef<Attribute> shape) {
    return tensor(name, "state_result", -1, shape, elem, rowMajor, state);
  };

  tensors.push_back(tensor("query", "result", -1, {S("B"), I(1), I(hq), I(dim)},
                           elem, "row-major [batch, 1, heads, head_dim]"));
  tensors.push_back(tensor("key", "result", -1, {S("B"), I(1), I(hk), I(dim)},
                           elem, "row-major [batch, 1, kv_heads, head_dim]"));
  tensors.push_back(tensor("value", "result", -1, {S("B"), I(1), I(hk), I(dim)},
                           elem, "row-major [batch, 1, kv_heads, head_dim]"));
  tensors.push_back(stateResult("conv_state_out", "conv_state",
                                {S("B"), I(p.padding), I(c)}));
  if (p.valueShift)
    tensors.push_back(stateResult("shift_state_out", "shift_state",
                                  {S("B"), I(1), I(lk / 2)}));

  SmallVector<Attribute> params;
  auto pointer = [&](StringRef name, StringRef dtype) {
    params.push_back(describeParam(ctx, name, "pointer", dtype, name));
  };
  pointer("qr", elem);
  pointer("kr", elem);
  pointer("v_cur", elem);
  if (p.valueShift)
    pointer("v_prev", elem);
  for (StringRef t : {"conv_dw_weight", "conv_dw_bias", "conv_g_weight",
                      "conv_g_bias", "temp", "conv_state"})
    pointer(t, elem);
  if (p.valueShift)
    pointer("shift_state", elem);
  pointer("positions", "i32");
  SmallVector<Attribute> tables;
  if (p.rotated) {
    describeRopeTables(ctx, "rope", p.theta, p.rotated, "T", params, tables);
    params.push_back(describeParam(ctx, "rope_rows", "scalar", "i32", "T"));
  }
  for (StringRef t : {"query", "key", "value", "conv_state_out"})
    pointer(t, elem);
  if (p.valueShift)
    pointer("shift_state_out", elem);

  SmallVector<Attribute> grid = {gridConstant(ctx, hq + hk),
                                 gridCeilDiv(ctx, "B", 1)};
  DictBuilder config = ccaConfig(ctx, p);
  config.set("conv_state_rows", p.padding)
      .set("cta", "one per (head, sequence): query heads, then key heads")
      .set("grouped_conv",
           "GEMV, warp per weight row, 16-byte vector loads, f32")
      .set("rows_per_warp", p.rowsPerWarp)
      .set("row_batch", p.rowBatch)
      .set("chunks_per_lane", p.chunksPerLane);
  StringRef symbols = "B = batch, T = rows of the RoPE tables (every position "
                      "< T); S is unused (1)";
  (void)op;
  return describeLaunch(
      ctx, {p.name, "cca_decode_prologue", symbols, p.threads, p.sharedBytes},
      {grid, params, tensors, {}, tables}, config.get(),
      {p.hostCastFromF32, "outputs"});
}
