# The ML core, in two halves.
# Inference (kselect_runtime): the feature engine and model scoring with kselect's own evaluator of
# LightGBM text models (kselect's and foreign ones, such as CK Tile's), so selection links without
# LightGBM.
set(KSELECT_ML_RUNTIME_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/../features/feature_spec.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../features/feature_extractor.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../features/feature_blocks.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../features/gemm_features.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../features/conv_features.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ck_tile_spec.cpp
    ${CMAKE_CURRENT_LIST_DIR}/compiled_trees.cpp
    ${CMAKE_CURRENT_LIST_DIR}/foreign_model.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gzip_file.cpp
    ${CMAKE_CURRENT_LIST_DIR}/model.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tree_ensemble.cpp)
# Training and evaluation (kselect_offline): evaluation against the oracle, baselines, reports,
# and training through LightGBM's C API (or a stub that fails clearly in builds without it).
set(KSELECT_ML_OFFLINE_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/../eval/eval.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../eval/model_eval.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../eval/baselines.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../eval/eval_html.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../eval/cross_provider_eval.cpp
    ${CMAKE_CURRENT_LIST_DIR}/train_common.cpp)
if(KSELECT_WITH_LIGHTGBM)
  list(APPEND KSELECT_ML_OFFLINE_SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_lightgbm.cpp)
else()
  list(APPEND KSELECT_ML_OFFLINE_SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_unavailable.cpp)
endif()
# The subcommands over it.
set(KSELECT_ML_CLI_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_features.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_train.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_eval.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_predict.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../cli/cmd_model.cpp)
