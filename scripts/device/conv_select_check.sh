#!/bin/bash
# Conv selection and dispatch on the device, with the GPU-side build carried in BIN
# (make_selector_carry.sh, or only kselect_tests and a select_conv prebuilt against that install
# tree) and the shipped models/h200_cudnn_conv_{fwd,bwd_data,bwd_weight}: the cuDNN, conv
# reference, conv selector and dispatch GPU tests, then examples/select_conv run on the three
# models (kselect::Conv checked against the verify module's host reference, and timed against
# cuDNN's first pick), once per TIME_TOP_K value (default "0 5"). One archive of logs comes back.
BIN=${BIN:-.devcarry-sel}
OUT=${OUT:-/tmp/out}
source scripts/device/check_common.sh
gpu_tests "${TEST_SECONDS:-240}" "${GPU_TEST_FILTER:-Cudnn*:ConvReference*:ConvSelector*:ConvFeatures*:Dispatch*}"
models=()
for direction in fwd bwd_data bwd_weight; do models+=("models/h200_cudnn_conv_$direction"); done
# The example built here against the install tree, or carried prebuilt as $BIN/select_conv
# (built on the build host against the same install tree: the carry then needs no install tree).
if [ -x "$BIN/select_conv" ]; then
  mkdir -p /tmp/conv-example && cp "$BIN/select_conv" /tmp/conv-example/
  summary+=("example carried prebuilt")
else
  cmake -S examples/select_conv -B /tmp/conv-example -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$PWD/$BIN/install" > "$OUT/example_build.txt" 2>&1 &&
    cmake --build /tmp/conv-example >> "$OUT/example_build.txt" 2>&1
  summary+=("example build rc=$?")
fi
# Once per TIME_TOP_K value: dispatch as the model ranks (0), or timing its top k at first use;
# each layer's live A/B against cuDNN's first pick on the same buffers.
for k in ${TIME_TOP_K:-0 5}; do
  s=$(date +%s)
  timeout 300 /tmp/conv-example/select_conv --time-top-k "$k" "${models[@]}" > "$OUT/example_k$k.txt" 2>&1
  summary+=("example select_conv --time-top-k $k rc=$? ($(grep -c ': PASS$' "$OUT/example_k$k.txt") layers PASS, $(grep -c ': FAIL$' "$OUT/example_k$k.txt") FAIL, $(grep -c 'decided by: model' "$OUT/example_k$k.txt") decided by the model), $(( $(date +%s) - s )) s; $(grep 'live A/B over' "$OUT/example_k$k.txt")")
  grep -E "^== |^[A-Z0-9].*: |ran rank|live A/B|note" "$OUT/example_k$k.txt" | head -60
done
print_summary_to "$OUT/summary.txt"
pack_logs
