# The timing module (include/kselect/timing.h), in kselect_runtime: every kernel kselect times is
# timed here (the bench worker's gated batches, CUDA-graph timing for the tuner, replay, the head
# to head and the search, first-use timing in dispatch, verify's launch timing).
set(KSELECT_TIMING_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/method.cpp
    ${CMAKE_CURRENT_LIST_DIR}/event_timer.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gated_regions.cpp
    ${CMAKE_CURRENT_LIST_DIR}/graph_timer.cpp
    ${CMAKE_CURRENT_LIST_DIR}/first_use.cpp)
