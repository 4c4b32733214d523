# The verify and timing module (include/kselect/verify.h, tile_checks.h): the GEMM and
# convolution references, tolerances, poisoned outputs and the median of event-timed launches,
# for every provider.
# host_checks.cpp and host_conv.cpp are CPU only; the rest needs the CUDA runtime, NVRTC and the
# providers.
set(KSELECT_VERIFY_SOURCES
    src/verify/host_checks.cpp
    src/verify/host_conv.cpp
    src/verify/device_checks.cpp
    src/verify/tile_checks.cpp)
