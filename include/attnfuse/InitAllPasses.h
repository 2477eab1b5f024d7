//===- InitAllPasses.h - every AttnFuse pass and pipeline -------*- C++ -*-===//
//
// For tools and compilers that embed AttnFuse: registers the attn passes
// (attn-decompose, attn-fuse, attn-cost-report), the conversions
// (convert-attn-to-linalg, convert-attn-kernels-to-scf,
// convert-attn-kernels-to-nvvm, attn-nvvm-kernel-params) and the
// attn-to-cpu and attn-to-ptx pipelines, so that they can be named in
// textual pass pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_INITALLPASSES_H
#define ATTNFUSE_INITALLPASSES_H

#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

namespace attnfuse {

inline void registerAttnFusePasses() {
  attn::registerAttnPasses();
  registerAttnFuseConversionPasses();
  registerAttnToCPUPipeline();
  registerAttnToPTXPipeline();
}

} // namespace attnfuse

#endif // ATTNFUSE_INITALLPASSES_H
