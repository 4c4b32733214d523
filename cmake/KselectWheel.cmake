# KselectWheel.cmake - what `pip install .` puts in the wheel (scikit-build-core, pyproject.toml).
#
# Included at the end of CMakeLists.txt, after every target is defined; active only under
# scikit-build-core (SKBUILD). Everything lands inside the Python package kselect/ (the wheel's
# platlib), in the install component `wheel`, the only one pyproject.toml installs (the headers,
# static archives and CMake package of cmake/KselectInstall.cmake stay out):
#
#   kselect/libkselect_c.so                     the C API, which the module loads with ctypes
#   kselect/libkselect_preload.so, libkselect_layer.so   the preloaded cuBLASLt layer (layer.h)
#   kselect/libkselect_torch.so                 PyTorch operators, when the target exists
#   kselect/bin/kselect                         the CLI (with KSELECT_BUILD_CLI; `kselect` on PATH
#                                               is the console script kselect._cli:main)
#   kselect/share/kselect/{models,rules,hardware}   run-time models, rule sets, device profiles
#
# pyproject.toml sets CMAKE_INSTALL_LIBDIR=kselect, CMAKE_INSTALL_BINDIR=kselect/bin and
# CMAKE_INSTALL_DATADIR=kselect/share, so the compiled-in data lookup (src/core/data_files.cpp:
# from the binary's folder to share/kselect) finds the wheel's data from the CLI and the library.
if(NOT DEFINED SKBUILD)
  return()
endif()

set(KSELECT_WHEEL_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR})
if(NOT KSELECT_WHEEL_PACKAGE_DIR STREQUAL "kselect")
  message(FATAL_ERROR "kselect: the wheel build needs CMAKE_INSTALL_LIBDIR=kselect (the Python "
                      "package; see pyproject.toml), not '${CMAKE_INSTALL_LIBDIR}'")
endif()
set(KSELECT_WHEEL_DATA_DIR ${CMAKE_INSTALL_DATADIR}/kselect)

# The models the wheel ships (about 28 MB of run-time files), with the siblings the cross-provider
# ones name (kselect_model_references): GEMM on the H200 (the cross-provider decision, the
# cuBLASLt rankers, the GPU-less fallback) and the H100, convolution on the H200.
# kselect.default_model() (python/kselect/_models.py) names some of them: keep both in step.
set(KSELECT_WHEEL_MODELS
    "h200_cross_bf16_tn_rank;h200_cross_bf16_tn;h200_cublaslt_default_rank;h200_cublaslt_default;h200_cublaslt_bf16_tn_rank;h100_cublaslt_default_rank;h200_cudnn_conv_fwd;h200_cudnn_conv_bwd_data;h200_cudnn_conv_bwd_weight"
    CACHE STRING "Shipped models (models/<name>) the wheel holds (with the models they reference)")

# ------------------------------------------------------------------------------------ libraries
# The module loads libkselect_c.so by path (python/kselect/_capi.py): the real file under the
# unversioned name, one copy (a wheel holds no symlinks). Its RPATH (the CUDA libraries where it
# was linked) is already the install one (src/capi/sources.cmake).
install(FILES $<TARGET_FILE:kselect_c> DESTINATION ${KSELECT_WHEEL_PACKAGE_DIR}
        RENAME libkselect_c.so COMPONENT wheel)
# `cmake --install --strip` (pyproject.toml's install.strip) strips install(TARGETS) only.
if(CMAKE_STRIP)
  install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded
                  \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${KSELECT_WHEEL_PACKAGE_DIR}/libkselect_c.so\")
endif()" COMPONENT wheel)
endif()
# LD_PRELOAD=<kselect>/libkselect_preload.so finds libkselect_layer.so beside itself.
install(TARGETS kselect_layer kselect_preload LIBRARY DESTINATION ${KSELECT_WHEEL_PACKAGE_DIR}
        COMPONENT wheel)
# The PyTorch operators (KSELECT_WITH_TORCH), when that target is part of this build. Beside
# libkselect_c.so, which is here under its unversioned name only (no libkselect_c.so.0.1): link
# kselect_runtime (static) into it, or load libkselect_c.so by path, rather than a DT_NEEDED on
# kselect_c's soname.
if(TARGET kselect_torch)
  install(TARGETS kselect_torch LIBRARY DESTINATION ${KSELECT_WHEEL_PACKAGE_DIR} COMPONENT wheel)
endif()
if(TARGET kselect)
  # INSTALL_RPATH_USE_LINK_PATH (cmake/KselectInstall.cmake): the CUDA libraries where it was
  # linked; a wheel build has no Arrow or LightGBM (pyproject.toml), so no .deps path either.
  install(TARGETS kselect RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT wheel)
endif()

# ------------------------------------------------------------------------------------ data
kselect_install_models(DESTINATION ${KSELECT_WHEEL_DATA_DIR}/models COMPONENT wheel
                       MODELS ${KSELECT_WHEEL_MODELS})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/rules/ DESTINATION ${KSELECT_WHEEL_DATA_DIR}/rules
        COMPONENT wheel)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/hardware/ DESTINATION ${KSELECT_WHEEL_DATA_DIR}/hardware
        COMPONENT wheel FILES_MATCHING PATTERN "*.json")
