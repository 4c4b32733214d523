#!/usr/bin/env bash
# `kselect predict` on a GPU host with a model trained with --peer-rank, for problems the
# candidate dataset never measured: the heuristic's picks come from cuBLASLt on this GPU (the
# deployment path), and --can-implement asks the library which candidates run the problem.
# Runs from the repository root with the full CPU-side build carried in $CARRY (default
# .devcarry-ml: kselect, lib/*.xz with Arrow, Parquet and LightGBM, model/, candidates.parquet,
# problems.txt with one "m n k [dtype layout candidates]" a line; the defaults are bf16, rcc and
# candidates.parquet). Output and timings go to $OUT/predict_live.log.
set -uo pipefail
CARRY="${CARRY:-.devcarry-ml}"
OUT="${OUT:-/tmp/kselect-out}"
mkdir -p "$OUT" /tmp/kslib
for f in "$CARRY"/lib/*; do
  case "$f" in
    *.xz) xz -dc "$f" > "/tmp/kslib/$(basename "$f" .xz)" ;;
    *) cp "$f" /tmp/kslib/ ;;
  esac
done
ln -sf /tmp/kslib/lib_lightgbm.so /tmp/kslib/lib_lightgbm.so.0 2>/dev/null
export LD_LIBRARY_PATH="/tmp/kslib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
LOG="$OUT/predict_live.log"
: > "$LOG"
while read -r m n k dtype layout candidates; do
  [ -n "$m" ] || continue
  for extra in "" "--can-implement" "--json"; do
    echo "=== predict m=$m n=$n k=$k ${dtype:-bf16} ${layout:-rcc} $extra" | tee -a "$LOG"
    start=$(date +%s%N)
    # shellcheck disable=SC2086  # extra is an option or nothing
    "$CARRY/kselect" predict --model "$CARRY/model" \
      --candidates "$CARRY/${candidates:-candidates.parquet}" --m "$m" --n "$n" --k "$k" \
      --dtype "${dtype:-bf16}" --layout "${layout:-rcc}" --top 5 $extra >> "$LOG" 2>&1
    rc=$?
    echo "rc=$rc wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))" | tee -a "$LOG"
  done
done < "$CARRY/problems.txt"
grep -E "^===|^rc=|peer picks from|candidates|^   1 " "$LOG"
