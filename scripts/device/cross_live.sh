#!/usr/bin/env bash
# Live check of cross-provider models (#18): the GPU tests of cross-provider dispatch, then per
# entry of CROSS_RUNS ("model_dir:time_top_k[:warm|:eager] ...", warm = first-use timing on the
# caller's operands, --cross-first-use-warm-l2, instead of rotating them past L2 as by default;
# eager = its batches as eager launches, --cross-first-use-eager, instead of CUDA graphs)
# `kselect tile bench --cross-only` on CROSS_SHAPES (default shapes/holdout_framework.csv, the
# 174 LLM test shapes never trained on): cuBLASLt's pick and the decision (with time_top_k >= 2:
# what kselect::Gemm ran after timing the candidates of both providers at first use) timed
# interleaved, in the same call for every entry.
# Then, when set: CAPI=1 runs the C API test on the GPU with the cross-provider model;
# E2E_RUNS ("model_dir:time_top_k ...") runs scripts/device/llama_e2e.py e2e with each (a Llama 3
# 8B-shaped model in PyTorch, prefill and decode steps as CUDA graphs, plain PyTorch vs kselect).
# Binaries in $BIN (kselect, kselect_tests, kselect_c_api_test, lib/libkselect_c.so).
set -uo pipefail
BIN="${BIN:-.devcarry-bench}"
OUT="${OUT:-/tmp/kselect-out}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"
if [ -n "${TEST_FILTER:-}" ]; then gpu_tests "${TEST_SECONDS:-240}" "$TEST_FILTER"; fi
for run in ${CROSS_RUNS-models/h200_cross_bf16_tn:0 models/h200_cross_bf16_tn_rank:2}; do
  IFS=: read -r model k warm <<< "$run"
  name="cross_$(basename "$model")_k$k"
  warm_flag=()
  if [ "${warm:-}" = warm ]; then
    name="${name}_warm"
    warm_flag=(--cross-first-use-warm-l2)
  elif [ "${warm:-}" = eager ]; then
    name="${name}_eager"
    warm_flag=(--cross-first-use-eager)
  fi
  timeout "${CROSS_TIMEOUT:-200}" "$BIN/kselect" tile bench --rules default --cross-model "$model" \
    --cross-only --cross-time-top-k "$k" "${warm_flag[@]}" --rounds "${ROUNDS:-15}" \
    --shapes "${CROSS_SHAPES:-shapes/holdout_framework.csv}" \
    --device-kind nvidia-h200 --run-id "${RUN_ID:-h200-cross-live}-$(basename "$model")-k$k${warm:+-$warm}" \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  rc=$?
  geo=$(python3 -c "import json,sys; s=json.load(open('$OUT/$name.json'))['summary']; print(*(s.get(k) for k in ('geomean_cross_pick_over_cublaslt_pick', 'worst_cross_pick_over_cublaslt_pick', 'cross_picks_below_0_98_of_cublaslt_pick', 'first_use_vendor_kept', 'problems_with_a_cross_pick')))" 2>/dev/null)
  summary+=("$name rc=$rc geomean, worst, below 0.98, vendor kept, problems: $geo, $(lap)")
  gzip -f "$OUT/$name.json"
done
if [ "${CAPI:-0}" = 1 ]; then
  mkdir -p /tmp/capi_scratch
  # The test binary asks for the library's soname; the carry holds the plain name only.
  [ -e "$BIN/lib/libkselect_c.so.0.1" ] || ln -s libkselect_c.so "$BIN/lib/libkselect_c.so.0.1"
  timeout 120 "$BIN/kselect_c_api_test" models/h200_cublaslt_default /tmp/capi_scratch \
    models/h200_cross_bf16_tn_rank > "$OUT/capi.txt" 2>&1
  summary+=("c_api_test rc=$? $(tail -1 "$OUT/capi.txt"), $(lap)")
fi
for run in ${E2E_RUNS:-}; do
  model=${run%:*}
  k=${run##*:}
  name="e2e_$(basename "$model")_k$k"
  PYTHONPATH="$PWD/python" KSELECT_LIBRARY="$PWD/$BIN/lib/libkselect_c.so" timeout "${E2E_TIMEOUT:-240}" \
    python3 scripts/device/llama_e2e.py e2e --out "$OUT/$name" --layers "${LAYERS:-8}" \
    --model "$model" --time-top-k "$k" > "$OUT/$name.txt" 2>&1
  summary+=("$name rc=$? $(tail -1 "$OUT/$name.txt" | python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print('prefill', round(j['prefill']['speedup'],4), 'decode', round(j['decode']['speedup'],4), 'rel', j['decode_logits_rel_diff'])" 2>/dev/null), $(lap)")
done
pack_logs
echo "== summary"
print_summary
