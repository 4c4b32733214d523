#!/usr/bin/env bash
# One device call comparing the stream-K scheduler with the persistent one (issue 18): the same
# warp_specialized configs under both, timed interleaved as `kselect tile bench` finalists (with
# cuBLASLt's best of its top 16 as the yardstick) on shapes whose tiles leave the last wave more
# or less full. Run on an nvidia-h200 from the repository root with `kselect` in $BIN; JSON and
# logs land in $OUT, a table of streamk / persistent per config and shape last.
# Env: BIN (default .devcarry-bench), SHAPES ("m,n,k ..."), TILES ("tile_n:stages ...", 128-row
# tiles; default "256:4 192:4 128:5"), FINALISTS (default 12), ROUNDS, SECONDS_LIMIT, RUN_ID.
set -uo pipefail
BIN="${BIN:-.devcarry-bench}"
OUT="${OUT:-/tmp/kselect-out}"
SHAPES="${SHAPES:-8192,8192,8192 4096,4096,4096}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv \
  > "$OUT/smi.txt"
python3 - rules/tile/default.json "$OUT/streamk_pairs.json" "${TILES:-256:4 192:4 128:5}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))  # the default set's fields and validity rules, other groups
groups = []
for entry in sys.argv[3].split():
    tile, stages = (int(x) for x in entry.split(":"))
    groups.append({"pipeline": "warp_specialized", "tile": [[128, tile, 64]],
                   "warps": [[2, 1, 1]], "instr": [[64, tile, 16]], "stages": [stages],
                   "swizzle": [8], "cluster": [[1, 1], [2, 1]],
                   "scheduler": ["persistent", "streamk"], "epilogue": ["transposed"]})
d["name"] = "streamk_pairs"
d["comment"] = "persistent / streamk pairs"
d["generator"]["variants"] = [{"input": "bf16", "output": "bf16", "layout": "rcc"}]
d["generator"]["groups"] = groups
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
shape_args=()
for s in $SHAPES; do shape_args+=(--shape "$s"); done
timeout "${SECONDS_LIMIT:-500}" "$BIN/kselect" tile bench --rules "$OUT/streamk_pairs.json" \
  --rules-dir rules --layout rcc "${shape_args[@]}" --cublaslt-picks 16 --finalists "${FINALISTS:-12}" \
  --rounds "${ROUNDS:-11}" --device-kind nvidia-h200 --run-id "${RUN_ID:-streamk-pairs}" \
  --json "$OUT/pairs.json" > "$OUT/pairs.out" 2>&1
echo "bench rc=$?"
python3 - "$OUT/pairs.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("per shape: config, persistent ms, streamk ms, streamk / persistent (interleaved medians)")
for r in d["results"]:
    p = r["problem"]
    fin = {f["name"]: f["median_ms"] for f in r.get("finalists", [])}
    if not r.get("tile_best"):
        print(f'{p["m"]}x{p["n"]}x{p["k"]}: no tile finalist ({r["note"][:200]})'); continue
    print(f'{p["m"]}x{p["n"]}x{p["k"]}  lt best {r["cublaslt_best"]["median_ms"]:.4f}  '
          f'tile best {r["tile_best"]["median_ms"]:.4f} {r["tile_best"]["name"]}  '
          f'tile/lt {r["tile_over_cublaslt_best"]:.3f}')
    pairs = {}
    for name, ms in fin.items():
        if not name.startswith("tile"): continue
        base = name.replace(" streamk", "").replace(" persistent", "")
        pairs.setdefault(base, {})["sk" if "streamk" in name else "pe"] = ms
    for base, v in sorted(pairs.items()):
        if "sk" in v and "pe" in v:
            print(f'   {base:55s} {v["pe"]:.4f} {v["sk"]:.4f} {v["sk"] / v["pe"]:.3f}')
PY
