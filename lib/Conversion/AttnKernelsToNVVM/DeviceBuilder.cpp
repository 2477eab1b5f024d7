//===- DeviceBuilder.cpp - NVVM/LLVM-level builders for sm_90a --*- C++ -*-===//

#include "DeviceBuilder.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse::sm90;

llvm::StringRef attnfuse::sm90::elemName(ElemKind kind) {
  return kind == ElemKind::bf16 ? "bf16" : "f16";
}

DeviceBuilder::DeviceBuilder(OpBuilder &b, Location loc, ElemKind elem)
    : b(b), loc(loc), elem(elem) {
  MLIRContext *ctx = b.getContext();
  i1 = b.getI1Type();
  i16 = b.getI16Type();
  i32 = b.getI32Type();
  i64 = b.getI64Type();
  f32 = b.getF32Type();
  elemType =
      elem == ElemKind::bf16 ? Type(b.getBF16Type()) : Type(b.getF16Type());
  ptr = LLVM::LLVMPointerType::get(ctx);
  gptr = LLVM::LLVMPointerType::get(ctx, 1);
  sptr = LLVM::LLVMPointerType::get(ctx, 3);
  cptr = LLVM::LLVMPointerType::get(ctx, 7);
}

//===----------------------------------------------------------------------===//
// Constants and arithmetic
//===----------------------------------------------------------------------===//

Value DeviceBuilder::c32(int64_t v) {
  return arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v));
}
Value DeviceBuilder::c64(int64_t v) {
  return arith::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
}
Value DeviceBuilder::cf(double v) {
  return arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(v));
}
Value DeviceBuilder::ctrue() {
  return arith::ConstantOp::create(b, loc, i1, b.getBoolAttr(true));
}

Value DeviceBuilder::add(Value a, Value c) {
  return arith::AddIOp::create(b, loc, a, c);
}
Value DeviceBuilder::sub(Value a, Value c) {
  return arith::SubIOp::create(b, loc, a, c);
}
Value DeviceBuilder::mul(Value a, Value c) {
  return arith::MulIOp::create(b, loc, a, c);
}
Value DeviceBuilder::divu(Value a, int64_t v) {
  if (v == 1)
    return a;
  return arith::DivUIOp::create(b, loc, a, c32(v));
}
Value DeviceBuilder::remu(Value a, int64_t v) {
  return arith::RemUIOp::create(b, loc, a, c32(v));
}
Value DeviceBuilder::divs(Value a, Value c) {
  return arith::DivSIOp::create(b, loc, a, c);
}
Value DeviceBuilder::ceilDivs(Value a, int64_t v) {
  return arith::CeilDivSIOp::create(b, loc, a, c32(v));
}
Value DeviceBuilder::andi(Value a, Value c) {
  return arith::AndIOp::create(b, loc, a, c);
}
Value DeviceBuilder::ori(Value a, Value c) {
  return arith::OrIOp::create(b, loc, a, c);
}
Value DeviceBuilder::xori(Value a, Value c) {
  return arith::XOrIOp::create(b, loc, a, c);
}
Value DeviceBuilder::shl(Value a, int64_t v) {
  return arith::ShLIOp::create(b, loc, a, c32(v));
}
Value DeviceBuilder::mins(Value a, Value c) {
  return arith::MinSIOp::create(b, loc, a, c);
}
Value DeviceBuilder::maxs(Value a, Value c) {
  return arith::MaxSIOp::create(b, loc, a, c);
}
Value DeviceBuilder::cmp(arith::CmpIPredicate p, Value a, Value c) {
  return arith::CmpIOp::create(b, loc, p, a, c);
}
Value DeviceBuilder::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}
Value DeviceBuilder::andb(Value a, Value c) {
  return arith::AndIOp::create(b, loc, a, c);
}
Value DeviceBuilder::orb(Value a, Value c) {
  return arith::OrIOp::create(b, loc, a, c);
}

Value DeviceBuilder::addf(Value a, Value c) {
  return arith::AddFOp::create(b, loc, a, c);
}
Value DeviceBuilder::subf(Value a, Value c) {
  return arith::SubFOp::create(b, loc, a, c);
}
Value DeviceBuilder::mulf(Value a, Value c) {
  return arith::MulFOp::create(b, loc, a, c);
}
Value DeviceBuilder::fma(Value a, Value c, Value d) {
  return LLVM::FMAOp::create(b, loc, a, c, d);
}
Value DeviceBuilder::maxf(Value a, Value c) {
  // max.f32: the non-NaN operand wins, max(-inf, x) = x.
  // llvm.intr.maxnum -> max.f32 (arith.maxnumf may become a libdevice call
  // in convert-gpu-to-nvvm).
  return LLVM::MaxNumOp::create(b, loc, a, c);
}
Value DeviceBuilder::exp2(Value a) {
  // The softmax exponent: ex2.approx.ftz.f32 (ex2(-inf) = +0), as the
  // FlashAttention kernels use. llvm.exp2 would become a libdevice call.
  return callNVVMIntrinsic("llvm.nvvm.ex2.approx.ftz.f", f32, a);
}
Value DeviceBuilder::divf(Value a, Value c) {
  return arith::DivFOp::create(b, loc, a, c);
}
Value DeviceBuilder::cmpf(arith::CmpFPredicate p, Value a, Value c) {
  return arith::CmpFOp::create(b, loc, p, a, c);
}

//===----------------------------------------------------------------------===//
// Special registers, shared memory
//===----------------------------------------------------------------------===//

Value DeviceBuilder::tid() { return NVVM::ThreadIdXOp::create(b, loc, i32); }
Value DeviceBuilder::ctaid(int dim) {
  if (dim == 0)
    return NVVM::BlockIdXOp::create(b, loc, i32);
  if (dim == 1)
    return NVVM::BlockIdYOp::create(b, loc, i32);
  return NVVM::BlockIdZOp::create(b, loc, i32);
}
Value DeviceBuilder::nctaid(int dim) {
  if (dim == 0)
    return NVVM::GridDimXOp::create(b, loc, i32);
  if (dim == 1)
    return NVVM::GridDimYOp::create(b, loc, i32);
  return NVVM::GridDimZOp::create(b, loc, i32);
}
Value DeviceBuilder::laneId() { return NVVM::LaneIdOp::create(b, loc, i32); }

Value DeviceBuilder::sAt(Value base, Value offset) {
  return LLVM::GEPOp::create(b, loc, sptr, b.getI8Type(), base,
                             ArrayRef<LLVM::GEPArg>{offset});
}
Value DeviceBuilder::sAt(Value base, int64_t offset) {
  if (offset == 0)
    return base;
  return LLVM::GEPOp::create(
      b, loc, sptr, b.getI8Type(), base,
      ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
}
Value DeviceBuilder::sAddr(Value sharedPtr) {
  return LLVM::PtrToIntOp::create(b, loc, i32, sharedPtr);
}
Value DeviceBuilder::alignedDynamicShared(StringRef name) {
  Value base = LLVM::AddressOfOp::create(b, loc, sptr, name);
  // The symbol is declared .align 1024; round up anyway (the kernel reserves
  // 1 KiB of slack) so the 128B-swizzle atoms sit on 1024-byte boundaries
  // whatever the driver places before the dynamic window.
  Value address = sAddr(base);
  Value aligned = andi(add(address, 1023), c32(~int64_t(1023)));
  return sAt(base, sub(aligned, address));
}

//===----------------------------------------------------------------------===//
// Synchronization
//===----------------------------------------------------------------------===//

void DeviceBuilder::barrierAll() { NVVM::Barrier0Op::create(b, loc); }
void DeviceBuilder::namedBarrier(int id, int threads) {
  NVVM::BarrierOp::create(b, loc, Type(), c32(id), c32(threads),
                          NVVM::BarrierReductionAttr(), Value());
}
void DeviceBuilder::fenceProxyAsync() {
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}
void DeviceBuilder::fenceMbarrierInit() {
  NVVM::FenceMbarrierInitOp::create(b, loc);
}
Value DeviceBuilder::electSync() {
  return NVVM::ElectSyncOp::create(b, loc, i1, Value());
}
void DeviceBuilder::setMaxRegisters(bool increase, int count) {
  NVVM::SetMaxRegisterOp::create(b, loc, count,
                                 increase
                                     ? NVVM::SetMaxRegisterAction::increase
                                     : NVVM::SetMaxRegisterAction::decrease);
}
void DeviceBuilder::mbarInit(Value bar, int count) {
  NVVM::MBarrierInitOp::create(b, loc, bar, c32(count), Value());
}
void DeviceBuilder::mbarArriveExpectTx(Value bar, int64_t bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, loc, Type(), bar, c32(bytes), NVVM::MemScopeKind::CTA, false, Value());
}
void DeviceBuilder::mbarArrive(Value bar) {
  NVVM::MBarrierArriveOp::create(b, loc, Type(), bar, Value());
}
void DeviceBuilder::mbarWait(Value bar, Value parity) {
  // Suspend-time hint as CUTLASS uses (0x989680 ns).
  NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parity, c32(0x989680));
}

//===----------------------------------------------------------------------===//
// TMA
//===----------------------------------------------------------------------===//

void DeviceBuilder::tmaLoad(Value dst, Value desc, ValueRange coords,
                            Value bar) {
  // The shared::cluster form (PTX 8.0); a lone CTA is its own cluster. The
  // shared::cta destination form needs PTX 8.6.
  Value clusterDst = LLVM::AddrSpaceCastOp::create(b, loc, cptr, dst);
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, clusterDst, desc, coords, bar, ValueRange(), Value(), Value(),
      NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr(), Value());
}
void DeviceBuilder::tmaStore(Value desc, Value src, ValueRange coords) {
  NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
      b, loc, desc, src, coords, Value(), NVVM::TMAStoreMode::TILE, Value());
}
void DeviceBuilder::bulkCommit() {
  NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
}
void DeviceBuilder::bulkWaitRead0() {
  NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
}
void DeviceBuilder::bulkLoad(Value dst, Value src, Value bytes, Value bar) {
  // The shared::cluster destination form (PTX 8.0), as for tmaLoad.
  Value clusterDst = LLVM::AddrSpaceCastOp::create(b, loc, cptr, dst);
  Value globalSrc = src.getType() == gptr
                        ? src
                        : LLVM::AddrSpaceCastOp::create(b, loc, gptr, src);
  NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(
      b, loc, clusterDst, globalSrc, bar, bytes, /*multicastMask=*/Value(),
      /*l2CacheHint=*/Value());
}

//===----------------------------------------------------------------------===//
// wgmma
//===----------------------------------------------------------------------===//

Type DeviceBuilder::accType(int n) {
  return LLVM::LLVMStructType::getLiteral(b.getContext(),
                                          SmallVector<Type>(n / 2, f32));
}
Value DeviceBuilder::zeroAcc(int n) {
  Value acc = LLVM::PoisonOp::create(b, loc, accType(n));
  Value zero = cf(0.0);
  for (int i = 0; i < n / 2; ++i)
    acc = LLVM::InsertValueOp::create(b, loc, acc, zero, i);
  return acc;
}
Value DeviceBuilder::poisonAcc(int n) {
  return LLVM::PoisonOp::create(b, loc, accType(n));
}

Value DeviceBuilder::wgmmaDesc(Value addr, int64_t lbo, int64_t sbo) {
  // Bits 0-13: address >> 4; 16-29: LBO >> 4; 32-45: SBO >> 4;
  // 62-63: 1 = 128-byte swizzle. Base offset 0 (atoms 1024-byte aligned).
  uint64_t high = (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
                  (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t(1) << 62);
  Value field = andi(arith::ShRUIOp::create(b, loc, addr, c32(4)), 0x3FFF);
  Value wide = arith::ExtUIOp::create(b, loc, i64, field);
  return arith::OrIOp::create(
      b, loc, wide,
      arith::ConstantOp::create(
          b, loc, i64, b.getI64IntegerAttr(static_cast<int64_t>(high))));
}
Value DeviceBuilder::descAdd(Value desc, int64_t bytes) {
  if (bytes == 0)
    return desc;
  return arith::AddIOp::create(b, loc, desc, c64(bytes >> 4));
}
void DeviceBuilder::wgmmaFence() { NVVM::WgmmaFenceAlignedOp::create(b, loc); }
void DeviceBuilder::wgmmaCommit() {
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
}
void DeviceBuilder::wgmmaWait(int pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
}

Value DeviceBuilder::wgmmaSS(Value acc, Value descA, Value descB, int n,
                             bool accumulate, bool transB, bool transA) {
  MLIRContext *ctx = b.getContext();
  auto type =
      elem == ElemKind::bf16 ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  return NVVM::WgmmaMmaAsyncOp::create(
      b, loc, acc.getType(), acc, descA, descB,
      NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
      NVVM::WGMMATypesAttr::get(ctx, type),
      NVVM::WGMMATypesAttr::get(ctx, type),
      NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
      NVVM::WGMMAScaleOutAttr::get(ctx, accumulate ? NVVM::WGMMAScaleOut::one
                                                   : NVVM::WGMMAScaleOut::zero),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      // A row = K-major (imm-trans-a 0), col = MN-major (imm-trans-a 1);
      // B col = K-major (imm-trans-b 0), row = MN-major (imm-trans-b 1).
      NVVM::MMALayoutAttr::get(ctx, transA ? NVVM::MMALayout::col
                                           : NVVM::MMALayout::row),
      NVVM::MMALayoutAttr::get(ctx, transB ? NVVM::MMALayout::row
                                           : NVVM::MMALayout::col),
      NVVM::MMAIntOverflowAttr());
}

Value DeviceBuilder::wgmmaRS(Value acc, ArrayRef<Value> a, Value descB, int n,
                             bool transB) {
  // wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T d, {a0..a3}, b-desc,
  //     scale-d, imm-scale-a, imm-scale-b, imm-trans-b;
  // MLIR 22's nvvm.wgmma.mma_async takes shared-memory descriptors only, so
  // the register-A form is inline PTX. Outputs $0..$(n/2-1) are tied to the
  // accumulator inputs.
  int regs = n / 2;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << elemName(elem)
     << "." << elemName(elem) << " {";
  for (int i = 0; i < regs; ++i)
    os << (i ? ", " : "") << "$" << i;
  os << "}, {$" << regs << ", $" << regs + 1 << ", $" << regs + 2 << ", $"
     << regs + 3 << "}, $" << regs + 4 << ", p, 1, 1, " << (transB ? 1 : 0)
     << ";\n}";
  std::string constraints;
  for (int i = 0; i < regs; ++i)
    constraints += "=f,";
  constraints += "r,r,r,r,l";
  for (int i = 0; i < regs; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands(a.begin(), a.end());
  operands.push_back(descB);
  llvm::append_range(operands, unpack(acc, n));
  return inlineAsm(acc.getType(), operands, text, constraints);
}

SmallVector<Value> DeviceBuilder::unpack(Value acc, int n) {
  SmallVector<Value> values;
  for (int i = 0; i < n / 2; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  return values;
}
Value DeviceBuilder::pack(Value acc, ArrayRef<Value> values) {
  Value result = LLVM::PoisonOp::create(b, loc, acc.getType());
  for (auto [i, v] : llvm::enumerate(values))
    result =
        LLVM::InsertValueOp::create(b, loc, result, v, static_cast<int64_t>(i));
  return result;
}
Value DeviceBuilder::packHalf2(Value lo, Value hi) {
  // cvt.rn.{bf16x2,f16x2}.f32 d, a, b puts a (src_hi) in the upper half;
  // element 0 of the vector is the lower half of the bitcast b32.
  auto rn = NVVM::FPRoundingMode::RN;
  auto noSat = NVVM::SaturationMode::NONE;
  Value pair;
  if (elem == ElemKind::bf16)
    pair = NVVM::ConvertF32x2ToBF16x2Op::create(
        b, loc, VectorType::get({2}, b.getBF16Type()), hi, lo,
        /*random_bits=*/Value(), rn, noSat, /*relu=*/false);
  else
    pair = NVVM::ConvertF32x2ToF16x2Op::create(
        b, loc, VectorType::get({2}, b.getF16Type()), hi, lo,
        /*random_bits=*/Value(), rn, noSat, /*relu=*/false);
  return LLVM::BitcastOp::create(b, loc, i32, pair);
}
Value DeviceBuilder::sqrtRn(Value a) {
  // MLIR 22 has no NVVM op for sqrt.rn.f32, and convert-gpu-to-nvvm turns
  // llvm.intr.sqrt into a libdevice call, so this stays PTX text. (The
  // llvm.nvvm.sqrt.rn.f intrinsic gives the same instruction, but ptxas then
  // spills 336 bytes in the 255-register d128 CCA prologue.)
  return inlineAsm(f32, a, "sqrt.rn.f32 $0, $1;", "=f,f",
                   /*sideEffects=*/false);
}
Value DeviceBuilder::log2Approx(Value a) {
  return callNVVMIntrinsic("llvm.nvvm.lg2.approx.f", f32, a);
}
Value DeviceBuilder::callNVVMIntrinsic(StringRef name, Type result,
                                       ValueRange operands) {
  return LLVM::CallIntrinsicOp::create(b, loc, result, b.getStringAttr(name),
                                       operands)
      .getResult(0);
}
void DeviceBuilder::warpSync() { NVVM::SyncWarpOp::create(b, loc, c32(-1)); }
Value DeviceBuilder::warpUniform(Value v) {
  return NVVM::ShflOp::create(b, loc, i32, c32(-1), v, c32(0), c32(31),
                              NVVM::ShflKind::idx, UnitAttr());
}
Value DeviceBuilder::shflBfly(Value v, int offset) {
  return NVVM::ShflOp::create(b, loc, f32, c32(-1), v, c32(offset), c32(31),
                              NVVM::ShflKind::bfly, UnitAttr());
}

Value DeviceBuilder::warpSum(Value v) {
  for (int offset = 16; offset >= 1; offset /= 2)
    v = addf(v, shflBfly(v, offset));
  return v;
}

Value DeviceBuilder::warpMax(Value v) {
  for (int offset = 16; offset >= 1; offset /= 2)
    v = maxf(v, shflBfly(v, offset));
  return v;
}

//===----------------------------------------------------------------------===//
// Memory, control flow, inline asm
//===----------------------------------------------------------------------===//

Value DeviceBuilder::gAt(Value base, Value elementOffset, Type elementType) {
  return LLVM::GEPOp::create(b, loc, base.getType(), elementType, base,
                             ArrayRef<LLVM::GEPArg>{elementOffset});
}
Value DeviceBuilder::load(Type t, Value p, int align) {
  return LLVM::LoadOp::create(b, loc, t, p, align);
}
Value DeviceBuilder::loadF32(Value base, Value index) {
  return arith::ExtFOp::create(b, loc, f32,
                               load(elemType, gAt(base, index, elemType), 2));
}
Value DeviceBuilder::nonZeroAt(Value base, Value index, int64_t bits) {
  Type type = bits == 64 ? i64 : i32;
  Value element = load(type, gAt(base, index, type), bits / 8);
  Value zero = arith::ConstantIntOp::create(b, loc, type, 0);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, element, zero);
}
void DeviceBuilder::store(Value v, Value p, int align) {
  LLVM::StoreOp::create(b, loc, v, p, align);
}

Value DeviceBuilder::ext64(Value a) {
  return arith::ExtSIOp::create(b, loc, i64, a);
}
Value DeviceBuilder::row64(Value batch, Value rows, Value row) {
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, ext64(batch), ext64(rows)),
      ext64(row));
}
Value DeviceBuilder::rowStart64(Value batch, Value rows, Value row,
                                int64_t width) {
  return arith::MulIOp::create(b, loc, row64(batch, rows, row), c64(width));
}
Value DeviceBuilder::loadIndex(Value base, Value index, int64_t bits) {
  Type type = bits == 64 ? i64 : i32;
  Value element = load(type, gAt(base, index, type), bits / 8);
  return bits == 64 ? element : ext64(element);
}
Type DeviceBuilder::vec(Type t, int64_t n) {
  return n == 1 ? t : Type(VectorType::get({n}, t));
}
Value DeviceBuilder::zerosOf(Type t) {
  return arith::ConstantOp::create(b, loc, t, b.getZeroAttr(t));
}

void DeviceBuilder::ifThen(Value cond, const std::function<void()> &then) {
  scf::IfOp::create(b, loc, cond, [&](OpBuilder &, Location) {
    then();
    scf::YieldOp::create(b, loc);
  });
}
void DeviceBuilder::ifThenElse(Value cond, const std::function<void()> &then,
                               const std::function<void()> &otherwise) {
  scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &, Location) {
        then();
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &, Location) {
        otherwise();
        scf::YieldOp::create(b, loc);
      });
}
SmallVector<Value> DeviceBuilder::ifThenElseValues(
    Value cond, TypeRange types,
    const std::function<SmallVector<Value>()> &then,
    const std::function<SmallVector<Value>()> &otherwise) {
  auto op = scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &, Location) { scf::YieldOp::create(b, loc, then()); },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, loc, otherwise());
      });
  (void)types;
  return SmallVector<Value>(op.getResults());
}
SmallVector<Value> DeviceBuilder::forLoop(
    Value lb, Value ub, Value step, ValueRange init,
    const std::function<SmallVector<Value>(Value, ValueRange)> &body) {
  auto loop =
      scf::ForOp::create(b, loc, lb, ub, step, init,
                         [&](OpBuilder &, Location, Value iv, ValueRange args) {
                           scf::YieldOp::create(b, loc, body(iv, args));
                         });
  return SmallVector<Value>(loop.getResults());
}

Value DeviceBuilder::inlineAsm(Type result, ValueRange operands, StringRef text,
                               StringRef constraints, bool sideEffects) {
  auto op = LLVM::InlineAsmOp::create(
      b, loc, result ? TypeRange(result) : TypeRange(), operands, text,
      constraints, sideEffects, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
  return result ? op.getResult(0) : Value();
}
