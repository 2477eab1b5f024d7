#!/usr/bin/env bash
# Independent oracle for the emulator: FlashAttention-3's Hopper forward kernel (flash-attention's
# hopper/ directory; hdim 128, bf16, one-CTA cluster; non-causal with its static persistent
# scheduler and causal with its dynamic (atomic tile counter) scheduler), compiled to PTX by nvcc,
# run on libattnfuse_cudasim.so and checked against a double-precision softmax(Q K^T / sqrt(d)) V
# (see fa3_fwd_oracle.cu for the tolerances).
#
# usage: build_and_run_fa3.sh [--cudasim LIBATTNFUSE_CUDASIM.so] [--work DIR] [--quick]
#
# Needs nvcc, the CUTLASS headers (as build_and_run_cutlass.sh finds them) and FA3's sources:
# $FA3_HOPPER (the hopper/ directory of a flash-attention checkout). Without them it prints
# 'SKIP: reason' and exits 0.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CUDASIM_SRC="$(cd "$HERE/../.." && pwd)"
LIB="" WORK="${TMPDIR:-/tmp}/cudasim-oracles" QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cudasim) LIB="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
NVCC="${NVCC:-$(command -v nvcc || true)}"
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then echo "SKIP: nvcc not found (set NVCC)"; exit 0; fi
INC="${CUTLASS_INCLUDE:-}"
if [ -z "$INC" ]; then
  INC="$(python3 -c 'import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include"))' 2>/dev/null || true)"
fi
if [ -z "$INC" ] || [ ! -f "$INC/cutlass/cutlass.h" ]; then
  echo "SKIP: CUTLASS headers not found (set CUTLASS_INCLUDE)"; exit 0
fi
FA3="${FA3_HOPPER:-}"
if [ -z "$FA3" ] || [ ! -f "$FA3/flash_fwd_kernel_sm90.h" ]; then
  echo "SKIP: FlashAttention-3 sources not found (set FA3_HOPPER to flash-attention/hopper)"; exit 0
fi
mkdir -p "$WORK"
if [ -z "$LIB" ]; then
  cmake -S "$CUDASIM_SRC" -B "$WORK/cudasim" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DATTNFUSE_CUDASIM_TESTS=OFF >/dev/null
  ninja -j1 -C "$WORK/cudasim" attnfuse_cudasim >/dev/null
  LIB="$WORK/cudasim/libattnfuse_cudasim.so"
fi
LIBDIR="$(cd "$(dirname "$LIB")" && pwd)"
echo "nvcc: $NVCC; CUTLASS: $INC; FA3: $FA3; emulator: $LIB"
FLAGS=(-std=c++17 --expt-relaxed-constexpr --expt-extended-lambda -DNDEBUG -diag-suppress 177
       -I"$INC" -I"$FA3")
SRC="$HERE/fa3_fwd_oracle.cu"
fails=0
for causal in 0 1; do
  ptx="$WORK/fa3_d128_c$causal.ptx" host="$WORK/fa3_d128_c$causal"
  if [ ! -s "$ptx" ] || [ "$SRC" -nt "$ptx" ]; then
    "$NVCC" -arch=sm_90a -ptx "${FLAGS[@]}" -DFA3_CAUSAL=$causal -DORACLE_EMIT_KERNEL "$SRC" -o "$ptx"
  fi
  if [ ! -x "$host" ] || [ "$SRC" -nt "$host" ]; then
    "$NVCC" -arch=sm_90a "${FLAGS[@]}" -DFA3_CAUSAL=$causal -DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL \
            "$SRC" -o "$host" -L"$LIBDIR" -lattnfuse_cudasim -Xlinker -rpath="$LIBDIR"
  fi
  # B H Sq Sk [sm_count]: one tile row, shapes no tile divides (partial query and key blocks,
  # Sq != Sk), and a persistent run with 2 CTAs looping over 6 tiles.
  runs=("1 2 256 256" "2 3 200 333")
  [ "$QUICK" = 1 ] || runs+=("1 2 384 512 2")
  for r in "${runs[@]}"; do
    read -r b h sq sk sms <<<"$r"
    echo "== fa3 causal=$causal: B=$b H=$h Sq=$sq Sk=$sk${sms:+ sm_count=$sms}"
    if ! ORACLE_SM_COUNT="${sms:-132}" "$host" "$ptx" "$b" "$h" "$sq" "$sk"; then
      fails=$((fails + 1))
    fi
  done
done
if [ "$fails" -gt 0 ]; then echo "FAILED: $fails run(s)"; exit 1; fi
echo "ALL PASSED"
