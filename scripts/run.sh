#!/usr/bin/env bash
# kselect's main job on a fresh machine: set-up (idempotent), build, then the pipeline stages that
# exist today, on the data this repository ships.
#
#   scripts/run.sh            # -> out/dataset.parquet and a summary of it
#
# Today the shipped data are benchmark logs: kselect bench JSONL collected on an nvidia-h200
# (data/raw/*.jsonl, when present) and AMD CK Tile sample logs (tests/fixtures). The main job
# ingests them into the canonical Parquet dataset and summarises it. When trained models ship
# (models/), this script also ranks kernels for a sample problem with `kselect predict`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR
die() { echo "run.sh: ERROR: $*" >&2; exit 1; }

"$ROOT/scripts/setup.sh" || die "scripts/setup.sh failed (see above)"
KSELECT="$BUILD_DIR/bin/kselect"
[ -x "$KSELECT" ] || die "$KSELECT was not built"
mkdir -p "$ROOT/out"

shopt -s nullglob
gpu_logs=("$ROOT"/data/raw/*.jsonl)
if [ ${#gpu_logs[@]} -gt 0 ]; then
  echo "=== ingest ${#gpu_logs[@]} kselect bench log(s) from data/raw/"
  "$KSELECT" ingest "${gpu_logs[@]}" -o "$ROOT/out/dataset.parquet"
  "$KSELECT" data info "$ROOT/out/dataset.parquet"
else
  echo "=== no GPU logs in data/raw/ yet: ingesting the kselect JSONL sample"
  "$KSELECT" ingest "$ROOT/tests/fixtures/kselect/bench_small.jsonl" -o "$ROOT/out/dataset.parquet"
  "$KSELECT" data info "$ROOT/out/dataset.parquet"
fi

echo
echo "=== AMD CK Tile streaming log -> canonical dataset (AMD users train with kselect too)"
"$KSELECT" ingest "$ROOT/tests/fixtures/ck/tile_good.log" --arch gfx950 -o "$ROOT/out/ck_tile.parquet"
"$KSELECT" data info "$ROOT/out/ck_tile.parquet"
echo
echo "run.sh: done; datasets are in out/ (read them with pandas.read_parquet, schema in docs/dataset_schema.md)"
