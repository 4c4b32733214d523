#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/CMakeLists.txt) with clang, ASan and UBSan, and runs each for
# N seconds (default 20) from seed corpora made of the test fixtures. Exits non-zero if any target
# crashes, leaks, hangs or trips a sanitizer; the reproducer is left in build-fuzz/artifacts/.
#   scripts/fuzz.sh [seconds_per_target]
# Needs clang++ and libclang-rt-14-dev (libFuzzer's runtime); scripts/setup.sh installs both.
set -euo pipefail

seconds="${1:-20}"
if ! [[ "${seconds}" =~ ^[0-9]+$ ]] || [ "${seconds}" -lt 1 ]; then
  echo "usage: $0 [seconds_per_target]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${root}/build-fuzz"
jobs="${KSELECT_FUZZ_BUILD_JOBS:-2}"

cmake -S "${root}/fuzz" -B "${build}" -G Ninja -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" >/dev/null
cmake --build "${build}" -j "${jobs}"

fixtures="${root}/tests/fixtures"
seeds="${root}/fuzz/seeds"
# Seed directories per target; missing ones are skipped. libFuzzer reads them recursively.
declare -A target_seeds=(
  [fuzz_ck_tile_log]="${fixtures}/ck ${seeds}/json_regressions"
  [fuzz_ck_tile_json]="${fixtures}/ck ${seeds}/json_regressions"
  [fuzz_ck_conv_csv]="${fixtures}/ck ${seeds}/ck_conv_csv"
  [fuzz_ck_kernel_name]="${seeds}/ck_kernel_name"
  [fuzz_kselect_jsonl]="${fixtures}/kselect ${seeds}/json_regressions"
  [fuzz_hardware_json]="${seeds}/hardware_json ${fixtures}/hardware ${seeds}/json_regressions"
  [fuzz_tree_ensemble]="${seeds}/tree_ensemble ${fixtures}/ck_model"
  [fuzz_model_specs]="${seeds}/model_specs ${seeds}/json_regressions"
  [fuzz_gemm_log]="${seeds}/gemm_log ${fixtures}/gemm_logs"
  [fuzz_candidate_table]="${seeds}/candidate_table ${seeds}/json_regressions"
  [fuzz_decision_cache]="${seeds}/decision_cache ${seeds}/json_regressions"
  [fuzz_solution_library]="${fixtures}/solutions ${seeds}/json_regressions"
)
targets=(fuzz_ck_tile_log fuzz_ck_tile_json fuzz_ck_conv_csv fuzz_ck_kernel_name
         fuzz_kselect_jsonl fuzz_hardware_json fuzz_tree_ensemble fuzz_model_specs fuzz_gemm_log
         fuzz_candidate_table fuzz_decision_cache fuzz_solution_library)

mkdir -p "${build}/artifacts"
failed=()
for target in "${targets[@]}"; do
  corpus="${build}/corpus/${target}"  # first directory: where libFuzzer adds new inputs
  mkdir -p "${corpus}"
  dirs=("${corpus}")
  for dir in ${target_seeds[${target}]}; do
    [ -d "${dir}" ] && dirs+=("${dir}")
  done
  echo "== ${target}: ${seconds}s"
  # -rss_limit_mb and -timeout turn runaway memory and hangs into failures, too.
  if ! "${build}/${target}" -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="${build}/artifacts/${target}-" "${dirs[@]}" \
      >"${build}/${target}.log" 2>&1; then
    echo "   FAILED: see ${build}/${target}.log and ${build}/artifacts/" >&2
    tail -n 30 "${build}/${target}.log" >&2
    failed+=("${target}")
  else
    grep -E '^stat::number_of_executed_units' "${build}/${target}.log" | sed 's/^/   /' || true
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing found crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "all ${#targets[@]} fuzz targets ran ${seconds}s without a crash"
