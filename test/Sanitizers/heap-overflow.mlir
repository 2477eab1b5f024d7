// The sanitizer build still catches real memory errors with the test
// environment's ASAN_OPTIONS (allow_user_poisoning=0, which silences the
// false use-after-poison of LLVM's allocator inside libMLIR.so): parsing
// with libMLIR is clean, and a one-byte heap overflow stops the program.
// REQUIRES: sanitizers
// RUN: attnfuse-asan-canary --no-overflow | FileCheck %s --check-prefix=CLEAN
// CLEAN: attn.rope
// CLEAN: parsed
// RUN: not attnfuse-asan-canary 2>&1 | FileCheck %s --check-prefix=CAUGHT
// CAUGHT: parsed
// CAUGHT: ERROR: AddressSanitizer: heap-buffer-overflow
