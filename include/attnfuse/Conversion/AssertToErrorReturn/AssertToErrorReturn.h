//===- AssertToErrorReturn.h - failed checks return errors ------*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_ASSERTTOERRORRETURN_ASSERTTOERRORRETURN_H
#define ATTNFUSE_CONVERSION_ASSERTTOERRORRETURN_ASSERTTOERRORRETURN_H

#include "mlir/Pass/Pass.h"

namespace attnfuse {

#define GEN_PASS_DECL_CONVERTASSERTTOERRORRETURNPASS
#include "attnfuse/Conversion/Passes.h.inc"

/// The host functions the converted code calls: `void
/// attnfuse_check_failed(const char *message)` records a failed check,
/// `int attnfuse_check_pending(void)` says whether one is recorded.
inline constexpr const char *kCheckFailedFunction = "attnfuse_check_failed";
inline constexpr const char *kCheckPendingFunction = "attnfuse_check_pending";
/// Checks inside a parallel region (run by other threads) report through the
/// calling thread's state: `void *attnfuse_call_state(void)` returns it at
/// the function's entry, `void attnfuse_check_failed_in(void *state, const
/// char *message)` records a failed check in it from any thread.
inline constexpr const char *kCallStateFunction = "attnfuse_call_state";
inline constexpr const char *kCheckFailedInFunction =
    "attnfuse_check_failed_in";

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ASSERTTOERRORRETURN_ASSERTTOERRORRETURN_H
