#!/usr/bin/env bash
# kselect inside PyTorch on the GPU machine (issue 42): the Python tests of kselect.torch with the
# GPU cases, then scripts/device/torch_bench.py (every figure, side by side with PyTorch).
#   BIN=.devcarry-torch OUT=$OUT bash scripts/device/torch_check.sh
# BIN holds libkselect_torch.so built here against the device's torch version (torch 2.11,
# CUDA 13): `cmake --build build --target kselect_torch` with .deps/torch-venv, then copy it.
# SECTIONS (default all; "none" skips it) and LAYERS pass through to torch_bench.py; CONV_NETS
# (default none) runs scripts/device/conv_bench.py on those networks (resnet50,convnext_t,
# vae_decoder) with CONV_TIMEOUT seconds a process; CONV_ARGS pass through (--percall: host time
# per eager conv call); CONV_RELOAD_NETS, below.
set -u
BIN=${BIN:-.devcarry-torch}
OUT=${OUT:-/tmp/out}
source scripts/device/check_common.sh
export KSELECT_TORCH_LIBRARY="$PWD/$BIN/libkselect_torch.so"
export PYTHONPATH="$PWD/python"

# GPU_TEST_FILTER (default none): those suites of a carried $BIN/kselect_tests first.
if [ -n "${GPU_TEST_FILTER:-}" ] && [ -x "$BIN/kselect_tests" ]; then
  gpu_tests "${TEST_SECONDS:-240}" "$GPU_TEST_FILTER"
fi
# TORCH_TESTS=0 skips the Python tests (a second call on the same build).
if [ "${TORCH_TESTS:-1}" != 0 ]; then
  timeout 300 python3 -m unittest python.tests.test_torch -v > "$OUT/test_torch.log" 2>&1
  summary+=("test_torch rc=$? $(tail -3 "$OUT/test_torch.log" | tr '\n' ' ') $(lap)")
fi

if [ "${SECTIONS:-}" != none ]; then
  timeout "${BENCH_TIMEOUT:-480}" python3 scripts/device/torch_bench.py --out "$OUT" \
    --sections "${SECTIONS:-check,percall,model,train,prepare}" --layers "${LAYERS:-8}" \
    > "$OUT/torch_bench.log" 2>&1
  summary+=("torch_bench rc=$? $(lap)")
  sed -n '/^=== kselect.torch vs PyTorch/,$p' "$OUT/torch_bench.log"
fi
# One process per PyTorch cuDNN mode (conv_bench.py says why; CONV_MODES picks them, default
# "default benchmark"); CONV_BENCHMARK_NETS (default
# CONV_NETS) for the cudnn.benchmark = True process.
if [ -n "${CONV_NETS:-}" ]; then
  for mode in ${CONV_MODES:-default benchmark}; do
    nets=$CONV_NETS
    [ "$mode" = benchmark ] && nets=${CONV_BENCHMARK_NETS:-$CONV_NETS}
    [ -n "$nets" ] || continue
    save=()
    [ "$mode" = default ] && [ -n "${CONV_RELOAD_NETS:-}" ] && save=(--save-decisions "$OUT/decisions")
    timeout "${CONV_TIMEOUT:-250}" python3 scripts/device/conv_bench.py --out "$OUT" \
      --mode "$mode" --nets "$nets" ${CONV_ARGS:-} "${save[@]}" > "$OUT/conv_bench_$mode.log" 2>&1
    summary+=("conv_bench $mode rc=$? $(lap)")
    sed -n '/^=== kselect.torch convolutions/,$p' "$OUT/conv_bench_$mode.log"
  done
fi
# CONV_RELOAD_NETS (default none): the default-mode process saves its decisions, and a second
# process trains these networks with them loaded (kt.load_decisions): the first step then.
if [ -n "${CONV_RELOAD_NETS:-}" ] && [ -d "$OUT/decisions" ]; then
  timeout "${CONV_TIMEOUT:-250}" python3 scripts/device/conv_bench.py --out "$OUT" --mode default \
    --nets "$CONV_RELOAD_NETS" --train-only --load-decisions "$OUT/decisions" \
    > "$OUT/conv_bench_reload.log" 2>&1
  summary+=("conv_bench reload rc=$? $(lap)")
  sed -n '/^=== kselect.torch convolutions/,$p' "$OUT/conv_bench_reload.log"
fi
print_summary_to "$OUT/summary.txt"
