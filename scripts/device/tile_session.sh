#!/usr/bin/env bash
# One device call for the tile engine (run on an nvidia-h200 from the repository root, with the
# GPU-side binaries carried in $1, default .devcarry-main):
#   1. the GPU tests of the tile engine, its provider adapter and cuBLASLt;
#   2. `kselect tile verify --rules default`: every default-catalogue config against a float64
#      reference over masked, M = 1, odd-K and all-layout shapes;
#   3. `kselect bench --provider tile` beside `kselect bench --provider cublaslt` on the square and
#      LLM shapes of issue 5, and a table of the best of each.
# Logs and JSONL land in $OUT.
set -uo pipefail
BIN="${1:-.devcarry-main}"
OUT="${OUT:-/tmp/kselect-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export KSELECT_RULES_DIR="$PWD/rules"
# Tests find fixtures and rule sets by the source path they were built in.
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv \
  | tee "$OUT/smi.txt"

STEPS="${TILE_SESSION_STEPS:-1 2 3}"  # a subset, to repeat one step
step() { [[ " $STEPS " == *" $1 "* ]]; }

if step 1; then
echo "=== 1. GPU tests"
# Only the tile bench and verification are new here: the GPU tests run again as a regression.
timeout 150 "$BIN/kselect_tests" \
  --gtest_filter='TileGpu*:*TileGpuTest*:TileProvider*:CublasLtGpu*:Hardware*:DriverApi*' \
  > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu_tests.log"

fi

if step 2; then
echo "=== 2. tile verify --rules default"
timeout 130 "$BIN/kselect" tile verify --rules default --rules-dir rules/tile \
  --log "$OUT/verify_default.log" > "$OUT/verify_default.out" 2>&1
echo "verify rc=$?"; tail -4 "$OUT/verify_default.out"

fi

if step 3; then
echo "=== 3. bench: tile default vs cuBLASLt tiny (+ its heuristic top-8)"
{
  echo "m,n,k,batch,regime,family"
  for s in 2048 4096 8192; do echo "$s,$s,$s,1,,"; done
  for m in 1 16 128 2048; do
    for nk in "4096,4096" "14336,4096" "4096,14336"; do echo "$m,$nk,1,,"; done
  done
} > "$OUT/issue5_shapes.csv"
timeout 140 "$BIN/kselect" bench --shapes "$OUT/issue5_shapes.csv" --provider tile \
  --rules default --device-kind nvidia-h200 -o "$OUT/tile_bench.jsonl" \
  > "$OUT/tile_bench.out" 2>&1
echo "tile bench rc=$?"; tail -2 "$OUT/tile_bench.out"
timeout 170 "$BIN/kselect" bench --shapes "$OUT/issue5_shapes.csv" --provider cublaslt \
  --rules tiny --device-kind nvidia-h200 -o "$OUT/cublaslt_bench.jsonl" \
  > "$OUT/cublaslt_bench.out" 2>&1
echo "cublaslt bench rc=$?"; tail -2 "$OUT/cublaslt_bench.out"
fi

python3 - "$OUT/tile_bench.jsonl" "$OUT/cublaslt_bench.jsonl" <<'PY'
import json, sys
best = {}
for path, name in zip(sys.argv[1:], ("tile", "cublaslt")):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") != "measurement" or not r.get("is_valid"):
            continue
        p = r["problem"]
        key = (p["m"], p["n"], p["k"])
        t = r.get("tflops") or 0
        slot = best.setdefault(key, {})
        if t > slot.get(name, (0, ""))[0]:
            slot[name] = (t, r.get("kernel_name", ""))
        if name == "cublaslt" and r.get("peer_rank") == 1:
            slot["lt_top1"] = (t, "")
print(f"{'m':>5} {'n':>6} {'k':>6} {'tile':>8} {'lt_best':>8} {'lt_top1':>8} {'tile/best':>9}")
for key in sorted(best):
    s = best[key]
    tile, lt, top1 = s.get("tile", (0,))[0], s.get("cublaslt", (0,))[0], s.get("lt_top1", (0,))[0]
    ratio = f"{tile / lt:.3f}" if lt else "-"
    print(f"{key[0]:>5} {key[1]:>6} {key[2]:>6} {tile:8.1f} {lt:8.1f} {top1:8.1f} {ratio:>9}")
PY
