#!/bin/bash
# Cross-run drift of the cuBLASLt bench (issue 21), on the device from the repository root with
# the GPU-side binaries in $BIN (scripts/device/make_selector_carry.sh):
#   1. the GPU tests of the bench, records and NVML sampler (GPU_TEST_FILTER);
#   2. RUNS, ';'-separated "name|shapes.csv|seconds|extra bench options", each a separate
#      `kselect bench --rules default` process, in order (shapes default to
#      shapes/drift_framework.csv; --interleave-reference among the options for drift control);
#   3. scripts/device/drift_compare.py on each "A:B" pair of COMPARE (space-separated).
# nvidia-smi samples clocks, power and temperature every 250 ms throughout. At most 8 files come
# back: the runs' JSONL and logs go into runs.tar.gz, the comparisons into drift.txt.
BIN=${BIN:-.devcarry-sel}
OUT=${OUT:-/tmp/out}
GPU_TEST_FILTER=${GPU_TEST_FILTER:-GpuState*:BenchRecords*:Worker*:Resume*}
KIND=${KIND:-nvidia-h200}
RUN_PREFIX=${RUN_PREFIX:-drift-$(date -u +%Y%m%dT%H%M%SZ)}
source scripts/device/check_common.sh
WORK=/tmp/drift-work
rm -rf "$WORK"
mkdir -p "$WORK/runs"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 250 > "$WORK/runs/smi.csv" 2>&1 &
smi=$!
[ -n "$GPU_TEST_FILTER" ] && gpu_tests 120 "$GPU_TEST_FILTER"
IFS=';' read -ra runs <<< "${RUNS:?RUNS is empty}"
for spec in "${runs[@]}"; do
  IFS='|' read -r name shapes seconds extra <<< "$spec"
  s=$(date +%s)
  # shellcheck disable=SC2086  # extra is an option list
  "$BIN/kselect" bench --device-kind "$KIND" --shapes "${shapes:-shapes/drift_framework.csv}" \
    --rules default --rules-dir rules --time-limit-s "$seconds" \
    --run-id "$RUN_PREFIX-$name" -o "$WORK/runs/$name.jsonl" $extra > "$WORK/runs/$name.log" 2>&1
  summary+=("$name rc=$? $(( $(date +%s) - s )) s, $(grep -c '"type":"problem_done"' "$WORK/runs/$name.jsonl") problems done, $(grep -c '"type":"measurement"' "$WORK/runs/$name.jsonl") rows [$extra]")
done
kill "$smi" 2>/dev/null
for pair in ${COMPARE:-}; do
  a=${pair%%:*} b=${pair##*:}
  python3 scripts/device/drift_compare.py "$WORK/runs/$a.jsonl" "$WORK/runs/$b.jsonl" \
    --json "$WORK/runs/drift_$a$b.json" >> "$OUT/drift.txt" 2>&1
done
for spec in "${runs[@]}"; do
  name=${spec%%|*}
  python3 scripts/device/drift_compare.py --within "$WORK/runs/$name.jsonl" >> "$OUT/drift.txt" 2>&1
done
cp "$OUT/tests.log" "$WORK/runs/" 2>/dev/null
(cd "$WORK" && tar czf "$OUT/runs.tar.gz" runs)
rm -f "$OUT/tests.log"
print_summary_to "$OUT/summary.txt"
cat "$OUT/drift.txt"
