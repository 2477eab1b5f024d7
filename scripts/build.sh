#!/usr/bin/env bash
# Configures and builds AttnFuse.
#   scripts/build.sh            -> build/        (Release)
#   scripts/build.sh --sanitize -> build-asan/   (ASan + UBSan, and the fuzzers)
# Extra arguments after the options go to CMake. Prints the build directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

BUILD_DIR="${ATTNFUSE_BUILD_DIR:-$ROOT/build}"
CMAKE_ARGS=()
if [ "${1:-}" = "--sanitize" ]; then
  shift
  BUILD_DIR="${ATTNFUSE_BUILD_DIR:-$ROOT/build-asan}"
  CMAKE_ARGS+=(-DATTNFUSE_ENABLE_SANITIZERS=ON -DATTNFUSE_ENABLE_FUZZERS=ON
              -DCMAKE_BUILD_TYPE=RelWithDebInfo)
fi

# Relative paths in ccache keys: clones in other folders share the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"

# Progress goes to stderr; stdout carries only the build directory, for the
# scripts that call this one.
"$ROOT/scripts/setup.sh" >&2
source "$ROOT/scripts/venv.sh"
# Every Python the build and the tests run is the virtual environment's.
CMAKE_ARGS+=(-DPython_EXECUTABLE="$ATTNFUSE_PYTHON" -DPython3_EXECUTABLE="$ATTNFUSE_PYTHON")

cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  "${CMAKE_ARGS[@]}" "$@" >&2
ninja -C "$BUILD_DIR" >&2
echo "$BUILD_DIR"
