# The preloaded cuBLASLt layer (include/kselect/layer.h).
#
# kselect_layer_core: the layer's logic over the runtime (reading calls, deciding, statistics), a
# static library the tests link. libkselect_layer.so: it, with only the entry points the shim
# looks up exported (the runtime's own symbols stay local, as in libkselect_c.so).
# libkselect_preload.so: the shim an application preloads, C library only.
add_library(kselect_layer_core STATIC ${CMAKE_CURRENT_LIST_DIR}/lt_call.cpp
                                      ${CMAKE_CURRENT_LIST_DIR}/layer_timing.cpp
                                      ${CMAKE_CURRENT_LIST_DIR}/blas_call.cpp
                                      ${CMAKE_CURRENT_LIST_DIR}/layer.cpp)
target_include_directories(kselect_layer_core PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(kselect_layer_core PUBLIC kselect_runtime)
target_compile_options(kselect_layer_core PRIVATE ${KSELECT_WARNING_FLAGS})
set_target_properties(kselect_layer_core PROPERTIES POSITION_INDEPENDENT_CODE ON)

add_library(kselect_layer SHARED ${CMAKE_CURRENT_LIST_DIR}/layer_entry.cpp)
target_link_libraries(kselect_layer PRIVATE kselect_layer_core)
target_compile_options(kselect_layer PRIVATE ${KSELECT_WARNING_FLAGS})
target_link_options(kselect_layer PRIVATE
                    "LINKER:--version-script=${CMAKE_CURRENT_LIST_DIR}/kselect_layer.map"
                    "LINKER:--exclude-libs,ALL" "LINKER:--no-undefined" "LINKER:--as-needed")
set_target_properties(kselect_layer PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kselect_layer.map
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
    INSTALL_RPATH_USE_LINK_PATH ON
    BUILD_WITH_INSTALL_RPATH ON)

find_package(Threads REQUIRED)
add_library(kselect_preload SHARED ${CMAKE_CURRENT_LIST_DIR}/preload_shim.cpp)
target_link_libraries(kselect_preload PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
# The CUDA headers for the real functions' types; no CUDA library is linked.
target_include_directories(kselect_preload PRIVATE ${PROJECT_SOURCE_DIR}/src
                                                   ${CUDAToolkit_INCLUDE_DIRS})
target_compile_options(kselect_preload PRIVATE ${KSELECT_WARNING_FLAGS} -fno-exceptions)
target_link_options(kselect_preload PRIVATE "LINKER:--no-undefined" "LINKER:--as-needed")
set_target_properties(kselect_preload PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
