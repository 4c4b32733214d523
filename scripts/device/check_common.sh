# Sourced (not run) by the device check scripts (tile_check.sh, tune_check.sh, search_check.sh),
# from the repository root on the GPU machine, after BIN (the carried GPU-side binaries) and OUT
# are set: the library path and rule folder the binaries need, the /work/main link the tests find
# their fixtures and models through, the GPU recorded in $OUT/gpu.txt, and the summary helpers.
# shellcheck shell=bash
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$BIN/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# cuDNN 9 (dlopen'ed by the cuDNN provider) and the shared CUDA runtime cudnn-frontend loads: from
# the Python wheels (nvidia-cudnn-cu13, nvidia-cuda-runtime) when the toolkit has none.
for pkg in cudnn cuda_runtime; do
  d=$(python3 -c "import importlib, os; m = importlib.import_module('nvidia.$pkg'); print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null) &&
    [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
export KSELECT_RULES_DIR="$PWD/rules"
export KSELECT_CACHE_DIR="${KSELECT_CACHE_DIR:-/tmp/kselect-cache}"
# The tests find fixtures and shipped models by the source path they were built in.
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv | tee "$OUT/gpu.txt"
summary=()
t0=$(date +%s)
lap() { echo "$(( $(date +%s) - t0 )) s"; }

# gpu_tests SECONDS FILTER: kselect_tests on the gtest filter into $OUT/tests.log, one summary line.
gpu_tests() {
  timeout "$1" "$BIN/kselect_tests" --gtest_filter="$2" > "$OUT/tests.log" 2>&1
  summary+=("kselect_tests rc=$? $(grep -E 'tests? from [0-9]+ test suites? ran' "$OUT/tests.log" | tail -1) $(grep -cE '^\[  FAILED  \] [A-Z]' "$OUT/tests.log") failed, $(grep -cE '^\[  SKIPPED \] [A-Z]' "$OUT/tests.log") skipped, $(lap)")
}

# Packs $OUT into $OUT/logs.tar.gz.
pack_logs() {
  (cd "$OUT" && tar czf logs.tar.gz --exclude=logs.tar.gz .)
}
