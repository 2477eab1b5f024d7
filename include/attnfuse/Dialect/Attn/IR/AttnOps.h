//===- AttnOps.h - attn dialect operations ----------------------*- C++ -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_H
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_H

#include "attnfuse/Dialect/Attn/IR/AttnAttributes.h"
#include "attnfuse/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#define GET_OP_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnOps.h.inc"

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_H
