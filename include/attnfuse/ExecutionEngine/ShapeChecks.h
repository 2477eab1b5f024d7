//===- ShapeChecks.h - size relations checked before a JIT call -*- C++ -*-===//
//
// The relations between the dynamic sizes of a function's arguments that the
// semantics of its ops require (batch, heads, key/value lengths, cache pages,
// bias [S, T], ...), derived once from the function's IR and evaluated on
// the sizes of each call before the compiled code runs. A call whose sizes
// break a relation is refused with an error naming both arguments, their
// sizes and the op that needs them to agree; nothing is allocated, read or
// written.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_EXECUTIONENGINE_SHAPECHECKS_H
#define ATTNFUSE_EXECUTIONENGINE_SHAPECHECKS_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace attnfuse {

class ShapeChecks {
public:
  /// Derives the relations from `func`, whose body holds attn primitives
  /// (after attn-decompose), tensor, arith/math and other ops. Values made by
  /// ops it does not model get sizes of their own, tied to nothing: those
  /// are left to the run-time checks compiled into the function.
  static ShapeChecks derive(mlir::func::FuncOp func);

  /// Checks the argument shapes of one call (already checked for rank and
  /// static sizes) and that every argument and every result the function
  /// returns has a byte size that fits in int64. `elementBytes` holds the
  /// bytes per element of each argument, then of each result.
  llvm::Error check(llvm::StringRef function,
                    llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                    llvm::ArrayRef<size_t> argumentBytes,
                    llvm::ArrayRef<size_t> resultBytes) const;

  /// The number of relations (for tests and diagnostics).
  size_t getNumRelations() const { return relations.size(); }

  /// One line per relation, e.g. "arg1[0] == arg0[0]: attn.sdpa at
  /// f.mlir:3:8 needs 'key' batch == 'query' batch" (for debugging).
  std::string describe() const;

  struct Size {
    enum class Kind { Argument, Constant, Unknown, Sum, Product };
    Kind kind;
    /// Argument: argument index and dimension; Constant: value, -; Sum:
    /// size index and constant addend; Product: two size indices.
    int64_t first = 0, second = 0;
  };
  struct Relation {
    enum class Kind { Equal, NonNegative };
    Kind kind;
    unsigned lhs, rhs;
    /// What needs it, e.g. "attn.sdpa needs 'value' T == 'key' T (at
    /// loc)".
    std::string reason;
  };

private:
  std::vector<Size> sizes;
  std::vector<Relation> relations;
  /// Sizes of the returned values, per result.
  std::vector<std::vector<unsigned>> resultSizes;

  friend class ShapeRelationBuilder;
};

} // namespace attnfuse

#endif // ATTNFUSE_EXECUTIONENGINE_SHAPECHECKS_H
