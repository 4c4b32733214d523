#!/usr/bin/env bash
# kselect's main job on a fresh machine: set-up (idempotent), build, then the pipeline stages that
# exist today, on the data this repository ships.
#
#   scripts/run.sh            # -> out/dataset.parquet and a summary of it
#
# The shipped data are benchmark datasets measured on an nvidia-h200 (data/h200/*.parquet) and the
# models trained on them (models/*); the main job summarises the datasets, ranks kernels for sample
# LLM GEMMs with the shipped models (no GPU needed), and turns the sample benchmark logs (kselect
# JSONL and an AMD CK Tile log) into canonical datasets under out/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR
die() { echo "run.sh: ERROR: $*" >&2; exit 1; }

"$ROOT/scripts/setup.sh" || die "scripts/setup.sh failed (see above)"
KSELECT="$BUILD_DIR/bin/kselect"
[ -x "$KSELECT" ] || die "$KSELECT was not built"
mkdir -p "$ROOT/out"

echo "=== shipped datasets (measured on an nvidia-h200)"
for dataset in "$ROOT"/data/h200/*.parquet; do
  echo "--- ${dataset#$ROOT/}"
  "$KSELECT" data info "$dataset" | head -9
done

echo
echo "=== baselines of the bf16 TN cuBLASLt data: cuBLASLt's own picks vs the measured best, and"
echo "    what the \`default\` catalogue loses against a sample of the full config space"
"$KSELECT" data report "$ROOT/data/h200/cublaslt_default_bf16_tn_wide.parquet" \
  --full-sample "$ROOT/docs/data_results/cublaslt_full_sample_bf16_tn_loss_probe.parquet" \
  "$ROOT/docs/data_results/cublaslt_loss_probe_bf16_tn_probe2.parquet" \
  --rules-dir "$ROOT/rules" | awk '/^## /{on=1} /^Worst top-1/{on=0} /^### Rule set/{on=1}
    on && /^\| m x n x k/{on=0; done=1} on && !done'  # the summaries; the per-problem tables are in the report

echo
echo "=== kselect predict with the shipped models (no GPU needed)"
predict() {  # model dataset m n k [dtype layout]
  echo "--- models/$1: m=$3 n=$4 k=$5 (${6:-bf16}, layout ${7:-rcc})"
  "$KSELECT" predict --model "$ROOT/models/$1" --candidates "$ROOT/data/h200/$2.parquet" \
    --m "$3" --n "$4" --k "$5" --dtype "${6:-bf16}" --layout "${7:-rcc}" --top 5
}
# The bf16 TN model ranks with cuBLASLt's own picks as features (asked on the GPU at run time):
# on this GPU-less host it ranks problems a dataset measured, here shapes of its test set (LLM
# layers it never trained on); the model without them (h200_cublaslt_default) ranks any problem.
for shape in "1 6144 4096" "24 4096 14336" "1536 28672 4096"; do
  predict h200_cublaslt_default_bf16_tn cublaslt_default_bf16_tn_holdout $shape
done
echo "--- models/h200_cublaslt_default_bf16_tn on its whole test set (174 shapes, never trained on)"
"$KSELECT" eval --model "$ROOT/models/h200_cublaslt_default_bf16_tn" \
  --data "$ROOT/data/h200/cublaslt_default_bf16_tn_holdout.parquet"
for shape in "1 4096 4096" "16 4096 14336" "2048 14336 4096"; do
  predict h200_cublaslt_default cublaslt_default_bf16_tn_wide $shape
  predict h200_cublaslt_bf16_tn cublaslt_tiny_bf16_tn_wide $shape
  predict h200_cublaslt_bf16_tn_rank cublaslt_tiny_bf16_tn_wide $shape  # lambdarank: scores
  predict h200_tile_bf16_tn tile_bf16_tn_wide $shape
done
# The models of all six cuBLASLt datasets, on another layout and on fp8: the ranker with the
# heuristic's picks (recorded in the datasets here) and the regression that needs none.
predict h200_cublaslt_default_rank cublaslt_default_bf16_nn_core 16 4096 11008 bf16 ccc
predict h200_cublaslt_default_rank cublaslt_default_fp8_tn_fp8 16 4096 11008 fp8 rcc
predict h200_cublaslt_default cublaslt_default_bf16_nn_core 16 4096 14336 bf16 ccc
predict h200_cublaslt_default cublaslt_default_fp8_tn_fp8 16 4096 14336 fp8 rcc
echo "(held-out quality of each model: models/*/eval_report.md)"

echo
echo "=== kselect bench JSONL -> canonical dataset"
"$KSELECT" ingest "$ROOT/tests/fixtures/kselect/bench_small.jsonl" -o "$ROOT/out/dataset.parquet"
"$KSELECT" data info "$ROOT/out/dataset.parquet" | head -9
echo
echo "=== AMD CK Tile streaming log -> canonical dataset (AMD users train with kselect too)"
"$KSELECT" ingest "$ROOT/tests/fixtures/ck/tile_good.log" --arch gfx950 -o "$ROOT/out/ck_tile.parquet"
"$KSELECT" data info "$ROOT/out/ck_tile.parquet"
echo
echo "run.sh: done; datasets are in out/ (read them with pandas.read_parquet, schema in docs/dataset_schema.md)"
