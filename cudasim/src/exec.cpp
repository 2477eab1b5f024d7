// The interpreter: one CTA at a time, every thread with its own PC (Hopper's
// independent thread scheduling). A thread runs until it reaches an instruction
// that needs its warp or warpgroup (shfl.sync, elect.sync, vote,
// wgmma.mma_async, setmaxnreg), a barrier, or an mbarrier wait that is not yet
// satisfied; the scheduler completes collectives once every participant has
// arrived. When no thread can move, that is a deadlock and the state of every
// warp and mbarrier is reported.
#include "hb.h"
#include "layouts.h"
#include "sim.h"

#include <algorithm>
#include <array>
#include <cfenv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace cudasim {

namespace {

struct SimError : std::runtime_error {
  bool address;
  SimError(const std::string &m, bool a = false)
      : std::runtime_error(m), address(a) {}
};

enum class TState : uint8_t {
  Runnable,
  AtCollective,
  WaitBar,
  WaitMbar,
  Exited
};

// Registers a wgmma still uses: its accumulators (read and written until the
// wait_group that retires its group) and, in the register form, its A operand
// (read until then, so it must not be overwritten).
enum : uint8_t { kNotPending = 0, kPendingAccumulator = 1, kPendingA = 2 };

// An asynchronous operation a thread issued and a wait must retire: a wgmma's
// operand reads or a bulk store's source reads (index into the shadow's async
// reads), with its group (-1 until a commit_group).
struct AsyncGroupEntry {
  int op;
  int64_t group;
};

// A register's bits and, next to them (the check reads both on every
// instruction), its write stamp: 0 never written, 1 last written by a wgmma,
// else 2 * (the thread's wgmma.fence count at the write) + 2.
struct RegCell {
  uint64_t value;
  uint32_t stamp;
};

struct Thread {
  RegCell *r = nullptr;
  int pc = 0;
  TState st = TState::Runnable;
  unsigned tid[3] = {0, 0, 0};
  unsigned linear = 0, warp = 0, lane = 0;
  int waitBarrier = -1;
  uint32_t waitMbar = 0;
  // (warp epoch, PC) of every fence.proxy.async that covers shared memory.
  std::vector<std::pair<uint32_t, int>> proxyFences;
  // Per register: kNotPending / kPendingAccumulator / kPendingA, the group of
  // the newest wgmma using it (-1 uncommitted), and that wgmma's PC.
  std::vector<uint8_t> pending;
  std::vector<int64_t> pendingGroup;
  std::vector<int32_t> pendingPc;
  std::vector<int> pendingList; // registers with pending != 0
  uint32_t wgmmaFences = 0;
  int64_t wgmmaGroups = 0, bulkGroups = 0;
  std::vector<AsyncGroupEntry> wgmmaReads, bulkReads;
  uint64_t executed = 0;
  uint32_t writeStamp() const { return 2 * wgmmaFences + 2; }
};

struct MBar {
  uint32_t expected = 0, pending = 0;
  int64_t tx = 0;
  uint64_t phase = 0; // completed phases
  int initThread = -1;
  bool fenced = false;
  int initPc = 0;
  uint32_t initEpoch = 0; // the initialising warp's epoch at the init
  uint16_t agent = 0;     // clock component of the copies it completes
  Clock clock,
      doneClock; // happens-before: arrivals of this / the last phase
};

bool checkEnabled(const char *name);

// An async copy into shared memory in flight: its bytes land (and its
// mbarrier's tx-count is decremented) a while after the copy is issued, not at
// once, so that a thread that reads the destination without waiting on the
// mbarrier sees it unwritten. Its write is ordered after what the issuing
// thread's warp had seen at the issue.
struct PendingCopy {
  uint64_t dueRound;
  uint32_t mbar;
  unsigned elemBytes;
  int64_t bytes;
  std::vector<uint32_t> addr; // destination of each element
  std::vector<uint8_t> data;
  Access write;      // the mbarrier's agent, at the phase the copy completes
  Clock issuerClock; // the issuing warp's clock at the issue
};
constexpr uint64_t kCopyLatencyRounds = 200;

// The schedule: CUDASIM_SEED=n (n > 0) draws warp interleavings, copy
// latencies, the CTAs that run at once and the registers' initial bits from
// seed n; unset or 0 is the fixed round-robin schedule.
uint64_t scheduleSeed() {
  static const uint64_t seed = [] {
    const char *e = std::getenv("CUDASIM_SEED");
    return e ? std::strtoull(e, nullptr, 10) : 0ull;
  }();
  return seed;
}

struct NamedBarrier {
  unsigned arrived = 0, expected = 0;
  std::vector<uint32_t> clock; // join of the arrivals' warp clocks
};

float asF(uint64_t v) {
  float f;
  uint32_t u = uint32_t(v);
  std::memcpy(&f, &u, 4);
  return f;
}
uint64_t fromF(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
double asD(uint64_t v) {
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}
uint64_t fromD(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
uint64_t maskBits(uint64_t v, unsigned bits) {
  return bits >= 64 ? v : v & ((1ull << bits) - 1);
}
int64_t sext(uint64_t v, unsigned bits) {
  if (bits >= 64)
    return int64_t(v);
  uint64_t m = 1ull << (bits - 1);
  v = maskBits(v, bits);
  return int64_t((v ^ m) - m);
}
float ftz(float f) {
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

// double -> float with a PTX rounding mode (0 rn, 1 rz, 2 rm, 3 rp).
float roundToFloat(long double d, int mode) {
  float f = float(d);
  if (mode == 0 || std::isnan(f) || std::isinf(d))
    return f;
  if (mode == 1 && std::fabs((long double)f) > std::fabs(d))
    f = std::nextafter(f, 0.0f);
  else if (mode == 2 && (long double)f > d)
    f = std::nextafter(f, -INFINITY);
  else if (mode == 3 && (long double)f < d)
    f = std::nextafter(f, INFINITY);
  return f;
}
Rounding toRounding(int mode) {
  switch (mode & 3) {
  case 1:
    return Rounding::Zero;
  case 2:
    return Rounding::Down;
  case 3:
    return Rounding::Up;
  default:
    return Rounding::Nearest;
  }
}

class Cta {
public:
  Cta(const Module &m, const Kernel &k, const LaunchConfig &c,
      const std::vector<uint8_t> &p, GlobalMemory &g, Stats &s)
      : mod(m), kernel(k), cfg(c), params(p), mem(g), stats(s) {}
  // Starts the CTA `(cx, cy, cz)`; `seed` 0 is the fixed schedule.
  void start(unsigned cx, unsigned cy, unsigned cz, uint64_t seed);
  // Runs it a while; true once it has finished.
  bool advance();

private:
  const Module &mod;
  const Kernel &kernel;
  const LaunchConfig &cfg;
  const std::vector<uint8_t> &params;
  GlobalMemory &mem;
  Stats &stats;
  unsigned ctaid[3] = {0, 0, 0};
  unsigned nthreads = 0, nwarps = 0;
  std::vector<Thread> threads;
  std::vector<RegCell> regs;
  std::vector<uint8_t> smem, written;
  std::vector<uint32_t>
      copyInFlight; // per 16 bytes: elements of copies not yet landed
  std::vector<int32_t>
      chunkWriter; // per 16 bytes: thread of the last generic write, or -1
  std::vector<uint32_t> chunkStamp; // that thread's proxy fences at the write
  std::unordered_map<uint32_t, MBar> mbars;
  std::map<uint32_t, uint16_t> mbarAgents; // mbarrier offset -> agent
  NamedBarrier bars[16];
  std::vector<PendingCopy> copies;
  std::vector<Clock> warpClock; // per warp
  SharedShadow shadow;
  unsigned numWarpgroups = 0;
  uint64_t round = 0;
  std::mt19937_64 rng;
  bool randomSchedule = false;
  std::vector<unsigned> warpOrder; // the seeded schedule's issue order
  bool checkRaces = true, checkRegisterInit = true, checkWgmmaFence = true,
       checkSwizzleAlign = true, checkMbarrierInitOrder = true;
  bool atomicAccess = false; // the access is an atom / red (not a race)
  bool completeCopies(bool all);
  bool roundOfWarps();
  std::vector<unsigned>
      wgRegs; // per warpgroup: registers per thread after setmaxnreg
  unsigned regPool = 0, initialRegs = 0;
  std::vector<uint64_t>
      symbolAddr; // per kernel symbol: its address in its space
  unsigned smemSize = 0, dynBase = 0;
  Thread *cur = nullptr;
  const Inst *curInst = nullptr;

  [[noreturn]] void fail(const std::string &msg, bool address = false) const;
  std::string where(const Thread &t) const;
  std::string instAt(int pc) const;

  uint64_t special(Special s, const Thread &t) const;
  uint64_t read(const Operand &o, const Thread &t, Ty ty) const;
  float readF(const Operand &o, const Thread &t) const;
  double readD(const Operand &o, const Thread &t) const;
  void write(const Operand &o, Thread &t, uint64_t v, Ty ty);
  uint64_t address(const Operand &o, const Thread &t) const;

  // Memory.
  uint8_t *resolve(Space space, uint64_t addr, unsigned size, bool isWrite,
                   Space &actual, uint32_t &smemOffset);
  uint32_t sharedOffset(Space space, uint64_t addr, unsigned size,
                        const char *what);
  Access accessOf(const Thread &t) const;
  std::string describeAccess(const Access &a) const;
  [[noreturn]] void failRace(const Conflict &k, const char *verb,
                             const char *what);
  [[noreturn]] void failCopyInFlight(uint32_t chunk, const char *what,
                                     const char *verb);
  void checkNoCopyInFlight(uint32_t off, unsigned size, const char *what,
                           const char *verb);
  void checkReadable(uint32_t off, unsigned size, const char *what);
  void smemRead(uint32_t off, unsigned size, const char *what);
  void smemWriteGeneric(uint32_t off, unsigned size, const char *what);
  void smemWriteAsync(uint32_t off, unsigned size);
  void asyncProxyRead(uint32_t off, unsigned size, const char *what, int op,
                      unsigned slot, const Clock &c, uint32_t self);
  void landCopy(PendingCopy &pc);
  void markPending(Thread &t, int reg, uint8_t kind);
  PendingCopy newCopy(Thread &t, uint32_t mbarOff, const char *what);
  static void commitAsync(std::vector<AsyncGroupEntry> &l, int64_t group);
  void retireAsync(Thread &t, std::vector<AsyncGroupEntry> &l,
                   int64_t doneUpTo);
  [[noreturn]] void failUnwritten(const Thread &t, int reg);
  uint64_t load(Space space, uint64_t addr, unsigned bytes);
  void store(Space space, uint64_t addr, unsigned bytes, uint64_t v);

  MBar &mbarAt(uint32_t off, const char *what);
  void mbarArrive(uint32_t off, uint32_t count);
  void mbarTx(uint32_t off, int64_t delta);
  void mbarCheckComplete(uint32_t off, MBar &b);
  void checkAsyncUse(uint32_t mbarOff, const char *what);

  void step(Thread &t); // executes one instruction (not a collective)
  void matrixCollective(std::vector<Thread *> &ts, const Inst &i);
  void exec(Thread &t, const Inst &i);
  void execCvt(Thread &t, const Inst &i);
  void execTensorCopy(Thread &t, const Inst &i);
  void execBulkCopy(Thread &t, const Inst &i);
  void stepThread(Thread &t);
  uint64_t runWarp(unsigned w, unsigned quantum);
  bool resolveCollectives();
  bool resolveWarpCollectives(unsigned w);
  void warpCollective(std::vector<Thread *> &ts, const Inst &i);
  void wgmma(std::vector<Thread *> &ts, const Inst &i);
  bool setmaxnreg(std::vector<Thread *> &ts, const Inst &i);
  void barrierArrive(Thread &t, unsigned id, unsigned count, bool wait);
  void checkBarriers();
  void checkPending(Thread &t, const Inst &i);
  [[noreturn]] void deadlock();
  uint64_t tensorMapAddr(const Operand &o, const Thread &t, TensorMap &map);
};

void Cta::fail(const std::string &msg, bool address) const {
  std::string w = cur ? where(*cur) : "kernel " + kernel.name;
  throw SimError(w + ": " + msg, address);
}

std::string Cta::instAt(int pc) const {
  const Inst &i = kernel.code[pc];
  return "PC " + std::to_string(pc) + " (line " + std::to_string(i.line) +
         ": " + i.text + ")";
}

std::string Cta::where(const Thread &t) const {
  std::ostringstream os;
  os << "kernel " << kernel.name << ", block (" << ctaid[0] << "," << ctaid[1]
     << "," << ctaid[2] << "), warp " << t.warp << " lane " << t.lane << ", "
     << instAt(t.pc);
  return os.str();
}

uint64_t Cta::special(Special s, const Thread &t) const {
  switch (s) {
  case Special::TidX:
    return t.tid[0];
  case Special::TidY:
    return t.tid[1];
  case Special::TidZ:
    return t.tid[2];
  case Special::NtidX:
    return cfg.block[0];
  case Special::NtidY:
    return cfg.block[1];
  case Special::NtidZ:
    return cfg.block[2];
  case Special::CtaidX:
  case Special::ClusterIdX:
    return ctaid[0];
  case Special::CtaidY:
  case Special::ClusterIdY:
    return ctaid[1];
  case Special::CtaidZ:
  case Special::ClusterIdZ:
    return ctaid[2];
  case Special::NctaidX:
  case Special::NClusterIdX:
    return cfg.grid[0];
  case Special::NctaidY:
  case Special::NClusterIdY:
    return cfg.grid[1];
  case Special::NctaidZ:
  case Special::NClusterIdZ:
    return cfg.grid[2];
  case Special::LaneId:
    return t.lane;
  case Special::WarpId:
    return t.warp;
  case Special::NWarpId:
    return 64;
  case Special::SmId:
    return (ctaid[0] + ctaid[1] * cfg.grid[0]) % kNumSMs;
  case Special::NSmId:
    return kNumSMs;
  case Special::Clock:
  case Special::Clock64:
  case Special::GlobalTimer:
    return t.executed;
  case Special::DynSmem:
    return cfg.dynamicSmem;
  case Special::TotalSmem:
    return smemSize;
  case Special::LanemaskLt:
    return (1ull << t.lane) - 1;
  case Special::LanemaskLe:
    return ((1ull << t.lane) << 1) - 1;
  case Special::LanemaskEq:
    return 1ull << t.lane;
  case Special::LanemaskGe:
    return uint32_t(~((1ull << t.lane) - 1));
  case Special::LanemaskGt:
    return uint32_t(~(((1ull << t.lane) << 1) - 1));
  case Special::ClusterCtaRank:
    return 0;
  case Special::ClusterNCtaRank:
    return 1;
  case Special::ClusterCtaidX:
  case Special::ClusterCtaidY:
  case Special::ClusterCtaidZ:
    return 0;
  case Special::ClusterNctaidX:
  case Special::ClusterNctaidY:
  case Special::ClusterNctaidZ:
    return 1;
  case Special::IsExplicitCluster:
    return 0;
  }
  return 0;
}

uint64_t Cta::read(const Operand &o, const Thread &t, Ty ty) const {
  switch (o.kind) {
  case Operand::Reg: {
    uint64_t v = t.r[o.reg].value;
    if (o.negate)
      v = !v;
    return v;
  }
  case Operand::Imm:
    if (o.doubleLiteral && ty == Ty::F32)
      return fromF(float(asD(o.imm)));
    if (o.floatLiteral && ty == Ty::F64)
      return fromD(double(asF(o.imm)));
    return o.imm;
  case Operand::Special:
    return special(o.special, t);
  case Operand::Symbol:
    return symbolAddr[o.symbol];
  default:
    fail("unsupported operand kind");
  }
}

float Cta::readF(const Operand &o, const Thread &t) const {
  return asF(read(o, t, Ty::F32));
}
double Cta::readD(const Operand &o, const Thread &t) const {
  return asD(read(o, t, Ty::F64));
}

void Cta::write(const Operand &o, Thread &t, uint64_t v, Ty ty) {
  if (o.kind == Operand::Sink)
    return;
  if (o.kind != Operand::Reg)
    fail("destination is not a register");
  unsigned bits = tyBits(ty);
  if (ty == Ty::Pred)
    v = v ? 1 : 0;
  else if (bits && bits < 64)
    v = maskBits(v, bits);
  t.r[o.reg] = {v, t.writeStamp()};
}

uint64_t Cta::address(const Operand &o, const Thread &t) const {
  uint64_t base = 0;
  if (o.reg >= 0)
    base = t.r[o.reg].value;
  else if (o.symbol >= 0)
    base = symbolAddr[o.symbol];
  return base + o.imm;
}

// ---------------------------------------------------------------- memory

uint32_t Cta::sharedOffset(Space space, uint64_t addr, unsigned size,
                           const char *what) {
  uint64_t off = addr;
  if (space == Space::Generic) {
    if (addr < kSharedWindow || addr >= kSharedWindow + kSharedWindowSize)
      fail(
          std::string(what) + ": generic address 0x" +
              [&] {
                std::ostringstream os;
                os << std::hex << addr;
                return os.str();
              }() +
              " is not in the shared window",
          true);
    off = addr - kSharedWindow;
  }
  if (off < kReservedSmem || off + size > smemSize) {
    std::ostringstream os;
    os << what << ": shared memory access at 0x" << std::hex << off << std::dec
       << " (" << size << " bytes) outside the CTA's shared memory [0x400, 0x"
       << std::hex << smemSize << ")";
    fail(os.str(), true);
  }
  return uint32_t(off);
}

Access Cta::accessOf(const Thread &t) const {
  Access a;
  a.thread = int32_t(&t - threads.data());
  a.pc = t.pc;
  a.comp = uint16_t(t.warp);
  a.epoch = warpClock[t.warp][t.warp];
  return a;
}

std::string Cta::describeAccess(const Access &a) const {
  std::ostringstream os;
  const Thread &t = threads[size_t(a.thread)];
  if (a.comp < nwarps) {
    os << "warp " << t.warp << " lane " << t.lane << " at " << instAt(a.pc);
    return os.str();
  }
  uint32_t mbar = 0;
  for (auto &kv : mbarAgents)
    if (kv.second == a.comp)
      mbar = kv.first;
  os << "the async copy issued by warp " << t.warp << " lane " << t.lane
     << " at " << instAt(a.pc) << ", which completes phase " << a.epoch - 1
     << " of mbarrier 0x" << std::hex << mbar << std::dec;
  return os.str();
}

// A race found by the shadow: both accesses, the thread and the address.
void Cta::failRace(const Conflict &k, const char *verb, const char *what) {
  std::ostringstream os;
  os << what << ": " << verb << " shared word 0x" << std::hex << k.word * 4
     << std::dec;
  switch (k.kind) {
  case Conflict::ReadAfterWrite:
    os << " written by " << describeAccess(k.other)
       << "; nothing orders that write before this read ("
       << (k.other.comp < nwarps
               ? "no bar.sync / bar.arrive or mbarrier arrive -> wait between "
                 "the warps"
               : "no wait on that mbarrier phase")
       << ")";
    break;
  case Conflict::WriteAfterWrite:
    os << " also written by " << describeAccess(k.other)
       << " with no barrier between";
    break;
  case Conflict::WriteAfterRead:
    if (k.asyncRead >= 0)
      os << ", which the async read issued by " << describeAccess(k.other)
         << " used; the wait that retired that read is not ordered before "
            "this write (a release of the buffer before the wait_group?)";
    else
      os << " read by " << describeAccess(k.other)
         << "; nothing orders that read before this write (no bar.sync / "
            "bar.arrive or mbarrier arrive -> wait between the warps)";
    break;
  case Conflict::WriteDuringAsyncRead:
    os << ", an operand of the async read issued by " << describeAccess(k.other)
       << " still in flight (no wait_group has retired it)";
    break;
  case Conflict::None:
    break;
  }
  fail(os.str());
}

void Cta::failCopyInFlight(uint32_t chunk, const char *what, const char *verb) {
  std::ostringstream os;
  os << what << ": " << verb << " shared memory at 0x" << std::hex << chunk * 16
     << std::dec << " that an async copy is still writing";
  for (const PendingCopy &pc : copies)
    for (uint32_t a : pc.addr)
      if (a / 16 == chunk) {
        os << " (" << describeAccess(pc.write)
           << "; the mbarrier has not completed phase " << pc.write.epoch - 1
           << ")";
        fail(os.str());
      }
  fail(os.str());
}

// No async copy is still landing on [off, off + size).
void Cta::checkNoCopyInFlight(uint32_t off, unsigned size, const char *what,
                              const char *verb) {
  for (uint32_t c = off / 16; c <= (off + size - 1) / 16; ++c)
    if (copyInFlight[c])
      failCopyInFlight(c, what, verb);
}

// Either proxy reads bytes that hold data: written, and no copy still landing.
void Cta::checkReadable(uint32_t off, unsigned size, const char *what) {
  checkNoCopyInFlight(off, size, what, "read of");
  for (unsigned b = 0; b < size; ++b)
    if (!written[off + b]) {
      std::ostringstream os;
      os << what << ": read of never-written shared memory at 0x" << std::hex
         << (off + b);
      fail(os.str());
    }
}

void Cta::smemRead(uint32_t off, unsigned size, const char *what) {
  checkReadable(off, size, what);
  if (!checkRaces || atomicAccess)
    return;
  Access a = accessOf(*cur);
  for (uint32_t word = off / 4; word <= (off + size - 1) / 4; ++word)
    if (Conflict k = shadow.read(word, a, warpClock[cur->warp]))
      failRace(k, "reads", what);
}

void Cta::smemWriteGeneric(uint32_t off, unsigned size, const char *what) {
  checkNoCopyInFlight(off, size, what, "write to");
  if (checkRaces && !atomicAccess) {
    Access a = accessOf(*cur);
    unsigned w = cur->warp;
    for (uint32_t word = off / 4; word <= (off + size - 1) / 4; ++word)
      if (Conflict k = shadow.write(word, a, warpClock[w], 1u << w))
        failRace(k, "writes", what);
  }
  std::memset(&written[off], 1, size);
  for (uint32_t c = off / 16; c <= (off + size - 1) / 16; ++c) {
    chunkWriter[c] = int32_t(cur - threads.data());
    chunkStamp[c] = uint32_t(cur->proxyFences.size());
  }
}

void Cta::smemWriteAsync(uint32_t off, unsigned size) {
  for (uint32_t c = off / 16; c <= (off + size - 1) / 16; ++c)
    ++copyInFlight[c];
}

// A read by the async proxy (wgmma operands, bulk and TMA store sources) for
// async read `op` of the warps `self` (joined clock `c`): the generic writes it
// sees must each be followed by a fence.proxy.async of their thread that is
// ordered before the read.
void Cta::asyncProxyRead(uint32_t off, unsigned size, const char *what, int op,
                         unsigned slot, const Clock &c, uint32_t self) {
  checkReadable(off, size, what);
  for (uint32_t ch = off / 16; ch <= (off + size - 1) / 16; ++ch) {
    int w = chunkWriter[ch];
    if (w < 0)
      continue;
    const Thread &x = threads[size_t(w)];
    if (x.proxyFences.size() == chunkStamp[ch]) {
      std::ostringstream os;
      os << what << " (async proxy) reads shared memory at 0x" << std::hex
         << ch * 16 << std::dec << " written by warp " << x.warp << " lane "
         << x.lane
         << " (generic proxy) with no fence.proxy.async by that thread since "
            "the write";
      fail(os.str());
    }
  }
  if (checkRaces)
    for (uint32_t word = off / 4; word <= (off + size - 1) / 4; ++word)
      if (Conflict k = shadow.asyncRead(word, op, slot, c, self))
        failRace(k, "reads (async proxy)", what);
  for (uint32_t ch = off / 16; ch <= (off + size - 1) / 16; ++ch) {
    int w = chunkWriter[ch];
    if (w < 0)
      continue;
    const Thread &x = threads[size_t(w)];
    const auto &fence = x.proxyFences[chunkStamp[ch]];
    if (checkRaces && !(self >> x.warp & 1) &&
        clockAt(c, x.warp) < fence.first) {
      std::ostringstream os;
      os << what << " (async proxy) reads shared memory at 0x" << std::hex
         << ch * 16 << std::dec << " written by warp " << x.warp << " lane "
         << x.lane << " (generic proxy), whose fence.proxy.async at "
         << instAt(fence.second)
         << " is not ordered before this read (the fence must come before "
            "the barrier that orders the write)";
      fail(os.str());
    }
  }
}

uint8_t *Cta::resolve(Space space, uint64_t addr, unsigned size, bool,
                      Space &actual, uint32_t &smemOff) {
  if (space == Space::Generic) {
    if (addr >= kSharedWindow && addr < kSharedWindow + kSharedWindowSize)
      space = Space::Shared;
    else if (addr >= kParamWindow && addr < kParamWindow + (1u << 20))
      space = Space::Param;
    else
      space = Space::Global;
    if (space == Space::Shared)
      addr -= kSharedWindow;
  }
  actual = space;
  switch (space) {
  case Space::Shared:
  case Space::SharedCluster:
    smemOff = sharedOffset(Space::Shared, addr, size, "ld/st");
    actual = Space::Shared;
    return &smem[smemOff];
  case Space::Param: {
    uint64_t off = addr >= kParamWindow ? addr - kParamWindow : addr;
    if (off + size > params.size())
      fail("parameter access out of range", true);
    return const_cast<uint8_t *>(&params[off]);
  }
  case Space::Global: {
    uint8_t *p = mem.translate(addr, size);
    if (!p)
      fail("global memory access of " + std::to_string(size) + " bytes at " +
               mem.describe(addr),
           true);
    return p;
  }
  default:
    fail("unsupported state space (local/const)");
  }
}

uint64_t Cta::load(Space space, uint64_t addr, unsigned bytes) {
  if (addr % bytes)
    fail("misaligned " + std::to_string(bytes) + "-byte access", true);
  Space actual;
  uint32_t off = 0;
  uint8_t *p = resolve(space, addr, bytes, false, actual, off);
  if (actual == Space::Shared)
    smemRead(off, bytes, atomicAccess ? "atom.shared" : "ld.shared");
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  return v;
}

void Cta::store(Space space, uint64_t addr, unsigned bytes, uint64_t v) {
  if (addr % bytes)
    fail("misaligned " + std::to_string(bytes) + "-byte access", true);
  Space actual;
  uint32_t off = 0;
  uint8_t *p = resolve(space, addr, bytes, true, actual, off);
  if (actual == Space::Param)
    fail("store to kernel parameter space");
  if (actual == Space::Shared) {
    if (mbars.count(off & ~7u))
      fail("generic store over a live mbarrier object");
    smemWriteGeneric(off, bytes, atomicAccess ? "atom.shared" : "st.shared");
  }
  std::memcpy(p, &v, bytes);
}

// ---------------------------------------------------------------- mbarrier

MBar &Cta::mbarAt(uint32_t off, const char *what) {
  auto it = mbars.find(off);
  if (it == mbars.end()) {
    std::ostringstream os;
    os << what << ": no initialised mbarrier at shared 0x" << std::hex << off;
    fail(os.str());
  }
  // Another warp's use must be ordered after the init (a barrier between).
  const MBar &b = it->second;
  unsigned initWarp = threads[size_t(b.initThread)].warp;
  if (cur && checkMbarrierInitOrder && cur->warp != initWarp &&
      clockAt(warpClock[cur->warp], initWarp) < b.initEpoch) {
    std::ostringstream os;
    os << what << " uses mbarrier 0x" << std::hex << off << std::dec
       << " initialised by warp " << initWarp << " lane "
       << threads[size_t(b.initThread)].lane << " at " << instAt(b.initPc)
       << "; nothing orders the init before this use (no barrier between)";
    fail(os.str());
  }
  return it->second;
}

void Cta::mbarCheckComplete(uint32_t off, MBar &b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.doneClock = b.clock;
    // Waiting on the phase orders the waiter after the copies that completed
    // it.
    if (b.doneClock.size() <= b.agent)
      b.doneClock.resize(b.agent + 1u, 0);
    b.doneClock[b.agent] = uint32_t(b.phase);
    b.clock.clear();
    b.pending = b.expected;
    for (Thread &t : threads)
      if (t.st == TState::WaitMbar && t.waitMbar == off)
        t.st = TState::Runnable;
  }
}

void Cta::mbarArrive(uint32_t off, uint32_t count) {
  MBar &b = mbarAt(off, "mbarrier.arrive");
  if (count > b.pending) {
    std::ostringstream os;
    os << "mbarrier.arrive: " << count << " arrival(s) on mbarrier 0x"
       << std::hex << off << std::dec << " with only " << b.pending
       << " pending (expected count " << b.expected << ")";
    fail(os.str());
  }
  b.pending -= count;
  mbarCheckComplete(off, b);
}

void Cta::mbarTx(uint32_t off, int64_t delta) {
  MBar &b = mbarAt(off, "mbarrier tx");
  b.tx += delta;
  if (b.tx > (1 << 20) - 1 || b.tx < -((1 << 20) - 1)) {
    std::ostringstream os;
    os << "mbarrier 0x" << std::hex << off << std::dec << ": tx-count " << b.tx
       << " outside the range +-(2^20-1)";
    fail(os.str());
  }
  mbarCheckComplete(off, b);
}

// Checks that can be switched off with CUDASIM_DISABLE_CHECKS=name,name (for
// bisecting a failure; every check is on by default).
bool checkEnabled(const char *name) {
  static const std::string disabled = [] {
    const char *e = std::getenv("CUDASIM_DISABLE_CHECKS");
    return std::string(",") + (e ? e : "") + ",";
  }();
  return disabled.find(std::string(",") + name + ",") == std::string::npos;
}

void Cta::checkAsyncUse(uint32_t off, const char *what) {
  MBar &b = mbarAt(off, what);
  if (!b.fenced && checkEnabled("mbarrier-init-fence")) {
    std::ostringstream os;
    os << what << " signals mbarrier 0x" << std::hex << off << std::dec
       << " initialised by warp " << threads[b.initThread].warp << " lane "
       << threads[b.initThread].lane << " at " << instAt(b.initPc)
       << ", but that thread executed no fence.mbarrier_init / "
          "fence.proxy.async after the init: "
          "the async proxy may not see the initialised barrier";
    fail(os.str());
  }
}

// ---------------------------------------------------------------- execution

void Cta::checkPending(Thread &t, const Inst &i) {
  for (int r : i.srcRegs)
    if (t.pending[r] == kPendingAccumulator)
      fail("register " + kernel.regNames[r] +
           " is a wgmma accumulator still in flight (read before the "
           "wgmma.wait_group that covers the wgmma.mma_async at " +
           instAt(t.pendingPc[r]) + ")");
  for (int r : i.dstRegs)
    if (t.pending[r])
      fail("register " + kernel.regNames[r] + " is " +
           (t.pending[r] == kPendingAccumulator ? "a wgmma accumulator"
                                                : "the A operand of a wgmma") +
           " still in flight (written before the wgmma.wait_group that "
           "covers the wgmma.mma_async at " +
           instAt(t.pendingPc[r]) + ")");
}

void Cta::failUnwritten(const Thread &, int reg) {
  fail("reads register " + kernel.regNames[reg] +
       ", which no instruction has written (registers start with arbitrary "
       "bits; arithmetic on such a register gives one too)");
}

// Register-to-register computations: they carry a never-written operand into
// their results instead of failing.
bool propagatesUnwritten(Op op) {
  switch (op) {
  case Op::Mov:
  case Op::Cvt:
  case Op::Cvta:
  case Op::Selp:
  case Op::Setp:
  case Op::Set:
  case Op::Prmt:
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Mad:
  case Op::Div:
  case Op::Rem:
  case Op::Abs:
  case Op::Neg:
  case Op::Min:
  case Op::Max:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Not:
  case Op::Cnot:
  case Op::Shl:
  case Op::Shr:
  case Op::Popc:
  case Op::Clz:
  case Op::Brev:
  case Op::Bfe:
  case Op::Bfi:
  case Op::Lop3:
  case Op::Shf:
  case Op::Copysign:
  case Op::Testp:
  case Op::Fma:
  case Op::Rcp:
  case Op::Sqrt:
  case Op::Rsqrt:
  case Op::Ex2:
  case Op::Lg2:
  case Op::Sin:
  case Op::Cos:
  case Op::Tanh:
  case Op::Mapa:
    return true;
  default:
    return false;
  }
}

// A commit_group: the thread's uncommitted async reads join group `group`.
void Cta::commitAsync(std::vector<AsyncGroupEntry> &l, int64_t group) {
  for (AsyncGroupEntry &e : l)
    if (e.group < 0)
      e.group = group;
}

// Retires the async reads of `l` whose group is at most `doneUpTo`: they are
// over once this thread's wait has returned, ordered before what its warp does
// next.
void Cta::retireAsync(Thread &t, std::vector<AsyncGroupEntry> &l,
                      int64_t doneUpTo) {
  for (size_t k = 0; k < l.size();) {
    if (l[k].group >= 0 && l[k].group <= doneUpTo) {
      shadow.retire(l[k].op, t.warp, warpClock[t.warp][t.warp]);
      l[k] = l.back();
      l.pop_back();
    } else {
      ++k;
    }
  }
}

// One instruction of a runnable thread (or its arrival at a collective).
inline void Cta::stepThread(Thread &t) {
  cur = &t;
  const Inst &i = kernel.code[t.pc];
  curInst = &i;
  if (i.guard >= 0) {
    if (checkRegisterInit && !t.r[i.guard].stamp)
      failUnwritten(t, i.guard);
    if ((t.r[i.guard].value != 0) == i.guardNeg) {
      ++t.pc;
      ++t.executed;
      return;
    }
  }
  // Arithmetic on a never-written register computes arbitrary bits, not an
  // error: its results become never-written too (Memcheck's rule for
  // undefined values). Using one is the diagnostic: as an address, a stored
  // value, a predicate, an operand of memory, barrier, async or warp
  // instructions.
  bool unwrittenResult = false;
  if (checkRegisterInit)
    for (int r : i.srcRegs)
      if (r != i.guard && !t.r[r].stamp) {
        if (!propagatesUnwritten(i.op))
          failUnwritten(t, r);
        unwrittenResult = true;
      }
  if (!t.pendingList.empty() && i.op != Op::WgmmaMma)
    checkPending(t, i);
  if (i.collective) {
    t.st = TState::AtCollective;
    return;
  }
  ++t.executed;
  exec(t, i);
  if (unwrittenResult)
    for (int r : i.dstRegs)
      t.r[r].stamp = 0;
}

// Runs the runnable lanes of a warp in lockstep, one instruction per lane per
// step (a converged warp moves together, as on the hardware), for at most
// `quantum` steps. Returns the number of thread-instructions executed.
uint64_t Cta::runWarp(unsigned w, unsigned quantum) {
  unsigned first = w * 32, last = std::min(nthreads, first + 32);
  uint64_t before = 0, after = 0;
  for (unsigned k = first; k < last; ++k)
    before += threads[k].executed;
  for (unsigned q = 0; q < quantum; ++q) {
    bool any = false, atCollective = false;
    for (unsigned k = first; k < last; ++k) {
      if (threads[k].st == TState::Runnable) {
        stepThread(threads[k]);
        any = true;
      }
      atCollective |= threads[k].st == TState::AtCollective;
    }
    // A converged warp at a shuffle or vote completes it at once and goes on.
    if (atCollective && resolveWarpCollectives(w))
      continue;
    if (!any)
      break;
  }
  cur = nullptr;
  for (unsigned k = first; k < last; ++k)
    after += threads[k].executed;
  return after - before;
}

uint64_t applyInt(Op op, Ty ty, uint64_t a, uint64_t b, const Inst &i) {
  unsigned bits = tyBits(ty);
  bool sgn = tyIsSigned(ty);
  switch (op) {
  case Op::Add: {
    if (i.sat && ty == Ty::S32) {
      int64_t r = int64_t(sext(a, 32)) + sext(b, 32);
      r = std::min<int64_t>(std::max<int64_t>(r, INT32_MIN), INT32_MAX);
      return uint64_t(r);
    }
    return a + b;
  }
  case Op::Sub:
    return a - b;
  case Op::And:
    return a & b;
  case Op::Or:
    return a | b;
  case Op::Xor:
    return a ^ b;
  case Op::Min:
    if (sgn)
      return sext(a, bits) < sext(b, bits) ? a : b;
    return maskBits(a, bits) < maskBits(b, bits) ? a : b;
  case Op::Max:
    if (sgn)
      return sext(a, bits) > sext(b, bits) ? a : b;
    return maskBits(a, bits) > maskBits(b, bits) ? a : b;
  case Op::Shl: {
    uint32_t n = uint32_t(b);
    return n >= bits ? 0 : a << n;
  }
  case Op::Shr: {
    uint32_t n = uint32_t(b);
    if (sgn) {
      int64_t v = sext(a, bits);
      return uint64_t(n >= bits ? (v < 0 ? -1 : 0) : v >> n);
    }
    return n >= bits ? 0 : maskBits(a, bits) >> n;
  }
  case Op::Div:
    if (maskBits(b, bits) == 0)
      return ~0ull;
    if (sgn)
      return uint64_t(sext(a, bits) / sext(b, bits));
    return maskBits(a, bits) / maskBits(b, bits);
  case Op::Rem:
    if (maskBits(b, bits) == 0)
      return a;
    if (sgn)
      return uint64_t(sext(a, bits) % sext(b, bits));
    return maskBits(a, bits) % maskBits(b, bits);
  default:
    return 0;
  }
}

bool compareInt(uint8_t cmp, Ty ty, uint64_t a, uint64_t b) {
  unsigned bits = tyBits(ty);
  if (tyIsSigned(ty)) {
    int64_t x = sext(a, bits), y = sext(b, bits);
    switch (cmp) {
    case Eq:
      return x == y;
    case Ne:
      return x != y;
    case Lt:
      return x < y;
    case Le:
      return x <= y;
    case Gt:
      return x > y;
    case Ge:
      return x >= y;
    }
  }
  uint64_t x = maskBits(a, bits), y = maskBits(b, bits);
  switch (cmp) {
  case Eq:
    return x == y;
  case Ne:
    return x != y;
  case Lt:
  case Lo:
    return x < y;
  case Le:
  case Ls:
    return x <= y;
  case Gt:
  case Hi:
    return x > y;
  case Ge:
  case Hs:
    return x >= y;
  }
  return false;
}

bool compareFloat(uint8_t cmp, double x, double y) {
  bool un = std::isnan(x) || std::isnan(y);
  switch (cmp) {
  case Eq:
    return !un && x == y;
  case Ne:
    return !un && x != y;
  case Lt:
    return !un && x < y;
  case Le:
    return !un && x <= y;
  case Gt:
    return !un && x > y;
  case Ge:
    return !un && x >= y;
  case Equ:
    return un || x == y;
  case Neu:
    return un || x != y;
  case Ltu:
    return un || x < y;
  case Leu:
    return un || x <= y;
  case Gtu:
    return un || x > y;
  case Geu:
    return un || x >= y;
  case Num:
    return !un;
  case Nan:
    return un;
  }
  return false;
}

// Unpacks a 16-bit float (f16 or bf16 in the low bits) or a packed pair.
float lo16(uint64_t v, bool bf) {
  return bf ? bf16ToFloat(uint16_t(v)) : halfToFloat(uint16_t(v));
}
uint16_t to16(float f, bool bf, int rounding = 0) {
  return bf ? floatToBf16(f, toRounding(rounding))
            : floatToHalf(f, toRounding(rounding));
}

float fminPtx(float a, float b, bool nanProp) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nanProp)
      return NAN;
    return std::isnan(a) ? b : a;
  }
  if (a == 0 && b == 0)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
float fmaxPtx(float a, float b, bool nanProp) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nanProp)
      return NAN;
    return std::isnan(a) ? b : a;
  }
  if (a == 0 && b == 0)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// One f32 arithmetic op with rounding, ftz and sat.
float floatOp(const Inst &i, Op op, float a, float b, float c) {
  if (i.ftz) {
    a = ftz(a);
    b = ftz(b);
    c = ftz(c);
  }
  float r;
  int mode = i.rounding & 3;
  int saved = 0;
  if (mode) {
    saved = std::fegetround();
    std::fesetround(mode == 1   ? FE_TOWARDZERO
                    : mode == 2 ? FE_DOWNWARD
                                : FE_UPWARD);
  }
  volatile float va = a, vb = b, vc = c;
  switch (op) {
  case Op::Add:
    r = va + vb;
    break;
  case Op::Sub:
    r = va - vb;
    break;
  case Op::Mul:
    r = va * vb;
    break;
  case Op::Fma:
    r = std::fma(float(va), float(vb), float(vc));
    break;
  case Op::Div:
    r = i.approx ? float(double(va) / double(vb)) : va / vb;
    break;
  case Op::Min:
    r = fminPtx(a, b, i.mode == 1);
    break;
  case Op::Max:
    r = fmaxPtx(a, b, i.mode == 1);
    break;
  default:
    r = 0;
  }
  if (mode)
    std::fesetround(saved);
  if (i.sat)
    r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
  if (i.ftz)
    r = ftz(r);
  return r;
}

void Cta::exec(Thread &t, const Inst &i) {
  const auto &o = i.ops;
  Ty ty = i.type;
  unsigned bits = tyBits(ty);
  switch (i.op) {
  case Op::Mov: {
    if (o[0].kind == Operand::Vec) { // unpack: mov.b64 {a,b}, x
      uint64_t v = read(o[1], t, ty);
      unsigned n = unsigned(o[0].elems.size()), w = bits / n;
      for (unsigned k = 0; k < n; ++k)
        write(o[0].elems[k], t, maskBits(v >> (k * w), w), Ty::B64);
    } else if (o[1].kind == Operand::Vec) { // pack
      unsigned n = unsigned(o[1].elems.size()), w = bits / n;
      uint64_t v = 0;
      for (unsigned k = 0; k < n; ++k)
        v |= maskBits(read(o[1].elems[k], t, ty), w) << (k * w);
      write(o[0], t, v, ty);
    } else {
      write(o[0], t, read(o[1], t, ty), ty);
    }
    ++t.pc;
    return;
  }
  case Op::Ld: {
    uint64_t addr = address(o[1], t);
    unsigned bytes = std::max(1u, bits / 8);
    if (o[0].kind == Operand::Vec) {
      for (size_t k = 0; k < o[0].elems.size(); ++k) {
        if (k == 0 && addr % (bytes * o[0].elems.size()))
          fail("misaligned vector load", true);
        uint64_t v = load(i.space, addr + k * bytes, bytes);
        if (tyIsSigned(ty))
          v = uint64_t(sext(v, bits));
        write(o[0].elems[k], t, v,
              bits < 32 && !tyIsSigned(ty) ? Ty::B64 : Ty::B64);
      }
    } else {
      uint64_t v = load(i.space, addr, bytes);
      if (tyIsSigned(ty))
        v = uint64_t(sext(v, bits));
      write(o[0], t, v, Ty::B64);
    }
    ++t.pc;
    return;
  }
  case Op::St: {
    uint64_t addr = address(o[0], t);
    unsigned bytes = std::max(1u, bits / 8);
    if (o[1].kind == Operand::Vec) {
      if (addr % (bytes * o[1].elems.size()))
        fail("misaligned vector store", true);
      for (size_t k = 0; k < o[1].elems.size(); ++k)
        store(i.space, addr + k * bytes, bytes, read(o[1].elems[k], t, ty));
    } else {
      store(i.space, addr, bytes, read(o[1], t, ty));
    }
    ++t.pc;
    return;
  }
  case Op::Cvt:
    execCvt(t, i);
    ++t.pc;
    return;
  case Op::Cvta: {
    uint64_t a = read(o[1], t, Ty::U64);
    bool shared = i.space == Space::Shared || i.space == Space::SharedCluster;
    if (shared)
      a = i.mode ? a - kSharedWindow : a + kSharedWindow;
    if (shared && i.mode && a >= kSharedWindowSize)
      fail("cvta.to.shared of an address outside the shared window", true);
    write(o[0], t, a, ty);
    ++t.pc;
    return;
  }
  case Op::Selp:
    write(o[0], t,
          read(o[3], t, Ty::Pred) ? read(o[1], t, ty) : read(o[2], t, ty), ty);
    ++t.pc;
    return;
  case Op::Setp:
  case Op::Set: {
    Ty st = i.op == Op::Setp ? ty : i.type;
    bool r;
    if (st == Ty::F32)
      r = compareFloat(i.cmp, i.ftz ? ftz(readF(o[1], t)) : readF(o[1], t),
                       i.ftz ? ftz(readF(o[2], t)) : readF(o[2], t));
    else if (st == Ty::F64)
      r = compareFloat(i.cmp, readD(o[1], t), readD(o[2], t));
    else if (st == Ty::F16 || st == Ty::BF16)
      r = compareFloat(i.cmp, lo16(read(o[1], t, st), st == Ty::BF16),
                       lo16(read(o[2], t, st), st == Ty::BF16));
    else
      r = compareInt(i.cmp, st, read(o[1], t, st), read(o[2], t, st));
    bool q = !r;
    if (i.boolOp) {
      bool c = read(o[3], t, Ty::Pred) != 0;
      auto comb = [&](bool x) {
        return i.boolOp == 1 ? x && c : i.boolOp == 2 ? x || c : x != c;
      };
      r = comb(r);
      q = comb(q);
    }
    if (i.op == Op::Set) {
      uint64_t v =
          i.type2 == Ty::F32 ? (r ? fromF(1.0f) : 0) : (r ? 0xFFFFFFFFull : 0);
      write(o[0], t, v, i.type2);
    } else if (o[0].kind == Operand::Vec) {
      write(o[0].elems[0], t, r, Ty::Pred);
      write(o[0].elems[1], t, q, Ty::Pred);
    } else {
      write(o[0], t, r, Ty::Pred);
    }
    ++t.pc;
    return;
  }
  case Op::Prmt: {
    uint32_t a = uint32_t(read(o[1], t, ty)), b = uint32_t(read(o[2], t, ty)),
             c = uint32_t(read(o[3], t, ty));
    uint64_t bytes = uint64_t(a) | (uint64_t(b) << 32);
    uint32_t d = 0;
    for (int k = 0; k < 4; ++k) {
      unsigned sel = (c >> (4 * k)) & 0xF;
      uint32_t byte = (bytes >> (8 * (sel & 7))) & 0xFF;
      if (sel & 8)
        byte = (byte & 0x80) ? 0xFF : 0;
      d |= byte << (8 * k);
    }
    write(o[0], t, d, Ty::B32);
    ++t.pc;
    return;
  }
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Min:
  case Op::Max:
  case Op::Rem:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Shl:
  case Op::Shr: {
    if (ty == Ty::F32) {
      write(o[0], t, fromF(floatOp(i, i.op, readF(o[1], t), readF(o[2], t), 0)),
            ty);
    } else if (ty == Ty::F64) {
      double a = readD(o[1], t), b = readD(o[2], t), r;
      switch (i.op) {
      case Op::Add:
        r = a + b;
        break;
      case Op::Sub:
        r = a - b;
        break;
      case Op::Mul:
        r = a * b;
        break;
      case Op::Div:
        r = a / b;
        break;
      case Op::Min:
        r = std::fmin(a, b);
        break;
      case Op::Max:
        r = std::fmax(a, b);
        break;
      default:
        fail("unsupported f64 operation");
      }
      write(o[0], t, fromD(r), ty);
    } else if (ty == Ty::F16 || ty == Ty::BF16 || ty == Ty::F16x2 ||
               ty == Ty::BF16x2) {
      bool bf = ty == Ty::BF16 || ty == Ty::BF16x2;
      unsigned lanes = (ty == Ty::F16x2 || ty == Ty::BF16x2) ? 2 : 1;
      uint64_t a = read(o[1], t, ty), b = read(o[2], t, ty), d = 0;
      for (unsigned k = 0; k < lanes; ++k) {
        Inst f = i;
        f.rounding = 0;
        float r = floatOp(f, i.op, lo16(a >> (16 * k), bf),
                          lo16(b >> (16 * k), bf), 0);
        d |= uint64_t(to16(r, bf)) << (16 * k);
      }
      write(o[0], t, d, lanes == 2 ? Ty::B32 : Ty::B16);
    } else if (i.op == Op::Mul) {
      uint64_t a = read(o[1], t, ty), b = read(o[2], t, ty);
      if (i.wide) {
        uint64_t r = tyIsSigned(ty) ? uint64_t(sext(a, bits) * sext(b, bits))
                                    : maskBits(a, bits) * maskBits(b, bits);
        write(o[0], t, r, bits == 32 ? Ty::B64 : Ty::B32);
      } else if (i.hi) {
        unsigned __int128 p;
        if (tyIsSigned(ty))
          p = (unsigned __int128)((__int128)sext(a, bits) *
                                  (__int128)sext(b, bits));
        else
          p = (unsigned __int128)maskBits(a, bits) * maskBits(b, bits);
        write(o[0], t, uint64_t(p >> bits), ty);
      } else {
        write(o[0], t, a * b, ty);
      }
    } else {
      if (i.cc)
        fail("carry (.cc) arithmetic is not supported");
      uint64_t r = applyInt(i.op, ty, read(o[1], t, ty), read(o[2], t, ty), i);
      if (i.relu &&
          sext(r, bits) < 0) // min/max.relu: clamp negative results to 0
        r = 0;
      write(o[0], t, r, ty);
    }
    ++t.pc;
    return;
  }
  case Op::Mad: {
    uint64_t a = read(o[1], t, ty), b = read(o[2], t, ty);
    if (i.wide) {
      uint64_t c = read(o[3], t, bits == 32 ? Ty::B64 : Ty::B32);
      uint64_t r = tyIsSigned(ty) ? uint64_t(sext(a, bits) * sext(b, bits))
                                  : maskBits(a, bits) * maskBits(b, bits);
      write(o[0], t, r + c, bits == 32 ? Ty::B64 : Ty::B32);
    } else if (i.hi) {
      unsigned __int128 p;
      if (tyIsSigned(ty))
        p = (unsigned __int128)((__int128)sext(a, bits) *
                                (__int128)sext(b, bits));
      else
        p = (unsigned __int128)maskBits(a, bits) * maskBits(b, bits);
      write(o[0], t, uint64_t(p >> bits) + read(o[3], t, ty), ty);
    } else {
      write(o[0], t, a * b + read(o[3], t, ty), ty);
    }
    ++t.pc;
    return;
  }
  case Op::Fma: {
    if (ty == Ty::F32) {
      write(o[0], t,
            fromF(floatOp(i, Op::Fma, readF(o[1], t), readF(o[2], t),
                          readF(o[3], t))),
            ty);
    } else if (ty == Ty::F64) {
      write(o[0], t,
            fromD(std::fma(readD(o[1], t), readD(o[2], t), readD(o[3], t))),
            ty);
    } else if (ty == Ty::F16 || ty == Ty::BF16 || ty == Ty::F16x2 ||
               ty == Ty::BF16x2) {
      bool bf = ty == Ty::BF16 || ty == Ty::BF16x2;
      unsigned lanes = (ty == Ty::F16x2 || ty == Ty::BF16x2) ? 2 : 1;
      uint64_t a = read(o[1], t, ty), b = read(o[2], t, ty),
               c = read(o[3], t, ty), d = 0;
      for (unsigned k = 0; k < lanes; ++k) {
        double r = double(lo16(a >> (16 * k), bf)) * lo16(b >> (16 * k), bf) +
                   lo16(c >> (16 * k), bf);
        float rf = float(r);
        if (i.sat)
          rf = std::isnan(rf) ? 0.0f : std::min(1.0f, std::max(0.0f, rf));
        d |= uint64_t(to16(rf, bf)) << (16 * k);
      }
      write(o[0], t, d, lanes == 2 ? Ty::B32 : Ty::B16);
    } else {
      fail("fma on an unsupported type");
    }
    ++t.pc;
    return;
  }
  case Op::Abs:
  case Op::Neg:
  case Op::Not:
  case Op::Cnot:
  case Op::Popc:
  case Op::Clz:
  case Op::Brev: {
    uint64_t a = read(o[1], t, ty), r = 0;
    if (ty == Ty::F32 && i.op == Op::Abs)
      r = a & 0x7FFFFFFFu;
    else if (ty == Ty::F32 && i.op == Op::Neg)
      r = a ^ 0x80000000u;
    else if (ty == Ty::F64 && i.op == Op::Abs)
      r = a & ~(1ull << 63);
    else if (ty == Ty::F64 && i.op == Op::Neg)
      r = a ^ (1ull << 63);
    else if ((ty == Ty::BF16 || ty == Ty::F16) && i.op == Op::Neg)
      r = a ^ 0x8000u;
    else if ((ty == Ty::BF16 || ty == Ty::F16) && i.op == Op::Abs)
      r = a & 0x7FFFu;
    else if ((ty == Ty::BF16x2 || ty == Ty::F16x2) && i.op == Op::Neg)
      r = a ^ 0x80008000u;
    else if ((ty == Ty::BF16x2 || ty == Ty::F16x2) && i.op == Op::Abs)
      r = a & 0x7FFF7FFFu;
    else {
      switch (i.op) {
      case Op::Abs: {
        int64_t v = sext(a, bits);
        r = uint64_t(v < 0 ? -v : v);
        break;
      }
      case Op::Neg:
        r = uint64_t(-int64_t(a));
        break;
      case Op::Not:
        r = ty == Ty::Pred ? !a : ~a;
        break;
      case Op::Cnot:
        r = maskBits(a, bits) == 0;
        break;
      case Op::Popc:
        r = __builtin_popcountll(maskBits(a, bits));
        break;
      case Op::Clz: {
        uint64_t v = maskBits(a, bits);
        r = v ? __builtin_clzll(v) - (64 - bits) : bits;
        break;
      }
      case Op::Brev: {
        uint64_t v = 0;
        for (unsigned k = 0; k < bits; ++k)
          if (a >> k & 1)
            v |= 1ull << (bits - 1 - k);
        r = v;
        break;
      }
      default:
        break;
      }
    }
    Ty dt = (i.op == Op::Popc || i.op == Op::Clz) ? Ty::U32 : ty;
    write(o[0], t, r, dt);
    ++t.pc;
    return;
  }
  case Op::Bfe: {
    uint64_t a = read(o[1], t, ty);
    unsigned pos = unsigned(read(o[2], t, Ty::U32) & 0xFF),
             len = unsigned(read(o[3], t, Ty::U32) & 0xFF);
    uint64_t r = 0;
    bool sgn = tyIsSigned(ty);
    unsigned msbPos = std::min(pos + len - 1, bits - 1);
    bool sbit = sgn ? (len == 0 ? false : (a >> msbPos) & 1) : false;
    for (unsigned k = 0; k < bits; ++k) {
      bool bit = (k < len && pos + k < bits) ? (a >> (pos + k)) & 1 : sbit;
      if (bit)
        r |= 1ull << k;
    }
    write(o[0], t, r, ty);
    ++t.pc;
    return;
  }
  case Op::Bfi: {
    uint64_t a = read(o[1], t, ty), b = read(o[2], t, ty);
    unsigned pos = unsigned(read(o[3], t, Ty::U32) & 0xFF),
             len = unsigned(read(o[4], t, Ty::U32) & 0xFF);
    uint64_t r = b;
    for (unsigned k = 0; k < len && pos + k < bits; ++k) {
      uint64_t m = 1ull << (pos + k);
      r = (a >> k & 1) ? (r | m) : (r & ~m);
    }
    write(o[0], t, r, ty);
    ++t.pc;
    return;
  }
  case Op::Lop3: {
    uint64_t a = read(o[1], t, ty), b = read(o[2], t, ty),
             c = read(o[3], t, ty);
    unsigned lut = unsigned(read(o[4], t, Ty::U32));
    uint64_t r = 0;
    for (unsigned k = 0; k < bits; ++k) {
      unsigned idx = ((a >> k & 1) << 2) | ((b >> k & 1) << 1) | (c >> k & 1);
      if (lut >> idx & 1)
        r |= 1ull << k;
    }
    write(o[0], t, r, ty);
    ++t.pc;
    return;
  }
  case Op::Shf: {
    uint32_t a = uint32_t(read(o[1], t, Ty::B32)),
             b = uint32_t(read(o[2], t, Ty::B32));
    uint32_t c = uint32_t(read(o[3], t, Ty::U32));
    uint32_t n = (i.mode & 2) ? (c & 31) : std::min<uint32_t>(c, 32);
    uint64_t v = (uint64_t(b) << 32) | a;
    uint32_t r = (i.mode & 1) ? uint32_t(v >> n) : uint32_t((v << n) >> 32);
    write(o[0], t, r, Ty::B32);
    ++t.pc;
    return;
  }
  case Op::Copysign: {
    if (ty == Ty::F32) {
      write(o[0], t, fromF(std::copysign(readF(o[2], t), readF(o[1], t))), ty);
    } else {
      write(o[0], t, fromD(std::copysign(readD(o[2], t), readD(o[1], t))), ty);
    }
    ++t.pc;
    return;
  }
  case Op::Testp: {
    double v = ty == Ty::F32 ? readF(o[1], t) : readD(o[1], t);
    bool r = false;
    switch (i.mode) {
    case 0:
      r = std::isfinite(v);
      break;
    case 1:
      r = std::isinf(v);
      break;
    case 2:
      r = !std::isnan(v);
      break;
    case 3:
      r = std::isnan(v);
      break;
    case 4:
      r = std::isnormal(ty == Ty::F32 ? float(v) : v);
      break;
    case 5:
      r = std::fpclassify(ty == Ty::F32 ? float(v) : v) == FP_SUBNORMAL;
      break;
    }
    write(o[0], t, r, Ty::Pred);
    ++t.pc;
    return;
  }
  case Op::Rcp:
  case Op::Sqrt:
  case Op::Rsqrt:
  case Op::Ex2:
  case Op::Lg2:
  case Op::Sin:
  case Op::Cos:
  case Op::Tanh: {
    if (ty == Ty::F64) {
      double a = readD(o[1], t), r = 0;
      switch (i.op) {
      case Op::Rcp:
        r = 1.0 / a;
        break;
      case Op::Sqrt:
        r = std::sqrt(a);
        break;
      case Op::Rsqrt:
        r = 1.0 / std::sqrt(a);
        break;
      default:
        fail("unsupported f64 transcendental");
      }
      write(o[0], t, fromD(r), ty);
      ++t.pc;
      return;
    }
    if (ty != Ty::F32)
      fail(std::string("unsupported type .") + tyName(ty) +
           " for this instruction");
    float a = readF(o[1], t);
    if (i.ftz)
      a = ftz(a);
    double d = a, r = 0;
    switch (i.op) {
    case Op::Rcp:
      r = 1.0 / d;
      break;
    case Op::Sqrt:
      r = std::sqrt(d);
      break;
    case Op::Rsqrt:
      r = 1.0 / std::sqrt(d);
      break;
    case Op::Ex2:
      r = std::exp2(d);
      break;
    case Op::Lg2:
      r = std::log2(d);
      break;
    case Op::Sin:
      r = std::sin(d);
      break;
    case Op::Cos:
      r = std::cos(d);
      break;
    case Op::Tanh:
      r = std::tanh(d);
      break;
    default:
      break;
    }
    // Correctly rounded (.rn) results; the .approx forms are within their
    // stated error of these.
    float f = roundToFloat(r, i.approx ? 0 : i.rounding & 3);
    if (i.ftz)
      f = ftz(f);
    write(o[0], t, fromF(f), ty);
    ++t.pc;
    return;
  }
  case Op::Bra:
    t.pc = int(o[0].imm);
    return;
  case Op::Ret:
  case Op::Exit:
    if (!t.pendingList.empty() || !t.wgmmaReads.empty())
      fail("thread exits with a wgmma still in flight (no wgmma.wait_group "
           "retires the wgmma.mma_async at " +
           instAt(t.wgmmaReads.empty()
                      ? t.pendingPc[size_t(t.pendingList.front())]
                      : shadow.asyncOp(t.wgmmaReads.front().op).issue.pc) +
           ")");
    if (!t.bulkReads.empty()) {
      const AsyncGroupEntry &e = t.bulkReads.front();
      fail("thread exits while the bulk store at " +
           instAt(shadow.asyncOp(e.op).issue.pc) +
           " may still read shared memory (" +
           (e.group < 0 ? "never committed: no cp.async.bulk.commit_group"
                        : "no cp.async.bulk.wait_group.read retires its "
                          "group") +
           ")");
    }
    t.st = TState::Exited;
    checkBarriers();
    return;
  case Op::Trap:
    fail("trap executed");
  case Op::BarSync:
  case Op::BarArrive: {
    unsigned id = o.empty() ? 0 : unsigned(read(o[0], t, Ty::U32));
    unsigned count = o.size() > 1 ? unsigned(read(o[1], t, Ty::U32)) : 0;
    if (id >= 16)
      fail("barrier id " + std::to_string(id) + " out of range (0-15)");
    if (o.size() > 1 && (count == 0 || count % 32))
      fail("barrier thread count " + std::to_string(count) +
           " is not a positive multiple of 32");
    ++t.pc;
    barrierArrive(t, id, count, i.op == Op::BarSync);
    return;
  }
  case Op::Fence:
  case Op::Membar:
  case Op::Prefetch:
  case Op::Nanosleep:
    ++t.pc;
    return;
  case Op::WgmmaFence:
    ++t.wgmmaFences;
    ++t.pc;
    return;
  case Op::FenceProxyAsync:
  case Op::FenceMbarrierInit: {
    // fence.proxy.async.global does not order shared memory.
    if (i.op == Op::FenceProxyAsync && i.mode == 0)
      t.proxyFences.push_back({warpClock[t.warp][t.warp], t.pc});
    unsigned idx = unsigned(&t - threads.data());
    for (auto &kv : mbars)
      if (kv.second.initThread == int(idx))
        kv.second.fenced = true;
    ++t.pc;
    return;
  }
  case Op::PrefetchTensormap: {
    TensorMap m;
    tensorMapAddr(o[0], t, m);
    ++t.pc;
    return;
  }
  case Op::MbarInit: {
    uint32_t off = sharedOffset(i.space, address(o[0], t), 8, "mbarrier.init");
    if (off % 8)
      fail("mbarrier object not 8-byte aligned");
    uint32_t count = uint32_t(read(o[1], t, Ty::U32));
    if (count < 1 || count > (1u << 20) - 1)
      fail("mbarrier.init count " + std::to_string(count) +
           " outside [1, 2^20-1]");
    auto old = mbars.find(off);
    if (old != mbars.end()) {
      const MBar &o = old->second;
      bool untouched = o.phase == 0 && o.tx == 0 && o.pending == o.expected &&
                       o.expected == count;
      if (!untouched) {
        std::ostringstream os;
        os << "mbarrier.init of the mbarrier at 0x" << std::hex << off
           << std::dec << ", which is in use (phase " << o.phase << ", "
           << o.pending << " of " << o.expected
           << " arrivals pending, tx-count " << o.tx << ")";
        fail(os.str());
      }
    }
    MBar b;
    b.expected = b.pending = count;
    b.initThread = int(&t - threads.data());
    b.initPc = t.pc;
    b.initEpoch = warpClock[t.warp][t.warp];
    auto agent = mbarAgents.find(off);
    if (agent == mbarAgents.end())
      agent =
          mbarAgents.emplace(off, uint16_t(nwarps + mbarAgents.size())).first;
    b.agent = agent->second;
    mbars[off] = b;
    std::memset(&written[off], 1, 8);
    ++t.pc;
    return;
  }
  case Op::MbarInval: {
    uint32_t off = sharedOffset(i.space, address(o[0], t), 8, "mbarrier.inval");
    mbars.erase(off);
    ++t.pc;
    return;
  }
  case Op::MbarArrive:
  case Op::MbarArriveDrop: {
    uint32_t off =
        sharedOffset(i.space, address(o[1], t), 8, "mbarrier.arrive");
    MBar &b = mbarAt(off, "mbarrier.arrive");
    uint32_t count = 1;
    uint64_t token = b.phase;
    if (i.mode == 1) { // expect_tx
      uint64_t tx = read(o[2], t, Ty::U32);
      b.tx += int64_t(tx);
    } else if (o.size() > 2) {
      count = uint32_t(read(o[2], t, Ty::U32));
    }
    if (i.op == Op::MbarArriveDrop) {
      if (b.expected < count)
        fail("mbarrier.arrive_drop below zero expected arrivals");
      b.expected -= count;
    }
    write(o[0], t, token, Ty::B64);
    join(b.clock, warpClock[t.warp]);
    ++warpClock[t.warp][t.warp];
    ++t.pc;
    mbarArrive(off, count);
    return;
  }
  case Op::MbarExpectTx:
  case Op::MbarCompleteTx: {
    uint32_t off =
        sharedOffset(i.space, address(o[0], t), 8, "mbarrier.expect_tx");
    int64_t tx = int64_t(read(o[1], t, Ty::U32));
    ++t.pc;
    mbarTx(off, i.op == Op::MbarExpectTx ? tx : -tx);
    return;
  }
  case Op::MbarTestWait:
  case Op::MbarTryWait: {
    uint32_t off =
        sharedOffset(i.space, address(o[1], t), 8, "mbarrier.try_wait");
    MBar &b = mbarAt(off, "mbarrier.try_wait");
    uint64_t arg = read(o[2], t, Ty::B64);
    bool done;
    if (i.parity) {
      if (arg > 1)
        fail("mbarrier wait parity " + std::to_string(arg) + " is not 0 or 1");
      // Phase with parity `arg` complete <=> the current phase's parity differs
      // from it.
      done = (b.phase & 1) != (arg & 1);
    } else {
      done = b.phase != arg;
    }
    write(o[0], t, done, Ty::Pred);
    if (done)
      join(warpClock[t.warp], b.doneClock);
    if (!done) {
      // The thread would spin; park it until this mbarrier completes a phase.
      t.st = TState::WaitMbar;
      t.waitMbar = off;
      return; // re-executes the wait when woken
    }
    ++t.pc;
    return;
  }
  case Op::CpBulkTensorLoad:
  case Op::CpBulkTensorStore:
    execTensorCopy(t, i);
    ++t.pc;
    return;
  case Op::CpBulkLoad:
  case Op::CpBulkStore:
    execBulkCopy(t, i);
    ++t.pc;
    return;
  // Bulk stores write global memory when issued; their reads of shared memory
  // last until a wait_group retires their group.
  case Op::CpBulkCommit:
    commitAsync(t.bulkReads, ++t.bulkGroups);
    ++t.pc;
    return;
  case Op::CpBulkWait:
    retireAsync(t, t.bulkReads, t.bulkGroups - int64_t(read(o[0], t, Ty::U32)));
    ++t.pc;
    return;
  case Op::WgmmaCommit: {
    ++t.wgmmaGroups;
    for (int r : t.pendingList)
      if (t.pendingGroup[r] < 0)
        t.pendingGroup[r] = t.wgmmaGroups;
    commitAsync(t.wgmmaReads, t.wgmmaGroups);
    ++t.pc;
    return;
  }
  case Op::WgmmaWait: {
    int64_t doneUpTo = t.wgmmaGroups - int64_t(read(o[0], t, Ty::U32));
    auto &l = t.pendingList;
    for (size_t k = 0; k < l.size();) {
      int64_t g = t.pendingGroup[l[k]];
      if (g >= 0 && g <= doneUpTo) {
        t.pending[l[k]] = kNotPending;
        l[k] = l.back();
        l.pop_back();
      } else {
        ++k;
      }
    }
    retireAsync(t, t.wgmmaReads, doneUpTo);
    ++t.pc;
    return;
  }
  case Op::Atom:
  case Op::Red: {
    const Operand &ao = i.op == Op::Atom ? o[1] : o[0];
    size_t vi = i.op == Op::Atom ? 2 : 1;
    uint64_t addr = address(ao, t);
    unsigned bytes = std::max(1u, bits / 8);
    atomicAccess = true;
    uint64_t old = load(i.space, addr, bytes), b = read(o[vi], t, ty), nv = old;
    switch (i.mode) {
    case 0: // add
      if (ty == Ty::F32)
        nv = fromF(asF(old) + asF(b));
      else if (ty == Ty::F64)
        nv = fromD(asD(old) + asD(b));
      else
        nv = old + b;
      break;
    case 1:
      nv = ty == Ty::F32 ? fromF(fminPtx(asF(old), asF(b), false))
                         : applyInt(Op::Min, ty, old, b, i);
      break;
    case 2:
      nv = ty == Ty::F32 ? fromF(fmaxPtx(asF(old), asF(b), false))
                         : applyInt(Op::Max, ty, old, b, i);
      break;
    case 3:
      nv = b;
      break;
    case 4:
      nv = maskBits(old, bits) == maskBits(b, bits) ? read(o[vi + 1], t, ty)
                                                    : old;
      break;
    case 5:
      nv = old & b;
      break;
    case 6:
      nv = old | b;
      break;
    case 7:
      nv = old ^ b;
      break;
    case 8:
      nv = maskBits(old, bits) >= maskBits(b, bits) ? 0 : old + 1;
      break;
    case 9:
      nv = (maskBits(old, bits) == 0 || maskBits(old, bits) > maskBits(b, bits))
               ? b
               : old - 1;
      break;
    }
    store(i.space, addr, bytes, maskBits(nv, bits));
    atomicAccess = false;
    if (i.op == Op::Atom)
      write(o[0], t, old, ty);
    ++t.pc;
    return;
  }
  case Op::Mapa: {
    // Every cluster is one CTA (rank 0), whose shared::cta window is where
    // the shared::cluster window maps it: rank 0 maps an address to itself.
    uint64_t a = read(o[1], t, ty);
    uint32_t rank = uint32_t(read(o[2], t, Ty::U32));
    if (rank != 0)
      fail("mapa to CTA rank " + std::to_string(rank) +
           " of a cluster of one CTA");
    write(o[0], t, a, ty);
    ++t.pc;
    return;
  }
  default:
    fail("instruction not implemented by the emulator: " + i.text);
  }
}

void Cta::execCvt(Thread &t, const Inst &i) {
  const auto &o = i.ops;
  Ty dt = i.type, st = i.type2;
  if ((dt == Ty::BF16x2 || dt == Ty::F16x2) && o.size() == 3) {
    bool bf = dt == Ty::BF16x2;
    float a = readF(o[1], t), b = readF(o[2], t);
    if (i.sat) {
      a = std::isnan(a) ? 0.0f : std::min(1.0f, std::max(0.0f, a));
      b = std::isnan(b) ? 0.0f : std::min(1.0f, std::max(0.0f, b));
    }
    uint32_t d =
        (uint32_t(to16(a, bf, i.rounding)) << 16) | to16(b, bf, i.rounding);
    write(o[0], t, d, Ty::B32);
    return;
  }
  uint64_t raw = read(o[1], t, st);
  bool srcFloat = tyIsFloat(st), dstFloat = tyIsFloat(dt);
  unsigned sb = tyBits(st), db = tyBits(dt);
  if (!srcFloat && !dstFloat) {
    int64_t sv = tyIsSigned(st) ? sext(raw, sb) : int64_t(maskBits(raw, sb));
    uint64_t r = uint64_t(sv);
    if (i.sat) {
      long double lo = tyIsSigned(dt) ? -std::ldexp(1.0L, db - 1) : 0;
      long double hi = tyIsSigned(dt) ? std::ldexp(1.0L, db - 1) - 1
                                      : std::ldexp(1.0L, db) - 1;
      long double v =
          tyIsSigned(st) ? (long double)sv : (long double)maskBits(raw, sb);
      v = std::min(hi, std::max(lo, v));
      r = tyIsSigned(dt) ? uint64_t(int64_t(v)) : uint64_t(v);
    }
    if (tyIsSigned(dt) && db < 64)
      r = uint64_t(sext(r, db));
    write(o[0], t, r,
          dt == Ty::S64 || dt == Ty::U64 || dt == Ty::B64
              ? dt
              : (db ? dt : Ty::B64));
    return;
  }
  // Source value as long double.
  long double v;
  if (srcFloat) {
    switch (st) {
    case Ty::F32:
      v = asF(raw);
      if (i.ftz)
        v = ftz(float(v));
      break;
    case Ty::F64:
      v = asD(raw);
      break;
    case Ty::F16:
      v = halfToFloat(uint16_t(raw));
      break;
    case Ty::BF16:
      v = bf16ToFloat(uint16_t(raw));
      break;
    default:
      fail("cvt from an unsupported type");
    }
  } else {
    v = tyIsSigned(st) ? (long double)sext(raw, sb)
                       : (long double)maskBits(raw, sb);
  }
  if (dstFloat) {
    bool intRound = i.rounding >= 4;
    if (intRound) { // round to an integral value in the same format
      int m = i.rounding & 3;
      v = m == 0   ? std::nearbyint(v)
          : m == 1 ? std::trunc(v)
          : m == 2 ? std::floor(v)
                   : std::ceil(v);
    }
    int fm = intRound ? 0 : (i.rounding & 3);
    uint64_t r;
    switch (dt) {
    case Ty::F32: {
      float f = roundToFloat(v, fm);
      if (i.sat)
        f = std::isnan(f) ? 0.0f : std::min(1.0f, std::max(0.0f, f));
      if (i.ftz)
        f = ftz(f);
      r = fromF(f);
      break;
    }
    case Ty::F64: {
      double d = double(v);
      if (i.sat)
        d = std::isnan(d) ? 0.0 : std::min(1.0, std::max(0.0, d));
      r = fromD(d);
      break;
    }
    case Ty::F16:
    case Ty::BF16: {
      // f64 sources are first rounded to f32 (exact for every value cvt.f16.f64
      // can produce except double-rounding corner cases, which no kernel here
      // uses).
      float f = roundToFloat(v, fm);
      if (i.sat)
        f = std::isnan(f) ? 0.0f : std::min(1.0f, std::max(0.0f, f));
      r = to16(f, dt == Ty::BF16, fm);
      break;
    }
    default:
      fail("cvt to an unsupported type");
    }
    write(o[0], t, r, dt);
    return;
  }
  // float -> integer: rounding required, saturating, NaN -> 0.
  int m = i.rounding & 3;
  if (std::isnan(v)) {
    write(o[0], t, 0, dt);
    return;
  }
  v = m == 0   ? std::nearbyint(v)
      : m == 1 ? std::trunc(v)
      : m == 2 ? std::floor(v)
               : std::ceil(v);
  long double lo = tyIsSigned(dt) ? -std::ldexp(1.0L, db - 1) : 0;
  long double hi =
      tyIsSigned(dt) ? std::ldexp(1.0L, db - 1) - 1 : std::ldexp(1.0L, db) - 1;
  v = std::min(hi, std::max(lo, v));
  uint64_t r = tyIsSigned(dt) ? uint64_t((long long)v) : (unsigned long long)v;
  write(o[0], t, r, dt);
}

uint64_t Cta::tensorMapAddr(const Operand &o, const Thread &t, TensorMap &map) {
  uint64_t addr = address(o, t);
  const uint8_t *p;
  if (addr >= kParamWindow && addr < kParamWindow + (1u << 20)) {
    uint64_t off = addr - kParamWindow;
    if (off + 128 > params.size())
      fail("tensor map address outside the kernel parameters", true);
    p = &params[off];
  } else {
    p = mem.translate(addr, 128);
    if (!p)
      fail("tensor map at " + mem.describe(addr) +
               " is not in parameter or global memory",
           true);
  }
  if (addr % 64)
    fail("tensor map address not 64-byte aligned");
  if (!decodeTensorMap(p, map))
    fail("the tensor map operand does not hold a CUtensorMap encoded by "
         "cuTensorMapEncodeTiled");
  return addr;
}

void Cta::execTensorCopy(Thread &t, const Inst &i) {
  const auto &o = i.ops;
  bool load = i.op == Op::CpBulkTensorLoad;
  const Operand &smemOp = load ? o[0] : o[1];
  const Operand &tmOp = load ? o[1] : o[0];
  if (tmOp.kind != Operand::Addr || tmOp.elems.size() != 1 ||
      tmOp.elems[0].kind != Operand::Vec)
    fail("tensor copy: expected [tensorMap, {coordinates}]");
  TensorMap m;
  tensorMapAddr(tmOp, t, m);
  unsigned dims = i.mode;
  if (m.rank != dims)
    fail("tensor copy ." + std::to_string(dims) + "d with a rank-" +
         std::to_string(m.rank) + " tensor map");
  if (tmOp.elems[0].elems.size() != dims)
    fail("tensor copy: " + std::to_string(dims) + " coordinates expected");
  int64_t coord[5] = {0, 0, 0, 0, 0};
  for (unsigned d = 0; d < dims; ++d)
    coord[d] = sext(read(tmOp.elems[0].elems[d], t, Ty::S32), 32);
  Swizzle sw = m.swizzle == 0   ? Swizzle::None
               : m.swizzle == 1 ? Swizzle::B32
               : m.swizzle == 2 ? Swizzle::B64
                                : Swizzle::B128;
  if (m.interleave != 0)
    fail("interleaved tensor maps are not modelled");
  unsigned rowBytes =
      ((m.box[0] + m.elementStrides[0] - 1) / m.elementStrides[0]) *
      m.elemBytes;
  if (sw != Swizzle::None && rowBytes != swizzleSpan(sw))
    fail("swizzled TMA with an inner box of " + std::to_string(rowBytes) +
         " bytes (not the swizzle span) is not modelled");
  unsigned count[5] = {1, 1, 1, 1, 1};
  uint64_t total = 1;
  for (unsigned d = 0; d < dims; ++d) {
    count[d] = (m.box[d] + m.elementStrides[d] - 1) / m.elementStrides[d];
    total *= count[d];
  }
  uint64_t bytes = total * m.elemBytes;
  uint32_t base = sharedOffset(
      load ? Space::Shared : Space::Shared,
      smemOp.reg >= 0 || smemOp.symbol >= 0 ? address(smemOp, t) : 0,
      uint32_t(bytes),
      load ? "cp.async.bulk.tensor (destination)"
           : "cp.async.bulk.tensor (source)");
  if (base % 128)
    fail("cp.async.bulk.tensor shared memory address 0x" + [&] {
      std::ostringstream os;
      os << std::hex << base;
      return os.str();
    }() + " is not 128-byte aligned");
  PendingCopy pc;
  int storeRead = -1;
  Clock storeClock;
  if (load) {
    uint32_t mbarOff = sharedOffset(Space::Shared, address(o[2], t), 8,
                                    "cp.async.bulk.tensor (mbarrier)");
    checkAsyncUse(mbarOff, "cp.async.bulk.tensor");
    pc = newCopy(t, mbarOff, "cp.async.bulk.tensor");
    pc.elemBytes = m.elemBytes;
    pc.bytes = int64_t(bytes);
    pc.addr.reserve(total);
    pc.data.reserve(bytes);
  } else {
    storeRead = shadow.beginAsyncRead(accessOf(t));
    storeClock = warpClock[t.warp];
    t.bulkReads.push_back({storeRead, -1});
  }
  unsigned idx[5] = {0, 0, 0, 0, 0};
  for (uint64_t e = 0; e < total; ++e) {
    uint64_t rem = e;
    for (unsigned d = 0; d < dims; ++d) {
      idx[d] = unsigned(rem % count[d]);
      rem /= count[d];
    }
    bool inBounds = true;
    uint64_t gaddr = m.address;
    for (unsigned d = 0; d < dims; ++d) {
      int64_t c = coord[d] + int64_t(idx[d]) * m.elementStrides[d];
      if (c < 0 || uint64_t(c) >= m.dims[d])
        inBounds = false;
      gaddr += uint64_t(c) * m.strides[d];
    }
    uint32_t s = swizzleAddress(base + uint32_t(e * m.elemBytes), sw);
    if (load) {
      size_t at = pc.data.size();
      pc.data.resize(at + m.elemBytes, 0);
      pc.addr.push_back(s);
      if (inBounds) {
        uint8_t *g = mem.translate(gaddr, m.elemBytes);
        if (!g)
          fail("TMA load reads " + mem.describe(gaddr) +
                   " (inside the tensor map's bounds)",
               true);
        std::memcpy(&pc.data[at], g, m.elemBytes);
      } else if (m.oobFill == 1 && m.elemBytes >= 2) {
        // NaN fill for float types.
        if (m.elemBytes == 2) {
          pc.data[at] = 0xFF;
          pc.data[at + 1] = 0x7F;
        } else if (m.elemBytes == 4) {
          uint32_t nan = 0x7FFFFFFF;
          std::memcpy(&pc.data[at], &nan, 4);
        }
      }
      smemWriteAsync(s, m.elemBytes);
    } else {
      asyncProxyRead(s, m.elemBytes, "cp.async.bulk.tensor store", storeRead,
                     numWarpgroups, storeClock, 1u << t.warp);
      if (inBounds) {
        uint8_t *g = mem.translate(gaddr, m.elemBytes);
        if (!g)
          fail("TMA store writes " + mem.describe(gaddr) +
                   " (inside the tensor map's bounds)",
               true);
        std::memcpy(g, &smem[s], m.elemBytes);
      }
    }
  }
  if (load)
    copies.push_back(std::move(pc));
}

bool Cta::completeCopies(bool all) {
  bool any = false;
  Thread *saved = cur;
  cur = nullptr;
  for (size_t k = 0; k < copies.size();) {
    if (!all && copies[k].dueRound > round) {
      ++k;
      continue;
    }
    PendingCopy pc = std::move(copies[k]);
    copies.erase(copies.begin() + long(k));
    landCopy(pc);
    mbarTx(pc.mbar, -pc.bytes);
    any = true;
  }
  cur = saved;
  return any;
}

PendingCopy Cta::newCopy(Thread &t, uint32_t mbarOff, const char *what) {
  MBar &b = mbarAt(mbarOff, what);
  PendingCopy pc;
  uint64_t latency = randomSchedule ? 1 + rng() % (2 * kCopyLatencyRounds)
                                    : kCopyLatencyRounds;
  pc.dueRound = round + latency;
  pc.mbar = mbarOff;
  pc.write = accessOf(t);
  pc.write.comp = b.agent;
  pc.write.epoch = uint32_t(b.phase + 1);
  pc.issuerClock = warpClock[t.warp];
  return pc;
}

// A copy's bytes land: a write by its mbarrier's agent, ordered after what the
// issuing warp had seen when it issued the copy.
void Cta::landCopy(PendingCopy &pc) {
  const uint32_t self = 1u << threads[size_t(pc.write.thread)].warp;
  for (size_t e = 0; e < pc.addr.size(); ++e) {
    uint32_t a = pc.addr[e];
    if (checkRaces)
      for (uint32_t word = a / 4; word <= (a + pc.elemBytes - 1) / 4; ++word) {
        const Access &last = shadow.lastWrite(word);
        if (last.comp == pc.write.comp && last.epoch == pc.write.epoch &&
            last.pc == pc.write.pc)
          continue; // this copy's own earlier element of the word
        if (Conflict k = shadow.write(word, pc.write, pc.issuerClock, self)) {
          std::string copy = describeAccess(pc.write);
          failRace(k, "lands on", copy.c_str());
        }
      }
    // A generic write the copy overwrites must be fenced towards the async
    // proxy, with the fence ordered before the copy's issue.
    for (uint32_t c = a / 16; c <= (a + pc.elemBytes - 1) / 16; ++c) {
      --copyInFlight[c];
      int w = chunkWriter[c];
      if (w < 0)
        continue;
      const Thread &x = threads[size_t(w)];
      bool fenced = x.proxyFences.size() > chunkStamp[c];
      if (!fenced || (checkRaces && !(self >> x.warp & 1) &&
                      clockAt(pc.issuerClock, x.warp) <
                          x.proxyFences[chunkStamp[c]].first)) {
        cur = nullptr;
        std::ostringstream os;
        os << describeAccess(pc.write) << " lands on shared memory at 0x"
           << std::hex << c * 16 << std::dec << " written by warp " << x.warp
           << " lane " << x.lane << " (generic proxy) "
           << (fenced ? "whose fence.proxy.async is not ordered before the "
                        "copy's issue"
                      : "with no fence.proxy.async by that thread since the "
                        "write");
        fail(os.str());
      }
      chunkWriter[c] = -1;
    }
    std::memcpy(&smem[a], &pc.data[e * pc.elemBytes], pc.elemBytes);
    std::memset(&written[a], 1, pc.elemBytes);
  }
}

void Cta::execBulkCopy(Thread &t, const Inst &i) {
  const auto &o = i.ops;
  bool load = i.op == Op::CpBulkLoad;
  uint64_t size = read(o[2], t, Ty::U32);
  if (size % 16)
    fail("cp.async.bulk size " + std::to_string(size) +
         " is not a multiple of 16");
  uint64_t dst = address(o[0], t), src = address(o[1], t);
  if (dst % 16 || src % 16)
    fail("cp.async.bulk addresses must be 16-byte aligned", true);
  if (load) {
    uint32_t s = sharedOffset(Space::Shared, dst, uint32_t(size),
                              "cp.async.bulk (destination)");
    uint8_t *g = mem.translate(src, size);
    if (!g)
      fail("cp.async.bulk reads " + std::to_string(size) + " bytes at " +
               mem.describe(src),
           true);
    uint32_t mbarOff = sharedOffset(Space::Shared, address(o[3], t), 8,
                                    "cp.async.bulk (mbarrier)");
    checkAsyncUse(mbarOff, "cp.async.bulk");
    smemWriteAsync(s, uint32_t(size));
    PendingCopy pc = newCopy(t, mbarOff, "cp.async.bulk");
    pc.elemBytes = unsigned(size);
    pc.bytes = int64_t(size);
    pc.addr.push_back(s);
    pc.data.assign(g, g + size);
    copies.push_back(std::move(pc));
  } else {
    uint32_t s = sharedOffset(Space::Shared, src, uint32_t(size),
                              "cp.async.bulk (source)");
    int op = shadow.beginAsyncRead(accessOf(t));
    asyncProxyRead(s, uint32_t(size), "cp.async.bulk store", op, numWarpgroups,
                   warpClock[t.warp], 1u << t.warp);
    t.bulkReads.push_back({op, -1});
    uint8_t *g = mem.translate(dst, size);
    if (!g)
      fail("cp.async.bulk writes " + std::to_string(size) + " bytes at " +
               mem.describe(dst),
           true);
    std::memcpy(g, &smem[s], size);
  }
}

// ---------------------------------------------------------------- barriers and
// collectives

void Cta::barrierArrive(Thread &t, unsigned id, unsigned count, bool wait) {
  NamedBarrier &b = bars[id];
  if (b.arrived == 0)
    b.expected = count;
  else if (b.expected != count) {
    std::ostringstream os;
    os << "barrier " << id << " used with thread count " << count << " while "
       << b.arrived << " threads are waiting on it with count " << b.expected;
    fail(os.str());
  }
  ++b.arrived;
  join(b.clock, warpClock[t.warp]);
  if (wait) {
    t.st = TState::WaitBar;
    t.waitBarrier = int(id);
  } else {
    ++warpClock[t.warp][t.warp]; // what follows the arrive is not released
  }
  checkBarriers();
}

void Cta::checkBarriers() {
  unsigned live = 0;
  for (const Thread &t : threads)
    live += t.st != TState::Exited;
  for (unsigned id = 0; id < 16; ++id) {
    NamedBarrier &b = bars[id];
    if (!b.arrived)
      continue;
    unsigned need = b.expected ? b.expected : live;
    if (b.arrived >= need) {
      std::vector<bool> acquired(nwarps, false);
      for (Thread &t : threads)
        if (t.st == TState::WaitBar && t.waitBarrier == int(id)) {
          t.st = TState::Runnable;
          t.waitBarrier = -1;
          acquired[t.warp] = true;
        }
      for (unsigned w = 0; w < nwarps; ++w)
        if (acquired[w]) {
          join(warpClock[w], b.clock);
          ++warpClock[w][w];
        }
      b.arrived = 0;
      b.expected = 0;
      b.clock.clear();
    }
  }
}

void Cta::warpCollective(std::vector<Thread *> &ts, const Inst &i) {
  const auto &o = i.ops;
  switch (i.op) {
  case Op::Shfl: {
    // shfl.sync.mode.b32 d[|p], a, b, c, membermask (PTX ISA pseudo-code).
    uint64_t val[32] = {};
    bool in[32] = {};
    for (Thread *t : ts) {
      val[t->lane] = read(o[1], *t, Ty::B32);
      in[t->lane] = true;
    }
    for (Thread *t : ts) {
      cur = t;
      uint32_t lane = t->lane, bval = uint32_t(read(o[2], *t, Ty::U32)) & 31;
      uint32_t c = uint32_t(read(o[3], *t, Ty::U32));
      uint32_t cval = c & 31, segmask = (c >> 8) & 31;
      uint32_t maxLane = (lane & segmask) | (cval & ~segmask),
               minLane = lane & segmask;
      int32_t j = 0;
      bool p = false;
      switch (i.mode) {
      case 0:
        j = int32_t(lane) - int32_t(bval);
        p = j >= int32_t(maxLane);
        break;
      case 1:
        j = int32_t(lane + bval);
        p = j <= int32_t(maxLane);
        break;
      case 2:
        j = int32_t(lane ^ bval);
        p = j <= int32_t(maxLane);
        break;
      case 3:
        j = int32_t(minLane | (bval & ~segmask));
        p = j <= int32_t(maxLane);
        break;
      }
      if (!p)
        j = int32_t(lane);
      if (!in[j])
        fail("shfl.sync reads lane " + std::to_string(j) +
             ", which is not taking part (not in the member mask or not "
             "converged)");
      const Operand &d = o[0].kind == Operand::Vec ? o[0].elems[0] : o[0];
      write(d, *t, val[j], Ty::B32);
      if (o[0].kind == Operand::Vec)
        write(o[0].elems[1], *t, p, Ty::Pred);
    }
    break;
  }
  case Op::Vote: {
    uint32_t ballot = 0;
    for (Thread *t : ts)
      if (read(o[1], *t, Ty::Pred))
        ballot |= 1u << t->lane;
    uint32_t members = 0;
    for (Thread *t : ts)
      members |= 1u << t->lane;
    for (Thread *t : ts) {
      uint64_t r = 0;
      switch (i.mode) {
      case 0:
        r = ballot == members;
        break;
      case 1:
        r = ballot != 0;
        break;
      case 2:
        r = ballot == members || ballot == 0;
        break;
      case 3:
        r = ballot;
        break;
      }
      write(o[0], *t, r, i.mode == 3 ? Ty::B32 : Ty::Pred);
    }
    break;
  }
  case Op::Elect: {
    unsigned leader = 32;
    for (Thread *t : ts)
      leader = std::min(leader, t->lane);
    for (Thread *t : ts) {
      if (o[0].kind == Operand::Vec) {
        write(o[0].elems[0], *t, leader, Ty::B32);
        write(o[0].elems[1], *t, t->lane == leader, Ty::Pred);
      } else {
        write(o[0], *t, t->lane == leader, Ty::Pred);
      }
    }
    break;
  }
  case Op::BarWarpSync:
    break;
  case Op::Ldmatrix:
  case Op::Stmatrix:
    matrixCollective(ts, i);
    break;
  default:
    break;
  }
  for (Thread *t : ts) {
    ++t->pc;
    ++t->executed;
    t->st = TState::Runnable;
  }
}

// ldmatrix / stmatrix .m8n8.b16 (PTX ISA, "Warp-level matrix load/store"):
// matrix m's eight rows of 16 bytes start at the addresses held by lanes 8m ..
// 8m + 7; lane l's register for matrix m holds row l / 4, elements 2 (l % 4)
// and 2 (l % 4) + 1 (the lower half the first), or with .trans column l / 4,
// rows 2 (l % 4) and 2 (l % 4) + 1.
void Cta::matrixCollective(std::vector<Thread *> &ts, const Inst &i) {
  bool load = i.op == Op::Ldmatrix;
  const Operand &regs = i.ops[load ? 0 : 1], &addr = i.ops[load ? 1 : 0];
  unsigned num = i.mode & 7;
  bool trans = (i.mode & 8) != 0;
  const char *what = load ? "ldmatrix" : "stmatrix";
  if (ts.size() != 32) {
    cur = ts[0];
    fail(std::string(what) + " executed by " + std::to_string(ts.size()) +
         " lanes; .aligned needs the whole warp");
  }
  Thread *byLane[32] = {};
  for (Thread *t : ts)
    byLane[t->lane] = t;
  uint32_t rowOff[32] = {}; // shared offset of row r of matrix m: [8m + r]
  for (unsigned r = 0; r < 8 * num; ++r) {
    cur = byLane[r];
    uint64_t a = address(addr, *byLane[r]);
    if (a % 16)
      fail(std::string(what) + ": row address is not 16-byte aligned", true);
    rowOff[r] = i.space == Space::Generic
                    ? sharedOffset(Space::Generic, a, 16, what)
                    : uint32_t(a);
  }
  for (Thread *t : ts) {
    cur = t;
    unsigned l = t->lane;
    for (unsigned m = 0; m < num; ++m) {
      const Operand &reg = regs.kind == Operand::Vec ? regs.elems[m] : regs;
      const uint32_t *rows = &rowOff[8 * m];
      if (!trans) {
        uint32_t off = rows[l / 4] + 4 * (l % 4);
        if (load)
          write(reg, *t, this->load(Space::Shared, off, 4), Ty::B32);
        else
          store(Space::Shared, off, 4, read(reg, *t, Ty::B32));
      } else {
        uint32_t lo = rows[2 * (l % 4)] + 2 * (l / 4),
                 hi = rows[2 * (l % 4) + 1] + 2 * (l / 4);
        if (load) {
          uint64_t v = this->load(Space::Shared, lo, 2) |
                       this->load(Space::Shared, hi, 2) << 16;
          write(reg, *t, v, Ty::B32);
        } else {
          uint64_t v = read(reg, *t, Ty::B32);
          store(Space::Shared, lo, 2, v & 0xFFFF);
          store(Space::Shared, hi, 2, (v >> 16) & 0xFFFF);
        }
      }
    }
  }
}

// Returns false (the warpgroup stays at the instruction) while a
// setmaxnreg.inc has to wait for other warpgroups' setmaxnreg.dec to release
// registers into the CTA's pool.
bool Cta::setmaxnreg(std::vector<Thread *> &ts, const Inst &i) {
  cur = ts[0];
  unsigned n = unsigned(read(i.ops[0], *ts[0], Ty::U32));
  if (n < 24 || n > 256 || n % 8)
    fail("setmaxnreg " + std::to_string(n) +
         ": the count must be a multiple of 8 in [24, 256]");
  unsigned wg = ts[0]->warp / 4;
  unsigned curRegs = wgRegs[wg];
  if (i.mode == 1 && n < curRegs)
    fail("setmaxnreg.inc " + std::to_string(n) +
         " below the warpgroup's current " + std::to_string(curRegs) +
         " registers");
  if (i.mode == 2 && n > curRegs)
    fail("setmaxnreg.dec " + std::to_string(n) +
         " above the warpgroup's current " + std::to_string(curRegs) +
         " registers");
  if (i.mode == 1) {
    // The increase blocks until the pool holds the registers. It can never
    // complete if even every other warpgroup at the minimum of 24 leaves too
    // few; otherwise it waits (a deadlock if no decrease ever comes).
    unsigned total = n * 128, floor = n * 128;
    for (unsigned g = 0; g < wgRegs.size(); ++g)
      if (g != wg) {
        total += wgRegs[g] * 128;
        floor += 24 * 128;
      }
    if (floor > regPool)
      fail("setmaxnreg.inc " + std::to_string(n) +
           ": the warpgroups would hold at least " + std::to_string(floor) +
           " registers, more than the CTA's " + std::to_string(regPool) + " (" +
           std::to_string(initialRegs) +
           " per thread at launch); the increase would wait forever");
    if (total > regPool)
      return false;
  }
  wgRegs[wg] = n;
  for (Thread *t : ts) {
    ++t->pc;
    ++t->executed;
    t->st = TState::Runnable;
  }
  return true;
}

void Cta::wgmma(std::vector<Thread *> &ts, const Inst &i) {
  const auto &o = i.ops;
  cur = ts[0];
  const unsigned N = i.n;
  const bool bf = i.atype == Ty::BF16;
  auto uniform = [&](const Operand &op, Ty ty, const char *what) {
    uint64_t v = read(op, *ts[0], ty);
    for (Thread *t : ts)
      if (read(op, *t, ty) != v) {
        cur = t;
        fail(std::string("wgmma: ") + what +
             " differs between the threads of the warpgroup");
      }
    return v;
  };
  const size_t q =
      3; // scale-d follows D, A (descriptor or registers) and the B descriptor
  bool scaleD = uniform(o[q], Ty::Pred, "scale-d") != 0;
  int64_t scaleA = int64_t(sext(uniform(o[q + 1], Ty::S32, "imm-scale-a"), 32));
  int64_t scaleB = int64_t(sext(uniform(o[q + 2], Ty::S32, "imm-scale-b"), 32));
  if ((scaleA != 1 && scaleA != -1) || (scaleB != 1 && scaleB != -1))
    fail("wgmma: imm-scale-a/b must be 1 or -1");
  uint64_t transA = 0, transB;
  if (i.rsForm) {
    transB = uniform(o[q + 3], Ty::U32, "imm-trans-b");
  } else {
    transA = uniform(o[q + 3], Ty::U32, "imm-trans-a");
    transB = uniform(o[q + 4], Ty::U32, "imm-trans-b");
  }
  if (transA > 1 || transB > 1)
    fail("wgmma: imm-trans must be 0 or 1");
  // The registers the wgmma uses: written by another instruction since the
  // thread's last wgmma.fence, they may not be what the tensor core reads.
  for (Thread *t : ts) {
    if (checkWgmmaFence && t->wgmmaFences == 0) {
      cur = t;
      fail("wgmma.mma_async before any wgmma.fence (the PTX ISA requires a "
           "wgmma.fence.sync.aligned before the warpgroup's first wgmma)");
    }
    auto checkFenced = [&](int reg, const char *role) {
      if (checkWgmmaFence && t->r[reg].stamp == t->writeStamp()) {
        cur = t;
        fail("wgmma: " + std::string(role) + " register " +
             kernel.regNames[reg] +
             " was written after the thread's last wgmma.fence (a "
             "wgmma.fence.sync.aligned must separate other instructions' "
             "register accesses from the wgmma)");
      }
    };
    for (const Operand &d : o[0].elems) {
      if (scaleD && checkRegisterInit && !t->r[d.reg].stamp) {
        cur = t;
        fail("wgmma: accumulator register " + kernel.regNames[d.reg] +
             " is read (scale-d is 1) but no instruction has written it");
      }
      checkFenced(d.reg, "accumulator");
    }
    if (i.rsForm)
      for (const Operand &a : o[1].elems)
        checkFenced(a.reg, "A operand");
  }
  cur = ts[0];
  // The operands are read from shared memory from the issue until the
  // wait_group that retires the group: an async read of the warpgroup.
  const unsigned wg = ts[0]->warp / 4;
  Clock readerClock;
  uint32_t readers = 0;
  for (unsigned w = wg * 4; w < std::min(nwarps, wg * 4 + 4); ++w) {
    join(readerClock, warpClock[w]);
    readers |= 1u << w;
  }
  const int op = shadow.beginAsyncRead(accessOf(*ts[0]));
  auto readOperand = [&](uint64_t descBits, bool kMajor, unsigned rows,
                         std::vector<float> &out, const char *what) {
    MatrixDescriptor d = decodeDescriptor(descBits);
    if (d.reservedBits) {
      std::ostringstream os;
      os << "wgmma: " << what << " descriptor 0x" << std::hex << descBits
         << " has reserved bits set (0x" << d.reservedBits << ")";
      fail(os.str());
    }
    if (d.swizzle != Swizzle::None && d.baseOffset != 0)
      fail(std::string("wgmma: ") + what +
           " descriptor base offset != 0 is not modelled (tiles must start on "
           "the swizzle "
           "pattern's repeat)");
    // With base offset 0 the swizzle pattern is taken to start at the matrix
    // start address: that address must sit on the pattern's repeat (address
    // bits 7.. of the 8-row repeat clear; the K offsets inside a swizzled row
    // only touch bits 4-6).
    uint32_t start = d.startAddress << 4;
    uint32_t repeat = swizzleSpan(d.swizzle) * 8;
    if (checkSwizzleAlign && d.swizzle != Swizzle::None &&
        (start % repeat) >= 128) {
      std::ostringstream os;
      os << "wgmma: " << what << " descriptor 0x" << std::hex << descBits
         << " starts at shared 0x" << start << std::dec << ", "
         << (start % repeat) / 128 << " rows into the " << repeat
         << "-byte repeat of its " << swizzleSpan(d.swizzle)
         << "B swizzle, with base offset 0 (the tile must be " << repeat
         << "-byte aligned)";
      fail(os.str());
    }
    const char *role =
        what[0] == 'A' ? "wgmma (A operand)" : "wgmma (B operand)";
    out.assign(rows * 16, 0);
    for (unsigned r = 0; r < rows; ++r)
      for (unsigned k = 0; k < 16; ++k) {
        uint32_t a = operandAddress(d, kMajor, 2, r, k);
        if (a < kReservedSmem || a + 2 > smemSize) {
          std::ostringstream os;
          os << "wgmma: " << what << " element (" << r << "," << k
             << ") at shared 0x" << std::hex << a
             << " is outside the CTA's shared memory (descriptor 0x" << descBits
             << ")";
          fail(os.str(), true);
        }
        asyncProxyRead(a, 2, role, op, wg, readerClock, readers);
        uint16_t h;
        std::memcpy(&h, &smem[a], 2);
        out[r * 16 + k] = lo16(h, bf);
      }
  };
  std::vector<float> A(64 * 16), B;
  if (i.rsForm) {
    for (Thread *t : ts) {
      unsigned w = t->warp % 4;
      for (unsigned e = 0; e < 8; ++e) {
        uint64_t reg = read(o[1].elems[e / 2], *t, Ty::B32);
        RowCol rc = aFragmentPosition(w, t->lane, e);
        A[rc.row * 16 + rc.col] = lo16(reg >> (16 * (e % 2)), bf);
      }
    }
  } else {
    readOperand(uniform(o[1], Ty::B64, "A descriptor"), transA == 0, 64, A,
                "A");
  }
  readOperand(uniform(o[2], Ty::B64, "B descriptor"), transB == 0, N, B, "B");
  for (Thread *t : ts) {
    unsigned w = t->warp % 4;
    for (unsigned v = 0; v < N / 2; ++v) {
      RowCol rc = accumulatorPosition(w, t->lane, v);
      double acc = 0;
      for (unsigned k = 0; k < 16; ++k)
        acc += double(A[rc.row * 16 + k]) * double(B[rc.col * 16 + k]);
      acc *= double(scaleA * scaleB);
      const Operand &dop = o[0].elems[v];
      float d = scaleD ? asF(t->r[dop.reg].value) : 0.0f;
      float r = float(double(d) + acc);
      t->r[dop.reg] = {fromF(r), 1};
      markPending(*t, dop.reg, kPendingAccumulator);
    }
    if (i.rsForm)
      for (const Operand &a : o[1].elems)
        markPending(*t, a.reg, kPendingA);
    t->wgmmaReads.push_back({op, -1});
    ++t->pc;
    ++t->executed;
    t->st = TState::Runnable;
  }
}

// `reg` is used by the wgmma the thread is issuing: in flight with its newest
// group (an accumulator chained through several wgmmas retires with the last).
void Cta::markPending(Thread &t, int reg, uint8_t kind) {
  if (t.pending[reg] == kNotPending) {
    t.pendingList.push_back(reg);
    t.pending[reg] = kind;
  } else if (kind == kPendingAccumulator) {
    t.pending[reg] = kind;
  }
  t.pendingGroup[reg] = -1;
  t.pendingPc[reg] = t.pc;
}

// Completes the warp-level collectives (shfl, vote, elect, bar.warp.sync,
// ldmatrix / stmatrix) of warp `w` whose members have all arrived.
bool Cta::resolveWarpCollectives(unsigned w) {
  bool progress = false;
  unsigned first = w * 32, last = std::min(nthreads, first + 32);
  std::vector<std::pair<int, std::vector<Thread *>>> atPc;
  for (unsigned k = first; k < last; ++k) {
    Thread &t = threads[k];
    if (t.st != TState::AtCollective)
      continue;
    auto it = std::find_if(atPc.begin(), atPc.end(),
                           [&](const auto &e) { return e.first == t.pc; });
    if (it == atPc.end()) {
      atPc.push_back({t.pc, {}});
      it = atPc.end() - 1;
    }
    it->second.push_back(&t);
  }
  std::sort(atPc.begin(), atPc.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  {
    for (auto &kv : atPc) {
      const Inst &i = kernel.code[kv.first];
      if (i.op == Op::WgmmaMma || i.op == Op::SetMaxNReg)
        continue;
      cur = kv.second[0];
      const Operand &maskOp = i.op == Op::BarWarpSync ? i.ops[0] : i.ops.back();
      bool wholeWarp = i.op == Op::Ldmatrix || i.op == Op::Stmatrix;
      uint32_t mask =
          wholeWarp ? ~0u : uint32_t(read(maskOp, *kv.second[0], Ty::B32));
      uint32_t have = 0;
      for (Thread *t : kv.second)
        have |= 1u << t->lane;
      uint32_t live = 0;
      for (unsigned k = first; k < last; ++k)
        if (threads[k].st != TState::Exited)
          live |= 1u << threads[k].lane;
      if ((mask & have) != (mask & live))
        continue; // some members have not arrived yet
      if (have & ~mask) {
        cur = kv.second[0];
        fail("a thread executes a .sync warp instruction with a member mask "
             "that excludes it");
      }
      warpCollective(kv.second, i);
      progress = true;
    }
  }
  cur = nullptr;
  return progress;
}

bool Cta::resolveCollectives() {
  bool progress = false;
  for (unsigned w = 0; w < nwarps; ++w)
    progress |= resolveWarpCollectives(w);
  // Warpgroup-level: wgmma.mma_async, setmaxnreg.
  for (unsigned g = 0; g * 128 < nthreads; ++g) {
    unsigned first = g * 128, last = std::min(nthreads, first + 128);
    std::vector<Thread *> ts;
    bool allThere = true;
    int pc = -1;
    bool samePc = true;
    for (unsigned k = first; k < last; ++k) {
      Thread &t = threads[k];
      if (t.st == TState::Exited)
        continue;
      const Inst &i = kernel.code[t.pc];
      if (t.st != TState::AtCollective ||
          (i.op != Op::WgmmaMma && i.op != Op::SetMaxNReg)) {
        allThere = false;
        break;
      }
      if (pc < 0)
        pc = t.pc;
      samePc &= t.pc == pc;
      ts.push_back(&t);
    }
    if (!allThere || ts.empty())
      continue;
    if (last - first != 128 || ts.size() != 128) {
      cur = ts[0];
      fail("warpgroup instruction executed by " + std::to_string(ts.size()) +
           " threads; all 128 threads of the warpgroup must execute it");
    }
    if (!samePc) {
      cur = ts[0];
      std::ostringstream os;
      os << "warpgroup instruction not executed uniformly: threads of "
            "warpgroup "
         << g << " are at different instructions (";
      std::set<int> pcs;
      for (Thread *t : ts)
        pcs.insert(t->pc);
      for (int p : pcs)
        os << instAt(p) << "; ";
      os << ")";
      fail(os.str());
    }
    const Inst &i = kernel.code[pc];
    if (i.op == Op::WgmmaMma) {
      wgmma(ts, i);
      progress = true;
    } else if (setmaxnreg(ts, i)) {
      progress = true;
    }
  }
  cur = nullptr;
  return progress;
}

void Cta::deadlock() {
  std::ostringstream os;
  os << "deadlock in kernel " << kernel.name << ", block (" << ctaid[0] << ","
     << ctaid[1] << "," << ctaid[2] << "): no thread can make progress.\n";
  for (unsigned w = 0; w < nwarps; ++w) {
    std::map<std::pair<int, int>, std::vector<unsigned>> groups;
    for (unsigned k = w * 32; k < std::min(nthreads, w * 32 + 32); ++k)
      groups[{int(threads[k].st), threads[k].pc}].push_back(threads[k].lane);
    for (auto &g : groups) {
      os << "  warp " << w << " lanes " << g.second.front() << "-"
         << g.second.back() << " (" << g.second.size() << "): ";
      TState st = TState(g.first.first);
      const Thread &t = threads[w * 32 + g.second.front()];
      switch (st) {
      case TState::Exited:
        os << "exited";
        break;
      case TState::WaitBar:
        os << "waiting at barrier " << t.waitBarrier << " ("
           << bars[t.waitBarrier].arrived << " of "
           << (bars[t.waitBarrier].expected
                   ? std::to_string(bars[t.waitBarrier].expected)
                   : "all")
           << " arrived), " << instAt(g.first.second);
        break;
      case TState::WaitMbar: {
        std::ostringstream h;
        h << std::hex << t.waitMbar;
        os << "waiting on mbarrier 0x" << h.str() << ", "
           << instAt(g.first.second);
        break;
      }
      case TState::AtCollective:
        os << "waiting for the rest of its warp/warpgroup at "
           << instAt(g.first.second);
        break;
      default:
        os << "runnable at " << instAt(g.first.second);
        break;
      }
      os << "\n";
    }
  }
  for (auto &kv : mbars) {
    os << "  mbarrier 0x" << std::hex << kv.first << std::dec << ": phase "
       << kv.second.phase << " (parity " << (kv.second.phase & 1)
       << "), pending arrivals " << kv.second.pending << " of "
       << kv.second.expected << ", tx-count " << kv.second.tx << "\n";
  }
  throw SimError(os.str());
}

void Cta::start(unsigned cx, unsigned cy, unsigned cz, uint64_t seed) {
  ctaid[0] = cx;
  ctaid[1] = cy;
  ctaid[2] = cz;
  cur = nullptr;
  atomicAccess = false;
  randomSchedule = seed != 0;
  rng.seed(seed * 0x9E3779B97F4A7C15ull + (cx + 1) * 1000003ull +
           (cy + 1) * 10007ull + cz);
  checkRaces = checkEnabled("race") && checkEnabled("write-race");
  checkRegisterInit = checkEnabled("register-init");
  checkWgmmaFence = checkEnabled("wgmma-fence");
  checkSwizzleAlign = checkEnabled("swizzle-align");
  checkMbarrierInitOrder = checkRaces && checkEnabled("mbarrier-init-order");
  nthreads = cfg.block[0] * cfg.block[1] * cfg.block[2];
  nwarps = (nthreads + 31) / 32;
  numWarpgroups = (nthreads + 127) / 128;
  // Shared window: reserved bytes, static variables, then the dynamic array.
  symbolAddr.assign(kernel.symbols.size(), 0);
  uint64_t off = kReservedSmem;
  for (size_t s = 0; s < kernel.symbols.size(); ++s) {
    const Symbol &sym = kernel.symbols[s];
    if (sym.space == Space::Param) {
      symbolAddr[s] = kParamWindow + sym.offset;
    } else if (!sym.isExtern) {
      off = (off + sym.align - 1) / sym.align * sym.align;
      symbolAddr[s] = off;
      off += sym.size;
    }
  }
  for (size_t s = 0; s < kernel.symbols.size(); ++s) {
    const Symbol &sym = kernel.symbols[s];
    if (sym.space == Space::Shared && sym.isExtern) {
      unsigned a = std::max(16u, sym.align);
      symbolAddr[s] = (off + a - 1) / a * a;
    }
  }
  dynBase = unsigned((off + 15) / 16 * 16);
  smemSize = dynBase + cfg.dynamicSmem;
  smem.assign(smemSize, 0xA5);
  written.assign(smemSize, 0);
  copyInFlight.assign(smemSize / 16 + 1, 0);
  chunkWriter.assign(smemSize / 16 + 1, -1);
  chunkStamp.assign(smemSize / 16 + 1, 0);
  mbars.clear();
  mbarAgents.clear();
  copies.clear();
  round = 0;
  warpOrder.resize(nwarps);
  for (unsigned w = 0; w < nwarps; ++w)
    warpOrder[w] = w;
  warpClock.assign(nwarps, Clock(nwarps, 0));
  for (unsigned w = 0; w < nwarps; ++w)
    warpClock[w][w] = 1;
  shadow.reset(smemSize, nwarps, numWarpgroups + 1);
  for (auto &b : bars)
    b = NamedBarrier();
  // The allocation ptxas gives the kernel: .maxnreg, else what the
  // .minnctapersm CTAs of this size leave per thread (the register file is
  // shared by the CTAs an SM must hold at once).
  unsigned ctasPerSM = std::max(1u, kernel.minnctapersm);
  unsigned perThread =
      kernel.maxnreg
          ? kernel.maxnreg
          : std::min(255u, kRegsPerSM / ctasPerSM /
                               ((nthreads + 127) / 128 * 128));
  initialRegs = perThread / 8 * 8;
  regPool = initialRegs * nthreads;
  wgRegs.assign((nthreads + 127) / 128, initialRegs);
  threads.assign(nthreads, Thread());
  const size_t numRegs = size_t(std::max(1, kernel.numRegs));
  // Registers start with arbitrary bits (a NaN pattern, or random bits under a
  // seed), not zero: a kernel must not depend on them.
  regs.resize(size_t(nthreads) * numRegs);
  if (randomSchedule)
    for (RegCell &r : regs)
      r = {rng(), 0};
  else
    std::fill(regs.begin(), regs.end(), RegCell{0xFFF0DEAD7FC0DEADull, 0});
  for (unsigned k = 0; k < nthreads; ++k) {
    Thread &t = threads[k];
    t.r = &regs[size_t(k) * numRegs];
    t.linear = k;
    t.tid[0] = k % cfg.block[0];
    t.tid[1] = (k / cfg.block[0]) % cfg.block[1];
    t.tid[2] = k / (cfg.block[0] * cfg.block[1]);
    t.warp = k / 32;
    t.lane = k % 32;
    t.pending.assign(numRegs, kNotPending);
    t.pendingGroup.assign(numRegs, -1);
    t.pendingPc.assign(numRegs, 0);
  }
}

// One round: every warp issues (round-robin, one instruction each, or under a
// seed in a random order with random counts). Returns whether anything ran.
bool Cta::roundOfWarps() {
  uint64_t n = 0;
  if (!randomSchedule) {
    for (unsigned w = 0; w < nwarps; ++w)
      n += runWarp(w, 1);
  } else {
    std::shuffle(warpOrder.begin(), warpOrder.end(), rng);
    for (unsigned w : warpOrder) {
      // Mostly one instruction, sometimes none (the warp falls behind),
      // sometimes a burst (it runs ahead).
      uint64_t draw = rng() % 16;
      unsigned quantum = draw < 3 ? 0 : draw < 13 ? 1 : unsigned(draw - 10) * 4;
      n += runWarp(w, quantum);
    }
    if (!n) // nobody was scheduled: let every warp try once
      for (unsigned w : warpOrder)
        n += runWarp(w, 1);
  }
  stats.instructions += n;
  return n > 0;
}

// Runs the CTA for up to 64 rounds; true once every thread has exited.
bool Cta::advance() {
  // Warps issue in turn (as an SM's schedulers interleave them): no warp runs
  // far ahead of the others, so start-up code that every warp executes (an
  // mbarrier.init by all threads, say) happens before any warp gets far.
  bool progress = false;
  for (unsigned r = 0; r < 64; ++r, ++round) {
    bool ran = roundOfWarps();
    progress |= ran;
    if (!copies.empty())
      progress |= completeCopies(false);
    if (!ran)
      break;
  }
  bool anyLive = false;
  for (const Thread &t : threads)
    anyLive |= t.st != TState::Exited;
  if (!anyLive) {
    if (!copies.empty()) {
      cur = nullptr;
      fail("every thread has exited while " + describeAccess(copies[0].write) +
           " is still writing the CTA's shared memory (no thread waits on "
           "it)");
    }
    return true;
  }
  progress |= resolveCollectives();
  if (!progress && !copies.empty())
    progress =
        completeCopies(true); // everyone waits: the copies in flight land now
  if (!progress)
    deadlock();
  return false;
}

} // namespace

std::string launchKernel(const Module &module, const Kernel &kernel,
                         const LaunchConfig &cfg,
                         const std::vector<uint8_t> &params, GlobalMemory &mem,
                         bool &isAddressError, Stats &stats) {
  isAddressError = false;
  auto t0 = std::chrono::steady_clock::now();
  try {
    const uint64_t seed = scheduleSeed();
    std::vector<std::array<unsigned, 3>> order;
    for (unsigned z = 0; z < cfg.grid[2]; ++z)
      for (unsigned y = 0; y < cfg.grid[1]; ++y)
        for (unsigned x = 0; x < cfg.grid[0]; ++x)
          order.push_back({x, y, z});
    if (!seed) {
      Cta cta(module, kernel, cfg, params, mem, stats);
      for (auto &c : order) {
        cta.start(c[0], c[1], c[2], 0);
        while (!cta.advance()) {
        }
      }
    } else {
      // Under a seed, CTAs run in a shuffled order, two to four at once,
      // interleaved a few rounds at a time.
      std::mt19937_64 rng(seed);
      std::shuffle(order.begin(), order.end(), rng);
      size_t window = std::min<size_t>(order.size(), 2 + rng() % 3);
      std::vector<std::unique_ptr<Cta>> running;
      size_t next = 0;
      for (size_t k = 0; k < window; ++k) {
        running.push_back(
            std::make_unique<Cta>(module, kernel, cfg, params, mem, stats));
        auto &c = order[next++];
        running.back()->start(c[0], c[1], c[2], seed);
      }
      while (!running.empty()) {
        size_t k = rng() % running.size();
        if (!running[k]->advance())
          continue;
        if (next < order.size()) {
          auto &c = order[next++];
          running[k]->start(c[0], c[1], c[2], seed);
        } else {
          running.erase(running.begin() + long(k));
        }
      }
    }
  } catch (const SimError &e) {
    isAddressError = e.address;
    stats.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    return e.what();
  }
  stats.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

} // namespace cudasim
