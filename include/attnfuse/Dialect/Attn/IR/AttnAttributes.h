//===- AttnAttributes.h - attn dialect attributes ---------------*- C++ -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNATTRIBUTES_H
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNATTRIBUTES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "attnfuse/Dialect/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnAttributes.h.inc"

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNATTRIBUTES_H
