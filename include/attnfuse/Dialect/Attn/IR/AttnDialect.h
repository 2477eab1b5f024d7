//===- AttnDialect.h - attn dialect -----------------------------*- C++ -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNDIALECT_H
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "attnfuse/Dialect/Attn/IR/AttnOpsDialect.h.inc"

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNDIALECT_H
