//===- runtime_expr_fuzzer.cpp - afr_eval_expr on any text ----------------===//
//
// Evaluates the input (after a 3-byte size prefix) as a manifest
// expression. Any text gives a value or an error: no trap (INT64_MIN / -1),
// no signed overflow (UBSan), no stack exhaustion from nesting.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/runtime.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  afr_sizes sizes{3, 1000, 4100};
  if (size >= 3) {
    static const int64_t table[] = {0, 1, -1, INT64_MAX, INT64_MIN, 64, 2, 7};
    sizes.B = table[data[0] & 7];
    sizes.S = table[data[1] & 7];
    sizes.T = table[data[2] & 7];
    data += 3;
    size -= 3;
  }
  std::string text(reinterpret_cast<const char *>(data), size);
  int64_t value = 0;
  (void)afr_eval_expr(text.c_str(), &sizes, &value);
  return 0;
}
