# The tuner (include/kselect/gemm_log.h, later the GA): offline, in kselect_offline. gemm_log.cpp
# holds the parsers (also built alone by fuzz/CMakeLists.txt), gemm_log_file.cpp the file reading.
set(KSELECT_TUNER_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/gemm_log.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gemm_log_file.cpp)
