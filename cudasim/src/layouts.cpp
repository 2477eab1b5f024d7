#include "layouts.h"

#include <cmath>
#include <cstring>

namespace cudasim {

unsigned swizzleSpan(Swizzle s) {
  switch (s) {
  case Swizzle::B128:
    return 128;
  case Swizzle::B64:
    return 64;
  case Swizzle::B32:
    return 32;
  default:
    return 16;
  }
}

uint32_t swizzleAddress(uint32_t addr, Swizzle s) {
  // Number of chunk-index bits the row index flips: log2(span / 16).
  unsigned bits = s == Swizzle::B128  ? 3
                  : s == Swizzle::B64 ? 2
                  : s == Swizzle::B32 ? 1
                                      : 0;
  if (!bits)
    return addr;
  uint32_t mask = (1u << bits) - 1;
  return addr ^ (((addr >> 7) & mask) << 4);
}

MatrixDescriptor decodeDescriptor(uint64_t desc) {
  MatrixDescriptor d;
  d.startAddress = desc & 0x3FFF;
  d.leadingOffset = (desc >> 16) & 0x3FFF;
  d.strideOffset = (desc >> 32) & 0x3FFF;
  d.baseOffset = (desc >> 49) & 0x7;
  d.swizzle = static_cast<Swizzle>((desc >> 62) & 0x3);
  const uint64_t fields = 0x3FFFull | (0x3FFFull << 16) | (0x3FFFull << 32) |
                          (0x7ull << 49) | (0x3ull << 62);
  d.reservedBits = desc & ~fields;
  return d;
}

uint64_t encodeDescriptor(const MatrixDescriptor &d) {
  return (uint64_t(d.startAddress) & 0x3FFF) |
         ((uint64_t(d.leadingOffset) & 0x3FFF) << 16) |
         ((uint64_t(d.strideOffset) & 0x3FFF) << 32) |
         ((uint64_t(d.baseOffset) & 7) << 49) |
         (uint64_t(static_cast<unsigned>(d.swizzle)) << 62);
}

uint32_t operandAddress(const MatrixDescriptor &d, bool kMajor,
                        unsigned elemBytes, unsigned mn, unsigned k) {
  const uint32_t start = d.startAddress << 4;
  const uint32_t lbo = d.leadingOffset << 4, sbo = d.strideOffset << 4;
  const unsigned t = 16 / elemBytes; // elements per 16-byte chunk
  uint32_t offset;
  if (kMajor) {
    // Rows of 8: (mn % 8) at the row pitch, (mn / 8) at SBO. Along K, T
    // contiguous elements, then the next chunk: at LBO without swizzle,
    // contiguous (inside the swizzled row) with.
    unsigned rowPitch =
        d.swizzle == Swizzle::None ? 16 : swizzleSpan(d.swizzle);
    uint32_t kChunk = d.swizzle == Swizzle::None ? lbo : 16;
    offset = (mn % 8) * rowPitch + (mn / 8) * sbo + (k / t) * kChunk +
             (k % t) * elemBytes;
  } else if (d.swizzle == Swizzle::None) {
    // ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)): T contiguous MN elements, groups of
    // T at SBO; 8 K rows 16 bytes apart, groups of 8 K at LBO.
    offset =
        (mn % t) * elemBytes + (mn / t) * sbo + (k % 8) * 16 + (k / 8) * lbo;
  } else {
    // ((T,W,m),(8,k)):((1,T,LBO),(W*T,SBO)) with W = span / 16: the span holds
    // W*T contiguous MN elements, the next span of MN at LBO; 8 K rows one span
    // apart, groups of 8 K at SBO.
    unsigned span = swizzleSpan(d.swizzle);
    unsigned perRow = span / elemBytes;
    offset = (mn % perRow) * elemBytes + (mn / perRow) * lbo + (k % 8) * span +
             (k / 8) * sbo;
  }
  return swizzleAddress(start + offset, d.swizzle);
}

RowCol accumulatorPosition(unsigned w, unsigned lane, unsigned i) {
  return {16 * w + lane / 4 + 8 * ((i / 2) % 2),
          (lane % 4) * 2 + (i % 2) + 8 * (i / 4)};
}

RowCol aFragmentPosition(unsigned w, unsigned lane, unsigned i) {
  return {16 * w + lane / 4 + 8 * ((i / 2) % 2),
          (lane % 4) * 2 + (i % 2) + 8 * (i / 4)};
}

float bf16ToFloat(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float halfToFloat(uint16_t h) {
  unsigned sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double v;
  if (exp == 0x1F)
    v = mant ? NAN : INFINITY;
  else if (exp == 0)
    v = std::ldexp(double(mant), -24);
  else
    v = std::ldexp(double(mant | 0x400), int(exp) - 25);
  return float(sign ? -v : v);
}

namespace {
// Rounds f to a binary format with `mantBits` fraction bits and exponent bias
// `bias`.
uint16_t toMinifloat(float f, int mantBits, int expBits, Rounding r) {
  const int bias = (1 << (expBits - 1)) - 1;
  const uint16_t signBit = 1u << (mantBits + expBits);
  const uint16_t expMask = ((1u << expBits) - 1) << mantBits;
  const uint16_t maxFinite =
      expMask - (1u << mantBits) + ((1u << mantBits) - 1);
  if (std::isnan(f))
    return 0x7FFF; // canonical NaN (PTX ISA, cvt)
  bool neg = std::signbit(f);
  uint16_t sign = neg ? signBit : 0;
  if (std::isinf(f))
    return sign | expMask;
  double a = std::fabs(double(f));
  if (a == 0)
    return sign;
  int ex;
  std::frexp(a, &ex);
  int e = ex - 1;
  const int minNormal = 1 - bias;
  if (e < minNormal)
    e = minNormal;
  double q = std::ldexp(1.0, e - mantBits);
  double m = a / q;
  switch (r) {
  case Rounding::Nearest:
    m = std::nearbyint(m);
    break; // default FE mode: ties to even
  case Rounding::Zero:
    m = std::trunc(m);
    break;
  case Rounding::Down:
    m = neg ? std::ceil(m) : std::floor(m);
    break;
  case Rounding::Up:
    m = neg ? std::floor(m) : std::ceil(m);
    break;
  }
  double v = m * q;
  if (v >= std::ldexp(1.0, bias + 1)) {
    bool toInf = r == Rounding::Nearest || (r == Rounding::Down && neg) ||
                 (r == Rounding::Up && !neg);
    return sign | (toInf ? expMask : maxFinite);
  }
  if (v == 0)
    return sign;
  if (v < std::ldexp(1.0, minNormal))
    return sign | uint16_t(v / std::ldexp(1.0, minNormal - mantBits));
  std::frexp(v, &ex);
  int e2 = ex - 1;
  uint16_t mant =
      uint16_t(v / std::ldexp(1.0, e2 - mantBits)) - (1u << mantBits);
  return sign | uint16_t((e2 + bias) << mantBits) | mant;
}
} // namespace

uint16_t floatToBf16(float f, Rounding r, bool) {
  return toMinifloat(f, 7, 8, r);
}
uint16_t floatToHalf(float f, Rounding r, bool) {
  return toMinifloat(f, 10, 5, r);
}

} // namespace cudasim
