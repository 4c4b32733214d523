#!/bin/bash
# Builds the GPU-side binaries for scripts/device/selector_check.sh here (no Arrow, no LightGBM)
# and copies them into CARRY (default /work/main/.devcarry-sel, ignored through
# .git/info/exclude): kselect, kselect_tests, kselect_bench_select_live, libkselect_c.so, the
# preloaded layer (libkselect_preload.so, libkselect_layer.so, its C test program and benchmark) and the
# install tree the example builds against, with libbenchmark (the device has none).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY=${1:-$ROOT/.devcarry-sel}
cmake -S "$ROOT" -B "$ROOT/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSELECT_WITH_ARROW=OFF \
  -DKSELECT_WITH_LIGHTGBM=OFF -DKSELECT_BUILD_BENCHMARKS=ON -DKSELECT_INSTALL_MODELS=none >/dev/null
cmake --build "$ROOT/build-gpu" -j2 --target kselect kselect_tests kselect_bench_select_live kselect_c \
  kselect_layer kselect_preload kselect_preload_app kselect_bench_layer
rm -rf "$CARRY"
mkdir -p "$CARRY/lib"
cp "$ROOT/build-gpu/bin/kselect" "$ROOT/build-gpu/tests/kselect_tests" \
  "$ROOT/build-gpu/bin/kselect_bench_select_live" "$ROOT/build-gpu/bin/kselect_bench_layer" \
  "$ROOT/build-gpu/tests/kselect_preload_app" "$CARRY/"
# The preloaded layer: the shim and the implementation it loads from its own folder.
cp "$ROOT/build-gpu/lib/libkselect_preload.so" "$ROOT/build-gpu/lib/libkselect_layer.so" "$CARRY/lib/"
cp -L "$ROOT"/build-gpu/lib/libkselect_c.so* "$CARRY/lib/" 2>/dev/null ||
  cp -L "$(find "$ROOT/build-gpu" -name 'libkselect_c.so' | head -1)" "$CARRY/lib/"
cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian "$CARRY/lib/"
# One copy of the C library (ctypes and the tests load it by path); the CLI is carried already.
rm -f "$CARRY"/lib/libkselect_c.so.*
cmake --install "$ROOT/build-gpu" --prefix "$CARRY/install" >/dev/null
rm -f "$CARRY/install/bin/kselect"
strip --strip-unneeded "$CARRY"/kselect* "$CARRY"/lib/*.so* 2>/dev/null || true
du -sh "$CARRY"
