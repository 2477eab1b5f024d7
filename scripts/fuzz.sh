#!/usr/bin/env bash
# Long fuzzing runs of the harnesses in fuzz/ (built with
# ATTNFUSE_ENABLE_FUZZERS, which scripts/build.sh --sanitize sets).
#   scripts/fuzz.sh [--runs=N] [--seconds=S] [--jobs=J] [NAME...]
# Each harness runs until it has executed N inputs (default 1000000) or for
# S seconds (default 3600), whichever comes first, on a corpus that starts
# from its seeds and is kept in build-asan/fuzz/NAME-corpus. The totals
# (inputs executed, seconds, corpus size, crashes) are written to
# bench/results/fuzz-DATE.md and .json; a crash stops that harness and its
# input is kept next to the corpus (NAME-corpus-crash-*).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ATTNFUSE_BUILD_DIR:-$ROOT/build-asan}"
RUNS=1000000
SECONDS_LIMIT=3600
NAMES=()
for arg in "$@"; do
  case "$arg" in
    --runs=*) RUNS="${arg#--runs=}" ;;
    --seconds=*) SECONDS_LIMIT="${arg#--seconds=}" ;;
    -*) echo "fuzz.sh: unknown option $arg" >&2; exit 2 ;;
    *) NAMES+=("$arg") ;;
  esac
done
if [ ${#NAMES[@]} -eq 0 ]; then
  NAMES=(attnfuse-runtime-expr-fuzzer attnfuse-runtime-manifest-fuzzer
         attnfuse-runtime-launch-fuzzer attnfuse-npy-fuzzer attnfuse-ir-fuzzer)
fi
for name in "${NAMES[@]}"; do
  [ -x "$BUILD_DIR/fuzz/$name" ] || {
    echo "fuzz.sh: $BUILD_DIR/fuzz/$name is not built (scripts/build.sh --sanitize)" >&2
    exit 1
  }
done

DATE="$(date -u +%Y-%m-%d)"
OUT="$ROOT/bench/results/fuzz-$DATE"
ROWS=()
for name in "${NAMES[@]}"; do
  corpus="$BUILD_DIR/fuzz/$name-corpus"
  mkdir -p "$corpus"
  # Seed a fresh corpus the way the ctest smoke run does.
  if [ -z "$(ls -A "$corpus")" ]; then
    (cd "$BUILD_DIR" && ctest -R "^fuzz/$name\$" >/dev/null) || true
  fi
  log="$BUILD_DIR/fuzz/$name-long.log"
  start=$(date +%s)
  status=0
  # The IR fuzzer runs libMLIR.so: see fuzz/CMakeLists.txt for why it needs
  # allow_user_poisoning=0.
  options=detect_leaks=1
  [ "$name" = attnfuse-ir-fuzzer ] && options="allow_user_poisoning=0:$options"
  ASAN_OPTIONS="$options" "$BUILD_DIR/fuzz/$name" -runs="$RUNS" \
    -max_total_time="$SECONDS_LIMIT" -print_final_stats=1 -timeout=25 \
    -rss_limit_mb=4096 -artifact_prefix="$corpus-" "$corpus" >"$log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$( (ls "$corpus"-crash-* "$corpus"-leak-* "$corpus"-timeout-* "$corpus"-oom-* 2>/dev/null || true) | wc -l)
  files=$(ls "$corpus" | wc -l)
  echo "$name: ${execs:-0} inputs in ${elapsed}s, corpus $files, crashes $crashes, exit $status" >&2
  ROWS+=("$name ${execs:-0} $elapsed $files $crashes $status")
done

{
  echo "# Fuzzing run, $DATE"
  echo
  echo "Command: \`scripts/fuzz.sh --runs=$RUNS --seconds=$SECONDS_LIMIT ${NAMES[*]}\`"
  echo "on $(nproc) cores, ASan + UBSan (build-asan, clang-22 libFuzzer)."
  echo
  echo "| harness | inputs executed | seconds | corpus files | crashes | exit |"
  echo "|---|---:|---:|---:|---:|---:|"
  for row in "${ROWS[@]}"; do
    set -- $row
    echo "| $1 | $2 | $3 | $4 | $5 | $6 |"
  done
} >"$OUT.md"
{
  echo "{\"date\": \"$DATE\", \"runs_target\": $RUNS, \"seconds_limit\": $SECONDS_LIMIT, \"harnesses\": ["
  sep=""
  for row in "${ROWS[@]}"; do
    set -- $row
    echo "  $sep{\"name\": \"$1\", \"executed\": $2, \"seconds\": $3, \"corpus_files\": $4, \"crashes\": $5, \"exit\": $6}"
    sep=","
  done
  echo "]}"
} >"$OUT.json"
echo "$OUT.md"
