//===- AttnFusePlugin.cpp - AttnFuse as an mlir-opt plugin ------*- C++ -*-===//
//
// Lets upstream tools load AttnFuse: the attn dialect (and the dialects its
// pipelines produce), every attn pass and conversion, and the attn-to-cpu
// and attn-to-ptx pipelines:
//   mlir-opt --load-dialect-plugin=AttnFusePlugin.so \
//            --load-pass-plugin=AttnFusePlugin.so \
//            --pass-pipeline='builtin.module(attn-to-cpu)' in.mlir
//
//===----------------------------------------------------------------------===//

#include "attnfuse/InitAllDialects.h"
#include "attnfuse/InitAllPasses.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AttnFuse", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            attnfuse::registerAllAttnFuseDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AttnFusePasses", LLVM_VERSION_STRING,
          []() { attnfuse::registerAttnFusePasses(); }};
}
