//===- AttnKernelsToNVVM.h - fused attn kernels to sm_90a -------*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_ATTNKERNELSTONVVM_ATTNKERNELSTONVVM_H
#define ATTNFUSE_CONVERSION_ATTNKERNELSTONVVM_ATTNKERNELSTONVVM_H

#include "mlir/Pass/Pass.h"

namespace attnfuse {

#define GEN_PASS_DECL_CONVERTATTNKERNELSTONVVMPASS
#define GEN_PASS_DECL_ATTNNVVMKERNELPARAMSPASS
#include "attnfuse/Conversion/Passes.h.inc"

/// Name of the attribute on the host-side launch declarations
/// (`func.func private @<kernel>_launch`) that describes a kernel launch.
inline constexpr const char *kLaunchAttrName = "attnfuse.launch";

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNKERNELSTONVVM_ATTNKERNELSTONVVM_H
