#!/bin/bash
# Conv selection and dispatch on the device, with the GPU-side build carried in BIN
# (make_selector_carry.sh) and the shipped models/h200_cudnn_conv_{fwd,bwd_data,bwd_weight}:
# the cuDNN, conv reference, conv selector and dispatch GPU tests, then examples/select_conv
# built against the carried install tree and run on the three models (kselect::Conv checked
# against the verify module's host reference). One archive of logs comes back.
BIN=${BIN:-.devcarry-sel}
OUT=${OUT:-/tmp/out}
source scripts/device/check_common.sh
gpu_tests "${TEST_SECONDS:-240}" "${GPU_TEST_FILTER:-Cudnn*:ConvReference*:ConvSelector*:ConvFeatures*:Dispatch*}"
start=$(date +%s)
models=()
for direction in fwd bwd_data bwd_weight; do models+=("models/h200_cudnn_conv_$direction"); done
(cmake -S examples/select_conv -B /tmp/conv-example -G Ninja -DCMAKE_BUILD_TYPE=Release \
   -DCMAKE_PREFIX_PATH="$PWD/$BIN/install" && cmake --build /tmp/conv-example \
   && timeout 300 /tmp/conv-example/select_conv "${models[@]}") > "$OUT/example.txt" 2>&1
summary+=("example select_conv rc=$? ($(grep -c ': PASS$' "$OUT/example.txt") layers PASS, $(grep -c ': FAIL$' "$OUT/example.txt") FAIL, $(grep -c 'decided by: model' "$OUT/example.txt") decided by the model), $(( $(date +%s) - start )) s")
grep -E "^== |^[A-Z0-9].*: |decided by|ran rank|note" "$OUT/example.txt" | head -80
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
pack_logs
