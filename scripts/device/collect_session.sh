#!/usr/bin/env bash
# One device call of GEMM data collection (issue 3), run on an nvidia-h200 from the repository
# root with the GPU-side binaries carried in $BIN (default .devcarry-main; built here with
# -DKSELECT_WITH_ARROW=OFF -DKSELECT_WITH_LIGHTGBM=OFF). Steps (STEPS, default all):
#   snapshot    regenerate the catalogue snapshots of SNAPSHOT_RULES (bf16 TN 4096^3) in place,
#               before the tests compare them with a fresh enumeration; copies land in $OUT
#   tests       the bench and cuBLASLt GPU tests (GPU_TEST_FILTER, a gtest filter)
#   throughput  `kselect bench --rules default` on small decode-size shapes: configs/s and CV;
#               with THROUGHPUT_B_ARGS set, a second run with those bench options, compared
#               config by config with the first (scripts/device/compare_runs.py)
#   resume      the kill -9 proof: one uninterrupted run, one run killed (the whole process
#               group, SIGKILL) mid-sweep then continued with --resume, both kept for comparison
#   loss        the `default` vs `full` loss probe: for each LOSS_PLAN job "name:shapes.csv:
#               dtype:ops", `default` and a LOSS_FRACTION sample of `full` on those shapes, in the
#               same call (at most LOSS_DEFAULT_S and LOSS_FULL_S seconds each)
#   collect     COLLECT_PLAN jobs "name:shapes.csv:dtype:ops" in order, each with the time left
#               (--time-limit-s), so the call ends inside its limit; the next call continues
#               from the problems without a problem_done record; BENCH_ARGS go to every
#               collect bench (e.g. "--warmup-ms 0.1 --batch-ms 0.1")
# Everything ends under $OUT: bench JSONL compressed (xz, split below 15 MiB), logs in one tar.
set -uo pipefail
BIN="${BIN:-.devcarry-main}"
OUT="${OUT:-/tmp/kselect-out}"
BUDGET_S="${BUDGET_S:-560}"
STEPS="${STEPS:-tests throughput resume loss collect}"
SNAPSHOT_RULES="${SNAPSHOT_RULES:-}"
THROUGHPUT_S="${THROUGHPUT_S:-40}"
GPU_TEST_FILTER="${GPU_TEST_FILTER:-Worker*:CublasLtGpu*:BenchRecords*:Resume*:Rules*}"
COLLECT_PLAN="${COLLECT_PLAN:-bf16_tn_wide:shapes/wide.csv:bf16:TN}"
BENCH_ARGS="${BENCH_ARGS:-}"
THROUGHPUT_B_ARGS="${THROUGHPUT_B_ARGS:-}"
LOSS_PLAN="${LOSS_PLAN:-bf16_tn:shapes/loss_probe.csv:bf16:TN}"
LOSS_DEFAULT_S="${LOSS_DEFAULT_S:-120}"
LOSS_FULL_S="${LOSS_FULL_S:-240}"
LOSS_FRACTION="${LOSS_FRACTION:-0.1}"
KIND="${KIND:-nvidia-h200}"
WORK=/tmp/kselect-work
rm -rf "$WORK"  # a warm machine keeps the last call's files
mkdir -p "$OUT" "$WORK"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh" --parts
use_cuda_libs
use_repo_rules
link_source_root
START=$(date +%s)
left() { echo $((START + BUDGET_S - $(date +%s))); }
step() { [[ " $STEPS " == *" $1 "* ]]; }
LOG="$WORK/session.log"
say() { echo "$*" | tee -a "$LOG"; }
bench() { "$BIN/kselect" bench --device-kind "$KIND" "$@"; }

record_gpu "$LOG" memory.used  # the first line of $LOG: $WORK was emptied above

if step snapshot; then
  for rules in $SNAPSHOT_RULES; do
    snap="rules/cublaslt/snapshots/$rules.bf16_tn_4096.json"
    timeout 120 "$BIN/kselect" catalogue --provider cublaslt --rules "$rules" -m 4096 -n 4096 \
      -k 4096 --snapshot "$snap" > "$WORK/snapshot_$rules.out" 2>&1
    say "snapshot $rules rc=$? $(head -1 "$WORK/snapshot_$rules.out")"
    cp "$snap" "$OUT/snapshot_$rules.bf16_tn_4096.json"
  done
fi

if step tests; then
  say "=== tests ($(left) s left)"
  timeout 240 "$BIN/kselect_tests" --gtest_filter="$GPU_TEST_FILTER" \
    > "$WORK/gpu_tests.log" 2>&1
  say "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$WORK/gpu_tests.log" | tr '\n' ' ')"
fi

if step throughput; then
  say "=== throughput: default catalogue on decode-size shapes ($(left) s left)"
  printf 'm,n,k,batch,regime,family\n1,4096,4096,1,,\n16,4096,4096,1,,\n64,4096,4096,1,,\n128,4096,4096,1,,\n' \
    > "$WORK/throughput.csv"
  timeout 150 "$BIN/kselect" bench --device-kind "$KIND" --shapes "$WORK/throughput.csv" \
    --rules default --time-limit-s "$THROUGHPUT_S" -o "$WORK/throughput.jsonl" > "$WORK/throughput.out" 2>&1
  say "throughput rc=$? $(tail -1 "$WORK/throughput.out")"
  if [ -n "$THROUGHPUT_B_ARGS" ]; then
    # shellcheck disable=SC2086  # THROUGHPUT_B_ARGS is an option list
    timeout 150 "$BIN/kselect" bench --device-kind "$KIND" --shapes "$WORK/throughput.csv" \
      --rules default --time-limit-s "$THROUGHPUT_S" $THROUGHPUT_B_ARGS -o "$WORK/throughput_b.jsonl" \
      > "$WORK/throughput_b.out" 2>&1
    say "throughput B ($THROUGHPUT_B_ARGS) rc=$? $(tail -1 "$WORK/throughput_b.out")"
    # B's options become the collection's when its timings agree with A's (ADOPT_B=1).
    if python3 scripts/device/compare_runs.py "$WORK/throughput.jsonl" \
      "$WORK/throughput_b.jsonl" >> "$LOG" 2>&1 && [ "${ADOPT_B:-0}" = 1 ]; then
      BENCH_ARGS="$BENCH_ARGS $THROUGHPUT_B_ARGS"
    fi
    say "collect bench options: '$BENCH_ARGS'"
  fi
fi

if step resume; then
  say "=== resume: uninterrupted vs kill -9 + --resume ($(left) s left)"
  printf 'm,n,k,batch,regime,family\n8,4096,4096,1,,\n256,2048,4096,1,,\n' > "$WORK/resume.csv"
  common=(--shapes "$WORK/resume.csv" --rules tiny --run-id resume-proof)
  timeout 60 "$BIN/kselect" bench --device-kind "$KIND" "${common[@]}" -o "$WORK/resume_whole.jsonl" \
    > "$WORK/resume_whole.out" 2>&1
  say "uninterrupted rc=$? $(tail -1 "$WORK/resume_whole.out")"
  setsid "$BIN/kselect" bench --device-kind "$KIND" "${common[@]}" -o "$WORK/resume_killed.jsonl" \
    > "$WORK/resume_killed.out" 2>&1 &
  victim=$!
  # Kill mid-sweep: once some measurements are on disk (or after 20 s).
  for _ in $(seq 100); do
    [ "$(wc -l < "$WORK/resume_killed.jsonl" 2>/dev/null || echo 0)" -ge 60 ] && break
    sleep 0.2
  done
  kill -9 -- "-$victim" 2>/dev/null || kill -9 "$victim"
  wait "$victim" 2>/dev/null
  lines_at_kill=$(wc -l < "$WORK/resume_killed.jsonl")
  torn=$(tail -c 1 "$WORK/resume_killed.jsonl" | od -An -c | tr -d ' ')
  timeout 60 "$BIN/kselect" bench --device-kind "$KIND" "${common[@]}" --resume \
    -o "$WORK/resume_killed.jsonl" > "$WORK/resume_continued.out" 2>&1
  say "killed (SIGKILL, whole process group) with $lines_at_kill lines (last byte '$torn'); resumed rc=$? $(tail -1 "$WORK/resume_continued.out")"
  python3 - "$WORK/resume_whole.jsonl" "$WORK/resume_killed.jsonl" <<'EOF' | tee -a "$LOG"
import json, sys
def pairs(path):
    keys, done = [], []
    for line in open(path):
        r = json.loads(line)
        if r["type"] == "measurement":
            keys.append(json.dumps([r["problem"], r["config"]], sort_keys=True))
        elif r["type"] == "problem_done":
            done.append(json.dumps(r["problem"], sort_keys=True))
    return keys, done
a, da = pairs(sys.argv[1]); b, db = pairs(sys.argv[2])
print(f"resume proof: uninterrupted {len(a)} rows, killed+resumed {len(b)} rows, "
      f"duplicates {len(b) - len(set(b))}, same pairs {set(a) == set(b)}, "
      f"problem_done {len(da)} vs {len(set(db))}")
EOF
fi

if step loss; then
  jobs_left=$(wc -w <<< "$LOSS_PLAN")
  for job in $LOSS_PLAN; do
    IFS=: read -r name shapes dtype ops <<< "$job"
    # Each job gets an equal share of the time left: a third for `default`, the rest for `full`.
    share=$(( ($(left) - 30) / jobs_left )); jobs_left=$((jobs_left - 1))
    [ "$share" -lt 30 ] && { say "loss $name: no time left"; break; }
    say "=== loss probe $name ($shapes, $dtype $ops): default vs a ${LOSS_FRACTION} sample of full ($(left) s left, $share s for it)"
    t=$((share / 3)); [ "$t" -gt "$LOSS_DEFAULT_S" ] && t=$LOSS_DEFAULT_S
    timeout $((t + 30)) "$BIN/kselect" bench --device-kind "$KIND" --shapes "$shapes" \
      --dtype "$dtype" --ops "$ops" --rules default --time-limit-s "$t" \
      -o "$WORK/loss_default_$name.jsonl" > "$WORK/loss_default_$name.out" 2>&1
    say "loss default $name rc=$? $(tail -1 "$WORK/loss_default_$name.out")"
    t=$((share - t - 10)); [ "$t" -gt "$LOSS_FULL_S" ] && t=$LOSS_FULL_S
    timeout $((t + 30)) "$BIN/kselect" bench --device-kind "$KIND" --shapes "$shapes" \
      --dtype "$dtype" --ops "$ops" --rules full --sample-fraction "$LOSS_FRACTION" \
      --time-limit-s "$t" -o "$WORK/loss_full_$name.jsonl" > "$WORK/loss_full_$name.out" 2>&1
    say "loss full sample $name rc=$? $(tail -1 "$WORK/loss_full_$name.out")"
  done
fi

if step collect; then
  for job in $COLLECT_PLAN; do
    IFS=: read -r name shapes dtype ops <<< "$job"
    t=$(( $(left) - 25 ))
    [ "$t" -lt 20 ] && { say "collect $name: no time left"; break; }
    say "=== collect $name ($shapes, $dtype $ops), $t s"
    out="$WORK/$name.jsonl"
    # shellcheck disable=SC2086  # BENCH_ARGS is an option list
    resume=(); [ -s "$out" ] && resume=(--resume)
    timeout $((t + 20)) "$BIN/kselect" bench --device-kind "$KIND" --shapes "$shapes" \
      --dtype "$dtype" --ops "$ops" --rules default --time-limit-s "$t" "${resume[@]}" \
      $BENCH_ARGS -o "$out" > "$WORK/$name.out" 2>&1
    say "collect $name rc=$? $(tail -1 "$WORK/$name.out")"
  done
fi

say "=== packing ($(left) s left)"
cd "$WORK"
for f in *.jsonl; do
  [ -s "$f" ] || continue
  case "$f" in throughput*.jsonl|resume_*.jsonl) continue ;; esac  # small: they go in the tar
  xz -T0 -6 -c "$f" > "$f.xz" 2>/dev/null || python3 -c "import lzma,sys; open(sys.argv[1]+'.xz','wb').write(lzma.compress(open(sys.argv[1],'rb').read(), preset=6))" "$f"
  size=$(stat -c %s "$f.xz")
  if [ "$size" -gt $((15 * 1024 * 1024)) ]; then
    split -b 15M -d "$f.xz" "$OUT/$f.xz.part"
  else
    cp "$f.xz" "$OUT/"
  fi
  say "$f: $(wc -l < "$f") lines, $(stat -c %s "$f") bytes, xz $size bytes"
done
tar -cJf "$OUT/logs.tar.xz" *.out *.log *.csv throughput*.jsonl resume_*.jsonl 2>/dev/null
ls -la "$OUT"
grep -E "rc=|resume proof|lines,|A vs B|best A|accepted|rejected|options" "$LOG"
