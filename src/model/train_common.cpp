// The parts of train.h that do not touch LightGBM: the --param check, relevance grades,
// GroupKFold, gzip writing and the out-of-fold predictions file.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include <zlib.h>

#include "core/text.h"
#include "kselect/train.h"
#include "kselect/version.h"

namespace kselect {

Status CheckExtraLightGbmParams(const std::vector<std::pair<std::string, std::string>>& extra) {
  // Set by kselect from its own options: a --param would contradict them silently.
  static const std::map<std::string, std::string, std::less<>> kReserved = {
      {"objective", "--objective"},
      {"application", "--objective"},
      {"metric", "--objective"},
      {"eval_at", "--objective"},
      {"label_gain", "--objective"},
      {"lambdarank_truncation_level", "--objective"},
      {"seed", "--seed"},
      {"random_state", "--seed"},
      {"num_threads", "--threads"},
      {"n_jobs", "--threads"},
      {"tree_learner", "--machines"},
      {"num_machines", "--machines"},
      {"num_iterations", "--max-rounds"},
      {"n_estimators", "--max-rounds"},
      {"early_stopping_round", "--early-stopping"},
      {"categorical_feature", "the feature spec"},
      {"verbose", "-v/--verbose"},
      {"verbosity", "-v/--verbose"}};
  for (const auto& [key, value] : extra) {
    if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        })) {
      return InvalidArgumentError("--param '" + key + "=" + value +
                                  "': the key must be a LightGBM parameter name (letters, digits, "
                                  "'_'), e.g. --param min_data_in_leaf=50");
    }
    if (value.empty() || value.find_first_of(" \t\n") != std::string::npos) {
      return InvalidArgumentError("--param " + key +
                                  ": give one value without spaces, e.g. --param " + key + "=0.5");
    }
    if (const auto it = kReserved.find(key); it != kReserved.end()) {
      return InvalidArgumentError("--param " + key + ": kselect sets it from " + it->second +
                                  "; use that option instead");
    }
  }
  return Status::Ok();
}

int RelevanceGrade(double value, double best) {
  const double relative = best > 0 ? std::clamp(value / best, 0.0, 1.0) : 0.0;
  if (relative >= 0.9) {
    // 30 at the best, one grade per 0.5 % below it, 11 for 90-90.5 %.
    return std::max(
        11, kMaxRelevanceGrade - static_cast<int>(std::ceil((1 - relative) / 0.005 - 1e-9)));
  }
  return 1 + static_cast<int>(std::floor(relative * 10));  // 9 for 80-90 %, ..., 1 under 10 %
}

std::vector<int> GroupKFold(std::span<const int64_t> group_sizes, int folds) {
  KSELECT_CHECK(folds >= 1);
  std::vector<size_t> order(group_sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return group_sizes[a] > group_sizes[b]; });
  std::vector<int64_t> load(static_cast<size_t>(folds), 0);
  std::vector<int> fold_of(group_sizes.size(), 0);
  for (size_t g : order) {
    const int lightest =
        static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    fold_of[g] = lightest;
    load[static_cast<size_t>(lightest)] += group_sizes[g];
  }
  return fold_of;
}

StatusOr<CandidateSet> SampleTrainingRows(const CandidateSet& data, const RowSampling& sampling,
                                          uint64_t seed, RowSamplingCounts* counts) {
  for (const auto& [name, value] : {std::pair{"keep-within", sampling.keep_within},
                                    {"weak", sampling.weak_fraction},
                                    {"aborted", sampling.aborted_fraction}}) {
    if (!(value >= 0 && value <= 1)) {
      return InvalidArgumentError("row sampling: the " + std::string(name) + " fraction is " +
                                  std::to_string(value) + "; it must be in [0, 1]");
    }
  }
  RowSamplingCounts local;
  RowSamplingCounts& n = counts ? *counts : local;
  n = RowSamplingCounts{};
  CandidateSet sampled;
  sampled.provider = data.provider;
  sampled.hardware = data.hardware;
  sampled.rows_read = data.rows_read;
  sampled.rows_used = data.rows_used;
  sampled.rows_skipped = data.rows_skipped;
  sampled.rows_estimated = data.rows_estimated;
  sampled.fingerprint = data.fingerprint;
  sampled.problems.reserve(data.problems.size());
  const uint64_t seed_basis = text::kFnv1a64Basis ^ (seed * 0x9e3779b97f4a7c15ull);
  for (const ProblemCandidates& p : data.problems) {
    double best = 0;
    for (const Candidate& c : p.candidates) best = std::max(best, c.tflops);
    // The draws of one problem continue from its key's hash: a config has its own draw per
    // problem, not one shared by every problem.
    const uint64_t problem_state = text::Fnv1a64(p.problem_key + "\n", seed_basis);
    ProblemCandidates kept{p.problem_key, p.shape_key, p.problem, {}};
    for (const Candidate& c : p.candidates) {
      ++n.rows_before;
      bool keep = true;
      // The heuristic's picks are drawn like any other row: keeping them all would make a pick
      // below the line look more often weak than it is, and the ranker trusted the picks less
      // (measured, docs/lab/selection_quality.md, session 22). The peer block still reads
      // every pick: the trainer takes them from the unsampled problem.
      if (c.tflops >= sampling.keep_within * best) {
        ++n.near_best;
      } else {
        const bool aborted = c.estimated;
        const double fraction = aborted ? sampling.aborted_fraction : sampling.weak_fraction;
        keep = text::UnitIntervalDraw(c.config_key, problem_state) < fraction;
        ++(aborted ? n.aborted_before : n.weak_before);
        if (keep) ++(aborted ? n.aborted_kept : n.weak_kept);
      }
      if (keep) kept.candidates.push_back(c);
    }
    n.rows_after += static_cast<int64_t>(kept.candidates.size());
    sampled.problems.push_back(std::move(kept));
  }
  return sampled;
}

namespace {

// One CSV record of oof_predictions.csv: fields separated by commas, optionally double-quoted
// with "" for a quote (the keys hold commas, so the trainer quotes them).
StatusOr<std::vector<std::string>> SplitCsvRecord(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        fields.back() += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) return ParseError("unterminated quoted field");
  return fields;
}

}  // namespace

size_t OofPredictions::size() const {
  size_t n = 0;
  for (const auto& [problem, predictions] : by_problem) n += predictions.size();
  return n;
}

std::optional<double> OofPredictions::Find(const std::string& problem_key,
                                           const std::string& config_key) const {
  const auto config = config_index.find(config_key);
  if (config == config_index.end()) return std::nullopt;
  const auto problem = by_problem.find(problem_key);
  if (problem == by_problem.end()) return std::nullopt;
  const auto it = problem->second.find(config->second);
  if (it == problem->second.end()) return std::nullopt;
  return it->second;
}

namespace {

// Adds one prediction; fails on a repeated pair.
Status AddOofPrediction(OofPredictions* oof, const std::string& problem, const std::string& config,
                        double prediction, const std::string& where) {
  auto [it, added] = oof->config_index.emplace(config, static_cast<int>(oof->configs.size()));
  if (added) oof->configs.push_back(config);
  if (!oof->by_problem[problem].emplace(it->second, prediction).second) {
    return ParseError(where + ": repeats the pair (" + problem + ", " + config + ")");
  }
  return Status::Ok();
}

// The older format: one quoted (problem, config) pair per line with the measured TFLOPS.
Status ParseOofFormat1(const std::vector<std::string_view>& lines, OofPredictions* oof) {
  for (size_t i = 1; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    const std::string where = text::Where(oof->path, static_cast<int64_t>(i) + 1);
    auto fields = SplitCsvRecord(lines[i]);
    if (!fields.ok()) return ParseError(where + ": " + fields.status().message());
    if (fields->size() != 5) {
      return ParseError(where + ": expected 5 fields, found " + std::to_string(fields->size()));
    }
    auto prediction = text::ParseDouble((*fields)[4]);
    if (!prediction.ok()) {
      return ParseError(where + ": oof_predicted_tflops: " + prediction.status().message());
    }
    KSELECT_RETURN_IF_ERROR(AddOofPrediction(oof, (*fields)[0], (*fields)[1], *prediction, where));
  }
  return Status::Ok();
}

// Format 2: the config keys once, then each problem's predictions by config index (about 3x
// smaller compressed: the keys dominated format 1).
Status ParseOofFormat2(const std::vector<std::string_view>& lines, OofPredictions* oof) {
  std::vector<std::string> table;
  const std::string* problem = nullptr;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    const std::string where = text::Where(oof->path, static_cast<int64_t>(i) + 1);
    auto fields = SplitCsvRecord(lines[i]);
    if (!fields.ok()) return ParseError(where + ": " + fields.status().message());
    const std::vector<std::string>& f = *fields;
    if (f[0] == "config") {
      if (f.size() != 3 || f[1] != std::to_string(table.size())) {
        return ParseError(where + ": expected config," + std::to_string(table.size()) +
                          ",\"<key>\"");
      }
      table.push_back(f[2]);
    } else if (f[0] == "problem") {
      if (f.size() != 3) return ParseError(where + ": expected problem,\"<key>\",<fold>");
      problem = &oof->by_problem.try_emplace(f[1]).first->first;
    } else {
      if (f.size() != 2) {
        return ParseError(where + ": expected <config index>,<prediction>, found " +
                          std::to_string(f.size()) + " fields");
      }
      if (problem == nullptr) return ParseError(where + ": a prediction before any problem line");
      auto index = text::ParseInt64(f[0]);
      if (!index.ok() || *index < 0 || *index >= static_cast<int64_t>(table.size())) {
        return ParseError(where + ": '" + f[0] + "' is not a config index of the table above");
      }
      auto prediction = text::ParseDouble(f[1]);
      if (!prediction.ok()) {
        return ParseError(where + ": oof_predicted_tflops: " + prediction.status().message());
      }
      KSELECT_RETURN_IF_ERROR(
          AddOofPrediction(oof, *problem, table[static_cast<size_t>(*index)], *prediction, where));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<OofPredictions> ReadOofPredictions(const std::string& model_dir) {
  OofPredictions oof;
  const std::filesystem::path dir(model_dir);
  oof.path = (dir / kOofPredictionsFile).string();
  if (!std::filesystem::exists(oof.path)) {
    // Models written before the predictions were compressed.
    const std::string plain = (dir / "oof_predictions.csv").string();
    if (std::filesystem::exists(plain)) oof.path = plain;
  }
  if (!std::filesystem::exists(oof.path)) {
    return NotFoundError(oof.path +
                         " does not exist: the model directory has no out-of-fold predictions "
                         "(models from kselect train have them)");
  }
  KSELECT_ASSIGN_OR_RETURN(std::string contents, ReadMaybeGzipFile(oof.path));
  const std::vector<std::string_view> lines = text::SplitLines(contents);
  constexpr std::string_view kHeader = "problem,config,fold,measured_tflops,oof_predicted_tflops";
  const std::string_view first = lines.empty() ? std::string_view() : text::Trim(lines[0]);
  if (first == kOofFormat2Header) {
    KSELECT_RETURN_IF_ERROR(ParseOofFormat2(lines, &oof));
  } else if (first == kHeader) {
    KSELECT_RETURN_IF_ERROR(ParseOofFormat1(lines, &oof));
  } else {
    return ParseError(text::Where(oof.path, 1) + ": expected '" + kOofFormat2Header +
                      "' or the header '" + std::string(kHeader) + "'");
  }
  const size_t pairs = oof.size();
  if (pairs == 0) return ParseError(oof.path + " holds no predictions");
  int64_t not_predicted = 0;
  for (const auto& [problem, predictions] : oof.by_problem) {
    for (const auto& [config, prediction] : predictions)
      not_predicted += !std::isfinite(prediction);
  }
  if (not_predicted > 0) {
    return FailedPreconditionError(
        oof.path + ": " + std::to_string(not_predicted) + " of " + std::to_string(pairs) +
        " rows have no out-of-fold prediction (the model was trained without cross-validation, "
        "--folds < 2); retrain with --folds >= 2 to compare out of fold");
  }
  return oof;
}

StatusOr<std::vector<std::vector<double>>> OofScores(const OofPredictions& oof,
                                                     const CandidateSet& data) {
  std::vector<std::vector<double>> scores;
  size_t pairs = 0, missing = 0;
  std::string first_missing;
  for (const ProblemCandidates& p : data.problems) {
    std::vector<double>& row = scores.emplace_back();
    for (const Candidate& c : p.candidates) {
      ++pairs;
      const std::optional<double> prediction = oof.Find(p.problem_key, c.config_key);
      if (!prediction) {
        if (missing++ == 0) first_missing = "(" + p.problem_key + ", " + c.config_key + ")";
        row.push_back(std::nan(""));
      } else {
        row.push_back(*prediction);
      }
    }
  }
  if (missing > 0) {
    return FailedPreconditionError(
        oof.path + " covers " + std::to_string(pairs - missing) + " of the data's " +
        std::to_string(pairs) + " (problem, config) pairs; first missing: " + first_missing +
        ". Out-of-fold predictions exist only for the rows the model was trained on: compare "
        "on that data (or a subset of it), or drop --oof to compare the models' own predictions "
        "(honest only on data neither model was trained on)");
  }
  return scores;
}

StatusOr<FeatureSpec> TrainingFeatureSpec(const CandidateSet& data, bool with_peer_block,
                                          const std::vector<int32_t>* knob_types) {
  std::map<std::string, int64_t> problems_of_kind;  // "gemm" or a conv direction -> problems
  for (const ProblemCandidates& p : data.problems) {
    const auto* conv = std::get_if<ConvProblem>(&p.problem);
    ++problems_of_kind[conv ? std::string(ConvDirectionName(conv->direction)) : "gemm"];
  }
  if (problems_of_kind.empty()) return InvalidArgumentError("the data has no problems");
  if (problems_of_kind.size() > 1) {
    std::string counts;
    for (const auto& [kind, n] : problems_of_kind) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    }
    const bool has_gemm = problems_of_kind.contains("gemm");
    return InvalidArgumentError(
        "the " + std::string(ProviderName(data.provider)) + " data mixes " +
        (has_gemm ? "GEMM and convolution problems" : "convolution directions") + " (" + counts +
        "); a model learns one " + (has_gemm ? "kind of problem" : "direction") +
        ": train one model per direction on that direction's rows");
  }
  const std::string& kind = problems_of_kind.begin()->first;
  if (kind == "gemm") return GemmFeatureSpec(data.provider, data.hardware, with_peer_block);
  KSELECT_ASSIGN_OR_RETURN(const ConvDirection direction, ParseConvDirection(kind));
  if (knob_types != nullptr) {
    return ConvFeatureSpec(data.provider, direction, data.hardware, *knob_types, with_peer_block);
  }
  std::vector<KernelConfig> configs;
  for (const ProblemCandidates& p : data.problems) {
    for (const Candidate& c : p.candidates) configs.push_back(c.config);
  }
  return ConvFeatureSpec(data.provider, direction, data.hardware, KnobTypesOf(configs),
                         with_peer_block);
}

CandidateTable CandidateTableOf(const CandidateSet& data) {
  CandidateTable table;
  table.provider = data.provider;
  table.data_fingerprint = data.fingerprint;
  table.rows = data.rows_used;
  table.tool_version = ToolVersion();
  std::map<std::string, std::map<std::string, const KernelConfig*>> by_group;
  for (const ProblemCandidates& problem : data.problems) {
    auto& group = by_group[CandidateGroupKey(problem.problem)];
    for (const Candidate& candidate : problem.candidates) {
      group.emplace(candidate.config_key, &candidate.config);
    }
  }
  std::map<std::string, std::map<std::string, uint32_t>> index_of;
  for (const auto& [key, configs] : by_group) {
    std::vector<KernelConfig>& out = table.groups[key];
    for (const auto& [config_key, config] : configs) {
      index_of[key].emplace(config_key, static_cast<uint32_t>(out.size()));
      out.push_back(*config);
    }
  }
  for (const ProblemCandidates& problem : data.problems) {
    const auto* gemm = std::get_if<GemmProblem>(&problem.problem);
    if (gemm == nullptr) continue;
    const std::string key = CandidateGroupKey(problem.problem);
    std::vector<const Candidate*> order;
    for (const Candidate& c : problem.candidates) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(),
                     [](const Candidate* a, const Candidate* b) { return a->tflops > b->tflops; });
    Exemplar exemplar{gemm->m, gemm->n, gemm->k, gemm->batch, {}};
    for (size_t i = 0; i < order.size() && i < kExemplarConfigs; ++i) {
      exemplar.fastest.push_back(index_of[key].at(order[i]->config_key));
    }
    table.exemplars[key].push_back(std::move(exemplar));
  }
  return table;
}

Status WriteCandidateTable(const CandidateTable& table, const std::string& model_dir) {
  return WriteGzipFile((std::filesystem::path(model_dir) / kCandidateTableFile).string(),
                       CandidateTableToJson(table));
}

}  // namespace kselect
