#!/usr/bin/env bash
# The GPU device check of AttnFuse, in two halves.
#
#   scripts/device-check.sh prepare DIR     (here: a machine with LLVM/MLIR, no GPU)
#       builds attnfuse-compile, writes single-layer models (MHA baseline, K=V, K=V + GQA-4/8,
#       K=V + MQA, GQA-4, CCA, ZAYA1-shaped CCGQA; head dim 128 and 64), compiles each with
#       --target=sm_90a, checks that the runtime builds and passes its tests without LLVM, and
#       copies the runtime sources, the cubins/PTX/manifests and the device scripts into DIR.
#       DIR is self-contained; under the repository use an ignored path such as build-device.
#
#   scripts/device-check.sh run DIR OUT      (on the device: CUDA driver, cmake, PyTorch;
#                                             no LLVM, no network; < 5 minutes)
#       builds the runtime from DIR/runtime with cmake, runs its ctest, then
#       DIR/device/device_bench.py: every kernel against a PyTorch f32 reference (bf16 inputs),
#       CUDA-event timings at S = 1k/4k/16k (32k tokens per launch) next to
#       torch SDPA (cuDNN and flash backends); writes OUT/results-<date>-<gpu>.json and .png.
#       Then DIR/device/decode_bench.py: the attn.flash_decode kernels (GQA 32/8 x 128, K=V and
#       separate K/V, bf16) at context 4k/32k/128k x batch 1/16/64: achieved GB/s over the bytes
#       the cache holds, against 4.8 TB/s and torch SDPA / flash_attn_with_kvcache, numerics
#       against a torch reference; writes OUT/decode-<date>-<gpu>.json and .md.
#
# Environment (prepare): ATTNFUSE_BUILD_DIR (default: build), ATTNFUSE_COMPILE (a prebuilt
# attnfuse-compile; skips the build). (run): DEVICE_CHECK_BUDGET_S (default 285),
# DEVICE_CHECK_DECODE_S (seconds kept for the decode check, default 100).
set -euo pipefail

usage() {
  sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:-}"
[ -n "$MODE" ] || usage

abspath() { mkdir -p "$1" && (cd "$1" && pwd); }

prepare() {
  local dir
  dir="$(abspath "$1")"
  local build="${ATTNFUSE_BUILD_DIR:-$ROOT/build}"
  local tool="${ATTNFUSE_COMPILE:-}"
  if [ -z "$tool" ]; then
    if [ ! -f "$build/build.ninja" ]; then
      local cc=() ; command -v clang++-22 >/dev/null && cc=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
      cmake -S "$ROOT" -B "$build" -G Ninja "${cc[@]}"
    fi
    ninja -C "$build" -j"${JOBS:-2}" attnfuse-compile
    tool="$build/bin/attnfuse-compile"
  fi
  echo "== attnfuse-compile: $tool"

  echo "== the runtime builds standalone (no LLVM) and its tests pass"
  local rtb="$dir/.host-runtime-build"
  rm -rf "$rtb"
  cmake -S "$ROOT/runtime" -B "$rtb" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$rtb" -j"${JOBS:-2}" >/dev/null
  (cd "$rtb" && ctest --output-on-failure)
  rm -rf "$rtb"

  echo "== layer models and kernels"
  rm -rf "$dir/layers" "$dir/kernels" "$dir/runtime" "$dir/device" "$dir/build-runtime"
  python3 "$ROOT/scripts/device/make_layers.py" "$ROOT" "$dir/layers"
  local ok=0 failed=0
  for mlir in "$dir"/layers/*.mlir; do
    case "$(basename "$mlir")" in decode_*) continue ;; esac
    local name
    name="$(basename "$mlir" .mlir)"
    if "$tool" "$mlir" --target=sm_90a -o "$dir/kernels/$name" >"$dir/layers/$name.log" 2>&1; then
      ok=$((ok + 1))
    else
      failed=$((failed + 1))
      echo "   $name: attnfuse-compile failed (see layers/$name.log)"
    fi
  done
  # Record per variant whether it compiled (and which kernels), for the device half.
  python3 - "$dir" <<'EOF'
import json, os, sys
d = sys.argv[1]
path = os.path.join(d, "layers", "variants.json")
variants = json.load(open(path))
for v in variants:
    man = os.path.join(d, "kernels", v["name"], "manifest.json")
    if os.path.exists(man):
        m = json.load(open(man))
        v["compiled"] = True
        v["kernels"] = [k["name"] for k in m["kernels"]]
        missing = [k["cubin"] for k in m["kernels"]
                   if not os.path.exists(os.path.join(d, "kernels", v["name"], k["cubin"]))]
        if missing:
            v["missing_cubins"] = missing
    else:
        v["compiled"] = False
        log = os.path.join(d, "layers", v["name"] + ".log")
        v["compile_error"] = open(log).read().strip().splitlines()[-1][:300] if os.path.exists(log) else "?"
json.dump(variants, open(os.path.join(d, "variants.json"), "w"), indent=2)
for v in variants:
    print(f"   {v['name']:18} {'ok: ' + ', '.join(v['kernels']) if v['compiled'] else 'FAILED: ' + v['compile_error']}")
EOF

  echo "== decode steps (attn.flash_decode)"
  cp "$dir/layers/decode_variants.json" "$dir/decode_variants.json"
  for mlir in "$dir"/layers/decode_*.mlir; do
    local name
    name="$(basename "$mlir" .mlir)"
    if "$tool" "$mlir" --target=sm_90a -o "$dir/kernels/$name" >"$dir/layers/$name.log" 2>&1; then
      echo "   $name ok"
    else
      echo "   $name: attnfuse-compile failed (see layers/$name.log)"
      exit 1
    fi
  done

  echo "== copying the runtime and the device scripts"
  mkdir -p "$dir/runtime" "$dir/device"
  (cd "$ROOT/runtime" && tar cf - --exclude='build*' --exclude='__pycache__' .) | (cd "$dir/runtime" && tar xf -)
  cp "$ROOT"/scripts/device/*.py "$dir/device/"
  cp "$ROOT/scripts/device-check.sh" "$dir/device-check.sh"
  {
    echo "prepared: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "tool: $tool"
    echo "ptxas: $(ptxas --version 2>/dev/null | tail -1 || echo not found)"
    echo "variants: $ok compiled, $failed failed"
  } >"$dir/PREPARED.txt"
  cat "$dir/PREPARED.txt"
  echo "== $(du -sh "$dir" | cut -f1) in $dir"
  echo "on the device: scripts/device-check.sh run $1 OUT   (or: $1/device-check.sh run $1 OUT)"
}

run() {
  local dir out
  dir="$(cd "$1" && pwd)"
  out="$(abspath "$2")"
  local start budget
  start=$(date +%s)
  budget="${DEVICE_CHECK_BUDGET_S:-285}"
  [ -f "$dir/variants.json" ] || { echo "error: $dir is not a prepared directory (run prepare first)"; exit 2; }
  cat "$dir/PREPARED.txt" || true
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/nvidia-smi.txt" || true

  echo "== building the runtime"
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  local rtb="$dir/build-runtime"
  cmake -S "$dir/runtime" -B "$rtb" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >"$out/runtime-cmake.log" 2>&1 \
    || { tail -30 "$out/runtime-cmake.log"; exit 1; }
  cmake --build "$rtb" -j"$(nproc)" >>"$out/runtime-cmake.log" 2>&1 \
    || { tail -30 "$out/runtime-cmake.log"; exit 1; }
  local ctest_summary
  if (cd "$rtb" && ctest --output-on-failure) >"$out/ctest.log" 2>&1; then
    ctest_summary="passed: $(grep -E 'tests passed' "$out/ctest.log" | tail -1)"
  else
    ctest_summary="FAILED: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)"
    tail -40 "$out/ctest.log"
  fi
  echo "ctest: $ctest_summary"
  local lib
  lib="$(find "$rtb" -name 'libattnfuse_runtime.so' | head -1)"
  [ -n "$lib" ] || { echo "error: libattnfuse_runtime.so not built"; exit 1; }

  local elapsed=$(( $(date +%s) - start ))
  local left=$(( budget - elapsed ))
  local deadline=$(( left - 35 ))
  [ "$deadline" -gt 30 ] || deadline=30
  echo "== kernels vs PyTorch ($left s left; variants get $deadline s)"
  # The decode check keeps a fixed share of the budget for after the prefill kernels.
  local decode_s="${DEVICE_CHECK_DECODE_S:-100}"
  local prefill_left=$(( left - decode_s ))
  [ "$prefill_left" -gt 60 ] || prefill_left=60
  deadline=$(( prefill_left - 35 ))
  [ "$deadline" -gt 30 ] || deadline=30
  timeout --kill-after=5 "$prefill_left" python3 "$dir/device/device_bench.py" --dir "$dir" \
    --lib "$lib" --out "$out" --deadline "$deadline" --ctest-summary "$ctest_summary" \
    || echo "device_bench.py: exit $?"
  left=$(( budget - ($(date +%s) - start) ))
  echo "== decode kernels ($left s left)"
  if [ "$left" -gt 20 ]; then
    timeout --kill-after=5 "$left" python3 "$dir/device/decode_bench.py" --dir "$dir" \
      --lib "$lib" --out "$out" --deadline "$(( left - 15 ))" || echo "decode_bench.py: exit $?"
  else
    echo "no time left for the decode check"
  fi
  echo "== done in $(( $(date +%s) - start )) s; results in $out"
  ls -la "$out"
}

case "$MODE" in
  prepare) [ $# -eq 2 ] || usage; prepare "$2" ;;
  run) [ $# -eq 3 ] || usage; run "$2" "$3" ;;
  *) usage ;;
esac
