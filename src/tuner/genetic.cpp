// The tuner's genetic algorithm over a SearchSpace (search_space.h; CPU only). Settings follow what
// works on discrete kernel-parameter spaces (docs/lab/tuner.md): tournament selection, uniform
// crossover over coupled groups, neighbour mutation, elitism (timings are noisy: the best must
// survive), restarts on stagnation, and a cache so no config is timed twice.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "kselect/config_schema.h"
#include "kselect/tuner.h"

namespace kselect {
std::vector<size_t> GeneticResult::Fastest(size_t count) const {
  std::vector<std::pair<double, size_t>> timed;
  for (const auto& [config, ms] : evaluated) {
    if (std::isfinite(ms)) timed.emplace_back(ms, config);
  }
  std::sort(timed.begin(), timed.end());
  std::vector<size_t> out;
  for (size_t i = 0; i < timed.size() && out.size() < count; ++i) out.push_back(timed[i].second);
  return out;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

class GeneticSearch {
 public:
  GeneticSearch(const SearchSpace& space, const FitnessFunction& fitness,
                const GeneticOptions& options, const std::function<bool()>& stop)
      : space_(space),
        fitness_(fitness),
        options_(options),
        stop_(stop),
        rng_(options.seed),
        mutation_rate_(options.mutation_rate) {}

  GeneticResult Run(std::span<const size_t> seeds) {
    std::vector<size_t> population;
    for (const size_t seed : seeds) {
      if (seed >= space_.configs.size() || Evaluated(seed)) continue;
      if (!Evaluate(seed)) return Finish();
      population.push_back(seed);
    }
    if (!FillRandom(population)) return Finish();
    double best_at_last_gain = BestMs();
    int stagnant = 0;
    int fruitless_restarts = 0;
    for (int generation = 0; options_.generations <= 0 || generation < options_.generations;
         ++generation) {
      result_.generations = generation + 1;
      std::vector<size_t> next = Elites(population);
      int attempts = 0;
      while (static_cast<int>(next.size()) < options_.population) {
        const size_t child = MakeChild(population, &attempts);
        if (!Evaluated(child) && !Evaluate(child)) return Finish();
        next.push_back(child);
      }
      population = std::move(next);
      if (AllEvaluated()) {
        result_.stopped_by = "space exhausted";
        return Finish();
      }
      if (BestMs() < best_at_last_gain * 0.995) {
        best_at_last_gain = BestMs();
        stagnant = 0;
        fruitless_restarts = 0;
      } else if (++stagnant >= options_.stagnation_generations) {
        // The stated stop: `max_restarts` restarts in a row, each with wider mutation than the
        // last, found nothing 0.5 % faster. Otherwise the search runs until its budget.
        if (fruitless_restarts >= options_.max_restarts) {
          result_.stopped_by = "converged";
          return Finish();
        }
        ++result_.restarts;
        ++fruitless_restarts;
        stagnant = 0;
        mutation_rate_ = std::min(0.9, options_.mutation_rate + 0.15 * fruitless_restarts);
        // Keep the elites, draw the rest afresh (untimed configs first).
        population = Elites(population);
        if (!FillRandom(population)) return Finish();
      }
    }
    result_.stopped_by = "generations";
    return Finish();
  }

 private:
  bool Evaluated(size_t config) const { return ms_.contains(config); }
  bool AllEvaluated() const { return ms_.size() >= space_.configs.size(); }
  double Ms(size_t config) const {
    const auto it = ms_.find(config);
    return it == ms_.end() ? kInf : it->second;
  }
  double BestMs() const { return result_.best ? result_.best_ms : kInf; }

  // Times `config`; false when the search must stop (budget or evaluation cap) before it.
  bool Evaluate(size_t config) {
    if (AllEvaluated()) {
      result_.stopped_by = "space exhausted";
      return false;
    }
    if (options_.max_evaluations > 0 &&
        static_cast<int64_t>(result_.evaluated.size()) >= options_.max_evaluations) {
      result_.stopped_by = "evaluations";
      return false;
    }
    if (stop_ && stop_()) {
      result_.stopped_by = "budget";
      return false;
    }
    const std::optional<double> ms = fitness_(config);
    const double value = ms && std::isfinite(*ms) && *ms > 0 ? *ms : kInf;
    ms_[config] = value;
    result_.evaluated.emplace_back(config, value);
    if (value < BestMs()) {
      result_.best = config;
      result_.best_ms = value;
    }
    return true;
  }

  // Tops the population up with random configs, untimed ones when any are left.
  bool FillRandom(std::vector<size_t>& population) {
    std::uniform_int_distribution<size_t> pick(0, space_.configs.size() - 1);
    while (static_cast<int>(population.size()) < options_.population) {
      size_t config = pick(rng_);
      for (int tries = 0; tries < 64 && Evaluated(config); ++tries) config = pick(rng_);
      if (Evaluated(config)) {
        // Dense search so far: walk to the next untimed config.
        for (size_t step = 0; step < space_.configs.size() && Evaluated(config); ++step) {
          config = (config + 1) % space_.configs.size();
        }
      }
      if (!Evaluated(config) && !Evaluate(config)) return false;
      population.push_back(config);
    }
    return true;
  }

  std::vector<size_t> Elites(const std::vector<size_t>& population) const {
    std::vector<size_t> sorted = population;
    std::sort(sorted.begin(), sorted.end(),
              [&](size_t a, size_t b) { return Ms(a) < Ms(b) || (Ms(a) == Ms(b) && a < b); });
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::vector<size_t> elites;
    for (const size_t config : sorted) {
      if (static_cast<int>(elites.size()) >= options_.elites) break;
      if (std::isfinite(Ms(config))) elites.push_back(config);
    }
    return elites;
  }

  size_t Tournament(const std::vector<size_t>& population) {
    std::uniform_int_distribution<size_t> pick(0, population.size() - 1);
    size_t winner = population[pick(rng_)];
    for (int i = 1; i < options_.tournament; ++i) {
      const size_t other = population[pick(rng_)];
      if (Ms(other) < Ms(winner)) winner = other;
    }
    return winner;
  }

  // A child of two tournament winners: crossover, mutation, then the nearest config the space
  // has. Tries a few times for a child not timed yet; returns a timed one when none comes.
  size_t MakeChild(const std::vector<size_t>& population, int* attempts) {
    std::uniform_real_distribution<double> unit(0, 1);
    size_t child = population.front();
    for (int tries = 0; tries < 16; ++tries, ++*attempts) {
      const size_t a = Tournament(population);
      const size_t b = Tournament(population);
      std::vector<int32_t> genes = space_.genes[a];
      if (unit(rng_) < options_.crossover_rate) {
        for (const std::vector<int>& group : space_.groups) {
          if (unit(rng_) < 0.5) continue;
          for (const int g : group)
            genes[static_cast<size_t>(g)] = space_.genes[b][static_cast<size_t>(g)];
        }
      }
      int mutated = -1;
      while (unit(rng_) < mutation_rate_) mutated = Mutate(genes);
      child = Nearest(genes, mutated);
      if (!Evaluated(child)) return child;
    }
    return child;
  }

  // Moves one gene (with more than one value) to a neighbouring value; returns the gene.
  int Mutate(std::vector<int32_t>& genes) {
    std::vector<int> movable;
    for (size_t g = 0; g < genes.size(); ++g) {
      if (space_.values[g].size() > 1) movable.push_back(static_cast<int>(g));
    }
    if (movable.empty()) return -1;
    const int g = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng_)];
    const int32_t last = static_cast<int32_t>(space_.values[static_cast<size_t>(g)].size()) - 1;
    int32_t& value = genes[static_cast<size_t>(g)];
    const bool up = value == 0 || (value < last && std::bernoulli_distribution(0.5)(rng_));
    value += up ? 1 : -1;
    return g;
  }

  // The config with these genes, else the one nearest by genes differing (keeping the mutated
  // gene where any config has its new value), ties broken at random.
  size_t Nearest(const std::vector<int32_t>& genes, int mutated) {
    if (const auto exact = space_.Find(genes)) return *exact;
    int best_distance = std::numeric_limits<int>::max();
    std::vector<size_t> best;
    for (int pass = 0; pass < 2 && best.empty(); ++pass) {
      for (size_t i = 0; i < space_.genes.size(); ++i) {
        const std::vector<int32_t>& other = space_.genes[i];
        if (pass == 0 && mutated >= 0 &&
            other[static_cast<size_t>(mutated)] != genes[static_cast<size_t>(mutated)]) {
          continue;
        }
        int distance = 0;
        for (size_t g = 0; g < genes.size(); ++g) distance += other[g] != genes[g];
        if (distance < best_distance) {
          best_distance = distance;
          best.assign(1, i);
        } else if (distance == best_distance) {
          best.push_back(i);
        }
      }
    }
    // Untimed configs first among the equally near.
    std::vector<size_t> fresh;
    for (const size_t i : best) {
      if (!Evaluated(i)) fresh.push_back(i);
    }
    const std::vector<size_t>& from = fresh.empty() ? best : fresh;
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng_)];
  }

  GeneticResult Finish() {
    if (result_.stopped_by.empty()) result_.stopped_by = "generations";
    return std::move(result_);
  }

  const SearchSpace& space_;
  const FitnessFunction& fitness_;
  const GeneticOptions& options_;
  const std::function<bool()>& stop_;
  std::mt19937_64 rng_;
  double mutation_rate_;  // widened by each restart that finds nothing better
  std::unordered_map<size_t, double> ms_;
  GeneticResult result_;
};

}  // namespace

GeneticResult RunGeneticSearch(const SearchSpace& space, std::span<const size_t> seeds,
                               const FitnessFunction& fitness, const GeneticOptions& options,
                               const std::function<bool()>& stop) {
  KSELECT_CHECK(!space.configs.empty());
  KSELECT_CHECK(options.population >= 2 && options.tournament >= 1 && options.elites >= 0);
  GeneticSearch search(space, fitness, options, stop);
  return search.Run(seeds);
}

}  // namespace kselect
