#!/usr/bin/env bash
# One device call for the preloaded cuBLASLt layer (include/kselect/layer.h): its GPU tests, an
# unmodified C program with and without LD_PRELOAD (tests/layer/preload_check.sh), the per-call
# benchmark, then the whole workflow on an unmodified PyTorch program (scripts/device/
# layer_e2e.py): record its GEMMs through the layer, `kselect tune` the record, `kselect replay`
# it, and the step times with the layer off, running the library and running the model's
# choices, interleaved in one process, for PyTorch's cuBLASLt backend and its default (cuBLAS)
# one; then processes with and without the layer preloaded (nothing set), alternated.
# Binaries come in $BIN (scripts/device/make_selector_carry.sh). Logs land in $OUT/logs.tar.gz;
# the key files beside it.
#   LAYERS (8), BUDGET (s per GEMM, 4), MODEL (models/h200_cublaslt_bf16_tn_rank), TESTS (1),
#   ROUNDS (7), LIBRARY (a solutions.json to use instead of tuning), AB (2: rounds of processes),
#   CHECKS (1: the tests, the C program and the benchmark), MEASURE_ORDER (off,library,select),
#   AB_BACKENDS (default): the backends the alternated processes run; MEASURE_BACKENDS (cublaslt
#   default): those of the in-process measurement ("" = none).
# The alternated processes: without the layer; with it preloaded and nothing set; running the
# library alone (KSELECT_MODE=library); running the model alone (KSELECT_MODEL, no library).
set -uo pipefail
BIN="${BIN:-.devcarry-layer}"
OUT="${OUT:-/tmp/kselect-out}"
LAYERS="${LAYERS:-8}"
BUDGET="${BUDGET:-4}"
ROUNDS="${ROUNDS:-7}"
AB="${AB:-2}"
MODEL="${MODEL:-models/h200_cublaslt_bf16_tn_rank}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"
PRELOAD="$PWD/$BIN/lib/libkselect_preload.so"
W="$OUT/work"
mkdir -p "$W"

if [ "${CHECKS:-1}" = 1 ]; then
  [ "${TESTS:-1}" = 1 ] && gpu_tests 200 "${GPU_TEST_FILTER:-*Layer*:*LtCall*:*BlasCall*}"
  timeout 120 bash tests/layer/preload_check.sh "$BIN/kselect_preload_app" "$PRELOAD" "$MODEL" \
    "$W/preload" "$BIN/kselect" > "$OUT/preload_check.txt" 2>&1
  summary+=("preload_check rc=$?, $(lap)")
  rm -f "$W"/preload/*.bin
  timeout 120 "$BIN/kselect_bench_layer" --benchmark_min_time=0.2 > "$W/layer_bench.txt" 2>&1
  summary+=("layer_bench rc=$?, $(lap)")
fi

LD_PRELOAD="$PRELOAD" KSELECT_RECORD="$W/gemms.csv" KSELECT_STATS="$W/record_stats.json" \
  timeout 240 python3 scripts/device/layer_e2e.py record --out "$W" --layers "$LAYERS" \
  > "$W/record.txt" 2>&1
summary+=("record rc=$? $(($(wc -l < "$W/gemms.csv" 2>/dev/null || echo 1) - 1)) GEMMs, $(lap)")
"$BIN/kselect" log summarize --hw data/hardware/nvidia-h200.json "$W/gemms.csv" \
  > "$W/summary.txt" 2>&1

if [ -n "${LIBRARY:-}" ]; then
  mkdir -p "$W/tune" && cp "$LIBRARY" "$W/tune/solutions.json"
  summary+=("tune skipped: LIBRARY=$LIBRARY")
else
  timeout 420 "$BIN/kselect" tune "$W/gemms.csv" --model "$MODEL" -o "$W/tune" \
    --budget "$BUDGET" --device-kind nvidia-h200 ${TUNE_ARGS:-} > "$W/tune.txt" 2>&1
  summary+=("tune rc=$? $(grep -c '^\[' "$W/tune.txt") GEMMs, $(lap)")
fi
cp "$W/tune/solutions.json" "$OUT/solutions.json" 2>/dev/null

timeout 120 "$BIN/kselect" replay "$W/gemms.csv" --library "$W/tune/solutions.json" \
  --device-kind nvidia-h200 > "$W/replay.txt" 2>&1
summary+=("replay rc=$? $(grep -iE 'uplift' "$W/replay.txt" | head -1), $(lap)")

for backend in ${MEASURE_BACKENDS-cublaslt default}; do
  LD_PRELOAD="$PRELOAD" KSELECT_SOLUTIONS="$W/tune/solutions.json" KSELECT_MODEL="$MODEL" \
    KSELECT_MODE=off KSELECT_STATS="$W/measure_stats_$backend.json" \
    timeout 400 python3 scripts/device/layer_e2e.py measure --out "$W" --layers "$LAYERS" \
    --rounds "$ROUNDS" --backend "$backend" --modes "${MEASURE_ORDER:-off,library,select}" \
    > "$W/measure_$backend.txt" 2>&1
  summary+=("measure $backend rc=$?, $(lap)")
done

# Alternated processes (see the header), each timing the model as it is.
for i in $(seq 1 "$AB"); do
  for backend in ${AB_BACKENDS:-default}; do
    variants=(without idle library model)
    # Rotated each round, so no variant always runs first.
    for variant in "${variants[@]:$((i % 4))}" "${variants[@]:0:$((i % 4))}"; do
      env=()
      case $variant in
        idle) env=(LD_PRELOAD="$PRELOAD") ;;
        library) env=(LD_PRELOAD="$PRELOAD" KSELECT_MODE=library
                      KSELECT_SOLUTIONS="$W/tune/solutions.json"
                      KSELECT_STATS="$W/ab_stats_${i}_${backend}_$variant.json") ;;
        model) env=(LD_PRELOAD="$PRELOAD" KSELECT_MODE=select KSELECT_MODEL="$MODEL"
                    KSELECT_STATS="$W/ab_stats_${i}_${backend}_$variant.json") ;;
      esac
      env "${env[@]}" timeout 200 python3 scripts/device/layer_e2e.py baseline --out "$W" \
        --layers "$LAYERS" --rounds 5 --backend "$backend" \
        > "$W/ab_${i}_${backend}_$variant.txt" 2>&1
    done
  done
done
summary+=("alternated processes done, $(lap)")

python3 - "$W" > "$OUT/figures.txt" 2>&1 <<'PY'
import json, sys, os, glob
w = sys.argv[1]
def last_json(path):
    try:
        return json.loads(open(path).read().strip().splitlines()[-1])
    except Exception as e:
        return {"error": f"{path}: {e}"}
for backend in ("cublaslt", "default"):
    path = os.path.join(w, f"measure_{backend}.txt")
    if not os.path.exists(path):
        continue
    m = last_json(path)
    print(f"== backend {backend}")
    if "error" in m:
        print(m)
        print(open(path).read()[-3000:])
        continue
    print("logits rel diff vs off:", m["logits_rel_diff"])
    for key in ("eager_decode", "eager_prefill", "graph_decode", "graph_prefill"):
        print(f"{key:14s}", json.dumps({k: round(v, 4) for k, v in m[key].items()}))
    print("per call (us, wall / cpu):")
    for shape, row in m["per_call"].items():
        print(f"  {shape:16s}", "  ".join(f"{mode} {v['wall_us']:.2f}/{v['cpu_us']:.2f}"
                                          for mode, v in row.items()))
    try:
        s = json.load(open(os.path.join(w, f"measure_stats_{backend}.json")))
        print("stats:", {k: s.get(k) for k in ("calls", "overridden", "decisions", "pass_reasons")})
        for g in s["gemms"]:
            print(f'  {g["calls"]:6d} {g["overridden"]:6d} {g.get("decisions", 0):4d} {g["decision"]:8s} {g["gemm"][:64]:64s} '
                  f'{g["config"]} | app {g["application_algo"]} ws {g["application_workspace_bytes"]}')
    except Exception as e:
        print("stats:", e)
print("== alternated processes: without the layer / idle / library / model (ms per step)")
rows = {}
for path in sorted(glob.glob(os.path.join(w, "ab_*_*_*.txt"))):
    _, i, backend, variant = os.path.basename(path)[:-4].split("_")
    b = last_json(path)
    if "error" in b:
        print(b, open(path).read()[-1500:])
        continue
    for key in ("eager_decode", "eager_prefill", "graph_decode", "graph_prefill"):
        rows.setdefault((backend, key), {}).setdefault(variant, []).append(b[key]["plain_ms"])
    for shape in ("4096x1x4096", "4096x8x4096"):
        rows.setdefault((backend, "cpu_us_" + shape), {}).setdefault(variant, []).append(
            b["per_call"][shape]["plain"]["cpu_us"])
for (backend, key), v in sorted(rows.items()):
    base = sorted(v.get("without", [0]))[len(v.get("without", [0])) // 2]
    print(f"{backend:8s} {key:22s}", "  ".join(
        f"{t} {[round(x, 3) for x in xs]}" + (f" ({base / sorted(xs)[len(xs) // 2]:.4f}x)" if base else "")
        for t, xs in v.items()))
for path in sorted(glob.glob(os.path.join(w, "ab_stats_*.json"))):
    s = json.load(open(path))
    print(os.path.basename(path), {k: s.get(k) for k in ("calls", "overridden", "decisions",
                                                         "pass_reasons", "library_status",
                                                         "model_status")})
PY

{ echo "== per-call benchmark"; grep -E '^BM_' "$W/layer_bench.txt"
  echo "== replay"; tail -4 "$W/replay.txt"; echo "== tune"; tail -15 "$W/tune.txt"; } >> "$OUT/figures.txt" 2>&1
pack_logs_work() { (cd "$OUT" && tar czf logs.tar.gz work && rm -rf work); }
pack_logs_work
echo
grep -E '^\[  FAILED|Failure' "$OUT/tests.log" 2>/dev/null | head -20 | cut -c1-300
tail -32 "$OUT/preload_check.txt"
cat "$OUT/figures.txt"
print_summary_to "$OUT/summary_lines.txt"
