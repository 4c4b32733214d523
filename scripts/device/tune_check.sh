#!/usr/bin/env bash
# One device call for the tuner on real application traces (#48): the tuner's GPU tests, then per
# trace (a PyTorch model's cuBLASLt log, captured here): `kselect tune` with a whole-run budget
# (report: the tuned library, the model-only pick and the best of cuBLASLt's top 8, each measured
# against the default pick in the same interleaved rounds), its wall time, and `kselect replay`
# of the whole trace with the library. Optionally PyTorch TunableOp on the first trace and the
# model's prefill and decode steps through kselect's library. Binaries come in $BIN (built here
# without Arrow or LightGBM: scripts/device/make_selector_carry.sh). Logs land in $OUT.
#   TRACES ("llama3-8b:8 qwen2.5-14b:4": dims:batch per trace), LAYERS (8), BUDGET_TOTAL (s of
#   search per device, 60), MODEL, TESTS (1), TUNABLEOP (0), E2E (0), TUNE_ARGS (extra)
set -uo pipefail
BIN="${BIN:-.devcarry-layer}"
OUT="${OUT:-/tmp/kselect-out}"
LAYERS="${LAYERS:-8}"
BUDGET_TOTAL="${BUDGET_TOTAL:-60}"
TRACES="${TRACES:-llama3-8b:8 qwen2.5-14b:4}"
MODEL="${MODEL:-models/h200_cublaslt_default_bf16_tn}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"

[ "${TESTS:-1}" = 1 ] && gpu_tests 200 "${GPU_TEST_FILTER:-*Tune*:*Genetic*:*SearchSpace*:*GemmLog*:*SupportMatrix*}"
python3 -c "import torch; print(torch.__version__)" > "$OUT/torch.txt" 2>&1

first=1
for trace in $TRACES; do
  dims=${trace%%:*}
  batch=${trace##*:}
  dir="$OUT/$dims"
  mkdir -p "$dir"
  timeout 240 python3 scripts/device/llama_e2e.py capture --out "$dir" --layers "$LAYERS" \
    --dims "$dims" --batch "$batch" > "$dir/capture.txt" 2>&1
  summary+=("$dims capture rc=$? $(grep -c cublasLtMatmul "$dir/cublaslt_trace.log" 2>/dev/null) matmul lines, $(lap)")
  gzip -k -f "$dir/cublaslt_trace.log" 2>/dev/null
  "$BIN/kselect" log summarize "$dir/cublaslt_trace.log" > "$dir/summary.txt" 2>&1

  TUNABLEOP_ARGS=()
  if [ "${TUNABLEOP:-0}" = 1 ] && [ "$first" = 1 ]; then
    timeout 300 python3 scripts/device/llama_e2e.py tunableop --out "$dir" --layers "$LAYERS" \
      --dims "$dims" --batch "$batch" > "$dir/tunableop.txt" 2>&1
    summary+=("$dims tunableop rc=$?, $(lap)")
    s=$(tail -1 "$dir/tunableop.txt" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["tuning_s"])' 2>/dev/null || echo -1)
    [ -f "$dir/tunableop_results0.csv" ] && TUNABLEOP_ARGS=(--tunableop "$dir/tunableop_results0.csv" --tunableop-seconds "$s")
  fi

  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  timeout 400 "$BIN/kselect" tune "$dir/cublaslt_trace.log" --model "$MODEL" -o "$dir/tune" \
    --budget-total "$BUDGET_TOTAL" --device-kind nvidia-h200 "${TUNABLEOP_ARGS[@]}" ${TUNE_ARGS:-} \
    > "$dir/tune.txt" 2>&1
  rc=$?
  wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  summary+=("$dims tune rc=$rc $(grep -c '^\[' "$dir/tune.txt") GEMMs in ${wall} s wall, $(lap)")
  echo "$wall" > "$dir/tune_wall_s.txt"

  timeout 150 "$BIN/kselect" replay "$dir/cublaslt_trace.log" --library "$dir/tune/solutions.json" \
    --device-kind nvidia-h200 > "$dir/replay.txt" 2>&1
  summary+=("$dims replay rc=$? $(grep uplift "$dir/replay.txt" | tr -s ' '), $(lap)")

  if [ "${E2E:-0}" = 1 ] && [ "$first" = 1 ]; then
    PYTHONPATH="$PWD/python" KSELECT_LIBRARY="$PWD/$BIN/lib/libkselect_c.so" timeout 300 \
      python3 scripts/device/llama_e2e.py e2e --out "$dir" --layers "$LAYERS" --model "$MODEL" \
      --dims "$dims" --batch "$batch" --library "$dir/tune/solutions.json" > "$dir/e2e.txt" 2>&1
    summary+=("$dims e2e rc=$?, $(lap)")
  fi
  first=0
done

# The lender brings back a few files only: everything else travels in one archive (the traces
# compressed).
tar czf /tmp/logs.tar.gz -C "$OUT" --exclude='cublaslt_trace.log' . 2>/dev/null
echo
grep -E '^\[  FAILED|Failure' "$OUT/tests.log" 2>/dev/null | head -20 | cut -c1-300
grep -E '^(tune|replay) ' "$OUT/tests.log" 2>/dev/null | cut -c1-260
for trace in $TRACES; do
  dir="$OUT/${trace%%:*}"
  echo "== ${trace}"
  grep -E '^\[' "$dir/tune.txt" | cut -c1-330
  sed -n '/| choice/,/^$/p' "$dir/tune.txt"
  grep -E "GEMMs, .* tuned" "$dir/tune.txt" | cut -c1-400
  cat "$dir/replay.txt"
  [ -f "$dir/e2e.txt" ] && tail -1 "$dir/e2e.txt" | cut -c1-900
done
print_summary
find "$OUT" -mindepth 1 -delete && mv /tmp/logs.tar.gz "$OUT/"
