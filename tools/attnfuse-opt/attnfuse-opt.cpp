//===- attnfuse-opt.cpp - attn dialect optimizer driver ---------*- C++ -*-===//
//
// mlir-opt for AttnFuse: the attn dialect and passes, plus the upstream
// dialects and passes the attn pipelines use.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<attnfuse::attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  attnfuse::attn::registerAttnPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "AttnFuse optimizer driver\n", registry));
}
