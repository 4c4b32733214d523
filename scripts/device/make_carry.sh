#!/bin/bash
# Builds the GPU-side binaries here (no Arrow, no LightGBM) and copies what a device call needs
# into CARRY (default /work/main/.devcarry-cublaslt, which /work/main/.git/info/exclude must
# ignore). Usage: scripts/device/make_carry.sh [CARRY] [previous wide_default.jsonl to resume]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY=${1:-/work/main/.devcarry-cublaslt}
cmake -S "$ROOT" -B "$ROOT/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSELECT_WITH_ARROW=OFF \
  -DKSELECT_WITH_LIGHTGBM=OFF -DKSELECT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$ROOT/build-gpu" -j2 --target kselect kselect_tests
rm -rf "$CARRY"
mkdir -p "$CARRY/tests" "$CARRY/scripts" "$CARRY/data_in"
cp "$ROOT/build-gpu/bin/kselect" "$ROOT/build-gpu/tests/kselect_tests" "$CARRY/"
cp -r "$ROOT/rules" "$ROOT/shapes" "$CARRY/"
cp -r "$ROOT/tests/fixtures" "$CARRY/tests/"
cp -r "$ROOT/scripts/device" "$CARRY/scripts/"
[ $# -ge 2 ] && cp "$2" "$CARRY/data_in/wide_default.jsonl"
du -sh "$CARRY"
