#!/usr/bin/env bash
# kselect inside PyTorch on the GPU machine (issue 42): the Python tests of kselect.torch with the
# GPU cases, then scripts/device/torch_bench.py (every figure, side by side with PyTorch).
#   BIN=.devcarry-torch OUT=$OUT bash scripts/device/torch_check.sh
# BIN holds libkselect_torch.so built here against the device's torch version (torch 2.11,
# CUDA 13): `cmake --build build --target kselect_torch` with .deps/torch-venv, then copy it.
# SECTIONS (default all) and LAYERS pass through to torch_bench.py.
set -u
BIN=${BIN:-.devcarry-torch}
OUT=${OUT:-/tmp/out}
source scripts/device/check_common.sh
export KSELECT_TORCH_LIBRARY="$PWD/$BIN/libkselect_torch.so"
export PYTHONPATH="$PWD/python"

timeout 300 python3 -m unittest python.tests.test_torch -v > "$OUT/test_torch.log" 2>&1
summary+=("test_torch rc=$? $(tail -3 "$OUT/test_torch.log" | tr '\n' ' ') $(lap)")

timeout "${BENCH_TIMEOUT:-480}" python3 scripts/device/torch_bench.py --out "$OUT" \
  --sections "${SECTIONS:-check,percall,model,train,prepare}" --layers "${LAYERS:-8}" \
  > "$OUT/torch_bench.log" 2>&1
summary+=("torch_bench rc=$? $(lap)")
sed -n '/^=== kselect.torch vs PyTorch/,$p' "$OUT/torch_bench.log"
print_summary_to "$OUT/summary.txt"
