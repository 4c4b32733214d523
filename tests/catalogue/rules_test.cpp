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
                                       std::pair{"default", 419}, std::pair{"full", 1950}}) {
    auto rules = FindRuleSet(kRulesDir, Provider::kCublasLt, name);
    ASSERT_TRUE(rules.ok()) << rules.status().ToString();
    EXPECT_EQ(rules->name, name);
    EXPECT_EQ(ApplyRules(*rules, configs).size(), static_cast<size_t>(expected)) << name;
  }
}

TEST(RulesTest, SampledFilterIsDeterministicNearItsFractionAndInsideTheBase) {
  const std::vector<KernelConfig> configs = EnumeratedFixture();
  auto full = FindRuleSet(kRulesDir, Provider::kCublasLt, "full");
  auto tests = FindRuleSet(kRulesDir, Provider::kCublasLt, "tests");
  ASSERT_TRUE(full.ok() && tests.ok());
  const ConfigFilter quarter = SampledFilter(RuleSetFilter(*full), 0.25, 7);
  const ConfigFilter again = SampledFilter(RuleSetFilter(*full), 0.25, 7);
  const ConfigFilter other_seed = SampledFilter(RuleSetFilter(*full), 0.25, 8);
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
  const ConfigFilter sampled_tests = SampledFilter(RuleSetFilter(*tests), 0.5, 1);
  for (const KernelConfig& c : configs) {
    if (sampled_tests.keep(c)) {
      EXPECT_TRUE(RejectingRule(*tests, c).empty());
    }
  }
  const ConfigFilter whole = SampledFilter(RuleSetFilter(*tests), 1.0, 1);
  for (const KernelConfig& c : configs) EXPECT_EQ(whole.keep(c), RejectingRule(*tests, c).empty());
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
  EXPECT_EQ(RejectingRule(*rules, c), "");
  c.split_k = 2;
  EXPECT_EQ(RejectingRule(*rules, c), "no_split");
  c.split_k = 1;
  c.algo_id = 21;
  EXPECT_EQ(RejectingRule(*rules, c), "algo66");
}

TEST(RulesTest, FilterMayKeepIgnoresTheVaryingFields) {
  auto rules =
      ParseRuleSet(R"({"format":"kselect.rules","format_version":1,"name":"t","provider":"cublaslt",
      "comment":"c","rules":[{"name":"split2","comment":"c","field":"split_k","keep":[2]},
                             {"name":"tile","comment":"c","field":"tile_m","keep":[128]}]})",
                   "t.json");
  ASSERT_TRUE(rules.ok());
  const ConfigFilter filter = RuleSetFilter(*rules);
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
    EXPECT_EQ(snap["rules_fingerprint"], FingerprintText(rules.fingerprint))
        << entry.path() << ": rules/cublaslt/" << rules.name
        << ".json changed since the snapshot was made; regenerate it on the GPU with kselect "
           "catalogue --snapshot";
    EXPECT_EQ(snap["count"].get<size_t>(), snap["configs"].size());
    for (const auto& c : snap["configs"]) {
      const KernelConfig config =
          json_codec::KernelConfigFromJson(c, entry.path().string()).value();
      EXPECT_EQ(RejectingRule(rules, config), "") << DescribeConfig(config);
    }
    ++checked;
  }
  EXPECT_GE(checked, 1) << "no snapshots under " << dir;
}

}  // namespace
}  // namespace kselect
