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
#
# Targets defined:
#   kselect_dep::arrow          libarrow.so (Arrow 26.0.1 from the pyarrow wheel), headers, requires C++20
#   kselect_dep::arrow_compute  libarrow_compute.so (arrow::compute kernels; split out of libarrow since Arrow 22)
#   kselect_dep::parquet        libparquet.so, links kselect_dep::arrow
#   kselect_dep::lightgbm       lib_lightgbm.so (LightGBM 4.7.0 C API, <LightGBM/c_api.h>)
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
set(KSELECT_DEPS_DIR "${_kselect_repo_root}/.deps" CACHE PATH
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
set(_cfe "${KSELECT_DEPS_DIR}/cudnn_frontend")
if(NOT EXISTS "${_cfe}/include/cudnn_frontend.h")
  _kselect_deps_fail("the cudnn-frontend headers are not set up (no ${_cfe}/include/cudnn_frontend.h).")
endif()
if(NOT TARGET kselect_dep::cudnn_frontend)
  add_library(kselect_dep::cudnn_frontend INTERFACE IMPORTED GLOBAL)
  set_target_properties(kselect_dep::cudnn_frontend PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_cfe}/include"
    INTERFACE_COMPILE_DEFINITIONS "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING")
endif()
message(STATUS "kselect: cudnn-frontend from ${_cfe}")

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
