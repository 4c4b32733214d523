#!/usr/bin/env bash
# One device call for the tuning workflow (#20): GPU tests of the tuner, a GEMM trace captured
# from a Llama-architecture model in PyTorch (cuBLASLt logging), PyTorch TunableOp on the same
# steps, `kselect tune` on the trace (report with the model-only pick, the best of the top 8 and
# TunableOp), `kselect replay` of the trace with the library, and the model's prefill and decode
# steps (CUDA graphs) in plain PyTorch against kselect's library. Binaries come in $BIN (built
# here without Arrow or LightGBM: scripts/device/make_selector_carry.sh). Logs land in $OUT.
#   LAYERS (8), BUDGET (s per GEMM, 12), MAX_GEMMS (0 = all), TESTS (1), TUNE_ARGS (extra)
set -uo pipefail
BIN="${BIN:-.devcarry-sel}"
OUT="${OUT:-/tmp/kselect-out}"
LAYERS="${LAYERS:-8}"
BUDGET="${BUDGET:-12}"
MAX_GEMMS="${MAX_GEMMS:-0}"
MODEL=models/h200_cublaslt_default_bf16_tn
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"

[ "${TESTS:-1}" = 1 ] && gpu_tests 200 "${GPU_TEST_FILTER:-*Tune*:*Solution*:*Genetic*:*SearchSpace*:*Dispatch*:*WorkerTest*:*Bench*}"

python3 -c "import torch; print(torch.__version__)" > "$OUT/torch.txt" 2>&1
strings "$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')" 2>/dev/null \
  | grep -E '^Gemm_(Cublaslt|Hipblaslt|Rocblas)' | sort -u | head > "$OUT/tunableop_ops.txt"

timeout 240 python3 scripts/device/llama_e2e.py capture --out "$OUT" --layers "$LAYERS" \
  > "$OUT/capture.txt" 2>&1
summary+=("capture rc=$? $(grep -c cublasLtMatmul "$OUT/cublaslt_trace.log" 2>/dev/null) matmul lines, $(lap)")
gzip -k -f "$OUT/cublaslt_trace.log" 2>/dev/null
"$BIN/kselect" log summarize "$OUT/cublaslt_trace.log" > "$OUT/summary.txt" 2>&1
"$BIN/kselect" log summarize "$OUT/cublaslt_trace.log" --json > "$OUT/summary.json" 2>>"$OUT/summary.txt"
summary+=("log summarize rc=$?")

timeout 300 python3 scripts/device/llama_e2e.py tunableop --out "$OUT" --layers "$LAYERS" \
  > "$OUT/tunableop.txt" 2>&1
summary+=("tunableop rc=$? $(tail -1 "$OUT/tunableop.txt" | cut -c1-300), $(lap)")
TUNABLEOP_S=$(tail -1 "$OUT/tunableop.txt" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["tuning_s"])' 2>/dev/null || echo -1)
ls "$OUT"/tunableop* >> "$OUT/tunableop.txt" 2>&1
cut -d, -f3 "$OUT/tunableop_results0.csv" 2>/dev/null | sort | uniq -c >> "$OUT/tunableop.txt"
TUNABLEOP_ARGS=()
[ -f "$OUT/tunableop_results0.csv" ] && TUNABLEOP_ARGS=(--tunableop "$OUT/tunableop_results0.csv" --tunableop-seconds "$TUNABLEOP_S")

timeout 420 "$BIN/kselect" tune "$OUT/cublaslt_trace.log" --model "$MODEL" -o "$OUT/tune" \
  --budget "$BUDGET" --max-gemms "$MAX_GEMMS" --device-kind nvidia-h200 "${TUNABLEOP_ARGS[@]}" \
  ${TUNE_ARGS:-} > "$OUT/tune.txt" 2>&1
summary+=("tune rc=$? $(grep -c '^\[' "$OUT/tune.txt") GEMMs, $(lap)")

timeout 120 "$BIN/kselect" replay "$OUT/cublaslt_trace.log" --library "$OUT/tune/solutions.json" \
  --device-kind nvidia-h200 > "$OUT/replay.txt" 2>&1
summary+=("replay rc=$?, $(lap)")

PYTHONPATH="$PWD/python" KSELECT_LIBRARY="$PWD/$BIN/lib/libkselect_c.so" timeout 300 \
  python3 scripts/device/llama_e2e.py e2e --out "$OUT" --layers "$LAYERS" --model "$MODEL" \
  --library "$OUT/tune/solutions.json" > "$OUT/e2e.txt" 2>&1
summary+=("e2e rc=$?, $(lap)")

# The lender brings back a few files only: everything else travels in one archive.
tar czf /tmp/logs.tar.gz -C "$OUT" --exclude='cublaslt_trace.log' . 2>/dev/null
echo
grep -E '^\[  FAILED|Failure|error' "$OUT/tests.log" 2>/dev/null | head -20 | cut -c1-300
grep -E '^(tune|replay): ' "$OUT/tests.log" 2>/dev/null | cut -c1-220
head -30 "$OUT/summary.txt"
grep -E '^\[' "$OUT/tune.txt" | cut -c1-240
sed -n '/| choice/,/^$/p' "$OUT/tune.txt"
cat "$OUT/replay.txt"
tail -1 "$OUT/e2e.txt" | cut -c1-900
cat "$OUT/tunableop_ops.txt"
tail -6 "$OUT/tunableop.txt" | cut -c1-300
print_summary
find "$OUT" -mindepth 1 -delete && mv /tmp/logs.tar.gz "$OUT/"
