#!/bin/bash
# Collects bench data on the device, resumable across calls: for each
# "name|shapes.csv|resume|seconds|extra options" entry of PLAN (';'-separated, at most 5),
# `kselect bench $BENCH_ARGS` over the shapes, continuing RESUME (a carried, trimmed JSONL from
# scripts/device/trim_resume.py) when one is named ('-' = a fresh run, id $RUN_PREFIX-<name>),
# stopping new configs after the given seconds. Only the new lines come back, gzipped, one file
# per entry ($OUT/new_<name>.jsonl.gz), with the bench logs in logs.tar.gz.
# BENCH_ARGS defaults to cuBLASLt's `default` catalogue with drift control (issue 21);
# scripts/device/cudnn_collect.sh runs it for the cuDNN conv sets.
BIN=${BIN:-.devcarry-sel}
OUT=${OUT:-/tmp/out}
KIND=${KIND:-nvidia-h200}
BENCH_ARGS=${BENCH_ARGS:---rules default --rules-dir rules --interleave-reference}
source scripts/device/check_common.sh
mkdir -p "$OUT/logs"
IFS=';' read -ra entries <<< "${PLAN:?PLAN is empty}"
for entry in "${entries[@]}"; do
  IFS='|' read -r name shapes resume limit extra <<< "$entry"
  file=/tmp/collect_$name.jsonl
  skip=0
  args=(--run-id "${RUN_PREFIX:-h200-gemm}-$name")
  if [ "$resume" != "-" ]; then
    cp "$resume" "$file"
    skip=$(wc -l < "$file")
    args=(--resume)
  else
    rm -f "$file"
  fi
  s=$(date +%s)
  # shellcheck disable=SC2086  # BENCH_ARGS and extra are option lists
  "$BIN/kselect" bench --device-kind "$KIND" --shapes "$shapes" $BENCH_ARGS \
    --time-limit-s "$limit" -o "$file" "${args[@]}" $extra > "$OUT/logs/bench_$name.log" 2>&1
  rc=$?
  tail -n +"$((skip + 1))" "$file" | gzip > "$OUT/new_$name.jsonl.gz"
  summary+=("$name rc=$rc $(( $(date +%s) - s )) s, $(tail -n +"$((skip + 1))" "$file" | grep -c '"type":"problem_done"') problems done here, $(grep -c '"type":"problem_done"' "$file") in all, $(( $(wc -l < "$file") - skip )) new lines")
  tail -1 "$OUT/logs/bench_$name.log"
done
print_summary_to "$OUT/summary.txt"
pack_folder logs
