# GPU-facing helpers that need the CUDA toolkit (runtime, NVRTC) but never link libcuda.
set(KSELECT_CUDA_SOURCES src/cuda/driver_api.cpp src/cuda/gpu_state.cpp src/cuda/nvrtc_compile.cpp
                          src/cuda/runtime.cpp)
