# Sourced (not run) by the device scripts, from the repository root on the GPU machine, after BIN
# (the carried GPU-side binaries) and OUT are set. It holds the set-up the scripts share, each step
# a function defined once below.
#
#   source scripts/device/check_common.sh          the standard set-up (what tile_check.sh,
#       tune_check.sh, search_check.sh and the other checks written since use): $OUT made, the
#       library path (the carried lib/, CUDA, cuDNN from the Python wheels), the rule folder, the
#       decision cache, the /work/main link the tests find their fixtures and models through, the
#       GPU recorded in $OUT/gpu.txt, and an empty summary with its clock started.
#   source scripts/device/check_common.sh --parts  the functions alone, for scripts whose set-up
#       is a different subset (selector_check.sh, architecture_check.sh, ...): they call the steps
#       they need, in their order, so their behaviour stays what it was.
# shellcheck shell=bash

# use_cuda_libs: CUDA's lib64 first on LD_LIBRARY_PATH.
use_cuda_libs() {
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
}

# use_carried_libs: the carried build's lib/ ($PWD/$BIN/lib: libkselect_c.so, libbenchmark) first
# on LD_LIBRARY_PATH.
use_carried_libs() {
  export LD_LIBRARY_PATH="$PWD/$BIN/lib:${LD_LIBRARY_PATH:-}"
}

# use_wheel_cudnn: cuDNN 9 (dlopen'ed by the cuDNN provider) and the shared CUDA runtime
# cudnn-frontend loads, from the Python wheels (nvidia-cudnn-cu13, nvidia-cuda-runtime) when the
# toolkit has none: appended to LD_LIBRARY_PATH.
use_wheel_cudnn() {
  local pkg d
  for pkg in cudnn cuda_runtime; do
    d=$(python3 -c "import importlib, os; m = importlib.import_module('nvidia.$pkg'); print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null) &&
      [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
  done
}

# use_repo_rules: the binaries read rule sets from this checkout's rules/.
use_repo_rules() {
  export KSELECT_RULES_DIR="$PWD/rules"
}

# link_source_root: the tests find fixtures and shipped models by the source path they were built
# in (/work/main); on the GPU machine that path is made a link to this checkout.
link_source_root() {
  [ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
}

# record_gpu FILE [FIELD,...]: the GPU's name, driver, SM clock (now and max) and temperature, and
# any further nvidia-smi query fields, as CSV on stdout and into FILE.
record_gpu() {
  nvidia-smi --query-gpu="name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu${2:+,$2}" \
    --format=csv | tee "$1"
}

# start_summary: an empty summary (one line per step, printed last) and the clock lap reads.
start_summary() {
  summary=()
  t0=$(date +%s)
}

# lap: seconds since start_summary, as "N s".
lap() { echo "$(( $(date +%s) - t0 )) s"; }

# gpu_tests SECONDS FILTER: kselect_tests on the gtest filter into $OUT/tests.log, one summary line.
gpu_tests() {
  timeout "$1" "$BIN/kselect_tests" --gtest_filter="$2" > "$OUT/tests.log" 2>&1
  summary+=("kselect_tests rc=$? $(grep -E 'tests? from [0-9]+ test suites? ran' "$OUT/tests.log" | tail -1) $(grep -cE '^\[  FAILED  \] [A-Z]' "$OUT/tests.log") failed, $(grep -cE '^\[  SKIPPED \] [A-Z]' "$OUT/tests.log") skipped, $(lap)")
}

# print_summary: the summary lines on stdout.
print_summary() { printf '%s\n' "${summary[@]}"; }

# print_summary_to FILE: the summary lines on stdout and into FILE.
print_summary_to() { printf '%s\n' "${summary[@]}" | tee "$1"; }

# Packs $OUT into $OUT/logs.tar.gz.
pack_logs() {
  (cd "$OUT" && tar czf logs.tar.gz --exclude=logs.tar.gz .)
}

# pack_folder NAME [ARCHIVE]: $OUT/NAME into $OUT/ARCHIVE (default NAME.tar.gz), then removed.
pack_folder() {
  (cd "$OUT" && tar czf "${2:-$1.tar.gz}" "$1" && rm -rf "$1")
}

if [ "${1-}" != --parts ]; then
  mkdir -p "$OUT"
  use_cuda_libs
  use_carried_libs
  use_wheel_cudnn
  use_repo_rules
  export KSELECT_CACHE_DIR="${KSELECT_CACHE_DIR:-/tmp/kselect-cache}"
  link_source_root
  record_gpu "$OUT/gpu.txt"
  start_summary
fi
