// Emulator unit tests: golden data layouts (each from the source cited at the
// check) and small hand-written PTX kernels run through the driver API,
// including every diagnostic the emulator gives for a kernel bug. Exit status 0
// only if every check passes.
#include "layouts.h"
#include "ptx.h"
#include "sim.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
int cuInit(unsigned);
int cuModuleLoadData(void **, const void *);
int cuModuleUnload(void *);
int cuModuleGetFunction(void **, void *, const char *);
int cuFuncSetAttribute(void *, int, int);
int cuMemAlloc_v2(unsigned long long *, size_t);
int cuMemcpyHtoD_v2(unsigned long long, const void *, size_t);
int cuMemcpyDtoH_v2(void *, unsigned long long, size_t);
int cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, void *, void **, void **);
int cuTensorMapEncodeTiled(void *, int, unsigned, void *,
                           const unsigned long long *,
                           const unsigned long long *, const unsigned *,
                           const unsigned *, int, int, int, int);
int cuDeviceGetAttribute(int *, int, int);
const char *cudasimLastError(void);
}

using namespace cudasim;

static int failures = 0, checks = 0;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);              \
      std::printf(__VA_ARGS__);                                                \
      std::printf("\n");                                                       \
    }                                                                          \
  } while (0)

static bool contains(const std::string &s, const char *sub) {
  return s.find(sub) != std::string::npos;
}

// ---------------------------------------------------------------- layouts

// PTX ISA, "Tensor Swizzling Modes" (the 128B/64B/32B swizzle figures; CuTe
// Swizzle<3,4,3>, <2,4,3>, <1,4,3> in cute/swizzle.hpp): the 16-byte chunk j of
// row r of the pattern lands in chunk table[r][j] of that row.
static void testSwizzle() {
  static const unsigned t128[8][8] = {
      {0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6},
      {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4},
      {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2},
      {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};
  // 64B: rows of 64 bytes, the pattern repeats every 512 bytes (pairs of rows
  // share a phase).
  static const unsigned t64[8][4] = {{0, 1, 2, 3}, {0, 1, 2, 3}, {1, 0, 3, 2},
                                     {1, 0, 3, 2}, {2, 3, 0, 1}, {2, 3, 0, 1},
                                     {3, 2, 1, 0}, {3, 2, 1, 0}};
  // 32B: rows of 32 bytes, the pattern repeats every 256 bytes.
  static const unsigned t32[8][2] = {{0, 1}, {0, 1}, {0, 1}, {0, 1},
                                     {1, 0}, {1, 0}, {1, 0}, {1, 0}};
  for (uint32_t base : {0x400u, 0x2000u})
    for (unsigned r = 0; r < 8; ++r)
      for (unsigned b = 0; b < 16; b += 5) {
        for (unsigned j = 0; j < 8; ++j)
          CHECK(swizzleAddress(base + r * 128 + j * 16 + b, Swizzle::B128) ==
                    base + r * 128 + t128[r][j] * 16 + b,
                "128B row %u chunk %u", r, j);
        for (unsigned j = 0; j < 4; ++j)
          CHECK(swizzleAddress(base + r * 64 + j * 16 + b, Swizzle::B64) ==
                    base + r * 64 + t64[r][j] * 16 + b,
                "64B row %u chunk %u", r, j);
        for (unsigned j = 0; j < 2; ++j)
          CHECK(swizzleAddress(base + r * 32 + j * 16 + b, Swizzle::B32) ==
                    base + r * 32 + t32[r][j] * 16 + b,
                "32B row %u chunk %u", r, j);
      }
  CHECK(swizzleAddress(0x1234, Swizzle::None) == 0x1234, "none");
}

// CUTLASS cute/arch/mma_sm90_desc.hpp, union GmmaDescriptor: start_address_
// bits 0-13, leading_byte_offset_ 16-29, stride_byte_offset_ 32-45,
// base_offset_ 49-51, layout_type_ 62-63 (SWIZZLE_NONE 0, SWIZZLE_128B 1,
// SWIZZLE_64B 2, SWIZZLE_32B 3); addresses and offsets in 16-byte units.
static void testDescriptor() {
  uint64_t d = 0x40ull | (1ull << 16) | (64ull << 32) |
               (1ull << 62); // 0x400, LBO 16, SBO 1024
  MatrixDescriptor m = decodeDescriptor(d);
  CHECK(m.startAddress == 0x40 && m.leadingOffset == 1 && m.strideOffset == 64,
        "fields");
  CHECK(m.swizzle == Swizzle::B128 && m.baseOffset == 0 && m.reservedBits == 0,
        "swizzle");
  CHECK(encodeDescriptor(m) == d, "round trip");
  CHECK(decodeDescriptor(2ull << 62).swizzle == Swizzle::B64, "64B");
  CHECK(decodeDescriptor(3ull << 62).swizzle == Swizzle::B32, "32B");
  CHECK(decodeDescriptor(5ull << 49).baseOffset == 5, "base offset");
  CHECK(decodeDescriptor(1ull << 14).reservedBits == (1ull << 14),
        "reserved bits");
}

// The canonical layouts of the PTX ISA ("Shared Memory Matrix Layout",
// canonical layouts in CuTe notation), bf16 (T = 8 elements per 16 bytes);
// expected addresses worked out by hand.
static void testCanonicalLayouts() {
  MatrixDescriptor k128 =
      decodeDescriptor(0x40ull | (1ull << 16) | (64ull << 32) | (1ull << 62));
  // K-major 128B: ((8,m),(T,2k)):((8T,SBO),(1,T)): row r at 128 B, 8-row groups
  // at SBO.
  CHECK(operandAddress(k128, true, 2, 0, 0) == 0x400, "(0,0)");
  CHECK(operandAddress(k128, true, 2, 1, 0) == 0x490,
        "(1,0): row 0x480, chunk 0 -> 1");
  CHECK(operandAddress(k128, true, 2, 9, 8) == 0x880,
        "(9,8): 0x890 with chunk 1 -> 0");
  CHECK(operandAddress(k128, true, 2, 3, 5) == 0x400 + 3 * 128 + 3 * 16 + 10,
        "(3,5)");
  // K-step inside the atom: start address + 32 bytes (k = 16..31 of a 64-wide
  // row).
  MatrixDescriptor k128b = k128;
  k128b.startAddress += 2;
  CHECK(operandAddress(k128b, true, 2, 1, 0) == 0x400 + 128 + ((2 ^ 1) * 16),
        "k step");
  // MN-major 128B: ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)): 64 contiguous MN
  // elements per 128 B row, the next 64 at LBO; K rows 128 B apart, 8-K groups
  // at SBO.
  MatrixDescriptor mn = decodeDescriptor(0x40ull | (1024ull << 16) |
                                         (64ull << 32) | (1ull << 62));
  CHECK(operandAddress(mn, false, 2, 0, 0) == 0x400, "mn (0,0)");
  CHECK(operandAddress(mn, false, 2, 5, 1) == 0x400 + 128 + (0 ^ 1) * 16 + 10,
        "mn (5,1)");
  CHECK(operandAddress(mn, false, 2, 64, 0) == 0x400 + 16384,
        "mn (64,0): next block at LBO");
  CHECK(operandAddress(mn, false, 2, 8, 8) == 0x400 + 1024 + 16,
        "mn (8,8): SBO, chunk 1 row 0");
  // K-major, no swizzle: ((8,m),(T,2k)):((1T,SBO),(1,LBO)): core matrices of 8
  // x 16 B.
  MatrixDescriptor kn =
      decodeDescriptor(0x40ull | (8ull << 16) | (16ull << 32));
  CHECK(operandAddress(kn, true, 2, 3, 2) == 0x400 + 3 * 16 + 4, "kn (3,2)");
  CHECK(operandAddress(kn, true, 2, 3, 9) == 0x400 + 3 * 16 + 128 + 2,
        "kn (3,9): LBO");
  CHECK(operandAddress(kn, true, 2, 11, 0) == 0x400 + 256 + 3 * 16,
        "kn (11,0): SBO");
  // MN-major, no swizzle: ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)).
  MatrixDescriptor mnn =
      decodeDescriptor(0x40ull | (8ull << 16) | (16ull << 32));
  CHECK(operandAddress(mnn, false, 2, 3, 2) == 0x400 + 2 * 16 + 6, "mnn (3,2)");
  CHECK(operandAddress(mnn, false, 2, 9, 0) == 0x400 + 256 + 2,
        "mnn (9,0): SBO");
  CHECK(operandAddress(mnn, false, 2, 0, 8) == 0x400 + 128, "mnn (0,8): LBO");
  // K-major 64B and 32B: rows of 64 / 32 bytes.
  MatrixDescriptor k64 =
      decodeDescriptor(0x40ull | (32ull << 32) | (2ull << 62));
  CHECK(operandAddress(k64, true, 2, 2, 0) == 0x400 + 128 + 16,
        "k64 (2,0): chunk 0 -> 1");
  MatrixDescriptor k32 =
      decodeDescriptor(0x40ull | (16ull << 32) | (3ull << 62));
  CHECK(operandAddress(k32, true, 2, 4, 8) == 0x400 + 128,
        "k32 (4,8): chunk 1 -> 0");
}

// PTX ISA, "Register Fragments" for wgmma .m64nNk16: the D figure (f32
// accumulator) and the A figure (16-bit A in registers); spot values read off
// the figures.
static void testFragments() {
  struct {
    unsigned w, lane, i, row, col;
  } d[] = {{0, 0, 0, 0, 0},      {0, 0, 1, 0, 1},
           {0, 0, 2, 8, 0},      {0, 0, 3, 8, 1},
           {0, 0, 4, 0, 8},      {0, 0, 5, 0, 9},
           {0, 1, 0, 0, 2},      {0, 4, 0, 1, 0},
           {0, 31, 7, 15, 15},   {1, 0, 0, 16, 0},
           {3, 31, 63, 63, 127}, {2, 5, 10, 16 * 2 + 1 + 8, 2 + 0 + 16}};
  for (auto &e : d) {
    RowCol rc = accumulatorPosition(e.w, e.lane, e.i);
    CHECK(rc.row == e.row && rc.col == e.col,
          "D w%u lane %u value %u -> (%u,%u), want (%u,%u)", e.w, e.lane, e.i,
          rc.row, rc.col, e.row, e.col);
  }
  struct {
    unsigned w, lane, i, row, k;
  } a[] = {{0, 0, 0, 0, 0}, {0, 0, 1, 0, 1}, {0, 0, 2, 8, 0},   {0, 0, 4, 0, 8},
           {0, 0, 7, 8, 9}, {0, 6, 0, 1, 4}, {3, 31, 7, 63, 15}};
  for (auto &e : a) {
    RowCol rc = aFragmentPosition(e.w, e.lane, e.i);
    CHECK(rc.row == e.row && rc.col == e.k, "A w%u lane %u element %u", e.w,
          e.lane, e.i);
  }
}

// IEEE 754 binary16 and bfloat16 rounding (PTX ISA cvt: .rn ties to even, .rz,
// .rm, .rp).
static void testConversions() {
  CHECK(floatToBf16(1.0f, Rounding::Nearest) == 0x3F80, "1.0");
  CHECK(floatToBf16(1.00390625f, Rounding::Nearest) == 0x3F80,
        "tie to even (down)");
  CHECK(floatToBf16(1.01171875f, Rounding::Nearest) == 0x3F82,
        "tie to even (up)");
  CHECK(floatToBf16(1.01171875f, Rounding::Zero) == 0x3F81, "rz");
  CHECK(floatToBf16(-1.01171875f, Rounding::Down) == 0xBF82, "rm");
  CHECK(floatToBf16(1.00390625f, Rounding::Up) == 0x3F81, "rp");
  CHECK(floatToBf16(NAN, Rounding::Nearest) == 0x7FFF, "canonical NaN");
  CHECK(floatToBf16(3.4e38f, Rounding::Nearest) == 0x7F80, "overflow to inf");
  CHECK(floatToBf16(3.4e38f, Rounding::Zero) == 0x7F7F, "rz overflow to max");
  CHECK(floatToHalf(1.0f, Rounding::Nearest) == 0x3C00, "half 1.0");
  CHECK(floatToHalf(65520.0f, Rounding::Nearest) == 0x7C00, "half overflow");
  CHECK(floatToHalf(65519.0f, Rounding::Nearest) == 0x7BFF, "half max");
  CHECK(floatToHalf(5.9604645e-8f, Rounding::Nearest) == 0x0001,
        "half min subnormal");
  CHECK(halfToFloat(0x0001) == 5.9604645e-8f && halfToFloat(0xC000) == -2.0f,
        "half decode");
  CHECK(bf16ToFloat(0x3F80) == 1.0f, "bf16 decode");
}

// ---------------------------------------------------------------- PTX through
// the driver

struct Run {
  int code;
  std::string message;
};

static Run launch(const std::string &ptx, const char *name,
                  std::vector<void *> args, unsigned threads, unsigned smem) {
  void *mod = nullptr, *fn = nullptr;
  int r = cuModuleLoadData(&mod, ptx.c_str());
  if (r)
    return {r, cudasimLastError()};
  cuModuleGetFunction(&fn, mod, name);
  cuFuncSetAttribute(fn, 8, int(smem));
  r = cuLaunchKernel(fn, 1, 1, 1, threads, 1, 1, smem, nullptr, args.data(),
                     nullptr);
  Run out{r, r ? cudasimLastError() : ""};
  cuModuleUnload(mod);
  return out;
}

// A TMA tile load: thread 0 initialises the mbarrier (with the fence), arms it
// with the box's bytes and issues cp.async.bulk.tensor.2d; everyone waits on
// phase parity `parity` and copies the tile's bytes out. Parameters let the
// tests below break the protocol.
static const char *kTmaKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry tma_load(.param .align 64 .b8 tmap[128], .param .u64 out, .param .s32 c0,
                         .param .s32 c1, .param .u32 bytes, .param .u32 parity,
                         .param .u32 fence, .param .u32 expect, .param .u32 nowait,
                         .param .u32 prewrite)
{
  .reg .pred %p<8>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  add.u32 %r4, %r2, 16384;
  ld.param.u32 %r5, [bytes];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $SYNC;
  mbarrier.init.shared::cta.b64 [%r4], 1;
  ld.param.u32 %r13, [fence];
  setp.eq.u32 %p4, %r13, 0;
  @%p4 bra $SYNC;
  fence.mbarrier_init.release.cluster;
$SYNC:
  bar.sync 0;
  @%p1 bra $WAIT;
  ld.param.u32 %r11, [prewrite];
  setp.eq.u32 %p6, %r11, 0;
  @%p6 bra $ISSUE;
  st.shared.u32 [%r2], %r1;
$ISSUE:
  ld.param.u32 %r14, [expect];
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], %r14;
  mov.b64 %rd5, tmap;
  cvta.param.u64 %rd1, %rd5;
  ld.param.s32 %r6, [c0];
  ld.param.s32 %r7, [c1];
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r6, %r7}], [%r4];
$WAIT:
  ld.param.u32 %r15, [nowait];
  setp.ne.u32 %p5, %r15, 0;
  @%p5 bra $END;
  ld.param.u32 %r12, [parity];
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], %r12;
  @!%p2 bra $WAIT;
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  shl.b32 %r8, %r1, 2;
$COPY:
  setp.ge.u32 %p3, %r8, %r5;
  @%p3 bra $END;
  add.u32 %r9, %r2, %r8;
  ld.shared.u32 %r10, [%r9];
  cvt.u64.u32 %rd3, %r8;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r10;
  add.u32 %r8, %r8, 512;
  bra $COPY;
$END:
  ret;
}
)";

struct TmaCase {
  int c0, c1;
  unsigned parity = 0, fence = 1, expectDelta = 0, nowait = 0, prewrite = 0;
};

static Run runTma(const TmaCase &tc, std::vector<uint16_t> &tile,
                  const std::vector<uint16_t> &g, unsigned rows,
                  unsigned cols) {
  const unsigned boxCols = 64, boxRows = 16, bytes = boxCols * boxRows * 2;
  unsigned long long dg = 0, dout = 0;
  cuMemAlloc_v2(&dg, g.size() * 2);
  cuMemcpyHtoD_v2(dg, g.data(), g.size() * 2);
  cuMemAlloc_v2(&dout, bytes);
  alignas(64) unsigned char map[128];
  unsigned long long dims[2] = {cols, rows}, strides[1] = {cols * 2ull};
  unsigned box[2] = {boxCols, boxRows}, es[2] = {1, 1};
  int r = cuTensorMapEncodeTiled(map, 9 /* BFLOAT16 */, 2,
                                 reinterpret_cast<void *>(dg), dims, strides,
                                 box, es, 0, 3 /* SWIZZLE_128B */, 0, 0);
  CHECK(r == 0, "encode: %s", cudasimLastError());
  unsigned expect = bytes - tc.expectDelta;
  int c0 = tc.c0, c1 = tc.c1;
  unsigned parity = tc.parity, fence = tc.fence, nowait = tc.nowait,
           prewrite = tc.prewrite;
  Run out = launch(kTmaKernel, "tma_load",
                   {map, &dout, &c0, &c1, (void *)&bytes, &parity, &fence,
                    &expect, &nowait, &prewrite},
                   128, 16384 + 64);
  tile.assign(bytes / 2, 0);
  cuMemcpyDtoH_v2(tile.data(), dout, bytes);
  return out;
}

static void testTma() {
  const unsigned rows = 40, cols = 104;
  std::vector<uint16_t> g(rows * cols);
  for (unsigned i = 0; i < g.size(); ++i)
    g[i] = uint16_t(i + 1); // never 0, so a zero is an OOB fill
  static const unsigned t128[8][8] = {
      {0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6},
      {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4},
      {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2},
      {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};
  // Box of 16 rows x 64 columns at (column -8, row 30): columns -8..-1 and
  // rows 40..45 are out of bounds (zero fill); signed coordinates.
  std::vector<uint16_t> tile;
  Run r = runTma({-8, 30}, tile, g, rows, cols);
  CHECK(r.code == 0, "TMA kernel: %s", r.message.c_str());
  if (r.code == 0) {
    int bad = 0;
    for (unsigned row = 0; row < 16; ++row)
      for (unsigned c = 0; c < 64; ++c) {
        int gr = 30 + int(row), gc = -8 + int(c);
        uint16_t want = (gr < int(rows) && gc >= 0 && gc < int(cols))
                            ? g[gr * cols + gc]
                            : 0;
        // The tile buffer sits at a 1024-aligned address, so row r's swizzle
        // phase is r % 8.
        unsigned chunk = t128[row % 8][c / 8];
        bad += tile[row * 64 + chunk * 8 + c % 8] != want;
      }
    CHECK(bad == 0, "%d elements of the swizzled TMA tile differ", bad);
  }
  // Mutations of the protocol, each caught with its diagnostic.
  // The wrong parity passes the wait at once: the tile is read while the copy
  // is in flight (or, when the schedule runs the readers first, before it is
  // even issued).
  r = runTma({0, 0, /*parity*/ 1}, tile, g, rows, cols);
  CHECK(r.code == 719 && (contains(r.message, "has not completed phase") ||
                          contains(r.message, "never-written")),
        "wrong parity: %d %s", r.code, r.message.c_str());
  // Nobody waits: the CTA ends with the copy still writing its shared memory.
  r = runTma({0, 0, 0, 1, 0, /*nowait*/ 1}, tile, g, rows, cols);
  CHECK(r.code == 719 &&
            contains(r.message, "every thread has exited while the async copy"),
        "exit with a copy in flight: %s", r.message.c_str());
  // The destination was last written by a generic store, with no proxy fence
  // between that write and the copy's.
  r = runTma({0, 0, 0, 1, 0, 0, /*prewrite*/ 1}, tile, g, rows, cols);
  CHECK(r.code == 719 &&
            contains(r.message, "with no fence.proxy.async by that thread"),
        "generic write under a TMA load: %s", r.message.c_str());
  r = runTma({0, 0, 0, /*fence*/ 0}, tile, g, rows, cols);
  CHECK(r.code == 719 && contains(r.message, "fence.mbarrier_init"),
        "no fence: %s", r.message.c_str());
  r = runTma({0, 0, 0, 1, /*expect_tx short by*/ 1}, tile, g, rows, cols);
  CHECK(r.code == 719 && contains(r.message, "deadlock") &&
            contains(r.message, "tx-count -1"),
        "expect_tx off by one: %s", r.message.c_str());
}

// A one-warpgroup wgmma m64n16k16 (bf16 -> f32), A and B K-major without
// swizzle, read from shared memory the kernel fills with generic stores; D
// written per thread in fragment order.
static const char *kWgmmaKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry mma(.param .u64 in, .param .u64 out, .param .u32 fence, .param .u32 early,
                    .param .u32 mode)
{
  .reg .pred %p<12>;
  .reg .b32 %r<32>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<16>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  ld.param.u64 %rd1, [in];
  cvta.to.global.u64 %rd1, %rd1;
  // 2560 bytes (A 64x16 + B 16x16 bf16) copied as 640 words, 5 per thread.
  mov.u32 %r3, %r1;
$FILL:
  setp.ge.u32 %p1, %r3, 640;
  @%p1 bra $FILLED;
  shl.b32 %r4, %r3, 2;
  cvt.u64.u32 %rd2, %r4;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u32 %r5, [%rd3];
  add.u32 %r6, %r2, %r4;
  st.shared.u32 [%r6], %r5;
  add.u32 %r3, %r3, 128;
  bra $FILL;
$FILLED:
  ld.param.u32 %r7, [fence];
  setp.eq.u32 %p2, %r7, 0;
  @%p2 bra $NOFENCE;
  fence.proxy.async.shared::cta;
$NOFENCE:
  bar.sync 0;
  // Descriptors: A at smem (LBO 128 B between K halves, SBO 256 B between 8-row groups), B at
  // smem + 2048 (same strides), no swizzle.
  shr.u32 %r8, %r2, 4;
  and.b32 %r8, %r8, 16383;
  cvt.u64.u32 %rd4, %r8;
  or.b64 %rd5, %rd4, 68719476736;
  or.b64 %rd5, %rd5, 524288;
  add.u64 %rd6, %rd5, 128;
  // Mode 5: A described with the 128-byte swizzle one row into its repeat.
  ld.param.u32 %r10, [mode];
  setp.eq.u32 %p8, %r10, 5;
  add.u32 %r11, %r2, 128;
  shr.u32 %r11, %r11, 4;
  and.b32 %r11, %r11, 16383;
  cvt.u64.u32 %rd10, %r11;
  or.b64 %rd10, %rd10, 4611686293305360384;
  @%p8 mov.b64 %rd5, %rd10;
  // Mode 3: scale-d = 1 on accumulators nothing wrote.
  setp.eq.u32 %p4, %r10, 3;
  // Mode 6: no wgmma.fence before the first wgmma.
  setp.eq.u32 %p9, %r10, 6;
  @%p9 bra $NOFENCE6;
  wgmma.fence.sync.aligned;
$NOFENCE6:
  // Mode 2: an accumulator written after the wgmma.fence.
  setp.ne.u32 %p5, %r10, 2;
  @%p5 bra $FENCED;
  mov.f32 %f0, 0f00000000;
$FENCED:
  wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, %rd5, %rd6, %p4, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  // Mode 1: the A operand overwritten while the wgmma reads it.
  setp.ne.u32 %p6, %r10, 1;
  @%p6 bra $KEPT;
  st.shared.u32 [%r2], %r1;
$KEPT:
  // Mode 4: a second group chained on the accumulators; wait_group 1 retires
  // only the first, so the accumulators are still in flight.
  setp.ne.u32 %p7, %r10, 4;
  @%p7 bra $ONEGROUP;
  wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, %rd5, %rd6, 1, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 1;
  bra $STORE;
$ONEGROUP:
  ld.param.u32 %r9, [early];
  setp.ne.u32 %p3, %r9, 0;
  @%p3 bra $STORE;
  wgmma.wait_group.sync.aligned 0;
$STORE:
  ld.param.u64 %rd7, [out];
  cvta.to.global.u64 %rd7, %rd7;
  mul.wide.u32 %rd8, %r1, 32;
  add.u64 %rd9, %rd7, %rd8;
  st.global.v4.f32 [%rd9], {%f0, %f1, %f2, %f3};
  st.global.v4.f32 [%rd9+16], {%f4, %f5, %f6, %f7};
  wgmma.wait_group.sync.aligned 0;
  ret;
}
)";

// Warpgroup 1 writes the wgmma operands of kWgmmaKernel, warpgroup 0 runs the
// wgmma; `late` puts the writers' fence.proxy.async after the barrier.
static const char *kCrossWarpgroupKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry mma2(.param .u64 in, .param .u32 late)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  ld.param.u32 %r7, [late];
  setp.lt.u32 %p1, %r1, 128;
  @%p1 bra $CONSUMER;
  ld.param.u64 %rd1, [in];
  cvta.to.global.u64 %rd1, %rd1;
  sub.u32 %r3, %r1, 128;
$FILL:
  setp.ge.u32 %p2, %r3, 640;
  @%p2 bra $FILLED;
  shl.b32 %r4, %r3, 2;
  cvt.u64.u32 %rd2, %r4;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u32 %r5, [%rd3];
  add.u32 %r6, %r2, %r4;
  st.shared.u32 [%r6], %r5;
  add.u32 %r3, %r3, 128;
  bra $FILL;
$FILLED:
  setp.ne.u32 %p3, %r7, 0;
  @%p3 bra $LATE;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  ret;
$LATE:
  bar.sync 0;
  fence.proxy.async.shared::cta;
  ret;
$CONSUMER:
  bar.sync 0;
  shr.u32 %r8, %r2, 4;
  and.b32 %r8, %r8, 16383;
  cvt.u64.u32 %rd4, %r8;
  or.b64 %rd5, %rd4, 68719476736;
  or.b64 %rd5, %rd5, 524288;
  add.u64 %rd6, %rd5, 128;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, %rd5, %rd6, 0, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  ret;
}
)";

static void testWgmma() {
  // A[m][k], B[n][k] small integers (exact in bf16 and f32).
  float A[64][16], B[16][16];
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < 16; ++k)
      A[m][k] = float((m * 3 + k * 5) % 7 - 3);
  for (int n = 0; n < 16; ++n)
    for (int k = 0; k < 16; ++k)
      B[n][k] = float((n * 5 + k) % 5 - 2);
  // Shared image, K-major no swizzle ((8,m),(T,2k)):((1T,SBO),(1,LBO)) with LBO
  // 128, SBO 256: element (r, k) at (r%8)*16 + (r/8)*256 + (k/8)*128 + (k%8)*2;
  // B from byte 2048.
  std::vector<uint16_t> img(1280, 0);
  auto put = [&](unsigned base, unsigned r, unsigned k, float v) {
    img[(base + (r % 8) * 16 + (r / 8) * 256 + (k / 8) * 128 + (k % 8) * 2) /
        2] = floatToBf16(v, Rounding::Nearest);
  };
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < 16; ++k)
      put(0, m, k, A[m][k]);
  for (int n = 0; n < 16; ++n)
    for (int k = 0; k < 16; ++k)
      put(2048, n, k, B[n][k]);
  unsigned long long din = 0, dout = 0;
  cuMemAlloc_v2(&din, img.size() * 2);
  cuMemcpyHtoD_v2(din, img.data(), img.size() * 2);
  cuMemAlloc_v2(&dout, 128 * 8 * 4);
  unsigned fence = 1, early = 0, mode = 0;
  Run r = launch(kWgmmaKernel, "mma", {&din, &dout, &fence, &early, &mode}, 128,
                 4096);
  CHECK(r.code == 0, "wgmma kernel: %s", r.message.c_str());
  std::vector<float> d(128 * 8);
  cuMemcpyDtoH_v2(d.data(), dout, d.size() * 4);
  int bad = 0;
  for (unsigned t = 0; t < 128; ++t)
    for (unsigned i = 0; i < 8; ++i) {
      // PTX ISA D fragment figure, independently of accumulatorPosition.
      unsigned w = t / 32, l = t % 32;
      unsigned row = 16 * w + l / 4 + 8 * ((i / 2) % 2),
               col = (l % 4) * 2 + (i % 2) + 8 * (i / 4);
      float want = 0;
      for (int k = 0; k < 16; ++k)
        want += A[row][k] * B[col][k];
      bad += d[t * 8 + i] != want;
    }
  CHECK(bad == 0, "%d accumulator values differ", bad);
  // Accumulators read before wgmma.wait_group.
  early = 1;
  r = launch(kWgmmaKernel, "mma", {&din, &dout, &fence, &early, &mode}, 128,
             4096);
  CHECK(r.code == 719 && contains(r.message, "still in flight"),
        "early read: %s", r.message.c_str());
  // Operands written by the generic proxy without fence.proxy.async.
  early = 0;
  fence = 0;
  r = launch(kWgmmaKernel, "mma", {&din, &dout, &fence, &early, &mode}, 128,
             4096);
  CHECK(r.code == 719 && contains(r.message, "fence.proxy.async"),
        "no proxy fence: %s", r.message.c_str());
  fence = 1;
  const struct {
    unsigned mode;
    const char *diagnostic;
  } broken[] = {
      {1, "still in flight (no wait_group has retired it)"},
      {2, "was written after the thread's last wgmma.fence"},
      {3, "is read (scale-d is 1) but no instruction has written it"},
      {4, "still in flight (read before the wgmma.wait_group"},
      {5, "rows into the 1024-byte repeat"},
      {6, "wgmma.mma_async before any wgmma.fence"},
  };
  for (auto &b : broken) {
    mode = b.mode;
    r = launch(kWgmmaKernel, "mma", {&din, &dout, &fence, &early, &mode}, 128,
               4096);
    CHECK(r.code == 719 && contains(r.message, b.diagnostic), "mode %u: %s",
          b.mode, r.message.c_str());
  }
  // Operands written by another warpgroup: its fence.proxy.async must come
  // before the barrier that orders the writes before the wgmma.
  for (unsigned late : {0u, 1u}) {
    r = launch(kCrossWarpgroupKernel, "mma2", {&din, &late}, 256, 4096);
    CHECK(late ? r.code == 719 && contains(r.message, "is not ordered before")
               : r.code == 0,
          "proxy fence %s the barrier: %s", late ? "after" : "before",
          r.message.c_str());
  }
}

// Warps 2 and 3 write the words warps 0 and 1 own (every thread first writes
// its own word, and a bar.sync 0 orders that); warps 0 and 1 then read them,
// each the words of both writers.
// Mode 0: bar.arrive 1, 128 after the writes, bar.sync 1, 128 before the reads;
// 1: no barrier; 2: bar.sync 1, 64 everywhere (too few threads: two separate
// pairs of warps); 3: the writers arrive before they write.
static const char *kRaceKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 s[];
.visible .entry races(.param .u32 mode)
{
  .reg .pred %p<8>;
  .reg .b32 %r<16>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, s;
  shr.u32 %r3, %r1, 5;
  ld.param.u32 %r4, [mode];
  shl.b32 %r5, %r1, 2;
  add.u32 %r6, %r2, %r5;
  st.shared.u32 [%r6], %r1;
  bar.sync 0;
  and.b32 %r7, %r1, 63;
  shl.b32 %r7, %r7, 2;
  add.u32 %r8, %r2, %r7;
  setp.lt.u32 %p1, %r3, 2;
  setp.eq.u32 %p2, %r4, 1;
  setp.eq.u32 %p3, %r4, 2;
  setp.eq.u32 %p4, %r4, 3;
  @%p1 bra $READER;
  @%p4 bra $ARRIVE_FIRST;
  st.shared.u32 [%r8], %r1;
  @%p2 bra $END;
  @%p3 bra $SMALL;
  bar.arrive 1, 128;
  bra $END;
$ARRIVE_FIRST:
  bar.arrive 1, 128;
  st.shared.u32 [%r8], %r1;
  bra $END;
$SMALL:
  bar.sync 1, 64;
  bra $END;
$READER:
  @%p2 bra $READ;
  @%p3 bra $SMALL_READER;
  bar.sync 1, 128;
  bra $READ;
$SMALL_READER:
  bar.sync 1, 64;
$READ:
  ld.shared.u32 %r9, [%r8];
  xor.b32 %r10, %r8, 128;
  ld.shared.u32 %r11, [%r10];
$END:
  ret;
}
)";

// Thread 0 stores a 16 x 64 bf16 tile (the words 0..511) that all threads
// wrote with a TMA store. Mode 1: never committed; 2: no wait_group.read; 3:
// the source overwritten before the wait; 4: fence.proxy.async.global, which
// does not cover shared memory.
static const char *kTmaStoreKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry tma_store(.param .align 64 .b8 tmap[128], .param .u32 mode)
{
  .reg .pred %p<8>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  ld.param.u32 %r3, [mode];
  mov.u32 %r4, %r1;
$FILL:
  setp.ge.u32 %p1, %r4, 512;
  @%p1 bra $FILLED;
  shl.b32 %r5, %r4, 2;
  add.u32 %r6, %r2, %r5;
  st.shared.u32 [%r6], %r4;
  add.u32 %r4, %r4, 128;
  bra $FILL;
$FILLED:
  setp.eq.u32 %p2, %r3, 4;
  @%p2 bra $GLOBALFENCE;
  fence.proxy.async.shared::cta;
  bra $FENCED;
$GLOBALFENCE:
  fence.proxy.async.global;
$FENCED:
  bar.sync 0;
  setp.ne.u32 %p3, %r1, 0;
  @%p3 bra $END;
  mov.b64 %rd2, tmap;
  cvta.param.u64 %rd1, %rd2;
  mov.u32 %r7, 0;
  cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r7, %r7}], [%r2];
  setp.eq.u32 %p4, %r3, 1;
  @%p4 bra $END;
  cp.async.bulk.commit_group;
  setp.eq.u32 %p5, %r3, 2;
  @%p5 bra $END;
  setp.ne.u32 %p6, %r3, 3;
  @%p6 bra $WAIT;
  st.shared.u32 [%r2], %r1;
$WAIT:
  cp.async.bulk.wait_group.read 0;
$END:
  ret;
}
)";

static void testRaces() {
  const char *diagnostics[] = {nullptr, "nothing orders", "nothing orders",
                               "nothing orders"};
  for (unsigned mode = 0; mode < 4; ++mode) {
    Run r = launch(kRaceKernel, "races", {&mode}, 128, 512);
    if (!diagnostics[mode])
      CHECK(r.code == 0, "ordered: %s", r.message.c_str());
    else
      CHECK(r.code == 719 && contains(r.message, diagnostics[mode]),
            "race mode %u: %d %s", mode, r.code, r.message.c_str());
  }
}

static void testBulkStore() {
  unsigned long long dout = 0;
  cuMemAlloc_v2(&dout, 2048);
  alignas(64) unsigned char map[128];
  unsigned long long dims[2] = {64, 16}, strides[1] = {128};
  unsigned box[2] = {64, 16}, es[2] = {1, 1};
  CHECK(cuTensorMapEncodeTiled(map, 9, 2, reinterpret_cast<void *>(dout), dims,
                               strides, box, es, 0, 0, 0, 0) == 0,
        "encode: %s", cudasimLastError());
  unsigned mode = 0;
  Run r = launch(kTmaStoreKernel, "tma_store", {map, &mode}, 128, 4096);
  CHECK(r.code == 0, "TMA store: %s", r.message.c_str());
  std::vector<uint32_t> out(512);
  cuMemcpyDtoH_v2(out.data(), dout, 2048);
  int bad = 0;
  for (uint32_t k = 0; k < 512; ++k)
    bad += out[k] != k;
  CHECK(bad == 0, "%d words of the stored tile differ", bad);
  const struct {
    unsigned mode;
    const char *diagnostic;
  } broken[] = {
      {1, "never committed: no cp.async.bulk.commit_group"},
      {2, "no cp.async.bulk.wait_group.read retires its group"},
      {3, "still in flight (no wait_group has retired it)"},
      {4, "with no fence.proxy.async by that thread since the write"},
  };
  for (auto &b : broken) {
    mode = b.mode;
    r = launch(kTmaStoreKernel, "tma_store", {map, &mode}, 128, 4096);
    CHECK(r.code == 719 && contains(r.message, b.diagnostic), "mode %u: %s",
          b.mode, r.message.c_str());
  }
}

// ldmatrix / stmatrix .m8n8.x4 (plain and .trans) and mapa. One warp; lane t
// supplies the address of shared row 31 - t (rows 32 bytes apart, 16 used), so
// a lane that read its own row address instead of lane 8m + r's would show.
// Shared A (row p holds p * 8 + c, c = 0..7) is loaded both ways; the plain
// fragments are stored back with stmatrix to B (a copy of A) and with
// stmatrix.trans to C. out: 8 registers per lane, then B and C (16 bytes a
// row). `rank` feeds mapa.shared::cluster, which must return its input for
// rank 0.
static const char *kMatrixKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry mat(.param .u64 out, .param .u32 rank)
{
  .reg .pred %p<4>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  shl.b32 %r3, %r1, 5;
  add.u32 %r4, %r2, %r3;       // A row t
  shl.b32 %r5, %r1, 3;         // t * 8
  mov.u32 %r6, 0;
$FILL:
  add.u32 %r7, %r5, %r6;
  shl.b32 %r8, %r6, 1;
  add.u32 %r9, %r4, %r8;
  st.shared.u16 [%r9], %r7;
  add.u32 %r6, %r6, 1;
  setp.lt.u32 %p1, %r6, 8;
  @%p1 bra $FILL;
  bar.sync 0;
  sub.u32 %r10, 31, %r1;
  shl.b32 %r10, %r10, 5;
  add.u32 %r20, %r2, %r10;      // A row 31 - t
  ld.param.u32 %r30, [rank];
  mapa.shared::cluster.u32 %r31, %r20, %r30;
  setp.ne.u32 %p2, %r31, %r20;
  @%p2 trap;
  add.u32 %r21, %r20, 1024;     // B row 31 - t
  add.u32 %r22, %r20, 2048;     // C row 31 - t
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r11, %r12, %r13, %r14}, [%r20];
  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r15, %r16, %r17, %r18}, [%r20];
  stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r21], {%r11, %r12, %r13, %r14};
  stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r22], {%r11, %r12, %r13, %r14};
  bar.sync 0;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r1, 32;
  add.u64 %rd3, %rd1, %rd2;
  st.global.v4.b32 [%rd3], {%r11, %r12, %r13, %r14};
  st.global.v4.b32 [%rd3+16], {%r15, %r16, %r17, %r18};
  add.u32 %r23, %r4, 1024;
  ld.shared.v4.b32 {%r24, %r25, %r26, %r27}, [%r23];
  mul.wide.u32 %rd4, %r1, 16;
  add.u64 %rd5, %rd1, %rd4;
  st.global.v4.b32 [%rd5+1024], {%r24, %r25, %r26, %r27};
  add.u32 %r23, %r4, 2048;
  ld.shared.v4.b32 {%r24, %r25, %r26, %r27}, [%r23];
  st.global.v4.b32 [%rd5+1536], {%r24, %r25, %r26, %r27};
  ret;
}
)";

static void testMatrix() {
  unsigned long long dout = 0;
  cuMemAlloc_v2(&dout, 2048);
  unsigned rank = 0;
  Run r = launch(kMatrixKernel, "mat", {&dout, &rank}, 32, 4096);
  CHECK(r.code == 0, "ldmatrix/stmatrix kernel: %s", r.message.c_str());
  std::vector<uint16_t> out(1024);
  cuMemcpyDtoH_v2(out.data(), dout, 2048);
  // Matrix m row r is shared row 31 - (8m + r); element c of shared row p is
  // p * 8 + c. PTX ISA ldmatrix fragment figure: lane l holds row l / 4,
  // columns 2 (l % 4) and 2 (l % 4) + 1; .trans holds the transpose's.
  auto M = [](unsigned m, unsigned row, unsigned c) {
    return uint16_t((31 - (8 * m + row)) * 8 + c);
  };
  int bad = 0;
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned m = 0; m < 4; ++m)
      for (unsigned h = 0; h < 2; ++h) {
        bad += out[l * 16 + m * 2 + h] != M(m, l / 4, 2 * (l % 4) + h);
        bad += out[l * 16 + 8 + m * 2 + h] != M(m, 2 * (l % 4) + h, l / 4);
      }
  CHECK(bad == 0, "%d ldmatrix fragment elements differ", bad);
  bad = 0;
  for (unsigned p = 0; p < 32; ++p)
    for (unsigned c = 0; c < 8; ++c) {
      unsigned m = (31 - p) / 8, row = (31 - p) % 8;
      bad += out[512 + p * 8 + c] != uint16_t(p * 8 + c); // stmatrix: B == A
      bad += out[768 + p * 8 + c] != M(m, c, row);        // .trans: C = M^T
    }
  CHECK(bad == 0, "%d stmatrix elements differ", bad);
  rank = 1;
  r = launch(kMatrixKernel, "mat", {&dout, &rank}, 32, 4096);
  CHECK(r.code != 0 && contains(r.message, "mapa to CTA rank 1"),
        "mapa rank 1: %d %s", r.code, r.message.c_str());
}

static void testErrors() {
  const char *head = ".version 8.0\n.target sm_90a\n.address_size 64\n";
  unsigned long long buf = 0;
  cuMemAlloc_v2(&buf, 64);
  // Unknown instruction: rejected at load with its line.
  std::string bad =
      std::string(head) + ".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  "
                          "frobnicate.b32 %r1, %r0;\n  ret;\n}\n";
  Run r = launch(bad, "k", {}, 32, 0);
  CHECK(r.code == 218 && contains(r.message, "line 7") &&
            contains(r.message, "frobnicate"),
        "unknown instruction: %d %s", r.code, r.message.c_str());
  // Global out of bounds: 4 bytes past a 64-byte allocation.
  std::string oob =
      std::string(head) +
      ".visible .entry k(.param .u64 p)\n{\n  .reg .b64 %rd<3>;\n  .reg .b32 "
      "%r<2>;\n"
      "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 7;\n  st.global.u32 "
      "[%rd1+64], "
      "%r1;\n  ret;\n}\n";
  r = launch(oob, "k", {&buf}, 1, 0);
  CHECK(r.code == 700 &&
            contains(r.message, "0 bytes past the end of allocation"),
        "global OOB: %d %s", r.code, r.message.c_str());
  // Shared memory read that nothing wrote.
  std::string poison =
      std::string(head) +
      ".extern .shared .align 16 .b8 s[];\n.visible .entry k()\n{\n  .reg .b32 "
      "%r<4>;\n"
      "  mov.u32 %r1, s;\n  ld.shared.u32 %r2, [%r1+8];\n  ret;\n}\n";
  r = launch(poison, "k", {}, 1, 64);
  CHECK(r.code == 719 && contains(r.message, "never-written"), "poison: %s",
        r.message.c_str());
  // Registers: a mov of one nothing wrote, or arithmetic on it, gives an
  // unwritten result; storing it (or using it as an address, a predicate...)
  // is the diagnostic.
  auto regs = [&](const char *body) {
    return std::string(head) +
           ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 "
           "%r<8>;\n  .reg .b64 %rd<2>;\n" +
           body +
           "  ld.param.u64 %rd1, [p];\n  st.global.u32 [%rd1], %r3;\n  "
           "ret;\n}\n";
  };
  r = launch(regs("  mov.u32 %r2, %r1;\n  add.u32 %r3, %r2, 1;\n"), "k", {&buf},
             1, 0);
  CHECK(r.code == 719 && contains(r.message, "reads register %r3, which no") &&
            contains(r.message, "st.global.u32"),
        "copied unwritten register: %s", r.message.c_str());
  r = launch(regs("  mov.u32 %r2, %r1;\n  mov.u32 %r2, 5;\n  add.u32 %r3, %r2, "
                  "1;\n"),
             "k", {&buf}, 1, 0);
  CHECK(r.code == 0, "overwritten copy: %s", r.message.c_str());
  // Shared memory out of bounds.
  std::string soob =
      std::string(head) +
      ".extern .shared .align 16 .b8 s[];\n.visible .entry k()\n{\n  .reg .b32 "
      "%r<4>;\n"
      "  mov.u32 %r1, s;\n  mov.u32 %r2, 7;\n  st.shared.u32 [%r1+64], %r2;\n  "
      "ret;\n}\n";
  r = launch(soob, "k", {}, 1, 64);
  CHECK(r.code == 700 && contains(r.message, "outside the CTA's shared memory"),
        "smem OOB: %s", r.message.c_str());
  // setmaxnreg: a value that is not a multiple of 8, and a warpgroup that
  // disagrees.
  std::string reg =
      std::string(head) + ".visible .entry k()\n{\n  "
                          "setmaxnreg.inc.sync.aligned.u32 100;\n  ret;\n}\n";
  r = launch(reg, "k", {}, 128, 0);
  CHECK(r.code == 719 && contains(r.message, "multiple of 8"),
        "setmaxnreg value: %s", r.message.c_str());
  std::string split =
      std::string(head) +
      ".visible .entry k()\n{\n  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  "
      "mov.u32 %r1, %tid.x;\n"
      "  setp.lt.u32 %p1, %r1, 64;\n  @%p1 bra $A;\n  "
      "setmaxnreg.dec.sync.aligned.u32 40;\n"
      "  bra $B;\n$A:\n  setmaxnreg.dec.sync.aligned.u32 48;\n$B:\n  ret;\n}\n";
  r = launch(split, "k", {}, 128, 0);
  CHECK(r.code == 719 && contains(r.message, "not executed uniformly"),
        "setmaxnreg split: %s", r.message.c_str());
  // setmaxnreg.inc waits for another warpgroup's setmaxnreg.dec (384 threads
  // start at 168 registers: two consumers at 232 fit once the producer is at
  // 40, as in CUTLASS's and FA3's warp-specialized kernels); the producer
  // first spins for a while, so the increases arrive before the decrease. Two
  // increases to 256 cannot both fit after the decrease to 24 (the second
  // waits forever: a deadlock); one warpgroup alone (248 registers at launch)
  // can never reach 256 and fails at once.
  auto wsRegs = [&](unsigned inc, unsigned dec) {
    return std::string(head) +
           ".visible .entry k()\n{\n  .reg .pred %p<3>;\n  .reg .b32 %r<4>;\n"
           "  mov.u32 %r1, %tid.x;\n  setp.ge.u32 %p1, %r1, 128;\n  @%p1 bra "
           "$C;\n"
           "  mov.u32 %r2, 0;\n$L:\n  add.u32 %r2, %r2, 1;\n"
           "  setp.lt.u32 %p2, %r2, 64;\n  @%p2 bra $L;\n"
           "  setmaxnreg.dec.sync.aligned.u32 " +
           std::to_string(dec) +
           ";\n  ret;\n"
           "$C:\n  setmaxnreg.inc.sync.aligned.u32 " +
           std::to_string(inc) +
           ";\n"
           "  ret;\n}\n";
  };
  r = launch(wsRegs(232, 40), "k", {}, 384, 0);
  CHECK(r.code == 0, "setmaxnreg.inc before the dec: %s", r.message.c_str());
  r = launch(wsRegs(256, 24), "k", {}, 384, 0);
  CHECK(r.code == 719 && contains(r.message, "deadlock") &&
            contains(r.message, "setmaxnreg.inc"),
        "setmaxnreg.inc beyond the pool: %s", r.message.c_str());
  r = launch(std::string(head) +
                 ".visible .entry k()\n{\n  "
                 "setmaxnreg.inc.sync.aligned.u32 256;\n  ret;\n}\n",
             "k", {}, 128, 0);
  CHECK(r.code == 719 && contains(r.message, "would wait forever"),
        "setmaxnreg.inc that never fits: %s", r.message.c_str());
  // A barrier nobody else reaches: deadlock, with the waiting warps named.
  std::string dl = std::string(head) +
                   ".visible .entry k()\n{\n  .reg .pred %p<2>;\n  .reg .b32 "
                   "%r<4>;\n  mov.u32 %r1, %tid.x;\n"
                   "  setp.lt.u32 %p1, %r1, 32;\n  @%p1 bra $X;\n  bar.sync 1, "
                   "64;\n$X:\n  ret;\n}\n";
  r = launch(dl, "k", {}, 64, 0);
  CHECK(r.code == 719 && contains(r.message, "deadlock") &&
            contains(r.message, "warp 1 lanes 0-31 (32): waiting at barrier 1"),
        "deadlock: %s", r.message.c_str());
  // Two warps write the same shared word: a race without a barrier between,
  // fine with one.
  auto race = [&](bool barrier) {
    return std::string(head) +
           ".extern .shared .align 16 .b8 s[];\n.visible .entry k()\n{\n"
           "  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  mov.u32 %r1, %tid.x;\n  "
           "mov.u32 %r2, s;\n"
           "  setp.lt.u32 %p1, %r1, 32;\n  @%p1 bra $W;\n" +
           std::string(barrier ? "  bar.sync 0;\n" : "") +
           "  st.shared.u32 [%r2], %r1;\n  bra $E;\n$W:\n  st.shared.u32 "
           "[%r2], %r1;\n" +
           std::string(barrier ? "  bar.sync 0;\n" : "") + "$E:\n  ret;\n}\n";
  };
  r = launch(race(false), "k", {}, 64, 64);
  CHECK(r.code == 719 && contains(r.message, "with no barrier between"),
        "race: %s", r.message.c_str());
  r = launch(race(true), "k", {}, 64, 64);
  CHECK(r.code == 0, "ordered writes: %s", r.message.c_str());
  // The emulated device's limits.
  int v = 0;
  cuDeviceGetAttribute(&v, 16, 0);
  CHECK(v == 132, "SM count");
  cuDeviceGetAttribute(&v, 97, 0);
  CHECK(v == 227 * 1024, "opt-in shared memory");
  // cuTensorMapEncodeTiled validation, as the driver documents it.
  alignas(64) unsigned char map[128];
  unsigned long long dims[2] = {64, 64}, strides[1] = {128};
  unsigned box[2] = {64, 8}, es[2] = {1, 1};
  void *addr = reinterpret_cast<void *>(buf);
  CHECK(cuTensorMapEncodeTiled(map, 9, 2, addr, dims, strides, box, es, 0, 3, 0,
                               0) == 0,
        "valid");
  unsigned long long badStride[1] = {120};
  CHECK(cuTensorMapEncodeTiled(map, 9, 2, addr, dims, badStride, box, es, 0, 3,
                               0, 0) == 1 &&
            contains(cudasimLastError(), "globalStrides[0]"),
        "stride not a multiple of 16");
  unsigned wide[2] = {128, 8};
  CHECK(cuTensorMapEncodeTiled(map, 9, 2, addr, dims, strides, wide, es, 0, 3,
                               0, 0) == 1 &&
            contains(cudasimLastError(), "swizzle span"),
        "inner box wider than the swizzle");
  unsigned big[2] = {64, 300};
  CHECK(cuTensorMapEncodeTiled(map, 9, 2, addr, dims, strides, big, es, 0, 0, 0,
                               0) == 1 &&
            contains(cudasimLastError(), "boxDim[1]"),
        "box above 256");
  CHECK(cuTensorMapEncodeTiled(map, 9, 2, reinterpret_cast<void *>(buf + 8),
                               dims, strides, box, es, 0, 3, 0, 0) == 1 &&
            contains(cudasimLastError(), "aligned"),
        "misaligned address");
  CHECK(cuTensorMapEncodeTiled(map + 32, 9, 2, addr, dims, strides, box, es, 0,
                               3, 0, 0) == 1,
        "map not 64-byte aligned");
  CHECK(cuTensorMapEncodeTiled(map, 3, 2, addr, dims, strides, box, es, 0, 0, 0,
                               1) == 1 &&
            contains(cudasimLastError(), "floating-point"),
        "NaN fill of an integer tensor");
  CHECK(cuTensorMapEncodeTiled(map, 9, 2, addr, dims, strides, box, es, 1, 0, 0,
                               0) == 1,
        "interleave with rank 2");
}

int main() {
  cuInit(0);
  testSwizzle();
  testDescriptor();
  testCanonicalLayouts();
  testFragments();
  testConversions();
  testTma();
  testWgmma();
  testRaces();
  testBulkStore();
  testMatrix();
  testErrors();
  std::printf("%d of %d checks passed\n", checks - failures, checks);
  return failures ? 1 : 0;
}
