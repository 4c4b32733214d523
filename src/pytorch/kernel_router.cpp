#include "pytorch/kernel_router.h"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>

#include "core/clock.h"

namespace kselect {

struct KernelRouter::Route {
  std::unique_ptr<Selector> selector;
  std::unique_ptr<CrossProviderSelector> cross;
  bool opened = false;          // tried; `open_error` when it failed
  bool decisions_read = false;  // its decision file was looked for (LoadDecisionsFrom)
  std::string open_error;
  std::string model_dir;
};

StatusOr<RouteRule> ParseRouteRule(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq + 1 == text.size()) {
    return InvalidArgumentError("route rule '" + std::string(text) +
                                "': expected PATTERN=MODEL_DIR (PATTERN: *, bf16, bf16/rcc, "
                                "conv, conv/fwd, conv/bwd_data, conv/bwd_weight)");
  }
  RouteRule rule;
  rule.model_dir = std::string(text.substr(eq + 1));
  const std::string_view pattern = text.substr(0, eq);
  const size_t slash = pattern.find('/');
  const std::string_view head = pattern.substr(0, slash);
  const std::string_view tail =
      slash == std::string_view::npos ? std::string_view("*") : pattern.substr(slash + 1);
  if (head == "conv") {
    rule.conv = true;
    if (tail != "*") {
      KSELECT_ASSIGN_OR_RETURN(ConvDirection direction, ParseConvDirection(tail));
      rule.direction = direction;
    }
    return rule;
  }
  if (head != "*") {
    KSELECT_ASSIGN_OR_RETURN(DataType type, ParseDataType(head));
    rule.dtype = type;
  }
  if (tail != "*") {
    KSELECT_ASSIGN_OR_RETURN(GemmLayout layout, ParseGemmLayout(tail));
    rule.layout = layout;
  }
  return rule;
}

int64_t TokenBucketEnd(int64_t n) {
  if (n <= 4) return n;
  int64_t power = 4;
  while (power < n) {
    if (power + power / 2 >= n) return power + power / 2;
    power *= 2;
  }
  return power;
}

namespace {

bool RuleCovers(const RouteRule& rule, const Problem& problem) {
  if (const auto* conv = std::get_if<ConvProblem>(&problem)) {
    return rule.conv && (!rule.direction || *rule.direction == conv->direction);
  }
  const auto& gemm = std::get<GemmProblem>(problem);
  return !rule.conv && (!rule.dtype || *rule.dtype == gemm.dtype_a) &&
         (!rule.layout || *rule.layout == gemm.layout);
}

}  // namespace

KernelRouter::KernelRouter(std::vector<RouteRule> rules, SelectorOptions gemm_options,
                           SelectorOptions conv_options, bool share_across_n)
    : rules_(std::move(rules)),
      gemm_options_(std::move(gemm_options)),
      conv_options_(std::move(conv_options)),
      share_across_n_(share_across_n) {
  for (size_t i = 0; i < rules_.size(); ++i) routes_.push_back(std::make_unique<Route>());
}

KernelRouter::~KernelRouter() = default;

size_t KernelRouter::ProblemKeyHash::operator()(const ProblemKey& key) const {
  size_t h = 0;
  for (int64_t v : key.fields) {
    h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return h;
}

KernelRouter::ProblemKey KernelRouter::KeyOf(const Problem& problem) {
  ProblemKey key;
  auto& f = key.fields;
  if (const auto* p = std::get_if<GemmProblem>(&problem)) {
    auto row = [](MatrixOrder order) { return order == MatrixOrder::kRowMajor ? 1 : 0; };
    f = {0,
         p->m,
         p->n,
         p->k,
         p->batch,
         row(p->layout.a) | row(p->layout.b) << 1 | row(p->layout.c) << 2,
         static_cast<int64_t>(p->dtype_a),
         static_cast<int64_t>(p->dtype_b),
         static_cast<int64_t>(p->dtype_c),
         static_cast<int64_t>(p->compute)};
    return key;
  }
  const auto& c = std::get<ConvProblem>(problem);
  f = {1,
       c.n,
       c.c,
       c.k,
       c.g,
       c.di,
       c.hi,
       c.wi,
       c.z,
       c.y,
       c.x,
       c.stride_d,
       c.stride_h,
       c.stride_w,
       c.pad_d,
       c.pad_h,
       c.pad_w,
       c.dilation_d,
       c.dilation_h,
       c.dilation_w,
       static_cast<int64_t>(c.direction),
       static_cast<int64_t>(c.layout),
       static_cast<int64_t>(c.dtype),
       static_cast<int64_t>(c.compute)};
  return key;
}

const KernelRouter::Entry* KernelRouter::Find(const Problem& problem) const {
  std::shared_lock lock(entries_mutex_);
  auto it = entries_.find(KeyOf(problem));
  return it == entries_.end() ? nullptr : it->second.get();
}

RouteOutcome KernelRouter::Launch(const Entry& entry, const KernelOperands& operands,
                                  void* stream) const {
  if (entry.kernel == nullptr) return entry.without_kernel;
  if (entry.failed.load(std::memory_order_relaxed) ||
      entry.workspace_bytes > operands.workspace_bytes) {
    return RouteOutcome::kLaunchFailed;
  }
  if (!entry.kernel->Launch(operands, stream).ok()) {
    entry.failed.store(true);
    return RouteOutcome::kLaunchFailed;
  }
  return RouteOutcome::kRan;
}

KernelRouter::Route* KernelRouter::RouteFor(const Problem& problem) {
  const bool conv = std::holds_alternative<ConvProblem>(problem);
  for (size_t i = 0; i < rules_.size(); ++i) {
    const RouteRule& rule = rules_[i];
    if (!RuleCovers(rule, problem)) continue;
    Route& route = *routes_[i];
    if (!route.opened) {
      route.opened = true;
      route.model_dir = rule.model_dir;
      const SelectorOptions& options = conv ? conv_options_ : gemm_options_;
      StatusOr<std::string> dir = ModelDirForDevice(rule.model_dir, options);
      Status status = dir.status();
      if (dir.ok() && IsCrossProviderDir(*dir)) {
        auto cross = CrossProviderSelector::Open(*dir, options);
        status = cross.status();
        if (cross.ok()) route.cross = std::move(*cross);
      } else if (dir.ok()) {
        auto selector = Selector::Open(*dir, options);
        status = selector.status();
        if (selector.ok()) route.selector = std::move(*selector);
      }
      if (!status.ok()) {
        route.open_error = rule.model_dir + ": " + status.message();
        std::lock_guard lock(log_mutex_);
        open_errors_.push_back(route.open_error);
      }
    }
    if (route.selector && !decisions_dir_.empty() && !route.decisions_read) LoadDecisions(i);
    // A model that failed to open passes the rule's problems to the next rule.
    if (route.selector || route.cross) return &route;
  }
  return nullptr;
}

std::unique_ptr<KernelRouter::Entry> KernelRouter::DecideThrough(
    Route& route, const Problem& problem, const KernelOperands& operands, void* stream,
    RouteDecision* decision, bool* launched, Winner* winner) {
  auto entry = std::make_unique<Entry>();
  *launched = false;
  decision->problem = ProblemToString(problem);
  decision->model_dir = route.model_dir;
  StatusOr<DispatchInfo> info = InvalidArgumentError("no selector");
  const auto* gemm = std::get_if<GemmProblem>(&problem);
  if (route.cross && gemm != nullptr && operands.buffers.size() == 3) {
    info = Gemm(*route.cross, *gemm, operands.buffers[0], operands.buffers[1], operands.buffers[2],
                operands.workspace, operands.workspace_bytes, stream);
  } else if (route.selector) {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<const Selection*> selection = route.selector->Select(problem);
    decision->select_ms = MsSince(start);
    if (selection.ok()) {
      decision->heuristic_ms = (*selection)->heuristic_query_ms;
      decision->can_implement_ms = (*selection)->can_implement_ms;
    }
    info = selection.ok() ? DispatchRanked(*route.selector, problem, (*selection)->ranked,
                                           (*selection)->path, operands, stream)
                          : StatusOr<DispatchInfo>(selection.status());
  } else {
    info = InvalidArgumentError("a cross-provider model decides GEMMs only");
  }
  if (!info.ok()) {
    decision->note = info.status().message();
    return entry;
  }
  *launched = true;
  Selector& member = !route.cross ? *route.selector
                     : ProviderOf(info->config) == route.cross->manifest().reference_provider
                         ? route.cross->reference()
                         : route.cross->challenger();
  StatusOr<PreparedKernel*> kernel = PreparedForDispatch(member, problem, info->config);
  decision->config = DescribeConfig(info->config);
  decision->timed_configs = info->timed_configs;
  decision->vendor_kept = info->vendor_kept.value_or(false);
  decision->prepare_ms = info->prepare_ms;
  decision->timing_ms = info->timing_ms;
  decision->note = info->note;
  if (!kernel.ok()) {
    decision->note += "; not kept: " + kernel.status().message();
    return entry;
  }
  if ((info->timed_configs > 0 || info->order_from_file) && !info->vendor_kept.has_value()) {
    decision->note += "; not kept: unguarded, the framework's own kernel runs from now";
    entry->without_kernel = RouteOutcome::kUnguarded;
    return entry;
  }
  entry->kernel = *kernel;
  entry->workspace_bytes = (*kernel)->WorkspaceBytes();
  *winner = {&route, &member, info->config, decision->problem};
  return entry;
}

std::unique_ptr<KernelRouter::Entry> KernelRouter::Shared(const Winner& winner,
                                                          const Problem& problem,
                                                          int64_t workspace_bytes,
                                                          RouteDecision* decision) {
  StatusOr<PreparedKernel*> kernel = PreparedForDispatch(*winner.member, problem, winner.config);
  if (!kernel.ok() || (*kernel)->WorkspaceBytes() > workspace_bytes) return nullptr;
  auto entry = std::make_unique<Entry>();
  entry->kernel = *kernel;
  entry->workspace_bytes = (*kernel)->WorkspaceBytes();
  decision->problem = ProblemToString(problem);
  decision->model_dir = winner.route->model_dir;
  decision->config = DescribeConfig(winner.config);
  decision->shared_from = winner.problem;
  decision->note = "the timed winner of " + winner.problem + ", untimed";
  return entry;
}

RouteOutcome KernelRouter::Decide(const Problem& problem, const KernelOperands& operands,
                                  void* stream, bool capturing) {
  if (capturing) return RouteOutcome::kUndecidedCapture;
  const ProblemKey key = KeyOf(problem);
  std::lock_guard decide(decide_mutex_);
  if (const Entry* known = Find(problem)) return Launch(*known, operands, stream);
  Route* route = RouteFor(problem);
  if (route == nullptr) {
    // Remembered, so the next call of the problem is a lookup too.
    auto entry = std::make_unique<Entry>();
    entry->without_kernel = RouteOutcome::kNoRule;
    std::unique_lock lock(entries_mutex_);
    entries_.emplace(key, std::move(entry));
    return RouteOutcome::kNoRule;
  }
  const auto start = std::chrono::steady_clock::now();
  RouteDecision decision;
  bool launched = false;
  std::unique_ptr<Entry> entry;
  // The bucket key: the problem with n at its bucket's end (GEMMs only).
  std::optional<ProblemKey> bucket;
  if (const auto* gemm = std::get_if<GemmProblem>(&problem); gemm && share_across_n_) {
    GemmProblem at_end = *gemm;
    at_end.n = TokenBucketEnd(gemm->n);
    bucket = KeyOf(Problem(at_end));
  }
  if (auto shared = bucket ? bucket_winners_.find(*bucket) : bucket_winners_.end();
      shared != bucket_winners_.end() && shared->second.route == route) {
    entry = Shared(shared->second, problem, operands.workspace_bytes, &decision);
    if (entry != nullptr) launched = Launch(*entry, operands, stream) == RouteOutcome::kRan;
    if (!launched) {
      entry.reset();
      decision = {};
    }
  }
  if (entry == nullptr) {
    Winner winner;
    entry = DecideThrough(*route, problem, operands, stream, &decision, &launched, &winner);
    if (bucket && winner.route != nullptr) bucket_winners_.emplace(*bucket, winner);
  }
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  decide_ns_ += ns;
  decision.decide_ms = ns * 1e-6;
  {
    std::lock_guard lock(log_mutex_);
    decisions_.push_back(std::move(decision));
  }
  std::unique_lock lock(entries_mutex_);
  entries_.emplace(key, std::move(entry));
  return launched ? RouteOutcome::kRan : RouteOutcome::kNoDecision;
}

RouteOutcome KernelRouter::Run(const Problem& problem, const KernelOperands& operands, void* stream,
                               bool capturing) {
  if (const Entry* entry = Find(problem)) return Launch(*entry, operands, stream);
  return Decide(problem, operands, stream, capturing);
}

std::vector<RouteDecision> KernelRouter::Decisions() const {
  std::lock_guard lock(log_mutex_);
  return decisions_;
}

std::vector<std::string> KernelRouter::OpenErrors() const {
  std::lock_guard lock(log_mutex_);
  return open_errors_;
}

std::string KernelRouter::DecisionFile(const std::string& dir, size_t rule) const {
  // The first model of the rule's list names the file; the index keeps two rules apart.
  std::string model = rules_[rule].model_dir.substr(0, rules_[rule].model_dir.find(':'));
  while (!model.empty() && model.back() == '/') model.pop_back();
  model = model.substr(model.find_last_of('/') + 1);
  for (char& c : model) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  }
  return (std::filesystem::path(dir) / ("route" + std::to_string(rule) + "-" + model + ".json"))
      .string();
}

void KernelRouter::LoadDecisions(size_t rule) {
  Route& route = *routes_[rule];
  route.decisions_read = true;
  const std::string path = DecisionFile(decisions_dir_, rule);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return;
  const Status loaded = route.selector->LoadCache(path);
  std::lock_guard lock(log_mutex_);
  if (loaded.ok()) {
    loaded_files_.push_back(std::filesystem::path(path).filename().string() + ": " +
                            std::to_string(route.selector->CachedDecisions()) + " decisions");
  } else {
    open_errors_.push_back(path + ": " + loaded.message());
  }
}

void KernelRouter::LoadDecisionsFrom(std::string dir) {
  std::lock_guard decide(decide_mutex_);
  decisions_dir_ = std::move(dir);
  for (size_t i = 0; i < routes_.size(); ++i) {
    routes_[i]->decisions_read = false;
    if (routes_[i]->selector) LoadDecisions(i);
  }
}

StatusOr<int> KernelRouter::SaveDecisions(const std::string& dir) {
  std::lock_guard decide(decide_mutex_);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return IoError(dir + ": cannot make the folder (" + error.message() + ")");
  int saved = 0;
  for (size_t i = 0; i < routes_.size(); ++i) {
    if (!routes_[i]->selector) continue;
    KSELECT_RETURN_IF_ERROR(routes_[i]->selector->SaveCache(DecisionFile(dir, i)));
    ++saved;
  }
  return saved;
}

std::vector<std::string> KernelRouter::LoadedDecisionFiles() const {
  std::lock_guard lock(log_mutex_);
  return loaded_files_;
}

}  // namespace kselect
