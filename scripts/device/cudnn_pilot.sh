#!/bin/bash
# The cuDNN provider on the device after the conv reference landed: the provider's and the conv
# reference's GPU tests, then a pilot `kselect bench` of the conv validation set (a 1-in-SHARDS
# sample of its problems, all three directions mixed) for PILOT_SECONDS. Run from the
# repository root with the GPU-side build carried in BIN; one archive of logs comes back.
BIN=${BIN:-.devcarry-sel}
OUT=${OUT:-/tmp/out}
source scripts/device/check_common.sh
mkdir -p "$OUT/logs"
gpu_tests "${TEST_SECONDS:-200}" "${GPU_TEST_FILTER:-Cudnn*:ConvReference*}"
mv "$OUT/tests.log" "$OUT/logs/"
s=$(date +%s)
timeout "${PILOT_SECONDS:-420}" "$BIN/kselect" bench --shapes shapes/conv_validation.csv \
  --provider cudnn --rules default --rules-dir rules --conv-direction fwd,bwd_data,bwd_weight \
  --shard "0/${SHARDS:-8}" --run-id "${RUN_ID:-h200-cudnn-validation-pilot}" \
  -o "$OUT/logs/cudnn_validation_pilot.jsonl" > "$OUT/logs/bench.log" 2>&1
summary+=("bench rc=$? $(( $(date +%s) - s )) s, $(grep -c '"type":"problem_done"' "$OUT/logs/cudnn_validation_pilot.jsonl") problems done, $(wc -l < "$OUT/logs/cudnn_validation_pilot.jsonl") lines")
tail -3 "$OUT/logs/bench.log"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
(cd "$OUT" && tar czf logs.tar.gz logs && rm -rf logs)
