// Smoke test of the LightGBM C API as kselect's build links it: train, predict, save to a string,
// load back. Catches a broken dependency install before any model code depends on it.
#ifdef KSELECT_WITH_LIGHTGBM

#include <LightGBM/c_api.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kselect {
namespace {

#define ASSERT_LGBM_OK(call) ASSERT_EQ((call), 0) << #call << ": " << LGBM_GetLastError()

constexpr int32_t kRows = 500;
constexpr int32_t kCols = 2;
constexpr int kRounds = 20;

// Frees the handles however the test exits.
struct Handles {
  DatasetHandle dataset = nullptr;
  BoosterHandle booster = nullptr;
  BoosterHandle reloaded = nullptr;
  ~Handles() {
    if (reloaded != nullptr) LGBM_BoosterFree(reloaded);
    if (booster != nullptr) LGBM_BoosterFree(booster);
    if (dataset != nullptr) LGBM_DatasetFree(dataset);
  }
};

void Predict(BoosterHandle booster, const std::vector<double>& x, std::vector<double>* out) {
  out->assign(kRows, 0.0);
  int64_t out_len = 0;
  ASSERT_LGBM_OK(LGBM_BoosterPredictForMat(booster, x.data(), C_API_DTYPE_FLOAT64, kRows, kCols,
                                           /*is_row_major=*/1, C_API_PREDICT_NORMAL,
                                           /*start_iteration=*/0, /*num_iteration=*/-1, "",
                                           &out_len, out->data()));
  ASSERT_EQ(out_len, kRows);
}

TEST(LightGbmSmokeTest, TrainsPredictsAndRoundTripsThroughAString) {
  // y = 3*x0 - 2*x1 + noise, x uniform in [-1, 1]: std(y) is about 2.1.
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::normal_distribution<double> noise(0.0, 0.1);
  std::vector<double> x(static_cast<size_t>(kRows) * kCols);
  std::vector<float> y(kRows);
  double mean = 0;
  for (int32_t i = 0; i < kRows; ++i) {
    x[2 * i] = uniform(rng);
    x[2 * i + 1] = uniform(rng);
    y[i] = static_cast<float>(3.0 * x[2 * i] - 2.0 * x[2 * i + 1] + noise(rng));
    mean += y[i];
  }
  mean /= kRows;
  double variance = 0;
  for (float v : y) variance += (v - mean) * (v - mean);
  const double target_std = std::sqrt(variance / kRows);

  Handles h;
  ASSERT_LGBM_OK(LGBM_DatasetCreateFromMat(x.data(), C_API_DTYPE_FLOAT64, kRows, kCols,
                                           /*is_row_major=*/1, "verbose=-1", nullptr, &h.dataset));
  ASSERT_LGBM_OK(LGBM_DatasetSetField(h.dataset, "label", y.data(), kRows, C_API_DTYPE_FLOAT32));
  ASSERT_LGBM_OK(
      LGBM_BoosterCreate(h.dataset,
                         "objective=regression learning_rate=0.3 num_leaves=15 min_data_in_leaf=5 "
                         "num_threads=1 deterministic=true verbose=-1",
                         &h.booster));
  for (int round = 0; round < kRounds; ++round) {
    int is_finished = 0;
    ASSERT_LGBM_OK(LGBM_BoosterUpdateOneIter(h.booster, &is_finished));
    if (is_finished) break;
  }

  std::vector<double> predicted;
  ASSERT_NO_FATAL_FAILURE(Predict(h.booster, x, &predicted));
  double squared_error = 0;
  for (int32_t i = 0; i < kRows; ++i) squared_error += std::pow(predicted[i] - y[i], 2);
  const double rmse = std::sqrt(squared_error / kRows);
  EXPECT_LT(rmse, 0.25 * target_std) << "rmse " << rmse << " vs target std " << target_std;

  // Ask for the size first, then save into a buffer of that size.
  int64_t length = 0;
  std::string model(1, '\0');
  ASSERT_LGBM_OK(LGBM_BoosterSaveModelToString(h.booster, 0, -1, C_API_FEATURE_IMPORTANCE_SPLIT,
                                               static_cast<int64_t>(model.size()), &length,
                                               model.data()));
  ASSERT_GT(length, 1);
  model.assign(static_cast<size_t>(length), '\0');
  ASSERT_LGBM_OK(LGBM_BoosterSaveModelToString(h.booster, 0, -1, C_API_FEATURE_IMPORTANCE_SPLIT,
                                               length, &length, model.data()));
  EXPECT_NE(model.find("tree"), std::string::npos);

  int iterations = 0;
  ASSERT_LGBM_OK(LGBM_BoosterLoadModelFromString(model.c_str(), &iterations, &h.reloaded));
  EXPECT_EQ(iterations, kRounds);
  std::vector<double> reloaded_predicted;
  ASSERT_NO_FATAL_FAILURE(Predict(h.reloaded, x, &reloaded_predicted));
  EXPECT_EQ(reloaded_predicted, predicted);
}

}  // namespace
}  // namespace kselect

#endif  // KSELECT_WITH_LIGHTGBM
