# Tests of the hardware profile, the CUDA helpers (NVRTC, driver table) and the LightGBM C API
# smoke test; GPU-only cases skip with a reason on hosts without a GPU.
set(KSELECT_HARDWARE_TEST_SOURCES
    ${PROJECT_SOURCE_DIR}/tests/hardware/hardware_json_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/hardware/hardware_query_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/cuda/nvrtc_compile_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/cuda/driver_api_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/cuda/gpu_state_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/model/lightgbm_smoke_test.cpp)
