#!/usr/bin/env bash
# The main job: builds AttnFuse, compiles every shipped example model, prints
# its cost report, then runs every model on the CPU (fused lowering, batch 1,
# 8 tokens; decode models: a prefill of two prompts of different lengths and
# decode steps) and checks it against the independent numpy reference.
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
  # A decode model's @prefill and @step run the same layers: price the step.
  if grep -q "^func.func @step(" "$model"; then
    "$OPT" "$model" --attn-cost-report=function=step -o /dev/null
  else
    "$OPT" "$model" --attn-cost-report -o /dev/null
  fi
  echo
done

source "$ROOT/scripts/venv.sh"
"$ATTNFUSE_PYTHON" "$ROOT/scripts/check_examples.py" --build "$BUILD_DIR" --batch 1 --seq 8
