# KselectDeps.cmake - third-party dependencies of kselect as IMPORTED targets.
#
# Include from the top-level CMakeLists.txt, after project():
#     list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_SOURCE_DIR}/cmake")
#     include(KselectDeps)
#
# Prerequisite: scripts/setup.sh (apt packages + the pinned installs under .deps/).
#
# Options / cache variables:
#   KSELECT_DEPS_DIR       prefix made by scripts/setup.sh   (default <repo>/.deps)
#   KSELECT_WITH_ARROW     ON: define kselect_dep::arrow, kselect_dep::arrow_compute, kselect_dep::parquet
#   KSELECT_WITH_LIGHTGBM  ON: define kselect_dep::lightgbm
#   KSELECT_CUDNN_FRONTEND_INCLUDE_DIR  cudnn-frontend headers (empty: looked for, see below)
#
# Targets defined:
#   kselect_dep::arrow          libarrow.so (Arrow 26.0.1 from the pyarrow wheel), headers, requires C++20
#   kselect_dep::arrow_compute  libarrow_compute.so (arrow::compute kernels; split out of libarrow since Arrow 22)
#   kselect_dep::parquet        libparquet.so, links kselect_dep::arrow
#   kselect_dep::lightgbm       lib_lightgbm.so (LightGBM 4.7.0 C API, <LightGBM/c_api.h>)
#   kselect_dep::cudnn_frontend cudnn-frontend's headers (KSELECT_CUDNN_FRONTEND_INCLUDE: the folder)
#   nlohmann_json::nlohmann_json  (Debian nlohmann-json3-dev, 3.11.2)
#   CLI11::CLI11                  (Debian libcli11-dev, 2.1.2; header-only; with KSELECT_BUILD_CLI)
#   GTest::gtest GTest::gtest_main GTest::gmock GTest::gmock_main   (with KSELECT_BUILD_TESTS)
#   benchmark::benchmark benchmark::benchmark_main                  (with KSELECT_BUILD_BENCHMARKS)
#   CUDA::cudart_static CUDA::cublasLt CUDA::nvrtc (and the rest of FindCUDAToolkit's CUDA::*)
#
# Run-time search path:
#   KSELECT_DEPS_RPATH   list of the .deps lib dirs (arrow, lightgbm).
#   Build-tree executables already get these dirs in their RUNPATH from CMake (imported libraries
#   linked by full path); for installed binaries use
#       kselect_deps_rpath(<target>)      # sets BUILD_RPATH and INSTALL_RPATH to KSELECT_DEPS_RPATH
#   or  set(CMAKE_INSTALL_RPATH "${KSELECT_DEPS_RPATH}") before creating targets.
#
# ABI: the pyarrow 26 manylinux_2_28 libraries use the new libstdc++ ABI (_GLIBCXX_USE_CXX11_ABI=1,
# g++'s default): no special flags. Arrow 26's headers need C++20 (std::span, concepts); that is
# carried by kselect_dep::arrow's INTERFACE_COMPILE_FEATURES (cxx_std_20). A .cu file including
# Arrow headers needs CUDA_STANDARD 20 as well.

include_guard(GLOBAL)

get_filename_component(_kselect_repo_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
# $KSELECT_DEPS_DIR, as scripts/setup.sh reads it, else the checkout's .deps/ (a `pip install`
# passes the environment on, so its build finds what setup.sh made there).
if(NOT "$ENV{KSELECT_DEPS_DIR}" STREQUAL "")
  set(_kselect_default_deps_dir "$ENV{KSELECT_DEPS_DIR}")
else()
  set(_kselect_default_deps_dir "${_kselect_repo_root}/.deps")
endif()
set(KSELECT_DEPS_DIR "${_kselect_default_deps_dir}" CACHE PATH
    "Prefix with kselect's pinned third-party installs (made by scripts/setup.sh)")
option(KSELECT_WITH_ARROW "Use Arrow/Parquet (from .deps/arrow)" ON)
option(KSELECT_WITH_LIGHTGBM "Use the LightGBM C API (from .deps/lightgbm)" ON)

set(_kselect_setup_hint "Run scripts/setup.sh from the repository root (it is idempotent), then re-run CMake.")

function(_kselect_deps_fail what)
  message(FATAL_ERROR
    "kselect: ${what}\n"
    "  ${_kselect_setup_hint}\n"
    "  (KSELECT_DEPS_DIR=${KSELECT_DEPS_DIR})")
endfunction()

# Warn when .deps was made from other pins than the ones in this checkout.
function(_kselect_check_stamp stamp reqfile what)
  if(EXISTS "${stamp}" AND EXISTS "${reqfile}")
    file(READ "${stamp}" _s)
    file(SHA256 "${reqfile}" _h)
    string(FIND "${_s}" "${_h}" _pos)
    if(_pos EQUAL -1)
      message(WARNING "kselect: ${what} in ${KSELECT_DEPS_DIR} is older than ${reqfile}. ${_kselect_setup_hint}")
    endif()
  endif()
endfunction()

# _kselect_import_shared(<target> <lib file> <include dir> [DEPS <targets>...])
function(_kselect_import_shared tgt lib inc)
  cmake_parse_arguments(PARSE_ARGV 3 A "" "" "DEPS")
  if(NOT EXISTS "${lib}")
    _kselect_deps_fail("missing ${lib} (needed for ${tgt}).")
  endif()
  if(NOT IS_DIRECTORY "${inc}")
    _kselect_deps_fail("missing include dir ${inc} (needed for ${tgt}).")
  endif()
  if(NOT TARGET ${tgt})
    add_library(${tgt} SHARED IMPORTED GLOBAL)
  endif()
  # IMPORTED_LOCATION is the unversioned symlink; the linker records the SONAME (e.g. libarrow.so.2600),
  # which exists in the same directory, so RUNPATH=<that dir> is all a binary needs at run time.
  set_target_properties(${tgt} PROPERTIES
    IMPORTED_LOCATION "${lib}"
    INTERFACE_INCLUDE_DIRECTORIES "${inc}")
  if(A_DEPS)
    set_property(TARGET ${tgt} APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${A_DEPS})
  endif()
endfunction()

set(KSELECT_DEPS_RPATH "")

# ------------------------------------------------------------------------------------ Arrow
if(KSELECT_WITH_ARROW)
  set(_arrow "${KSELECT_DEPS_DIR}/arrow")
  if(NOT EXISTS "${_arrow}/.kselect-stamp")
    _kselect_deps_fail("Arrow/Parquet are not set up (no ${_arrow}/.kselect-stamp).")
  endif()
  _kselect_check_stamp("${_arrow}/.kselect-stamp" "${_kselect_repo_root}/scripts/requirements.txt" "Arrow (pyarrow)")
  _kselect_import_shared(kselect_dep::arrow "${_arrow}/lib/libarrow.so" "${_arrow}/include")
  set_property(TARGET kselect_dep::arrow PROPERTY INTERFACE_COMPILE_FEATURES cxx_std_20)
  _kselect_import_shared(kselect_dep::arrow_compute "${_arrow}/lib/libarrow_compute.so" "${_arrow}/include"
                         DEPS kselect_dep::arrow)
  _kselect_import_shared(kselect_dep::parquet "${_arrow}/lib/libparquet.so" "${_arrow}/include"
                         DEPS kselect_dep::arrow)
  list(APPEND KSELECT_DEPS_RPATH "${_arrow}/lib")
  message(STATUS "kselect: Arrow/Parquet from ${_arrow}")
endif()

# ------------------------------------------------------------------------------------ LightGBM
if(KSELECT_WITH_LIGHTGBM)
  set(_lgb "${KSELECT_DEPS_DIR}/lightgbm")
  if(NOT EXISTS "${_lgb}/.kselect-stamp")
    _kselect_deps_fail("LightGBM is not set up (no ${_lgb}/.kselect-stamp).")
  endif()
  _kselect_check_stamp("${_lgb}/.kselect-stamp" "${_kselect_repo_root}/scripts/lightgbm-requirements.txt" "LightGBM")
  if(NOT EXISTS "${_lgb}/include/LightGBM/c_api.h")
    _kselect_deps_fail("missing ${_lgb}/include/LightGBM/c_api.h.")
  endif()
  _kselect_import_shared(kselect_dep::lightgbm "${_lgb}/lib/lib_lightgbm.so" "${_lgb}/include")
  set_property(TARGET kselect_dep::lightgbm PROPERTY IMPORTED_SONAME lib_lightgbm.so)
  list(APPEND KSELECT_DEPS_RPATH "${_lgb}/lib")
  message(STATUS "kselect: LightGBM from ${_lgb}")
endif()

# ------------------------------------------------------------------------------------ cudnn-frontend
# Header-only; the cuDNN provider compiles it with dynamic loading, so no binary links libcudnn.
# The headers come from the nvidia-cudnn-frontend wheel (PyPI), pinned with its sha256 in
# scripts/requirements.txt. Found, in order: KSELECT_CUDNN_FRONTEND_INCLUDE_DIR when set;
# .deps/cudnn_frontend/include (scripts/setup.sh); the build's Python, when the wheel is installed
# there (its include/ lands in site-packages); else the pinned wheel itself, from
# .deps/downloads or fetched with that Python's pip (no dependencies: the wheel's own pull in
# about 200 MB of CUTLASS DSL libraries kselect does not use), hash-checked and unpacked into the
# build tree. The last two are what `pip install .` on a fresh machine uses (cmake/KselectWheel.cmake).
set(KSELECT_CUDNN_FRONTEND_INCLUDE_DIR "" CACHE PATH
    "cudnn-frontend headers (a folder holding cudnn_frontend.h); empty: look for them")

function(_kselect_find_cudnn_frontend out)
  if(KSELECT_CUDNN_FRONTEND_INCLUDE_DIR)
    if(NOT EXISTS "${KSELECT_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
      message(FATAL_ERROR "kselect: KSELECT_CUDNN_FRONTEND_INCLUDE_DIR="
                          "${KSELECT_CUDNN_FRONTEND_INCLUDE_DIR} has no cudnn_frontend.h")
    endif()
    set(${out} "${KSELECT_CUDNN_FRONTEND_INCLUDE_DIR}" PARENT_SCOPE)
    return()
  endif()
  if(EXISTS "${KSELECT_DEPS_DIR}/cudnn_frontend/include/cudnn_frontend.h")
    set(${out} "${KSELECT_DEPS_DIR}/cudnn_frontend/include" PARENT_SCOPE)
    return()
  endif()
  # scikit-build-core sets Python_EXECUTABLE to the build environment's interpreter.
  if(Python_EXECUTABLE)
    set(python "${Python_EXECUTABLE}")
  else()
    find_program(python NAMES python3 python)
  endif()
  if(python)
    execute_process(
      COMMAND "${python}" -c "import os, sys
for p in sys.path:
    if p and os.path.isfile(os.path.join(p, 'include', 'cudnn_frontend.h')):
        print(os.path.join(p, 'include')); break"
      OUTPUT_VARIABLE found OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(found)
      set(${out} "${found}" PARENT_SCOPE)
      return()
    endif()
  endif()
  # The pinned wheel: version and sha256 from scripts/requirements.txt, the file name's tags as
  # pinned there (CPython 3.11, manylinux x86_64; only its headers are used, so any build takes it).
  file(STRINGS "${_kselect_repo_root}/scripts/requirements.txt" pin
       REGEX "^nvidia-cudnn-frontend==[0-9.]+ --hash=sha256:[0-9a-f]+")
  if(NOT pin MATCHES "==([0-9.]+) --hash=sha256:([0-9a-f]+)")
    message(FATAL_ERROR "kselect: no nvidia-cudnn-frontend pin in scripts/requirements.txt")
  endif()
  set(version "${CMAKE_MATCH_1}")
  set(sha256 "${CMAKE_MATCH_2}")
  set(wheel "nvidia_cudnn_frontend-${version}-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl")
  set(dest "${CMAKE_BINARY_DIR}/_deps/cudnn_frontend")
  if(EXISTS "${dest}/include/cudnn_frontend.h")
    set(${out} "${dest}/include" PARENT_SCOPE)
    return()
  endif()
  set(file "${KSELECT_DEPS_DIR}/downloads/${wheel}")
  if(NOT EXISTS "${file}")
    set(file "${CMAKE_BINARY_DIR}/_deps/${wheel}")
  endif()
  if(NOT EXISTS "${file}" AND python)
    message(STATUS "kselect: fetching ${wheel} (cudnn-frontend headers) with pip")
    execute_process(
      COMMAND "${python}" -m pip download --quiet --no-deps --only-binary=:all:
              --python-version 3.11 --implementation cp --abi cp311
              --platform manylinux_2_28_x86_64 -d "${CMAKE_BINARY_DIR}/_deps"
              "nvidia-cudnn-frontend==${version}"
      RESULT_VARIABLE rc)
  endif()
  if(NOT EXISTS "${file}")
    _kselect_deps_fail("the cudnn-frontend headers are not set up: no ${KSELECT_DEPS_DIR}/\
cudnn_frontend/include, no nvidia-cudnn-frontend in the environment of ${python}, and ${wheel} \
could not be fetched (pip download --no-deps nvidia-cudnn-frontend==${version} -d \
${KSELECT_DEPS_DIR}/downloads, or set KSELECT_CUDNN_FRONTEND_INCLUDE_DIR).")
  endif()
  file(SHA256 "${file}" actual)
  if(NOT actual STREQUAL sha256)
    message(FATAL_ERROR "kselect: ${file} has sha256 ${actual}, not the ${sha256} pinned in "
                        "scripts/requirements.txt; refusing to use it")
  endif()
  file(ARCHIVE_EXTRACT INPUT "${file}" DESTINATION "${dest}" PATTERNS "include/*")
  if(NOT EXISTS "${dest}/include/cudnn_frontend.h")
    message(FATAL_ERROR "kselect: ${file} has no include/cudnn_frontend.h")
  endif()
  set(${out} "${dest}/include" PARENT_SCOPE)
endfunction()

# KSELECT_CUDNN_FRONTEND_INCLUDE: the folder found (src/providers/cudnn/sources.cmake reads it).
_kselect_find_cudnn_frontend(KSELECT_CUDNN_FRONTEND_INCLUDE)
if(NOT TARGET kselect_dep::cudnn_frontend)
  add_library(kselect_dep::cudnn_frontend INTERFACE IMPORTED GLOBAL)
  set_target_properties(kselect_dep::cudnn_frontend PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${KSELECT_CUDNN_FRONTEND_INCLUDE}"
    INTERFACE_COMPILE_DEFINITIONS "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING")
endif()
message(STATUS "kselect: cudnn-frontend from ${KSELECT_CUDNN_FRONTEND_INCLUDE}")

function(kselect_deps_rpath tgt)
  set_property(TARGET ${tgt} APPEND PROPERTY BUILD_RPATH ${KSELECT_DEPS_RPATH})
  set_property(TARGET ${tgt} APPEND PROPERTY INSTALL_RPATH ${KSELECT_DEPS_RPATH})
endfunction()

# ------------------------------------------------------------------------------------ system packages
find_package(nlohmann_json 3.11 CONFIG QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  _kselect_deps_fail("nlohmann_json (>= 3.11) not found (apt package nlohmann-json3-dev).")
endif()

# CLI11, GoogleTest and Google Benchmark only where the CLI, the tests and the benchmarks are
# built: a runtime-only build (pip install .) needs none of them.
if(KSELECT_BUILD_CLI)
find_package(CLI11 CONFIG QUIET)           # Debian libcli11-dev: /usr/share/cmake/CLI11, target CLI11::CLI11
endif()
if(KSELECT_BUILD_CLI AND NOT TARGET CLI11::CLI11)
  find_path(KSELECT_CLI11_INCLUDE_DIR CLI/CLI.hpp)
  if(NOT KSELECT_CLI11_INCLUDE_DIR)
    _kselect_deps_fail("CLI11 not found (apt package libcli11-dev).")
  endif()
  add_library(CLI11::CLI11 INTERFACE IMPORTED GLOBAL)
  set_target_properties(CLI11::CLI11 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${KSELECT_CLI11_INCLUDE_DIR}")
endif()

if(KSELECT_BUILD_TESTS)
  find_package(GTest QUIET)
endif()
if(KSELECT_BUILD_TESTS AND (NOT TARGET GTest::gtest OR NOT TARGET GTest::gmock))
  _kselect_deps_fail("GoogleTest/GoogleMock not found (apt packages googletest libgtest-dev libgmock-dev).")
endif()

if(KSELECT_BUILD_BENCHMARKS)
  find_package(benchmark QUIET)
endif()
if(KSELECT_BUILD_BENCHMARKS AND NOT TARGET benchmark::benchmark)
  _kselect_deps_fail("Google benchmark not found (apt package libbenchmark-dev).")
endif()

# CUDA: nvcc on PATH, CUDAToolkit_ROOT / CUDA_PATH, or the usual /usr/local/cuda.
if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDA_PATH} AND NOT CMAKE_CUDA_COMPILER
   AND EXISTS "/usr/local/cuda/bin/nvcc")
  find_program(_kselect_nvcc_on_path nvcc)
  if(NOT _kselect_nvcc_on_path)
    set(CUDAToolkit_ROOT "/usr/local/cuda")
  endif()
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "kselect: CUDA toolkit not found. Install CUDA 13.x (nvcc, cudart, cublasLt, nvrtc) "
                      "or pass -DCUDAToolkit_ROOT=/path/to/cuda.")
endif()
foreach(_t CUDA::cudart_static CUDA::cublasLt CUDA::nvrtc)
  if(NOT TARGET ${_t})
    message(FATAL_ERROR "kselect: CUDA toolkit at ${CUDAToolkit_LIBRARY_ROOT} lacks ${_t}.")
  endif()
endforeach()
message(STATUS "kselect: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}")
