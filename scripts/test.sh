#!/usr/bin/env bash
# Builds AttnFuse and runs every test (lit unit tests, integration tests)
# through ctest. Pass --sanitize to run them on the ASan + UBSan build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

BUILD_DIR="$("$ROOT/scripts/build.sh" "$@")"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)"
