// Hopper data layouts as the PTX ISA defines them: wgmma shared-memory matrix
// descriptors and their canonical layouts, the shared-memory swizzle modes, the
// wgmma register fragments, and 16-bit float conversions. Written from the PTX
// ISA (sections "Matrix Descriptor Format", "Shared Memory Matrix Layout",
// "Register Fragments", "Tensor Swizzling Modes"); nothing here is shared with
// the kernel generators, so a layout error cannot hide in both.
#ifndef ATTNFUSE_CUDASIM_LAYOUTS_H
#define ATTNFUSE_CUDASIM_LAYOUTS_H

#include <cstdint>
#include <string>

namespace cudasim {

// Swizzle modes, numbered as the wgmma descriptor's bits 62-63 encode them.
enum class Swizzle : unsigned { None = 0, B128 = 1, B64 = 2, B32 = 3 };

// Bytes in one swizzled row (the span whose 16-byte chunks are permuted): 128,
// 64, 32; 16 for none.
unsigned swizzleSpan(Swizzle s);

// Applies a swizzle mode to an absolute shared-memory byte address. The 16-byte
// chunk index (address bits 4..) is XORed with the row index within the 8-row
// repeat (address bits 7..): 128B: bits [4,7) ^= bits [7,10); 64B: bits [4,6)
// ^= bits [7,9); 32B: bit 4 ^= bit 7.
uint32_t swizzleAddress(uint32_t addr, Swizzle s);

// The 64-bit wgmma matrix descriptor, decoded field by field.
struct MatrixDescriptor {
  uint32_t startAddress;  // bits 0-13, (address & 0x3FFFF) >> 4
  uint32_t leadingOffset; // bits 16-29, bytes >> 4
  uint32_t strideOffset;  // bits 32-45, bytes >> 4
  unsigned baseOffset;    // bits 49-51
  Swizzle swizzle;        // bits 62-63
  uint64_t reservedBits;  // any bit outside the fields above (must be 0)
};
MatrixDescriptor decodeDescriptor(uint64_t desc);
uint64_t encodeDescriptor(const MatrixDescriptor &d);

// Shared-memory byte address (swizzle applied) of element (mn, k) of a wgmma
// operand described by `d` (A: mn = row m; B: mn = column n), for elements of
// `elemBytes` bytes. kMajor = (imm-trans == 0). The canonical layouts (PTX ISA,
// "Canonical layouts", in CuTe notation with T = 16 / elemBytes elements):
//   K-major  none : ((8,m),(T,2k)):((1T,SBO),(1,LBO))      MN-major none :
//   ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) K-major  32B  :
//   ((8,m),(T,2k)):((2T,SBO),(1,T))        MN-major 32B  :
//   ((T,2,m),(8,k)):((1,T,LBO),(2T,SBO)) K-major  64B  :
//   ((8,m),(T,2k)):((4T,SBO),(1,T))        MN-major 64B  :
//   ((T,4,m),(8,k)):((1,T,LBO),(4T,SBO)) K-major 128B  :
//   ((8,m),(T,2k)):((8T,SBO),(1,T))        MN-major 128B :
//   ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))
uint32_t operandAddress(const MatrixDescriptor &d, bool kMajor,
                        unsigned elemBytes, unsigned mn, unsigned k);

// wgmma register fragments for .m64nNk16 (PTX ISA, "Register Fragments"): warp
// w of the warpgroup owns rows 16w..16w+15.
//  D (f32 accumulator), value i of lane l: row 16w + l/4 + 8*((i/2)%2),
//                                          column (l%4)*2 + (i%2) + 8*(i/4).
//  A (16-bit, register form), element i (register i/2, half i%2, low half
//  first) of lane l:
//                                          row 16w + l/4 + 8*((i/2)%2), k
//                                          (l%4)*2 + (i%2) + 8*(i/4).
struct RowCol {
  unsigned row, col;
};
RowCol accumulatorPosition(unsigned warpInGroup, unsigned lane, unsigned value);
RowCol aFragmentPosition(unsigned warpInGroup, unsigned lane, unsigned element);

// IEEE half and bfloat16 <-> f32.
float bf16ToFloat(uint16_t h);
float halfToFloat(uint16_t h);
enum class Rounding { Nearest, Zero, Down, Up };
uint16_t floatToBf16(float f, Rounding r, bool saturate = false);
uint16_t floatToHalf(float f, Rounding r, bool saturate = false);

} // namespace cudasim

#endif
