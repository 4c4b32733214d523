// Out-of-fold predictions (oof_predictions.csv) as the scores of an honest comparison.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kselect/train.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;

class OofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kselect_oof_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& csv) { std::ofstream(dir_ / "oof_predictions.csv") << csv; }
  std::string Dir() const { return dir_.string(); }

  std::filesystem::path dir_;
};

constexpr const char* kHeader = "problem,config,fold,measured_tflops,oof_predicted_tflops\n";

// Two problems: p1 with configs "a,1" and "b", p2 with "a,1".
CandidateSet TwoProblems() {
  CandidateSet data;
  for (const char* key : {"p1", "p2"}) {
    ProblemCandidates p;
    p.problem_key = key;
    for (const char* config : {"a,1", "b"}) {
      if (std::string(key) == "p2" && std::string(config) == "b") continue;
      Candidate c;
      c.config_key = config;
      c.tflops = 10;
      p.candidates.push_back(c);
    }
    data.problems.push_back(p);
  }
  return data;
}

TEST_F(OofTest, ReadsQuotedKeysWithCommasAndQuotes) {
  Write(std::string(kHeader) +
        "\"p1\",\"a,1\",0,10,12.5\n"
        "\"p1\",\"b\",0,11,1e-3\n"
        "p2,\"a,1\",1,10,7\n"
        "\"p \"\"q\"\"\",x,1,1,2\n");
  auto oof = ReadOofPredictions(Dir());
  ASSERT_TRUE(oof.ok()) << oof.status().ToString();
  EXPECT_EQ(oof->size(), 4u);
  EXPECT_EQ(oof->Find("p1", "a,1"), 12.5);
  EXPECT_EQ(oof->Find("p \"q\"", "x"), 2);
  EXPECT_EQ(oof->Find("p2", "b"), std::nullopt);

  auto scores = OofScores(*oof, TwoProblems());
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  ASSERT_EQ(scores->size(), 2u);
  EXPECT_EQ((*scores)[0], (std::vector<double>{12.5, 1e-3}));
  EXPECT_EQ((*scores)[1], (std::vector<double>{7}));
}

// Format 2, as kselect train writes it: the config table, then each problem's predictions.
TEST_F(OofTest, ReadsFormat2AndGivesTheSameScores) {
  Write(std::string(kOofFormat2Header) +
        "\n"
        "config,0,\"a,1\"\n"
        "config,1,\"b\"\n"
        "problem,\"p1\",0\n"
        "0,12.5\n"
        "1,1e-3\n"
        "problem,\"p2\",1\n"
        "0,7\n");
  auto oof = ReadOofPredictions(Dir());
  ASSERT_TRUE(oof.ok()) << oof.status().ToString();
  EXPECT_EQ(oof->size(), 3u);
  auto scores = OofScores(*oof, TwoProblems());
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  EXPECT_EQ((*scores)[0], (std::vector<double>{12.5, 1e-3}));
  EXPECT_EQ((*scores)[1], (std::vector<double>{7}));
}

TEST_F(OofTest, RefusesMalformedFormat2) {
  const std::string head = std::string(kOofFormat2Header) + "\nconfig,0,\"a,1\"\n";
  Write(head + "0,1.5\n");
  EXPECT_TRUE(Contains(ReadOofPredictions(Dir()).status().message(), "before any problem"));
  Write(head + "problem,p1,0\n3,1.5\n");
  EXPECT_TRUE(Contains(ReadOofPredictions(Dir()).status().message(), "not a config index"));
  Write(head + "config,5,b\n");
  EXPECT_TRUE(Contains(ReadOofPredictions(Dir()).status().message(), "expected config,1"));
  Write(head + "problem,p1,0\n0,1.5\n0,2\n");
  EXPECT_TRUE(Contains(ReadOofPredictions(Dir()).status().message(), "repeats the pair"));
  Write(head + "problem,p1,0\n0,nan\n");
  EXPECT_EQ(ReadOofPredictions(Dir()).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(OofTest, ReadsTheGzipFileAndRefusesACorruptOne) {
  const std::string text = std::string(kHeader) + "p1,b,0,11,3.5\n";
  ASSERT_TRUE(WriteGzipFile((dir_ / kOofPredictionsFile).string(), text).ok());
  // Compressed on disk, the same text read back.
  EXPECT_NE(testing_util::ReadAll((dir_ / kOofPredictionsFile).string()), text);
  auto oof = ReadOofPredictions(Dir());
  ASSERT_TRUE(oof.ok()) << oof.status().ToString();
  EXPECT_EQ(oof->Find("p1", "b"), 3.5);
  // A truncated gzip stream is an error, not a shorter file.
  std::string bytes = testing_util::ReadAll((dir_ / kOofPredictionsFile).string());
  std::ofstream(dir_ / kOofPredictionsFile, std::ios::binary) << bytes.substr(0, bytes.size() - 9);
  EXPECT_FALSE(ReadOofPredictions(Dir()).ok());
}

TEST_F(OofTest, RefusesDataTheFileDoesNotCover) {
  Write(std::string(kHeader) + "p1,\"a,1\",0,10,12.5\np2,\"a,1\",1,10,7\n");
  auto oof = ReadOofPredictions(Dir());
  ASSERT_TRUE(oof.ok()) << oof.status().ToString();
  auto scores = OofScores(*oof, TwoProblems());
  ASSERT_FALSE(scores.ok());
  EXPECT_EQ(scores.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(scores.status().message(), "covers 2 of the data's 3"));
  EXPECT_TRUE(Contains(scores.status().message(), "first missing: (p1, b)"));
}

TEST_F(OofTest, RefusesAModelTrainedWithoutCrossValidation) {
  Write(std::string(kHeader) + "p1,\"a,1\",-1,10,nan\np1,b,-1,10,nan\n");
  auto oof = ReadOofPredictions(Dir());
  ASSERT_FALSE(oof.ok());
  EXPECT_EQ(oof.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(oof.status().message(), "2 of 2 rows have no out-of-fold prediction"));
}

TEST_F(OofTest, ReportsMissingAndMalformedFiles) {
  auto missing = ReadOofPredictions(Dir());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  Write("problem,config,prediction\n");
  EXPECT_EQ(ReadOofPredictions(Dir()).status().code(), StatusCode::kParseError);

  Write(std::string(kHeader) + "p1,a,0,10\n");
  auto short_row = ReadOofPredictions(Dir());
  EXPECT_EQ(short_row.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(short_row.status().message(), "oof_predictions.csv:2:"));
  EXPECT_TRUE(Contains(short_row.status().message(), "expected 5 fields, found 4"));

  Write(std::string(kHeader) + "p1,\"a,0,10,1\n");
  EXPECT_TRUE(Contains(ReadOofPredictions(Dir()).status().message(), "unterminated"));

  Write(std::string(kHeader) + "p1,a,0,10,abc\n");
  EXPECT_TRUE(Contains(ReadOofPredictions(Dir()).status().message(), "oof_predicted_tflops"));

  Write(std::string(kHeader) + "p1,a,0,10,1\np1,a,0,10,2\n");
  EXPECT_TRUE(Contains(ReadOofPredictions(Dir()).status().message(), "repeats the pair"));
}

}  // namespace
}  // namespace kselect
