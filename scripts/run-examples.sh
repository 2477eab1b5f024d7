#!/usr/bin/env bash
# The main job: builds AttnFuse, compiles every shipped example model, prints
# its cost report, then runs every model on the CPU (fused lowering, batch 1,
# 8 tokens) and checks it against the independent numpy reference.
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

"$ROOT/scripts/check_examples.py" --build "$BUILD_DIR" --batch 1 --seq 8
