//===- InitAllDialects.h - every dialect AttnFuse uses ----------*- C++ -*-===//
//
// For tools and compilers that embed AttnFuse: inserts the attn dialect and
// the upstream dialects, interface models and translations that its passes
// and the attn-to-cpu / attn-to-ptx pipelines produce and consume.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_INITALLDIALECTS_H
#define ATTNFUSE_INITALLDIALECTS_H

#include "attnfuse/Conversion/AttnKernelsToNVVM/AttnToPTX.h"
#include "attnfuse/Conversion/Pipelines.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

namespace attnfuse {

/// Inserts the attn dialect only: enough to parse, verify and print attn IR
/// and to run attn-decompose, attn-fuse and attn-cost-report.
inline void registerAttnDialect(mlir::DialectRegistry &registry) {
  registry.insert<attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
}

/// Inserts everything the AttnFuse passes and both pipelines need.
inline void registerAllAttnFuseDialects(mlir::DialectRegistry &registry) {
  registerAttnDialect(registry);
  registerAttnToCPUDialects(registry);
  registerAttnToPTXDialects(registry);
}

} // namespace attnfuse

#endif // ATTNFUSE_INITALLDIALECTS_H
