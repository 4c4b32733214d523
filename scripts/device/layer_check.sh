#!/usr/bin/env bash
# One device call for the preloaded cuBLASLt layer (include/kselect/layer.h): its GPU tests, an
# unmodified C program with and without LD_PRELOAD (tests/layer/preload_check.sh), the per-call
# benchmark, then the whole workflow on an unmodified PyTorch program (scripts/device/
# layer_e2e.py): record its GEMMs through the layer, `kselect tune` the record, `kselect replay`
# it, and the step times with the layer off, running the library and running the model's
# choices, interleaved in one process; a process without the layer for the baseline.
# Binaries come in $BIN (scripts/device/make_selector_carry.sh). Logs land in $OUT.
#   LAYERS (8), BUDGET (s per GEMM, 6), MODEL (models/h200_cublaslt_bf16_tn_rank), TESTS (1),
#   ROUNDS (7)
set -uo pipefail
BIN="${BIN:-.devcarry-layer}"
OUT="${OUT:-/tmp/kselect-out}"
LAYERS="${LAYERS:-8}"
BUDGET="${BUDGET:-6}"
ROUNDS="${ROUNDS:-7}"
MODEL="${MODEL:-models/h200_cublaslt_bf16_tn_rank}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"
PRELOAD="$PWD/$BIN/lib/libkselect_preload.so"

[ "${TESTS:-1}" = 1 ] && gpu_tests 200 "${GPU_TEST_FILTER:-*Layer*:*LtCall*}"

timeout 120 bash tests/layer/preload_check.sh "$BIN/kselect_preload_app" "$PRELOAD" "$MODEL" \
  "$OUT/preload" "$BIN/kselect" > "$OUT/preload_check.txt" 2>&1
summary+=("preload_check rc=$?, $(lap)")

timeout 120 "$BIN/kselect_bench_layer" --benchmark_min_time=0.2s > "$OUT/layer_bench.txt" 2>&1
summary+=("layer_bench rc=$?, $(lap)")

LD_PRELOAD="$PRELOAD" KSELECT_RECORD="$OUT/gemms.csv" KSELECT_STATS="$OUT/record_stats.json" \
  timeout 240 python3 scripts/device/layer_e2e.py record --out "$OUT" --layers "$LAYERS" \
  > "$OUT/record.txt" 2>&1
summary+=("record rc=$? $(($(wc -l < "$OUT/gemms.csv" 2>/dev/null || echo 1) - 1)) GEMMs, $(lap)")
"$BIN/kselect" log summarize --hw data/hardware/nvidia-h200.json "$OUT/gemms.csv" \
  > "$OUT/summary.txt" 2>&1

timeout 420 "$BIN/kselect" tune "$OUT/gemms.csv" --model "$MODEL" -o "$OUT/tune" \
  --budget "$BUDGET" --device-kind nvidia-h200 ${TUNE_ARGS:-} > "$OUT/tune.txt" 2>&1
summary+=("tune rc=$? $(grep -c '^\[' "$OUT/tune.txt") GEMMs, $(lap)")

timeout 120 "$BIN/kselect" replay "$OUT/gemms.csv" --library "$OUT/tune/solutions.json" \
  --device-kind nvidia-h200 > "$OUT/replay.txt" 2>&1
summary+=("replay rc=$? $(grep -iE 'uplift|speedup' "$OUT/replay.txt" | head -1), $(lap)")

LD_PRELOAD="$PRELOAD" KSELECT_SOLUTIONS="$OUT/tune/solutions.json" KSELECT_MODEL="$MODEL" \
  KSELECT_MODE=off KSELECT_STATS="$OUT/measure_stats.json" \
  timeout 400 python3 scripts/device/layer_e2e.py measure --out "$OUT" --layers "$LAYERS" \
  --rounds "$ROUNDS" > "$OUT/measure.txt" 2>&1
summary+=("measure rc=$?, $(lap)")

timeout 300 python3 scripts/device/layer_e2e.py baseline --out "$OUT" --layers "$LAYERS" \
  --rounds "$ROUNDS" > "$OUT/baseline.txt" 2>&1
summary+=("baseline rc=$?, $(lap)")

pack_logs
echo
grep -E '^\[  FAILED|Failure' "$OUT/tests.log" 2>/dev/null | head -20 | cut -c1-300
tail -25 "$OUT/preload_check.txt"
grep -E '^BM_' "$OUT/layer_bench.txt"
tail -3 "$OUT/replay.txt"
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
def last_json(name):
    try:
        return json.loads(open(os.path.join(out, name)).read().strip().splitlines()[-1])
    except Exception as e:
        return {"error": str(e)}
m, b = last_json("measure.txt"), last_json("baseline.txt")
if "error" in m:
    print("measure:", m, open(os.path.join(out, "measure.txt")).read()[-3000:])
else:
    print("logits rel diff vs off:", m["logits_rel_diff"])
    for key in ("eager_decode", "eager_prefill", "graph_decode", "graph_prefill"):
        print(f"{key:14s}", json.dumps(m[key]), " no-layer process:", json.dumps(b.get(key)))
    print("per call (us):")
    for shape, row in m["per_call"].items():
        base = b.get("per_call", {}).get(shape, {}).get("plain", {})
        print(f"  {shape:16s}", json.dumps(row), " no-layer:", json.dumps(base))
try:
    s = json.load(open(os.path.join(out, "measure_stats.json")))
    print("layer stats:", {k: s[k] for k in ("mode", "library_status", "model_status", "calls",
                                            "overridden", "pass_reasons")})
except Exception as e:
    print("stats:", e)
PY
print_summary_to "$OUT/summary_lines.txt"
