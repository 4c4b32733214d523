#!/usr/bin/env bash
# The shipped datasets summarised, and the baselines report of the bf16 TN cuBLASLt data
# (cuBLASLt's own picks vs the measured best; what the `default` catalogue loses against a sample
# of the full config space). Reads whole datasets: about 6 GB of memory on the 1.2M-row file.
#
#   scripts/data_summary.sh      # after scripts/run.sh (or scripts/setup.sh) built kselect
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KSELECT="${BUILD_DIR:-$ROOT/build}/bin/kselect"
[ -x "$KSELECT" ] || { echo "data_summary.sh: build kselect first (scripts/run.sh)" >&2; exit 1; }

echo "=== shipped datasets (measured on an nvidia-h200)"
for dataset in "$ROOT"/data/h200/*.parquet; do
  echo "--- ${dataset#$ROOT/}"
  "$KSELECT" data info "$dataset" | head -9
done

echo
echo "=== baselines of the bf16 TN cuBLASLt data"
"$KSELECT" data report "$ROOT/data/h200/cublaslt_default_bf16_tn_wide.parquet" \
  --full-sample "$ROOT/data/results/cublaslt_loss_probe/cublaslt_full_sample_bf16_tn_loss_probe.parquet" \
  "$ROOT/data/results/cublaslt_loss_probe/cublaslt_loss_probe_bf16_tn_probe2.parquet" \
  --rules-dir "$ROOT/rules" | awk '/^## /{on=1} /^Worst top-1/{on=0} /^### Rule set/{on=1}
    on && /^\\| m x n x k/{on=0; done=1} on && !done'

echo
echo "=== the bf16 TN ranker on its whole test set (174 shapes, never trained on)"
"$KSELECT" eval --model "$ROOT/models/h200_cublaslt_default_bf16_tn" \
  --data "$ROOT/data/h200/cublaslt_default_bf16_tn_holdout.parquet"
