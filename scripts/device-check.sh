#!/usr/bin/env bash
# The GPU device check of AttnFuse, in two halves, and the same scripts on the emulator.
#
#   scripts/device-check.sh prepare DIR     (here: a machine with LLVM/MLIR, no GPU)
#       builds attnfuse-compile, writes single-layer models (MHA baseline, K=V, K=V + GQA-4/8,
#       K=V + MQA, GQA-4, CCA, ZAYA1-shaped CCGQA; head dim 128 and 64; the attention backward
#       of MHA d128/d64 and K=V + GQA-4 d128), compiles each with
#       --target=sm_90a, checks that the runtime builds and passes its tests without LLVM, and
#       copies the runtime sources, the cubins/PTX/manifests, the device scripts and the numpy
#       reference (integration_test/reference.py) into DIR. When the build has the emulator
#       (lib/libattnfuse_cudasim.so), it then runs the first-contact ladder on it and keeps the
#       results as DIR/ladder-emulator.json, what every step gave before any GPU ran it
#       (DEVICE_CHECK_EMULATE=0 skips this; it takes a few minutes on two cores).
#       DIR is self-contained; under the repository use an ignored path such as build-device.
#
#   scripts/device-check.sh run DIR OUT      (on the device: CUDA driver, cmake, PyTorch,
#                                             numpy; no LLVM, no network; < 7 minutes)
#       builds the runtime from DIR/runtime with cmake, runs its ctest, then
#       DIR/device/ladder.py, the first-contact ladder: one launch per step, each under its own
#       timeout, simplest first (driver, cubin / PTX-JIT loads and tensor-map encodes of every
#       manifest; an exact permutation GEMM; flash P.V alone with Q = 0 at d64 and d128; random
#       Q/K over three KV tiles and partial tiles; every layer kernel at S = 1 and S = 200;
#       decode; the CCA prologue), PASS/FAIL with the worst error against the numpy reference
#       next to the emulator's result; writes OUT/ladder.json. Then
#       DIR/device/device_bench.py: every kernel against a PyTorch f32 reference (bf16 inputs),
#       CUDA-event timings at S = 1k/4k/16k (32k tokens per launch) next to
#       torch SDPA (cuDNN and flash backends); writes OUT/results-<date>-<gpu>.json and .png.
#       Then DIR/device/decode_bench.py: the attn.flash_decode kernels (GQA 32/8 x 128, K=V and
#       separate K/V, bf16) at context 4k/32k/128k x batch 1/16/64: achieved GB/s over the bytes
#       the cache holds, against 4.8 TB/s and torch SDPA / flash_attn_with_kvcache, numerics
#       against a torch reference; writes OUT/decode-<date>-<gpu>.json and .md. Before it,
#       DIR/device/whole_model.py: the example model gpt300m_kv_gqa4 (20 layers) in one call
#       of its device program against the same model in eager PyTorch (F.linear, SDPA),
#       numerics and CUDA-event times; writes OUT/whole-model-<date>-<gpu>.json and .md.
#
#   scripts/device-check.sh prepare-emulator DIR      (no GPU; CI: ctest -L emulator)
#       compiles the same layer models and decode steps with the build's attnfuse-compile
#       (--no-cubin) into DIR and copies the device scripts and the reference next to them.
#   scripts/device-check.sh emulate DIR OUT ladder|bench|whole
#       runs the device scripts of DIR on the emulator through the build's runtime library
#       (ATTNFUSE_CUDA_DRIVER=libattnfuse_cudasim.so): the ladder, exactly as on a GPU; or
#       (bench) the numerics of device_bench.py and decode_bench.py at small shapes, with host
#       arrays copied through the runtime's memory API (no timings: the emulator has none);
#       or (whole) the whole example model through its device program against its eager
#       torch replay.
#
# Environment (prepare, prepare-emulator): ATTNFUSE_BUILD_DIR (default: build),
# ATTNFUSE_COMPILE (a prebuilt attnfuse-compile; skips the build), DEVICE_CHECK_VARIANTS (a
# regex: only these layer models and decode steps). (run): DEVICE_CHECK_BUDGET_S (default 405),
# DEVICE_CHECK_LADDER_S (seconds after which the ladder starts no step, default 120),
# DEVICE_CHECK_DECODE_S (seconds kept for the decode check, default 100). (emulate):
# ATTNFUSE_RUNTIME_LIB, ATTNFUSE_CUDA_DRIVER (default: the build's), ATTNFUSE_PYTHON (default
# python3; bench needs torch).
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:-}"
[ -n "$MODE" ] || usage

abspath() { mkdir -p "$1" && (cd "$1" && pwd); }

# compile_layers TOOL DIR [attnfuse-compile options]: the layer models and decode steps of
# make_layers.py, compiled for sm_90a into DIR/kernels, with DIR/variants.json recording per
# variant whether it compiled (and which kernels) and DIR/decode_variants.json.
# DEVICE_CHECK_VARIANTS (a regex) keeps only the matching variants.
compile_layers() {
  local tool="$1" dir="$2"
  shift 2
  echo "== layer models and kernels"
  rm -rf "$dir/layers" "$dir/kernels" "$dir/runtime" "$dir/device" "$dir/build-runtime"
  local py="${ATTNFUSE_PYTHON:-python3}"
  "$py" "$ROOT/scripts/device/make_layers.py" "$ROOT" "$dir/layers" ${DEVICE_CHECK_VARIANTS:+--only "$DEVICE_CHECK_VARIANTS"}
  local ok=0 failed=0
  for mlir in "$dir"/layers/*.mlir; do
    [ -e "$mlir" ] || continue
    case "$(basename "$mlir")" in decode_*) continue ;; esac
    local name
    name="$(basename "$mlir" .mlir)"
    # The ladder and the benchmarks launch kernel by kernel: no device programs.
    if "$tool" "$mlir" --target=sm_90a -o "$dir/kernels/$name" --no-programs "$@" >"$dir/layers/$name.log" 2>&1; then
      ok=$((ok + 1))
    else
      failed=$((failed + 1))
      echo "   $name: attnfuse-compile failed (see layers/$name.log)"
    fi
  done
  # Record per variant whether it compiled (and which kernels), for the device half.
  "$py" - "$dir" <<'EOF'
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
        missing = [k["cubin"] for k in m["kernels"] if k.get("cubin") and
                   not os.path.exists(os.path.join(d, "kernels", v["name"], k["cubin"]))]
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
    [ -e "$mlir" ] || continue  # DEVICE_CHECK_VARIANTS kept none
    local name
    name="$(basename "$mlir" .mlir)"
    if "$tool" "$mlir" --target=sm_90a -o "$dir/kernels/$name" --no-programs "$@" >"$dir/layers/$name.log" 2>&1; then
      echo "   $name ok"
    else
      echo "   $name: attnfuse-compile failed (see layers/$name.log)"
      exit 1
    fi
  done
  COMPILED_OK=$ok COMPILED_FAILED=$failed
}

# compile_whole TOOL DIR [attnfuse-compile options]: the whole example model of the device
# check (WHOLE_MODELS) into DIR/whole/<name>, its kernels and the device program of @model.
WHOLE_MODELS="${DEVICE_CHECK_WHOLE_MODELS:-gpt300m_kv_gqa4}"
compile_whole() {
  local tool="$1" dir="$2"
  shift 2
  echo "== whole models: $WHOLE_MODELS"
  rm -rf "$dir/whole"
  local name
  for name in ${WHOLE_MODELS//,/ }; do
    "$tool" "$ROOT/examples/$name.mlir" --target=sm_90a -o "$dir/whole/$name" "$@" \
      >"$dir/whole-$name.log" 2>&1 || { cat "$dir/whole-$name.log"; exit 1; }
    echo "   $name ok"
  done
}

# copy_scripts DIR: the device scripts, the numpy reference they compare with, and the
# pure-Python program launcher (attnfuse.runtime).
copy_scripts() {
  mkdir -p "$1/device"
  cp "$ROOT"/scripts/device/*.py "$1/device/"
  cp "$ROOT/python-bindings/attnfuse/runtime.py" "$1/device/runtime.py"
  cp "$ROOT/integration_test/reference.py" "$1/device/reference.py"
  cp "$ROOT/scripts/device-check.sh" "$1/device-check.sh"
}

# compile_tool: attnfuse-compile, built here unless ATTNFUSE_COMPILE names one.
compile_tool() {
  local build="${ATTNFUSE_BUILD_DIR:-$ROOT/build}"
  if [ -n "${ATTNFUSE_COMPILE:-}" ]; then
    echo "$ATTNFUSE_COMPILE"
    return
  fi
  if [ ! -f "$build/build.ninja" ]; then
    local cc=() ; command -v clang++-22 >/dev/null && cc=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
    cmake -S "$ROOT" -B "$build" -G Ninja "${cc[@]}" >&2
  fi
  ninja -C "$build" -j"${JOBS:-2}" attnfuse-compile >&2
  echo "$build/bin/attnfuse-compile"
}

prepare() {
  local dir
  dir="$(abspath "$1")"
  local build="${ATTNFUSE_BUILD_DIR:-$ROOT/build}"
  local tool
  tool="$(compile_tool)"
  echo "== attnfuse-compile: $tool"

  echo "== the runtime builds standalone (no LLVM) and its tests pass"
  local rtb="$dir/.host-runtime-build"
  rm -rf "$rtb"
  cmake -S "$ROOT/runtime" -B "$rtb" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$rtb" -j"${JOBS:-2}" >/dev/null
  (cd "$rtb" && ctest --output-on-failure)
  rm -rf "$rtb"

  compile_layers "$tool" "$dir"
  compile_whole "$tool" "$dir"

  echo "== copying the runtime and the device scripts"
  mkdir -p "$dir/runtime"
  (cd "$ROOT/runtime" && tar cf - --exclude='build*' --exclude='__pycache__' .) | (cd "$dir/runtime" && tar xf -)
  copy_scripts "$dir"
  {
    echo "prepared: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "tool: $tool"
    echo "ptxas: $(ptxas --version 2>/dev/null | tail -1 || echo not found)"
    echo "variants: $COMPILED_OK compiled, $COMPILED_FAILED failed"
  } >"$dir/PREPARED.txt"
  cat "$dir/PREPARED.txt"

  rm -f "$dir/ladder-emulator.json"
  local sim="${ATTNFUSE_CUDA_DRIVER:-$build/lib/libattnfuse_cudasim.so}"
  if [ "${DEVICE_CHECK_EMULATE:-1}" != 0 ] && [ -f "$sim" ] && [ -f "$build/lib/libattnfuse_runtime.so" ]; then
    echo "== the first-contact ladder on the emulator (the results a GPU should reproduce)"
    local eout="$dir/.ladder-emulator"
    rm -rf "$eout"
    ATTNFUSE_CUDA_DRIVER="$sim" "${ATTNFUSE_PYTHON:-python3}" "$dir/device/ladder.py" \
      --dir "$dir" --lib "$build/lib/libattnfuse_runtime.so" --out "$eout" \
      --budget 1800 --step-timeout 600 --env-timeout 600 || true
    [ -f "$eout/ladder.json" ] && cp "$eout/ladder.json" "$dir/ladder-emulator.json"
    rm -rf "$eout"
  fi
  echo "== $(du -sh "$dir" | cut -f1) in $dir"
  echo "on the device: scripts/device-check.sh run $1 OUT   (or: $1/device-check.sh run $1 OUT)"
}

prepare_emulator() {
  local dir tool
  dir="$(abspath "$1")"
  tool="$(compile_tool)"
  echo "== attnfuse-compile: $tool (PTX only: the emulator runs no cubin)"
  compile_layers "$tool" "$dir" --no-cubin
  compile_whole "$tool" "$dir" --no-cubin
  copy_scripts "$dir"
  echo "prepared for the emulator: $(date -u +%Y-%m-%dT%H:%M:%SZ); variants: $COMPILED_OK compiled, $COMPILED_FAILED failed" \
    >"$dir/PREPARED.txt"
  cat "$dir/PREPARED.txt"
}

emulate() {
  local dir out what="$3"
  dir="$(cd "$1" && pwd)"
  out="$(abspath "$2")"
  local build="${ATTNFUSE_BUILD_DIR:-$ROOT/build}"
  local lib="${ATTNFUSE_RUNTIME_LIB:-$build/lib/libattnfuse_runtime.so}"
  export ATTNFUSE_CUDA_DRIVER="${ATTNFUSE_CUDA_DRIVER:-$build/lib/libattnfuse_cudasim.so}"
  local py="${ATTNFUSE_PYTHON:-python3}"
  [ -f "$dir/variants.json" ] || { echo "error: $dir is not a prepared directory (run prepare-emulator first)"; exit 2; }
  [ -f "$lib" ] && [ -f "$ATTNFUSE_CUDA_DRIVER" ] || { echo "error: $lib or $ATTNFUSE_CUDA_DRIVER missing"; exit 2; }
  echo "== on the emulator: $ATTNFUSE_CUDA_DRIVER, runtime $lib"
  case "$what" in
    ladder)
      # The emulator runs a launch in seconds, not microseconds: generous step timeouts.
      "$py" "$dir/device/ladder.py" --dir "$dir" --lib "$lib" --out "$out" \
        --budget "${DEVICE_CHECK_LADDER_S:-1800}" --step-timeout 600 --env-timeout 600
      ;;
    bench)
      local rc=0
      # A d64 K=V GQA-4 layer and a d128 MHA layer: projection GEMMs and FlashAttention;
      # the d128 MHA attention backward (dQ, then dK/dV).
      "$py" "$dir/device/device_bench.py" --dir "$dir" --lib "$lib" --out "$out" \
        --only "${DEVICE_CHECK_BENCH_VARIANTS:-^(kv_gqa4_d64|mha_d128|grad_mha_d128)\$}" \
        --deadline 1200 --stall-seconds 600 --require-pass || rc=1
      "$py" "$dir/device/decode_bench.py" --dir "$dir" --lib "$lib" --out "$out" \
        --deadline 1200 --require-pass || rc=1
      return $rc
      ;;
    whole)
      # The example model end to end through its device program (host arrays), against
      # its eager torch replay.
      "$py" "$dir/device/whole_model.py" --dir "$dir" --lib "$lib" --out "$out" --require-pass
      ;;
    *) usage ;;
  esac
}

run() {
  local dir out
  dir="$(cd "$1" && pwd)"
  out="$(abspath "$2")"
  local start budget
  start=$(date +%s)
  budget="${DEVICE_CHECK_BUDGET_S:-405}"
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

  echo "== first-contact ladder"
  local expected=()
  [ -f "$dir/ladder-emulator.json" ] && expected=(--expected "$dir/ladder-emulator.json")
  local ladder_s="${DEVICE_CHECK_LADDER_S:-120}"
  # The budget bounds when a step may start; the kill bound adds one step's timeout.
  timeout --kill-after=5 "$(( ladder_s + 200 ))" python3 "$dir/device/ladder.py" --dir "$dir" \
    --lib "$lib" --out "$out" --budget "$ladder_s" "${expected[@]}" \
    || echo "ladder.py: exit $? (see OUT/ladder.json)"

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
  local whole_s="${DEVICE_CHECK_WHOLE_S:-60}"
  echo "== whole model vs eager PyTorch ($left s left; $whole_s s for it)"
  if [ "$left" -gt $(( decode_s / 2 + 20 )) ]; then
    timeout --kill-after=5 "$whole_s" python3 "$dir/device/whole_model.py" --dir "$dir" \
      --lib "$lib" --out "$out" || echo "whole_model.py: exit $?"
  else
    echo "no time left for the whole-model check"
  fi
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
  prepare-emulator) [ $# -eq 2 ] || usage; prepare_emulator "$2" ;;
  emulate) [ $# -eq 4 ] || usage; emulate "$2" "$3" "$4" ;;
  *) usage ;;
esac
