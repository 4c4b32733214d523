# Tests of the ML core: the feature engine, evaluation metrics, and LightGBM training/inference
# (the model tests compile to nothing without LightGBM).
set(KSELECT_ML_TEST_SOURCES
    ${PROJECT_SOURCE_DIR}/tests/features/features_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/features/conv_features_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/eval/eval_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/eval/baselines_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/eval/eval_html_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/model/model_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/model/oof_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/model/row_sampling_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/model/tree_ensemble_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/model/compiled_trees_test.cpp
    ${PROJECT_SOURCE_DIR}/tests/model/foreign_model_test.cpp)
