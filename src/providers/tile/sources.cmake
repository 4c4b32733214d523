# The tile engine (kselect's own NVRTC-compiled GEMM kernels).
set(KSELECT_TILE_SOURCES
    src/providers/tile/tile_source.cpp
    src/providers/tile/tile_spec.cpp
    src/providers/tile/tile_compiler.cpp
    src/providers/tile/tile_kernel.cpp
    src/providers/tile/tile_rules.cpp
    src/providers/tile/tile_provider.cpp)
