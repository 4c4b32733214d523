#!/usr/bin/env bash
# Live check of cross-provider models (#18): the GPU tests of cross-provider dispatch, then per
# entry of CROSS_RUNS ("model_dir:time_top_k ...") `kselect tile bench --cross-only` on
# CROSS_SHAPES (default shapes/holdout_framework.csv, the 174 LLM test shapes never trained on):
# cuBLASLt's pick and the decision (with time_top_k >= 2: what kselect::Gemm ran after timing the
# candidates of both providers at first use) timed interleaved, in the same call for every entry.
# Binaries in $BIN (kselect, kselect_tests).
set -uo pipefail
BIN="${BIN:-.devcarry-bench}"
OUT="${OUT:-/tmp/kselect-out}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"
if [ -n "${TEST_FILTER:-}" ]; then gpu_tests "${TEST_SECONDS:-240}" "$TEST_FILTER"; fi
for run in ${CROSS_RUNS:-models/h200_cross_bf16_tn:0 models/h200_cross_bf16_tn_rank:2}; do
  model=${run%:*}
  k=${run##*:}
  name="cross_$(basename "$model")_k$k"
  timeout "${CROSS_TIMEOUT:-200}" "$BIN/kselect" tile bench --rules default --cross-model "$model" \
    --cross-only --cross-time-top-k "$k" --rounds "${ROUNDS:-15}" \
    --shapes "${CROSS_SHAPES:-shapes/holdout_framework.csv}" \
    --device-kind nvidia-h200 --run-id "${RUN_ID:-h200-cross-live}-$(basename "$model")-k$k" \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  rc=$?
  geo=$(python3 -c "import json,sys; j=json.load(open('$OUT/$name.json')); print(j['summary'].get('geomean_cross_pick_over_cublaslt_pick'), j['summary'].get('problems_with_a_cross_pick'))" 2>/dev/null)
  summary+=("$name rc=$rc geomean/pick, problems: $geo, $(lap)")
  gzip -f "$OUT/$name.json"
done
pack_logs
echo "== summary"
printf '%s\n' "${summary[@]}"
