#!/usr/bin/env bash
# One device call for the runtime issue (#16): the GPU-side kselect_tests (every GPU suite,
# kselect::Gemm checked against the reference among them), the selector's live benchmark (the
# cuBLASLt heuristic per new shape, cold and cached decisions), `kselect predict` deciding with
# the live heuristic, the example program built against the installed package, and the Python
# module's PyTorch check. Binaries built here without Arrow or LightGBM are carried in $BIN
# (scripts/device/make_selector_carry.sh). Logs land in $OUT; a short table is printed last.
set -uo pipefail
BIN="${BIN:-.devcarry-sel}"
OUT="${OUT:-/tmp/kselect-out}"
# The standard set-up less cuDNN from the wheels, with the cache always in /tmp/kselect-cache.
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh" --parts
mkdir -p "$OUT"
use_cuda_libs
use_carried_libs
use_repo_rules
export KSELECT_CACHE_DIR=/tmp/kselect-cache
# The binaries were built with /work/main as their source root (models, fixtures, rules).
link_source_root
record_gpu "$OUT/gpu.txt"
summary=()

start=$(date +%s)
timeout 330 "$BIN/kselect_tests" --gtest_filter="${GPU_TEST_FILTER:-*}" > "$OUT/tests.log" 2>&1
rc=$?
summary+=("kselect_tests rc=$rc $(grep -E 'tests ran' "$OUT/tests.log" | tail -1) $(grep -cE '^\[  FAILED  \] [A-Z]' "$OUT/tests.log") failed, $(( $(date +%s) - start )) s")
grep -E '^dispatch ' "$OUT/tests.log" > "$OUT/dispatch.txt"

timeout 120 "$BIN/kselect_bench_select_live" --benchmark_out="$OUT/bench_live.json" \
  --benchmark_out_format=json > "$OUT/bench_live.txt" 2>&1
summary+=("bench_select_live rc=$?")

{
  for shape in "4096 1 4096" "4096 16 4096" "14336 16 4096" "4096 2048 14336" "1000 7 3000"; do
    set -- $shape
    echo "--- m=$1 n=$2 k=$3"
    timeout 60 "$BIN/kselect" predict --model models/h200_cublaslt_default_bf16_tn --m "$1" --n "$2" \
      --k "$3" --layout rcc --top 3 --first-stage 64
  done
} > "$OUT/predict_live.txt" 2>&1
summary+=("predict live: $(grep -c 'decided by: model' "$OUT/predict_live.txt") of 5 decided by the model")

if [ -d "$BIN/install" ]; then
  start=$(date +%s)
  (cmake -S examples/select_gemm -B /tmp/example-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_PREFIX_PATH="$PWD/$BIN/install" && cmake --build /tmp/example-build \
     && /tmp/example-build/select_gemm models/h200_cublaslt_default_bf16_tn) > "$OUT/example.txt" 2>&1
  summary+=("example select_gemm rc=$? ($(grep -cE 'PASS' "$OUT/example.txt") PASS, $(grep -cE 'FAIL' "$OUT/example.txt") FAIL), $(( $(date +%s) - start )) s")
fi
if [ -f "$BIN/lib/libkselect_c.so" ]; then
  PYTHONPATH="$PWD/python" KSELECT_LIBRARY="$PWD/$BIN/lib/libkselect_c.so" timeout 180 \
    python3 scripts/device/python_check.py > "$OUT/python.txt" 2>&1
  summary+=("python_check rc=$?")
fi

echo
grep -E '^BM_' "$OUT/bench_live.txt"
cat "$OUT/dispatch.txt" | cut -c1-200
grep -E 'decided by|^---|^ *1 ' "$OUT/predict_live.txt" | head -20
tail -12 "$OUT/python.txt" 2>/dev/null
tail -8 "$OUT/example.txt" 2>/dev/null
printf '%s\n' "${summary[@]}"
