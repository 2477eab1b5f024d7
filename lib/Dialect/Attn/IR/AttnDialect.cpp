//===- AttnDialect.cpp - attn dialect ---------------------------*- C++ -*-===//

#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "attnfuse/Dialect/Attn/IR/AttnOps.h"

using namespace mlir;
using namespace attnfuse::attn;

#include "attnfuse/Dialect/Attn/IR/AttnOpsDialect.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attnfuse/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
  registerAttributes();
}
