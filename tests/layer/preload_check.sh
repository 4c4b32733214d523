#!/usr/bin/env bash
# The preloaded layer under an unmodified cuBLASLt program (tests/layer/preload_app.c): outputs
# with and without LD_PRELOAD agree, the layer ran its choices where it could and passed through
# what it must (device-memory scalars, a misaligned operand), its record reads back as a GEMM
# log, and mode off writes nothing. Exit 77 (skipped) without a GPU.
#   preload_check.sh APP PRELOAD_SO MODEL_DIR SCRATCH [KSELECT]
set -euo pipefail
app=$1 preload=$2 model=$3 scratch=$4 kselect=${5:-}
rm -rf "$scratch" && mkdir -p "$scratch"
set +e
"$app" run "$scratch/plain.bin"
rc=$?
set -e
if [[ $rc -eq 77 ]]; then exit 77; fi
[[ $rc -eq 0 ]] || { echo "plain run failed ($rc)"; exit 1; }

echo "== select mode, untimed (the model's first config on every call)"
LD_PRELOAD=$preload KSELECT_MODEL=$model KSELECT_TIME_TOP_K=0 KSELECT_STATS=$scratch/stats_%p.json \
  KSELECT_RECORD=$scratch/gemms.csv "$app" run "$scratch/layer.bin"
"$app" compare "$scratch/plain.bin" "$scratch/layer.bin"
stats=$(ls "$scratch"/stats_*.json)
python3 - "$stats" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({k: s[k] for k in ("mode", "model_status", "calls", "overridden",
                                    "passed_through", "pass_reasons")}))
assert s["format"] == "kselect.layer_stats", s["format"]
assert s["model_status"] == "used", s["model_status"]
for g in s["gemms"]:
    print(f'{g["calls"]:3d} {g["overridden"]:3d} {g["decision"]:8s} {g["gemm"][:72]:72s} '
          f'{g["config"]} (app: {g["application_algo"]})')
assert s["calls"] == 48, s["calls"]
assert s["overridden"] >= 36, "expected most calls to run kselect's choice"
assert s["pass_reasons"].get("not_understood") == 6, "device-memory scalars pass through"
assert s["pass_reasons"].get("alignment") == 3, "a misaligned operand passes through"
blas = [g for g in s["gemms"] if "cublasGemmEx" in g["gemm"]]
assert len(blas) == 5 and sum(g["overridden"] for g in blas) >= 12, "cuBLAS calls run choices"
PY
head -3 "$scratch/gemms.csv"
rows=$(($(wc -l < "$scratch/gemms.csv") - 1))
# Eight cuBLASLt GEMMs (the misaligned call is the first one's problem) and five cuBLAS ones, two
# of which the cuBLASLt calls had (one row each).
[[ $rows -eq 11 ]] || { echo "record: $rows GEMMs, expected 11"; exit 1; }
if [[ -n $kselect ]]; then
  hw=$(dirname "$0")/../../data/hardware/nvidia-h200.json
  "$kselect" log summarize --hw "$hw" "$scratch/gemms.csv" > "$scratch/summary.txt"
  grep -q "42 calls, 11 distinct GEMMs" "$scratch/summary.txt" || { cat "$scratch/summary.txt"; exit 1; }
fi

echo "== select mode, timed at first use (the default)"
LD_PRELOAD=$preload KSELECT_MODEL=$model KSELECT_STATS=$scratch/timed.json \
  "$app" run "$scratch/timed.bin"
"$app" compare "$scratch/plain.bin" "$scratch/timed.bin"
python3 - "$scratch/timed.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
r = s["pass_reasons"]
print(json.dumps({k: s[k] for k in ("calls", "overridden", "decisions", "pass_reasons")}))
for g in s["gemms"]:
    print(f'{g["decision"]:7s} {g["gemm"][:60]:60s} {g["why"][-110:]}')
# Every understood call either ran a timed winner or kept the application's own.
assert s["overridden"] + r.get("vendor_kept", 0) + r.get("alignment", 0) + \
    r.get("not_understood", 0) + r.get("no_decision", 0) == s["calls"], r
assert r.get("no_decision", 0) == 0, "batched calls are not timed: the model's first runs"
PY

echo "== mode off"
LD_PRELOAD=$preload KSELECT_MODE=off KSELECT_STATS=$scratch/off.json \
  "$app" run "$scratch/off.bin"
"$app" compare "$scratch/plain.bin" "$scratch/off.bin" > /dev/null
[[ ! -e $scratch/off.json ]] || { echo "mode off wrote statistics"; exit 1; }
echo "preload check passed"
