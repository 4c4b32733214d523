#!/bin/bash
# One device call for the cuBLASLt bench work (issue 3). Carry a folder made by
# scripts/device/make_carry.sh (binaries built with -DKSELECT_WITH_ARROW=OFF
# -DKSELECT_WITH_LIGHTGBM=OFF, rules/, shapes/, tests/fixtures/) and run
#   bash <carry>/scripts/device/cublaslt_bench_session.sh [seconds, default 480]
# Steps, each bounded so the whole call ends inside its limit; logs and JSONL land in $OUT:
#   1. GPU tests (consistency of the `tests` catalogue vs float64, snapshots vs fresh enumeration)
#   2. rule-filtered enumeration time per rule set
#   3. isolation + kill -9/--resume proof (KSELECT_BENCH_FAULT=crash:4), compared in Python
#   4. tiny catalogue on shapes/smoke_regimes.csv; default catalogue on its first 2 shapes
#   5. the wide-set collection (default rules) with --resume for whatever time is left
set -u
LIMIT=${1:-480}
C=$(cd "$(dirname "$0")/../.." && pwd)
cd "$C"
exec > >(tee "$OUT/session.log") 2>&1
T0=$(date +%s)
el() { echo "[t+$(($(date +%s) - T0))s] $*"; }
left() { echo $((LIMIT - ($(date +%s) - T0))); }
# The tests find rules/ and fixtures through the absolute source path they were built with.
SRC=$(grep -a -o -m1 '/[[:alnum:]_./-]*/tests/fixtures' ./kselect_tests | head -1 | sed 's|/tests/fixtures$||')
[ -n "$SRC" ] && [ ! -e "$SRC" ] && mkdir -p "$(dirname "$SRC")" && ln -s "$C" "$SRC"
K=$C/kselect
R="--rules-dir $C/rules --device-kind nvidia-h200"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
el "gpu tests"
timeout 120 ./kselect_tests --gtest_filter='CublasLt*:Rules*' 2>&1 | grep -E "OK|FAIL|SKIP|checked|compared|Failure|PASSED"
el "enumeration time per rule set (bf16 TN 4096^3 and 1x4096x4096)"
for r in tiny tests default; do
  for m in 4096 1; do timeout 60 $K catalogue --rules $r -m $m --rules-dir $C/rules 2>&1 | head -1; done
done
el "isolation A (uninterrupted)"
export KSELECT_BENCH_FAULT=crash:4
timeout 120 $K bench --shapes shapes/smoke_isolation.csv --rules tiny $R -o $OUT/iso_a.jsonl --run-id iso-a | tail -1
el "isolation B: kill -9 after 8 s, torn line appended, --resume"
$K bench --shapes shapes/smoke_isolation.csv --rules tiny $R -o $OUT/iso_b.jsonl --run-id iso-b >/dev/null 2>&1 &
P=$!
sleep 8
kill -9 $P
wait $P 2>/dev/null
echo "killed $P: $(grep -c '"measurement"' $OUT/iso_b.jsonl) rows so far"
printf '{"type":"measurement","run_id":"iso-b","op_ty' >>$OUT/iso_b.jsonl
timeout 120 $K bench --shapes shapes/smoke_isolation.csv --rules tiny $R -o $OUT/iso_b.jsonl --resume | tail -1
unset KSELECT_BENCH_FAULT
python3 - $OUT/iso_a.jsonl $OUT/iso_b.jsonl <<'PY'
import json, sys
def keys(path):
    out = []
    for line in open(path):
        r = json.loads(line)
        if r["type"] == "measurement":
            out.append((json.dumps(r["problem"], sort_keys=True), json.dumps(r["config"], sort_keys=True)))
    return out
a, b = keys(sys.argv[1]), keys(sys.argv[2])
crashed = lambda p: sum("signal 11" in l for l in open(p))
print("A rows", len(a), "B rows", len(b), "duplicates", len(a) - len(set(a)), len(b) - len(set(b)),
      "same pairs", set(a) == set(b), "crash rows", crashed(sys.argv[1]), crashed(sys.argv[2]))
PY
el "tiny bench on smoke_regimes"
timeout $(($(left) / 3)) $K bench --shapes shapes/smoke_regimes.csv --rules tiny $R -o $OUT/tiny.jsonl | tail -1
el "default bench on 2 shapes"
timeout $(($(left) / 2)) $K bench --shapes shapes/smoke_regimes.csv --max-shapes 2 --rules default $R -o $OUT/default.jsonl | tail -1
el "wide collection (default rules), resumable"
[ -f data_in/wide_default.jsonl ] && cp data_in/wide_default.jsonl $OUT/wide_default.jsonl
timeout $(($(left) - 15)) $K bench --shapes shapes/wide.csv --rules default $R -o $OUT/wide_default.jsonl --resume | tail -1
el done
ls -la $OUT
