#include "hb.h"

#include <algorithm>

namespace cudasim {

void join(Clock &into, const Clock &from) {
  if (into.size() < from.size())
    into.resize(from.size(), 0);
  for (size_t k = 0; k < from.size(); ++k)
    into[k] = std::max(into[k], from[k]);
}

void SharedShadow::reset(uint32_t bytes, unsigned warps, unsigned asyncSlots) {
  nwarps = warps;
  nslots = asyncSlots;
  size_t words = bytes / 4 + 1;
  writes.assign(words, Access());
  readEpoch.assign(words * nwarps, 0);
  readThread.assign(words * nwarps, -1);
  readPc.assign(words * nwarps, -1);
  asyncReader.assign(words * nslots, -1);
  ops.clear();
}

static bool ordered(const Access &earlier, const Clock &c, uint32_t self) {
  if (earlier.comp == Access::kNone)
    return true;
  if (earlier.comp < 32 && (self >> earlier.comp & 1))
    return true;
  return clockAt(c, earlier.comp) >= earlier.epoch;
}

Conflict SharedShadow::read(uint32_t word, const Access &a, const Clock &c) {
  Conflict out;
  const Access &w = writes[word];
  if (!ordered(w, c, 1u << a.comp)) {
    out.kind = Conflict::ReadAfterWrite;
    out.word = word;
    out.other = w;
    return out;
  }
  size_t k = size_t(word) * nwarps + a.comp;
  readEpoch[k] = a.epoch;
  readThread[k] = a.thread;
  readPc[k] = a.pc;
  return out;
}

Conflict SharedShadow::checkWrite(uint32_t word, const Clock &c,
                                  uint32_t self) const {
  Conflict out;
  out.word = word;
  const Access &w = writes[word];
  if (!ordered(w, c, self)) {
    out.kind = Conflict::WriteAfterWrite;
    out.other = w;
    return out;
  }
  size_t base = size_t(word) * nwarps;
  for (unsigned r = 0; r < nwarps; ++r) {
    uint32_t e = readEpoch[base + r];
    if (e && !(self >> r & 1) && clockAt(c, r) < e) {
      out.kind = Conflict::WriteAfterRead;
      out.other = lastRead(word, r);
      return out;
    }
  }
  for (unsigned s = 0; s < nslots; ++s) {
    int op = asyncReader[size_t(word) * nslots + s];
    if (op < 0)
      continue;
    const AsyncRead &r = ops[size_t(op)];
    bool ok = false;
    for (auto &p : r.retired)
      ok |= (self >> p.first & 1) || clockAt(c, p.first) >= p.second;
    if (!ok) {
      out.kind = r.inFlight() ? Conflict::WriteDuringAsyncRead
                              : Conflict::WriteAfterRead;
      out.other = r.issue;
      out.asyncRead = op;
      return out;
    }
  }
  return out;
}

Conflict SharedShadow::write(uint32_t word, const Access &a, const Clock &c,
                             uint32_t self) {
  Conflict out = checkWrite(word, c, self);
  if (out)
    return out;
  writes[word] = a;
  size_t base = size_t(word) * nwarps;
  std::fill(&readEpoch[base], &readEpoch[base] + nwarps, 0u);
  std::fill(&asyncReader[size_t(word) * nslots],
            &asyncReader[size_t(word) * nslots] + nslots, -1);
  return out;
}

Conflict SharedShadow::asyncRead(uint32_t word, int op, unsigned slot,
                                 const Clock &c, uint32_t self) {
  Conflict out;
  const Access &w = writes[word];
  if (!ordered(w, c, self)) {
    out.kind = Conflict::ReadAfterWrite;
    out.word = word;
    out.other = w;
    return out;
  }
  asyncReader[size_t(word) * nslots + slot] = op;
  return out;
}

int SharedShadow::beginAsyncRead(const Access &issue) {
  AsyncRead r;
  r.issue = issue;
  ops.push_back(std::move(r));
  return int(ops.size()) - 1;
}

void SharedShadow::retire(int op, unsigned warp, uint32_t epoch) {
  AsyncRead &r = ops[size_t(op)];
  for (auto &p : r.retired)
    if (p.first == warp)
      return;
  r.retired.push_back({uint16_t(warp), epoch});
}

Access SharedShadow::lastRead(uint32_t word, unsigned warp) const {
  size_t k = size_t(word) * nwarps + warp;
  Access a;
  a.comp = uint16_t(warp);
  a.epoch = readEpoch[k];
  a.thread = readThread[k];
  a.pc = readPc[k];
  return a;
}

} // namespace cudasim
