//===- Passes.h - AttnFuse conversion passes --------------------*- C++ -*-===//

#ifndef ATTNFUSE_CONVERSION_PASSES_H
#define ATTNFUSE_CONVERSION_PASSES_H

#include "attnfuse/Conversion/AssertToErrorReturn/AssertToErrorReturn.h"
#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnKernelsToNVVM.h"
#include "attnfuse/Conversion/AttnKernelsToSCF/AttnKernelsToSCF.h"
#include "attnfuse/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attnfuse/Conversion/Pipelines.h"

namespace attnfuse {

#define GEN_PASS_REGISTRATION
#include "attnfuse/Conversion/Passes.h.inc"

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_PASSES_H
