//===- NpyFormat.h - numpy .npy files, read as numpy reads them -*- C++ -*-===//
//
// Parses and writes the numpy .npy format (versions 1.0, 2.0 and 3.0). The
// header is read with the grammar numpy's `np.load` accepts: a Python dict
// literal with exactly the keys 'descr', 'fortran_order' (a bool) and 'shape'
// (a tuple of non-negative ints), where a repeated key takes its last value
// (as `ast.literal_eval` does), and at most 10000 header bytes (numpy's
// `max_header_size`). Fortran-order data is reordered to C order. No LLVM
// dependency: the fuzzers build it on its own.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_SUPPORT_NPYFORMAT_H
#define ATTNFUSE_SUPPORT_NPYFORMAT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnfuse::npy {

/// One array; `data` is C order, `itemSize` bytes per element.
struct NpyArray {
  /// The dtype string of the header, e.g. "<f4", "|u1".
  std::string descr;
  std::vector<int64_t> shape;
  size_t itemSize = 0;
  /// Set while parsing a '>' header; parseNpy's result is always
  /// little-endian (descr '<...').
  bool bigEndian = false;
  std::vector<char> data;
};

/// numpy's default `max_header_size`.
constexpr size_t kMaxHeaderSize = 10000;

/// Parses a whole .npy file held in `bytes`. Supported dtypes are the
/// fixed-size scalars b1, i1/u1, i2/u2, i4/u4, i8/u8, f2, f4, f8 in either
/// byte order (big-endian data is swapped to little-endian). On failure returns false with a message in
/// `error` that says what is wrong (never crashes, whatever the input).
bool parseNpy(const char *bytes, size_t size, NpyArray &out,
              std::string &error);

/// Parses only the header dictionary text (what follows the length field).
/// `itemSize` is set from `descr`.
bool parseNpyHeader(const std::string &header, NpyArray &out,
                    bool &fortranOrder, std::string &error);

/// The bytes of a version 1.0 .npy file (C order) holding `array`.
std::string writeNpy(const NpyArray &array);

} // namespace attnfuse::npy

#endif // ATTNFUSE_SUPPORT_NPYFORMAT_H
