//===- asan-canary.cpp - proves ASan still catches real errors ------------===//
//
// Built in sanitizer builds only. Parses and prints a small module with
// libMLIR (the path that reports a false use-after-poison unless the test
// environment sets allow_user_poisoning=0), then, unless --no-overflow is
// given, writes one byte past a heap buffer: ASan must stop it.
//
//===----------------------------------------------------------------------===//

#include "attnfuse/InitAllDialects.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  attnfuse::registerAllAttnFuseDialects(registry);
  mlir::MLIRContext context(registry);
  const char *text = R"(
    func.func @f(%q: tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32> {
      %r = attn.rope %q {rope = #attn.rope<theta = 10000.0>} : tensor<1x4x2x8xf32>
      return %r : tensor<1x4x2x8xf32>
    })";
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context, "canary.mlir");
  if (!module)
    return 2;
  module->print(llvm::outs());
  llvm::outs() << "\nparsed\n";
  llvm::outs().flush();
  bool overflow = !(argc > 1 && std::strcmp(argv[1], "--no-overflow") == 0);
  char *buffer = new char[16];
  std::memset(buffer, 0, 16);
  // One byte past the end when overflowing (index 16 of 16).
  volatile int index = overflow ? 16 : 15;
  buffer[index] = 1;
  int result = buffer[15];
  delete[] buffer;
  return result == 1 ? 0 : 3;
}
