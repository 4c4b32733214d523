#!/usr/bin/env bash
# One device call on a machine of two GPUs (nvidia-h200-x2) for #49: `kselect tune --devices`
# on a real trace (a Llama-3-8B-shaped PyTorch model's cuBLASLt log, captured here). The same
# trace and the same total search time (BUDGET_TOTAL seconds: one GPU gets it all, two get half
# each) tuned on one GPU and on two, wall times side by side; then a two-GPU run whose device-1
# worker is killed with SIGKILL KILL_AFTER seconds in, its GEMMs finished on device 0. Each run's
# report names its workers. Binaries in $BIN (scripts/device/make_selector_carry.sh).
#   TWO (0,1; 0,0 runs the two-worker path on one GPU: the wall time means nothing then),
#   BUDGET_TOTAL (60), KILL_AFTER (20), LAYERS (8), MODEL
set -uo pipefail
BIN="${BIN:-.devcarry-layer}"
OUT="${OUT:-/tmp/kselect-out}"
TWO="${TWO:-0,1}"
BUDGET_TOTAL="${BUDGET_TOTAL:-60}"
KILL_AFTER="${KILL_AFTER:-20}"
LAYERS="${LAYERS:-8}"
MODEL="${MODEL:-models/h200_cublaslt_default_bf16_tn}"
KIND="${KIND:-nvidia-h200-x2}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpus.txt"

timeout 240 python3 scripts/device/llama_e2e.py capture --out "$OUT" --layers "$LAYERS" \
  > "$OUT/capture.txt" 2>&1
summary+=("capture rc=$? $(grep -c cublasLtMatmul "$OUT/cublaslt_trace.log" 2>/dev/null) matmul lines, $(lap)")
gzip -k -f "$OUT/cublaslt_trace.log"

# run NAME DEVICES BUDGET [kill]: one tune, its wall time in $OUT/NAME/wall_s.txt.
run() {
  local name=$1 devices=$2 budget=$3 kill=${4:-}
  local start rc killer=""
  start=$(date +%s.%N)
  timeout 400 "$BIN/kselect" tune "$OUT/cublaslt_trace.log" --model "$MODEL" -o "$OUT/$name" \
    --budget-total "$budget" --devices "$devices" --device-kind "$KIND" > "$OUT/$name.txt" 2>&1 &
  local tune=$!
  if [ -n "$kill" ]; then
    sleep "$KILL_AFTER"
    killer=$(pgrep -f -- "--worker-device ${TWO##*,}" | head -1)
    [ -n "$killer" ] && kill -9 "$killer"
    echo "killed worker pid ${killer:-none} at ${KILL_AFTER} s" >> "$OUT/$name.txt.kill"
  fi
  wait "$tune"
  rc=$?
  python3 -c "import time; print(f'{time.time() - $start:.1f}')" > "$OUT/$name.wall_s"
  summary+=("$name (devices $devices, $budget s each) rc=$rc, $(grep -c '^\[' "$OUT/$name.txt") GEMMs, $(cat "$OUT/$name.wall_s") s wall ${killer:+(killed pid $killer)}, $(lap)")
}
run one 0 "$BUDGET_TOTAL"
run two "$TWO" $((BUDGET_TOTAL / 2))
run killed "$TWO" $((BUDGET_TOTAL / 2)) kill

tar czf /tmp/logs.tar.gz -C "$OUT" --exclude='cublaslt_trace.log' . 2>/dev/null
echo
for name in one two killed; do
  echo "== $name: $(cat "$OUT/$name.wall_s") s wall"
  grep -E "^Worker processes" "$OUT/$name/report.md" 2>/dev/null | cut -c1-400
  sed -n '/| choice/,/^$/p' "$OUT/$name.txt"
  grep -E "^\[" "$OUT/$name.txt" | cut -c1-200
  cat "$OUT/$name.txt.kill" 2>/dev/null
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = {}
for name in ("one", "two", "killed"):
    try:
        r = json.load(open(f"{out}/{name}/report.json"))
    except Exception as e:
        print(name, "no report:", e); continue
    wall = float(open(f"{out}/{name}.wall_s").read())
    done = sum(1 for g in r["gemms"] if not g["outcome"].startswith("failed"))
    rows[name] = wall
    print(f"{name:7s} wall {wall:6.1f} s  gemms {done}/{len(r['gemms'])}  tuned {100*r['weighted_uplift']:+.2f} %  "
          f"model-only {100*r['model_only_weighted_uplift']:+.2f} %  top8 {100*r['best_of_top8_weighted_uplift']:+.2f} %  "
          f"workers {[(w['device'], w['gemms_done'], w['ended']) for w in r.get('workers', [])]}")
if "one" in rows and "two" in rows:
    print(f"two / one wall: {rows['two'] / rows['one']:.3f}")
PY
print_summary
find "$OUT" -mindepth 1 -delete && mv /tmp/logs.tar.gz "$OUT/"
