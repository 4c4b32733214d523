// The native LightGBM evaluator: its parser (strict, never crashing) on hand-written models, and,
// with LightGBM, its predictions against LightGBM's own on every shipped model, bit for bit.
#include "model/tree_ensemble.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/lightgbm_rows.h"

#ifdef KSELECT_WITH_LIGHTGBM
#include <LightGBM/c_api.h>

#include "kselect/model.h"
#endif

namespace kselect {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Three features (a numerical, b categorical, c numerical) and three trees:
//   tree 0: a <= 5 (NaN goes left) ? (b in {1, 2} ? 1 : 2) : 4
//   tree 1: one leaf, 0.5
//   tree 2: c <= -1 (missing type Zero, zero goes left) ? 10 : 20
constexpr const char* kSmallModel = R"(tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=2
objective=regression
feature_names=a b c
feature_infos=[0:10] 0:1:2 [-3:3]

Tree=0
num_leaves=3
num_cat=1
split_feature=0 1
split_gain=1 1
threshold=5 0
decision_type=10 1
left_child=1 -1
right_child=-3 -2
leaf_value=1 2 4
leaf_weight=1 1 1
leaf_count=1 1 1
internal_value=0 0
internal_weight=0 0
internal_count=2 1
cat_boundaries=0 1
cat_threshold=6
is_linear=0
shrinkage=1


Tree=1
num_leaves=1
num_cat=0
split_feature=
split_gain=
threshold=
decision_type=
left_child=
right_child=
leaf_value=0.5
leaf_weight=
leaf_count=
internal_value=
internal_weight=
internal_count=
is_linear=0
shrinkage=1


Tree=2
num_leaves=2
num_cat=0
split_feature=2
split_gain=1
threshold=-1
decision_type=6
left_child=-1
right_child=-2
leaf_value=10 20
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=0
internal_count=2
is_linear=0
shrinkage=1


end of trees

feature_importances:
a=1
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(TreeEnsembleTest, ParsesTheHeader) {
  const StatusOr<TreeEnsemble> model = TreeEnsemble::FromLightGbmText(kSmallModel, "small.lgbm");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->num_features(), 3);
  EXPECT_EQ(model->num_trees(), 3);
  EXPECT_EQ(model->feature_names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(model->objective(), "regression");
}

TEST(TreeEnsembleTest, FollowsLightGbmDecisions) {
  const TreeEnsemble model = TreeEnsemble::FromLightGbmText(kSmallModel, "small.lgbm").value();
  struct Case {
    double a, b, c, expected;
  };
  const Case cases[] = {
      {3, 1, 0, 1 + 0.5 + 10},  // b in the set; c = 0 takes the Zero split's default (left)
      {5, 2, 1, 1 + 0.5 + 20},  // a exactly at the threshold goes left
      {std::nextafter(5.0, 6.0), 1, 1, 4 + 0.5 + 20},
      {kNan, 2, 1, 1 + 0.5 + 20},  // missing type NaN, default left
      {7, 1, -2, 4 + 0.5 + 10},
      {3, 0, 1, 2 + 0.5 + 20},      // b not in the set
      {3, kNan, 1, 2 + 0.5 + 20},   // a NaN category goes right
      {3, 40, 1, 2 + 0.5 + 20},     // a code past the bitset goes right
      {3, -1, 1, 2 + 0.5 + 20},     // negative codes go right
      {3, 1.9, 1, 1 + 0.5 + 20},    // codes truncate like static_cast<int>
      {3, -0.5, 1, 2 + 0.5 + 20},   // -0.5 truncates to 0, not in the set
      {3, 1e10, 1, 2 + 0.5 + 20},   // past int: right
      {3, 1, kNan, 1 + 0.5 + 10},   // NaN becomes 0 under missing type Zero: default left
      {3, 1, 1e-36, 1 + 0.5 + 10},  // |c| <= 1e-35 is zero
      {3, 1, -1e-36, 1 + 0.5 + 10},
  };
  std::vector<double> rows;
  for (const Case& c : cases) rows.insert(rows.end(), {c.a, c.b, c.c});
  std::vector<double> out(std::size(cases));
  model.Predict(rows.data(), std::size(cases), out.data());
  for (size_t i = 0; i < std::size(cases); ++i)
    EXPECT_EQ(out[i], cases[i].expected) << "case " << i;
}

TEST(TreeEnsembleTest, MissingTypeNoneComparesZero) {
  // decision_type 0: NaN turns into 0, then 0 <= -1 is false: right, default direction ignored.
  const TreeEnsemble model =
      TreeEnsemble::FromLightGbmText(Replace(kSmallModel, "decision_type=6", "decision_type=2"),
                                     "none.lgbm")
          .value();
  const double rows[] = {3, 1, kNan, 3, 1, 0, 3, 1, -1};
  double out[3];
  model.Predict(rows, 3, out);
  EXPECT_EQ(out[0], 1 + 0.5 + 20);
  EXPECT_EQ(out[1], 1 + 0.5 + 20);
  EXPECT_EQ(out[2], 1 + 0.5 + 10);
}

TEST(TreeEnsembleTest, ScoresAcrossRowBlocks) {
  const TreeEnsemble model = TreeEnsemble::FromLightGbmText(kSmallModel, "small.lgbm").value();
  const size_t n = 200;  // several 64-row blocks and a partial one
  std::vector<double> rows;
  for (size_t i = 0; i < n; ++i) rows.insert(rows.end(), {double(i % 10), double(i % 3), -2.0});
  std::vector<double> out(n);
  model.Predict(rows.data(), n, out.data());
  for (size_t i = 0; i < n; ++i) {
    double one;
    model.Predict(rows.data() + 3 * i, 1, &one);
    EXPECT_EQ(out[i], one) << i;
  }
}

void ExpectRefused(const std::string& text, StatusCode code, const std::string& needle) {
  const StatusOr<TreeEnsemble> model = TreeEnsemble::FromLightGbmText(text, "bad.lgbm");
  ASSERT_FALSE(model.ok()) << "accepted; expected: " << needle;
  EXPECT_EQ(model.status().code(), code) << model.status().ToString();
  EXPECT_NE(model.status().message().find("bad.lgbm"), std::string::npos)
      << model.status().ToString();
  EXPECT_NE(model.status().message().find(needle), std::string::npos)
      << model.status().ToString() << " lacks " << needle;
}

TEST(TreeEnsembleTest, RefusesMalformedText) {
  const std::string good = kSmallModel;
  const StatusCode parse = StatusCode::kParseError;
  ExpectRefused("", parse, "num_class");
  ExpectRefused(good.substr(0, good.find("end of trees")), parse, "truncated");
  ExpectRefused(good.substr(0, good.find("Tree=2") + 30), parse, "Tree=2");
  ExpectRefused(Replace(good, "leaf_value=1 2 4", "leaf_value=1 2"), parse,
                "Tree=0: leaf_value has 2 values, expected 3");
  ExpectRefused(Replace(good, "leaf_value=1 2 4", "leaf_value=1 2 x"), parse,
                "Tree=0: leaf_value[2] is not a number");
  ExpectRefused(Replace(good, "threshold=5 0", "threshold=5e 0"), parse, "threshold[0]");
  ExpectRefused(Replace(good, "left_child=1 -1", "left_child=2 -1"), parse, "out of range");
  ExpectRefused(Replace(good, "left_child=1 -1", "left_child=1 -4"), parse, "out of range");
  ExpectRefused(Replace(good, "left_child=1 -1", "left_child=1 -2"), parse, "leaf 0");
  ExpectRefused(Replace(good, "left_child=1 -1", "left_child=0 -1"), parse, "root");
  ExpectRefused(Replace(good, "split_feature=0 1", "split_feature=0 3"), parse,
                "split_feature 3 is outside 0..2");
  ExpectRefused(Replace(good, "decision_type=10 1", "decision_type=14 1"), parse,
                "decision_type 14");
  ExpectRefused(Replace(good, "threshold=5 0", "threshold=5 1"), parse, "below num_cat=1");
  ExpectRefused(Replace(good, "cat_boundaries=0 1", "cat_boundaries=0 2"), parse, "cat_boundaries");
  ExpectRefused(Replace(good, "num_leaves=3", "num_leaves=0"), parse, "num_leaves");
  ExpectRefused(Replace(good, "Tree=1", "Tree=7"), parse, "expected \"Tree=1\"");
  ExpectRefused(Replace(good, "feature_names=a b c", "feature_names=a b"), parse,
                "feature_names has 2 names");
  ExpectRefused(Replace(good, "max_feature_idx=2", "max_feature_idx=two"), parse,
                "max_feature_idx");
  ExpectRefused(Replace(good, "shrinkage=1", "shrinkage=fast"), parse, "shrinkage");
}

TEST(TreeEnsembleTest, RefusesModelsItCannotReproduce) {
  const std::string good = kSmallModel;
  const StatusCode refused = StatusCode::kInvalidArgument;
  ExpectRefused(Replace(good, "num_class=1", "num_class=3"), refused, "num_class=3");
  ExpectRefused(Replace(good, "is_linear=0", "is_linear=1"), refused, "linear");
  ExpectRefused(Replace(good, "objective=regression", "objective=binary sigmoid:1"), refused,
                "binary");
  ExpectRefused(Replace(good, "objective=regression", "objective=regression sqrt"), refused,
                "sqrt");
  ExpectRefused(Replace(good, "objective=regression", "objective=regression\naverage_output"),
                refused, "random forest");
}

#ifdef KSELECT_WITH_LIGHTGBM

namespace fs = std::filesystem;

// LightGBM's own reading of the hand-written model's edge cases (NaN, zeros, odd category codes).
TEST(TreeEnsembleLightGbmTest, SmallModelMatchesLightGbm) {
  const TreeEnsemble native = TreeEnsemble::FromLightGbmText(kSmallModel, "small.lgbm").value();
  BoosterHandle booster = nullptr;
  int iterations = 0;
  ASSERT_EQ(LGBM_BoosterLoadModelFromString(kSmallModel, &iterations, &booster), 0)
      << LGBM_GetLastError();
  const std::vector<double> a = {3, 5, 7, kNan, 0, -1e-36, std::nextafter(5.0, 6.0)};
  const std::vector<double> b = {0, 1, 2, 1.9, -0.5, -1, kNan, 40, 1e10, 3e9, 2147483647.0, 1e-36};
  const std::vector<double> c = {kNan, 0, 1, -1, -2, 1e-36, -1e-36};
  std::vector<double> x;
  for (double va : a) {
    for (double vb : b) {
      for (double vc : c) x.insert(x.end(), {va, vb, vc});
    }
  }
  const size_t rows = x.size() / 3;
  std::vector<double> expected(rows), actual(rows);
  int64_t len = 0;
  const int rc = LGBM_BoosterPredictForMat(booster, x.data(), C_API_DTYPE_FLOAT64, int32_t(rows), 3,
                                           1, C_API_PREDICT_NORMAL, 0, -1, "num_threads=1", &len,
                                           expected.data());
  LGBM_BoosterFree(booster);
  ASSERT_EQ(rc, 0) << LGBM_GetLastError();
  native.Predict(x.data(), rows, actual.data());
  for (size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(actual[r], expected[r])
        << "row " << r << " (" << x[3 * r] << ", " << x[3 * r + 1] << ", " << x[3 * r + 2] << ")";
  }
}

TEST(TreeEnsembleLightGbmTest, MatchesLightGbmOnEveryShippedModelBitForBit) {
  int checked = 0;
  for (const fs::path& file : testing_util::ShippedModelFiles()) {
    const std::string name = file.filename().string();
    SCOPED_TRACE(file.string());
    const std::string text = ReadMaybeGzipFile(file.string()).value();
    const StatusOr<TreeEnsemble> native = TreeEnsemble::FromLightGbmText(text, name);
    ASSERT_TRUE(native.ok()) << native.status().ToString();

    BoosterHandle booster = nullptr;
    int iterations = 0;
    ASSERT_EQ(LGBM_BoosterLoadModelFromString(text.c_str(), &iterations, &booster), 0)
        << LGBM_GetLastError();
    EXPECT_EQ(iterations, native->num_trees());
    int lgbm_features = 0;
    ASSERT_EQ(LGBM_BoosterGetNumFeature(booster, &lgbm_features), 0);
    EXPECT_EQ(lgbm_features, native->num_features());

    const size_t rows = 1000 + 37;
    const std::vector<double> x =
        testing_util::RandomRows(testing_util::ReadFeatureUse(text, native->num_features()), rows,
                                 1234u + uint32_t(checked));
    std::vector<double> expected(rows), actual(rows);
    int64_t len = 0;
    const int rc = LGBM_BoosterPredictForMat(
        booster, x.data(), C_API_DTYPE_FLOAT64, int32_t(rows), int32_t(native->num_features()), 1,
        C_API_PREDICT_NORMAL, 0, -1, "num_threads=1", &len, expected.data());
    LGBM_BoosterFree(booster);
    ASSERT_EQ(rc, 0) << LGBM_GetLastError();
    native->Predict(x.data(), rows, actual.data());
    int mismatches = 0;
    for (size_t r = 0; r < rows; ++r) {
      if (actual[r] != expected[r] && ++mismatches <= 5) {
        ADD_FAILURE() << "row " << r << ": native " << actual[r] << ", LightGBM " << expected[r];
      }
    }
    EXPECT_EQ(mismatches, 0);
    ++checked;
  }
  EXPECT_GE(checked, 14);  // every shipped model file
}

#endif  // KSELECT_WITH_LIGHTGBM

}  // namespace
}  // namespace kselect
