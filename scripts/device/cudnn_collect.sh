#!/bin/bash
# Collects cuDNN conv training data on the device: for each "SHARD RESUME_FILE LIMIT_S" entry of
# PLAN (';'-separated), `kselect bench --provider cudnn --rules default` over SHAPES (all three
# directions) for that shard, continuing RESUME_FILE (a carried, trimmed JSONL: run record,
# problem_done lines and the unfinished problems' rows) when one is named ('-' = a fresh run),
# stopping new configs after LIMIT_S seconds. New lines only come back, gzipped, one file per
# entry ($OUT/new_s<i>of<n>.jsonl.gz), with the bench logs in one archive. The loop itself is
# scripts/device/bench_collect.sh.
SHAPES=${SHAPES:-shapes/conv_train.csv}
IFS=';' read -ra entries <<< "${PLAN:?PLAN is empty}"
plan=()
for entry in "${entries[@]}"; do
  read -r shard resume limit <<< "$entry"
  plan+=("s${shard/\//of}|$SHAPES|$resume|$limit|--shard $shard")
done
PLAN=$(IFS=';'; echo "${plan[*]}") RUN_PREFIX=${RUN_PREFIX:-h200-cudnn-train} \
  BENCH_ARGS="--provider cudnn --rules default --rules-dir rules --conv-direction fwd,bwd_data,bwd_weight" \
  exec bash scripts/device/bench_collect.sh
