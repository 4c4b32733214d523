// Cross-provider selection: the reference provider's pick, replaced by the challenger model's
// best config where the TFLOPS models predict a gain (include/kselect/cross_provider.h).
#include "kselect/cross_provider.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/model.h"
#include "selector/first_use_timing.h"
#include "timing/first_use.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::string_view kFormat = "kselect.cross_provider";
constexpr int64_t kVersion = 1;

std::string Resolved(const fs::path& dir, const std::string& path) {
  return fs::path(path).is_absolute() ? path : (dir / path).string();
}

// A member: provider and model, and for the reference an optional ranker (`ranker` non-null).
Status ReadMember(const json* member, const std::string& where, const fs::path& dir,
                  Provider* provider, std::string* model, std::string* ranker = nullptr) {
  if (member == nullptr) return Status::Ok();  // the reader recorded the error
  json_codec::ObjectReader reader(*member, where);
  const std::string provider_name = reader.String("provider");
  const std::string model_path = reader.String("model");
  const std::string ranker_path = ranker != nullptr ? reader.StringOr("ranker", "") : "";
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  KSELECT_ASSIGN_OR_RETURN(*provider, ParseProvider(provider_name));
  if (model_path.empty()) return ParseError(where + ".model: empty");
  *model = Resolved(dir, model_path);
  if (!ranker_path.empty()) *ranker = Resolved(dir, ranker_path);
  return Status::Ok();
}

// TFLOPS of `configs` by the member's model (a regression, or a blend's regression member; Open
// refused members that need the heuristic's picks).
StatusOr<std::vector<double>> PredictTflops(const Selector& selector, const GemmProblem& problem,
                                            std::span<const KernelConfig> configs) {
  return selector.model().PredictTflops(Problem(problem), configs);
}

}  // namespace

bool IsCrossProviderDir(const std::string& dir) {
  std::error_code error;
  return fs::exists(fs::path(dir) / "cross_provider.json", error);
}

StatusOr<CrossProviderManifest> LoadCrossProviderManifest(const std::string& dir) {
  const std::string path = (fs::path(dir) / "cross_provider.json").string();
  KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(path));
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return ParseError(path + ": not a JSON object");
  json_codec::ObjectReader reader(root, path);
  const std::string format = reader.String("format");
  const int64_t version = reader.Int("format_version");
  CrossProviderManifest m;
  const json* reference = reader.Child("reference", true);
  const json* challenger = reader.Child("challenger", true);
  m.min_predicted_gain = reader.NumberOr("min_predicted_gain", 1.0);
  m.comment = reader.StringOr("comment", "");
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  if (format != kFormat) {
    return ParseError(path + ": format is \"" + format + "\", expected \"" + std::string(kFormat) +
                      "\"");
  }
  if (version != kVersion) {
    return ParseError(path + ": format_version " + std::to_string(version) + ", this build reads " +
                      std::to_string(kVersion));
  }
  if (!(m.min_predicted_gain > 0) || !std::isfinite(m.min_predicted_gain)) {
    return ParseError(path + ": min_predicted_gain must be a positive number");
  }
  const fs::path base(dir);
  KSELECT_RETURN_IF_ERROR(ReadMember(reference, path + ".reference", base, &m.reference_provider,
                                     &m.reference_model, &m.reference_ranker));
  KSELECT_RETURN_IF_ERROR(ReadMember(challenger, path + ".challenger", base, &m.challenger_provider,
                                     &m.challenger_model));
  if (m.reference_provider == m.challenger_provider) {
    return ParseError(path + ": reference and challenger are the same provider");
  }
  return m;
}

StatusOr<std::string> ModelDirForDevice(const std::vector<std::string>& dirs,
                                        const SelectorOptions& options) {
  if (dirs.empty()) return InvalidArgumentError("selector: no model directory given");
  if (dirs.size() == 1) return dirs.front();
  std::vector<std::string> trained_for;  // the directory whose feature spec names the hardware
  for (const std::string& dir : dirs) {
    if (IsCrossProviderDir(dir)) {
      KSELECT_ASSIGN_OR_RETURN(const CrossProviderManifest manifest,
                               LoadCrossProviderManifest(dir));
      trained_for.push_back(manifest.reference_model);
    } else {
      trained_for.push_back(dir);
    }
  }
  KSELECT_ASSIGN_OR_RETURN(const size_t chosen, Selector::ModelForDevice(trained_for, options));
  return dirs[chosen];
}

StatusOr<std::string> ModelDirForDevice(const std::string& dirs, const SelectorOptions& options) {
  std::vector<std::string> parts;
  bool names_cross_provider = false;
  for (std::string_view part : text::Split(dirs, ':')) {
    if (part.empty()) continue;
    parts.emplace_back(part);
    names_cross_provider |= IsCrossProviderDir(parts.back());
  }
  if (!names_cross_provider) return dirs;
  return ModelDirForDevice(parts, options);
}

CrossProviderSelector::CrossProviderSelector(CrossProviderManifest manifest,
                                             std::unique_ptr<Selector> reference,
                                             std::unique_ptr<Selector> challenger,
                                             std::unique_ptr<Selector> reference_ranker,
                                             int time_top_k, size_t cache_capacity)
    : manifest_(std::move(manifest)),
      reference_(std::move(reference)),
      challenger_(std::move(challenger)),
      reference_ranker_(std::move(reference_ranker)),
      time_top_k_(time_top_k),
      cache_capacity_(cache_capacity) {}

StatusOr<std::unique_ptr<CrossProviderSelector>> CrossProviderSelector::Open(
    const std::string& dir, SelectorOptions options) {
  KSELECT_ASSIGN_OR_RETURN(CrossProviderManifest manifest, LoadCrossProviderManifest(dir));
  options.predicted_times = std::max(options.predicted_times, 1);
  auto reference = Selector::Open(manifest.reference_model, options);
  if (!reference.ok()) return reference.status().WithContext(dir + ": reference model");
  auto challenger = Selector::Open(manifest.challenger_model, options);
  if (!challenger.ok()) return challenger.status().WithContext(dir + ": challenger model");
  for (const Selector* s : {reference->get(), challenger->get()}) {
    if (s->model().UsesPeerRanks()) {
      return FailedPreconditionError(
          dir + ": member models must predict TFLOPS without the heuristic's picks");
    }
    // A ranker's scores order one problem's configs; they are not times to compare across
    // providers.
    if (s->model().Ranks(Target::kTflops)) {
      return FailedPreconditionError(dir + ": member model " + s->model_dir() +
                                     " ranks configs; the decision compares predicted TFLOPS "
                                     "(train the member with --objective regression)");
    }
  }
  if ((*reference)->model().spec().provider != manifest.reference_provider ||
      (*challenger)->model().spec().provider != manifest.challenger_provider) {
    return SchemaMismatchError(dir +
                               ": a member model is for another provider than the manifest says");
  }
  std::unique_ptr<Selector> ranker;
  if (!manifest.reference_ranker.empty()) {
    auto opened = Selector::Open(manifest.reference_ranker, options);
    if (!opened.ok()) return opened.status().WithContext(dir + ": reference ranker");
    if ((*opened)->model().spec().provider != manifest.reference_provider) {
      return SchemaMismatchError(dir +
                                 ": the reference ranker is for another provider than the "
                                 "reference");
    }
    ranker = std::move(*opened);
  }
  return std::unique_ptr<CrossProviderSelector>(
      new CrossProviderSelector(std::move(manifest), std::move(*reference), std::move(*challenger),
                                std::move(ranker), options.time_top_k, options.cache_capacity));
}

StatusOr<CrossDecision> CrossProviderSelector::Combine(
    const GemmProblem& problem, const KernelConfig& reference_pick,
    std::span<const RankedConfig> reference_ranked_configs,
    std::optional<RankedConfig> challenger_top) const {
  CrossDecision d;
  d.reference_pick = reference_pick;
  d.reference_choice =
      reference_ranked_configs.empty() ? reference_pick : reference_ranked_configs.front().config;
  const KernelConfig choice[] = {d.reference_choice};
  KSELECT_ASSIGN_OR_RETURN(const std::vector<double> reference_tflops,
                           PredictTflops(*reference_, problem, choice));
  d.reference_predicted_tflops = reference_tflops.at(0);
  RankedConfig reference_ranked;
  reference_ranked.config = d.reference_choice;
  reference_ranked.score = d.reference_predicted_tflops;
  reference_ranked.predicted_tflops = d.reference_predicted_tflops;
  if (challenger_top) {
    d.challenger_top = challenger_top->config;
    d.challenger_predicted_tflops = challenger_top->predicted_tflops.value_or(0);
    if (d.reference_predicted_tflops > 0) {
      d.predicted_gain = d.challenger_predicted_tflops / d.reference_predicted_tflops;
    }
    d.challenger_chosen = d.predicted_gain >= manifest_.min_predicted_gain;
  }
  if (d.challenger_chosen) {
    d.config = challenger_top->config;
    d.ranked = {*challenger_top, reference_ranked};
  } else {
    d.config = d.reference_choice;
    d.ranked = {reference_ranked};
    if (challenger_top) d.ranked.push_back(*challenger_top);
  }
  // The ranker's next configs: what first-use timing weighs beside the two choices.
  const size_t reference_count = static_cast<size_t>(std::max(time_top_k_, 1));
  for (size_t r = 1; r < reference_ranked_configs.size() && r < reference_count; ++r) {
    d.ranked.push_back(reference_ranked_configs[r]);
  }
  return d;
}

StatusOr<CrossDecision> CrossProviderSelector::Decide(
    const GemmProblem& problem, const KernelConfig& reference_pick,
    std::span<const KernelConfig> challenger_candidates) const {
  if (ProviderOf(reference_pick) != manifest_.reference_provider) {
    return InvalidArgumentError("the reference pick is not a " +
                                std::string(ProviderName(manifest_.reference_provider)) +
                                " config");
  }
  std::optional<RankedConfig> top;
  if (!challenger_candidates.empty()) {
    KSELECT_ASSIGN_OR_RETURN(const std::vector<double> tflops,
                             PredictTflops(*challenger_, problem, challenger_candidates));
    size_t best = 0;
    for (size_t i = 1; i < tflops.size(); ++i) {
      if (tflops[i] > tflops[best]) best = i;
    }
    RankedConfig r;
    r.config = challenger_candidates[best];
    r.score = tflops[best];
    r.predicted_tflops = tflops[best];
    top = r;
  }
  KSELECT_ASSIGN_OR_RETURN(CrossDecision d, Combine(problem, reference_pick, {}, top));
  if (!top) d.note = "no challenger candidates";
  return d;
}

StatusOr<CrossDecision> CrossProviderSelector::Select(const GemmProblem& problem) {
  const std::string key = ProblemToString(Problem(problem));
  {
    std::lock_guard lock(decisions_mutex_);
    if (auto it = decisions_.find(key); it != decisions_.end()) return it->second;
  }
  KSELECT_ASSIGN_OR_RETURN(CrossDecision d, DecideLive(problem));
  std::lock_guard lock(decisions_mutex_);
  if (decisions_.size() < cache_capacity_) decisions_.emplace(key, d);
  return d;
}

StatusOr<CrossDecision> CrossProviderSelector::DecideLive(const GemmProblem& problem) {
  KSELECT_ASSIGN_OR_RETURN(const std::vector<KernelConfig> picks,
                           reference_->HeuristicPicks(problem, 1));
  if (picks.empty()) {
    return CannotImplementError(std::string(ProviderName(manifest_.reference_provider)) +
                                " has no pick for " + problem.ToString());
  }
  std::string note;
  std::vector<RankedConfig> reference_ranked;
  if (reference_ranker_) {
    StatusOr<const Selection*> ranked = reference_ranker_->Select(problem);
    if (ranked.ok() && (*ranked)->decided_by == DecisionPath::kModel) {
      reference_ranked = (*ranked)->ranked;
    } else {
      // Its fallbacks rank by the heuristic or the estimate, no better than the pick itself.
      note = "reference ranker passed over: " +
             (ranked.ok() ? "decided by " + std::string(DecisionPathName((*ranked)->decided_by)) +
                                ((*ranked)->note.empty() ? "" : " (" + (*ranked)->note + ")")
                          : ranked.status().message()) +
             "; ";
    }
  }
  std::optional<RankedConfig> top;
  StatusOr<const Selection*> challenger = challenger_->Select(problem);
  if (challenger.ok() && !(*challenger)->ranked.empty()) {
    top = (*challenger)->ranked.front();
    if (!top->predicted_tflops) {
      const KernelConfig config[] = {top->config};
      KSELECT_ASSIGN_OR_RETURN(const std::vector<double> tflops,
                               PredictTflops(*challenger_, problem, config));
      top->predicted_tflops = tflops.at(0);
    }
    if ((*challenger)->decided_by != DecisionPath::kModel) {
      // A fallback's TFLOPS are not the model's (a cached decision says which stage made it):
      // do not let it compete.
      note += "challenger decided by " + std::string(DecisionPathName((*challenger)->decided_by)) +
              ((*challenger)->note.empty() ? "" : " (" + (*challenger)->note + ")");
      top.reset();
    }
  } else {
    note += "challenger: " +
            (challenger.ok() ? std::string("no candidate") : challenger.status().message());
  }
  KSELECT_ASSIGN_OR_RETURN(CrossDecision d, Combine(problem, picks.front(), reference_ranked, top));
  d.note = note;
  return d;
}

FirstUseGuardReport CrossProviderSelector::first_use_guard_report() {
  std::lock_guard lock(first_use_mutex_);
  return GuardReportOf(first_use_orders_);
}

StatusOr<DispatchInfo> Gemm(CrossProviderSelector& selector, const GemmProblem& problem,
                            const void* a, const void* b, void* c, void* workspace,
                            int64_t workspace_bytes, void* stream) {
  if (a == nullptr || b == nullptr || c == nullptr) {
    return InvalidArgumentError("Gemm: A, B and C must be device pointers, not null");
  }
  KSELECT_ASSIGN_OR_RETURN(CrossDecision d, selector.Select(problem));
  auto member_of = [&](const KernelConfig& config) -> Selector& {
    return ProviderOf(config) == selector.manifest().reference_provider ? selector.reference()
                                                                        : selector.challenger();
  };
  int timed_configs = 0;
  std::string timing_note;
  std::optional<bool> vendor_kept;
  double prepare_ms = 0, timing_ms = 0;
  if (selector.time_top_k_ >= 2 && d.ranked.size() >= 2) {
    // The vendor guard: cuBLASLt's own pick is timed beside the candidates and kept unless one
    // beats it by more than the margin.
    auto time_now = [&]() -> StatusOr<FirstUseRecord> {
      KernelOperands operands;
      operands.buffers = {const_cast<void*>(a), const_cast<void*>(b), c};
      operands.workspace = workspace;
      operands.workspace_bytes = workspace_bytes;
      const auto start = std::chrono::steady_clock::now();
      std::vector<timing::FirstUseContender> contenders;
      for (const RankedConfig& r : d.ranked) {
        auto kernel = PreparedForDispatch(member_of(r.config), Problem(problem), r.config);
        if (!kernel.ok() || (*kernel)->WorkspaceBytes() > workspace_bytes) continue;
        contenders.push_back({ConfigKey(r.config), *kernel});
      }
      KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, selector.reference().provider());
      const double contenders_ms = MsSince(start);
      KSELECT_ASSIGN_OR_RETURN(
          FirstUseRecord record,
          TimeWithVendorPick(
              std::move(contenders), d.reference_pick,
              [&] {
                return PreparedForDispatch(selector.reference(), Problem(problem),
                                           d.reference_pick);
              },
              *provider, Problem(problem), operands, selector.reference().options(), stream));
      record.prepare_ms += contenders_ms;
      return record;
    };
    std::lock_guard lock(selector.first_use_mutex_);
    KSELECT_ASSIGN_OR_RETURN(
        const FirstUseRecord* record,
        FirstUseOrder(selector.first_use_orders_, ProblemToString(Problem(problem)), stream,
                      time_now, &timed_configs, &timing_note));
    if (record != nullptr && !record->order.empty()) {
      const std::vector<RankedConfig> candidates = WithVendorPick(d.ranked, record);
      std::vector<RankedConfig> reordered;
      for (size_t r : TimedFirst(candidates, record->order)) reordered.push_back(candidates[r]);
      d.ranked = std::move(reordered);
      if (timed_configs > 0) timing_note = GuardNote(*record);
      if (timed_configs > 0 && record->vendor_timed) vendor_kept = record->vendor_kept;
    }
    if (record != nullptr && timed_configs > 0) {
      prepare_ms = record->prepare_ms;
      timing_ms = record->timing_ms;
    }
  } else if (selector.time_top_k_ < 2) {
    timing_note =
        "not guarded: untimed (time_top_k < 2), the vendor's pick was not timed beside it";
  }
  std::string failures;
  for (size_t r = 0; r < d.ranked.size(); ++r) {
    const RankedConfig one[] = {d.ranked[r]};
    StatusOr<DispatchInfo> info =
        GemmRanked(member_of(d.ranked[r].config), problem, one, DecisionPath::kModel, a, b, c,
                   workspace, workspace_bytes, stream);
    if (info.ok()) {
      info->rank = static_cast<int>(r + 1);
      info->timed_configs = timed_configs;
      info->vendor_kept = vendor_kept;
      info->prepare_ms = prepare_ms;
      info->timing_ms = timing_ms;
      if (!failures.empty()) info->note = "fell back past " + failures;
      if (timed_configs > 0) {
        info->note += std::string(info->note.empty() ? "" : "; ") + "timed " +
                      std::to_string(timed_configs) + " configs of both providers at first use";
      }
      if (!timing_note.empty()) info->note += (info->note.empty() ? "" : "; ") + timing_note;
      return info;
    }
    failures += (failures.empty() ? "" : "; ") + info.status().message();
  }
  return CannotImplementError("Gemm: neither provider's config for " + problem.ToString() +
                              " ran: " + failures);
}

}  // namespace kselect
