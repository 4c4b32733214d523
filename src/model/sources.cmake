# The ML core: feature engine, evaluation, and models (LightGBM C API, or a stub that fails
# clearly in builds without LightGBM).
set(KSELECT_ML_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/../features/feature_spec.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../features/gemm_features.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../eval/eval.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../eval/baselines.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../eval/eval_html.cpp
    ${CMAKE_CURRENT_LIST_DIR}/model_common.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tree_ensemble.cpp)
if(KSELECT_WITH_LIGHTGBM)
  list(APPEND KSELECT_ML_SOURCES ${CMAKE_CURRENT_LIST_DIR}/lightgbm_model.cpp)
else()
  list(APPEND KSELECT_ML_SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_unavailable.cpp)
endif()
# The subcommands over it.
set(KSELECT_ML_CLI_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_features.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_train.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_eval.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_predict.cpp)
