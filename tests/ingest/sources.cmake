# Tests of the AMD (CK Tile, CK grouped-conv) ingestion parsers, included by tests/CMakeLists.txt.
# Fixtures live in tests/fixtures/ck and are found through KSELECT_FIXTURE_DIR.
set(KSELECT_INGEST_TEST_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/ck_kernel_name_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ck_tile_log_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ck_tile_json_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ck_conv_csv_test.cpp)
