//===- DeviceBuilder.h - NVVM/LLVM-level builders for sm_90a ----*- C++ -*-===//
//
// Small builders for the Hopper kernels of the fused attn ops, written at the
// NVVM / LLVM-dialect level inside a gpu.func: i32 arithmetic (arith),
// structured control flow (scf, lowered before gpu-to-nvvm), shared memory
// addressing from one dynamic shared-memory symbol, mbarriers, TMA
// (cp.async.bulk.tensor), wgmma (SS through nvvm.wgmma.mma_async, RS through
// inline PTX) and the register-fragment helpers of the online softmax.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_DEVICEBUILDER_H
#define ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_DEVICEBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <functional>

namespace attnfuse::sm90 {

using mlir::Location;
using mlir::OpBuilder;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

/// The 16-bit element type of a kernel's tensors.
enum class ElemKind { bf16, f16 };

/// PTX / wgmma spelling of the element type ("bf16" or "f16").
llvm::StringRef elemName(ElemKind kind);

/// Reads a kernel's arguments in the order of its signature; the optional
/// ones only where its plan passes them.
class KernelArguments {
public:
  explicit KernelArguments(mlir::FunctionOpInterface func)
      : entry(func.getFunctionBody().front()) {}
  /// The next argument.
  Value next() { return entry.getArgument(index++); }
  /// The next argument when the plan passes one (`present`), else null.
  Value nextIf(bool present) { return present ? next() : Value(); }

private:
  mlir::Block &entry;
  unsigned index = 0;
};

/// Builds device code at one location.
class DeviceBuilder {
public:
  DeviceBuilder(OpBuilder &b, Location loc, ElemKind elem);

  OpBuilder &b;
  Location loc;
  ElemKind elem;
  Type i1, i16, i32, i64, f32, elemType;
  /// Generic, shared::cta (3), shared::cluster (7) and global (1) pointers.
  Type ptr, sptr, cptr, gptr;

  // Constants.
  Value c32(int64_t v);
  Value c64(int64_t v);
  Value cf(double v);
  Value ctrue();

  // i32 arithmetic (signed where values can be negative).
  Value add(Value a, Value b2);
  Value add(Value a, int64_t v) { return v == 0 ? a : add(a, c32(v)); }
  Value sub(Value a, Value b2);
  Value sub(Value a, int64_t v) { return v == 0 ? a : sub(a, c32(v)); }
  Value mul(Value a, Value b2);
  Value mul(Value a, int64_t v) { return v == 1 ? a : mul(a, c32(v)); }
  Value divu(Value a, int64_t v);
  Value remu(Value a, int64_t v);
  Value divs(Value a, Value b2);
  Value ceilDivs(Value a, int64_t v);
  Value andi(Value a, Value b2);
  Value andi(Value a, int64_t v) { return andi(a, c32(v)); }
  Value ori(Value a, Value b2);
  Value xori(Value a, Value b2);
  Value xori(Value a, int64_t v) { return xori(a, c32(v)); }
  Value shl(Value a, int64_t v);
  Value mins(Value a, Value b2);
  Value maxs(Value a, Value b2);
  Value cmp(mlir::arith::CmpIPredicate p, Value a, Value b2);
  Value cmp(mlir::arith::CmpIPredicate p, Value a, int64_t v) {
    return cmp(p, a, c32(v));
  }
  Value select(Value c, Value a, Value b2);
  Value andb(Value a, Value b2); // i1 and
  Value orb(Value a, Value b2);  // i1 or

  // f32 arithmetic.
  Value addf(Value a, Value b2);
  Value subf(Value a, Value b2);
  Value mulf(Value a, Value b2);
  Value fma(Value a, Value b2, Value c);
  /// The RoPE rotation of the pair (x, y) by the angle of `cos` and `sin`:
  /// {x cos - y sin, y cos + x sin} (scalars or vectors).
  std::pair<Value, Value> rotatePair(Value x, Value y, Value cos, Value sin) {
    Value xCos = mulf(x, cos), ySin = mulf(y, sin);
    Value first = subf(xCos, ySin);
    Value yCos = mulf(y, cos), xSin = mulf(x, sin);
    return {first, addf(yCos, xSin)};
  }
  Value maxf(Value a, Value b2);
  Value exp2(Value a);
  Value divf(Value a, Value b2);
  Value cmpf(mlir::arith::CmpFPredicate p, Value a, Value b2);

  // Special registers.
  Value tid();
  Value ctaid(int dim);
  Value nctaid(int dim);
  Value laneId();

  // Shared memory.
  /// A shared::cta pointer `base + offset` (bytes).
  Value sAt(Value base, Value offset);
  Value sAt(Value base, int64_t offset);
  /// Shared pointer to slot `index` of an array of `slotBytes`-byte slots
  /// (a ring's stages, a warpgroup's slabs) at byte `offset` of `base`.
  Value sSlot(Value base, int64_t offset, Value index, int64_t slotBytes) {
    return sAt(base, add(mul(index, slotBytes), offset));
  }
  /// The 32-bit shared-window address of a shared pointer.
  Value sAddr(Value sharedPtr);
  /// 1024-byte aligned base of the dynamic shared memory symbol `name`.
  Value alignedDynamicShared(llvm::StringRef name);

  // Synchronization.
  void barrierAll();
  void namedBarrier(int id, int threads);
  void fenceProxyAsync();
  /// fence.mbarrier_init.release.cluster: makes the thread's mbarrier.init
  /// visible to the async proxy (TMA complete_tx) before a barrier publishes
  /// the mbarriers.
  void fenceMbarrierInit();
  Value electSync();
  void setMaxRegisters(bool increase, int count);
  void mbarInit(Value bar, int count);
  void mbarArriveExpectTx(Value bar, int64_t bytes);
  void mbarArrive(Value bar);
  void mbarWait(Value bar, Value parity);

  // TMA.
  void tmaLoad(Value dst, Value desc, ValueRange coords, Value bar);
  void tmaStore(Value desc, Value src, ValueRange coords);
  void bulkCommit();
  void bulkWaitRead0();
  /// 1-D bulk copy of `bytes` (a multiple of 16) from global `src` to shared
  /// `dst`, completing on the mbarrier `bar` (cp.async.bulk).
  void bulkLoad(Value dst, Value src, Value bytes, Value bar);

  // wgmma.
  /// `!llvm.struct<(f32 x n)>`.
  Type accType(int n);
  Value zeroAcc(int n);
  Value poisonAcc(int n);
  /// A 64-bit wgmma shared-memory descriptor of a 128B-swizzled operand at
  /// shared address `addr` (i32) with the given leading / stride byte
  /// offsets.
  Value wgmmaDesc(Value addr, int64_t lbo, int64_t sbo);
  /// `desc` advanced by `bytes` (a multiple of 16).
  Value descAdd(Value desc, int64_t bytes);
  void wgmmaFence();
  void wgmmaCommit();
  void wgmmaWait(int pending);
  /// D(m64 x n) (+)= A(smem, K-major unless transA) * B(smem, K-major
  /// unless transB).
  Value wgmmaSS(Value acc, Value descA, Value descB, int n, bool accumulate,
                bool transB, bool transA = false);
  /// D(m64 x n) += A(registers: 4 x b32 of packed 16-bit pairs) * B(smem).
  Value wgmmaRS(Value acc, llvm::ArrayRef<Value> a, Value descB, int n,
                bool transB);

  // Fragments.
  llvm::SmallVector<Value> unpack(Value acc, int n);
  Value pack(Value acc, llvm::ArrayRef<Value> values);
  /// Two f32 into one b32 of 16-bit elements: `lo` in bits 0-15.
  Value packHalf2(Value lo, Value hi);
  /// IEEE round-to-nearest square root (sqrt.rn.f32).
  Value sqrtRn(Value a);
  /// lg2.approx.f32.
  Value log2Approx(Value a);
  /// A call of the NVVM intrinsic `name` (llvm.call_intrinsic), for the PTX
  /// instructions that have an intrinsic but no NVVM dialect op.
  Value callNVVMIntrinsic(llvm::StringRef name, Type result,
                          ValueRange operands);
  /// bar.warp.sync over the full warp.
  void warpSync();
  Value shflBfly(Value v, int offset);
  /// The f32 sum (maximum) of `v` over the warp's 32 lanes, in every lane:
  /// butterfly shuffles at offsets 16, 8, 4, 2, 1.
  Value warpSum(Value v);
  Value warpMax(Value v);
  /// The i32 `v` of the warp's lane 0. For a value the same in every lane
  /// (a warpgroup index), this tells ptxas so: what derives from it can
  /// live in uniform registers instead of the threads' own.
  Value warpUniform(Value v);

  // Global memory.
  Value gAt(Value base, Value elementOffset, Type elementType);
  Value load(Type t, Value p, int align);
  /// Element `index` of the 16-bit `elemType` tensor at `base`, widened to
  /// f32.
  Value loadF32(Value base, Value index);
  /// Whether element `index` of the integer array at `base` (a padding
  /// mask of `bits`-bit integers) is nonzero.
  Value nonZeroAt(Value base, Value index, int64_t bits);
  void store(Value v, Value p, int align);
  /// i32 -> i64, sign-extended.
  Value ext64(Value a);
  /// Row `batch * rows + row` of a `[B, rows, ...]` tensor as an i64 (a
  /// tensor may pass 2^31 elements).
  Value row64(Value batch, Value rows, Value row);
  /// The element offset of that row's first element, rows of `width`.
  Value rowStart64(Value batch, Value rows, Value row, int64_t width);
  /// Element `index` of the integer array at `base` (i32 or i64 elements by
  /// `bits`) as an i64.
  Value loadIndex(Value base, Value index, int64_t bits);
  /// A vector of `n` elements of `t`; `n == 1` gives the scalar type.
  Type vec(Type t, int64_t n);
  /// Zeros of `t` (float scalar or vector).
  Value zerosOf(Type t);

  // Structured control flow.
  void ifThen(Value cond, const std::function<void()> &then);
  void ifThenElse(Value cond, const std::function<void()> &then,
                  const std::function<void()> &otherwise);
  llvm::SmallVector<Value>
  ifThenElseValues(Value cond, mlir::TypeRange types,
                   const std::function<llvm::SmallVector<Value>()> &then,
                   const std::function<llvm::SmallVector<Value>()> &otherwise);
  /// `for (i = lb; i < ub; i += step)` over i32 with loop-carried values.
  llvm::SmallVector<Value> forLoop(
      Value lb, Value ub, Value step, ValueRange init,
      const std::function<llvm::SmallVector<Value>(Value, ValueRange)> &body);

  /// Inline PTX; `sideEffects` keeps it in place relative to other
  /// side-effecting operations (wgmma, fences), pure arithmetic does not.
  Value inlineAsm(Type result, ValueRange operands, llvm::StringRef text,
                  llvm::StringRef constraints, bool sideEffects = true);
};

} // namespace attnfuse::sm90

#endif // ATTNFUSE_LIB_CONVERSION_ATTNKERNELSTONVVM_DEVICEBUILDER_H
