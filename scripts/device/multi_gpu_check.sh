#!/usr/bin/env bash
# One device call on a machine of several GPUs (nvidia-h200-x2): `kselect bench --devices 0,1`.
# Runs the same shapes on one GPU and on two (wall time), then a two-GPU run killed with SIGKILL
# mid-sweep and continued with --resume, and checks every file with the ingestion rules: each
# (problem, config) pair once, one problem_done per shape, rows of both GPUs named by their UUID.
# GPU-side binaries in $BIN (scripts/device/make_carry.sh); logs and JSONL under $OUT.
# TWO=0,0 runs the two-device path (two coordinators, summaries through pipes) on one GPU: the
# counts and the resume are checked, the wall time means nothing then.
set -uo pipefail
BIN="${BIN:-.devcarry}"
OUT="${OUT:-/tmp/kselect-out}"
KIND="${KIND:-nvidia-h200-x2}"
SHAPES="${SHAPES:-shapes/smoke_regimes.csv}"
RULES="${RULES:-tiny}"
TWO="${TWO:-0,1}"
WORK=/tmp/kselect-multi
mkdir -p "$OUT" "$WORK"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh" --parts
use_cuda_libs
use_repo_rules
LOG="$WORK/multi_gpu.log"
say() { echo "$*" | tee -a "$LOG"; }

nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,temperature.gpu --format=csv | tee -a "$LOG"
for devices in 0 "$TWO"; do
  name=one; [ "$devices" = "$TWO" ] && name=two
  t0=$(date +%s.%N)
  timeout 240 "$BIN/kselect" bench --device-kind "$KIND" --shapes "$SHAPES" --rules "$RULES" \
    --devices "$devices" -o "$WORK/$name.jsonl" > "$WORK/$name.out" 2>&1
  rc=$?
  say "devices $devices rc=$rc wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s: $(tail -1 "$WORK/$name.out")"
done

# kill -9 of the whole two-GPU process group mid-sweep, then --resume on both GPUs.
setsid "$BIN/kselect" bench --device-kind "$KIND" --shapes "$SHAPES" --rules "$RULES" \
  --devices "$TWO" --run-id multi-resume -o "$WORK/killed.jsonl" > "$WORK/killed.out" 2>&1 &
victim=$!
for _ in $(seq 150); do
  [ "$(wc -l < "$WORK/killed.jsonl" 2>/dev/null || echo 0)" -ge 200 ] && break
  sleep 0.2
done
kill -9 -- "-$victim" 2>/dev/null || kill -9 "$victim"
wait "$victim" 2>/dev/null
say "killed with $(wc -l < "$WORK/killed.jsonl") lines"
timeout 240 "$BIN/kselect" bench --device-kind "$KIND" --shapes "$SHAPES" --rules "$RULES" \
  --devices "$TWO" --run-id multi-resume --resume -o "$WORK/killed.jsonl" > "$WORK/resumed.out" 2>&1
say "resumed rc=$? $(tail -1 "$WORK/resumed.out")"

python3 - "$WORK" "$SHAPES" <<'PY' | tee -a "$LOG"
import collections, json, sys
work, shapes = sys.argv[1], sys.argv[2]
n_shapes = sum(1 for l in open(shapes) if l[:1].isdigit())
def check(name):
    runs, pairs, done, uuids = {}, [], [], collections.Counter()
    for line in open(f"{work}/{name}.jsonl"):
        r = json.loads(line)
        if r["type"] == "run":
            runs[r["run_id"]] = r["hardware"]["uuid"]
        elif r["type"] == "measurement":
            pairs.append(json.dumps([r["problem"], r["config"]], sort_keys=True))
            uuids[r.get("device_uuid") or runs[r["run_id"]]] += 1
        elif r["type"] == "problem_done":
            done.append(json.dumps(r["problem"], sort_keys=True))
    measured = set(pairs)
    print(f"{name}: {len(pairs)} measurement rows ({len(measured)} distinct pairs), "
          f"problem_done {len(set(done))}/{n_shapes} (repeated {len(done) - len(set(done))}), "
          f"rows per GPU {dict(uuids)}")
    return measured
one, two, killed = check("one"), check("two"), check("killed")
# Confirmation re-times repeat pairs on purpose; the pair sets must agree.
print(f"same pairs: one vs two {one == two}, two vs killed+resumed {two == killed}")
PY
cd "$WORK" && tar -cJf "$OUT/multi_gpu.tar.xz" ./*.jsonl ./*.out ./*.log
grep -E "rc=|rows|same pairs|killed" "$LOG"
