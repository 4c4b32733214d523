# libkselect_torch.so: kselect's operators for PyTorch (src/pytorch/torch_ops.cpp), built when a
# Python with torch is found (KSELECT_WITH_TORCH=AUTO, the default) or required (ON).
#
# It is compiled against the headers of the torch it will run in and links its libraries by
# name (no find_package(Torch), which drags in a CUDA-toolkit check of its own): torch's C++ ABI
# changes between releases, so the library must be rebuilt for another torch version.
# KSELECT_TORCH_PYTHON names the interpreter to ask (default: .deps/torch-venv's, else python3).
set(KSELECT_WITH_TORCH "AUTO" CACHE STRING "Build libkselect_torch.so: AUTO, ON or OFF")
set_property(CACHE KSELECT_WITH_TORCH PROPERTY STRINGS AUTO ON OFF)

if(NOT KSELECT_WITH_TORCH STREQUAL "OFF")
  if(NOT KSELECT_TORCH_PYTHON)
    if(DEFINED SKBUILD AND DEFINED Python_EXECUTABLE)
      # pip install: the torch of the environment installing (with --no-build-isolation; an
      # isolated build environment has none, and the wheel then holds no operators).
      set(KSELECT_TORCH_PYTHON ${Python_EXECUTABLE})
    elseif(EXISTS ${KSELECT_DEPS_DIR}/torch-venv/bin/python)
      set(KSELECT_TORCH_PYTHON ${KSELECT_DEPS_DIR}/torch-venv/bin/python)
    elseif(DEFINED Python_EXECUTABLE)
      set(KSELECT_TORCH_PYTHON ${Python_EXECUTABLE})
    else()
      set(KSELECT_TORCH_PYTHON python3)
    endif()
  endif()
  # Where torch is installed, without importing it (an import takes seconds).
  execute_process(
    COMMAND ${KSELECT_TORCH_PYTHON} -c
            "import importlib.util as u; s = u.find_spec('torch'); print(s.submodule_search_locations[0] if s else '')"
    OUTPUT_VARIABLE KSELECT_TORCH_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(KSELECT_TORCH_ROOT AND EXISTS ${KSELECT_TORCH_ROOT}/include/torch/library.h)
    message(STATUS "kselect: PyTorch operators against ${KSELECT_TORCH_ROOT}")
    set(KSELECT_TORCH_LIBS)
    foreach(lib torch torch_cpu torch_cuda c10 c10_cuda)
      find_library(KSELECT_TORCH_LIB_${lib} NAMES ${lib} PATHS ${KSELECT_TORCH_ROOT}/lib
                   NO_DEFAULT_PATH REQUIRED)
      list(APPEND KSELECT_TORCH_LIBS ${KSELECT_TORCH_LIB_${lib}})
    endforeach()
    add_library(kselect_torch SHARED ${CMAKE_CURRENT_LIST_DIR}/kernel_router.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/torch_ops.cpp)
    target_include_directories(kselect_torch SYSTEM PRIVATE
                               ${KSELECT_TORCH_ROOT}/include
                               ${KSELECT_TORCH_ROOT}/include/torch/csrc/api/include)
    target_include_directories(kselect_torch PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(kselect_torch PRIVATE kselect_runtime ${KSELECT_TORCH_LIBS})
    # torch's wheels are built with the C++11 ABI, as kselect is.
    target_compile_definitions(kselect_torch PRIVATE _GLIBCXX_USE_CXX11_ABI=1)
    target_compile_options(kselect_torch PRIVATE ${KSELECT_WARNING_FLAGS})
    # The operators register themselves when torch loads the file; nothing else is exported, and
    # the runtime's own symbols (nlohmann-json, cudart_static) stay local.
    target_link_options(kselect_torch PRIVATE
                        "LINKER:--version-script=${CMAKE_CURRENT_LIST_DIR}/kselect_torch.map"
                        "LINKER:--exclude-libs,ALL" "LINKER:--as-needed")
    set_target_properties(kselect_torch PROPERTIES
        CXX_VISIBILITY_PRESET hidden
        VISIBILITY_INLINES_HIDDEN ON
        LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kselect_torch.map
        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
        # torch's libraries are found where the process already loaded them (import torch).
        SKIP_BUILD_RPATH ON)
  elseif(KSELECT_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "KSELECT_WITH_TORCH=ON but ${KSELECT_TORCH_PYTHON} has no torch with "
                        "C++ headers (set KSELECT_TORCH_PYTHON to an interpreter that has)")
  else()
    message(STATUS "kselect: no torch found by ${KSELECT_TORCH_PYTHON}: libkselect_torch.so "
                   "is not built")
  endif()
endif()
