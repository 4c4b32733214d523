// Training, loading and evaluating LightGBM models on a generated dataset whose TFLOPS follow an
// explicit formula (synthetic_gemm_data.h): a test of the learning machinery, not of GPU data.
#ifdef KSELECT_WITH_LIGHTGBM

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kselect/ingest.h"
#include "kselect/train.h"
#include "model/synthetic_gemm_data.h"
#include "testing_util.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using testing_util::Contains;

// A fresh directory per test, removed afterwards.
class ModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kselect_model_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Dir(const std::string& name) const { return (dir_ / name).string(); }

  static TrainOptions FastOptions() {
    TrainOptions o;
    o.folds = 4;
    o.seed = 42;
    o.num_threads = 2;
    o.max_rounds = 400;
    o.early_stopping_rounds = 30;
    o.params.learning_rate = 0.1;
    o.params.num_leaves = 31;
    o.params.min_data_in_leaf = 5;
    o.targets = {Target::kTflops};
    return o;
  }

  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

// Efficiency of always picking the one config with the best mean efficiency over `data`'s
// problems: the baseline a learned selector must beat.
double BestFixedConfigEfficiency(const CandidateSet& data) {
  std::map<std::string, std::pair<double, int>> sum;
  for (const ProblemCandidates& p : data.problems) {
    double oracle = 0;
    for (const Candidate& c : p.candidates) oracle = std::max(oracle, c.tflops);
    for (const Candidate& c : p.candidates) {
      sum[c.config_key].first += c.tflops / oracle;
      sum[c.config_key].second += 1;
    }
  }
  double best = 0;
  for (const auto& [key, s] : sum) best = std::max(best, s.first / s.second);
  return best;
}

TEST(GroupKFold, NeverSplitsAGroupAndBalancesRows) {
  const std::vector<int64_t> sizes = {50, 10, 10, 30, 20, 20, 40, 5, 15};
  const std::vector<int> fold = GroupKFold(sizes, 3);
  ASSERT_EQ(fold.size(), sizes.size());
  std::vector<int64_t> load(3, 0);
  for (size_t g = 0; g < sizes.size(); ++g) {
    ASSERT_GE(fold[g], 0);
    ASSERT_LT(fold[g], 3);
    load[static_cast<size_t>(fold[g])] += sizes[g];
  }
  // 200 rows: greedy largest-first balancing keeps every fold within one group of 200/3.
  for (int64_t l : load) EXPECT_NEAR(static_cast<double>(l), 200.0 / 3, 15.0);
  EXPECT_EQ(GroupKFold(sizes, 3), fold);  // deterministic
}

TEST_F(ModelTest, TrainsWithHonestGroupedCvAndWritesEveryArtifact) {
  const Dataset data = testing_util::SyntheticDataset(48, 1);
  TrainOptions options = FastOptions();
  options.targets = {Target::kTflops, Target::kLatency, Target::kBandwidth};
  const auto result = TrainModel(data, options, Dir("m"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->shapes, 48);
  EXPECT_EQ(result->problems, 48 + 16);  // every third shape also in rrr
  ASSERT_EQ(result->folds.size(), 4u);
  for (const char* f : {"model_tflops.lgbm.gz", "model_latency.lgbm.gz", "model_bandwidth.lgbm.gz",
                        "feature_spec.json", "train_manifest.json", "cv_metrics.json",
                        "feature_importances.json", "oof_predictions.csv.gz"}) {
    EXPECT_TRUE(fs::exists(Dir("m") + "/" + f)) << f;
  }
  // Out-of-fold: every shape was predicted by a model that never saw it, and the learned
  // selector clearly beats the best single config.
  const CandidateSet set = BuildCandidateSet(data, std::nullopt).value();
  const double fixed = BestFixedConfigEfficiency(set);
  EXPECT_GT(result->oof_efficiency.mean, 0.95);
  EXPECT_GT(result->oof_efficiency.mean, fixed + 0.03) << "best fixed config " << fixed;
  for (const FoldMetrics& f : result->folds) {
    EXPECT_GT(f.r2_label, 0.9);
    EXPECT_GE(f.best_iteration, 1);
  }

  // GroupKFold by shape with layout left out: both layouts of a shape share one fold.
  std::istringstream oof(ReadMaybeGzipFile(Dir("m") + "/" + kOofPredictionsFile).value());
  std::string line;
  std::getline(oof, line);
  std::map<std::string, std::set<int>> folds_of_shape;
  while (std::getline(oof, line)) {
    if (!line.starts_with("problem,")) continue;  // format 2: fold on each problem's line
    const size_t layout = line.find(" layout=");
    const size_t batch = line.find(" batch=");
    const std::string shape = line.substr(9, std::min(layout, batch) - 9);
    const size_t q = line.rfind("\",");
    const int fold = std::stoi(line.substr(q + 2, line.find(',', q + 2) - q - 2));
    folds_of_shape[shape].insert(fold);
  }
  EXPECT_EQ(folds_of_shape.size(), 48u);
  for (const auto& [shape, folds] : folds_of_shape) EXPECT_EQ(folds.size(), 1u) << shape;

  const auto manifest = nlohmann::json::parse(Slurp(Dir("m") + "/train_manifest.json"));
  EXPECT_EQ(manifest["data"]["rows_used"], static_cast<int64_t>(data.rows.size()));
  EXPECT_EQ(manifest["data"]["duplicates_found"], 0);
  EXPECT_EQ(manifest["data"]["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_EQ(manifest["objectives"]["tflops"], "regression");
  EXPECT_EQ(manifest["objectives"]["latency"], "regression");
  // Early stopping used an inner split of each fold's training shapes: training, inner
  // validation and fold validation rows partition the data.
  const auto cv = nlohmann::json::parse(Slurp(Dir("m") + "/cv_metrics.json"));
  ASSERT_EQ(cv["folds"].size(), 4u);
  for (const auto& fold : cv["folds"]) {
    EXPECT_GT(fold["inner_valid_rows"].get<int64_t>(), 0);
    EXPECT_EQ(fold["train_rows"].get<int64_t>() + fold["inner_valid_rows"].get<int64_t>() +
                  fold["valid_rows"].get<int64_t>(),
              static_cast<int64_t>(data.rows.size()));
  }
  const auto importances = nlohmann::json::parse(Slurp(Dir("m") + "/feature_importances.json"));
  EXPECT_TRUE(importances["tflops"]["gain"].contains("wave_efficiency"));
}

TEST_F(ModelTest, RecoversTheFormulasBestConfigOnHeldOutShapes) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> used;
  const Dataset train = testing_util::SyntheticDataset(60, 11, &used);
  const Dataset held_out = testing_util::SyntheticDataset(20, 99, &used);  // unseen shapes
  TrainOptions options = FastOptions();
  options.folds = 0;  // no CV: the held-out set is the test
  ASSERT_TRUE(TrainModel(train, options, Dir("m")).ok());
  const auto model = Model::Load(Dir("m"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const CandidateSet test = BuildCandidateSet(held_out, std::nullopt).value();
  const auto summary = EvaluateModel(*model, test);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_GT(summary->model.mean, 0.95);
  EXPECT_GT(summary->model.p10, 0.85);
  EXPECT_GT(summary->model.mean, BestFixedConfigEfficiency(test) + 0.03);
  EXPECT_GT(summary->top5, 0.8);
  EXPECT_GT(summary->ndcg_at_10, 0.95);
  // The synthetic peer (largest tile first) is worse than the model.
  EXPECT_EQ(summary->peer_top1.count, summary->model.count);
  EXPECT_LT(summary->peer_top1.mean, summary->model.mean);
}

// The ranking objective, compared with regression on the same held-out shapes.
TEST_F(ModelTest, LambdarankSelectsWellAndComparesWithRegression) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> used;
  const Dataset train = testing_util::SyntheticDataset(60, 11, &used);
  const Dataset held_out = testing_util::SyntheticDataset(20, 99, &used);
  TrainOptions options = FastOptions();
  options.folds = 3;
  ASSERT_TRUE(TrainModel(train, options, Dir("regression")).ok());
  options.objective = Objective::kLambdarank;
  const auto ranked = TrainModel(train, options, Dir("rank"));
  ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
  EXPECT_TRUE(std::isnan(ranked->folds[0].rmse_label));  // grades, not TFLOPS
  EXPECT_GT(ranked->oof_efficiency.mean, 0.9);

  const Model regression = Model::Load(Dir("regression")).value();
  const Model rank = Model::Load(Dir("rank")).value();
  EXPECT_FALSE(regression.Ranks(Target::kTflops));
  EXPECT_TRUE(rank.Ranks(Target::kTflops));
  const CandidateSet test = BuildCandidateSet(held_out, std::nullopt).value();
  const EvalSummary reg_summary = EvaluateModel(regression, test).value();
  const EvalSummary rank_summary = EvaluateModel(rank, test).value();
  EXPECT_GT(rank_summary.model.mean, BestFixedConfigEfficiency(test) + 0.03);
  EXPECT_GT(rank_summary.model.mean, 0.9);
  const auto comparison = CompareSummaries(reg_summary, rank_summary);
  ASSERT_TRUE(comparison.ok());
  EXPECT_EQ(comparison->improved + comparison->same + comparison->degraded,
            static_cast<int64_t>(test.problems.size()));

  // A warm start must keep the objective.
  options.objective = Objective::kRegression;
  options.warm_start_dir = Dir("rank");
  const auto refused = TrainModel(train, options, Dir("mixed"));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "another objective"));
}

TEST(BlendScores, AveragesRankPercentilesWithTiesShared) {
  // Regression ranks c0 best; the ranker ranks c2 best and ties c0 with c1.
  const std::vector<double> regression = {9.0, 5.0, 7.0};
  const std::vector<double> ranker = {0.1, 0.1, 2.0};
  const std::vector<double> blended = BlendScores(regression, ranker, 0.3);
  ASSERT_EQ(blended.size(), 3u);
  EXPECT_DOUBLE_EQ(blended[0], 0.3 * 3 / 3 + 0.7 * 1.5 / 3);
  EXPECT_DOUBLE_EQ(blended[1], 0.3 * 1 / 3 + 0.7 * 1.5 / 3);
  EXPECT_DOUBLE_EQ(blended[2], 0.3 * 2 / 3 + 0.7 * 3 / 3);
  // Both members agreeing on the best gives it the top score, 1.
  EXPECT_DOUBLE_EQ(BlendScores(regression, regression, 0.3)[0], 1.0);
  EXPECT_TRUE(BlendScores({}, {}, 0.5).empty());
}

TEST(RelevanceGrade, FineNearTheBestCoarseBelow) {
  EXPECT_EQ(RelevanceGrade(100, 100), kMaxRelevanceGrade);
  EXPECT_EQ(RelevanceGrade(99.8, 100), 29);  // within the first 0.5 % step
  EXPECT_EQ(RelevanceGrade(99.5, 100), 29);
  EXPECT_EQ(RelevanceGrade(99.4, 100), 28);
  EXPECT_EQ(RelevanceGrade(95, 100), 20);
  EXPECT_EQ(RelevanceGrade(90, 100), 11);
  // Under 90 %: ten-point steps, never 0, so a 20 %-of-best config still ranks below a 50 % one.
  EXPECT_EQ(RelevanceGrade(89.9, 100), 9);
  EXPECT_EQ(RelevanceGrade(50, 100), 6);
  EXPECT_EQ(RelevanceGrade(20, 100), 3);
  EXPECT_EQ(RelevanceGrade(1, 100), 1);
  EXPECT_GT(RelevanceGrade(50, 100), RelevanceGrade(20, 100));
  // Faster than the best (an aborted row's estimate, never the oracle) counts as the best.
  EXPECT_EQ(RelevanceGrade(120, 100), kMaxRelevanceGrade);
  EXPECT_EQ(RelevanceGrade(1, 0), 1);
}

TEST_F(ModelTest, BlendTrainsBothMembersAndSelectsWithTheirAverage) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> used;
  const Dataset train = testing_util::SyntheticDataset(60, 11, &used);
  const Dataset held_out = testing_util::SyntheticDataset(20, 99, &used);
  TrainOptions options = FastOptions();
  options.folds = 3;
  options.objective = Objective::kBlend;
  const auto trained = TrainModel(train, options, Dir("blend"));
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  EXPECT_GT(trained->oof_efficiency.mean, 0.9);
  ASSERT_EQ(trained->model_files.size(), 2u);
  EXPECT_EQ(trained->model_files[1].first, kBlendRankerFile);
  const nlohmann::json cv = nlohmann::json::parse(Slurp(Dir("blend") + "/cv_metrics.json"));
  EXPECT_EQ(cv["objective"], "blend");
  ASSERT_EQ(cv["members"].size(), 2u);
  EXPECT_EQ(cv["members"][1]["objective"], "lambdarank");
  EXPECT_DOUBLE_EQ(cv["out_of_fold"]["efficiency"]["mean"].get<double>(),
                   trained->oof_efficiency.mean);

  const Model blend = Model::Load(Dir("blend")).value();
  ASSERT_TRUE(blend.Blends());
  EXPECT_TRUE(blend.Ranks(Target::kTflops));
  EXPECT_DOUBLE_EQ(blend.blend_regression_weight(), kBlendRegressionWeight);
  const CandidateSet test = BuildCandidateSet(held_out, std::nullopt).value();
  EXPECT_GT(EvaluateModel(blend, test).value().model.mean, BestFixedConfigEfficiency(test) + 0.03);
  // Scores are the members' blended rank percentiles; TFLOPS come from the regression member.
  const ProblemCandidates& p = test.problems.front();
  std::vector<KernelConfig> configs;
  for (const Candidate& c : p.candidates) configs.push_back(c.config);
  const std::vector<double> scores = blend.Predict(Target::kTflops, p.problem, configs).value();
  for (double v : scores) {
    EXPECT_GT(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
  const std::vector<double> tflops = blend.PredictTflops(p.problem, configs).value();
  EXPECT_GT(*std::max_element(tflops.begin(), tflops.end()), 1.0);  // TFLOPS, not percentiles

  // The two parts must come together, and a blend is never warm-started.
  fs::copy(Dir("blend"), Dir("broken"));
  fs::remove(Dir("broken") + "/" + kBlendRankerFile);
  const auto missing = Model::Load(Dir("broken"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), kBlendRankerFile));
  options.objective = Objective::kRegression;
  options.warm_start_dir = Dir("blend");
  const auto refused = TrainModel(train, options, Dir("warm"));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "warm-started"));
}

TEST_F(ModelTest, TrainingIsDeterministic) {
  const Dataset data = testing_util::SyntheticDataset(24, 3);
  TrainOptions options = FastOptions();
  options.folds = 3;
  ASSERT_TRUE(TrainModel(data, options, Dir("a")).ok());
  ASSERT_TRUE(TrainModel(data, options, Dir("b")).ok());
  EXPECT_EQ(Slurp(Dir("a") + "/model_tflops.lgbm.gz"), Slurp(Dir("b") + "/model_tflops.lgbm.gz"));
  EXPECT_EQ(Slurp(Dir("a") + "/cv_metrics.json"), Slurp(Dir("b") + "/cv_metrics.json"));
  const auto oof_a = ReadMaybeGzipFile(Dir("a") + "/" + kOofPredictionsFile);
  ASSERT_TRUE(oof_a.ok()) << oof_a.status().ToString();
  EXPECT_GT(oof_a->size(), 100u);
  EXPECT_EQ(*oof_a, ReadMaybeGzipFile(Dir("b") + "/" + kOofPredictionsFile).value());
}

TEST_F(ModelTest, HardExampleMiningReweightsHardProblemsAndSaysSo) {
  const Dataset data = testing_util::SyntheticDataset(24, 3);
  TrainOptions options = FastOptions();
  options.folds = 3;
  options.max_rounds = 20;  // an underfit first pass leaves hard problems to find
  options.hard_mining_factor = 4;
  options.hard_mining_threshold = 0.999;
  const auto mined = TrainModel(data, options, Dir("mined"));
  ASSERT_TRUE(mined.ok()) << mined.status().ToString();
  const auto manifest = nlohmann::json::parse(Slurp(Dir("mined") + "/train_manifest.json"));
  const auto& hard = manifest["options"]["hard_mining"];
  EXPECT_EQ(hard["factor"], 4.0);
  EXPECT_GT(hard["problems_upweighted_over_all_fits"].get<int64_t>(), 0);
  // The reweighted refit is a different model from the plain one.
  options.hard_mining_factor = 1;
  ASSERT_TRUE(TrainModel(data, options, Dir("plain")).ok());
  EXPECT_NE(Slurp(Dir("mined") + "/model_tflops.lgbm.gz"),
            Slurp(Dir("plain") + "/model_tflops.lgbm.gz"));
  const auto plain = nlohmann::json::parse(Slurp(Dir("plain") + "/train_manifest.json"));
  EXPECT_EQ(plain["options"]["hard_mining"]["problems_upweighted_over_all_fits"], 0);
}

TEST_F(ModelTest, RowSamplingTrainsOnFewerRowsKeepsEveryCandidateAndSaysSo) {
  CandidateSet data =
      BuildCandidateSet(testing_util::SyntheticDataset(24, 3), std::nullopt).value();
  size_t rows = 0;
  for (const ProblemCandidates& p : data.problems) rows += p.candidates.size();
  TrainOptions options = FastOptions();
  options.folds = 0;
  options.objective = Objective::kLambdarank;
  options.peer_rank_feature = true;
  ASSERT_TRUE(TrainModelOnCandidates(data, options, Dir("all")).ok());
  options.sampling.keep_within = 0.95;
  options.sampling.weak_fraction = 0.2;
  options.sampling.aborted_fraction = 0.2;
  const auto sampled = TrainModelOnCandidates(data, options, Dir("sampled"));
  ASSERT_TRUE(sampled.ok()) << sampled.status().ToString();
  ASSERT_TRUE(sampled->sampling.has_value());
  EXPECT_LT(sampled->rows, static_cast<int64_t>(rows) * 6 / 10);
  EXPECT_EQ(sampled->sampling->rows_before, static_cast<int64_t>(rows));
  EXPECT_EQ(sampled->sampling->rows_after, sampled->rows);
  const auto manifest = nlohmann::json::parse(Slurp(Dir("sampled") + "/train_manifest.json"));
  const auto& block = manifest["row_sampling"];
  EXPECT_EQ(block["weak_fraction"], 0.2);
  EXPECT_EQ(block["keep_within"], 0.95);
  EXPECT_EQ(block["seed"], 42);
  EXPECT_EQ(block["rows_after"], sampled->rows);
  EXPECT_EQ(manifest["data"]["rows_used"], static_cast<int64_t>(rows));
  EXPECT_TRUE(
      nlohmann::json::parse(Slurp(Dir("all") + "/train_manifest.json"))["row_sampling"].is_null());
  // The selector's candidates are every config of the data, sampled or not.
  EXPECT_EQ(ReadMaybeGzipFile(Dir("sampled") + "/candidates.json.gz").value(),
            ReadMaybeGzipFile(Dir("all") + "/candidates.json.gz").value());
  // Deterministic under the seed; another seed draws other rows.
  ASSERT_TRUE(TrainModelOnCandidates(data, options, Dir("again")).ok());
  EXPECT_EQ(Slurp(Dir("sampled") + "/model_tflops.lgbm.gz"),
            Slurp(Dir("again") + "/model_tflops.lgbm.gz"));
  options.seed = 43;
  const auto reseeded = TrainModelOnCandidates(data, options, Dir("reseeded"));
  ASSERT_TRUE(reseeded.ok());
  EXPECT_NE(Slurp(Dir("sampled") + "/model_tflops.lgbm.gz"),
            Slurp(Dir("reseeded") + "/model_tflops.lgbm.gz"));
  // Selection stays good on every row of the data.
  const auto model = Model::Load(Dir("sampled"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  // ... with its progress: every problem counted once, in order, up to the total.
  std::vector<ProgressCount> reports;
  const auto scores = PredictCandidateSet(*model, data, Target::kTflops,
                                          [&](const ProgressCount& p) { reports.push_back(p); });
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  ASSERT_EQ(reports.size(), data.problems.size());
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].done, static_cast<int64_t>(i + 1));
    EXPECT_EQ(reports[i].total, static_cast<int64_t>(data.problems.size()));
    EXPECT_EQ(reports[i].unit, "problems");
  }
  double sum = 0;
  for (size_t i = 0; i < data.problems.size(); ++i) {
    sum += EvaluateProblem(data.problems[i], (*scores)[i]).efficiency;
  }
  EXPECT_GT(sum / data.problems.size(), 0.95);
}

TEST_F(ModelTest, DuplicatedRowsAreRefused) {
  Dataset data = testing_util::SyntheticDataset(12, 5);
  const size_t n = data.rows.size();
  for (size_t i = 0; i < n; ++i) data.rows.push_back(data.rows[i]);  // a copied dataset
  const auto result = TrainModel(data, FastOptions(), Dir("m"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(result.status().message(), std::to_string(n) + " duplicated"));
  EXPECT_FALSE(fs::exists(Dir("m") + "/model_tflops.lgbm.gz"));
}

TEST_F(ModelTest, MixedHardwareIsRefused) {
  Dataset data = testing_util::SyntheticDataset(12, 5);
  data.rows.back().sm_count = 114;
  const auto result = TrainModel(data, FastOptions(), Dir("m"));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Contains(result.status().message(), "mixes hardware"));
}

TEST_F(ModelTest, CorruptOrMismatchedModelFilesGiveClearErrors) {
  ASSERT_TRUE(TrainModel(testing_util::SyntheticDataset(12, 5), FastOptions(), Dir("m")).ok());
  ASSERT_TRUE(Model::Load(Dir("m")).ok());

  // A corrupt model file.
  fs::copy(Dir("m"), Dir("corrupt"));
  std::ofstream(Dir("corrupt") + "/model_tflops.lgbm.gz", std::ios::trunc) << "tree\nnot a model\n";
  auto loaded = Model::Load(Dir("corrupt"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(loaded.status().message(), "model_tflops.lgbm"));

  // A spec whose features are reordered no longer matches the model's own feature names.
  fs::copy(Dir("m"), Dir("reordered"));
  auto spec = nlohmann::json::parse(Slurp(Dir("m") + "/feature_spec.json"));
  std::swap(spec["features"][0], spec["features"][1]);
  std::ofstream(Dir("reordered") + "/feature_spec.json", std::ios::trunc) << spec.dump();
  loaded = Model::Load(Dir("reordered"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kSchemaMismatch);

  // A spec from a future encoding version.
  fs::copy(Dir("m"), Dir("future"));
  spec = nlohmann::json::parse(Slurp(Dir("m") + "/feature_spec.json"));
  spec["encoding_version"] = kFeatureEncodingVersion + 1;
  std::ofstream(Dir("future") + "/feature_spec.json", std::ios::trunc) << spec.dump();
  loaded = Model::Load(Dir("future"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(Contains(loaded.status().message(), "encoding version"));

  // Missing directory and missing spec.
  EXPECT_EQ(Model::Load(Dir("nowhere")).status().code(), StatusCode::kNotFound);
  fs::create_directories(Dir("empty"));
  EXPECT_EQ(Model::Load(Dir("empty")).status().code(), StatusCode::kNotFound);
}

TEST_F(ModelTest, EvaluationOnOtherHardwareIsRefused) {
  ASSERT_TRUE(TrainModel(testing_util::SyntheticDataset(12, 5), FastOptions(), Dir("m")).ok());
  Dataset other = testing_util::SyntheticDataset(6, 8);
  for (DatasetRow& row : other.rows) row.peak_mem_bandwidth_gb_s = 3352;  // an H100
  const auto model = Model::Load(Dir("m")).value();
  const auto result = EvaluateModel(model, BuildCandidateSet(other, std::nullopt).value());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(result.status().message(), "mem_bandwidth_gb_s"));
}

TEST_F(ModelTest, WarmStartAddsTreesAndRefusesAMismatchedSpec) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> used;
  const Dataset first = testing_util::SyntheticDataset(20, 21, &used);
  const Dataset more = testing_util::SyntheticDataset(20, 22, &used);
  TrainOptions options = FastOptions();
  options.folds = 0;
  const auto base = TrainModel(first, options, Dir("base"));
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  const int base_trees = base->rounds.front().second;

  options.warm_start_dir = Dir("base");
  options.warm_start_rounds = 50;
  const auto warm = TrainModel(more, options, Dir("warm"));
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  const int warm_trees = warm->rounds.front().second;
  EXPECT_GT(warm_trees, base_trees);
  EXPECT_LE(warm_trees, base_trees + 50);
  // The merged model still predicts well on the new shapes it was updated with.
  const auto model = Model::Load(Dir("warm")).value();
  EXPECT_GT(EvaluateModel(model, BuildCandidateSet(more, std::nullopt).value())->model.mean, 0.9);

  // Data of another device gives another spec: refused.
  Dataset h100 = testing_util::SyntheticDataset(8, 23, &used);
  for (DatasetRow& row : h100.rows) row.sm_count = 114;
  const auto refused = TrainModel(h100, options, Dir("refused"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(refused.status().message(), "sm_count"));
}

// Both label transforms predict TFLOPS in TFLOPS: the manifest says which one a model used and
// Model::Load inverts that one; a manifest naming an unknown transform is refused, and so is a
// warm start on the other transform.
TEST_F(ModelTest, LabelTransformRoundTripsThroughTheManifest) {
  const Dataset data = testing_util::SyntheticDataset(16, 31);
  const CandidateSet set = BuildCandidateSet(data, std::nullopt).value();
  TrainOptions options = FastOptions();
  options.folds = 0;
  for (LabelTransform transform : {LabelTransform::kLog, LabelTransform::kLog1p}) {
    const std::string dir = Dir(std::string(LabelTransformName(transform)));
    options.label_transform = transform;
    ASSERT_TRUE(TrainModel(data, options, dir).ok());
    const auto manifest = nlohmann::json::parse(Slurp(dir + "/train_manifest.json"));
    EXPECT_EQ(manifest["target_transform"],
              std::string(LabelTransformName(transform)) + " (regression models)");
    const auto model = Model::Load(dir);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ(model->label_transform(), transform);
    // In-sample predictions in TFLOPS: the median ratio to the measured value near 1.
    const auto predicted = PredictCandidateSet(*model, set, Target::kTflops).value();
    std::vector<double> ratios;
    for (size_t p = 0; p < set.problems.size(); ++p) {
      for (size_t c = 0; c < set.problems[p].candidates.size(); ++c) {
        ratios.push_back(predicted[p][c] / set.problems[p].candidates[c].tflops);
      }
    }
    std::sort(ratios.begin(), ratios.end());
    EXPECT_NEAR(ratios[ratios.size() / 2], 1.0, 0.2) << LabelTransformName(transform);
  }
  TrainOptions warm = options;  // log1p now
  warm.label_transform = LabelTransform::kLog;
  warm.warm_start_dir = Dir("log1p");
  const auto refused = TrainModel(data, warm, Dir("warm"));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "trained on log1p labels"))
      << refused.status().ToString();

  std::ofstream(Dir("log") + "/train_manifest.json") << R"({"target_transform": "sqrt"})";
  const auto bad = Model::Load(Dir("log"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "unknown label transform 'sqrt'"));
}

// The real CK Tile log format end to end: ingest the fixture, train, load, rank.
// A dataset whose speeds carry a per-(problem, config) factor no feature can see, and whose peer
// lists its true top 4 (what a vendor heuristic with knowledge the features lack looks like).
Dataset WithInformedPeer(Dataset data) {
  std::map<std::string, std::vector<DatasetRow*>> by_problem;
  for (DatasetRow& row : data.rows) {
    const size_t h = std::hash<std::string>{}(*row.problem_key + "|" + *row.config_key);
    const double hidden = 0.75 + 0.25 * static_cast<double>(h % 1000) / 999.0;
    *row.measured_tflops *= hidden;
    *row.latency_ms /= hidden;
    *row.bandwidth_gb_s *= hidden;
    row.peer_rank.reset();
    by_problem[*row.problem_key].push_back(&row);
  }
  for (auto& [key, rows] : by_problem) {
    std::sort(rows.begin(), rows.end(), [](const DatasetRow* a, const DatasetRow* b) {
      return *a->measured_tflops > *b->measured_tflops;
    });
    for (size_t r = 0; r < std::min<size_t>(4, rows.size()); ++r) rows[r]->peer_rank = r + 1;
  }
  return data;
}

TEST_F(ModelTest, PeerRankFeatureUsesTheHeuristicsKnowledge) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> used;
  const Dataset train = WithInformedPeer(testing_util::SyntheticDataset(60, 11, &used));
  const Dataset held_out = WithInformedPeer(testing_util::SyntheticDataset(20, 99, &used));
  TrainOptions options = FastOptions();
  options.folds = 0;
  ASSERT_TRUE(TrainModel(train, options, Dir("plain")).ok());
  options.peer_rank_feature = true;
  const auto trained = TrainModel(train, options, Dir("peer"));
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  EXPECT_TRUE(SpecUsesPeerRanks(trained->spec));
  EXPECT_TRUE(Contains(Slurp(Dir("peer") + "/train_manifest.json"), "\"peer_rank_feature\": true"));

  const Model plain = Model::Load(Dir("plain")).value();
  const Model peer = Model::Load(Dir("peer")).value();
  EXPECT_FALSE(plain.UsesPeerRanks());
  ASSERT_TRUE(peer.UsesPeerRanks());
  const CandidateSet test = BuildCandidateSet(held_out, std::nullopt).value();
  const EvalSummary plain_summary = EvaluateModel(plain, test).value();
  const EvalSummary peer_summary = EvaluateModel(peer, test).value();
  // The hidden factor costs the plain model; the peer's list gives most of it back.
  EXPECT_GT(peer_summary.model.mean, plain_summary.model.mean + 0.02);

  // Without the ranks the peer model refuses to guess.
  const ProblemCandidates& p = test.problems.front();
  std::vector<KernelConfig> configs;
  for (const Candidate& c : p.candidates) configs.push_back(c.config);
  const auto refused = peer.Predict(Target::kTflops, p.problem, configs);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(refused.status().message(), "--peer-rank"));
  const std::vector<PeerPick> bad_rank = {{configs.front(), -1}};
  EXPECT_FALSE(peer.Predict(Target::kTflops, p.problem, configs, bad_rank).ok());
  EXPECT_TRUE(peer.Predict(Target::kTflops, p.problem, configs, PeerPicksOf(p)).ok());

  // Data without any peer rows cannot train the feature.
  Dataset no_peer = train;
  for (DatasetRow& row : no_peer.rows) row.peer_rank.reset();
  const auto no_ranks = TrainModel(no_peer, options, Dir("none"));
  ASSERT_FALSE(no_ranks.ok());
  EXPECT_TRUE(Contains(no_ranks.status().message(), "no peer_rank rows"));
}

// The rows of an ingested fixture file, as `kselect ingest` would write them.
Dataset IngestedFixture(std::string_view folder, std::string_view name, InputFormat format,
                        const IngestOptions& options = {}) {
  const auto ingested = IngestFile(testing_util::FixturePath(folder, name), format, options);
  EXPECT_TRUE(ingested.ok()) << ingested.status().ToString();
  Dataset data;
  if (!ingested.ok()) return data;
  for (const Measurement& m : ingested->measurements) {
    data.rows.push_back(RowFromMeasurement(m, ingested->runs.front()));
  }
  return data;
}

TEST_F(ModelTest, TrainsOnIngestedCkTileFixtureRows) {
  IngestOptions ingest;
  ingest.arch = "gfx950";
  ingest.device_kind = "mi355x";
  const Dataset data = IngestedFixture("ck", "tile_good.log", InputFormat::kCkTileLog, ingest);
  ASSERT_FALSE(data.rows.empty());
  TrainOptions options = FastOptions();
  options.folds = 2;  // the fixture has two shapes
  options.params.min_data_in_leaf = 1;
  const auto result = TrainModel(data, options, Dir("ck"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->spec.provider, Provider::kCkTile);
  EXPECT_EQ(result->spec.hardware.arch, "gfx950");
  EXPECT_EQ(result->shapes, 2);
  const auto model = Model::Load(Dir("ck"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const auto summary = EvaluateModel(*model, BuildCandidateSet(data, std::nullopt).value());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->model.count, 2);
}

// cudnn_conv_fwd.jsonl: 24 forward problems x 4 cuDNN engine configs; engine 2 (knobs 14=3,
// 3=1) is twice as fast as any other on every problem (tests/cli/cases/conv_model.test).
TEST_F(ModelTest, ConvModelRanksTheClearlyFasterEngineConfigFirst) {
  const Dataset data =
      IngestedFixture("kselect", "cudnn_conv_fwd.jsonl", InputFormat::kKselectJsonl);
  TrainOptions options = FastOptions();
  options.folds = 3;
  const auto result = TrainModel(data, options, Dir("conv"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->spec.extractor, "conv");
  EXPECT_EQ(result->spec.provider, Provider::kCudnn);
  EXPECT_EQ(result->spec.conv_direction, ConvDirection::kForward);
  EXPECT_EQ(SpecKnobTypes(result->spec), (std::vector<int32_t>{0, 3, 14}));
  EXPECT_EQ(result->problems, 24);
  // Held out (every problem scored by a fold model that never saw its shape): always engine 2.
  EXPECT_DOUBLE_EQ(result->oof_efficiency.min, 1.0);

  const auto model = Model::Load(Dir("conv"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  // A layer the data never measured (5x5, 4 groups), and the fast engine with a knob the
  // training never saw (99: no column, ignored).
  ConvProblem unseen;
  unseen.n = 8;
  unseen.c = unseen.k = 192;
  unseen.g = 4;
  unseen.hi = unseen.wi = 35;
  unseen.y = unseen.x = 5;
  unseen.pad_h = unseen.pad_w = 2;
  const std::vector<KernelConfig> configs = {
      CudnnConfig{.engine_id = 0, .knobs = {{0, 1}, {3, 0}}},
      CudnnConfig{.engine_id = 1, .knobs = {{0, 2}}},
      CudnnConfig{.engine_id = 2, .knobs = {{14, 3}, {3, 1}, {99, 7}}},
      CudnnConfig{.engine_id = 5}};
  const auto scores = model->Predict(Target::kTflops, unseen, configs);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  EXPECT_EQ(std::max_element(scores->begin(), scores->end()) - scores->begin(), 2);

  // One model per direction: backward-data problems are refused with the reason.
  unseen.direction = ConvDirection::kBackwardData;
  const auto refused = model->Predict(Target::kTflops, unseen, configs);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "one model per direction"));

  // A warm start keeps the model's knob columns, so its trees still line up.
  Dataset more = data;
  for (DatasetRow& row : more.rows) {
    if (row.cudnn_knobs && *row.cudnn_knobs == "[]") row.cudnn_knobs = "[[21,1]]";
  }
  options.warm_start_dir = Dir("conv");
  options.warm_start_rounds = 5;
  const auto warm = TrainModel(more, options, Dir("warm"));
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  EXPECT_EQ(SpecKnobTypes(warm->spec), (std::vector<int32_t>{0, 3, 14}));
}

TEST_F(ModelTest, ConvTrainingRefusesMixedDirections) {
  Dataset data = IngestedFixture("kselect", "cudnn_conv_fwd.jsonl", InputFormat::kKselectJsonl);
  const Dataset bwd =
      IngestedFixture("kselect", "cudnn_conv_bwd_data.jsonl", InputFormat::kKselectJsonl);
  data.rows.insert(data.rows.end(), bwd.rows.begin(), bwd.rows.end());
  const auto result = TrainModel(data, FastOptions(), Dir("mixed"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(result.status().message(), "mixes convolution directions"));
  EXPECT_FALSE(fs::exists(Dir("mixed") + "/feature_spec.json"));
}

}  // namespace
}  // namespace kselect

#endif  // KSELECT_WITH_LIGHTGBM
