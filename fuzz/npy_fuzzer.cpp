//===- npy_fuzzer.cpp - the .npy reader on any bytes ----------------------===//
//
// Parses the input as a .npy file; a parsed array must hold exactly the
// bytes its shape says, and writing it back and reading that again must
// give the same array.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Support/NpyFormat.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  attnfuse::npy::NpyArray array;
  std::string error;
  if (!attnfuse::npy::parseNpy(reinterpret_cast<const char *>(data), size,
                               array, error))
    return 0;
  uint64_t count = 1;
  for (int64_t dim : array.shape)
    count *= uint64_t(dim);
  if (array.data.size() != count * array.itemSize)
    std::abort();
  std::string again = attnfuse::npy::writeNpy(array);
  attnfuse::npy::NpyArray reread;
  if (!attnfuse::npy::parseNpy(again.data(), again.size(), reread, error) ||
      reread.shape != array.shape || reread.data != array.data ||
      reread.descr != array.descr)
    std::abort();
  return 0;
}
