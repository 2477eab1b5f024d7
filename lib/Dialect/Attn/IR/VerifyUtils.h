//===- VerifyUtils.h - shape checks of the attn verifiers -------*- C++ -*-===//
//
// The checks every attn verifier builds on. Each failure names the operand or
// result at fault and states the expected and the actual value, e.g.
// `'wk' must have shape [num_kv_heads * head_dim, E] = [256, 1024], got
// [512, 1024]`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_LIB_DIALECT_ATTN_IR_VERIFYUTILS_H
#define ATTNFUSE_LIB_DIALECT_ATTN_IR_VERIFYUTILS_H

#include "attnfuse/Dialect/Attn/IR/AttnAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include <string>

namespace attnfuse::attn::verify {

/// One expected dimension: a size (or ShapedType::kDynamic for "any") and
/// the symbolic name it comes from, used in diagnostics.
struct ExpectedDim {
  int64_t size;
  llvm::StringRef name;
};

/// `[2, ?, 16]`.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Checks that `value` (named `name` in diagnostics) is a ranked tensor whose
/// shape is compatible with `expected`: equal where both are static. With
/// `requireStatic` (parameters: widths are static), a dynamic dimension does
/// not match a static expected one.
mlir::LogicalResult verifyShape(mlir::Operation *op, llvm::StringRef name,
                                mlir::Value value,
                                llvm::ArrayRef<ExpectedDim> expected,
                                bool requireStatic = false);

/// Checks that dimension `dim` of `value` is static: the op needs it to
/// derive the other shapes.
mlir::LogicalResult verifyStaticDim(mlir::Operation *op, llvm::StringRef name,
                                    mlir::Value value, int64_t dim,
                                    llvm::StringRef dimName);

/// Checks the rank of `value`; `layout` describes the dimensions.
mlir::LogicalResult verifyRank(mlir::Operation *op, llvm::StringRef name,
                               mlir::Value value, int64_t rank,
                               llvm::StringRef layout);

/// Checks that `rope` (the attribute named `name`) rotates a whole, even
/// number of the `headDim` dimensions of each head.
mlir::LogicalResult verifyRope(mlir::Operation *op, RopeAttr rope,
                               int64_t headDim, llvm::StringRef name = "rope");

/// Checks the `eps` of a CCA head norm: positive, and with
/// `norm = <clamp_eps>` (computed as `sqrt(max(|x|^2, eps^2))`) large enough
/// that `eps^2` is a normal f32.
mlir::LogicalResult verifyNormEps(mlir::Operation *op, llvm::APFloat eps,
                                  NormMode norm);

/// Checks that the query heads split evenly into the key/value heads.
mlir::LogicalResult verifyHeads(mlir::Operation *op, int64_t numHeads,
                                int64_t numKvHeads);

/// Size `dim` of the ranked tensor `value`.
int64_t dimOf(mlir::Value value, int64_t dim);

} // namespace attnfuse::attn::verify

#endif // ATTNFUSE_LIB_DIALECT_ATTN_IR_VERIFYUTILS_H
