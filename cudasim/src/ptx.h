// The PTX subset the emulator executes: a parsed module (kernels, their
// parameters, shared variables and decoded instructions). Parsing resolves
// register names (including the scoped
// `.reg` declarations of inline-asm bodies) to indices and labels to
// instruction indices, and rejects any instruction it does not know with its
// line.
#ifndef ATTNFUSE_CUDASIM_PTX_H
#define ATTNFUSE_CUDASIM_PTX_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cudasim {

enum class Ty : uint8_t {
  None,
  B8,
  B16,
  B32,
  B64,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F16,
  F16x2,
  BF16,
  BF16x2,
  F32,
  F64,
  Pred,
  B128
};
unsigned tyBits(Ty t);
bool tyIsFloat(Ty t);
bool tyIsSigned(Ty t);
const char *tyName(Ty t);

enum class Space : uint8_t {
  Generic,
  Global,
  Shared,
  SharedCluster,
  Param,
  Local,
  Const
};

enum class Special : uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpId,
  NWarpId,
  SmId,
  NSmId,
  Clock,
  Clock64,
  GlobalTimer,
  DynSmem,
  TotalSmem,
  LanemaskLt,
  LanemaskLe,
  LanemaskEq,
  LanemaskGe,
  LanemaskGt,
  ClusterCtaRank,
  ClusterNCtaRank,
  ClusterCtaidX,
  ClusterCtaidY,
  ClusterCtaidZ,
  ClusterNctaidX,
  ClusterNctaidY,
  ClusterNctaidZ,
  ClusterIdX,
  ClusterIdY,
  ClusterIdZ,
  NClusterIdX,
  NClusterIdY,
  NClusterIdZ,
  IsExplicitCluster
};

struct Operand {
  enum Kind : uint8_t {
    Reg,
    Imm,
    Special,
    Vec,
    Addr,
    Label,
    Symbol,
    Sink,
    None
  } kind = None;
  bool negate = false; // !%p
  bool floatLiteral = false;
  bool doubleLiteral =
      false;    // 0d..., or a decimal literal with a '.', kept as a double
  int reg = -1; // Reg; Addr base register (or -1)
  uint64_t imm =
      0; // Imm bits; Addr offset; Label target; Symbol address-kind id
  double fimm = 0; // decimal float literal value
  cudasim::Special special{};
  int symbol = -1; // Addr/Symbol: index into Kernel::symbols
  std::vector<Operand>
      elems; // Vec elements; Addr with a vector: [tmap, {coords}]
};

enum class Op : uint16_t {
  // data movement and conversion
  Mov,
  Ld,
  St,
  Cvt,
  Cvta,
  Selp,
  Setp,
  Set,
  Prmt,
  Shfl,
  Vote,
  Elect,
  Atom,
  Red,
  // integer / bit
  Add,
  Sub,
  Mul,
  Mad,
  Div,
  Rem,
  Abs,
  Neg,
  Min,
  Max,
  And,
  Or,
  Xor,
  Not,
  Cnot,
  Shl,
  Shr,
  Popc,
  Clz,
  Brev,
  Bfe,
  Bfi,
  Lop3,
  Shf,
  Copysign,
  Testp,
  // float
  Fma,
  Rcp,
  Sqrt,
  Rsqrt,
  Ex2,
  Lg2,
  Sin,
  Cos,
  Tanh,
  // control
  Bra,
  Ret,
  Exit,
  BarSync,
  BarArrive,
  BarRed,
  BarWarpSync,
  Trap,
  // memory model (no-ops in a sequential emulator, except what the checks
  // track)
  Fence,
  Membar,
  FenceProxyAsync,
  FenceMbarrierInit,
  Prefetch,
  PrefetchTensormap,
  Nanosleep,
  // mbarrier
  MbarInit,
  MbarInval,
  MbarArrive,
  MbarArriveDrop,
  MbarExpectTx,
  MbarCompleteTx,
  MbarTestWait,
  MbarTryWait,
  MbarPendingCount,
  // bulk async copies
  CpBulkTensorLoad,
  CpBulkTensorStore,
  CpBulkLoad,
  CpBulkStore,
  CpBulkCommit,
  CpBulkWait,
  // warpgroup MMA
  WgmmaFence,
  WgmmaCommit,
  WgmmaWait,
  WgmmaMma,
  SetMaxNReg,
  // clusters (one CTA per cluster)
  Mapa,
  // warp-collective 8x8 matrix loads / stores of shared memory
  Ldmatrix,
  Stmatrix,
};

struct Inst {
  Op op{};
  Ty type = Ty::None,
     type2 = Ty::None; // cvt: type = destination, type2 = source
  Space space = Space::Generic;
  uint8_t vec = 1; // .v2/.v4
  uint8_t cmp = 0; // setp/set comparison (CmpOp)
  uint8_t boolOp =
      0; // setp/set .and/.or/.xor combine: 0 none, 1 and, 2 or, 3 xor
  uint8_t rounding =
      0; // 0 default/rn, 1 rz, 2 rm, 3 rp; +4 for integer rounding (rni...)
  bool ftz = false, sat = false, approx = false, wide = false, hi = false,
       lo = false;
  bool cc = false, parity = false, relaxedExpectTx = false, relu = false;
  uint8_t mode =
      0; // op-specific: shfl mode, vote mode, shf dir, atom op, dims...
  int guard = -1; // predicate register, or -1
  bool guardNeg = false;
  std::vector<Operand> ops;
  int line = 0;     // line in the PTX text
  std::string text; // the instruction as written (diagnostics)
  // wgmma
  unsigned m = 0, n = 0, k = 0;
  Ty atype = Ty::None, btype = Ty::None;
  bool rsForm = false;
  bool collective = false; // needs the warp (or warpgroup) to arrive together
  std::vector<int> srcRegs, dstRegs; // registers read / written (hazard checks)
};

enum CmpOp : uint8_t {
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Lo,
  Ls,
  Hi,
  Hs,
  Equ,
  Neu,
  Ltu,
  Leu,
  Gtu,
  Geu,
  Num,
  Nan
};

struct Symbol {
  std::string name;
  Space space;
  uint64_t size = 0; // bytes (0 for an extern dynamic array)
  unsigned align = 1;
  bool isExtern = false;
  uint64_t offset = 0; // shared: offset in the CTA's window; param: offset in
                       // the param buffer
};

struct Param {
  std::string name;
  unsigned size = 0, align = 1, offset = 0;
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  unsigned paramBytes = 0;
  std::vector<Symbol>
      symbols; // shared variables and params addressable by name
  std::vector<Inst> code;
  std::vector<std::string> regNames;
  int numRegs = 0;
  unsigned staticSmem = 0; // bytes of static .shared variables
  unsigned maxntid[3] = {0, 0, 0};
  unsigned maxnreg = 0, minnctapersm = 0;
};

struct Module {
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<Symbol> moduleShared; // module-level .shared declarations
  int version = 0;
  std::string target;
};

// Parses PTX text. Returns false with `error` ("line N: message") on failure.
bool parseModule(const std::string &text, Module &out, std::string &error);

} // namespace cudasim

#endif
