// The run-time selector (selector.h): the decision order, the model path with its first stage,
// the fallbacks, the solution library, record mode and the cache on disk.
#include "kselect/selector.h"
#include "kselect/solutions.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "core/text.h"
#include "kselect/config_schema.h"
#include "kselect/hardware.h"
#include "kselect/model.h"
#include "kselect/version.h"
#include "selector/decision_cache.h"
#include "selector/first_use_timing.h"

namespace kselect {

using json = nlohmann::json;
namespace fs = std::filesystem;
using selector_internal::CacheEntry;
using selector_internal::DecisionCache;
using selector_internal::HashProblem;

namespace {

constexpr std::string_view kRecordFormat = "kselect.problem_record";

// The candidates of one group, indexed for the first stage: each config's family (algo, tile m,
// tile n: what the peer block calls a family) and tile shape, whose analytical estimate stands
// for all its configs.
struct GroupIndex {
  std::vector<KernelConfig> configs;
  std::unordered_map<std::string, size_t> index_of_key;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<size_t>> family_members;
  std::vector<TileShape> shapes;                   // distinct tile shapes
  std::vector<std::vector<size_t>> shape_members;  // configs of each shape
  std::vector<Exemplar> exemplars;                 // measured problems and their fastest configs
  std::vector<std::array<double, 4>> exemplar_shapes;  // LogShape of each exemplar
};

// Exemplars consulted by the first stage, nearest first.
constexpr size_t kNearestExemplars = 8;

// log2 of (m, n, k, batch): shapes compare by the L1 distance of these.
std::array<double, 4> LogShape(int64_t m, int64_t n, int64_t k, int64_t batch) {
  return {std::log2(static_cast<double>(m)), std::log2(static_cast<double>(n)),
          std::log2(static_cast<double>(k)), std::log2(static_cast<double>(batch))};
}

std::tuple<int64_t, int64_t, int64_t> FamilyOf(const GemmKernelTraits& traits) {
  return {traits.algo_id, traits.tile_m, traits.tile_n};
}

GroupIndex BuildGroupIndex(std::span<const KernelConfig> configs, std::vector<Exemplar> exemplars) {
  GroupIndex index;
  index.exemplars = std::move(exemplars);
  for (const Exemplar& e : index.exemplars) {
    index.exemplar_shapes.push_back(LogShape(e.m, e.n, e.k, e.batch));
  }
  index.configs.assign(configs.begin(), configs.end());
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>, size_t> shape_index;
  for (size_t i = 0; i < configs.size(); ++i) {
    index.index_of_key.emplace(ConfigKey(configs[i]), i);
    const GemmKernelTraits traits = GemmTraitsOf(configs[i]);
    index.family_members[FamilyOf(traits)].push_back(i);
    const TileShape shape = TileShapeOf(traits);
    const auto key = std::make_tuple(shape.tile_m, shape.tile_n, shape.tile_k, shape.split_k,
                                     shape.stages, shape.threads);
    const auto [it, added] = shape_index.emplace(key, index.shapes.size());
    if (added) {
      index.shapes.push_back(shape);
      index.shape_members.emplace_back();
    }
    index.shape_members[it->second].push_back(i);
  }
  return index;
}

}  // namespace

struct Selector::Impl {
  SelectorOptions options;
  std::string model_dir;
  Model model;
  CandidateTable table;
  std::map<std::string, GroupIndex, std::less<>> groups;
  HardwareConstants hardware;
  bool gpu_present = false;
  std::string hardware_note;  // why the model does not fit this device ("" when it does)
  HardwareProfile versions;   // driver and library versions (device fields from the GPU if any)
  std::string fingerprint;
  std::unique_ptr<KernelProvider> provider;
  Status provider_status;
  std::mutex provider_mutex;  // providers are not thread-safe; only the cold path takes it
  // The provider library's own top `count` picks, under provider_mutex.
  StatusOr<std::vector<KernelConfig>> LockedHeuristicPicks(const Problem& problem, int count);
  std::unordered_map<std::string, KernelConfig> solutions;  // ProblemToString -> config
  DecisionCache cache;
  // Record mode (SelectorOptions::record_path), under record_mutex: the file, the problems
  // recorded, and the lines a failed write left unwritten, retried before the next one.
  std::mutex record_mutex;
  std::set<std::string> recorded;
  int record_fd = -1;
  std::deque<std::string> record_pending;
  size_t record_head_written = 0;  // bytes of record_pending.front() already in the file
  int64_t records_dropped = 0;     // lines given up on once record_pending was full
  Status record_status;            // the last write's failure; OK once everything is written
  // Dispatch: prepared kernels per (problem, config).
  std::unordered_map<std::string, std::unique_ptr<PreparedKernel>> prepared;
  std::unordered_map<std::string, FirstUseRecord> first_use_orders;

  Impl(Model m, size_t cache_capacity) : model(std::move(m)), cache(cache_capacity) {}
  ~Impl() {
    if (record_fd >= 0) {
      std::lock_guard lock(record_mutex);
      WritePendingRecords();
      ::close(record_fd);
    }
  }

  StatusOr<Selection> Decide(const Problem& problem, std::optional<std::span<const PeerPick>> peer);
  StatusOr<std::optional<Selection>> FromModel(const Problem& problem,
                                               std::optional<std::span<const PeerPick>> peer,
                                               std::string* note);
  StatusOr<std::optional<Selection>> FromAnalytical(const Problem& problem, std::string* note);
  StatusOr<std::optional<Selection>> FromHeuristic(const Problem& problem, std::string* note);
  StatusOr<std::optional<Selection>> FromFirstImplementable(const Problem& problem,
                                                            std::string* note);
  // Walks `order` (indices into configs) keeping what CanImplement accepts, up to top_k.
  StatusOr<std::vector<size_t>> KeepImplementable(const Problem& problem,
                                                  std::span<const KernelConfig> configs,
                                                  std::span<const size_t> order, bool* checked);
  // Indices of the group's configs to score: `picks_in_table` (the picks the table has, as
  // indices), then the nearest exemplars' fastest, the picks' families, the estimate's best.
  std::vector<size_t> FirstStage(const GroupIndex& group, const GemmProblem& problem,
                                 std::span<const PeerPick> peer,
                                 std::span<const size_t> picks_in_table, size_t budget) const;
  Status FillPredictions(const Problem& problem, std::optional<std::span<const PeerPick>> peer,
                         std::vector<RankedConfig>* ranked, size_t count) const;
  void Record(const Problem& problem);
  // Writes record_pending to the file, under record_mutex; sets record_status.
  void WritePendingRecords();
};

namespace {

StatusOr<std::string> FingerprintModelDir(const std::string& dir) {
  uint64_t h = text::kFnv1a64Basis;
  std::vector<fs::path> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".lgbm.gz") || name.ends_with(".lgbm") || name == "feature_spec.json" ||
        name == kCandidateTableFile) {
      files.push_back(entry.path());
    }
  }
  if (error) return IoError(dir + ": cannot list (" + error.message() + ")");
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    KSELECT_ASSIGN_OR_RETURN(const std::string bytes, text::ReadFile(file.string()));
    h = text::Fnv1a64(bytes, text::Fnv1a64(file.filename().string(), h));
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return std::string(hex);
}

// The solution library's configs by problem: the tuner's measured winners for this provider,
// refused when they were measured on another device or library version.
StatusOr<std::unordered_map<std::string, KernelConfig>> LoadSolutions(const std::string& path,
                                                                      Provider provider,
                                                                      const HardwareProfile& here) {
  KSELECT_ASSIGN_OR_RETURN(SolutionLibrary library, LoadSolutionLibrary(path));
  KSELECT_RETURN_IF_ERROR(CheckSolutionIdentity(library, here, path));
  std::unordered_map<std::string, KernelConfig> out;
  for (Solution& s : library.solutions) {
    if (ProviderOf(s.config) != provider) continue;  // another provider's solution
    out.insert_or_assign(ProblemToString(s.problem), std::move(s.config));
  }
  return out;
}

}  // namespace

Selector::Selector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Selector::~Selector() = default;

namespace {

// The hardware a selector selects for: the caller's, else the GPU's; nullopt on a GPU-less host.
StatusOr<std::optional<HardwareConstants>> TargetHardware(const SelectorOptions& options) {
  if (options.hardware) return std::optional<HardwareConstants>(*options.hardware);
  StatusOr<HardwareProfile> device = QueryHardwareProfile(options.provider.device);
  if (!device.ok()) return std::optional<HardwareConstants>();
  KSELECT_ASSIGN_OR_RETURN(HardwareConstants hardware, HardwareConstantsFor(*device));
  return std::optional<HardwareConstants>(hardware);
}

// Of several per-device models, the one whose feature spec names `hardware` (the first where
// none does); every listed model must have a readable spec.
StatusOr<size_t> ModelForHardware(const std::vector<std::string>& model_dirs,
                                  const std::optional<HardwareConstants>& hardware) {
  std::optional<size_t> chosen;
  for (size_t i = 0; i < model_dirs.size(); ++i) {
    if (!fs::is_directory(model_dirs[i])) {
      return NotFoundError(model_dirs[i] + ": no such model directory");
    }
    KSELECT_ASSIGN_OR_RETURN(
        FeatureSpec spec,
        LoadFeatureSpec((fs::path(model_dirs[i]) / "feature_spec.json").string()));
    if (!chosen && hardware && DescribeHardwareDifference(spec.hardware, *hardware).empty()) {
      chosen = i;
    }
  }
  return chosen.value_or(0);
}

}  // namespace

StatusOr<size_t> Selector::ModelForDevice(const std::vector<std::string>& model_dirs,
                                          const SelectorOptions& options) {
  if (model_dirs.empty()) return InvalidArgumentError("selector: no model directory given");
  KSELECT_ASSIGN_OR_RETURN(std::optional<HardwareConstants> hardware, TargetHardware(options));
  return ModelForHardware(model_dirs, hardware);
}

StatusOr<std::unique_ptr<Selector>> Selector::Open(const std::vector<std::string>& model_dirs,
                                                   const SelectorOptions& options) {
  if (model_dirs.empty()) return InvalidArgumentError("selector: no model directory given");
  if (model_dirs.size() == 1) return Open(model_dirs[0], options);
  KSELECT_ASSIGN_OR_RETURN(size_t chosen, ModelForDevice(model_dirs, options));
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<Selector> selector, Open(model_dirs[chosen], options));
  if (!selector->impl_->hardware_note.empty()) {
    selector->impl_->hardware_note = "none of the " + std::to_string(model_dirs.size()) +
                                     " models given was trained for this device; " +
                                     selector->impl_->hardware_note;
  }
  return selector;
}

StatusOr<std::unique_ptr<Selector>> Selector::Open(const std::string& model_dir,
                                                   const SelectorOptions& options) {
  if (model_dir.find(':') != std::string::npos) {
    std::vector<std::string> dirs;
    for (std::string_view part : text::Split(model_dir, ':')) {
      if (!part.empty()) dirs.emplace_back(part);
    }
    return Open(dirs, options);
  }
  if (options.top_k < 1) return InvalidArgumentError("selector: top_k must be at least 1");
  if (options.time_top_k < 0) {
    return InvalidArgumentError("selector: time_top_k must be 0 (off) or more");
  }
  if (options.predicted_times < 0) {
    return InvalidArgumentError("selector: predicted_times must be >= 0");
  }
  if (options.first_stage_candidates < 0) {
    return InvalidArgumentError("selector: first_stage_candidates must be >= 0");
  }
  if (options.cache_capacity < 1) {
    return InvalidArgumentError("selector: cache_capacity must be at least 1");
  }
  if (!fs::is_directory(model_dir)) {
    return NotFoundError(model_dir + ": no such model directory");
  }
  KSELECT_ASSIGN_OR_RETURN(Model model, Model::Load(model_dir));
  auto impl = std::make_unique<Impl>(std::move(model), options.cache_capacity);
  impl->options = options;
  impl->model_dir = model_dir;
  KSELECT_ASSIGN_OR_RETURN(impl->table, LoadCandidateTable(model_dir));
  if (impl->table.provider != impl->model.spec().provider) {
    return SchemaMismatchError(model_dir + "/" + kCandidateTableFile + ": " +
                               std::string(ProviderName(impl->table.provider)) + " configs for a " +
                               std::string(ProviderName(impl->model.spec().provider)) + " model");
  }
  for (const auto& [key, configs] : impl->table.groups) {
    const auto exemplars = impl->table.exemplars.find(key);
    impl->groups.emplace(key, BuildGroupIndex(configs, exemplars == impl->table.exemplars.end()
                                                           ? std::vector<Exemplar>()
                                                           : exemplars->second));
  }
  KSELECT_ASSIGN_OR_RETURN(impl->fingerprint, FingerprintModelDir(model_dir));

  impl->versions = QueryLibraryVersions();
  StatusOr<HardwareProfile> device = QueryHardwareProfile(options.provider.device);
  impl->gpu_present = device.ok();
  if (device.ok()) impl->versions = *device;
  if (options.hardware) {
    impl->hardware = *options.hardware;
  } else if (device.ok()) {
    KSELECT_ASSIGN_OR_RETURN(impl->hardware, HardwareConstantsFor(*device));
  } else {
    impl->hardware = impl->model.spec().hardware;
  }
  if (Status fits = impl->model.CheckHardware(impl->hardware); !fits.ok()) {
    impl->hardware_note = "the model was trained for other hardware (" + fits.message() + ")";
  }

  auto provider = CreateProvider(impl->model.spec().provider, options.provider);
  if (provider.ok()) {
    impl->provider = std::move(*provider);
  } else {
    impl->provider_status = provider.status();
  }
  if (!options.solution_library.empty()) {
    KSELECT_ASSIGN_OR_RETURN(
        impl->solutions,
        LoadSolutions(options.solution_library, impl->model.spec().provider, impl->versions));
  }
  if (!options.record_path.empty()) {
    // A FIFO or a device there would block or never end: only a regular file (or none) is
    // appended to, and never one of the model's own files.
    std::vector<std::string> model_files;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(model_dir, error)) {
      if (entry.is_regular_file(error)) model_files.push_back(entry.path().string());
    }
    KSELECT_RETURN_IF_ERROR(text::CheckOutputFile(options.record_path, "record_path", model_files));
    // Problems recorded by earlier runs are not written twice.
    if (std::ifstream earlier(options.record_path); earlier) {
      std::string line;
      while (std::getline(earlier, line)) {
        const json row = json::parse(line, nullptr, false);
        if (row.is_object() && row.contains("problem")) {
          auto problem = json_codec::ProblemFromJson(row["problem"], options.record_path);
          if (problem.ok()) impl->recorded.insert(ProblemToString(*problem));
        }
      }
    }
    impl->record_fd = ::open(options.record_path.c_str(),
                             O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (impl->record_fd < 0) {
      return IoError(options.record_path + ": cannot open for appending (" + std::strerror(errno) +
                     ")");
    }
  }
  return std::unique_ptr<Selector>(new Selector(std::move(impl)));
}

const Model& Selector::model() const {
  return impl_->model;
}
const std::string& Selector::model_dir() const {
  return impl_->model_dir;
}
const SelectorOptions& Selector::options() const {
  return impl_->options;
}
const HardwareConstants& Selector::hardware() const {
  return impl_->hardware;
}
const std::string& Selector::model_fingerprint() const {
  return impl_->fingerprint;
}
size_t Selector::CachedDecisions() const {
  return impl_->cache.size();
}

std::span<const KernelConfig> Selector::Candidates(const Problem& problem) const {
  return impl_->table.For(problem);
}

std::mutex& Selector::dispatch_mutex() {
  return impl_->provider_mutex;
}
std::unordered_map<std::string, std::unique_ptr<PreparedKernel>>& Selector::prepared_kernels() {
  return impl_->prepared;
}
std::unordered_map<std::string, FirstUseRecord>& Selector::first_use_orders() {
  return impl_->first_use_orders;
}

FirstUseGuardReport Selector::first_use_guard_report() {
  std::lock_guard lock(impl_->provider_mutex);
  return GuardReportOf(impl_->first_use_orders);
}

StatusOr<std::vector<KernelConfig>> Selector::Impl::LockedHeuristicPicks(const Problem& problem,
                                                                         int count) {
  if (provider == nullptr) return provider_status;
  std::lock_guard lock(provider_mutex);
  return provider->HeuristicPicks(problem, count);
}

StatusOr<std::vector<KernelConfig>> Selector::HeuristicPicks(const Problem& problem, int count) {
  return impl_->LockedHeuristicPicks(problem, count);
}

StatusOr<KernelProvider*> Selector::provider() {
  if (!impl_->provider) return impl_->provider_status;
  return impl_->provider.get();
}

namespace {
// The library time of the decision this thread is making (Selection::heuristic_query_ms and
// can_implement_ms): Decide's stages add to them.
thread_local double tls_heuristic_query_ms = 0;
thread_local double tls_can_implement_ms = 0;
}  // namespace

StatusOr<const Selection*> Selector::Select(const Problem& problem,
                                            std::optional<std::span<const PeerPick>> peer) {
  const uint64_t hash = HashProblem(problem);
  if (const CacheEntry* hit = impl_->cache.Find(problem, hash)) return &hit->cached;
  KSELECT_RETURN_IF_ERROR(ValidateProblem(problem));
  impl_->Record(problem);
  tls_heuristic_query_ms = tls_can_implement_ms = 0;
  KSELECT_ASSIGN_OR_RETURN(Selection decided, impl_->Decide(problem, peer));
  decided.heuristic_query_ms = tls_heuristic_query_ms;
  decided.can_implement_ms = tls_can_implement_ms;
  auto entry = std::make_unique<CacheEntry>();
  entry->hash = hash;
  entry->cached = decided;
  entry->cached.path = DecisionPath::kCache;
  entry->fresh = std::move(decided);
  if (const CacheEntry* kept = impl_->cache.Insert(entry)) {
    return entry ? &kept->cached : &kept->fresh;  // entry left = someone else's decision won
  }
  // The cache is full: the decision lives until this thread's next uncached Select.
  thread_local std::unique_ptr<CacheEntry> uncached;
  uncached = std::move(entry);
  return &uncached->fresh;
}

// Lines kept in memory while the record file cannot be written (a full disk, a size limit);
// older ones are dropped, and counted, past this.
constexpr size_t kMaxPendingRecords = 4096;

void Selector::Impl::Record(const Problem& problem) {
  if (record_fd < 0) return;
  const std::string key = ProblemToString(problem);
  std::lock_guard lock(record_mutex);
  if (!recorded.insert(key).second) return;
  if (record_pending.size() >= kMaxPendingRecords) {
    record_pending.pop_back();  // the newest unwritten line: the front may be half written
    ++records_dropped;
  }
  record_pending.push_back(json{{"format", kRecordFormat},
                                {"problem", json_codec::ProblemToJson(problem)},
                                {"model", model_dir}}
                               .dump() +
                           "\n");
  WritePendingRecords();
}

void Selector::Impl::WritePendingRecords() {
  // One write per line, resumed where a short write stopped, so a line is never left torn in
  // the middle of the file once the disk has room again.
  while (!record_pending.empty()) {
    const std::string& line = record_pending.front();
    const ssize_t n =
        ::write(record_fd, line.data() + record_head_written, line.size() - record_head_written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = n < 0 ? std::strerror(errno) : "nothing written";
      record_status =
          IoError(options.record_path + ": cannot append a problem record (" + reason + "); " +
                  std::to_string(record_pending.size()) +
                  " kept in memory and retried at the next new problem or FlushRecord()" +
                  (records_dropped > 0 ? ", " + std::to_string(records_dropped) + " dropped past " +
                                             std::to_string(kMaxPendingRecords)
                                       : std::string()));
      return;
    }
    record_head_written += static_cast<size_t>(n);
    if (record_head_written == line.size()) {
      record_pending.pop_front();
      record_head_written = 0;
    }
  }
  record_status = records_dropped == 0
                      ? Status::Ok()
                      : IoError(options.record_path + ": " + std::to_string(records_dropped) +
                                " problem records were dropped while the file could not be "
                                "written (more than " +
                                std::to_string(kMaxPendingRecords) + " waited)");
}

Status Selector::FlushRecord() {
  if (impl_->record_fd < 0) return Status::Ok();
  std::lock_guard lock(impl_->record_mutex);
  impl_->WritePendingRecords();
  return impl_->record_status;
}

Status Selector::RecordStatus() const {
  if (impl_->record_fd < 0) return Status::Ok();
  std::lock_guard lock(impl_->record_mutex);
  return impl_->record_status;
}

StatusOr<Selection> Selector::Impl::Decide(const Problem& problem,
                                           std::optional<std::span<const PeerPick>> peer) {
  std::string passed;  // why each stage passed: "<stage>: <reason>; ..."
  std::optional<Selection> chosen;
  if (!solutions.empty()) {
    const auto it = solutions.find(ProblemToString(problem));
    if (it != solutions.end()) {
      Selection selection;
      selection.problem = problem;
      selection.path = selection.decided_by = DecisionPath::kSolutionLibrary;
      selection.candidates_considered = selection.candidates_scored = 1;
      selection.ranked.push_back({it->second, 1.0, std::nullopt, std::nullopt});
      selection.note = "the tuner's measured winner (" + options.solution_library + ")";
      // The model's ranking follows, so dispatch has somewhere to go if the solution fails.
      std::string unused;
      auto ranked = FromModel(problem, peer, &unused);
      if (ranked.ok() && ranked->has_value()) {
        for (RankedConfig& next : (*ranked)->ranked) {
          if (ConfigKey(next.config) == ConfigKey(it->second)) continue;
          if (selection.ranked.size() >= static_cast<size_t>(options.top_k)) break;
          selection.ranked.push_back(std::move(next));
        }
      }
      return selection;
    }
  }
  using Stage = StatusOr<std::optional<Selection>> (Impl::*)(const Problem&, std::string*);
  std::string note;
  auto model_stage = FromModel(problem, peer, &note);
  if (!model_stage.ok()) return model_stage.status();
  if (model_stage->has_value()) return std::move(**model_stage);
  passed = "model: " + note;
  for (auto [stage, path] :
       {std::pair<Stage, DecisionPath>{&Impl::FromAnalytical, DecisionPath::kAnalytical},
        {&Impl::FromHeuristic, DecisionPath::kHeuristic},
        {&Impl::FromFirstImplementable, DecisionPath::kFirstImplementable}}) {
    note.clear();
    auto result = (this->*stage)(problem, &note);
    if (!result.ok()) return result.status();
    if (result->has_value()) {
      Selection selection = std::move(**result);
      selection.path = selection.decided_by = path;
      selection.note = passed + (note.empty() ? "" : "; " + note);
      return selection;
    }
    passed += "; " + std::string(DecisionPathName(path)) + ": " + note;
  }
  return CannotImplementError("no stage can select a kernel for " + ProblemToString(problem) +
                              ": " + passed);
}

StatusOr<std::vector<size_t>> Selector::Impl::KeepImplementable(
    const Problem& problem, std::span<const KernelConfig> configs, std::span<const size_t> order,
    bool* checked) {
  std::vector<size_t> kept;
  const size_t want = static_cast<size_t>(options.top_k);
  *checked = options.check_can_implement && gpu_present && provider != nullptr;
  if (!*checked) {
    for (size_t i = 0; i < order.size() && kept.size() < want; ++i) kept.push_back(order[i]);
    return kept;
  }
  std::lock_guard lock(provider_mutex);
  const auto start = std::chrono::steady_clock::now();
  struct AddTime {
    std::chrono::steady_clock::time_point start;
    ~AddTime() { tls_can_implement_ms += MsSince(start); }
  } add_time{start};
  for (size_t i = 0; i < order.size() && kept.size() < want; ++i) {
    const Status status = provider->CanImplement(problem, configs[order[i]]);
    if (status.ok()) {
      kept.push_back(order[i]);
    } else if (status.code() == StatusCode::kUnavailable) {
      *checked = false;  // the library cannot be asked after all: return them unchecked
      kept.push_back(order[i]);
    } else if (status.code() != StatusCode::kCannotImplement) {
      return status.WithContext("CanImplement " + DescribeConfig(configs[order[i]]));
    }
  }
  return kept;
}

std::vector<size_t> Selector::Impl::FirstStage(const GroupIndex& group, const GemmProblem& problem,
                                               std::span<const PeerPick> peer,
                                               std::span<const size_t> picks_in_table,
                                               size_t budget) const {
  std::vector<char> taken(group.configs.size(), 0);
  std::vector<size_t> out;
  auto take = [&](size_t i) {
    if (out.size() < budget && !taken[i]) {
      taken[i] = 1;
      out.push_back(i);
    }
  };
  // The heuristic's picks and their families first: the model mostly reorders within them.
  for (size_t i : picks_in_table) take(i);
  // What won on the nearest measured shapes, round-robin: each one's fastest, then the second...
  std::vector<std::pair<double, size_t>> nearest;
  nearest.reserve(group.exemplars.size());
  const std::array<double, 4> shape = LogShape(problem.m, problem.n, problem.k, problem.batch);
  for (size_t e = 0; e < group.exemplars.size(); ++e) {
    const std::array<double, 4>& other = group.exemplar_shapes[e];
    double distance = 0;
    for (int d = 0; d < 4; ++d) distance += std::abs(shape[d] - other[d]);
    nearest.emplace_back(distance, e);
  }
  const size_t consulted = std::min(nearest.size(), kNearestExemplars);
  std::partial_sort(nearest.begin(), nearest.begin() + consulted, nearest.end());
  for (size_t place = 0; place < kExemplarConfigs && out.size() < budget; ++place) {
    for (size_t e = 0; e < consulted; ++e) {
      const Exemplar& exemplar = group.exemplars[nearest[e].second];
      if (place < exemplar.fastest.size()) take(exemplar.fastest[place]);
    }
  }
  for (const PeerPick& pick : peer) {
    const auto it = group.family_members.find(FamilyOf(GemmTraitsOf(pick.config)));
    if (it == group.family_members.end()) continue;
    for (size_t i : it->second) take(i);
  }
  if (out.size() >= budget) return out;
  // Then whole tile shapes by their analytical estimate, best first.
  std::vector<std::pair<double, size_t>> by_estimate;
  by_estimate.reserve(group.shapes.size());
  for (size_t s = 0; s < group.shapes.size(); ++s) {
    const TileShape& shape = group.shapes[s];
    const bool known = shape.tile_m > 0 && shape.tile_n > 0;
    by_estimate.emplace_back(known ? -EstimateGemm(problem, shape, hardware).tflops : 0.0, s);
  }
  std::sort(by_estimate.begin(), by_estimate.end());
  for (const auto& [negative_tflops, s] : by_estimate) {
    if (out.size() >= budget) break;
    for (size_t i : group.shape_members[s]) take(i);
  }
  return out;
}

StatusOr<std::optional<Selection>> Selector::Impl::FromModel(
    const Problem& problem, std::optional<std::span<const PeerPick>> peer, std::string* note) {
  const std::string group_key = CandidateGroupKey(problem);
  const auto group_it = groups.find(group_key);
  if (group_it == groups.end()) {
    *note = "the candidate table has no configs for " + group_key;
    return std::optional<Selection>();
  }
  if (!hardware_note.empty()) {
    *note = hardware_note;
    return std::optional<Selection>();
  }
  const GroupIndex& group = group_it->second;
  std::vector<KernelConfig> extra;  // heuristic picks the table lacks
  std::vector<PeerPick> live;
  std::string peer_note;
  // Convolutions have no analytical fallback: where the library cannot be asked (no GPU, no
  // cuDNN), the model ranks with empty pick lists, which the conv peer block encodes as missing,
  // rather than leave the host without an answer.
  const bool rank_without_picks = std::holds_alternative<ConvProblem>(problem);
  auto without_picks = [&](const std::string& why) -> bool {
    if (!rank_without_picks) return false;
    peer = std::span<const PeerPick>();
    peer_note = "no heuristic picks (" + why + "): the model ranked without them";
    return true;
  };
  if (model.UsesPeerRanks() && !peer) {
    if (!options.query_heuristic || provider == nullptr) {
      const std::string why =
          options.query_heuristic ? provider_status.message() : "query_heuristic is off";
      if (!without_picks(why)) {
        *note = "the model needs the " + std::string(ProviderName(model.spec().provider)) +
                " heuristic's picks, and none were given (" + why + ")";
        return std::optional<Selection>();
      }
    } else {
      const auto asked = std::chrono::steady_clock::now();
      StatusOr<std::vector<KernelConfig>> listed = LockedHeuristicPicks(problem, 8);
      if (!listed.ok()) {
        if (!without_picks(listed.status().message())) {
          *note = "the model needs the heuristic's picks, and the library cannot be asked (" +
                  listed.status().message() + ")";
          return std::optional<Selection>();
        }
      } else {
        for (size_t r = 0; r < listed->size(); ++r) {
          live.push_back({(*listed)[r], static_cast<int32_t>(r + 1)});
        }
        // A library with a second heuristic (cuDNN's mode B) is asked for it too; one that
        // cannot answer leaves that list empty, which the peer block encodes as missing.
        StatusOr<std::vector<KernelConfig>> second = [&] {
          std::lock_guard lock(provider_mutex);
          return provider->SecondHeuristicPicks(problem, 8);
        }();
        tls_heuristic_query_ms += MsSince(asked);
        if (second.ok()) {
          for (size_t r = 0; r < second->size(); ++r) {
            live.push_back({(*second)[r], static_cast<int32_t>(r + 1), PeerHeuristic::kSecond});
          }
        }
        // An empty list means cuBLASLt cannot run the problem at all (fp8 kernels need aligned
        // extents). cuDNN's mode A lists nothing for some layers whose engines build and run
        // (R(2+1)D's 3x1x1 convolutions with 45 or 230 channels): the model ranks them with
        // what mode B listed, or with neither, and CanImplement keeps what can run.
        if (live.empty() && !rank_without_picks) {
          *note = "the library's heuristic has no algorithm for this problem";
          return std::optional<Selection>();
        }
        peer = live;
        peer_note = listed->empty() ? "heuristic picks asked live (mode A listed none)"
                                    : "heuristic picks asked live";
      }
    }
  }
  std::vector<size_t> picks_in_table;  // the table's index of each pick it has, in pick order
  for (const PeerPick& pick : peer.value_or(std::span<const PeerPick>())) {
    const auto it = group.index_of_key.find(ConfigKey(pick.config));
    if (it == group.index_of_key.end()) {
      // A config both heuristics list is scored once.
      if (std::find(extra.begin(), extra.end(), pick.config) == extra.end()) {
        extra.push_back(pick.config);
      }
    } else {
      picks_in_table.push_back(it->second);
    }
  }
  // Which configs are scored: all, or the first stage's choice.
  const size_t budget = static_cast<size_t>(options.first_stage_candidates);
  std::vector<KernelConfig> scored;
  const auto* gemm = std::get_if<GemmProblem>(&problem);
  size_t considered = group.configs.size() + extra.size();
  if (budget > 0 && gemm != nullptr && group.configs.size() > budget) {
    for (size_t i : FirstStage(group, *gemm, peer.value_or(std::span<const PeerPick>()),
                               picks_in_table, budget)) {
      scored.push_back(group.configs[i]);
    }
  } else {
    scored = group.configs;
  }
  scored.insert(scored.end(), extra.begin(), extra.end());
  StatusOr<std::vector<double>> scores = model.Predict(Target::kTflops, problem, scored, peer);
  if (!scores.ok()) {
    if (scores.status().code() == StatusCode::kInvalidArgument ||
        scores.status().code() == StatusCode::kFailedPrecondition) {
      *note = scores.status().message();
      return std::optional<Selection>();
    }
    return scores.status();
  }
  std::vector<size_t> order(scored.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return (*scores)[a] > (*scores)[b]; });
  bool checked = false;
  KSELECT_ASSIGN_OR_RETURN(std::vector<size_t> kept,
                           KeepImplementable(problem, scored, order, &checked));
  if (kept.empty()) {
    *note = "none of the " + std::to_string(scored.size()) +
            " scored candidates can implement the problem";
    return std::optional<Selection>();
  }
  Selection selection;
  selection.problem = problem;
  selection.path = selection.decided_by = DecisionPath::kModel;
  selection.can_implement_checked = checked;
  selection.candidates_considered = considered;
  selection.candidates_scored = scored.size();
  selection.note = peer_note;
  for (size_t i : kept) selection.ranked.push_back({scored[i], (*scores)[i], {}, {}});
  KSELECT_RETURN_IF_ERROR(FillPredictions(problem, peer, &selection.ranked,
                                          static_cast<size_t>(options.predicted_times)));
  return std::optional<Selection>(std::move(selection));
}

Status Selector::Impl::FillPredictions(const Problem& problem,
                                       std::optional<std::span<const PeerPick>> peer,
                                       std::vector<RankedConfig>* ranked, size_t count) const {
  count = std::min(count, ranked->size());
  if (count == 0) return Status::Ok();
  std::vector<KernelConfig> shown;
  for (size_t i = 0; i < count; ++i) shown.push_back((*ranked)[i].config);
  const double flops = ProblemFlops(problem);
  std::vector<double> tflops, latency;
  if (model.Blends()) {
    KSELECT_ASSIGN_OR_RETURN(tflops, model.PredictTflops(problem, shown, peer));
  } else if (!model.Ranks(Target::kTflops)) {
    for (size_t i = 0; i < count; ++i) tflops.push_back((*ranked)[i].score);
  }
  if (model.Has(Target::kLatency)) {
    KSELECT_ASSIGN_OR_RETURN(latency, model.Predict(Target::kLatency, problem, shown, peer));
  }
  for (size_t i = 0; i < count; ++i) {
    RankedConfig& r = (*ranked)[i];
    if (!tflops.empty() && tflops[i] > 0) r.predicted_tflops = tflops[i];
    if (!latency.empty() && latency[i] > 0) r.predicted_latency_ms = latency[i];
    // One figure follows from the other when the model has only one of them.
    if (!r.predicted_tflops && r.predicted_latency_ms) {
      r.predicted_tflops = flops / (*r.predicted_latency_ms * 1e-3) / 1e12;
    }
    if (!r.predicted_latency_ms && r.predicted_tflops) {
      r.predicted_latency_ms = flops / (*r.predicted_tflops * 1e12) * 1e3;
    }
  }
  return Status::Ok();
}

StatusOr<std::optional<Selection>> Selector::Impl::FromAnalytical(const Problem& problem,
                                                                  std::string* note) {
  const auto* gemm = std::get_if<GemmProblem>(&problem);
  if (gemm == nullptr) {
    *note = "the analytical estimate covers GEMMs only";
    return std::optional<Selection>();
  }
  // The table's configs for the problem, else any group's of the same layout-free kind: tile
  // shapes transfer across dtypes better than nothing; CanImplement then decides.
  std::span<const KernelConfig> configs = table.For(problem);
  if (configs.empty()) {
    *note = "the candidate table has no configs for " + CandidateGroupKey(problem);
    return std::optional<Selection>();
  }
  std::vector<double> estimate(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    const TileShape shape = TileShapeOf(configs[i]);
    // A config whose tile the library picks itself (cuBLASLt's AUTO) cannot be estimated: last.
    estimate[i] =
        shape.tile_m > 0 && shape.tile_n > 0 ? EstimateGemm(*gemm, shape, hardware).tflops : 0;
  }
  std::vector<size_t> order(configs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return estimate[a] > estimate[b]; });
  bool checked = false;
  KSELECT_ASSIGN_OR_RETURN(std::vector<size_t> kept,
                           KeepImplementable(problem, configs, order, &checked));
  if (kept.empty()) {
    *note = "none of the table's " + std::to_string(configs.size()) +
            " configs can implement the problem";
    return std::optional<Selection>();
  }
  Selection selection;
  selection.problem = problem;
  selection.can_implement_checked = checked;
  selection.candidates_considered = selection.candidates_scored = configs.size();
  for (size_t i : kept) {
    const double tflops = estimate[i];
    selection.ranked.push_back(
        {configs[i], tflops, tflops > 0 ? std::optional(tflops) : std::nullopt,
         tflops > 0 ? std::optional(ProblemFlops(problem) / (tflops * 1e9)) : std::nullopt});
  }
  return std::optional<Selection>(std::move(selection));
}

StatusOr<std::optional<Selection>> Selector::Impl::FromHeuristic(const Problem& problem,
                                                                 std::string* note) {
  if (provider == nullptr) {
    *note = provider_status.message();
    return std::optional<Selection>();
  }
  StatusOr<std::vector<KernelConfig>> picks = LockedHeuristicPicks(problem, options.top_k);
  if (!picks.ok() || picks->empty()) {
    *note = picks.ok() ? "the library's heuristic has no algorithm for the problem"
                       : picks.status().message();
    return std::optional<Selection>();
  }
  Selection selection;
  selection.problem = problem;
  selection.can_implement_checked = true;  // the library lists only what it can run
  selection.candidates_considered = selection.candidates_scored = picks->size();
  for (size_t r = 0; r < picks->size(); ++r) {
    selection.ranked.push_back({(*picks)[r], -static_cast<double>(r + 1), {}, {}});
  }
  return std::optional<Selection>(std::move(selection));
}

StatusOr<std::optional<Selection>> Selector::Impl::FromFirstImplementable(const Problem& problem,
                                                                          std::string* note) {
  if (provider == nullptr) {
    *note = provider_status.message();
    return std::optional<Selection>();
  }
  // Enumerating is the provider proving what runs: cuBLASLt and cuDNN ask the device, the tile
  // engine NVRTC-compiles its whole catalogue (minutes). Without the GPU nothing could be run or
  // checked, so the stage passes at once instead of blocking the caller (issue 44, defect 3).
  if (!gpu_present) {
    *note = "no GPU on this host: the provider's configs cannot be enumerated and checked here";
    return std::optional<Selection>();
  }
  StatusOr<std::vector<KernelConfig>> configs = [&] {
    std::lock_guard lock(provider_mutex);
    return provider->Enumerate(problem);
  }();
  if (!configs.ok() || configs->empty()) {
    *note = configs.ok() ? "the provider has no config that runs the problem"
                         : configs.status().message();
    return std::optional<Selection>();
  }
  Selection selection;
  selection.problem = problem;
  selection.can_implement_checked = true;  // Enumerate returns only configs passing CanImplement
  selection.candidates_considered = configs->size();
  selection.candidates_scored = 0;
  for (size_t i = 0; i < configs->size() && i < static_cast<size_t>(options.top_k); ++i) {
    selection.ranked.push_back({(*configs)[i], -static_cast<double>(i + 1), {}, {}});
  }
  return std::optional<Selection>(std::move(selection));
}

StatusOr<Selection> Selector::Rank(const Problem& problem, std::span<const KernelConfig> candidates,
                                   std::optional<std::span<const PeerPick>> peer) const {
  KSELECT_RETURN_IF_ERROR(ValidateProblem(problem));
  if (candidates.empty()) return InvalidArgumentError("Rank: no candidates");
  KSELECT_ASSIGN_OR_RETURN(std::vector<double> scores,
                           impl_->model.Predict(Target::kTflops, problem, candidates, peer));
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  Selection selection;
  selection.problem = problem;
  selection.path = selection.decided_by = DecisionPath::kModel;
  selection.candidates_considered = selection.candidates_scored = candidates.size();
  for (size_t i : order) selection.ranked.push_back({candidates[i], scores[i], {}, {}});
  KSELECT_RETURN_IF_ERROR(impl_->FillPredictions(
      problem, peer, &selection.ranked,
      static_cast<size_t>(std::min(impl_->options.top_k, impl_->options.predicted_times))));
  return selection;
}

namespace {

json OptionalNumber(const std::optional<double>& value) {
  return value ? json(*value) : json();
}

}  // namespace

// The provenance a saved cache must match: its decisions were made by this model, with these
// hardware figures (the model's features read them) and this device's libraries.
static Provenance CacheProvenance(const Selector::Impl& impl) {
  Provenance provenance = ProvenanceOf(impl.versions);
  provenance.arch = impl.hardware.arch;
  provenance.sm_count = impl.hardware.sm_count;
  provenance.model_fingerprint = impl.fingerprint;
  return provenance;
}
static constexpr ProvenanceFields kCacheFields =
    ProvenanceField::kArch | ProvenanceField::kSmCount | ProvenanceField::kDeviceName |
    ProvenanceField::kDriverVersion | ProvenanceField::kCublasLtVersion |
    ProvenanceField::kModelFingerprint;
// The figures beside the record, under their own keys.
static constexpr const char* kCacheSmClock = "sm_clock_mhz";
static constexpr const char* kCacheBandwidth = "mem_bandwidth_gb_s";

Status Selector::SaveCache(const std::string& path) const {
  // Never over a device node, a FIFO or one of the files this selector reads (its model's own
  // files, the solution library, the record).
  std::vector<std::string> inputs;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(impl_->model_dir, error)) {
    if (entry.is_regular_file(error)) inputs.push_back(entry.path().string());
  }
  if (!impl_->options.solution_library.empty()) inputs.push_back(impl_->options.solution_library);
  if (!impl_->options.record_path.empty()) inputs.push_back(impl_->options.record_path);
  KSELECT_RETURN_IF_ERROR(text::CheckOutputFile(path, "the cache path", inputs));
  // Dispatch's first-use orders, copied under its lock.
  std::unordered_map<std::string, FirstUseRecord> first_use;
  {
    std::lock_guard lock(impl_->provider_mutex);
    first_use = impl_->first_use_orders;
  }
  json entries = json::array();
  for (const CacheEntry* entry : impl_->cache.Entries()) {
    const Selection& s = entry->fresh;
    json ranked = json::array();
    for (const RankedConfig& r : s.ranked) {
      ranked.push_back({{"config", json_codec::KernelConfigToJson(r.config)},
                        {"score", r.score},
                        {"predicted_tflops", OptionalNumber(r.predicted_tflops)},
                        {"predicted_latency_ms", OptionalNumber(r.predicted_latency_ms)}});
    }
    entries.push_back({{"problem", json_codec::ProblemToJson(s.problem)},
                       {"decided_by", DecisionPathName(s.decided_by)},
                       {"note", s.note},
                       {"can_implement_checked", s.can_implement_checked},
                       {"candidates_considered", s.candidates_considered},
                       {"candidates_scored", s.candidates_scored},
                       {"ranked", std::move(ranked)}});
    // The order dispatch settled on, so that a later process runs it without timing again.
    if (auto it = first_use.find(ProblemToString(s.problem));
        it != first_use.end() && !it->second.order.empty()) {
      const FirstUseRecord& record = it->second;
      json timed = {{"order", record.order},
                    {"vendor_timed", record.vendor_timed},
                    {"vendor_kept", record.vendor_kept}};
      if (record.vendor_pick) {
        timed["vendor_pick"] = json_codec::KernelConfigToJson(*record.vendor_pick);
      }
      entries.back()["first_use"] = std::move(timed);
    }
  }
  json identity = {{kCacheSmClock, impl_->hardware.sm_clock_mhz},
                   {kCacheBandwidth, impl_->hardware.mem_bandwidth_gb_s}};
  json_codec::WriteProvenance(CacheProvenance(*impl_), identity);
  const json root = {{"format", selector_internal::kDecisionCacheFormat},
                     {"version", 1},
                     {"tool_version", ToolVersion()},
                     {"identity", std::move(identity)},
                     {"entries", std::move(entries)}};
  return text::WriteFileAtomically(path, root.dump(1) + "\n");
}

Status Selector::LoadCache(const std::string& path) {
  KSELECT_ASSIGN_OR_RETURN(const std::string contents, text::ReadFile(path));
  KSELECT_ASSIGN_OR_RETURN(selector_internal::DecisionCacheFile file,
                           selector_internal::DecisionCacheFromJson(contents, path));
  const ProvenanceFigure figures[] = {
      {kCacheSmClock, file.sm_clock_mhz, 1.0 * impl_->hardware.sm_clock_mhz},
      {kCacheBandwidth, file.mem_bandwidth_gb_s, impl_->hardware.mem_bandwidth_gb_s}};
  KSELECT_RETURN_IF_ERROR(CheckProvenance(
      file.identity, CacheProvenance(*impl_),
      {.fields = kCacheFields,
       .artifact = path,
       .remedy = "its decisions do not hold here; delete it or let the selector rebuild it",
       .figures = figures}));
  // Check everything before inserting anything, so a bad file changes nothing. A decision holds
  // at most top_k configs (a C caller sizes its buffers by it), each one this selector could
  // have returned: its provider's, and in the candidate table unless the stage that decided
  // ranks configs from elsewhere (the library's heuristic or enumeration, the solution library,
  // a model given the heuristic's picks), where the provider is asked when it can be.
  const Provider provider = impl_->model.spec().provider;
  std::vector<std::unique_ptr<CacheEntry>> loaded;
  std::vector<std::pair<std::string, FirstUseRecord>> orders;  // problem key -> saved order
  for (size_t i = 0; i < file.decisions.size(); ++i) {
    Selection& s = file.decisions[i];
    const std::string where = path + ".entries[" + std::to_string(i) + "]";
    if (s.ranked.size() > static_cast<size_t>(impl_->options.top_k)) {
      s.ranked.resize(static_cast<size_t>(impl_->options.top_k));
    }
    const auto group = impl_->groups.find(CandidateGroupKey(s.problem));
    const bool outside_allowed =
        s.decided_by == DecisionPath::kSolutionLibrary ||
        s.decided_by == DecisionPath::kHeuristic ||
        s.decided_by == DecisionPath::kFirstImplementable ||
        (s.decided_by == DecisionPath::kModel && impl_->model.UsesPeerRanks());
    for (size_t r = 0; r < s.ranked.size(); ++r) {
      const KernelConfig& config = s.ranked[r].config;
      const std::string at = where + ".ranked[" + std::to_string(r) + "]";
      if (ProviderOf(config) != provider) {
        return SchemaMismatchError(at + ": a " + std::string(ProviderName(ProviderOf(config))) +
                                   " config for a " + std::string(ProviderName(provider)) +
                                   " model (a cache of another selector?)");
      }
      const bool in_table =
          group != impl_->groups.end() && group->second.index_of_key.contains(ConfigKey(config));
      if (in_table) continue;
      if (!outside_allowed) {
        return SchemaMismatchError(at + ": " + DescribeConfig(config) + " is not among the " +
                                   "candidate table's configs for " + CandidateGroupKey(s.problem) +
                                   ", yet the " + std::string(DecisionPathName(s.decided_by)) +
                                   " stage ranks only those (a cache of another model?)");
      }
      if (impl_->options.check_can_implement && impl_->gpu_present && impl_->provider) {
        std::lock_guard lock(impl_->provider_mutex);
        const Status can = impl_->provider->CanImplement(s.problem, config);
        if (!can.ok() && can.code() != StatusCode::kUnavailable) {
          return can.WithContext(at + ": " + DescribeConfig(config));
        }
      }
    }
    if (i < file.first_use.size() && file.first_use[i]) {
      FirstUseRecord record = std::move(*file.first_use[i]);
      if (record.vendor_pick && ProviderOf(*record.vendor_pick) != provider) {
        return SchemaMismatchError(where + ".first_use.vendor_pick: a " +
                                   std::string(ProviderName(ProviderOf(*record.vendor_pick))) +
                                   " config for a " + std::string(ProviderName(provider)) +
                                   " model (a cache of another selector?)");
      }
      // The order keeps what dispatch can run here: the ranking as kept and the vendor's pick.
      std::set<std::string> runnable;
      for (const RankedConfig& r : s.ranked) runnable.insert(ConfigKey(r.config));
      if (record.vendor_pick) runnable.insert(ConfigKey(*record.vendor_pick));
      std::erase_if(record.order, [&](const std::string& key) { return !runnable.contains(key); });
      if (!record.order.empty()) orders.emplace_back(ProblemToString(s.problem), std::move(record));
    }
    auto entry = std::make_unique<CacheEntry>();
    entry->hash = HashProblem(s.problem);
    entry->cached = s;
    entry->cached.path = DecisionPath::kCache;
    entry->fresh = std::move(s);
    loaded.push_back(std::move(entry));
  }
  for (auto& entry : loaded) impl_->cache.Insert(entry);
  std::lock_guard lock(impl_->provider_mutex);
  for (auto& [key, record] : orders) impl_->first_use_orders.emplace(key, std::move(record));
  return Status::Ok();
}

}  // namespace kselect
