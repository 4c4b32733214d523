#!/usr/bin/env bash
# kselect's single test command (README and .ci/run call this).
#   scripts/test.sh            set-up (idempotent, builds), then every CTest test, then
#                              `pip install` of the checkout in a clean venv (scripts/check_pip_install.sh;
#                              about 7.5 min on 2 cores, 15 s with a warm ccache; KSELECT_SKIP_PIP_CHECK=1 skips it)
# Exits non-zero on any failure. Extra arguments are passed to ctest (e.g. -R parquet, -L unit).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR
die() { echo "test.sh: ERROR: $*" >&2; exit 1; }

[ "${SETUP_SKIP_BUILD:-0}" = 1 ] && die "SETUP_SKIP_BUILD=1 is set, but the tests need a build; unset it"
"$ROOT/scripts/setup.sh" || die "scripts/setup.sh failed (see above)"

[ -f "$ROOT/CMakeLists.txt" ] || die "no top-level CMakeLists.txt: nothing to build or test yet"
[ -f "$BUILD_DIR/CTestTestfile.cmake" ] || die "$BUILD_DIR has no CTest tests (does CMakeLists.txt call enable_testing()?)"

echo
echo "=== [ctest] $BUILD_DIR"
# --no-tests=error: a test command that 'passes' with zero tests is a bug.
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j2 "$@" || die "ctest reported failures (see above)"

# `pip install` of the checkout into a clean venv, checked from outside it (the wheel's library,
# models and CLI; nothing written into the checkout).
if [ "${KSELECT_SKIP_PIP_CHECK:-0}" != 1 ]; then
  echo
  echo "=== [pip] scripts/check_pip_install.sh"
  "$ROOT/scripts/check_pip_install.sh" || die "the pip install check failed (see above)"
fi

# Every parser's libFuzzer target, briefly (KSELECT_FUZZ_SECONDS per target; 0 skips). Longer
# runs on demand: scripts/fuzz.sh 600
FUZZ_SECONDS="${KSELECT_FUZZ_SECONDS:-10}"
if [ "$FUZZ_SECONDS" != 0 ]; then
  echo
  echo "=== [fuzz] ${FUZZ_SECONDS}s per parser"
  "$ROOT/scripts/fuzz.sh" "$FUZZ_SECONDS" || die "fuzzing found a crash (see above)"
fi

echo "test.sh: all tests passed"
