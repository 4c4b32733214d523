# The tuner (include/kselect/tuner.h): the genetic search, tuning on the GPU with verification and
# interleaved timing, the report and the replay. Offline side (kselect_offline).
set(KSELECT_TUNER_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/genetic.cpp
    ${CMAKE_CURRENT_LIST_DIR}/graph_timer.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tune.cpp
    ${CMAKE_CURRENT_LIST_DIR}/report.cpp
    ${CMAKE_CURRENT_LIST_DIR}/replay.cpp)
