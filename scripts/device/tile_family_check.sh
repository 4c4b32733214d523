#!/usr/bin/env bash
# One device call for a candidate tile family (issue 18): its configs verified against the float64
# reference, then `kselect tile bench` of the default catalogue plus the candidate groups against
# cuBLASLt's heuristic top 16 on shape files, so the candidates compete with every default config
# in the same interleaved rounds. Run on an nvidia-h200 from the repository root with `kselect`
# in $BIN; logs and JSON land in $OUT, a table per shape file last.
# Env: BIN (default .devcarry-bench), EXTRA (a rule file whose generator groups are the
# candidates; its variants are replaced by default's), SHAPE_FILES ("file[:n_min:n_max] ..."),
# VERIFY_SECONDS (0 = no verify), BENCH_SECONDS (per shape file), FINALISTS, ROUNDS, RUN_ID,
# ONLY_CANDIDATES=1 (bench the candidates alone, e.g. tile_candidates/share_screen.json over the
# wide set: a share at or above cuBLASLt that is a lower bound, in a third of the time),
# SKIP_DONE ("bench.json ...": earlier `tile bench` JSON, plain or gzipped, whose problems are
# left out, so a set too large for one call is finished over several; scripts/device/
# share_compose.py joins them).
set -uo pipefail
BIN="${BIN:-.devcarry-bench}"
OUT="${OUT:-/tmp/kselect-out}"
EXTRA="${EXTRA:?EXTRA names the candidate rule file}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"

# candidates.json: the candidate groups with default's variants (every layout default builds);
# merged.json: default's groups followed by the candidates.
python3 - rules/tile/default.json "$EXTRA" "$OUT" <<'PY'
import json, sys
default, extra, out = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
cand = dict(default, name="candidates", comment=extra.get("comment", ""))
cand["generator"] = dict(default["generator"], groups=extra["generator"]["groups"])
json.dump(cand, open(f"{out}/candidates.json", "w"), indent=1)
merged = dict(default, name="default_plus_candidates")
merged["generator"] = dict(default["generator"],
                           groups=default["generator"]["groups"] + extra["generator"]["groups"])
json.dump(merged, open(f"{out}/merged.json", "w"), indent=1)
PY

if [ "${VERIFY_SECONDS:-150}" != 0 ]; then
  echo "=== 1. tile verify (the candidates, every default layout)"
  timeout "${VERIFY_SECONDS:-150}" "$BIN/kselect" tile verify --rules "$OUT/candidates.json" \
    --rules-dir rules --log "$OUT/verify.log" > "$OUT/verify.out" 2>&1
  echo "verify rc=$?"
  tail -3 "$OUT/verify.out"
fi
bench_rules="$OUT/merged.json"
[ "${ONLY_CANDIDATES:-0}" = 1 ] && bench_rules="$OUT/candidates.json"

echo "=== 2. tile bench ($(basename "$bench_rules" .json) vs cuBLASLt top 16)"
i=0
for spec in ${SHAPE_FILES:?}; do
  IFS=: read -r file n_min n_max <<< "$spec"
  i=$((i + 1))
  python3 - "$file" "${n_min:-1}" "${n_max:-1000000000}" "$OUT/shapes_$i.csv" ${SKIP_DONE:-} <<'PY'
import csv, gzip, json, sys
src, lo, hi, dst, done_files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
done = set()
for path in done_files:
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        for r in json.load(f)["results"]:
            p = r["problem"]
            done.add((p["m"], p["n"], p["k"], p.get("batch", 1)))
lines = [l for l in open(src) if not l.startswith("#")]
rows = list(csv.DictReader(lines))
with open(dst, "w") as f:
    f.write(lines[0])
    w = csv.DictWriter(f, fieldnames=rows[0].keys(), lineterminator="\n")
    for r in rows:
        key = (int(r["m"]), int(r["n"]), int(r["k"]), int(r.get("batch") or 1))
        if lo <= int(r["n"]) <= hi and key not in done:
            w.writerow(r)
PY
  echo "shape file $i: $spec, $(($(wc -l < "$OUT/shapes_$i.csv") - 1)) shapes"
  timeout "${BENCH_SECONDS:-240}" "$BIN/kselect" tile bench --rules "$bench_rules" \
    --rules-dir rules --layout rcc --shapes "$OUT/shapes_$i.csv" --cublaslt-picks 16 \
    --finalists "${FINALISTS:-4}" --rounds "${ROUNDS:-11}" --device-kind nvidia-h200 \
    --run-id "${RUN_ID:-tile-family}-$i" --json "$OUT/bench_$i.json" > "$OUT/bench_$i.out" 2>&1
  echo "bench $i rc=$?"
done

echo "=== 3. per shape: tile best / cuBLASLt best"
python3 - "$OUT" "$EXTRA" <<'PY'
import glob, json, math, sys
out = sys.argv[1]
for path in sorted(glob.glob(f"{out}/bench_*.json")):
    d = json.load(open(path))
    rows = [r for r in d["results"] if r.get("tile_best")]
    print(f"{path.split('/')[-1]}: {len(rows)} shapes")
    wins, logs = 0, []
    for r in rows:
        p, ratio = r["problem"], r["tile_over_cublaslt_best"]
        wins += ratio >= 1.0
        logs.append(math.log(ratio))
        print(f'  {p["m"]:>6}x{p["n"]:<5}x{p["k"]:<6} {ratio:.3f}  hbm lt {r["cublaslt_best"]["hbm_fraction"]:.2f} '
              f'tile {r["tile_best"]["hbm_fraction"]:.2f}  {r["tile_best"]["name"]}')
    if rows:
        print(f"  at or above: {wins} of {len(rows)}; geomean tile/lt best "
              f"{math.exp(sum(logs) / len(logs)):.3f}")
PY
