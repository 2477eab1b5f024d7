/* Links the installed runtime and uses its C API without a GPU: evaluates a
 * manifest expression and asks whether a CUDA driver is there. */
#include "attnfuse/runtime.h"

#include <stdio.h>

int main(void) {
  afr_sizes sizes = {2, 300, 300};
  int64_t blocks = 0;
  afr_status status = afr_eval_expr("B * ceil_div(S, 128)", &sizes, &blocks);
  if (status != AFR_OK) {
    fprintf(stderr, "afr_eval_expr: %s\n", afr_last_error());
    return 1;
  }
  printf("blocks: %lld\n", (long long)blocks);
  printf("driver: %s\n", afr_driver_available() ? "yes" : "no");
  return 0;
}
