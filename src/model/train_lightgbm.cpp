// Training through LightGBM's C API (train.h); inference is model.cpp, without LightGBM.
//
// Cross-validation is honest: each outer fold holds out whole problem shapes (GroupKFold, layout
// not in the key), and the number of trees is picked by early stopping on an inner split of the
// fold's *training* shapes. The fold's validation rows are only predicted, never used to stop.
// The final model uses the median of the folds' picked tree counts, trained on every row.
// LightGBM's feature bins come from all rows' features (no labels): one binning for every fold.
#include <LightGBM/c_api.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kselect/train.h"
#include "kselect/version.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Status LgbmError(std::string_view what) {
  return InternalError("LightGBM " + std::string(what) + ": " + LGBM_GetLastError());
}

class DatasetPtr {
 public:
  DatasetPtr() = default;
  explicit DatasetPtr(DatasetHandle h) : h_(h) {}
  DatasetPtr(DatasetPtr&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  DatasetPtr& operator=(DatasetPtr&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~DatasetPtr() {
    if (h_) LGBM_DatasetFree(h_);
  }
  DatasetHandle get() const { return h_; }

 private:
  DatasetHandle h_ = nullptr;
};

class BoosterPtr {
 public:
  BoosterPtr() = default;
  explicit BoosterPtr(BoosterHandle h) : h_(h) {}
  BoosterPtr(BoosterPtr&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  BoosterPtr& operator=(BoosterPtr&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~BoosterPtr() {
    if (h_) LGBM_BoosterFree(h_);
  }
  BoosterHandle get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  BoosterHandle h_ = nullptr;
};

// Loads a booster from `path` (gzip or plain LightGBM text): a warm start's trees to merge.
StatusOr<BoosterHandle> LoadBooster(const fs::path& path, int* iterations) {
  KSELECT_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path.string()));
  BoosterHandle h = nullptr;
  if (LGBM_BoosterLoadModelFromString(text.c_str(), iterations, &h) != 0) {
    return ParseError(path.string() + ": not a readable LightGBM model (" + LGBM_GetLastError() +
                      "); retrain or restore the file");
  }
  return h;
}

Status SaveBooster(BoosterHandle h, const fs::path& path) {
  int64_t length = 0;
  if (LGBM_BoosterSaveModelToString(h, 0, -1, C_API_FEATURE_IMPORTANCE_SPLIT, 0, &length,
                                    nullptr) != 0) {
    return InternalError(std::string("LightGBM save model: ") + LGBM_GetLastError());
  }
  std::string text(static_cast<size_t>(length), '\0');
  if (LGBM_BoosterSaveModelToString(h, 0, -1, C_API_FEATURE_IMPORTANCE_SPLIT, length, &length,
                                    text.data()) != 0) {
    return InternalError(std::string("LightGBM save model: ") + LGBM_GetLastError());
  }
  text.resize(static_cast<size_t>(std::max<int64_t>(length - 1, 0)));  // drop the terminating NUL
  return WriteGzipFile(path.string(), text);
}

double TargetValue(const Candidate& c, Target t) {
  switch (t) {
    case Target::kTflops:
      return c.tflops;
    case Target::kLatency:
      return c.latency_ms;
    case Target::kBandwidth:
      return c.bandwidth_gb_s;
  }
  return c.tflops;
}

constexpr int kMaxGrade = kMaxRelevanceGrade;

int MachineCount(const std::string& machines) {
  return static_cast<int>(std::count(machines.begin(), machines.end(), ',')) + 1;
}

// LightGBM's network for distributed training, from before the dataset is built (its bin
// boundaries are found across the processes) until the last fit; freed on every path.
class Network {
 public:
  static StatusOr<std::unique_ptr<Network>> Join(const TrainOptions& o) {
    const int count = MachineCount(o.machines);
    if (count < 2) {
      return InvalidArgumentError("--machines lists " + std::to_string(count) +
                                  " process; distributed training needs at least 2 "
                                  "(host:port,host:port)");
    }
    if (o.listen_port <= 0 || o.listen_port > 65535) {
      return InvalidArgumentError("--listen-port: this process's port from --machines (1-65535)");
    }
    if (LGBM_NetworkInit(o.machines.c_str(), o.listen_port, o.network_timeout_minutes, count) !=
        0) {
      return UnavailableError("LightGBM network (" + o.machines + ", listening on " +
                              std::to_string(o.listen_port) + "): " + LGBM_GetLastError());
    }
    return std::unique_ptr<Network>(new Network());
  }
  ~Network() { LGBM_NetworkFree(); }
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

 private:
  Network() = default;
};

// `params` ("key=value key=value") with each of `extra` replacing its key or appended.
std::string WithExtraParams(const std::string& params,
                            const std::vector<std::pair<std::string, std::string>>& extra) {
  if (extra.empty()) return params;
  std::vector<std::string> tokens;
  std::istringstream in(params);
  for (std::string token; in >> token;) tokens.push_back(token);
  for (const auto& [key, value] : extra) {
    std::erase_if(tokens, [&](const std::string& t) { return t.rfind(key + "=", 0) == 0; });
    tokens.push_back(key + "=" + value);
  }
  std::string out;
  for (const std::string& t : tokens) out += (out.empty() ? "" : " ") + t;
  return out;
}

std::string BoosterParams(const TrainOptions& o, bool ranking) {
  const LightGbmParams& p = o.params;
  std::ostringstream s;
  if (ranking) {
    // Early stopping watches NDCG@1 and NDCG@3 (Fit stops when either stalls).
    s << "objective=lambdarank metric=ndcg eval_at=1,3 lambdarank_truncation_level=50 "
         "label_gain=";
    for (int g = 0; g <= kMaxGrade; ++g) s << (g ? "," : "") << g;
  } else {
    s << "objective=regression metric=rmse";
  }
  s << " num_leaves=" << p.num_leaves << " max_depth=" << p.max_depth
    << " learning_rate=" << p.learning_rate << " min_data_in_leaf=" << p.min_data_in_leaf
    << " feature_fraction=" << p.feature_fraction << " bagging_fraction=" << p.bagging_fraction
    << " bagging_freq=" << p.bagging_freq << " lambda_l1=" << p.lambda_l1
    << " lambda_l2=" << p.lambda_l2 << " seed=" << o.seed
    << " deterministic=true force_row_wise=true num_threads=" << o.num_threads << " verbose=-1";
  if (!o.machines.empty()) s << " tree_learner=data num_machines=" << MachineCount(o.machines);
  return WithExtraParams(s.str(), p.extra);
}

std::string DatasetParams(const TrainOptions& o, const FeatureSpec& spec) {
  std::string s = "max_bin=" + std::to_string(o.params.max_bin) +
                  " verbose=-1 seed=" + std::to_string(o.seed) +
                  " num_threads=" + std::to_string(o.num_threads);
  const std::vector<int> cats = spec.CategoricalIndices();
  if (!cats.empty()) {
    s += " categorical_feature=";
    for (size_t i = 0; i < cats.size(); ++i) s += (i ? "," : "") + std::to_string(cats[i]);
  }
  return WithExtraParams(s, o.params.extra);
}

StatusOr<std::vector<double>> PredictRows(BoosterHandle booster, const std::vector<double>& x,
                                          size_t cols, std::span<const int32_t> rows,
                                          int num_iteration) {
  std::vector<double> sub(rows.size() * cols);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(rows[i] * cols), cols,
                sub.begin() + static_cast<std::ptrdiff_t>(i * cols));
  }
  std::vector<double> out(rows.size());
  if (rows.empty()) return out;
  int64_t len = 0;
  if (LGBM_BoosterPredictForMat(booster, sub.data(), C_API_DTYPE_FLOAT64,
                                static_cast<int32_t>(rows.size()), static_cast<int32_t>(cols), 1,
                                C_API_PREDICT_NORMAL, 0, num_iteration, "num_threads=1", &len,
                                out.data()) != 0) {
    return LgbmError("predict");
  }
  return out;
}

struct FitResult {
  BoosterPtr booster;
  int best_iteration = 0;  // trees of this fit to keep
};

// Trains on `train` rows, early-stopping on `valid` rows when there are any; else a fixed
// `max_rounds`. `labels` and `init` are indexed by row of the full dataset.
StatusOr<FitResult> Fit(DatasetHandle full, std::span<const int32_t> train,
                        std::span<const int32_t> valid, const std::vector<float>& labels,
                        const std::vector<double>* init, const std::string& dataset_params,
                        const std::string& booster_params, int max_rounds, int patience,
                        std::span<const int> query_of_row, const std::vector<float>* weights,
                        const TrainOptions& options) {
  const bool ranking = !query_of_row.empty();
  auto subset = [&](std::span<const int32_t> rows) -> StatusOr<DatasetPtr> {
    DatasetHandle h = nullptr;
    if (LGBM_DatasetGetSubset(full, rows.data(), static_cast<int32_t>(rows.size()),
                              dataset_params.c_str(), &h) != 0) {
      return LgbmError("subset");
    }
    DatasetPtr d(h);
    std::vector<float> y(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) y[i] = labels[static_cast<size_t>(rows[i])];
    if (LGBM_DatasetSetField(h, "label", y.data(), static_cast<int>(y.size()),
                             C_API_DTYPE_FLOAT32) != 0) {
      return LgbmError("label");
    }
    if (ranking) {
      // Rows of one problem are contiguous: each run is one query.
      std::vector<int32_t> sizes;
      for (size_t i = 0; i < rows.size(); ++i) {
        const int q = query_of_row[static_cast<size_t>(rows[i])];
        if (i == 0 || q != query_of_row[static_cast<size_t>(rows[i - 1])]) sizes.push_back(0);
        ++sizes.back();
      }
      if (LGBM_DatasetSetField(h, "group", sizes.data(), static_cast<int>(sizes.size()),
                               C_API_DTYPE_INT32) != 0) {
        return LgbmError("query groups");
      }
    }
    if (weights) {
      std::vector<float> w(rows.size());
      for (size_t i = 0; i < rows.size(); ++i) w[i] = (*weights)[static_cast<size_t>(rows[i])];
      if (LGBM_DatasetSetField(h, "weight", w.data(), static_cast<int>(w.size()),
                               C_API_DTYPE_FLOAT32) != 0) {
        return LgbmError("weights");
      }
    }
    if (init) {
      std::vector<double> s(rows.size());
      for (size_t i = 0; i < rows.size(); ++i) s[i] = (*init)[static_cast<size_t>(rows[i])];
      if (LGBM_DatasetSetField(h, "init_score", s.data(), static_cast<int>(s.size()),
                               C_API_DTYPE_FLOAT64) != 0) {
        return LgbmError("init_score");
      }
    }
    return d;
  };
  KSELECT_ASSIGN_OR_RETURN(DatasetPtr train_set, subset(train));
  DatasetPtr valid_set;
  if (!valid.empty()) {
    KSELECT_ASSIGN_OR_RETURN(valid_set, subset(valid));
  }
  BoosterHandle b = nullptr;
  if (LGBM_BoosterCreate(train_set.get(), booster_params.c_str(), &b) != 0) {
    return LgbmError("create booster");
  }
  FitResult fit;
  fit.booster = BoosterPtr(b);
  if (valid_set.get() && LGBM_BoosterAddValidData(b, valid_set.get()) != 0) {
    return LgbmError("add validation data");
  }
  // Like LightGBM's early-stopping callback: every validation metric keeps its best round, and
  // the first one that has not improved for `patience` rounds ends the fit at its best round.
  int metric_count = 0;
  if (valid_set.get() && LGBM_BoosterGetEvalCounts(b, &metric_count) != 0) {
    return LgbmError("evaluation count");
  }
  std::vector<double> best(static_cast<size_t>(std::max(metric_count, 1)), INFINITY);
  std::vector<int> best_rounds(best.size(), 0);
  std::vector<double> metrics(best.size());
  int stop_round = 0;
  for (int round = 1; round <= max_rounds && stop_round == 0; ++round) {
    int finished = 0;
    if (LGBM_BoosterUpdateOneIter(b, &finished) != 0) return LgbmError("training iteration");
    if (finished) break;
    if (!valid_set.get()) {
      best_rounds[0] = round;
      if (options.iteration) options.iteration(round, max_rounds, "");
      continue;
    }
    int len = 0;
    if (LGBM_BoosterGetEval(b, 1, &len, metrics.data()) != 0) return LgbmError("evaluation");
    if (options.iteration) {
      static constexpr const char* kRankingNames[] = {"ndcg@1", "ndcg@3"};
      std::ostringstream line;
      for (size_t i = 0; i < static_cast<size_t>(len) && i < metrics.size(); ++i) {
        line << (i ? " " : "") << (ranking ? (i < 2 ? kRankingNames[i] : "ndcg") : "rmse") << " "
             << metrics[i];
      }
      options.iteration(round, max_rounds, line.str());
    }
    for (size_t i = 0; i < static_cast<size_t>(len) && i < best.size(); ++i) {
      const double loss = ranking ? -metrics[i] : metrics[i];  // NDCG: higher is better
      if (loss < best[i] - 1e-12) {
        best[i] = loss;
        best_rounds[i] = round;
      } else if (round - best_rounds[i] >= patience) {
        stop_round = best_rounds[i];
        break;
      }
    }
  }
  // Out of rounds: the first metric's best, as LightGBM's callback does (without validation
  // rows best_rounds[0] is the last round).
  if (stop_round == 0) stop_round = best_rounds[0];
  fit.best_iteration = std::max(stop_round, 1);
  return fit;
}

// Splits `groups` (shape ids) into inner-train and inner-valid by a seeded shuffle of shapes.
void InnerSplit(const std::vector<int32_t>& rows, const std::vector<int>& group_of_row,
                double fraction, uint64_t seed, std::vector<int32_t>* inner_train,
                std::vector<int32_t>* inner_valid) {
  std::vector<int> groups;
  for (int32_t r : rows) groups.push_back(group_of_row[static_cast<size_t>(r)]);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  std::mt19937_64 rng(seed);
  std::shuffle(groups.begin(), groups.end(), rng);
  inner_train->clear();
  inner_valid->clear();
  if (groups.size() < 2) {
    *inner_train = rows;
    return;
  }
  size_t n_valid = static_cast<size_t>(std::ceil(fraction * static_cast<double>(groups.size())));
  n_valid = std::clamp<size_t>(n_valid, 1, groups.size() - 1);
  std::vector<char> is_valid_group(
      group_of_row.empty() ? 0 : *std::max_element(group_of_row.begin(), group_of_row.end()) + 1,
      0);
  for (size_t i = 0; i < n_valid; ++i) is_valid_group[static_cast<size_t>(groups[i])] = 1;
  for (int32_t r : rows) {
    (is_valid_group[static_cast<size_t>(group_of_row[static_cast<size_t>(r)])] ? inner_valid
                                                                               : inner_train)
        ->push_back(r);
  }
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string NowIso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.good()) return IoError("cannot write " + path.string());
  return Status::Ok();
}

json StatsJson(const EfficiencyStats& s) {
  return {
      {"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"p10", s.p10}, {"min", s.min}};
}

// The feature matrix of a candidate set, rows ordered by problem then config, with each row's
// shape (its GroupKFold group) and problem (a ranker's query).
struct TrainingMatrix {
  std::vector<double> x;  // rows x cols, row-major
  size_t rows = 0, cols = 0;
  std::vector<int> group_of_row;
  std::vector<int> problem_of_row;
  int groups = 0;  // distinct shapes
};

// `peer_source`, when given, holds the same problems in the same order with every row (`data`
// being its row sample): the peer block reads the heuristic's picks from there.
StatusOr<TrainingMatrix> BuildTrainingMatrix(const CandidateSet& data,
                                             const FeatureExtractor& extractor,
                                             const CandidateSet* peer_source = nullptr) {
  TrainingMatrix m;
  m.cols = extractor.spec().features.size();
  m.x.reserve(data.NumCandidates() * m.cols);
  std::map<std::string, int> group_ids;
  for (const ProblemCandidates& p : data.problems) group_ids.emplace(p.shape_key, 0);
  for (auto& [key, id] : group_ids) id = m.groups++;
  std::vector<KernelConfig> configs;
  std::vector<double> block;
  for (size_t pi = 0; pi < data.problems.size(); ++pi) {
    const ProblemCandidates& p = data.problems[pi];
    configs.clear();
    for (const Candidate& c : p.candidates) configs.push_back(c.config);
    const std::vector<PeerPick> peer = PeerPicksOf(peer_source ? peer_source->problems[pi] : p);
    KSELECT_RETURN_IF_ERROR(extractor.ExtractBatch(p.problem, configs, &block, peer));
    m.x.insert(m.x.end(), block.begin(), block.end());
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      m.group_of_row.push_back(group_ids.at(p.shape_key));
      m.problem_of_row.push_back(static_cast<int>(pi));
    }
  }
  m.rows = m.group_of_row.size();
  return m;
}

// One model to train: one per target, two for a blend's TFLOPS (regression, then ranker).
struct Member {
  Target target;
  bool ranking;
  std::string key;  // names the member in the manifest, importances and progress lines
  std::string file;
};

std::vector<Member> PlanMembers(const TrainOptions& options) {
  const bool blend = options.objective == Objective::kBlend;
  std::vector<Member> members;
  for (Target t : options.targets) {
    const std::string name(TargetName(t));
    if (t == Target::kTflops && blend) {
      members.push_back({t, false, name, ModelFileName(t)});
      members.push_back({t, true, name + "_rank", kBlendRankerFile});
    } else {
      members.push_back({t, t == Target::kTflops && options.objective == Objective::kLambdarank,
                         name, ModelFileName(t)});
    }
  }
  return members;
}

// A member's label per row (the transformed target, or a ranker's relevance grade) and, for a
// top-weighted regression, its weight.
struct MemberLabels {
  std::vector<float> labels;
  std::optional<std::vector<float>> weights;
};

StatusOr<MemberLabels> MakeLabels(const CandidateSet& data, const Member& member,
                                  const TrainOptions& options, size_t rows) {
  MemberLabels out;
  out.labels.resize(rows);
  // Top weighting (regression): rows near their problem's best weigh more, since selection
  // only needs the top of each problem ordered right, not the slow tail fitted.
  if (!member.ranking && options.top_weight > 0) out.weights.emplace(rows, 1.0f);
  size_t r = 0;
  for (const ProblemCandidates& p : data.problems) {
    double oracle = 0;
    for (const Candidate& c : p.candidates) oracle = std::max(oracle, c.tflops);
    for (const Candidate& c : p.candidates) {
      if (out.weights) {
        (*out.weights)[r] =
            static_cast<float>(1 + options.top_weight * std::pow(c.tflops / oracle, 4));
      }
      const double v = TargetValue(c, member.target);
      if (!(v > 0) || !std::isfinite(v)) {
        return InvalidArgumentError("a valid row of " + p.problem_key + " has a non-positive " +
                                    std::string(TargetName(member.target)) +
                                    "; train only the targets the data has (--targets)");
      }
      out.labels[r++] = member.ranking
                            ? static_cast<float>(RelevanceGrade(v, oracle))
                            : static_cast<float>(ForwardLabel(options.label_transform, v));
    }
  }
  return out;
}

// The fold of every row: GroupKFold over the shapes' row counts, so a shape is never split.
std::vector<int> AssignFolds(std::span<const int> group_of_row, int groups, int folds) {
  std::vector<int64_t> sizes(static_cast<size_t>(groups), 0);
  for (int g : group_of_row) ++sizes[static_cast<size_t>(g)];
  const std::vector<int> fold_of_group = GroupKFold(sizes, folds);
  std::vector<int> fold_of_row(group_of_row.size());
  for (size_t r = 0; r < group_of_row.size(); ++r) {
    fold_of_row[r] = fold_of_group[static_cast<size_t>(group_of_row[r])];
  }
  return fold_of_row;
}

// oof_predictions.csv.gz, format 2 (train.h): config keys once, then each problem's fold and
// its predictions by config index. Nine significant digits: `kselect compare --oof` selects by
// these values, and 6 digits make ties.
Status WriteOofPredictions(const CandidateSet& data, std::span<const double> oof,
                           std::span<const int> fold_of_row, const fs::path& path) {
  std::ostringstream csv;
  csv << std::setprecision(9);
  csv << kOofFormat2Header << "\n";
  std::map<std::string, int> config_ids;
  for (const ProblemCandidates& pc : data.problems) {
    for (const Candidate& c : pc.candidates) {
      const auto [it, added] =
          config_ids.emplace(c.config_key, static_cast<int>(config_ids.size()));
      if (added) csv << "config," << it->second << ",\"" << c.config_key << "\"\n";
    }
  }
  size_t r = 0;
  for (const ProblemCandidates& pc : data.problems) {
    csv << "problem,\"" << pc.problem_key << "\"," << fold_of_row[r] << "\n";
    for (const Candidate& c : pc.candidates) {
      csv << config_ids.at(c.config_key) << "," << oof[r] << "\n";
      ++r;
    }
  }
  return WriteGzipFile(path.string(), csv.str());
}

// The manifest's row_sampling block: the rule, its seed and what it kept (null: every row).
json RowSamplingJson(const TrainOptions& options, const TrainResult& result) {
  if (!result.sampling) return json();
  const RowSampling& s = options.sampling;
  const RowSamplingCounts& n = *result.sampling;
  return {{"keep_within", s.keep_within},
          {"weak_fraction", s.weak_fraction},
          {"aborted_fraction", s.aborted_fraction},
          {"seed", options.seed},
          {"rule",
           "per problem: every row within keep_within of the best TFLOPS kept; below, measured "
           "rows kept with probability weak_fraction, aborted rows with aborted_fraction (hash "
           "of seed, problem key, config key), heuristic picks included; the peer block reads "
           "every pick and the candidate table keeps every config"},
          {"rows_before", n.rows_before},
          {"rows_after", n.rows_after},
          {"near_best", n.near_best},
          {"weak_before", n.weak_before},
          {"weak_kept", n.weak_kept},
          {"aborted_before", n.aborted_before},
          {"aborted_kept", n.aborted_kept}};
}

}  // namespace

namespace {

// train_manifest.json: what was trained (members, trees, objectives), on what data, and how.
json TrainManifest(const CandidateSet& data, const TrainOptions& options, const TrainResult& result,
                   const std::vector<Member>& members, const json& objectives,
                   int64_t hard_problems, const std::string& regression_params,
                   const std::string& dataset_params) {
  json rounds = json::object();
  for (size_t i = 0; i < members.size(); ++i) rounds[members[i].key] = result.rounds[i].second;
  json targets = json::array();
  for (Target t : options.targets) targets.push_back(TargetName(t));
  const LightGbmParams& p = options.params;
  return {
      {"format", "kselect.train_manifest"},
      {"format_major", 1},
      {"tool", ToolDescription()},
      {"created_at", NowIso()},
      {"data",
       {{"source", options.data_sources.size() == 1 ? json(options.data_sources.front())
                                                    : json(options.data_sources)},
        {"sources", options.data_sources},
        {"source_fingerprints", options.data_source_fingerprints},
        {"fingerprint", data.fingerprint},
        {"rows_read", data.rows_read},
        {"rows_used", data.rows_used},
        {"rows_skipped", data.rows_skipped},
        {"duplicates_found", 0},
        {"problems", result.problems},
        {"shapes", result.shapes}}},
      {"provider", ProviderName(data.provider)},
      {"targets", targets},
      {"target_transform",
       std::string(LabelTransformName(options.label_transform)) + " (regression models)"},
      {"objectives", objectives},
      {"blend", options.objective == Objective::kBlend
                    ? json{{"regression_weight", options.blend_regression_weight},
                           {"regression", ModelFileName(Target::kTflops)},
                           {"ranker", kBlendRankerFile},
                           {"score",
                            "regression_weight * pct(regression) + (1 - "
                            "regression_weight) * pct(ranker), per problem"}}
                    : json()},
      {"trees", rounds},
      {"options",
       {{"folds", options.folds},
        {"seed", options.seed},
        {"num_threads", options.num_threads},
        {"max_rounds", options.max_rounds},
        {"early_stopping_rounds", options.early_stopping_rounds},
        {"inner_valid_fraction", options.inner_valid_fraction},
        {"top_weight", options.top_weight},
        {"peer_rank_feature", options.peer_rank_feature},
        {"hard_mining",
         {{"factor", options.hard_mining_factor},
          {"threshold", options.hard_mining_threshold},
          {"problems_upweighted_over_all_fits", hard_problems}}},
        {"final_rounds", options.machines.empty() ? "median of the folds' early-stopped tree counts"
                                                  : "max_rounds (distributed: no early stopping)"},
        {"distributed", options.machines.empty() ? json()
                                                 : json{{"machines", options.machines},
                                                        {"listen_port", options.listen_port},
                                                        {"tree_learner", "data"},
                                                        {"shard_rows", result.rows}}}}},
      {"lightgbm",
       {{"booster", regression_params},
        {"dataset", dataset_params},
        {"num_leaves", p.num_leaves},
        {"learning_rate", p.learning_rate},
        {"user_params",
         [&p] {
           json extra = json::object();
           for (const auto& [key, value] : p.extra) extra[key] = value;
           return extra;
         }()}}},
      {"warm_start", options.warm_start_dir.empty()
                         ? json()
                         : json{{"from", options.warm_start_dir},
                                {"added_rounds_max", options.warm_start_rounds}}},
      {"row_sampling", RowSamplingJson(options, result)},
  };
}

// A warm start's model, checked against this training: same features, same labels, no blend.
Status LoadWarmStart(const TrainOptions& options, const FeatureSpec& spec,
                     std::optional<Model>* previous) {
  if (options.warm_start_dir.empty()) return Status::Ok();
  auto loaded = Model::Load(options.warm_start_dir);
  if (!loaded.ok()) return loaded.status().WithContext("warm start");
  if (auto s = CheckSpecCompatible(loaded->spec(), spec); !s.ok()) {
    return s.WithContext("warm start from " + options.warm_start_dir);
  }
  if (loaded->label_transform() != options.label_transform) {
    return FailedPreconditionError(
        "warm start: " + options.warm_start_dir + " was trained on " +
        std::string(LabelTransformName(loaded->label_transform())) + " labels, not " +
        std::string(LabelTransformName(options.label_transform)) + " (pass --label " +
        std::string(LabelTransformName(loaded->label_transform())) + ")");
  }
  if (options.objective == Objective::kBlend || loaded->Blends()) {
    return FailedPreconditionError(
        "warm start: blend models cannot be warm-started (the ranker's scores and the "
        "regression's labels do not add up); retrain the blend");
  }
  previous->emplace(std::move(*loaded));
  return Status::Ok();
}

// The dataset every fit takes its rows from, named by the spec's features.
StatusOr<DatasetPtr> CreateFullDataset(const TrainingMatrix& matrix, const FeatureSpec& spec,
                                       const std::string& dataset_params) {
  DatasetHandle handle = nullptr;
  if (LGBM_DatasetCreateFromMat(
          matrix.x.data(), C_API_DTYPE_FLOAT64, static_cast<int32_t>(matrix.rows),
          static_cast<int32_t>(matrix.cols), 1, dataset_params.c_str(), nullptr, &handle) != 0) {
    return LgbmError("dataset");
  }
  DatasetPtr full(handle);
  std::vector<std::string> names = spec.Names();
  std::vector<const char*> ptrs;
  for (const std::string& n : names) ptrs.push_back(n.c_str());
  if (LGBM_DatasetSetFeatureNames(handle, ptrs.data(), static_cast<int>(ptrs.size())) != 0) {
    return LgbmError("feature names");
  }
  return full;
}

// The warm-start model's prediction of every row in this member's label space: the new trees
// start from it.
StatusOr<std::vector<double>> WarmStartScores(const Model& previous, const Member& member,
                                              const TrainOptions& options,
                                              const TrainingMatrix& matrix) {
  const std::string target_name(TargetName(member.target));
  if (!previous.Has(member.target)) {
    return FailedPreconditionError("warm start: " + options.warm_start_dir + " has no " +
                                   target_name + " model");
  }
  if (previous.Ranks(member.target) != member.ranking) {
    return FailedPreconditionError("warm start: the " + target_name + " model in " +
                                   options.warm_start_dir + " was trained with another objective");
  }
  KSELECT_ASSIGN_OR_RETURN(std::vector<double> scores,
                           previous.PredictFeatures(member.target, matrix.x, matrix.rows));
  if (!member.ranking) {
    for (double& v : scores) v = ForwardLabel(options.label_transform, v);
  }
  return scores;
}

// What every fit of one member shares: the full dataset (carrying this member's labels), the
// weights and warm-start scores by row, and the parameters.
struct MemberFitter {
  DatasetHandle full;
  const TrainingMatrix& matrix;
  const TrainOptions& options;
  const std::string& dataset_params;
  std::string booster_params;
  std::span<const int> queries;  // a ranker's query of each row; empty for a regression
  const std::vector<float>& labels;
  const std::vector<float>* weights;
  const std::vector<double>* init;  // warm-start scores
  bool mining;                      // hard-example mining, see FitRows
  int64_t* hard_problems;           // problems up-weighted by mining, over all fits

  StatusOr<FitResult> FitRows(std::span<const int32_t> train_rows,
                              std::span<const int32_t> valid_rows, int rounds) const;
};

// Hard-example mining (TFLOPS regression): after a first fit, the training problems whose
// in-sample pick is under hard_mining_threshold of their best get their rows' weights multiplied
// by hard_mining_factor, and the fit is redone on the same rows.
StatusOr<FitResult> MemberFitter::FitRows(std::span<const int32_t> train_rows,
                                          std::span<const int32_t> valid_rows, int rounds) const {
  // LightGBM bags floor(0.85 * rows) rows and stops on an empty bag: one row (a fold of one
  // single-config problem) would end in its internal check instead of a clear message.
  if (train_rows.size() < 2) {
    return FailedPreconditionError(
        "a fit has " + std::to_string(train_rows.size()) +
        " training row(s): too little data to fit (and cross-validate) a model; measure more "
        "configs or problems, or train with fewer --folds");
  }
  KSELECT_ASSIGN_OR_RETURN(
      FitResult first,
      Fit(full, train_rows, valid_rows, labels, init, dataset_params, booster_params, rounds,
          options.early_stopping_rounds, queries, weights, options));
  if (!mining) return first;
  KSELECT_ASSIGN_OR_RETURN(
      std::vector<double> pred,
      PredictRows(first.booster.get(), matrix.x, matrix.cols, train_rows, first.best_iteration));
  const LabelTransform transform = options.label_transform;
  const std::vector<int>& problem_of_row = matrix.problem_of_row;
  std::vector<float> mined = weights ? *weights : std::vector<float>(matrix.rows, 1.0f);
  // Rows of one problem are contiguous in `train_rows` (whole shapes are split off).
  for (size_t i = 0; i < train_rows.size();) {
    const int problem = problem_of_row[static_cast<size_t>(train_rows[i])];
    size_t end = i, pick = i;
    float best_label = labels[static_cast<size_t>(train_rows[i])];
    for (;
         end < train_rows.size() && problem_of_row[static_cast<size_t>(train_rows[end])] == problem;
         ++end) {
      const size_t row = static_cast<size_t>(train_rows[end]);
      if (init) pred[end] += (*init)[row];
      if (pred[end] > pred[pick]) pick = end;
      best_label = std::max(best_label, labels[row]);
    }
    const double efficiency =
        InverseLabel(transform, labels[static_cast<size_t>(train_rows[pick])]) /
        InverseLabel(transform, best_label);
    if (efficiency < options.hard_mining_threshold) {
      ++*hard_problems;
      for (size_t k = i; k < end; ++k) {
        mined[static_cast<size_t>(train_rows[k])] *= static_cast<float>(options.hard_mining_factor);
      }
    }
    i = end;
  }
  return Fit(full, train_rows, valid_rows, labels, init, dataset_params, booster_params, rounds,
             options.early_stopping_rounds, queries, &mined, options);
}

// One member's cross-validation: what cv_metrics.json, oof_predictions and TrainResult report.
struct CrossValidation {
  std::vector<int> fold_of_row;
  std::vector<double> oof;  // TFLOPS out of fold, or a ranker's scores
  std::vector<FoldMetrics> folds;
  EfficiencyStats oof_efficiency;
  std::vector<int> best_iterations;  // each fold's early-stopped tree count
  json metrics = json::object();
};

// GroupKFold over shapes: each fold early-stops on an inner split of its training shapes and
// predicts its held-out rows.
StatusOr<CrossValidation> CrossValidate(const CandidateSet& data, const MemberFitter& fitter,
                                        const Member& member, int folds, int max_rounds) {
  const TrainOptions& options = fitter.options;
  const TrainingMatrix& matrix = fitter.matrix;
  const std::vector<float>& labels = fitter.labels;
  const LabelTransform transform = options.label_transform;
  const bool ranking = member.ranking;
  CrossValidation cv;
  cv.fold_of_row = AssignFolds(matrix.group_of_row, matrix.groups, folds);
  cv.oof.assign(matrix.rows, std::nan(""));
  json fold_json = json::array();
  for (int f = 0; f < folds; ++f) {
    std::vector<int32_t> train, valid, inner_train, inner_valid;
    for (size_t r = 0; r < matrix.rows; ++r) {
      (cv.fold_of_row[r] == f ? valid : train).push_back(static_cast<int32_t>(r));
    }
    InnerSplit(train, matrix.group_of_row, options.inner_valid_fraction,
               options.seed + static_cast<uint64_t>(f), &inner_train, &inner_valid);
    const auto fold_start = std::chrono::steady_clock::now();
    KSELECT_ASSIGN_OR_RETURN(FitResult fit, fitter.FitRows(inner_train, inner_valid, max_rounds));
    KSELECT_ASSIGN_OR_RETURN(
        std::vector<double> pred,
        PredictRows(fit.booster.get(), matrix.x, matrix.cols, valid, fit.best_iteration));
    FoldMetrics m;
    m.fold = f;
    m.train_rows = static_cast<int64_t>(inner_train.size());
    m.valid_rows = static_cast<int64_t>(valid.size());
    m.best_iteration = fit.best_iteration;
    double sse = 0, mean = 0, sst = 0;
    for (size_t i = 0; i < valid.size(); ++i) {
      const size_t r = static_cast<size_t>(valid[i]);
      if (fitter.init) pred[i] += (*fitter.init)[r];
      sse += std::pow(pred[i] - labels[r], 2);
      mean += labels[r];
      // A ranker's scores stay scores.
      cv.oof[r] = ranking ? pred[i] : InverseLabel(transform, pred[i]);
    }
    mean /= std::max<double>(1.0, static_cast<double>(valid.size()));
    for (int32_t r : valid) sst += std::pow(labels[static_cast<size_t>(r)] - mean, 2);
    m.rmse_label = std::sqrt(sse / std::max<double>(1.0, static_cast<double>(valid.size())));
    m.r2_label = 1.0 - sse / std::max(sst, 1e-10);
    if (ranking) m.rmse_label = m.r2_label = std::nan("");  // grades, not TFLOPS
    // Efficiency of the fold's problems from the out-of-fold predictions.
    std::vector<ProblemOutcome> outcomes;
    std::set<int> shapes;
    size_t r0 = 0;
    for (const ProblemCandidates& p : data.problems) {
      const size_t n = p.candidates.size();
      if (cv.fold_of_row[r0] == f) {
        outcomes.push_back(EvaluateProblem(p, std::span<const double>(cv.oof.data() + r0, n)));
        shapes.insert(matrix.group_of_row[r0]);
      }
      r0 += n;
    }
    m.valid_shapes = static_cast<int64_t>(shapes.size());
    m.efficiency = Summarize(std::move(outcomes)).model;
    cv.best_iterations.push_back(fit.best_iteration);
    if (options.progress) {
      char line[160];
      std::snprintf(line, sizeof(line),
                    "%s fold %d/%d: %d trees, held-out efficiency mean %.2f%%, %.0f s",
                    member.key.c_str(), f + 1, folds, fit.best_iteration, 100 * m.efficiency.mean,
                    SecondsSince(fold_start));
      options.progress(line);
    }
    fold_json.push_back({{"fold", m.fold},
                         {"train_rows", m.train_rows},
                         {"inner_valid_rows", inner_valid.size()},
                         {"valid_rows", m.valid_rows},
                         {"valid_shapes", m.valid_shapes},
                         {"best_iteration", m.best_iteration},
                         {"label", ranking ? "grade" : LabelTransformName(transform)},
                         {"rmse_label", m.rmse_label},
                         {"r2_label", m.r2_label},
                         {"efficiency", StatsJson(m.efficiency)}});
    cv.folds.push_back(m);
  }
  std::vector<ProblemOutcome> all;
  size_t r0 = 0;
  for (const ProblemCandidates& p : data.problems) {
    all.push_back(
        EvaluateProblem(p, std::span<const double>(cv.oof.data() + r0, p.candidates.size())));
    r0 += p.candidates.size();
  }
  const EvalSummary oof_summary = Summarize(std::move(all));
  cv.oof_efficiency = oof_summary.model;
  cv.metrics = {{"target", "tflops"},
                {"objective", ranking ? "lambdarank" : "regression"},
                {"folds", fold_json},
                {"group_key", "m,n,k,batch (layout and dtype not in the key)"},
                {"early_stopping", "inner split of each fold's training shapes"},
                {"out_of_fold",
                 {{"efficiency", StatsJson(oof_summary.model)},
                  {"top1", oof_summary.top1},
                  {"top5_hit", oof_summary.top5},
                  {"ndcg_at_10", oof_summary.ndcg_at_10}}}};
  return cv;
}

// A blend's cross-validation from its two members': each problem's out-of-fold predictions
// blended, and the regression's fold lines with the blend's efficiency.
CrossValidation BlendOutOfFold(const CandidateSet& data, double regression_weight,
                               const CrossValidation& regression, CrossValidation ranker) {
  CrossValidation blend;
  blend.fold_of_row = std::move(ranker.fold_of_row);
  blend.oof = std::move(ranker.oof);
  blend.best_iterations = std::move(ranker.best_iterations);
  std::vector<std::vector<ProblemOutcome>> fold_outcomes(ranker.folds.size());
  std::vector<ProblemOutcome> blended;
  size_t b0 = 0;
  for (const ProblemCandidates& p : data.problems) {
    const size_t n = p.candidates.size();
    const std::vector<double> scores =
        BlendScores(std::span<const double>(regression.oof.data() + b0, n),
                    std::span<const double>(blend.oof.data() + b0, n), regression_weight);
    std::copy(scores.begin(), scores.end(), blend.oof.begin() + static_cast<std::ptrdiff_t>(b0));
    blended.push_back(EvaluateProblem(p, scores));
    fold_outcomes[static_cast<size_t>(blend.fold_of_row[b0])].push_back(blended.back());
    b0 += n;
  }
  blend.folds = regression.folds;
  json blend_folds = json::array();
  for (FoldMetrics& m : blend.folds) {
    m.efficiency = Summarize(std::move(fold_outcomes[static_cast<size_t>(m.fold)])).model;
    blend_folds.push_back({{"fold", m.fold}, {"efficiency", StatsJson(m.efficiency)}});
  }
  const EvalSummary blend_summary = Summarize(std::move(blended));
  json members = json::array();
  members.push_back(regression.metrics);
  members.push_back(ranker.metrics);
  blend.oof_efficiency = blend_summary.model;
  blend.metrics = {{"target", "tflops"},
                   {"objective", "blend"},
                   {"regression_weight", regression_weight},
                   {"members", members},
                   {"folds", blend_folds},
                   {"group_key", "m,n,k,batch (layout and dtype not in the key)"},
                   {"early_stopping", "inner split of each fold's training shapes"},
                   {"out_of_fold",
                    {{"efficiency", StatsJson(blend_summary.model)},
                     {"top1", blend_summary.top1},
                     {"top5_hit", blend_summary.top5},
                     {"ndcg_at_10", blend_summary.ndcg_at_10}}}};
  return blend;
}

// The member's model on every row with the median of the picked tree counts, then its
// importances (of the new trees only), the warm-start model's trees put in front and the file.
Status FitFinalModel(const MemberFitter& fitter, const Member& member,
                     std::vector<int> best_iterations, const std::string& out_dir,
                     json* importances, TrainResult* result) {
  const TrainOptions& options = fitter.options;
  const size_t rows = fitter.matrix.rows, cols = fitter.matrix.cols;
  std::vector<int32_t> all_rows(rows);
  std::iota(all_rows.begin(), all_rows.end(), 0);
  std::sort(best_iterations.begin(), best_iterations.end());
  const int final_rounds = best_iterations[best_iterations.size() / 2];
  const auto final_start = std::chrono::steady_clock::now();
  KSELECT_ASSIGN_OR_RETURN(FitResult final_fit, fitter.FitRows(all_rows, {}, final_rounds));
  if (options.progress) {
    options.progress(member.key + " final fit: " + std::to_string(final_rounds) + " trees on " +
                     std::to_string(rows) + " rows, " +
                     std::to_string(std::lround(SecondsSince(final_start))) + " s");
  }
  for (int type : {C_API_FEATURE_IMPORTANCE_SPLIT, C_API_FEATURE_IMPORTANCE_GAIN}) {
    std::vector<double> imp(cols);
    if (LGBM_BoosterFeatureImportance(final_fit.booster.get(), 0, type, imp.data()) != 0) {
      return LgbmError("feature importance");
    }
    json by_name = json::object();
    for (size_t i = 0; i < cols; ++i) by_name[result->spec.features[i].name] = imp[i];
    (*importances)[member.key][type == C_API_FEATURE_IMPORTANCE_SPLIT ? "split" : "gain"] = by_name;
  }
  if (fitter.init) {
    // The warm-start model's trees go in front of the new ones (their sum is the prediction).
    int prev_iterations = 0;
    const fs::path prev_path = fs::path(options.warm_start_dir) / ModelFileName(member.target);
    KSELECT_ASSIGN_OR_RETURN(BoosterHandle prev_copy, LoadBooster(prev_path, &prev_iterations));
    BoosterPtr prev_owner(prev_copy);
    if (LGBM_BoosterMerge(final_fit.booster.get(), prev_copy) != 0) return LgbmError("merge");
  }
  int total = 0;
  if (LGBM_BoosterGetCurrentIteration(final_fit.booster.get(), &total) != 0) {
    return LgbmError("iteration count");
  }
  KSELECT_RETURN_IF_ERROR(SaveBooster(final_fit.booster.get(), fs::path(out_dir) / member.file));
  result->rounds.emplace_back(member.target, total);
  result->model_files.emplace_back(member.file, total);
  return Status::Ok();
}

}  // namespace

StatusOr<TrainResult> TrainModel(const Dataset& dataset, const TrainOptions& options,
                                 const std::string& out_dir) {
  KSELECT_ASSIGN_OR_RETURN(CandidateSet data, BuildCandidateSet(dataset, options.provider));
  return TrainModelOnCandidates(data, options, out_dir);
}

StatusOr<TrainResult> TrainModelOnCandidates(const CandidateSet& data, const TrainOptions& options,
                                             const std::string& out_dir) {
  if (options.targets.empty() || options.targets.front() != Target::kTflops) {
    return InvalidArgumentError("the TFLOPS target is required and comes first");
  }
  if (options.provider && *options.provider != data.provider) {
    return InvalidArgumentError("the candidate set is for another provider than --provider");
  }
  KSELECT_RETURN_IF_ERROR(CheckExtraLightGbmParams(options.params.extra));
  TrainResult result;
  // A warm start keeps its model's knob columns: trees cannot take new ones.
  std::optional<std::vector<int32_t>> warm_knobs;
  if (!options.warm_start_dir.empty()) {
    auto warm_spec =
        LoadFeatureSpec((fs::path(options.warm_start_dir) / "feature_spec.json").string());
    // Unreadable or of another kind: LoadWarmStart below says why.
    if (warm_spec.ok() && warm_spec->extractor == "conv") warm_knobs = SpecKnobTypes(*warm_spec);
  }
  KSELECT_ASSIGN_OR_RETURN(result.spec, TrainingFeatureSpec(data, options.peer_rank_feature,
                                                            warm_knobs ? &*warm_knobs : nullptr));
  if (options.peer_rank_feature) {
    const bool any = std::any_of(data.problems.begin(), data.problems.end(), [](const auto& p) {
      return std::any_of(p.candidates.begin(), p.candidates.end(),
                         [](const Candidate& c) { return c.peer_rank.has_value(); });
    });
    if (!any) {
      return FailedPreconditionError(
          "--peer-rank: the data has no peer_rank rows (the bench records the provider "
          "heuristic's picks; this data has none), so the feature would be constant");
    }
  }
  KSELECT_ASSIGN_OR_RETURN(const std::unique_ptr<FeatureExtractor> extractor,
                           CreateFeatureExtractor(result.spec));
  std::optional<Model> previous;
  KSELECT_RETURN_IF_ERROR(LoadWarmStart(options, result.spec, &previous));

  const bool distributed = !options.machines.empty();
  if (distributed && (options.folds >= 2 || options.hard_mining_factor > 1 ||
                      !options.warm_start_dir.empty() || options.objective == Objective::kBlend)) {
    return InvalidArgumentError(
        "distributed training (--machines) fits one model of --max-rounds trees: use --folds 0, "
        "no --hard-mining, no --warm-start and no blend (cross-validate on one machine)");
  }
  // The fits train on the sampled rows; the feature spec (above) and the candidate table come
  // from every row, so a config seen only below the sampling line stays a candidate.
  std::optional<CandidateSet> sampled;
  if (options.sampling.Active()) {
    RowSamplingCounts counts;
    KSELECT_ASSIGN_OR_RETURN(sampled,
                             SampleTrainingRows(data, options.sampling, options.seed, &counts));
    result.sampling = counts;
    if (options.progress) {
      options.progress("row sampling kept " + std::to_string(counts.rows_after) + " of " +
                       std::to_string(counts.rows_before) + " rows");
    }
  }
  const CandidateSet& training = sampled ? *sampled : data;
  KSELECT_ASSIGN_OR_RETURN(const TrainingMatrix matrix,
                           BuildTrainingMatrix(training, *extractor, sampled ? &data : nullptr));
  std::unique_ptr<Network> network;
  if (distributed) {
    KSELECT_ASSIGN_OR_RETURN(network, Network::Join(options));
  }
  result.rows = static_cast<int64_t>(matrix.rows);
  result.problems = static_cast<int64_t>(data.problems.size());
  result.shapes = matrix.groups;
  const std::string dataset_params = DatasetParams(options, result.spec);
  const std::string regression_params = BoosterParams(options, false);
  KSELECT_ASSIGN_OR_RETURN(DatasetPtr full, CreateFullDataset(matrix, result.spec, dataset_params));
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return IoError("cannot create " + out_dir + ": " + ec.message());

  const int max_rounds = previous ? options.warm_start_rounds : options.max_rounds;
  const bool blend = options.objective == Objective::kBlend;
  const std::vector<Member> members = PlanMembers(options);
  json objectives = json::object();
  json importances = json::object();
  int64_t hard_problems = 0;
  CrossValidation cv;  // the TFLOPS member's; until it runs, no row has a fold or a prediction
  cv.fold_of_row.assign(matrix.rows, -1);
  cv.oof.assign(matrix.rows, std::nan(""));
  std::optional<CrossValidation> blend_regression_cv;  // waits for the blend's ranker
  for (const Member& member : members) {
    objectives[member.key] = member.ranking ? "lambdarank" : "regression";
    KSELECT_ASSIGN_OR_RETURN(const MemberLabels member_labels,
                             MakeLabels(training, member, options, matrix.rows));
    // Subsets copy their metadata from the full dataset, so it carries this member's labels.
    if (LGBM_DatasetSetField(full.get(), "label", member_labels.labels.data(),
                             static_cast<int>(matrix.rows), C_API_DTYPE_FLOAT32) != 0) {
      return LgbmError("label");
    }
    std::optional<std::vector<double>> init;
    if (previous) {
      KSELECT_ASSIGN_OR_RETURN(init, WarmStartScores(*previous, member, options, matrix));
    }
    const MemberFitter fitter{
        full.get(),
        matrix,
        options,
        dataset_params,
        BoosterParams(options, member.ranking),
        member.ranking ? std::span<const int>(matrix.problem_of_row) : std::span<const int>(),
        member_labels.labels,
        member_labels.weights ? &*member_labels.weights : nullptr,
        init ? &*init : nullptr,
        member.target == Target::kTflops && !member.ranking && options.hard_mining_factor > 1,
        &hard_problems};

    std::vector<int> best_iterations;
    if (member.target == Target::kTflops && options.folds >= 2 && matrix.groups >= 2) {
      const int folds = std::min(options.folds, matrix.groups);
      KSELECT_ASSIGN_OR_RETURN(CrossValidation member_cv,
                               CrossValidate(training, fitter, member, folds, max_rounds));
      best_iterations = member_cv.best_iterations;
      if (blend && !member.ranking) {
        blend_regression_cv = std::move(member_cv);
      } else {
        cv = blend ? BlendOutOfFold(training, options.blend_regression_weight, *blend_regression_cv,
                                    std::move(member_cv))
                   : std::move(member_cv);
      }
    } else if (distributed) {
      best_iterations.push_back(max_rounds);
    } else {
      std::vector<int32_t> all_rows(matrix.rows), inner_train, inner_valid;
      std::iota(all_rows.begin(), all_rows.end(), 0);
      InnerSplit(all_rows, matrix.group_of_row, options.inner_valid_fraction, options.seed,
                 &inner_train, &inner_valid);
      KSELECT_ASSIGN_OR_RETURN(FitResult fit, fitter.FitRows(inner_train, inner_valid, max_rounds));
      best_iterations.push_back(fit.best_iteration);
    }
    KSELECT_RETURN_IF_ERROR(
        FitFinalModel(fitter, member, std::move(best_iterations), out_dir, &importances, &result));
  }
  result.folds = cv.folds;
  result.oof_efficiency = cv.oof_efficiency;
  if (!blend) {
    // A directory reused for another objective must not keep a stale ranker member.
    std::error_code ignored;
    fs::remove(fs::path(out_dir) / kBlendRankerFile, ignored);
  }

  KSELECT_RETURN_IF_ERROR(
      SaveFeatureSpec(result.spec, (fs::path(out_dir) / "feature_spec.json").string()));
  const json manifest = TrainManifest(data, options, result, members, objectives, hard_problems,
                                      regression_params, dataset_params);
  KSELECT_RETURN_IF_ERROR(
      WriteText(fs::path(out_dir) / "train_manifest.json", manifest.dump(2) + "\n"));
  KSELECT_RETURN_IF_ERROR(
      WriteText(fs::path(out_dir) / "cv_metrics.json", cv.metrics.dump(2) + "\n"));
  KSELECT_RETURN_IF_ERROR(
      WriteText(fs::path(out_dir) / "feature_importances.json", importances.dump(2) + "\n"));
  KSELECT_RETURN_IF_ERROR(WriteOofPredictions(training, cv.oof, cv.fold_of_row,
                                              fs::path(out_dir) / kOofPredictionsFile));
  KSELECT_RETURN_IF_ERROR(WriteCandidateTable(CandidateTableOf(data), out_dir));
  return result;
}

}  // namespace kselect
