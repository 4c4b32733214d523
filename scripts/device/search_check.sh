#!/usr/bin/env bash
# One device call for `kselect search` (#18, item 4), run from the repository root on the GPU
# machine with the GPU-side binaries carried in $BIN (scripts/device/make_selector_carry.sh):
#   1. the GPU tests of the search, and of the tuner whose verify-and-time helpers it now shares
#      (bench/provider_comparison.h);
#   2. `kselect tile bench` on one decode shape: the head to head, refactored onto the same
#      helpers, as a regression check;
#   3. `kselect search --measure` with both strategies on six framework-orientation shapes (rcc:
#      m = out features, n = tokens): the best proposals and the catalogues' best configs
#      compiled, verified and timed interleaved with cuBLASLt's heuristic pick. JSON in $OUT.
#   BUDGET (300), MEASURE_TOP (4), MODEL (models/h200_tile_bf16_tn), SHAPES (--shape args),
#   TESTS (1), H2H (1), SEARCH_ARGS (extra), DEVICE_KIND (nvidia-h200)
set -uo pipefail
BIN="${BIN:-.devcarry-sel}"
OUT="${OUT:-/tmp/kselect-out}"
MODEL="${MODEL:-models/h200_tile_bf16_tn}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"

[ "${TESTS:-1}" = 1 ] && gpu_tests 240 "${GPU_TEST_FILTER:-*TileSearch*:*SearchGpu*:*TuneGpu*}"
if [ "${H2H:-1}" = 1 ]; then
  timeout 200 "$BIN/kselect" tile bench --rules default --shape 4096,1,4096 --layout rcc \
    --device-kind "${DEVICE_KIND:-nvidia-h200}" --json "$OUT/head_to_head.json" \
    > "$OUT/head_to_head.txt" 2>&1
  summary+=("tile bench rc=$?, $(lap)")
fi

DEFAULT_SHAPES=(--shape 4096,1,4096 --shape 4096,16,4096 --shape 8192,512,4096
  --shape 8192,8192,8192 --shape 14336,128,4096 --shape 1024,4,4096)
# shellcheck disable=SC2206
[ -n "${SHAPES:-}" ] && DEFAULT_SHAPES=(${SHAPES})
for strategy in random de; do
  # shellcheck disable=SC2086
  timeout "${SEARCH_TIMEOUT:-240}" "$BIN/kselect" search --model "$MODEL" "${DEFAULT_SHAPES[@]}" \
    --layout rcc --strategy "$strategy" --budget "${BUDGET:-300}" --seed 1 --measure \
    --measure-top "${MEASURE_TOP:-4}" --device-kind "${DEVICE_KIND:-nvidia-h200}" \
    --run-id "search-check-$strategy-$(date -u +%Y%m%dT%H%M%SZ)" \
    --json "$OUT/search_$strategy.json" ${SEARCH_ARGS:-} > "$OUT/search_$strategy.txt" 2>&1
  summary+=("search --strategy $strategy --measure rc=$?, $(lap)")
done

pack_logs
for strategy in random de; do
  echo "== search $strategy"
  cat "$OUT/search_$strategy.txt"
done
echo "== head to head"
cat "$OUT/head_to_head.txt" 2>/dev/null
echo "== summary"
print_summary
