// CK Tile model directories (foreign_model.h): the hand-checked fixture (tests/fixtures/ck_model,
// its README gives each expected value), the spec reader's refusals, bad model directories, CSV
// rows; with LightGBM, a model LightGBM trains and predicts, read back as CK would write it.
#include "kselect/foreign_model.h"

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/tree_ensemble.h"
#include "testing_util.h"

#ifdef KSELECT_WITH_LIGHTGBM
#include <LightGBM/c_api.h>
#endif

namespace kselect {
namespace {

namespace fs = std::filesystem;
using testing_util::Contains;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::string FixtureDir() {
  return (fs::path(KSELECT_FIXTURE_DIR) / "ck_model").string();
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void WriteGzip(const fs::path& path, const std::string& text) {
  gzFile file = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(file);
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// A copy of the fixture directory per test, removed afterwards.
class ForeignModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kselect_foreign_model_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(FixtureDir(), dir_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Dir() const { return dir_.string(); }
  fs::path File(const std::string& name) const { return dir_ / name; }
  std::string Spec() const { return testing_util::ReadAll(File("feature_spec.json").string()); }
  std::string TflopsModel() const {
    return testing_util::ReadAll(File("model_tflops.lgbm").string());
  }

  // The load's failure: its code, and a message holding each of `needles`.
  void ExpectLoadFails(StatusCode code, const std::vector<std::string>& needles) const {
    const StatusOr<ForeignModel> model = LoadCkTileModel(Dir());
    ASSERT_FALSE(model.ok()) << "loaded; expected " << needles.front();
    EXPECT_EQ(model.status().code(), code) << model.status().ToString();
    for (const std::string& n : needles) EXPECT_TRUE(Contains(model.status().message(), n));
  }

 private:
  fs::path dir_;
};

TEST_F(ForeignModelTest, FixturePredictsTheHandCheckedValues) {
  const ForeignModel model = LoadCkTileModel(Dir()).value();
  EXPECT_EQ(model.feature_names(), (std::vector<std::string>{"M", "N", "K", "pipeline", "tile_m"}));
  EXPECT_EQ(model.spec().categorical_features, std::vector<std::string>{"pipeline"});
  EXPECT_EQ(model.spec().arch, "gfx950");
  EXPECT_TRUE(model.Has(Target::kTflops));
  EXPECT_TRUE(model.Has(Target::kLatency));  // from model_latency.lgbm.gz
  EXPECT_FALSE(model.Has(Target::kBandwidth));
  EXPECT_TRUE(model.LogTarget(Target::kTflops));
  EXPECT_FALSE(model.LogTarget(Target::kLatency));
  EXPECT_TRUE(model.LogTarget(Target::kBandwidth));

  // The README's rows a, b, c, d in the spec's order (M, N, K, pipeline, tile_m).
  const std::vector<double> rows = {512, 4096, 1024, 1, 64,  2048, 4096, 8192, 1, 256,
                                    512, 1024, 4096, 0, 128, kNan, 512,  2048, 3, kNan};
  const std::vector<double> tflops = model.Predict(Target::kTflops, rows, 4).value();
  EXPECT_EQ(tflops, (std::vector<double>{std::expm1(2.5), std::expm1(3.75), std::expm1(3.5),
                                         std::expm1(2.5)}));
  EXPECT_EQ(tflops[0], 11.182493960703473);  // the README's figure
  // Latency is no log target: raw, with the negative prediction clamped at 0.
  EXPECT_EQ(model.Predict(Target::kLatency, rows, 4).value(),
            (std::vector<double>{0.1, 0.0, 0.1, 0.1}));
  const StatusOr<std::vector<double>> bandwidth = model.Predict(Target::kBandwidth, rows, 4);
  ASSERT_FALSE(bandwidth.ok());
  EXPECT_EQ(bandwidth.status().code(), StatusCode::kNotFound);

  // By name, in any order, extra names ignored; a missing one refused by name.
  std::map<std::string, double> row = {{"tile_m", 64}, {"pipeline", 1}, {"K", 1024},
                                       {"N", 4096},    {"M", 512},      {"kernel", 7}};
  EXPECT_EQ(model.Predict(Target::kTflops, row).value(), std::expm1(2.5));
  row.erase("pipeline");
  const StatusOr<double> missing = model.Predict(Target::kTflops, row);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "'pipeline'"));

  // The CSV fixture reads as the same rows (NaN for empty cells).
  size_t num_rows = 0;
  const std::vector<double> csv =
      model
          .RowsFromCsv(testing_util::ReadAll((fs::path(FixtureDir()) / "rows.csv").string()),
                       "rows.csv", &num_rows)
          .value();
  ASSERT_EQ(num_rows, 4u);
  EXPECT_EQ(model.Predict(Target::kTflops, csv, num_rows).value(), tflops);
}

TEST_F(ForeignModelTest, AgreesWithTheReferenceEvaluator) {
  const ForeignModel model = LoadCkTileModel(Dir()).value();
  const TreeEnsemble trees = TreeEnsemble::FromLightGbmText(TflopsModel(), "tflops").value();
  std::mt19937_64 rng(5);
  const double values[] = {kNan, 0, -1, 1, 3, 4, 64, 128, 129, 512, 1024, 1025, 1e9, -0.5};
  std::vector<double> rows;
  for (int i = 0; i < 5000; ++i) rows.push_back(values[rng() % std::size(values)]);
  std::vector<double> raw(1000);
  trees.Predict(rows.data(), 1000, raw.data());
  const std::vector<double> predicted = model.Predict(Target::kTflops, rows, 1000).value();
  for (size_t i = 0; i < raw.size(); ++i) EXPECT_EQ(predicted[i], std::expm1(raw[i])) << i;
}

TEST_F(ForeignModelTest, RefusesMissingAndUnreadableFiles) {
  EXPECT_EQ(LoadCkTileModel(Dir() + "/nowhere").status().code(), StatusCode::kNotFound);
  fs::remove(File("feature_spec.json"));
  ExpectLoadFails(StatusCode::kNotFound, {"feature_spec.json", "missing"});
  fs::copy_file(fs::path(FixtureDir()) / "feature_spec.json", File("feature_spec.json"));

  // Truncated model text: the parser names the file and what is missing.
  const std::string tflops = TflopsModel();
  WriteText(File("model_tflops.lgbm"), tflops.substr(0, tflops.find("Tree=1") + 20));
  ExpectLoadFails(StatusCode::kParseError, {"model_tflops.lgbm", "Tree=1"});
  WriteText(File("model_tflops.lgbm"), tflops.substr(0, 40));
  ExpectLoadFails(StatusCode::kParseError, {"model_tflops.lgbm"});
  WriteText(File("model_tflops.lgbm"), tflops);

  // A gzip file cut short.
  const std::string gz = testing_util::ReadAll(File("model_latency.lgbm.gz").string());
  WriteText(File("model_latency.lgbm.gz"), gz.substr(0, gz.size() / 2));
  ExpectLoadFails(StatusCode::kIoError, {"model_latency.lgbm.gz", "truncated"});

  // No model at all.
  fs::remove(File("model_latency.lgbm.gz"));
  fs::remove(File("model_tflops.lgbm"));
  ExpectLoadFails(StatusCode::kNotFound, {"no model_tflops.lgbm"});

  // The gzipped form of a model is read as well as the plain one.
  WriteGzip(File("model_tflops.lgbm.gz"), tflops);
  const ForeignModel model = LoadCkTileModel(Dir()).value();
  EXPECT_TRUE(model.Has(Target::kTflops));
  EXPECT_FALSE(model.Has(Target::kLatency));
}

TEST_F(ForeignModelTest, RefusesAFeatureListThatIsNotTheModels) {
  const std::string spec = Spec();
  WriteText(File("feature_spec.json"), Replace(spec, R"(["M", "N", "K", "pipeline", "tile_m"])",
                                               R"(["M", "K", "N", "pipeline", "tile_m"])"));
  ExpectLoadFails(StatusCode::kSchemaMismatch,
                  {"model_tflops.lgbm", "feature 1 is 'N' in the model but 'K' in feature_spec"});
  WriteText(File("feature_spec.json"),
            Replace(spec, R"(["M", "N", "K", "pipeline", "tile_m"])",
                    R"(["M", "N", "K", "pipeline", "tile_m", "tile_n"])"));
  ExpectLoadFails(StatusCode::kSchemaMismatch, {"reads 5 features", "lists 6"});
  WriteText(File("feature_spec.json"), Replace(spec, R"("categorical_features": ["pipeline"])",
                                               R"("categorical_features": [])"));
  ExpectLoadFails(StatusCode::kSchemaMismatch, {"splits 'pipeline' as a category"});

  // A model trained without names (LightGBM's Column_<i>) follows the spec by position.
  WriteText(File("feature_spec.json"), spec);
  for (const char* model : {"model_tflops.lgbm"}) {
    WriteText(File(model), Replace(TflopsModel(), "feature_names=M N K pipeline tile_m",
                                   "feature_names=Column_0 Column_1 Column_2 Column_3 Column_4"));
  }
  fs::remove(File("model_latency.lgbm.gz"));
  EXPECT_TRUE(LoadCkTileModel(Dir()).ok());
  WriteText(File("model_tflops.lgbm"),
            Replace(TflopsModel(), "feature_names=Column_0 Column_1 Column_2 Column_3 Column_4",
                    "feature_names=Column_0 Column_1 Column_3 Column_2 Column_4"));
  ExpectLoadFails(StatusCode::kSchemaMismatch, {"feature 0 is 'Column_0' in the model but 'M'"});
}

TEST(CkTileSpecTest, ReadsWhatInferenceNeedsAndRefusesTheRest) {
  const auto read = [](const std::string& text) { return CkTileSpecFromJson(text, "spec.json"); };
  const CkTileSpec spec = read(R"({"feature_names": ["a", "b"], "categorical_features": ["b"],
               "log_targets": ["tflops"], "params": {"x": 1}, "unknown_key": [1, 2]})")
                              .value();
  EXPECT_EQ(spec.feature_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(spec.log_targets, std::set<Target>{Target::kTflops});
  // tflops_log_transform alone says whether TFLOPS is a log target.
  EXPECT_EQ(read(R"({"feature_names": ["a"], "tflops_log_transform": true})")->log_targets,
            std::set<Target>{Target::kTflops});
  EXPECT_TRUE(
      read(R"({"feature_names": ["a"], "tflops_log_transform": false})")->log_targets.empty());

  struct Bad {
    const char* text;
    StatusCode code;
    const char* needle;
  };
  const Bad bad[] = {
      {"{", StatusCode::kParseError, "not valid JSON"},
      {"[1]", StatusCode::kParseError, "not a JSON object"},
      {R"({"names": ["a"]})", StatusCode::kSchemaMismatch, "no feature_names"},
      {R"({"feature_names": []})", StatusCode::kSchemaMismatch, "feature_names is empty"},
      {R"({"feature_names": "a"})", StatusCode::kParseError, "feature_names is not a list"},
      {R"({"feature_names": ["a", 1]})", StatusCode::kParseError, "feature_names is not a list"},
      {R"({"feature_names": ["a", "b", "a"]})", StatusCode::kSchemaMismatch, "'a' twice"},
      {R"({"feature_names": ["a"], "categorical_features": ["b"]})", StatusCode::kSchemaMismatch,
       "categorical feature 'b' is not in feature_names"},
      {R"({"feature_names": ["a"], "log_targets": ["speed"]})", StatusCode::kSchemaMismatch,
       "log_targets names 'speed'"},
      {R"({"feature_names": ["a"], "log_targets": ["tflops"], "tflops_log_transform": false})",
       StatusCode::kSchemaMismatch, "tflops_log_transform is false but log_targets lists tflops"},
      {R"({"feature_names": ["a"], "tflops_log_transform": "yes"})", StatusCode::kParseError,
       "tflops_log_transform is not a boolean"},
      {R"({"feature_names": ["a"], "arch": 950})", StatusCode::kParseError, "arch is not a string"},
  };
  for (const Bad& b : bad) {
    const StatusOr<CkTileSpec> s = read(b.text);
    ASSERT_FALSE(s.ok()) << b.text;
    EXPECT_EQ(s.status().code(), b.code) << b.text << ": " << s.status().ToString();
    EXPECT_TRUE(Contains(s.status().message(), b.needle)) << b.text;
    EXPECT_TRUE(Contains(s.status().message(), "spec.json")) << b.text;
  }
}

TEST_F(ForeignModelTest, CsvRowsNeedEveryFeatureAndNumbers) {
  const ForeignModel model = LoadCkTileModel(Dir()).value();
  size_t rows = 0;
  const auto csv = [&](const std::string& text) { return model.RowsFromCsv(text, "t.csv", &rows); };
  const std::vector<double> read =
      csv("M,N,K,pipeline,tile_m\n1,2,3,4,5\n\n6,7,8,nan,\r\n").value();
  EXPECT_EQ(rows, 2u);
  ASSERT_EQ(read.size(), 10u);
  EXPECT_EQ(std::vector<double>(read.begin(), read.begin() + 8),
            (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(std::isnan(read[8]) && std::isnan(read[9]));
  struct Bad {
    const char* text;
    const char* needle;
  };
  const Bad bad[] = {
      {"", "empty"},
      {"M,N,K,pipeline\n1,2,3,4\n", "no column for feature 'tile_m'"},
      {"M,N,K,pipeline,tile_m,M\n1,2,3,4,5,6\n", "two columns are named 'M'"},
      {"M,N,K,pipeline,tile_m\n1,2,3,4\n", "t.csv:2: 4 fields, the header has 5"},
      {"M,N,K,pipeline,tile_m\n1,2,x,4,5\n", "column 'K'"},
  };
  for (const Bad& b : bad) {
    const auto r = csv(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_TRUE(Contains(r.status().message(), b.needle)) << r.status().ToString();
  }
}

#ifdef KSELECT_WITH_LIGHTGBM

// LightGBM reads the hand-written fixture as kselect does.
TEST_F(ForeignModelTest, FixtureIsAModelLightGbmReadsAlike) {
  BoosterHandle booster = nullptr;
  int iterations = 0;
  ASSERT_EQ(LGBM_BoosterLoadModelFromString(TflopsModel().c_str(), &iterations, &booster), 0)
      << LGBM_GetLastError();
  const std::vector<double> rows = {512, 4096, 1024, 1, 64,  2048, 4096, 8192, 1, 256,
                                    512, 1024, 4096, 0, 128, kNan, 512,  2048, 3, kNan};
  std::vector<double> raw(4);
  int64_t len = 0;
  ASSERT_EQ(
      LGBM_BoosterPredictForMat(booster, rows.data(), C_API_DTYPE_FLOAT64, 4, 5, 1,
                                C_API_PREDICT_NORMAL, 0, -1, "num_threads=1", &len, raw.data()),
      0)
      << LGBM_GetLastError();
  LGBM_BoosterFree(booster);
  EXPECT_EQ(raw, (std::vector<double>{2.5, 3.75, 3.5, 2.5}));
}

// A model trained by LightGBM the way CK's train.py trains one (regression on log1p, a categorical
// column passed by index, feature names set), written as CK writes it (plain and gzipped),
// predicts through LoadCkTileModel what LightGBM predicts, expm1-ed.
TEST_F(ForeignModelTest, LightGbmTrainedModelPredictsAsLightGbm) {
  const std::vector<std::string> names = {"M", "N", "K", "pipeline", "tile_m", "tile_n"};
  const int32_t cols = static_cast<int32_t>(names.size());
  const int32_t n = 3000;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> x;
  std::vector<float> label;
  for (int32_t i = 0; i < n; ++i) {
    const double m = std::exp2(4 + 10 * unit(rng)), nn = std::exp2(6 + 8 * unit(rng));
    const double k = std::exp2(6 + 8 * unit(rng));
    const double pipeline = double(rng() % 5), tile_m = 64.0 * double(1 + rng() % 4);
    const double tile_n = 64.0 * double(1 + rng() % 4);
    const double tflops = 1e-3 * std::pow(m * nn * k, 1.0 / 3) * (pipeline == 2 ? 1.5 : 1.0) *
                          (tile_m > m ? 0.5 : 1.0) * (0.9 + 0.2 * unit(rng));
    x.insert(x.end(), {unit(rng) < 0.02 ? kNan : m, nn, k, pipeline, tile_m, tile_n});
    label.push_back(static_cast<float>(std::log1p(tflops)));
  }
  DatasetHandle data = nullptr;
  ASSERT_EQ(LGBM_DatasetCreateFromMat(x.data(), C_API_DTYPE_FLOAT64, n, cols, 1,
                                      "categorical_feature=3 min_data_in_leaf=5 verbose=-1",
                                      nullptr, &data),
            0)
      << LGBM_GetLastError();
  std::vector<const char*> name_ptrs;
  for (const std::string& s : names) name_ptrs.push_back(s.c_str());
  ASSERT_EQ(LGBM_DatasetSetFeatureNames(data, name_ptrs.data(), cols), 0);
  ASSERT_EQ(LGBM_DatasetSetField(data, "label", label.data(), n, C_API_DTYPE_FLOAT32), 0);
  BoosterHandle booster = nullptr;
  ASSERT_EQ(LGBM_BoosterCreate(data,
                               "objective=regression num_leaves=31 learning_rate=0.1 "
                               "min_data_in_leaf=5 num_threads=1 verbose=-1 seed=1",
                               &booster),
            0)
      << LGBM_GetLastError();
  int finished = 0;
  for (int i = 0; i < 40 && !finished; ++i)
    ASSERT_EQ(LGBM_BoosterUpdateOneIter(booster, &finished), 0);
  int64_t size = 0;
  ASSERT_EQ(LGBM_BoosterSaveModelToString(booster, 0, -1, 0, 0, &size, nullptr), 0);
  std::string text(static_cast<size_t>(size), '\0');
  ASSERT_EQ(LGBM_BoosterSaveModelToString(booster, 0, -1, 0, size, &size, text.data()), 0);
  text.resize(static_cast<size_t>(size) - 1);  // the count includes the terminating NUL
  ASSERT_TRUE(Contains(text, "feature_names=M N K pipeline tile_m tile_n"));
  ASSERT_TRUE(Contains(text, "cat_threshold="));  // the categorical splits are exercised

  fs::remove(File("model_tflops.lgbm"));
  fs::remove(File("model_latency.lgbm.gz"));
  WriteText(File("model_tflops.lgbm"), text);
  WriteGzip(File("model_bandwidth.lgbm.gz"), text);  // a log target too, read from gzip
  WriteText(File("feature_spec.json"),
            R"({"op_type": "gemm_universal", "feature_names": ["M", "N", "K", "pipeline",
                "tile_m", "tile_n"], "categorical_features": ["pipeline"],
                "log_targets": ["bandwidth", "tflops"]})");
  const ForeignModel model = LoadCkTileModel(Dir()).value();

  std::vector<double> rows;
  for (int i = 0; i < 500; ++i) {
    rows.insert(rows.end(), x.begin() + i * cols, x.begin() + (i + 1) * cols);
  }
  // Values training never saw: NaN and unseen categories, zeros and negatives.
  for (int i = 0; i < 100; ++i) {
    for (int c = 0; c < cols; ++c) {
      const double odd[] = {kNan, 0, -1, 7, 1e-40, 3.5, 1e12};
      rows.push_back(odd[rng() % std::size(odd)]);
    }
  }
  const int32_t num_rows = static_cast<int32_t>(rows.size() / names.size());
  std::vector<double> raw(static_cast<size_t>(num_rows));
  int64_t len = 0;
  ASSERT_EQ(
      LGBM_BoosterPredictForMat(booster, rows.data(), C_API_DTYPE_FLOAT64, num_rows, cols, 1,
                                C_API_PREDICT_NORMAL, 0, -1, "num_threads=1", &len, raw.data()),
      0)
      << LGBM_GetLastError();
  LGBM_BoosterFree(booster);
  LGBM_DatasetFree(data);
  for (const Target target : {Target::kTflops, Target::kBandwidth}) {
    const std::vector<double> predicted =
        model.Predict(target, rows, static_cast<size_t>(num_rows)).value();
    for (size_t i = 0; i < raw.size(); ++i) {
      ASSERT_EQ(predicted[i], std::expm1(raw[i])) << TargetName(target) << " row " << i;
    }
  }
}

#endif  // KSELECT_WITH_LIGHTGBM

}  // namespace
}  // namespace kselect
