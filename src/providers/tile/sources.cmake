# The tile engine (kselect's own NVRTC-compiled GEMM kernels).

# Kernel templates: CUDA sources that nvcc compiles in a test (tests/providers/tile_kernels_test)
# and the build embeds into generated/tile_kernel_sources.cpp for NVRTC.
set(KSELECT_TILE_KERNELS
    src/providers/tile/kernels/prelude.cuh
    src/providers/tile/kernels/multistage.cuh
    src/providers/tile/kernels/small_m.cuh
    src/providers/tile/kernels/warp_specialized.cuh
    src/providers/tile/kernels/decode.cuh)
set(KSELECT_TILE_KERNEL_SOURCES_CPP ${CMAKE_BINARY_DIR}/generated/tile_kernel_sources.cpp)
list(TRANSFORM KSELECT_TILE_KERNELS PREPEND ${CMAKE_SOURCE_DIR}/ OUTPUT_VARIABLE
     KSELECT_TILE_KERNEL_PATHS)
string(REPLACE ";" "," KSELECT_TILE_KERNELS_ARG "${KSELECT_TILE_KERNELS}")
add_custom_command(
  OUTPUT ${KSELECT_TILE_KERNEL_SOURCES_CPP}
  COMMAND ${CMAKE_COMMAND} -DSOURCE_ROOT=${CMAKE_SOURCE_DIR} -DKERNELS=${KSELECT_TILE_KERNELS_ARG}
          -DOUTPUT=${KSELECT_TILE_KERNEL_SOURCES_CPP}
          -P ${CMAKE_SOURCE_DIR}/src/providers/tile/embed_kernels.cmake
  DEPENDS ${KSELECT_TILE_KERNEL_PATHS} ${CMAKE_SOURCE_DIR}/src/providers/tile/embed_kernels.cmake
  COMMENT "Embedding the tile engine's kernel sources"
  VERBATIM)

set(KSELECT_TILE_SOURCES
    src/providers/tile/tile_source.cpp
    ${KSELECT_TILE_KERNEL_SOURCES_CPP}
    src/providers/tile/tile_spec.cpp
    src/providers/tile/tile_compiler.cpp
    src/providers/tile/tile_kernel.cpp
    src/providers/tile/tile_rules.cpp
    src/providers/tile/tile_provider.cpp)
