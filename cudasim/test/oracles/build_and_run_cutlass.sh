#!/usr/bin/env bash
# Independent oracle for the emulator: CUTLASS 3.x sm90 warp-specialized GEMMs (TMA loads, wgmma,
# mbarrier pipelines; TMA-store epilogues for the pingpong and cooperative schedules) compiled to
# PTX by nvcc, loaded and launched by libattnfuse_cudasim.so, checked against a double-precision
# host reference (see cutlass_gemm_oracle.cu for the tolerances: small-integer inputs must match
# exactly, N(0,1) inputs within the f32-summation bound).
#
# usage: build_and_run_cutlass.sh [--cudasim LIBATTNFUSE_CUDASIM.so] [--work DIR] [--quick]
#
# Finds nvcc ($NVCC, PATH, /usr/local/cuda/bin) and the CUTLASS headers ($CUTLASS_INCLUDE: the
# directory holding cutlass/cutlass.h and cute/; else the pip package nvidia-cutlass, whose
# cutlass_library ships them under source/include). Without either it prints 'SKIP: reason' and
# exits 0. Without --cudasim it builds the emulator from this checkout into WORK/cudasim.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CUDASIM_SRC="$(cd "$HERE/../.." && pwd)"
LIB=""
WORK="${TMPDIR:-/tmp}/cudasim-oracles"
QUICK=0
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
  for py in python3 python; do
    d="$($py -c 'import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include"))' 2>/dev/null || true)"
    if [ -n "$d" ] && [ -f "$d/cutlass/cutlass.h" ]; then INC="$d"; break; fi
  done
fi
if [ -z "$INC" ] || [ ! -f "$INC/cutlass/cutlass.h" ] || [ ! -f "$INC/cute/tensor.hpp" ]; then
  echo "SKIP: CUTLASS headers not found (set CUTLASS_INCLUDE to the directory with cutlass/ and cute/," \
       "or pip install nvidia-cutlass)"
  exit 0
fi
if ! grep -q "KernelTmaWarpSpecializedCooperative" "$INC/cutlass/gemm/dispatch_policy.hpp" 2>/dev/null; then
  echo "SKIP: $INC is not a CUTLASS 3.x/4.x include tree (no sm90 dispatch policies)"
  exit 0
fi

mkdir -p "$WORK"
if [ -z "$LIB" ]; then
  cmake -S "$CUDASIM_SRC" -B "$WORK/cudasim" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DATTNFUSE_CUDASIM_TESTS=OFF >/dev/null
  ninja -j1 -C "$WORK/cudasim" attnfuse_cudasim >/dev/null
  LIB="$WORK/cudasim/libattnfuse_cudasim.so"
fi
LIBDIR="$(cd "$(dirname "$LIB")" && pwd)"

echo "nvcc: $NVCC ($("$NVCC" --version | tail -1))"
echo "CUTLASS: $INC"
echo "emulator: $LIB"

FLAGS=(-std=c++17 --expt-relaxed-constexpr -DNDEBUG -I"$INC")
SRC="$HERE/cutlass_gemm_oracle.cu"

# config name, ORACLE_SCHEDULE, ORACLE_BF16_OUT, emulator checks to switch off (- for none).
# (The ws configuration's DefaultEpilogue loads C with CUTLASS's predicated global load,
#   mov.b32 %r249, %r251; @p ld.global.L2::128B.u32 %r249, [%rd83];
# whose first operand is the register of an uninitialised C++ variable: a copy, which the
# emulator's register-init check passes on rather than flags.)
CONFIGS=("ws 1 0 -" "pingpong 2 0 -" "coop 3 0 -" "coop-bf16 3 1 -")
fails=0
for cfg in "${CONFIGS[@]}"; do
  read -r name sched bf16 nocheck <<<"$cfg"
  disable="${CUDASIM_DISABLE_CHECKS:-}"
  [ "$nocheck" != - ] && disable="${disable:+$disable,}$nocheck"
  ptx="$WORK/gemm_$name.ptx" host="$WORK/gemm_$name"
  defs=(-DORACLE_SCHEDULE="$sched" -DORACLE_BF16_OUT="$bf16")
  # PTX of cutlass::device_kernel<GemmKernel> for sm_90a, and the host program (its Params and TMA
  # descriptors come from CUTLASS's own to_underlying_arguments, through the emulator's driver API).
  if [ ! -s "$ptx" ] || [ "$SRC" -nt "$ptx" ]; then
    "$NVCC" -arch=sm_90a -ptx "${FLAGS[@]}" "${defs[@]}" -DORACLE_EMIT_KERNEL "$SRC" -o "$ptx"
  fi
  if [ ! -x "$host" ] || [ "$SRC" -nt "$host" ]; then
    "$NVCC" -arch=sm_90a "${FLAGS[@]}" "${defs[@]}" -DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL "$SRC" \
            -o "$host" -L"$LIBDIR" -lattnfuse_cudasim -Xlinker -rpath="$LIBDIR"
  fi
  # M N K data alpha beta [sm_count]: a square shape, a shape no tile divides (partial tiles in M,
  # N and K; TMA zero-fills the loads and clips the stores), a long K (the pipeline wraps its
  # stages several times), and a persistent run with 2 CTAs looping over 12 tiles.
  runs=("256 256 256 int 1 0" "200 136 520 int 1 1" "129 80 72 normal 1 0.25")
  [ "$QUICK" = 1 ] || runs+=("256 256 1024 normal 1.5 -0.5" "384 512 128 int 1 1 2")
  for r in "${runs[@]}"; do
    read -r m n k data alpha beta sms <<<"$r"
    echo "== $name: $m x $n x $k $data alpha=$alpha beta=$beta${sms:+ sm_count=$sms}${disable:+ (checks off: $disable)}"
    if ! ORACLE_SM_COUNT="${sms:-132}" CUDASIM_DISABLE_CHECKS="$disable" "$host" "$ptx" "$m" "$n" "$k" "$data" \
         "$alpha" "$beta"; then
      fails=$((fails + 1))
    fi
  done
done
if [ "$fails" -gt 0 ]; then echo "FAILED: $fails run(s)"; exit 1; fi
echo "ALL PASSED"
