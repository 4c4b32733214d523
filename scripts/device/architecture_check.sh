#!/usr/bin/env bash
# One device call for the architecture issue: the whole GPU-side `kselect_tests` (every GPU suite,
# the consistency test that runs every registered provider's catalogue against the reference, the
# CPU suites too), then `kselect tile verify --rules tests`, with the binaries built here without
# Arrow or LightGBM and carried in $BIN (scripts/device/make_carry.sh). Logs land in $OUT.
set -uo pipefail
BIN="${BIN:-.devcarry-arch}"
OUT="${OUT:-/tmp/kselect-out}"
# The standard set-up less the carried lib/ and cuDNN from the wheels.
# shellcheck source=scripts/device/check_common.sh
source "$(dirname "$0")/check_common.sh" --parts
mkdir -p "$OUT"
use_cuda_libs
use_repo_rules
export KSELECT_CACHE_DIR=/tmp/kselect-cache
# The test binary was built with /work/main as its source root (fixtures, rules).
link_source_root
record_gpu "$OUT/gpu.txt"
start=$(date +%s)
timeout 420 "$BIN/kselect_tests" --gtest_filter="${GPU_TEST_FILTER:-*}" > "$OUT/tests.log" 2>&1
echo "kselect_tests rc=$? in $(( $(date +%s) - start )) s"
grep -E '^consistency |tests ran|PASSED  \]|FAILED  \]' "$OUT/tests.log" | head -20
start=$(date +%s)
timeout 240 "$BIN/kselect" tile verify --rules tests > "$OUT/tile_verify.log" 2>&1
echo "tile verify rc=$? in $(( $(date +%s) - start )) s"
tail -5 "$OUT/tile_verify.log"
