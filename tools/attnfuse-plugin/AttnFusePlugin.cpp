//===- AttnFusePlugin.cpp - attn dialect and passes as a plugin -*- C++ -*-===//
//
// Lets upstream tools load AttnFuse:
//   mlir-opt --load-dialect-plugin=AttnFusePlugin.so \
//            --load-pass-plugin=AttnFusePlugin.so --attn-decompose in.mlir
//
//===----------------------------------------------------------------------===//

#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AttnFuse", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<attnfuse::attn::AttnDialect>();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AttnFusePasses", LLVM_VERSION_STRING,
          []() { attnfuse::attn::registerAttnPasses(); }};
}
