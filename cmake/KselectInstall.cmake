# Install rules: what `cmake --install` puts under a prefix, for applications that embed kselect.
#
#   include/kselect/*.h, include/kselect/providers/<name>/*.h   public headers (C++ and c_api.h)
#   lib/libkselect_base.a, lib/libkselect_runtime.a            kselect::runtime (C++, static)
#   lib/libkselect_c.so*                                        kselect::c (the C API, shared)
#   lib/libkselect_preload.so, lib/libkselect_layer.so          the preloaded layer (layer.h)
#   lib/cmake/kselect/                                          find_package(kselect CONFIG)
#   lib/pkgconfig/kselect.pc                                    the C API for pkg-config
#   bin/kselect                                                 the CLI (with KSELECT_BUILD_CLI)
#   share/kselect/models/<name>/                                shipped models, run-time files only
#   share/kselect/rules/                                        rule sets (KSELECT_RULES_DIR)
#   share/kselect/hardware/                                     device profiles (log summarize)
#
# Consumers:
#   find_package(kselect CONFIG REQUIRED)                  # both components
#   find_package(kselect CONFIG REQUIRED COMPONENTS c)     # the C library alone: needs no CUDA
#                                                          # toolkit, zlib or nlohmann-json
#   target_link_libraries(app PRIVATE kselect::runtime)    # or kselect::c
include(CMakePackageConfigHelpers)

set(KSELECT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kselect CACHE STRING
    "Where the CMake package files are installed (relative to the prefix)")
set(KSELECT_INSTALL_MODELSDIR ${CMAKE_INSTALL_DATADIR}/kselect/models)
# The shipped models are about 30 MB of run-time files (their out-of-fold predictions and HTML
# reports, which only people read, are left out).
set(KSELECT_INSTALL_MODELS "all" CACHE STRING
    "Shipped models (models/<name>) to install: all, none, or a ;-list of names")

# ------------------------------------------------------------------------------------ headers
# kernel_config.h includes each provider's config header as "providers/<name>/<name>_config.h":
# placed under include/kselect/providers/, they are found relative to kernel_config.h itself, so
# an installed tree needs no include path but <prefix>/include. tile_engine.h comes along for
# tile_checks.h.
file(GLOB KSELECT_PUBLIC_HEADERS ${PROJECT_SOURCE_DIR}/include/kselect/*.h)
install(FILES ${KSELECT_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kselect)
foreach(provider cublaslt tile cudnn ck)
  file(GLOB headers ${PROJECT_SOURCE_DIR}/src/providers/${provider}/*_config.h)
  if(provider STREQUAL "tile")
    list(APPEND headers ${PROJECT_SOURCE_DIR}/src/providers/tile/tile_engine.h)
  endif()
  install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kselect/providers/${provider})
endforeach()

# ------------------------------------------------------------------------------------ libraries
set_target_properties(kselect_base PROPERTIES EXPORT_NAME base)
set_target_properties(kselect_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS kselect_base kselect_runtime EXPORT kselect-runtime-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kselect_c EXPORT kselect-c-targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The preloaded layer: LD_PRELOAD=<prefix>/lib/libkselect_preload.so finds the implementation
# beside itself.
install(TARGETS kselect_layer kselect_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT kselect-runtime-targets NAMESPACE kselect:: DESTINATION ${KSELECT_INSTALL_CMAKEDIR})
install(EXPORT kselect-c-targets NAMESPACE kselect:: DESTINATION ${KSELECT_INSTALL_CMAKEDIR})
if(KSELECT_BUILD_CLI)
  # Installed, the CLI finds Arrow and LightGBM (.deps) and CUDA's libraries where it was linked.
  set_target_properties(kselect PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS kselect RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# ------------------------------------------------------------------------------------ data
# kselect_install_model(<name> <destination> [COMPONENT <c>]): models/<name> with its run-time
# files only (the out-of-fold predictions, HTML reports and feature importances stay behind). A
# cross-provider directory (cross_provider.json) names its models as siblings ("../<name>"):
# install those beside it too.
function(kselect_install_model name destination)
  cmake_parse_arguments(PARSE_ARGV 2 A "" "COMPONENT" "")
  set(dir ${PROJECT_SOURCE_DIR}/models/${name})
  if(NOT EXISTS ${dir}/feature_spec.json AND NOT EXISTS ${dir}/cross_provider.json)
    message(FATAL_ERROR "kselect: '${name}' is not a model directory under "
                        "${PROJECT_SOURCE_DIR}/models")
  endif()
  if(A_COMPONENT)
    set(component COMPONENT ${A_COMPONENT})
  endif()
  install(DIRECTORY ${dir} DESTINATION ${destination} ${component}
          FILES_MATCHING PATTERN "feature_spec.json" PATTERN "model_*.lgbm.gz"
                         PATTERN "candidates.json.gz" PATTERN "train_manifest.json"
                         PATTERN "cv_metrics.json" PATTERN "eval_report.md"
                         PATTERN "cross_provider.json")
endfunction()

# kselect_model_references(<name> <out>): the sibling model directories a cross-provider
# directory's cross_provider.json names (empty for a plain model).
function(kselect_model_references name out)
  set(refs "")
  set(manifest ${PROJECT_SOURCE_DIR}/models/${name}/cross_provider.json)
  if(EXISTS ${manifest})
    file(READ ${manifest} text)
    string(REGEX MATCHALL "\"\\.\\./[A-Za-z0-9_.-]+\"" quoted "${text}")
    foreach(q IN LISTS quoted)
      string(REGEX REPLACE "^\"\\.\\./(.*)\"$" "\\1" ref "${q}")
      list(APPEND refs ${ref})
    endforeach()
    list(REMOVE_DUPLICATES refs)
  endif()
  set(${out} ${refs} PARENT_SCOPE)
endfunction()

# kselect_install_models(DESTINATION <dir> [COMPONENT <c>] MODELS <name>...): each model and the
# siblings its cross_provider.json names, each once.
function(kselect_install_models)
  cmake_parse_arguments(PARSE_ARGV 0 A "" "DESTINATION;COMPONENT" "MODELS")
  set(models ${A_MODELS})
  foreach(name IN LISTS A_MODELS)
    kselect_model_references(${name} refs)
    list(APPEND models ${refs})
  endforeach()
  list(REMOVE_DUPLICATES models)
  if(A_COMPONENT)
    set(component COMPONENT ${A_COMPONENT})
  endif()
  foreach(name IN LISTS models)
    kselect_install_model(${name} ${A_DESTINATION} ${component})
  endforeach()
endfunction()

if(KSELECT_INSTALL_MODELS STREQUAL "all")
  file(GLOB model_dirs LIST_DIRECTORIES true ${PROJECT_SOURCE_DIR}/models/*)
  set(models "")
  foreach(dir IN LISTS model_dirs)
    if(EXISTS ${dir}/feature_spec.json OR EXISTS ${dir}/cross_provider.json)
      get_filename_component(name ${dir} NAME)
      list(APPEND models ${name})
    endif()
  endforeach()
elseif(KSELECT_INSTALL_MODELS STREQUAL "none")
  set(models "")
else()
  set(models ${KSELECT_INSTALL_MODELS})
endif()
kselect_install_models(DESTINATION ${KSELECT_INSTALL_MODELSDIR} MODELS ${models})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/rules/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kselect/rules)
# The device profiles (`kselect log summarize` estimates with the H200's unless --hw names
# another); installed binaries find both folders from their own (src/core/data_files.h).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/hardware/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/kselect/hardware FILES_MATCHING PATTERN "*.json")

# ------------------------------------------------------------------------------------ package
# FindCUDAToolkit looks on PATH and in CUDA_PATH; the toolkit kselect was built with is the
# consumers' fallback (a /usr/local/cuda-13.0 without nvcc on PATH, say).
get_filename_component(KSELECT_CUDA_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kselectConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/kselectConfig.cmake
                              INSTALL_DESTINATION ${KSELECT_INSTALL_CMAKEDIR}
                              PATH_VARS KSELECT_INSTALL_MODELSDIR)
# Before 1.0, a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/kselectConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/kselectConfig.cmake
              ${PROJECT_BINARY_DIR}/package/kselectConfigVersion.cmake
        DESTINATION ${KSELECT_INSTALL_CMAKEDIR})

# pkg-config: prefix relative to the .pc file, so a tree installed with --prefix elsewhere works.
file(RELATIVE_PATH KSELECT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" KSELECT_PC_TO_PREFIX "${KSELECT_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kselect.pc.in ${PROJECT_BINARY_DIR}/package/kselect.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/kselect.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
