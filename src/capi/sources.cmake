# libkselect_c.so: the C API over kselect_runtime. Only the archive members the API reaches are
# linked in, and the version script keeps every symbol but kselect_* local, so an application's own copies of libstdc++ templates, nlohmann-json or
# cudart_static never clash with ours.
add_library(kselect_c SHARED ${CMAKE_CURRENT_LIST_DIR}/c_api.cpp)
target_include_directories(kselect_c PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                            $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(kselect_c PRIVATE kselect_runtime)
target_compile_options(kselect_c PRIVATE ${KSELECT_WARNING_FLAGS})
target_link_options(kselect_c PRIVATE "LINKER:--version-script=${CMAKE_CURRENT_LIST_DIR}/kselect_c.map"
                    "LINKER:--exclude-libs,ALL" "LINKER:--no-undefined" "LINKER:--as-needed")
# Before 1.0 a minor version may change the ABI: the soname carries both (libkselect_c.so.0.1).
set_target_properties(kselect_c PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kselect_c.map
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
    EXPORT_NAME c
    # It finds cuBLASLt and NVRTC where it was linked against them, built or installed alike:
    # the Python module packages the build tree's file, so no install step rewrites its RPATH
    # (nor strips the empty, current-directory entry CMake pads a build RPATH with).
    INSTALL_RPATH_USE_LINK_PATH ON
    BUILD_WITH_INSTALL_RPATH ON)
