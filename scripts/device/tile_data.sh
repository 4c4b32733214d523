#!/usr/bin/env bash
# Device calls for the tile dataset and the cross-provider evaluation set (#18). Binaries come in
# $BIN (scripts/device/make_selector_carry.sh). Steps (STEPS, space-separated):
#   dataset   kselect bench --provider tile --rules default, bf16 TN (rcc), on DATA_SHAPES
#             (default shapes/core_framework.csv) into $OUT/tile_dataset.jsonl; RESUME=FILE continues
#             a partial file from an earlier call; stops starting configs after DATA_LIMIT_S.
#   cross     kselect tile bench --cross-model on CROSS_SHAPES: the decision timed interleaved.
#   screen    kselect tile bench --screened on SCREEN_SHAPES (default shapes/holdout_framework.csv):
#             cuBLASLt's top 16 and every tile config timed in one process, per shape.
set -uo pipefail
BIN="${BIN:-.devcarry-sel}"
OUT="${OUT:-/tmp/kselect-out}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"
for step in ${STEPS:-dataset}; do
  case "$step" in
  dataset)
    resume=()
    if [ -n "${RESUME:-}" ]; then cp "$RESUME" "$OUT/tile_dataset.jsonl"; resume=(--resume); fi
    "$BIN/kselect" bench --provider tile --rules default --ops TN --dtype bf16 \
      --shapes "${DATA_SHAPES:-shapes/core_framework.csv}" -o "$OUT/tile_dataset.jsonl" \
      --device-kind nvidia-h200 --run-id "${RUN_ID:-h200-tile-core-framework}" \
      --time-limit-s "${DATA_LIMIT_S:-520}" "${resume[@]}" > "$OUT/dataset.txt" 2>&1
    summary+=("bench tile rc=$? $(tail -2 "$OUT/dataset.txt" | tr '\n' ' '), $(lap)")
    gzip -f "$OUT/tile_dataset.jsonl"  # 27 MB plain: over what comes back from the device
    ;;
  screen)
    timeout "${SCREEN_TIMEOUT:-540}" "$BIN/kselect" tile bench --rules default --screened \
      --shapes "${SCREEN_SHAPES:-shapes/holdout_framework.csv}" --finalists 2 --rounds 7 \
      --device-kind nvidia-h200 --run-id "${RUN_ID:-h200-holdout-framework-screen}" \
      --json "$OUT/screen.json" > "$OUT/screen.txt" 2>&1
    summary+=("tile bench --screened rc=$? $(grep -c x "$OUT/screen.txt") lines, $(lap)")
    ;;
  cross)
    # The cross-provider model's decision timed interleaved with cuBLASLt's pick (and the
    # finalists of both providers) on CROSS_SHAPES.
    timeout "${CROSS_TIMEOUT:-400}" "$BIN/kselect" tile bench --rules default \
      --cross-model "${CROSS_MODEL:-models/h200_cross_bf16_tn}" \
      --shapes "${CROSS_SHAPES:-shapes/holdout_framework.csv}" --finalists 2 --rounds 9 \
      --device-kind nvidia-h200 --run-id "${RUN_ID:-h200-cross-provider-live}" \
      --json "$OUT/cross.json" > "$OUT/cross.txt" 2>&1
    summary+=("tile bench --cross-model rc=$? $(grep -c x "$OUT/cross.txt") lines, $(lap)")
    ;;
  esac
done
for f in screen.json cross.json; do [ -f "$OUT/$f" ] && gzip -f "$OUT/$f"; done
pack_logs
echo "== summary"
print_summary
