#!/usr/bin/env bash
# One device call for the tile engine (#18): the tile GPU tests, `kselect tile verify` of a rule
# set (every config on the verify shape list), then `kselect tile bench` head to head with
# cuBLASLt on the decode targets and more (one timing module: graph timer, operands rotated past
# L2, finalists interleaved). Binaries come in $BIN (scripts/device/make_selector_carry.sh).
#   VERIFY_RULES (tests), BENCH_RULES (default), SHAPES (extra --shape args), BENCH_ARGS (extra)
set -uo pipefail
BIN="${BIN:-.devcarry-sel}"
OUT="${OUT:-/tmp/kselect-out}"
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh"

[ "${TESTS:-1}" = 1 ] && gpu_tests 200 "${GPU_TEST_FILTER:-*Tile*}"
if [ -n "${VERIFY_RULES-tests}" ]; then
  timeout 300 "$BIN/kselect" tile verify --rules "${VERIFY_RULES:-tests}" --log "$OUT/verify.log" \
    > "$OUT/verify.txt" 2>&1
  summary+=("tile verify rc=$? $(tail -1 "$OUT/verify.txt"), $(lap)")
fi
DEFAULT_SHAPES=(--shape 4096,1,4096 --shape 4096,4,4096 --shape 14336,1,4096 --shape 4096,1,14336
  --shape 1024,1,4096 --shape 4096,2,4096 --shape 4096,8,4096 --shape 4096,16,4096
  --shape 28672,1,4096 --shape 128256,1,4096 --shape 6144,1,4096 --shape 4096,4,14336)
# shellcheck disable=SC2206
[ -n "${SHAPES:-}" ] && DEFAULT_SHAPES=(${SHAPES})
# shellcheck disable=SC2086
timeout "${BENCH_TIMEOUT:-400}" "$BIN/kselect" tile bench --rules "${BENCH_RULES:-default}" \
  "${DEFAULT_SHAPES[@]}" --device-kind "${DEVICE_KIND:-nvidia-h200}" \
  --json "$OUT/head_to_head.json" ${BENCH_ARGS:-} > "$OUT/bench.txt" 2>&1
summary+=("tile bench rc=$?, $(lap)")

pack_logs
echo "== bench"
cat "$OUT/bench.txt"
echo "== summary"
print_summary
