// Happens-before tracking of one CTA's shared memory: what makes two accesses
// a race. Every warp and every mbarrier has a vector clock; per 4-byte shared
// word the shadow keeps the last write and, per warp, the last read (the
// epochs of FastTrack, Flanagan and Freund, PLDI 2009). Two accesses of a word
// from different warps, one of them a write, race unless the first is ordered
// before the second by bar.sync / bar.arrive, an mbarrier arrive -> wait, or a
// chain of them.
//
// Asynchronous accesses take part too. A TMA or bulk copy's write is made by
// its mbarrier's agent (a clock component of its own) at the phase the copy
// completes, so only a thread that waited on that phase (or learnt of it
// through a barrier) may touch the bytes. A wgmma's operand reads and a bulk
// store's source reads last from issue until a wait retires them: a write while
// they are in flight is an error at once, and a later write must be ordered
// after one of the waits that retired them.
#ifndef ATTNFUSE_CUDASIM_HB_H
#define ATTNFUSE_CUDASIM_HB_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace cudasim {

using Clock = std::vector<uint32_t>;
inline uint32_t clockAt(const Clock &c, unsigned i) {
  return i < c.size() ? c[i] : 0;
}
void join(Clock &into, const Clock &from);

// One access, for ordering and for the diagnostic: the clock component that
// made it (a warp, or an mbarrier's agent for a copy's write), the epoch of
// that component at the access, the thread and the instruction (for a copy:
// the thread that issued it and the copy instruction).
struct Access {
  static constexpr uint16_t kNone = 0xFFFF;
  int32_t thread = -1, pc = -1;
  uint16_t comp = kNone;
  uint32_t epoch = 0;
};

// A wgmma's operand reads or a bulk / TMA store's source reads.
struct AsyncRead {
  Access issue;
  // (warp, epoch) at each warp's first wait that retired the read; empty while
  // the read is in flight.
  std::vector<std::pair<uint16_t, uint32_t>> retired;
  bool inFlight() const { return retired.empty(); }
};

struct Conflict {
  enum Kind : uint8_t {
    None,
    ReadAfterWrite,
    WriteAfterWrite,
    WriteAfterRead,
    WriteDuringAsyncRead
  };
  Kind kind = None;
  uint32_t word = 0;
  Access other;       // the earlier access
  int asyncRead = -1; // index of the earlier async read, when it was one
  explicit operator bool() const { return kind != None; }
};

class SharedShadow {
public:
  // `bytes` of shared memory, `warps` warps (at most 32), `asyncSlots` async
  // readers a word can have at once (one per warpgroup, and the bulk stores).
  void reset(uint32_t bytes, unsigned warps, unsigned asyncSlots);

  // A generic read by warp `a.comp`, whose clock is `c`; recorded.
  Conflict read(uint32_t word, const Access &a, const Clock &c);
  // A write by `a` (a warp, or a copy's agent), ordered after the clock `c`;
  // `self` is the mask of warps whose own accesses are in program order with
  // it. Recorded: the word's reads are cleared.
  Conflict write(uint32_t word, const Access &a, const Clock &c, uint32_t self);
  // An asynchronous read (op `op`, slot `slot`) by the warps `self`, whose
  // joined clock is `c`: the word's last write must be ordered before it.
  Conflict asyncRead(uint32_t word, int op, unsigned slot, const Clock &c,
                     uint32_t self);

  int beginAsyncRead(const Access &issue);
  AsyncRead &asyncOp(int op) { return ops[size_t(op)]; }
  // The first wait of warp `warp` (at `epoch`) that retires op `op`.
  void retire(int op, unsigned warp, uint32_t epoch);
  const Access &lastWrite(uint32_t word) const { return writes[word]; }
  // The last read of `word` by warp `warp` (epoch 0: none since the write).
  Access lastRead(uint32_t word, unsigned warp) const;

private:
  Conflict checkWrite(uint32_t word, const Clock &c, uint32_t self) const;
  unsigned nwarps = 0, nslots = 0;
  std::vector<Access> writes;
  std::vector<uint32_t> readEpoch; // [word][warp]
  std::vector<int32_t> readThread, readPc;
  std::vector<int32_t> asyncReader; // [word][slot]: op index or -1
  std::vector<AsyncRead> ops;
};

} // namespace cudasim

#endif
