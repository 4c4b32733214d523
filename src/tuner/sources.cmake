# The tuner (include/kselect/tuner.h, search.h), offline side (kselect_offline): the genetic
# search, tuning on the GPU with verification and interleaved timing (src/timing/), the report and
# the replay; worker processes for several GPUs (tune_workers.cpp); the model-guided search over the tile engine's space (search.cpp: CPU search, and
# its device half search_measure.cpp over the provider comparison of src/bench/). Application
# logs are read by src/ingest/gemm_log*.cpp.
set(KSELECT_TUNER_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/search_space.cpp
    ${CMAKE_CURRENT_LIST_DIR}/genetic.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tune.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tune_workers.cpp
    ${CMAKE_CURRENT_LIST_DIR}/report.cpp
    ${CMAKE_CURRENT_LIST_DIR}/replay.cpp
    ${CMAKE_CURRENT_LIST_DIR}/search.cpp
    ${CMAKE_CURRENT_LIST_DIR}/search_measure.cpp)
