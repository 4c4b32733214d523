#!/usr/bin/env bash
# One device call: `kselect bench --rules default` on shapes/loss_probe2_half.csv in the given
# layouts with the current bench, to compare its aborted rows with the same shapes' session-5 run
# (data/results/cublaslt_loss_probe/cublaslt_loss_probe_bf16_*.parquet). GPU binaries in $BIN;
# JSONL under $OUT.
set -uo pipefail
BIN="${BIN:-.devcarry}"
OUT="${OUT:-/tmp/kselect-out}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export KSELECT_RULES_DIR="$PWD/rules"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
for ops in ${LAYOUTS:-NN TT}; do
  t0=$(date +%s)
  timeout 200 "$BIN/kselect" bench --device-kind nvidia-h200 --shapes shapes/loss_probe2_half.csv \
    --dtype bf16 --ops "$ops" --rules default -o "$OUT/fix_${ops,,}.jsonl" > "$OUT/fix_${ops,,}.out" 2>&1
  echo "$ops rc=$? $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/fix_${ops,,}.out")"
done
