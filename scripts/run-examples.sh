#!/usr/bin/env bash
# The main job: builds AttnFuse, compiles every shipped example model and
# prints its cost report.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

BUILD_DIR="$("$ROOT/scripts/build.sh")"
OPT="$BUILD_DIR/bin/attnfuse-opt"

for model in "$ROOT"/examples/*.mlir; do
  name="$(basename "$model" .mlir)"
  echo "=== $name"
  # Decompose and canonicalize to check that the model compiles, then price
  # it at the default 32768 tokens.
  "$OPT" "$model" --attn-decompose --canonicalize -o /dev/null
  "$OPT" "$model" --attn-cost-report -o /dev/null
  echo
done
