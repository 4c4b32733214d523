# The tuner (include/kselect/gemm_log.h, tuner.h), offline side (kselect_offline): application GEMM
# logs (gemm_log.cpp holds the parsers, also built alone by fuzz/CMakeLists.txt; gemm_log_file.cpp
# the file reading), the genetic search, tuning on the GPU with verification and interleaved
# timing, the report and the replay; the model-guided search over the tile engine's space
# (include/kselect/search.h: CPU search, and its device half over the helpers interleaved.cpp
# shares with tune.cpp and head_to_head.cpp).
set(KSELECT_TUNER_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/gemm_log.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gemm_log_file.cpp
    ${CMAKE_CURRENT_LIST_DIR}/genetic.cpp
    ${CMAKE_CURRENT_LIST_DIR}/graph_timer.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tune.cpp
    ${CMAKE_CURRENT_LIST_DIR}/report.cpp
    ${CMAKE_CURRENT_LIST_DIR}/replay.cpp
    ${CMAKE_CURRENT_LIST_DIR}/interleaved.cpp
    ${CMAKE_CURRENT_LIST_DIR}/head_to_head.cpp
    ${CMAKE_CURRENT_LIST_DIR}/search.cpp
    ${CMAKE_CURRENT_LIST_DIR}/search_measure.cpp)
