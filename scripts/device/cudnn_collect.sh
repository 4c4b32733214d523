#!/bin/bash
# Collects cuDNN conv training data on the device: for each "SHARD RESUME_FILE LIMIT_S" entry of
# PLAN (';'-separated), `kselect bench --provider cudnn --rules default` over SHAPES (all three
# directions) for that shard, continuing RESUME_FILE (a carried, trimmed JSONL: run record,
# problem_done lines and the unfinished problems' rows) when one is named ('-' = a fresh run),
# stopping new configs after LIMIT_S seconds. New lines only come back, gzipped, one file per
# entry, with the bench logs in one archive.
BIN=${BIN:-.devcarry-sel}
OUT=${OUT:-/tmp/out}
SHAPES=${SHAPES:-shapes/conv_train.csv}
source scripts/device/check_common.sh
mkdir -p "$OUT/logs"
IFS=';' read -ra entries <<< "${PLAN:?PLAN is empty}"
for entry in "${entries[@]}"; do
  read -r shard resume limit <<< "$entry"
  tag=${shard/\//of}
  file=/tmp/cudnn_train_s$tag.jsonl
  skip=0
  extra=()
  if [ "$resume" != "-" ]; then
    cp "$resume" "$file"
    skip=$(wc -l < "$file")
    extra=(--resume)
  fi
  s=$(date +%s)
  "$BIN/kselect" bench --shapes "$SHAPES" --provider cudnn --rules default --rules-dir rules \
    --conv-direction fwd,bwd_data,bwd_weight --shard "$shard" --time-limit-s "$limit" \
    --run-id "${RUN_PREFIX:-h200-cudnn-train}-s$tag" -o "$file" "${extra[@]}" \
    > "$OUT/logs/bench_s$tag.log" 2>&1
  rc=$?
  tail -n +"$((skip + 1))" "$file" | gzip > "$OUT/new_s$tag.jsonl.gz"
  summary+=("shard $shard rc=$rc $(( $(date +%s) - s )) s, $(tail -n +"$((skip + 1))" "$file" | grep -c '"type":"problem_done"') problems done here, $(grep -c '"type":"problem_done"' "$file") in all, $(( $(wc -l < "$file") - skip )) new lines")
  tail -2 "$OUT/logs/bench_s$tag.log"
done
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
(cd "$OUT" && tar czf logs.tar.gz logs && rm -rf logs)
