// The model-guided search over the tile engine's config space (include/kselect/search.h), CPU
// side: the space from a rule set's generator, the validity check, the random and differential
// evolution strategies, the exhaustive baselines and the kselect.search JSON.
#include "kselect/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "bench/provider_comparison.h"
#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "kselect/head_to_head.h"
#include "kselect/model.h"
#include "kselect/selector.h"
#include "providers/tile/tile_engine.h"

namespace kselect {

// ---------------------------------------------------------------------------------------------
// Validity.

StatusOr<ProposalCheck> MakeProposalCheck(const GemmProblem& problem, const RuleSet& rules,
                                          const ProviderOptions& provider_options) {
  KSELECT_RETURN_IF_ERROR(problem.Validate());
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<KernelProvider> created,
                           CreateProvider(Provider::kTile, provider_options));
  std::shared_ptr<KernelProvider> provider(std::move(created));
  const Problem as_problem(problem);
  if (!provider->SupportsProblem(as_problem)) {
    return CannotImplementError(
        "the tile engine runs bf16/fp16 GEMMs with fp32 accumulation, not " + problem.ToString());
  }
  const int64_t max_workspace = provider_options.max_workspace_bytes;
  return ProposalCheck([problem, as_problem, rules, provider,
                        max_workspace](const TileConfig& config) -> std::optional<Rejection> {
    const StatusOr<tile::TileKernelSpec> spec = tile::SpecForProblem(config, problem);
    if (!spec.ok()) return Rejection{"spec", spec.status().message()};
    for (const tile::ValidityRule& rule : tile::ValidityRules()) {
      if (std::string broken = rule.check(*spec); !broken.empty()) {
        return Rejection{rule.name, std::move(broken)};
      }
    }
    if (const Status can = tile::CanImplement(*spec, problem); !can.ok()) {
      return Rejection{"can_implement", can.message()};
    }
    const auto workspace = static_cast<int64_t>(tile::WorkspaceBytes(*spec, problem));
    if (workspace > max_workspace) {
      return Rejection{"workspace_limit", std::to_string(workspace) +
                                              " bytes of split-K "
                                              "workspace, the limit is " +
                                              std::to_string(max_workspace)};
    }
    // The provider's own gate, what Enumerate and Prepare ask: the checks above, in one place
    // that later provider checks join.
    if (const Status can = provider->CanImplement(as_problem, KernelConfig(config)); !can.ok()) {
      return Rejection{"provider", can.message()};
    }
    if (const std::string rule = RejectingRule(rules, as_problem, KernelConfig(config));
        !rule.empty()) {
      return Rejection{"rule " + rule, "dropped by the rule set's rule " + rule};
    }
    return std::nullopt;
  });
}

// ---------------------------------------------------------------------------------------------
// The strategies.

std::string_view SearchStrategyName(SearchStrategy strategy) {
  return strategy == SearchStrategy::kRandom ? "random" : "de";
}

StatusOr<SearchStrategy> ParseSearchStrategy(std::string_view name) {
  if (name == "random") return SearchStrategy::kRandom;
  if (name == "de") return SearchStrategy::kDifferentialEvolution;
  return InvalidArgumentError("unknown search strategy '" + std::string(name) +
                              "' (expected random or de)");
}

std::vector<ScoredConfig> SearchTrace::Best(size_t count) const {
  std::vector<ScoredConfig> sorted = scored;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const ScoredConfig& a, const ScoredConfig& b) { return a.score > b.score; });
  if (sorted.size() > count) sorted.resize(count);
  return sorted;
}

namespace {

// A point of the space: a group and a value index per gene.
struct Genome {
  size_t group = 0;
  std::vector<int32_t> indices;
};

class Search {
 public:
  Search(const TileSearchSpace& space, const ProposalCheck& check, const BatchScore& score,
         const SearchOptions& options)
      : space_(space),
        check_(check),
        score_(score),
        options_(options),
        rng_(options.seed),
        max_proposals_(options.max_proposals > 0
                           ? options.max_proposals
                           : std::max<int64_t>(200 * options.budget, 100000)) {}

  StatusOr<SearchTrace> Run() {
    if (options_.strategy == SearchStrategy::kRandom) {
      KSELECT_RETURN_IF_ERROR(RunRandom());
    } else {
      KSELECT_RETURN_IF_ERROR(RunDifferentialEvolution());
    }
    trace_.stopped_by = BudgetSpent() ? "budget" : "proposal cap";
    for (const std::string& rule : rule_order_)
      trace_.rejected_by_rule.push_back(rejections_[rule]);
    std::stable_sort(
        trace_.rejected_by_rule.begin(), trace_.rejected_by_rule.end(),
        [](const RejectionCount& a, const RejectionCount& b) { return a.count > b.count; });
    return std::move(trace_);
  }

 private:
  bool BudgetSpent() const { return static_cast<int64_t>(trace_.scored.size()) >= options_.budget; }
  bool OutOfProposals() const { return trace_.proposals >= max_proposals_; }
  bool Done() const { return BudgetSpent() || OutOfProposals(); }
  int64_t Remaining() const { return options_.budget - static_cast<int64_t>(trace_.scored.size()); }

  int32_t UniformIndex(size_t count) {
    return std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(count) - 1)(rng_);
  }
  double Uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

  // A pipeline, then every gene, uniformly.
  Genome RandomGenome() {
    Genome g;
    g.group = static_cast<size_t>(UniformIndex(space_.groups.size()));
    for (const std::vector<int64_t>& values : space_.groups[g.group].values) {
      g.indices.push_back(UniformIndex(values.size()));
    }
    return g;
  }

  int64_t Value(const Genome& g, size_t gene) const {
    return space_.groups[g.group].values[gene][static_cast<size_t>(g.indices[gene])];
  }

  // The index of the value nearest `value` among `group`'s values of `gene` (ties: the lower).
  int32_t NearestIndex(size_t group, size_t gene, int64_t value) const {
    const std::vector<int64_t>& values = space_.groups[group].values[gene];
    const auto at = std::lower_bound(values.begin(), values.end(), value);
    if (at == values.end()) return static_cast<int32_t>(values.size() - 1);
    if (at == values.begin() || *at == value) return static_cast<int32_t>(at - values.begin());
    const auto below = at - 1;
    return static_cast<int32_t>((value - *below <= *at - value ? below : at) - values.begin());
  }

  // Counts the proposal; true when it can run the problem.
  bool Valid(const TileConfig& config) {
    ++trace_.proposals;
    std::optional<Rejection> rejection = check_(config);
    if (!rejection) return true;
    ++trace_.rejected;
    RejectionCount& count = rejections_[rejection->rule];
    if (count.count++ == 0) {
      count.rule = rejection->rule;
      count.example = std::move(rejection->reason);
      rule_order_.push_back(count.rule);
    }
    return false;
  }

  std::optional<double> Known(const std::string& key) const {
    const auto it = known_.find(key);
    if (it == known_.end()) return std::nullopt;
    return it->second;
  }

  // Scores the first Remaining() configs of `batch` in one model call; their scores, in order.
  StatusOr<std::vector<double>> Score(std::vector<TileConfig> batch) {
    if (static_cast<int64_t>(batch.size()) > Remaining()) {
      batch.resize(static_cast<size_t>(std::max<int64_t>(Remaining(), 0)));
    }
    if (batch.empty()) return std::vector<double>{};
    KSELECT_ASSIGN_OR_RETURN(std::vector<double> scores, score_(batch));
    if (scores.size() != batch.size()) {
      return InternalError("search: " + std::to_string(scores.size()) + " scores for " +
                           std::to_string(batch.size()) + " configs");
    }
    ++trace_.model_calls;
    for (size_t i = 0; i < batch.size(); ++i) {
      known_.emplace(ConfigKey(batch[i]), scores[i]);
      trace_.scored.push_back(
          {batch[i], scores[i], static_cast<int64_t>(trace_.scored.size()) + 1});
    }
    if (options_.progress) {
      options_.progress({.done = static_cast<int64_t>(trace_.scored.size()),
                         .total = options_.budget,
                         .unit = "configs"});
    }
    return scores;
  }

  // Valid random genomes never scored (nor in `pending`), up to `count`.
  std::vector<Genome> FreshRandom(size_t count, std::set<std::string>& pending) {
    std::vector<Genome> out;
    while (out.size() < count && !OutOfProposals()) {
      Genome g = RandomGenome();
      const TileConfig config = space_.Config(g.group, g.indices);
      if (!Valid(config)) continue;
      const std::string key = ConfigKey(config);
      if (Known(key) || !pending.insert(key).second) {
        ++trace_.duplicates;
        continue;
      }
      out.push_back(std::move(g));
    }
    return out;
  }

  std::vector<TileConfig> ConfigsOf(const std::vector<Genome>& genomes) const {
    std::vector<TileConfig> configs;
    for (const Genome& g : genomes) configs.push_back(space_.Config(g.group, g.indices));
    return configs;
  }

  Status RunRandom() {
    const auto batch = static_cast<size_t>(std::max(1, options_.batch));
    while (!Done()) {
      std::set<std::string> pending;
      const std::vector<Genome> fresh =
          FreshRandom(std::min<size_t>(batch, static_cast<size_t>(Remaining())), pending);
      if (fresh.empty()) break;
      KSELECT_RETURN_IF_ERROR(Score(ConfigsOf(fresh)).status());
    }
    return Status::Ok();
  }

  // mutant = a + F (b - c) per gene, rounded and clamped; the group is a gene too. Genes of
  // another group are read at the mutant group's nearest value.
  Genome Mutant(const Genome& a, const Genome& b, const Genome& c) {
    const double f = options_.weight;
    auto combine = [&](double va, double vb, double vc, size_t count) {
      const double x = std::floor(va + f * (vb - vc) + 0.5);
      return static_cast<int32_t>(std::clamp(x, 0.0, static_cast<double>(count - 1)));
    };
    Genome m;
    m.group =
        static_cast<size_t>(combine(static_cast<double>(a.group), static_cast<double>(b.group),
                                    static_cast<double>(c.group), space_.groups.size()));
    for (size_t gene = 0; gene < space_.genes.size(); ++gene) {
      const double ia = NearestIndex(m.group, gene, Value(a, gene));
      const double ib = NearestIndex(m.group, gene, Value(b, gene));
      const double ic = NearestIndex(m.group, gene, Value(c, gene));
      m.indices.push_back(combine(ia, ib, ic, space_.groups[m.group].values[gene].size()));
    }
    return m;
  }

  // Binomial crossover of the target `x` and the mutant `m`: each gene (the group first) from the
  // mutant with probability CR, one chosen gene always.
  Genome Trial(const Genome& x, const Genome& m) {
    const size_t genes = space_.genes.size();
    const auto forced = static_cast<size_t>(UniformIndex(genes + 1));  // genes = the group
    Genome t;
    t.group = (forced == genes || Uniform() < options_.crossover) ? m.group : x.group;
    for (size_t gene = 0; gene < genes; ++gene) {
      const bool from_mutant = forced == gene || Uniform() < options_.crossover;
      const Genome& source = from_mutant ? m : x;
      t.indices.push_back(source.group == t.group
                              ? source.indices[gene]
                              : NearestIndex(t.group, gene, Value(source, gene)));
    }
    return t;
  }

  // An invalid trial: re-draw one of the genes it does not share with its (valid) target, a few
  // times, until it is valid. False when it stays invalid.
  bool Repair(const Genome& x, Genome& t) {
    for (int attempt = 0; attempt < options_.repair_attempts && !OutOfProposals(); ++attempt) {
      std::vector<size_t> mutated;
      for (size_t gene = 0; gene < space_.genes.size(); ++gene) {
        const size_t count = space_.groups[t.group].values[gene].size();
        if (count > 1 && Value(t, gene) != Value(x, gene)) mutated.push_back(gene);
      }
      if (mutated.empty()) return false;
      const size_t gene = mutated[static_cast<size_t>(UniformIndex(mutated.size()))];
      t.indices[gene] = UniformIndex(space_.groups[t.group].values[gene].size());
      if (Valid(space_.Config(t.group, t.indices))) return true;
    }
    return false;
  }

  Status RunDifferentialEvolution() {
    const int64_t automatic = std::clamp<int64_t>(options_.budget / 10, 8, 32);
    const auto size = static_cast<size_t>(std::min<int64_t>(
        options_.population > 0 ? options_.population : automatic, options_.budget));
    std::set<std::string> pending;
    std::vector<Genome> population = FreshRandom(size, pending);
    KSELECT_ASSIGN_OR_RETURN(std::vector<double> fitness, Score(ConfigsOf(population)));
    population.resize(fitness.size());
    // Too few valid configs to pick three others from: what was found is the answer.
    if (population.size() < 4) return Status::Ok();
    int stagnant = 0;
    double best_so_far = *std::max_element(fitness.begin(), fitness.end());
    while (!Done()) {
      ++trace_.generations;
      struct Pending {
        size_t target;
        Genome trial;
        std::optional<double> score;  // known already (a config scored before)
        size_t slot = 0;              // else its place in the batch
      };
      std::vector<Pending> trials;
      std::vector<TileConfig> batch;
      std::map<std::string, size_t> batch_slot;
      for (size_t i = 0; i < population.size() && !OutOfProposals(); ++i) {
        size_t pick[3];
        for (int p = 0; p < 3; ++p) {
          do {
            pick[p] = static_cast<size_t>(UniformIndex(population.size()));
          } while (pick[p] == i || (p > 0 && pick[p] == pick[0]) || (p > 1 && pick[p] == pick[1]));
        }
        Genome trial = Trial(population[i],
                             Mutant(population[pick[0]], population[pick[1]], population[pick[2]]));
        if (!Valid(space_.Config(trial.group, trial.indices)) && !Repair(population[i], trial)) {
          continue;
        }
        const TileConfig config = space_.Config(trial.group, trial.indices);
        const std::string key = ConfigKey(config);
        Pending p{.target = i, .trial = std::move(trial)};
        if (const std::optional<double> known = Known(key)) {
          ++trace_.duplicates;
          p.score = known;
        } else if (const auto it = batch_slot.find(key); it != batch_slot.end()) {
          ++trace_.duplicates;
          p.slot = it->second;
        } else {
          p.slot = batch.size();
          batch_slot.emplace(key, batch.size());
          batch.push_back(config);
        }
        trials.push_back(std::move(p));
      }
      KSELECT_ASSIGN_OR_RETURN(const std::vector<double> scores, Score(batch));
      // Greedy selection; ties go to the trial, so the population drifts across plateaus.
      for (Pending& p : trials) {
        if (!p.score && p.slot < scores.size()) p.score = scores[p.slot];
        if (p.score && *p.score >= fitness[p.target]) {
          population[p.target] = std::move(p.trial);
          fitness[p.target] = *p.score;
        }
      }
      // Stagnant: the best did not improve (the population converged, or keeps proposing what
      // it has seen).
      const double best_now = *std::max_element(fitness.begin(), fitness.end());
      stagnant = best_now > best_so_far ? 0 : stagnant + 1;
      best_so_far = std::max(best_so_far, best_now);
      if (stagnant >= std::max(1, options_.stagnation_generations) && !Done()) {
        // Converged: keep the best, draw the rest afresh.
        ++trace_.restarts;
        stagnant = 0;
        const size_t best =
            static_cast<size_t>(std::max_element(fitness.begin(), fitness.end()) - fitness.begin());
        std::swap(population[0], population[best]);
        std::swap(fitness[0], fitness[best]);
        std::set<std::string> none;
        std::vector<Genome> fresh = FreshRandom(population.size() - 1, none);
        KSELECT_ASSIGN_OR_RETURN(const std::vector<double> fresh_scores, Score(ConfigsOf(fresh)));
        fresh.resize(fresh_scores.size());
        for (size_t i = 0; i < fresh.size(); ++i) {
          population[1 + i] = std::move(fresh[i]);
          fitness[1 + i] = fresh_scores[i];
        }
      }
    }
    return Status::Ok();
  }

  const TileSearchSpace& space_;
  const ProposalCheck& check_;
  const BatchScore& score_;
  const SearchOptions& options_;
  std::mt19937_64 rng_;
  const int64_t max_proposals_;
  SearchTrace trace_;
  std::unordered_map<std::string, double> known_;  // ConfigKey -> score
  std::map<std::string, RejectionCount> rejections_;
  std::vector<std::string> rule_order_;  // first rejection order, for stable ties
};

Status CheckSearchOptions(const SearchOptions& o) {
  if (o.budget <= 0) {
    return InvalidArgumentError("search budget must be at least 1 config, got " +
                                std::to_string(o.budget));
  }
  if (o.top < 1) return InvalidArgumentError("search: top must be at least 1");
  if (o.batch < 1) return InvalidArgumentError("search: batch must be at least 1");
  if (o.population != 0 && o.population < 4) {
    return InvalidArgumentError("search: a differential evolution population needs 4 or more");
  }
  if (!(o.weight > 0 && o.weight <= 2)) {
    return InvalidArgumentError("search: the differential weight F must be in (0, 2]");
  }
  if (!(o.crossover >= 0 && o.crossover <= 1)) {
    return InvalidArgumentError("search: the crossover rate CR must be in [0, 1]");
  }
  if (o.repair_attempts < 0) return InvalidArgumentError("search: repair attempts must be >= 0");
  return Status::Ok();
}

}  // namespace

StatusOr<SearchTrace> RunTileSearch(const TileSearchSpace& space, const ProposalCheck& check,
                                    const BatchScore& score, const SearchOptions& options) {
  KSELECT_RETURN_IF_ERROR(CheckSearchOptions(options));
  if (space.groups.empty()) return InvalidArgumentError("search: an empty space");
  return Search(space, check, score, options).Run();
}

// ---------------------------------------------------------------------------------------------
// The searcher: a model, the space and the baselines.

struct TileSearcher::Impl {
  TileSearchOptions options;
  std::unique_ptr<Selector> selector;
  RuleSet space_rules;
  TileSearchSpace space;
  std::vector<tile::TileRuleSet> baselines;

  // The model's scores for `configs` (Selector::Rank), in their order.
  StatusOr<std::vector<double>> Score(const GemmProblem& problem,
                                      std::span<const TileConfig> configs) const {
    std::vector<KernelConfig> candidates(configs.begin(), configs.end());
    KSELECT_ASSIGN_OR_RETURN(const Selection ranked, selector->Rank(problem, candidates));
    std::unordered_map<std::string, double> by_key;
    for (const RankedConfig& r : ranked.ranked) by_key.emplace(ConfigKey(r.config), r.score);
    std::vector<double> scores;
    for (const KernelConfig& c : candidates) scores.push_back(by_key.at(ConfigKey(c)));
    return scores;
  }
};

TileSearcher::TileSearcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TileSearcher::~TileSearcher() = default;

StatusOr<std::unique_ptr<TileSearcher>> TileSearcher::Open(const TileSearchOptions& options) {
  KSELECT_RETURN_IF_ERROR(CheckSearchOptions(options.search));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.rules_dir.empty()) impl->options.rules_dir = tile::DefaultRulesRoot();
  SelectorOptions so;
  so.provider = options.provider;
  so.top_k = 1;
  so.predicted_times = 0;  // the search reads the scores alone
  so.check_can_implement = false;
  so.query_heuristic = false;
  KSELECT_ASSIGN_OR_RETURN(impl->selector, Selector::Open(options.model_dir, so));
  const Model& model = impl->selector->model();
  if (model.spec().provider != Provider::kTile) {
    return InvalidArgumentError("model " + options.model_dir + " ranks " +
                                std::string(ProviderName(model.spec().provider)) +
                                " configs: kselect search needs a tile model (its feature spec's "
                                "provider is tile, e.g. models/h200_tile_bf16_tn)");
  }
  if (model.UsesPeerRanks()) {
    return InvalidArgumentError("model " + options.model_dir +
                                " needs a provider heuristic's picks, which the tile engine has "
                                "not: kselect search cannot score with it");
  }
  KSELECT_ASSIGN_OR_RETURN(
      impl->space_rules,
      FindRuleSetByNameOrPath(impl->options.rules_dir, Provider::kTile, options.rule_set));
  KSELECT_ASSIGN_OR_RETURN(impl->space, MakeTileSearchSpace(impl->space_rules));
  for (const std::string& name : options.baselines) {
    KSELECT_ASSIGN_OR_RETURN(tile::TileRuleSet set,
                             tile::LoadRuleSet(name, impl->options.rules_dir));
    impl->baselines.push_back(std::move(set));
  }
  return std::unique_ptr<TileSearcher>(new TileSearcher(std::move(impl)));
}

const TileSearchOptions& TileSearcher::options() const {
  return impl_->options;
}
const TileSearchSpace& TileSearcher::space() const {
  return impl_->space;
}
const std::string& TileSearcher::model_fingerprint() const {
  return impl_->selector->model_fingerprint();
}
bool TileSearcher::ScoresAreTflops() const {
  return !impl_->selector->model().Ranks(Target::kTflops);
}

StatusOr<TileSearchResult> TileSearcher::Run(const GemmProblem& problem) const {
  const auto start = std::chrono::steady_clock::now();
  const TileSearchOptions& o = impl_->options;
  KSELECT_ASSIGN_OR_RETURN(const ProposalCheck check,
                           MakeProposalCheck(problem, impl_->space_rules, o.provider));
  const BatchScore score = [&](std::span<const TileConfig> configs) {
    return impl_->Score(problem, configs);
  };
  TileSearchResult result;
  result.problem = problem;
  result.options = o.search;
  result.rule_set = impl_->space.rule_set;
  result.rules_fingerprint = impl_->space.rules_fingerprint;
  result.space_size = impl_->space.Size();
  KSELECT_ASSIGN_OR_RETURN(result.trace, RunTileSearch(impl_->space, check, score, o.search));
  if (result.trace.scored.empty()) {
    const std::string most = result.trace.rejected_by_rule.empty()
                                 ? ""
                                 : " (most by " + result.trace.rejected_by_rule.front().rule +
                                       ": " + result.trace.rejected_by_rule.front().example + ")";
    return CannotImplementError("no config of the " + result.rule_set + " space can run " +
                                problem.ToString() + ": " + std::to_string(result.trace.proposals) +
                                " proposals rejected" + most);
  }
  result.top = result.trace.Best(static_cast<size_t>(o.search.top));

  for (const tile::TileRuleSet& set : impl_->baselines) {
    SearchBaseline baseline;
    baseline.rule_set = set.name;
    KSELECT_ASSIGN_OR_RETURN(const ProposalCheck can_run,
                             MakeProposalCheck(problem, set.rules, o.provider));
    std::vector<TileConfig> configs;
    for (const TileConfig& c : set.configs) {
      if (!can_run(c)) configs.push_back(c);
    }
    baseline.configs = static_cast<int64_t>(configs.size());
    if (!configs.empty()) {
      KSELECT_ASSIGN_OR_RETURN(const std::vector<double> scores, impl_->Score(problem, configs));
      const size_t best =
          static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
      baseline.best = ScoredConfig{configs[best], scores[best], static_cast<int64_t>(best) + 1};
      // Scores differ in the last bits between batches (features are the same, the sums are not
      // reordered, but be lenient): reached means within 1e-9 relative.
      const double target = scores[best] - 1e-9 * std::abs(scores[best]);
      for (const ScoredConfig& s : result.trace.scored) {
        if (s.score >= target) {
          baseline.search_scored_to_reach = s.scored_at;
          break;
        }
      }
    }
    result.baselines.push_back(std::move(baseline));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// ---------------------------------------------------------------------------------------------
// JSON.

namespace {

using json = nlohmann::json;

json ConfigJson(const TileConfig& config) {
  return json_codec::KernelConfigToJson(KernelConfig(config));
}

json ScoredJson(const ScoredConfig& s) {
  return {{"config", ConfigJson(s.config)},
          {"name", DescribeConfig(KernelConfig(s.config))},
          {"predicted", s.score},
          {"scored_at", s.scored_at}};
}

json OptionalCount(const std::optional<int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

json MeasurementJson(const SearchMeasurement& m, const GemmProblem& problem) {
  json configs = json::array();
  for (const MeasuredConfig& c : m.configs) {
    json row = {{"role", c.role},
                {"config", ConfigJson(c.config)},
                {"name", DescribeConfig(KernelConfig(c.config))},
                {"predicted", c.predicted},
                {"verified", c.verified},
                {"verification", c.verification}};
    if (c.figure) {
      row["median_ms"] = c.figure->median_ms;
      row["tflops"] = c.measured_tflops;
      row["hbm_fraction"] = HbmFraction(problem, c.figure->median_ms, m.peak_gb_s);
      row["speedup_over_cublaslt"] = c.figure->speedup;
      row["predicted_over_measured"] =
          c.predicted_over_measured > 0 ? json(c.predicted_over_measured) : json(nullptr);
    } else {
      row["median_ms"] = row["tflops"] = row["hbm_fraction"] = row["speedup_over_cublaslt"] =
          row["predicted_over_measured"] = nullptr;
    }
    configs.push_back(std::move(row));
  }
  return {{"cublaslt_pick", bench::FigureJson(m.cublaslt_pick, problem, m.peak_gb_s)},
          {"configs", std::move(configs)},
          {"note", m.note}};
}

}  // namespace

std::string SearchJson(std::span<const TileSearchResult> results, const TileSearcher& searcher,
                       const HardwareProfile* hardware, const std::string& device_kind,
                       const std::string& run_id) {
  json rows = json::array();
  for (const TileSearchResult& r : results) {
    json rejected = json::array();
    for (const RejectionCount& c : r.trace.rejected_by_rule) {
      rejected.push_back({{"rule", c.rule}, {"count", c.count}, {"example", c.example}});
    }
    json top = json::array();
    for (const ScoredConfig& s : r.top) top.push_back(ScoredJson(s));
    json baselines = json::array();
    for (const SearchBaseline& b : r.baselines) {
      baselines.push_back({{"rule_set", b.rule_set},
                           {"configs_scored", b.configs},
                           {"best", b.best ? ScoredJson(*b.best) : json(nullptr)},
                           {"search_reached", b.search_scored_to_reach.has_value()},
                           {"search_scored_to_reach", OptionalCount(b.search_scored_to_reach)}});
    }
    const SearchTrace& t = r.trace;
    json row = {
        {"problem", json_codec::GemmProblemToJson(r.problem)},
        {"strategy", SearchStrategyName(r.options.strategy)},
        {"budget", r.options.budget},
        {"seed", r.options.seed},
        {"rule_set", r.rule_set},
        {"space_size", static_cast<int64_t>(r.space_size)},
        {"proposals", t.proposals},
        {"rejected", t.rejected},
        {"rejected_share", t.proposals > 0 ? static_cast<double>(t.rejected) / t.proposals : 0.0},
        {"rejected_by_rule", std::move(rejected)},
        {"duplicates", t.duplicates},
        {"scored", t.scored.size()},
        {"model_calls", t.model_calls},
        {"generations", t.generations},
        {"restarts", t.restarts},
        {"stopped_by", t.stopped_by},
        {"top", std::move(top)},
        {"baselines", std::move(baselines)},
        {"seconds", r.seconds},
        {"measured", r.measured ? MeasurementJson(*r.measured, r.problem) : json(nullptr)}};
    rows.push_back(std::move(row));
  }
  const TileSearchOptions& o = searcher.options();
  json root = {
      {"format", "kselect.search"},
      {"format_version", 1},
      {"run_id", run_id},
      {"model", {{"dir", o.model_dir}, {"fingerprint", searcher.model_fingerprint()}}},
      {"predicted_unit", searcher.ScoresAreTflops()
                             ? "TFLOPS"
                             : "ranking score (the model is a ranker: not TFLOPS, no ratios)"},
      {"rule_set", searcher.space().rule_set},
      {"rules_fingerprint", FingerprintText(searcher.space().rules_fingerprint)},
      {"options",
       {{"strategy", SearchStrategyName(o.search.strategy)},
        {"budget", o.search.budget},
        {"seed", o.search.seed},
        {"top", o.search.top},
        {"population", o.search.population},
        {"weight", o.search.weight},
        {"crossover", o.search.crossover},
        {"repair_attempts", o.search.repair_attempts}}},
      {"results", std::move(rows)}};
  // Without a device (the CPU-only search) the record holds the tool and the model alone.
  Provenance provenance = ProvenanceOf(hardware != nullptr ? *hardware : HardwareProfile{});
  provenance.device_kind = device_kind;
  provenance.model_fingerprint = searcher.model_fingerprint();
  json_codec::WriteProvenance(provenance, root);
  if (hardware != nullptr) {
    root["peak_mem_bandwidth_gb_s"] = hardware->peak_mem_bandwidth_gb_s;
    root["method"] =
        "the best proposals compiled (NVRTC), verified against the reference, then timed with "
        "cuBLASLt's heuristic rank-1 pick in interleaved rounds (graph timer, operands rotated "
        "past 2 x L2); speedups are medians of per-round ratios";
  }
  return root.dump(2) + "\n";
}

}  // namespace kselect
