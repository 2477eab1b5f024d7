#!/usr/bin/env bash
# The installed package, as another project sees it: `cmake --install` of the
# build tree into a fresh prefix, then
#   1. the installed attnfuse-opt and the plugin's location from the package,
#   2. consumer/: an MLIR project that finds AttnFuse with find_package,
#      registers the dialect and passes through the public API and runs
#      attn-decompose,attn-fuse (as a pipeline and through the populate API),
#   3. runtime-consumer/: a C program that finds only AttnFuseRuntime and
#      links nothing of LLVM.
#   test/Install/install_check.sh BUILD_DIR WORK_DIR
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="${1:?usage: install_check.sh BUILD_DIR WORK_DIR}"
WORK="${2:?usage: install_check.sh BUILD_DIR WORK_DIR}"
INPUT="$HERE/../Plugin/attnfuse-plugin.mlir"
PREFIX="$WORK/prefix"
rm -rf "$WORK"
mkdir -p "$WORK"

fail() { echo "install_check: $*" >&2; exit 1; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log"
for file in include/attnfuse/InitAllPasses.h \
            include/attnfuse/Dialect/Attn/IR/AttnOps.h.inc \
            include/attnfuse/Dialect/Attn/Transforms/Passes.h.inc \
            include/attnfuse/runtime.h \
            lib/libAttnFuseAttnDialect.a lib/AttnFusePlugin.so \
            lib/libattnfuse_runtime.so \
            lib/cmake/AttnFuse/AttnFuseConfig.cmake \
            lib/cmake/AttnFuse/AttnFuseConfigVersion.cmake \
            lib/cmake/AttnFuseRuntime/AttnFuseRuntimeConfig.cmake \
            bin/attnfuse-opt bin/attnfuse-run bin/attnfuse-compile; do
  [ -e "$PREFIX/$file" ] || fail "not installed: $file"
done
echo "installed: $(find "$PREFIX" -type f | wc -l) files"

# The installed tool runs from the prefix (its RPATH finds libMLIR.so).
"$PREFIX/bin/attnfuse-opt" "$INPUT" --attn-decompose | grep -q "attn.sdpa" \
  || fail "installed attnfuse-opt did not decompose"

cmake -S "$HERE/consumer" -B "$WORK/consumer" -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++-22 "${launcher[@]}" \
  -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/consumer-configure.log"
cmake --build "$WORK/consumer" >"$WORK/consumer-build.log" \
  || { cat "$WORK/consumer-build.log"; fail "consumer build failed"; }
"$WORK/consumer/attnfuse-consumer" "$INPUT" >"$WORK/consumer.out"
grep -q "attn.flash_attention" "$WORK/consumer.out" || fail "no attn.flash_attention after attn-fuse"
grep -q "attn.qkv_attention" "$WORK/consumer.out" && fail "attn.qkv_attention left after attn-decompose"
grep -qx "api: same" "$WORK/consumer.out" || fail "populate API and pipeline disagree"
echo "consumer: attn-decompose,attn-fuse ran through the installed package"

cmake -S "$HERE/runtime-consumer" -B "$WORK/runtime-consumer" -G Ninja \
  -DCMAKE_C_COMPILER=clang-22 \
  -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/runtime-consumer-configure.log"
cmake --build "$WORK/runtime-consumer" >"$WORK/runtime-consumer-build.log" \
  || { cat "$WORK/runtime-consumer-build.log"; fail "runtime consumer build failed"; }
if ldd "$WORK/runtime-consumer/attnfuse-runtime-consumer" | grep -Eq "libMLIR|libLLVM"; then
  fail "the runtime consumer links LLVM"
fi
"$WORK/runtime-consumer/attnfuse-runtime-consumer" | tee "$WORK/runtime-consumer.out"
grep -qx "blocks: 6" "$WORK/runtime-consumer.out" || fail "runtime consumer: wrong result"
echo "runtime consumer: linked only libattnfuse_runtime.so"
