#!/usr/bin/env bash
# One device call for the warp-specialized clusters and persistent scheduler (issue 18), run on an
# nvidia-h200 from the repository root with the `kselect` binary carried in $BIN:
#   1. `kselect tile verify` over the warp_specialized groups of rules/tile/tests.json (every
#      layout, clusters 2x1/1x2/2x2, persistent, split-K, batches) against the float64 reference;
#   2. `kselect tile bench` (cuBLASLt's heuristic top 16 against the warp_specialized groups of
#      rules/tile/default.json, finalists timed interleaved) on the large shapes, rcc and rcr;
#   3. a table of tile best / cuBLASLt best per shape and the winning configs.
# Logs and JSON land in $OUT. Env: BIN (default .devcarry-bench), VERIFY_SECONDS, BENCH_SECONDS,
# SHAPES ("m,n,k ..."), LAYOUTS ("rcc rcr"), BENCH_EXTRA (more `tile bench` options, e.g.
# "--finalists 8 --rounds 21").
set -uo pipefail
BIN="${BIN:-.devcarry-bench}"
OUT="${OUT:-/tmp/kselect-out}"
VERIFY_SECONDS="${VERIFY_SECONDS:-200}"
BENCH_SECONDS="${BENCH_SECONDS:-300}"
SHAPES="${SHAPES:-8192,8192,8192 4096,4096,4096}"
LAYOUTS="${LAYOUTS:-rcc}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv | tee "$OUT/smi.txt"

# Rule files with only the warp_specialized groups (the generator's variants kept).
python3 - rules/tile "$OUT" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
for name in ("tests", "default"):
    d = json.load(open(f"{src}/{name}.json"))
    d["name"] = f"{name}_ws"
    d["generator"]["groups"] = [g for g in d["generator"]["groups"]
                                if g["pipeline"] == "warp_specialized"]
    json.dump(d, open(f"{out}/{name}_ws.json", "w"), indent=1)
PY

echo "=== 1. tile verify (warp_specialized of tests.json)"
timeout "$VERIFY_SECONDS" "$BIN/kselect" tile verify --rules "$OUT/tests_ws.json" \
  --rules-dir rules --log "$OUT/verify.log" > "$OUT/verify.out" 2>&1
echo "verify rc=$?"; tail -5 "$OUT/verify.out"
grep -c . "$OUT/verify.log" 2>/dev/null | sed 's/^/checks logged: /'
grep -v -i " ok\b\|pass" "$OUT/verify.log" 2>/dev/null | head -20

echo "=== 2. tile bench (warp_specialized of default.json vs cuBLASLt top 16)"
shape_args=()
for s in $SHAPES; do shape_args+=(--shape "$s"); done
for layout in $LAYOUTS; do
  timeout "$BENCH_SECONDS" "$BIN/kselect" tile bench --rules "$OUT/default_ws.json" \
    --rules-dir rules --layout "$layout" "${shape_args[@]}" --cublaslt-picks 16 --screened \
    --device-kind nvidia-h200 --run-id "${RUN_ID:-ws-cluster}-$layout" \
    --json "$OUT/bench_$layout.json" ${BENCH_EXTRA:-} \
    > "$OUT/bench_$layout.out" 2>&1
  echo "bench $layout rc=$?"; tail -12 "$OUT/bench_$layout.out"
done

echo "=== 3. screened: the fastest warp_specialized configs per shape"
python3 - "$OUT" $LAYOUTS <<'PY'
import json, sys
out = sys.argv[1]
for layout in sys.argv[2:]:
    try:
        d = json.load(open(f"{out}/bench_{layout}.json"))
    except (OSError, ValueError) as e:
        print(layout, "no JSON:", e); continue
    for r in d["results"]:
        p = r["problem"]; flop = 2.0 * p["m"] * p["n"] * p["k"] * p.get("batch", 1)
        best = r["cublaslt_best"]["median_ms"] if r.get("cublaslt_best") else None
        print(f'{layout} {p["m"]}x{p["n"]}x{p["k"]}: cuBLASLt best {best:.4f} ms '
              f'({flop / best / 1e9:.0f} TFLOP/s); tile best / lt best {r["tile_over_cublaslt_best"]}')
        tiles = [t for t in r.get("screened", []) if t["config"].get("provider") == "tile"]
        for t in sorted(tiles, key=lambda t: t["ms"])[:10]:
            c = t["config"]
            desc = {k: v for k, v in c.items() if k in ("pipeline", "tile", "stages", "swizzle",
                    "cluster", "scheduler", "split_k")}
            print(f'   {t["ms"]:.4f} ms {flop / t["ms"] / 1e9:6.0f} TFLOP/s  {desc}')
PY
