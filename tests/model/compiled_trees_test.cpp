// The compiled scorer against its reference: CompiledTrees must give TreeEnsemble's predictions bit
// for bit (and so LightGBM's, tree_ensemble_test.cpp) on random models with every kind of split and
// on every shipped model, for any number of rows; with LightGBM and Arrow, a shipped ranker scored
// through Model on real holdout problems ranks each problem's candidates as LightGBM does.
#include "model/compiled_trees.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kselect/model.h"
#include "model/lightgbm_rows.h"
#include "model/tree_ensemble.h"

#if defined(KSELECT_WITH_LIGHTGBM) && defined(KSELECT_WITH_ARROW)
#include <LightGBM/c_api.h>

#include "kselect/dataset.h"
#include "kselect/eval.h"
#endif

namespace kselect {
namespace {

namespace fs = std::filesystem;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Scores `rows` with both evaluators (the compiled one in calls of `batch` rows) and reports every
// row whose predictions differ in any bit (at most 5 in detail).
::testing::AssertionResult ScoresAgree(const TreeEnsemble& reference, const CompiledTrees& compiled,
                                       const std::vector<double>& rows, size_t batch) {
  const size_t width = static_cast<size_t>(reference.num_features());
  const size_t n = rows.size() / width;
  std::vector<double> expected(n), actual(n, -12345.0);
  reference.Predict(rows.data(), n, expected.data());
  for (size_t first = 0; first < n; first += batch) {
    compiled.Predict(rows.data() + first * width, std::min(batch, n - first),
                     actual.data() + first);
  }
  size_t mismatches = 0;
  std::ostringstream detail;
  for (size_t r = 0; r < n; ++r) {
    if (std::memcmp(&expected[r], &actual[r], sizeof(double)) == 0) continue;
    if (++mismatches <= 5) {
      detail << "\n  row " << r << ": TreeEnsemble " << expected[r] << ", compiled " << actual[r]
             << " (row:";
      for (size_t f = 0; f < width && f < 12; ++f) detail << " " << rows[r * width + f];
      detail << (width > 12 ? " ..." : "") << ")";
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << mismatches << " of " << n << " rows differ (batches of "
                                       << batch << ")" << detail.str();
}

// Random LightGBM text models: trees grown as LightGBM grows them (a leaf splits into a node whose
// left child keeps the leaf), some as one long chain, some a single leaf; numerical splits of every
// missing type and default direction on shared thresholds (zero, tiny, +-inf and NaN among them),
// categorical splits with bitsets of 1 to 20 words; leaf values of mixed magnitudes, so that a
// wrong leaf or another summation order shows.
std::string SyntheticModel(uint32_t seed, int num_features, int num_trees, int max_leaves) {
  std::mt19937_64 rng(seed);
  const auto uniform = [&](int lo, int hi) {  // [lo, hi]
    return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  std::vector<bool> categorical(static_cast<size_t>(num_features));
  std::vector<std::vector<double>> pool(static_cast<size_t>(num_features));
  for (int f = 0; f < num_features; ++f) {
    categorical[static_cast<size_t>(f)] = f % 4 == 3;
    std::vector<double>& p = pool[static_cast<size_t>(f)];
    p = {0.0, -0.0, 1e-36, -1e-36, 1e-35, 1.0, -1.0, 2.5};
    for (int i = 0; i < 12; ++i)
      p.push_back(std::ldexp(double(uniform(-1000, 1000)), uniform(-8, 8)));
    if (f % 5 == 0) p.insert(p.end(), {kInf, -kInf, kNan, 1e300});
  }
  std::ostringstream text;
  text.precision(17);
  text << "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
       << "max_feature_idx=" << num_features - 1 << "\nobjective=regression\nfeature_names=";
  for (int f = 0; f < num_features; ++f) text << (f ? " " : "") << "f" << f;
  text << "\nfeature_infos=";
  for (int f = 0; f < num_features; ++f) text << (f ? " " : "") << "none";
  text << "\n\n";
  for (int t = 0; t < num_trees; ++t) {
    const int shape = uniform(0, 9);  // 0: one leaf, 1: a chain, else grown at random leaves
    const int leaves = shape == 0 ? 1 : uniform(2, max_leaves);
    std::vector<int> left, right, parent_node, parent_side;  // per node; leaves' parents below
    std::vector<int> leaf_parent(1, -1), leaf_side(1, 0);
    for (int leaf = 1; leaf < leaves; ++leaf) {
      const int split = shape == 1 ? leaf - 1 : uniform(0, leaf - 1);  // the leaf that splits
      const int node = static_cast<int>(left.size());
      left.push_back(~split);
      right.push_back(~leaf);
      if (leaf_parent[static_cast<size_t>(split)] >= 0) {
        const size_t p = static_cast<size_t>(leaf_parent[static_cast<size_t>(split)]);
        (leaf_side[static_cast<size_t>(split)] ? right[p] : left[p]) = node;
      }
      leaf_parent[static_cast<size_t>(split)] = node;
      leaf_side[static_cast<size_t>(split)] = 0;
      leaf_parent.push_back(node);
      leaf_side.push_back(1);
    }
    std::ostringstream features, thresholds, types, bounds, words;
    int num_cat = 0, word_count = 0;
    bounds << 0;
    for (size_t i = 0; i < left.size(); ++i) {
      const int f = uniform(0, num_features - 1);
      features << (i ? " " : "") << f;
      if (categorical[static_cast<size_t>(f)]) {
        types << (i ? " " : "") << (uniform(0, 1) ? 1 : 9);
        thresholds << (i ? " " : "") << num_cat++;
        const int n = uniform(0, 4) == 0 ? uniform(2, 20) : uniform(1, 2);
        for (int w = 0; w < n; ++w) {
          const uint32_t bits = static_cast<uint32_t>(rng()) & static_cast<uint32_t>(rng());
          words << (word_count++ ? " " : "") << bits;
        }
        bounds << " " << word_count;
      } else {
        const int missing = uniform(0, 2), default_left = uniform(0, 1);
        types << (i ? " " : "") << ((missing << 2) | (default_left << 1));
        const std::vector<double>& p = pool[static_cast<size_t>(f)];
        thresholds << (i ? " " : "") << p[static_cast<size_t>(uniform(0, int(p.size()) - 1))];
      }
    }
    std::ostringstream values;
    values.precision(17);
    for (int leaf = 0; leaf < leaves; ++leaf) {
      values << (leaf ? " " : "") << std::ldexp(double(uniform(-99999, 99999)), uniform(-30, 5));
    }
    const auto join = [](const std::vector<int>& v) {
      std::ostringstream s;
      for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << v[i];
      return s.str();
    };
    text << "Tree=" << t << "\nnum_leaves=" << leaves << "\nnum_cat=" << num_cat
         << "\nsplit_feature=" << features.str() << "\nthreshold=" << thresholds.str()
         << "\ndecision_type=" << types.str() << "\nleft_child=" << join(left)
         << "\nright_child=" << join(right) << "\nleaf_value=" << values.str() << "\n";
    if (num_cat > 0) {
      text << "cat_boundaries=" << bounds.str() << "\ncat_threshold=" << words.str() << "\n";
    }
    text << "is_linear=0\nshrinkage=1\n\n\n";
  }
  text << "end of trees\n";
  return text.str();
}

// Rows for a model: the random rows of lightgbm_rows.h plus every feature at each edge value in
// turn (the others at random rows' values).
std::vector<double> RowsFor(const std::string& text, int num_features, size_t random_rows,
                            uint32_t seed) {
  std::vector<double> rows =
      testing_util::RandomRows(testing_util::ReadFeatureUse(text, num_features), random_rows, seed);
  const double edges[] = {kNan,
                          -kNan,
                          0.0,
                          -0.0,
                          1e-36,
                          -1e-36,
                          double(1e-35f),
                          std::nextafter(double(1e-35f), 1.0),
                          -std::nextafter(double(1e-35f), 1.0),
                          std::numeric_limits<double>::denorm_min(),
                          -1.0,
                          -0.99999,
                          -0.5,
                          0.5,
                          31.0,
                          32.0,
                          63.9,
                          64.0,
                          2147483647.5,
                          2147483648.0,
                          -2147483649.0,
                          1e300,
                          kInf,
                          -kInf};
  const size_t width = static_cast<size_t>(num_features);
  for (size_t f = 0; f < width; ++f) {
    for (const double edge : edges) {
      const size_t from = (f * std::size(edges)) % std::max<size_t>(random_rows, 1);
      rows.insert(rows.end(), rows.begin() + from * width, rows.begin() + (from + 1) * width);
      rows[rows.size() - width + f] = edge;
    }
  }
  return rows;
}

TEST(CompiledTreesTest, MatchesTreeEnsembleOnSyntheticModels) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int num_features = 3 + static_cast<int>(seed % 7);
    // Some models with deep, wide trees (up to 300 leaves: chains 300 deep).
    const std::string text = SyntheticModel(seed, num_features, 5 + static_cast<int>(seed) * 4,
                                            seed % 3 == 0 ? 300 : 40);
    const StatusOr<TreeEnsemble> reference = TreeEnsemble::FromLightGbmText(text, "synthetic");
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    const std::vector<double> rows = RowsFor(text, num_features, 400, seed);
    for (const size_t table_words : {size_t{1} << 20, size_t{0}}) {
      SCOPED_TRACE(table_words ? "category tables" : "category bitsets per node");
      const StatusOr<CompiledTrees> compiled =
          CompiledTrees::Compile(*reference, {.max_category_table_words = table_words});
      ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
      EXPECT_EQ(compiled->num_trees(), reference->num_trees());
      EXPECT_EQ(compiled->num_features(), reference->num_features());
      for (const size_t batch : {size_t{100000}, size_t{1}, size_t{2}, size_t{3}, size_t{9}}) {
        EXPECT_TRUE(ScoresAgree(*reference, *compiled, rows, batch));
      }
    }
  }
}

TEST(CompiledTreesTest, ScoresAnyNumberOfRowsAlike) {
  const std::string text = SyntheticModel(99, 6, 30, 50);
  const TreeEnsemble reference = TreeEnsemble::FromLightGbmText(text, "synthetic").value();
  const CompiledTrees compiled = CompiledTrees::Compile(reference).value();
  const std::vector<double> rows = RowsFor(text, 6, 40, 7);
  for (size_t n = 0; n <= 40; ++n) {
    const std::vector<double> head(rows.begin(), rows.begin() + static_cast<long>(n * 6));
    EXPECT_TRUE(ScoresAgree(reference, compiled, head, n == 0 ? 1 : n)) << n << " rows";
  }
  compiled.Predict(rows.data(), 0, nullptr);  // no rows: nothing read or written
}

TEST(CompiledTreesTest, SingleLeafModels) {
  const std::string text = SyntheticModel(5, 2, 0, 2);  // no trees: refused by the parser
  EXPECT_FALSE(TreeEnsemble::FromLightGbmText(text, "empty").ok());
  std::string one_leaf = SyntheticModel(5, 2, 1, 2);
  const size_t at = one_leaf.find("Tree=0");
  one_leaf = one_leaf.substr(0, at) +
             "Tree=0\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nthreshold=\ndecision_type=\n"
             "left_child=\nright_child=\nleaf_value=0.25\n\n\nTree=1\nnum_leaves=1\nnum_cat=0\n"
             "split_feature=\nthreshold=\ndecision_type=\nleft_child=\nright_child=\n"
             "leaf_value=-3\n\n\nend of trees\n";
  const TreeEnsemble reference = TreeEnsemble::FromLightGbmText(one_leaf, "leaves").value();
  const CompiledTrees compiled = CompiledTrees::Compile(reference).value();
  const std::vector<double> rows(2 * 11, kNan);
  std::vector<double> out(11);
  compiled.Predict(rows.data(), 11, out.data());
  for (const double v : out) EXPECT_EQ(v, 0.25 - 3);
}

TEST(CompiledTreesTest, MatchesTreeEnsembleOnEveryShippedModel) {
  int checked = 0;
  for (const fs::path& file : testing_util::ShippedModelFiles()) {
    const std::string name = file.filename().string();
    SCOPED_TRACE(file.string());
    const std::string text = ReadMaybeGzipFile(file.string()).value();
    const StatusOr<TreeEnsemble> reference = TreeEnsemble::FromLightGbmText(text, name);
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    const StatusOr<CompiledTrees> compiled = CompiledTrees::Compile(*reference);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    const std::vector<double> rows =
        RowsFor(text, reference->num_features(), 300, 77u + static_cast<uint32_t>(checked));
    EXPECT_TRUE(ScoresAgree(*reference, *compiled, rows, 100000));
    EXPECT_TRUE(ScoresAgree(*reference, *compiled, rows, 13));
    ++checked;
  }
  EXPECT_GE(checked, 14);  // every shipped model file
}

#if defined(KSELECT_WITH_LIGHTGBM) && defined(KSELECT_WITH_ARROW)

// The shipped bf16 TN peer ranker through Model (which scores with CompiledTrees) on real holdout
// problems, against LightGBM's own predictor on the same feature rows: each problem's candidates in
// the same order, every score within 1e-5 relative (in fact equal).
TEST(CompiledTreesLightGbmTest, ShippedRankerRanksHoldoutProblemsLikeLightGbm) {
  const std::string source = KSELECT_SOURCE_DIR;
  const std::string dir = source + "/models/h200_cublaslt_default_bf16_tn";
  const Model model = Model::Load(dir).value();
  const std::string text = ReadMaybeGzipFile(dir + "/model_tflops.lgbm.gz").value();
  BoosterHandle booster = nullptr;
  int iterations = 0;
  ASSERT_EQ(LGBM_BoosterLoadModelFromString(text.c_str(), &iterations, &booster), 0)
      << LGBM_GetLastError();
  const Dataset data =
      ReadDataset(source + "/data/h200/cublaslt_default_bf16_tn_holdout.parquet").value();
  const CandidateSet set = BuildCandidateSet(data, model.spec().provider).value();
  ASSERT_GE(set.problems.size(), 10u);
  size_t rows_checked = 0, exact = 0;
  for (size_t p = 0; p < set.problems.size(); p += set.problems.size() / 10) {
    const ProblemCandidates& problem = set.problems[p];
    SCOPED_TRACE(problem.problem_key);
    std::vector<KernelConfig> configs;
    for (const Candidate& c : problem.candidates) configs.push_back(c.config);
    const std::vector<PeerPick> picks = PeerPicksOf(problem);
    const std::vector<double> scores =
        model.Predict(Target::kTflops, problem.problem, configs, std::span<const PeerPick>(picks))
            .value();
    std::vector<double> x;
    ASSERT_TRUE(model.extractor()
                    .ExtractBatch(problem.problem, configs, &x, std::span<const PeerPick>(picks))
                    .ok());
    std::vector<double> expected(configs.size());
    int64_t len = 0;
    ASSERT_EQ(LGBM_BoosterPredictForMat(
                  booster, x.data(), C_API_DTYPE_FLOAT64, static_cast<int32_t>(configs.size()),
                  static_cast<int32_t>(model.extractor().NumFeatures()), 1, C_API_PREDICT_NORMAL, 0,
                  -1, "num_threads=1", &len, expected.data()),
              0)
        << LGBM_GetLastError();
    const auto order = [](const std::vector<double>& s) {
      std::vector<size_t> o(s.size());
      std::iota(o.begin(), o.end(), 0);
      std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
      return o;
    };
    EXPECT_EQ(order(scores), order(expected));
    for (size_t i = 0; i < scores.size(); ++i) {
      EXPECT_LE(std::fabs(scores[i] - expected[i]), 1e-5 * std::fabs(expected[i]) + 1e-300)
          << "candidate " << i << " (" << problem.candidates[i].config_key << ")";
      exact += scores[i] == expected[i];
    }
    rows_checked += scores.size();
  }
  LGBM_BoosterFree(booster);
  EXPECT_GT(rows_checked, 5000u);
  EXPECT_EQ(exact, rows_checked);  // bit-identical, as TreeEnsemble is
}

#endif  // KSELECT_WITH_LIGHTGBM && KSELECT_WITH_ARROW

}  // namespace
}  // namespace kselect
