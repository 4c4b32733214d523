// Rule sets: parsing and errors, filtering a real enumeration (H200 fixture), and the drift
// check between rules/ and their committed snapshots.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "kselect/catalogue.h"

namespace kselect {
namespace {

const std::string kRulesDir = std::string(KSELECT_SOURCE_DIR) + "/rules";

// The problem the fixture was enumerated for.
const Problem kFixtureProblem = GemmProblem{.m = 4096, .n = 4096, .k = 4096};

std::vector<KernelConfig> EnumeratedFixture() {
  std::ifstream in(std::string(KSELECT_FIXTURE_DIR) +
                   "/cublaslt/enumerated_4096_bf16_tn_sample.jsonl");
  std::vector<KernelConfig> configs;
  for (std::string line; std::getline(in, line);) {
    configs.push_back(
        json_codec::KernelConfigFromJson(nlohmann::json::parse(line), "fixture").value());
  }
  return configs;
}

TEST(RulesTest, CommittedRuleSetsFilterTheFixture) {
  // The fixture is a sample of what an H200 (cuBLASLt 13.1) enumerates for bf16 TN 4096^3; the
  // counts were computed independently (in Python) when the rules were written.
  const std::vector<KernelConfig> configs = EnumeratedFixture();
  ASSERT_EQ(configs.size(), 1950u);
  for (const auto& [name, expected] : {std::pair{"tiny", 55}, std::pair{"tests", 147},
                                       std::pair{"default", 73}, std::pair{"full", 1950}}) {
    auto rules = FindRuleSet(kRulesDir, Provider::kCublasLt, name);
    ASSERT_TRUE(rules.ok()) << rules.status().ToString();
    EXPECT_EQ(rules->name, name);
    EXPECT_EQ(ApplyRules(*rules, kFixtureProblem, configs).size(), static_cast<size_t>(expected))
        << name;
  }
}

TEST(RulesTest, SampledFilterIsDeterministicNearItsFractionAndInsideTheBase) {
  const std::vector<KernelConfig> configs = EnumeratedFixture();
  auto full = FindRuleSet(kRulesDir, Provider::kCublasLt, "full");
  auto tests = FindRuleSet(kRulesDir, Provider::kCublasLt, "tests");
  ASSERT_TRUE(full.ok() && tests.ok());
  const ConfigFilter quarter = SampledFilter(RuleSetFilter(*full, kFixtureProblem), 0.25, 7);
  const ConfigFilter again = SampledFilter(RuleSetFilter(*full, kFixtureProblem), 0.25, 7);
  const ConfigFilter other_seed = SampledFilter(RuleSetFilter(*full, kFixtureProblem), 0.25, 8);
  int kept = 0, differs = 0;
  for (const KernelConfig& c : configs) {
    const bool k = quarter.keep(c);
    EXPECT_EQ(k, again.keep(c));
    kept += k;
    differs += k != other_seed.keep(c);
  }
  // 1950 configs at p = 0.25: mean 487.5, sd 19; +-5 sd.
  EXPECT_NEAR(kept, 487.5, 95);
  EXPECT_GT(differs, 100);
  // Sampling never adds what the base rules reject, and fraction 1 is the base itself.
  const ConfigFilter sampled_tests = SampledFilter(RuleSetFilter(*tests, kFixtureProblem), 0.5, 1);
  for (const KernelConfig& c : configs) {
    if (sampled_tests.keep(c)) {
      EXPECT_TRUE(RejectingRule(*tests, kFixtureProblem, c).empty());
    }
  }
  const ConfigFilter whole = SampledFilter(RuleSetFilter(*tests, kFixtureProblem), 1.0, 1);
  for (const KernelConfig& c : configs)
    EXPECT_EQ(whole.keep(c), RejectingRule(*tests, kFixtureProblem, c).empty());
}

TEST(RulesTest, RejectingRuleNamesTheRule) {
  auto rules =
      ParseRuleSet(R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt",
      "comment":"c","rules":[{"name":"no_split","comment":"c","field":"split_k","max":1},
                             {"name":"algo66","comment":"c","field":"algo_id","keep":[66]}]})",
                   "t.json");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  CublasLtConfig c;
  c.algo_id = 66;
  EXPECT_EQ(RejectingRule(*rules, kFixtureProblem, c), "");
  c.split_k = 2;
  EXPECT_EQ(RejectingRule(*rules, kFixtureProblem, c), "no_split");
  c.split_k = 1;
  c.algo_id = 21;
  EXPECT_EQ(RejectingRule(*rules, kFixtureProblem, c), "algo66");
}

TEST(RulesTest, FilterMayKeepIgnoresTheVaryingFields) {
  auto rules =
      ParseRuleSet(R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt",
      "comment":"c","rules":[{"name":"split2","comment":"c","field":"split_k","keep":[2]},
                             {"name":"tile","comment":"c","field":"tile_m","keep":[128]}]})",
                   "t.json");
  ASSERT_TRUE(rules.ok());
  const ConfigFilter filter = RuleSetFilter(*rules, kFixtureProblem);
  constexpr std::string_view kVarying[] = {"split_k", "reduction_scheme", "swizzle"};
  CublasLtConfig plain;
  plain.tile_m = 128;
  // The plain (split 1) form is not wanted, but its split-2 variant is: the family must stay.
  EXPECT_FALSE(filter.keep(plain));
  EXPECT_TRUE(filter.may_keep(plain, kVarying));
  CublasLtConfig split = plain;
  split.split_k = 2;
  EXPECT_TRUE(filter.keep(split));
  // A tile no rule wants drops the whole family.
  plain.tile_m = 64;
  EXPECT_FALSE(filter.may_keep(plain, kVarying));
}

TEST(RulesTest, ErrorsAreClear) {
  const std::string head =
      R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt","comment":"c",)";
  auto bad_field = ParseRuleSet(
      head + R"("rules":[{"name":"x","comment":"c","field":"tile_q","max":1}]})", "b.json");
  ASSERT_FALSE(bad_field.ok());
  EXPECT_NE(bad_field.status().message().find("'tile_q' is not a field"), std::string::npos);
  auto two_ops = ParseRuleSet(
      head + R"("rules":[{"name":"x","comment":"c","field":"split_k","max":1,"min":1}]})",
      "b.json");
  EXPECT_FALSE(two_ops.ok());
  auto no_comment =
      ParseRuleSet(head + R"("rules":[{"name":"x","field":"split_k","max":1}]})", "b.json");
  EXPECT_FALSE(no_comment.ok());
  auto version = ParseRuleSet(
      R"({"format":"kselect.rules","format_version":2,"name":"t","provider":"cublaslt","comment":"c","rules":[]})",
      "v.json");
  EXPECT_EQ(version.status().code(), StatusCode::kSchemaMismatch);
  EXPECT_EQ(FindRuleSet(kRulesDir, Provider::kCublasLt, "nope").status().code(),
            StatusCode::kNotFound);
}

TEST(RulesTest, ConditionedRulesHoldOnlyWhereTheProblemMeetsThem) {
  auto rules =
      ParseRuleSet(R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt",
      "comment":"c","rules":[
        {"name":"no_split_on_large_outputs","comment":"c","field":"split_k","keep":[1],
         "when":{"mn":{"min":4194304}}},
        {"name":"wide_rows_for_aligned_tall","comment":"c","field":"tile_m","drop":[8,16,32],
         "when":{"m":{"min":256},"align":{"min":8}}}]})",
                   "t.json");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  CublasLtConfig split;
  split.split_k = 4;
  split.tile_m = 16;
  const Problem small = GemmProblem{.m = 64, .n = 4096, .k = 4096};        // mn = 262144
  const Problem large = GemmProblem{.m = 4096, .n = 4096, .k = 4096};      // mn = 16M, align 256
  const Problem odd_large = GemmProblem{.m = 4099, .n = 4096, .k = 4096};  // align 1
  EXPECT_EQ(RejectingRule(*rules, small, split), "");
  EXPECT_EQ(RejectingRule(*rules, large, split), "no_split_on_large_outputs");
  split.split_k = 1;
  EXPECT_EQ(RejectingRule(*rules, large, split), "wide_rows_for_aligned_tall");
  EXPECT_EQ(RejectingRule(*rules, odd_large, split), "");  // not aligned: the tile rule is off
  // The boundary is inclusive: 2048 x 2048 is exactly 4194304 outputs.
  split.split_k = 2;
  EXPECT_EQ(RejectingRule(*rules, GemmProblem{.m = 2048, .n = 2048, .k = 8}, split),
            "no_split_on_large_outputs");
  EXPECT_EQ(RejectingRule(*rules, GemmProblem{.m = 2047, .n = 2048, .k = 8}, split), "");
  // A convolution has none of the quantities: conditioned rules do not hold on it.
  EXPECT_FALSE(RuleAppliesTo(rules->rules[0], ConvProblem{}));
  // The filter sees the same problem-dependent answers.
  EXPECT_TRUE(RuleSetFilter(*rules, small).keep(split));
  EXPECT_FALSE(RuleSetFilter(*rules, large).keep(split));
}

TEST(RulesTest, ProblemQuantities) {
  const Problem p = GemmProblem{.m = 48, .n = 4096, .k = 11008};
  EXPECT_EQ(ProblemQuantity(p, "mn"), 48 * 4096);
  EXPECT_EQ(ProblemQuantity(p, "align"), 16);  // 48 = 16 * 3, 11008 = 256 * 43
  EXPECT_EQ(ProblemQuantity(GemmProblem{.m = 1, .n = 1, .k = 1}, "align"), 1);
  EXPECT_EQ(ProblemQuantity(GemmProblem{.m = 4096, .n = 8192, .k = 1024}, "align"), 256);
  EXPECT_EQ(ProblemQuantity(p, "batch"), 1);
  EXPECT_EQ(ProblemQuantity(p, "volume"), std::nullopt);
}

TEST(RulesTest, ConditionErrorsAreClear) {
  const std::string head =
      R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt","comment":"c",)";
  auto message = [&](const std::string& when) {
    auto r = ParseRuleSet(
        head + R"("rules":[{"name":"x","comment":"c","field":"split_k","max":1,"when":)" + when +
            "}]}",
        "w.json");
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(message(R"({"volume":{"min":1}})").find("'volume'"), std::string::npos);
  EXPECT_NE(message(R"({"volume":{"min":1}})").find("not a problem quantity"), std::string::npos);
  EXPECT_NE(message(R"({"m":{}})").find("needs min, max or both"), std::string::npos);
  EXPECT_NE(message(R"({"m":{"min":5,"max":4}})").find("min is above max"), std::string::npos);
  EXPECT_NE(message(R"({"m":{"min":"5"}})").find("w.json"), std::string::npos);
  EXPECT_NE(message(R"({"m":{"min":5,"below":3}})").find("below"), std::string::npos);
  EXPECT_NE(message(R"({})").find("expected an object"), std::string::npos);
  EXPECT_NE(message(R"([1])").find("expected an object"), std::string::npos);
  EXPECT_EQ(message(R"({"m":{"min":5}})"), "ok");
}

TEST(RulesTest, ConditionsEnterTheFingerprintButDoNotMoveOldOnes) {
  const std::string head =
      R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt","comment":"c",)";
  auto fingerprint = [&](const std::string& rule) {
    return ParseRuleSet(head + R"("rules":[)" + rule + "]}", "f").value().fingerprint;
  };
  const uint64_t plain = fingerprint(R"({"name":"x","comment":"c","field":"split_k","max":1})");
  const uint64_t m256 = fingerprint(
      R"({"name":"x","comment":"c","field":"split_k","max":1,"when":{"m":{"min":256}}})");
  const uint64_t m512 = fingerprint(
      R"({"name":"x","comment":"c","field":"split_k","max":1,"when":{"m":{"min":512}}})");
  EXPECT_NE(plain, m256);
  EXPECT_NE(m256, m512);
  // Unconditioned rule sets keep the fingerprints they had before conditions existed: the
  // committed tiny and tests snapshots (SnapshotsAgreeWithTheirRules) still match theirs.
}

TEST(RulesTest, CommentsDoNotChangeTheFingerprint) {
  const auto a =
      ParseRuleSet(
          R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt","comment":"one",
      "rules":[{"name":"x","comment":"a","field":"split_k","max":1}]})",
          "a")
          .value();
  const auto b =
      ParseRuleSet(
          R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt","comment":"two",
      "rules":[{"name":"x","comment":"b","field":"split_k","max":1}]})",
          "b")
          .value();
  const auto c =
      ParseRuleSet(
          R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt","comment":"two",
      "rules":[{"name":"x","comment":"b","field":"split_k","max":2}]})",
          "c")
          .value();
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_NE(a.fingerprint, c.fingerprint);
}

// Fails when a rule set changes without its snapshot being regenerated on the device (or a
// snapshot is edited by hand): the fingerprint, the count, and every config passing its rules.
TEST(RulesTest, SnapshotsAgreeWithTheirRules) {
  const std::filesystem::path dir = kRulesDir + "/cublaslt/snapshots";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const nlohmann::json snap = nlohmann::json::parse(in);
    const RuleSet rules =
        FindRuleSet(kRulesDir, Provider::kCublasLt, snap["rule_set"].get<std::string>()).value();
    const Problem problem = json_codec::ProblemFromJson(snap["problem"], "snapshot").value();
    EXPECT_EQ(snap["rules_fingerprint"], FingerprintText(rules.fingerprint))
        << entry.path() << ": rules/cublaslt/" << rules.name
        << ".json changed since the snapshot was made; regenerate it on the GPU with kselect "
           "catalogue --snapshot";
    EXPECT_EQ(snap["count"].get<size_t>(), snap["configs"].size());
    for (const auto& c : snap["configs"]) {
      const KernelConfig config =
          json_codec::KernelConfigFromJson(c, entry.path().string()).value();
      EXPECT_EQ(RejectingRule(rules, problem, config), "") << DescribeConfig(config);
    }
    ++checked;
  }
  EXPECT_GE(checked, 1) << "no snapshots under " << dir;
}

// One snapshot format, one writer: every committed cuBLASLt snapshot reads back and writes out
// byte for byte as it was written by `kselect catalogue --snapshot`.
TEST(RulesTest, SnapshotsRoundTripThroughTheWriter) {
  int checked = 0;
  for (const char* folder : {"/cublaslt/snapshots", "/tile/snapshots"}) {
    for (const auto& entry : std::filesystem::directory_iterator(kRulesDir + folder)) {
      if (entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      const StatusOr<CatalogueSnapshot> snapshot =
          ParseCatalogueSnapshot(text.str(), entry.path().string());
      ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
      EXPECT_EQ(CatalogueSnapshotToJson(*snapshot), text.str()) << entry.path();
      ++checked;
    }
  }
  EXPECT_GE(checked, 7);  // cuBLASLt tiny, tests, default; tile tiny, tests, default, full
  EXPECT_EQ(ParseCatalogueSnapshot(R"({"format": "kselect.rules", "format_version": 1})", "x")
                .status()
                .code(),
            StatusCode::kSchemaMismatch);
}

// A generator is part of the rule set's identity (a changed group changes the fingerprint);
// without one the fingerprint is what it was before generators existed.
TEST(RulesTest, GeneratorIsFingerprinted) {
  const std::string head =
      R"({"format":"kselect.rules","format_version":1,"name":"g","provider":"tile","comment":"",
          "rules":[])";
  const RuleSet plain = ParseRuleSet(head + "}", "plain").value();
  const RuleSet one =
      ParseRuleSet(head + R"(,"generator":{"groups":[{"stages":[3]}]}})", "one").value();
  const RuleSet two =
      ParseRuleSet(head + R"(,"generator":{"groups":[{"stages":[4]}]}})", "two").value();
  EXPECT_TRUE(plain.generator.empty());
  EXPECT_EQ(one.generator, R"({"groups":[{"stages":[3]}]})");
  EXPECT_NE(plain.fingerprint, one.fingerprint);
  EXPECT_NE(one.fingerprint, two.fingerprint);
  EXPECT_EQ(ParseRuleSet(head + R"(,"generator":[1]})", "bad").status().code(),
            StatusCode::kParseError);
}

// A missing rule set names the file and the folder it was looked for in.
TEST(RulesTest, MissingRuleSetNamesTheFolder) {
  const Status missing = FindRuleSet(kRulesDir, Provider::kTile, "no_such_set").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find(kRulesDir + "/tile/no_such_set.json"), std::string::npos)
      << missing.ToString();
}

TEST(RuleSetTest, DeepNestingAndHugeNumbersAreParseErrors) {
  const std::string deep = std::string(100000, '{');
  auto parsed = ParseRuleSet(deep, "deep.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("nested deeper than"), std::string::npos);
  auto huge = ParseRuleSet(R"({"format": 1e999})", "huge.json");  // out_of_range, not a throw
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kParseError);
}

}  // namespace
}  // namespace kselect
