// kselect search on the CPU: the space from the full rule set's generator, proposals that always
// pass the validity rules and CanImplement, budgets, determinism, rejections named by rule, the
// differential evolution against random sampling on the shipped tile model, and bad input. The
// device half (SearchGpuTest) is skipped without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kselect/search.h"
#include "providers/tile/tile_engine.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::LinearGemm;
using testing_util::ModelDir;

const std::string kRulesRoot = std::string(KSELECT_SOURCE_DIR) + "/rules";

RuleSet FullRules() {
  StatusOr<RuleSet> rules = FindRuleSetByNameOrPath(kRulesRoot, Provider::kTile, "full");
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  return *rules;
}

const TileSearchSpace& FullSpace() {
  static const TileSearchSpace space = [] {
    StatusOr<TileSearchSpace> s = MakeTileSearchSpace(FullRules());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return *s;
  }();
  return space;
}

// A cheap, deterministic fitness with structure (big tiles good, split-K bad) and per-config
// noise, for the strategy tests that need no model.
StatusOr<std::vector<double>> SyntheticScores(std::span<const TileConfig> configs) {
  std::vector<double> out;
  for (const TileConfig& c : configs) {
    const uint64_t h = std::hash<std::string>{}(ConfigKey(KernelConfig(c)));
    out.push_back(std::log2(double(c.tile_m) * c.tile_n) - 0.3 * std::log2(double(c.split_k)) +
                  0.2 * static_cast<double>(h % 1000) / 1000.0);
  }
  return out;
}

TEST(TileSearchSpaceTest, PerPipelineProductOfTheGeneratorsValues) {
  const TileSearchSpace& space = FullSpace();
  ASSERT_EQ(space.groups.size(), 4u);  // multistage, small_m, decode, warp_specialized
  EXPECT_EQ(space.groups[0].pipeline, TilePipeline::kMultistage);
  EXPECT_EQ(space.groups[2].pipeline, TilePipeline::kDecode);
  StatusOr<tile::TileRuleSet> full = tile::LoadRuleSet("full", kRulesRoot);
  ASSERT_TRUE(full.ok());
  // The cross product per pipeline is much larger than the catalogue of accepted combinations,
  // and holds every catalogue config: each independent field's value is a gene value, and the
  // fields the pipeline derives (warp_specialized's warps and wgmma shape) follow from them.
  EXPECT_GT(space.Size(), 4.0 * static_cast<double>(full->configs.size()));
  for (const TileConfig& c : full->configs) {
    size_t group = space.groups.size();
    for (size_t g = 0; g < space.groups.size(); ++g) {
      if (space.groups[g].pipeline == c.pipeline) group = g;
    }
    ASSERT_LT(group, space.groups.size());
    std::vector<int32_t> indices;
    for (size_t gene = 0; gene < space.genes.size(); ++gene) {
      const int64_t v = space.genes[gene]->get(KernelConfig(c));
      const std::vector<int64_t>& values = space.groups[group].values[gene];
      const auto at = std::lower_bound(values.begin(), values.end(), v);
      if (values.size() == 1) {  // a derived field, or one the pipeline never varies
        indices.push_back(0);
        continue;
      }
      ASSERT_TRUE(at != values.end() && *at == v)
          << space.genes[gene]->name << " " << v << " of " << ConfigKey(KernelConfig(c));
      indices.push_back(static_cast<int32_t>(at - values.begin()));
    }
    EXPECT_EQ(ConfigKey(KernelConfig(space.Config(group, indices))), ConfigKey(KernelConfig(c)));
  }
  // warp_specialized's warps and wgmma shape are derived, not genes: one value each.
  const TileSearchGroup& ws = space.groups[3];
  ASSERT_EQ(ws.pipeline, TilePipeline::kWarpSpecialized);
  for (size_t gene = 0; gene < space.genes.size(); ++gene) {
    const std::string_view name = space.genes[gene]->name;
    if (name == "warps_m" || name == "instr_n") {
      EXPECT_EQ(ws.values[gene].size(), 1u) << name;
    }
    if (name == "tile_n" || name == "stages") {
      EXPECT_GT(ws.values[gene].size(), 4u) << name;
    }
  }
  // The decode family varies warps_k, which the tuner's genes leave out: here it is a gene.
  bool has_warps_k = false;
  for (const ConfigField* f : space.genes) has_warps_k |= f->name == "warps_k";
  EXPECT_TRUE(has_warps_k);
}

class TileSearchStrategyTest : public ::testing::TestWithParam<SearchStrategy> {};

// The search's progress: configs scored after each model call, never going back, ending at the
// budget when the budget stops the search.
TEST_P(TileSearchStrategyTest, ProgressCountsScoredConfigsUpToTheBudget) {
  StatusOr<ProposalCheck> check = MakeProposalCheck(LinearGemm(4096, 16, 4096), FullRules());
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  SearchOptions options;
  options.strategy = GetParam();
  options.budget = 150;
  std::vector<ProgressCount> reports;
  options.progress = [&](const ProgressCount& p) { reports.push_back(p); };
  StatusOr<SearchTrace> trace = RunTileSearch(FullSpace(), *check, SyntheticScores, options);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->stopped_by, "budget");
  ASSERT_EQ(reports.size(), static_cast<size_t>(trace->model_calls));
  int64_t previous = 0;
  for (const ProgressCount& p : reports) {
    EXPECT_EQ(p.total, 150);
    EXPECT_EQ(p.unit, "configs");
    EXPECT_GT(p.done, previous) << "a model call scored nothing, or the count went back";
    previous = p.done;
  }
  EXPECT_EQ(reports.back().done, 150);
}

TEST_P(TileSearchStrategyTest, ValidDistinctWithinBudgetAndDeterministic) {
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  StatusOr<ProposalCheck> check = MakeProposalCheck(problem, FullRules());
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  SearchOptions options;
  options.strategy = GetParam();
  options.budget = 200;
  options.seed = 7;
  StatusOr<SearchTrace> trace = RunTileSearch(FullSpace(), *check, SyntheticScores, options);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(trace->stopped_by, "budget");
  ASSERT_EQ(trace->scored.size(), 200u);
  StatusOr<std::unique_ptr<KernelProvider>> provider = CreateProvider(Provider::kTile);
  ASSERT_TRUE(provider.ok());
  std::set<std::string> keys;
  for (const ScoredConfig& s : trace->scored) {
    EXPECT_TRUE(keys.insert(ConfigKey(KernelConfig(s.config))).second) << "scored twice";
    // Every proposal the model saw runs the problem: the engine's validity rules and the
    // provider's CanImplement, asked again here.
    StatusOr<tile::TileKernelSpec> spec = tile::SpecForProblem(s.config, problem);
    ASSERT_TRUE(spec.ok());
    EXPECT_TRUE(tile::CheckValid(*spec).ok()) << ConfigKey(KernelConfig(s.config));
    EXPECT_TRUE((*provider)->CanImplement(problem, KernelConfig(s.config)).ok());
  }
  // Rejections: named by rule, adding up.
  EXPECT_GT(trace->rejected, 0);
  std::set<std::string> names = {"spec", "can_implement", "workspace_limit", "provider"};
  for (const tile::ValidityRule& r : tile::ValidityRules()) names.insert(r.name);
  int64_t total = 0;
  for (const RejectionCount& c : trace->rejected_by_rule) {
    EXPECT_TRUE(names.count(c.rule)) << c.rule;
    EXPECT_FALSE(c.example.empty());
    total += c.count;
  }
  EXPECT_EQ(total, trace->rejected);
  // Every proposal is rejected, a duplicate or scored (differential evolution: or left unscored
  // when the budget ran out mid-generation).
  const int64_t accounted =
      trace->rejected + trace->duplicates + static_cast<int64_t>(trace->scored.size());
  if (GetParam() == SearchStrategy::kRandom) {
    EXPECT_EQ(trace->proposals, accounted);
  } else {
    EXPECT_GE(trace->proposals, accounted);
    EXPECT_LT(trace->proposals - accounted, 32);
  }
  // The same seed proposes the same configs; another seed others.
  StatusOr<SearchTrace> again = RunTileSearch(FullSpace(), *check, SyntheticScores, options);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->scored.size(), trace->scored.size());
  for (size_t i = 0; i < trace->scored.size(); ++i) {
    EXPECT_EQ(again->scored[i].config, trace->scored[i].config);
  }
  EXPECT_EQ(again->proposals, trace->proposals);
  options.seed = 8;
  StatusOr<SearchTrace> other = RunTileSearch(FullSpace(), *check, SyntheticScores, options);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->scored.front().config, trace->scored.front().config);
}

INSTANTIATE_TEST_SUITE_P(Strategies, TileSearchStrategyTest,
                         ::testing::Values(SearchStrategy::kRandom,
                                           SearchStrategy::kDifferentialEvolution),
                         [](const auto& info) {
                           return std::string(SearchStrategyName(info.param));
                         });

TEST(TileSearchTest, SmallSpacesEndAtTheProposalCap) {
  // A budget larger than the valid configs of the problem: the search stops, it does not spin.
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  StatusOr<ProposalCheck> check = MakeProposalCheck(problem, FullRules());
  ASSERT_TRUE(check.ok());
  TileSearchSpace small = FullSpace();
  small.groups.resize(2);  // multistage and small_m
  small.groups.erase(small.groups.begin());
  SearchOptions options;
  options.budget = 100000;
  options.max_proposals = 20000;
  StatusOr<SearchTrace> trace = RunTileSearch(small, *check, SyntheticScores, options);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->stopped_by, "proposal cap");
  EXPECT_EQ(trace->proposals, 20000);
  EXPECT_LE(static_cast<double>(trace->scored.size()), small.Size());
}

TEST(TileSearchTest, BadOptionsAndProblems) {
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  StatusOr<ProposalCheck> check = MakeProposalCheck(problem, FullRules());
  ASSERT_TRUE(check.ok());
  SearchOptions options;
  options.budget = 0;
  StatusOr<SearchTrace> trace = RunTileSearch(FullSpace(), *check, SyntheticScores, options);
  EXPECT_EQ(trace.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(trace.status().message().find("budget"), std::string::npos);
  EXPECT_EQ(ParseSearchStrategy("genetic").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseSearchStrategy("de"), SearchStrategy::kDifferentialEvolution);

  GemmProblem empty = problem;
  empty.m = 0;
  EXPECT_EQ(MakeProposalCheck(empty, FullRules()).status().code(), StatusCode::kInvalidArgument);
  GemmProblem fp8 = problem;
  fp8.dtype_a = fp8.dtype_b = DataType::kF8E4M3;
  EXPECT_EQ(MakeProposalCheck(fp8, FullRules()).status().code(), StatusCode::kCannotImplement);
}

TEST(TileSearcherTest, RefusesModelsThatAreNotTileModels) {
  TileSearchOptions options;
  options.model_dir = ModelDir("h200_cublaslt_default_bf16_tn");
  StatusOr<std::unique_ptr<TileSearcher>> searcher = TileSearcher::Open(options);
  ASSERT_FALSE(searcher.ok());
  EXPECT_EQ(searcher.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(searcher.status().message().find("tile model"), std::string::npos);
  options.model_dir = ModelDir("no_such_model");
  EXPECT_FALSE(TileSearcher::Open(options).ok());
}

// The shipped tile model: differential evolution reaches at least random sampling's best
// predicted score with the same budget, and the baselines are the catalogues' best.
TEST(TileSearcherTest, DifferentialEvolutionReachesRandomsBestOnTheShippedModel) {
  TileSearchOptions options;
  options.model_dir = ModelDir("h200_tile_bf16_tn");
  options.search.budget = 300;
  StatusOr<std::unique_ptr<TileSearcher>> searcher = TileSearcher::Open(options);
  ASSERT_TRUE(searcher.ok()) << searcher.status().ToString();
  EXPECT_TRUE((*searcher)->ScoresAreTflops());
  options.search.strategy = SearchStrategy::kDifferentialEvolution;
  StatusOr<std::unique_ptr<TileSearcher>> de = TileSearcher::Open(options);
  ASSERT_TRUE(de.ok());
  std::vector<TileSearchResult> results;
  for (const GemmProblem& p : {LinearGemm(8192, 512, 4096), LinearGemm(14336, 128, 4096)}) {
    StatusOr<TileSearchResult> random = (*searcher)->Run(p);
    ASSERT_TRUE(random.ok()) << random.status().ToString();
    StatusOr<TileSearchResult> evolved = (*de)->Run(p);
    ASSERT_TRUE(evolved.ok()) << evolved.status().ToString();
    ASSERT_EQ(random->trace.scored.size(), 300u);
    ASSERT_EQ(evolved->trace.scored.size(), 300u);
    ASSERT_EQ(evolved->baselines.size(), 2u);
    const SearchBaseline& full = evolved->baselines[1];
    ASSERT_TRUE(full.best);
    std::printf("%s: random %.2f, de %.2f (%lld rejected of %lld), full best %.2f (%lld configs)\n",
                p.ToString().c_str(), random->top.front().score, evolved->top.front().score,
                static_cast<long long>(evolved->trace.rejected),
                static_cast<long long>(evolved->trace.proposals), full.best->score,
                static_cast<long long>(full.configs));
    EXPECT_GE(evolved->top.front().score, random->top.front().score);
    EXPECT_GT(full.configs, 100);
    // The top list is sorted and holds the trace's best.
    for (size_t i = 1; i < evolved->top.size(); ++i) {
      EXPECT_GE(evolved->top[i - 1].score, evolved->top[i].score);
    }
    results.push_back(std::move(*evolved));
  }
  const nlohmann::json j = nlohmann::json::parse(SearchJson(results, **de, nullptr, "", "r1"));
  EXPECT_EQ(j["format"], "kselect.search");
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["predicted_unit"], "TFLOPS");
  ASSERT_EQ(j["results"].size(), 2u);
  const nlohmann::json& r = j["results"][0];
  EXPECT_EQ(r["strategy"], "de");
  EXPECT_EQ(r["scored"], 300);
  EXPECT_EQ(r["top"].size(), 8u);
  EXPECT_TRUE(r["measured"].is_null());
  EXPECT_FALSE(r["rejected_by_rule"].empty());
  EXPECT_EQ(r["baselines"][0]["rule_set"], "default");
}

// The device half: the best proposals compiled, verified and timed beside cuBLASLt's pick.
TEST(SearchGpuTest, MeasuresVerifiedProposalsBesideCublasLt) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no GPU on this host";
  }
  TileSearchOptions options;
  options.model_dir = ModelDir("h200_tile_bf16_tn");
  options.search.budget = 60;
  options.search.strategy = SearchStrategy::kDifferentialEvolution;
  StatusOr<std::unique_ptr<TileSearcher>> searcher = TileSearcher::Open(options);
  ASSERT_TRUE(searcher.ok()) << searcher.status().ToString();
  SearchMeasureOptions mo;
  mo.top = 2;
  mo.rounds = 7;
  StatusOr<std::unique_ptr<SearchMeasurer>> measurer = SearchMeasurer::Create(mo);
  ASSERT_TRUE(measurer.ok()) << measurer.status().ToString();
  StatusOr<TileSearchResult> result = (*searcher)->Run(LinearGemm(4096, 16, 4096));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_TRUE((*measurer)->Measure(&*result, true).ok());
  ASSERT_TRUE(result->measured);
  const SearchMeasurement& m = *result->measured;
  EXPECT_GT(m.cublaslt_pick.median_ms, 0);
  EXPECT_DOUBLE_EQ(m.cublaslt_pick.speedup, 1.0);
  ASSERT_GE(m.configs.size(), 2u);  // two proposals, and the baselines' best where different
  int timed = 0;
  for (const MeasuredConfig& c : m.configs) {
    std::printf("%s %s: verified %d (%s), %.2f us, predicted/measured %.2f\n", c.role.c_str(),
                DescribeConfig(KernelConfig(c.config)).c_str(), c.verified, c.verification.c_str(),
                c.figure ? c.figure->median_ms * 1e3 : 0.0, c.predicted_over_measured);
    EXPECT_EQ(c.figure.has_value(), c.verified);
    if (c.figure) {
      ++timed;
      EXPECT_GT(c.measured_tflops, 0);
      EXPECT_GT(c.predicted_over_measured, 0);
    }
  }
  EXPECT_GT(timed, 0) << m.note;
  const nlohmann::json j = nlohmann::json::parse(
      SearchJson({&*result, 1}, **searcher, &(*measurer)->hardware(), "test", "r1"));
  EXPECT_FALSE(j["results"][0]["measured"].is_null());
  EXPECT_FALSE(j["device_name"].get<std::string>().empty());
}

}  // namespace
}  // namespace kselect
