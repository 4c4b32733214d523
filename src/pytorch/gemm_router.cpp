#include "pytorch/gemm_router.h"

#include <chrono>
#include <functional>

namespace kselect {

struct GemmRouter::Route {
  std::unique_ptr<Selector> selector;
  std::unique_ptr<CrossProviderSelector> cross;
  bool opened = false;  // tried; `open_error` when it failed
  std::string open_error;
  std::string model_dir;
};

namespace {

bool LayoutMatches(const std::optional<GemmLayout>& want, const GemmLayout& layout) {
  return !want || *want == layout;
}

}  // namespace

StatusOr<GemmRouteRule> ParseGemmRouteRule(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq + 1 == text.size()) {
    return InvalidArgumentError("route rule '" + std::string(text) +
                                "': expected PATTERN=MODEL_DIR (PATTERN: *, bf16, bf16/rcc)");
  }
  GemmRouteRule rule;
  rule.model_dir = std::string(text.substr(eq + 1));
  const std::string_view pattern = text.substr(0, eq);
  const size_t slash = pattern.find('/');
  const std::string_view dtype = pattern.substr(0, slash);
  if (dtype != "*") {
    KSELECT_ASSIGN_OR_RETURN(DataType type, ParseDataType(dtype));
    rule.dtype = type;
  }
  if (slash != std::string_view::npos) {
    const std::string_view layout = pattern.substr(slash + 1);
    if (layout != "*") {
      KSELECT_ASSIGN_OR_RETURN(GemmLayout parsed, ParseGemmLayout(layout));
      rule.layout = parsed;
    }
  }
  return rule;
}

std::string_view GemmRouteOutcomeName(GemmRouteOutcome outcome) {
  switch (outcome) {
    case GemmRouteOutcome::kRan:
      return "ran";
    case GemmRouteOutcome::kNoRule:
      return "no model covers the dtype and layout";
    case GemmRouteOutcome::kUndecidedCapture:
      return "first met during graph capture";
    case GemmRouteOutcome::kNoDecision:
      return "no decision (see the decisions)";
    case GemmRouteOutcome::kLaunchFailed:
      return "launch failed";
  }
  return "unknown";
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

GemmRouter::GemmRouter(std::vector<GemmRouteRule> rules, SelectorOptions options,
                       bool share_across_n)
    : rules_(std::move(rules)), options_(std::move(options)), share_across_n_(share_across_n) {
  for (size_t i = 0; i < rules_.size(); ++i) routes_.push_back(std::make_unique<Route>());
}

GemmRouter::~GemmRouter() = default;

size_t GemmRouter::ProblemKeyHash::operator()(const ProblemKey& key) const {
  size_t h = std::hash<int64_t>()(key.m);
  for (int64_t v : {key.n, key.k, key.batch, static_cast<int64_t>(key.layout_and_dtypes)}) {
    h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return h;
}

GemmRouter::ProblemKey GemmRouter::KeyOf(const GemmProblem& p) {
  auto bit = [](MatrixOrder order) { return order == MatrixOrder::kRowMajor ? 1u : 0u; };
  const uint32_t packed =
      bit(p.layout.a) | bit(p.layout.b) << 1 | bit(p.layout.c) << 2 |
      static_cast<uint32_t>(p.dtype_a) << 3 | static_cast<uint32_t>(p.dtype_b) << 8 |
      static_cast<uint32_t>(p.dtype_c) << 13 | static_cast<uint32_t>(p.compute) << 18;
  return {p.m, p.n, p.k, p.batch, packed};
}

GemmRouter::ProblemKey GemmRouter::BucketKeyOf(const GemmProblem& problem) {
  ProblemKey key = KeyOf(problem);
  key.n = TokenBucketEnd(problem.n);
  return key;
}

bool GemmRouter::Decided(const GemmProblem& problem) const {
  std::shared_lock lock(entries_mutex_);
  return entries_.count(KeyOf(problem)) != 0;
}

GemmRouter::Route* GemmRouter::RouteFor(const GemmProblem& problem) {
  for (size_t i = 0; i < rules_.size(); ++i) {
    const GemmRouteRule& rule = rules_[i];
    if (rule.dtype && *rule.dtype != problem.dtype_a) continue;
    if (!LayoutMatches(rule.layout, problem.layout)) continue;
    Route& route = *routes_[i];
    if (!route.opened) {
      route.opened = true;
      route.model_dir = rule.model_dir;
      StatusOr<std::string> dir = ModelDirForDevice(rule.model_dir, options_);
      Status status = dir.status();
      if (dir.ok() && IsCrossProviderDir(*dir)) {
        auto cross = CrossProviderSelector::Open(*dir, options_);
        status = cross.status();
        if (cross.ok()) route.cross = std::move(*cross);
      } else if (dir.ok()) {
        auto selector = Selector::Open(*dir, options_);
        status = selector.status();
        if (selector.ok()) route.selector = std::move(*selector);
      }
      if (!status.ok()) {
        route.open_error = rule.model_dir + ": " + status.message();
        std::lock_guard lock(log_mutex_);
        open_errors_.push_back(route.open_error);
      }
    }
    // A model that failed to open passes the rule's problems to the next rule.
    if (route.selector || route.cross) return &route;
  }
  return nullptr;
}

std::unique_ptr<GemmRouter::Entry> GemmRouter::Decide(Route& route, const GemmProblem& problem,
                                                      const void* a, const void* b, void* c,
                                                      void* workspace, int64_t workspace_bytes,
                                                      void* stream, GemmRouteDecision* decision,
                                                      bool* launched, Winner* winner) {
  auto entry = std::make_unique<Entry>();
  *launched = false;
  decision->problem = problem.ToString();
  decision->model_dir = route.model_dir;
  StatusOr<DispatchInfo> info =
      route.cross ? Gemm(*route.cross, problem, a, b, c, workspace, workspace_bytes, stream)
                  : Gemm(*route.selector, problem, a, b, c, workspace, workspace_bytes, stream);
  if (!info.ok()) {
    decision->note = info.status().message();
    return entry;
  }
  *launched = true;
  Selector& member = !route.cross ? *route.selector
                     : ProviderOf(info->config) == route.cross->manifest().reference_provider
                         ? route.cross->reference()
                         : route.cross->challenger();
  StatusOr<PreparedKernel*> kernel = PreparedForDispatch(member, Problem(problem), info->config);
  decision->config = DescribeConfig(info->config);
  decision->timed_configs = info->timed_configs;
  decision->vendor_kept = info->vendor_kept.value_or(false);
  decision->note = info->note;
  if (!kernel.ok()) {
    decision->note += "; not kept: " + kernel.status().message();
    return entry;
  }
  entry->kernel = *kernel;
  entry->workspace_bytes = (*kernel)->WorkspaceBytes();
  *winner = {&route, &member, info->config, decision->problem};
  return entry;
}

std::unique_ptr<GemmRouter::Entry> GemmRouter::Shared(const Winner& winner,
                                                      const GemmProblem& problem,
                                                      int64_t workspace_bytes,
                                                      GemmRouteDecision* decision) {
  StatusOr<PreparedKernel*> kernel =
      PreparedForDispatch(*winner.member, Problem(problem), winner.config);
  if (!kernel.ok() || (*kernel)->WorkspaceBytes() > workspace_bytes) return nullptr;
  auto entry = std::make_unique<Entry>();
  entry->kernel = *kernel;
  entry->workspace_bytes = (*kernel)->WorkspaceBytes();
  decision->problem = problem.ToString();
  decision->model_dir = winner.route->model_dir;
  decision->config = DescribeConfig(winner.config);
  decision->shared_from = winner.problem;
  decision->note = "the timed winner of " + winner.problem + ", untimed";
  return entry;
}

GemmRouteOutcome GemmRouter::Run(const GemmProblem& problem, const void* a, const void* b, void* c,
                                 void* workspace, int64_t workspace_bytes, void* stream,
                                 bool capturing) {
  const ProblemKey key = KeyOf(problem);
  auto launch = [&](Entry& entry) {
    if (entry.kernel == nullptr) return entry.without_kernel;
    if (entry.failed.load(std::memory_order_relaxed) || entry.workspace_bytes > workspace_bytes) {
      return GemmRouteOutcome::kLaunchFailed;
    }
    KernelOperands operands;
    operands.buffers = {const_cast<void*>(a), const_cast<void*>(b), c};
    operands.workspace = workspace;
    operands.workspace_bytes = workspace_bytes;
    if (!entry.kernel->Launch(operands, stream).ok()) {
      entry.failed.store(true);
      return GemmRouteOutcome::kLaunchFailed;
    }
    return GemmRouteOutcome::kRan;
  };
  {
    std::shared_lock lock(entries_mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return launch(*it->second);
  }
  if (capturing) return GemmRouteOutcome::kUndecidedCapture;
  std::lock_guard decide(decide_mutex_);
  {
    std::shared_lock lock(entries_mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return launch(*it->second);
  }
  Route* route = RouteFor(problem);
  if (route == nullptr) {
    // Remembered, so the next call of the problem is a lookup too.
    auto entry = std::make_unique<Entry>();
    entry->without_kernel = GemmRouteOutcome::kNoRule;
    std::unique_lock lock(entries_mutex_);
    entries_.emplace(key, std::move(entry));
    return GemmRouteOutcome::kNoRule;
  }
  const auto start = std::chrono::steady_clock::now();
  GemmRouteDecision decision;
  bool launched = false;
  std::unique_ptr<Entry> entry;
  const ProblemKey bucket = BucketKeyOf(problem);
  if (auto shared = share_across_n_ ? bucket_winners_.find(bucket) : bucket_winners_.end();
      shared != bucket_winners_.end() && shared->second.route == route) {
    entry = Shared(shared->second, problem, workspace_bytes, &decision);
    if (entry != nullptr) launched = launch(*entry) == GemmRouteOutcome::kRan;
    if (!launched) {
      entry.reset();
      decision = {};
    }
  }
  if (entry == nullptr) {
    Winner winner;
    entry = Decide(*route, problem, a, b, c, workspace, workspace_bytes, stream, &decision,
                   &launched, &winner);
    if (share_across_n_ && winner.route != nullptr) bucket_winners_.emplace(bucket, winner);
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
  return launched ? GemmRouteOutcome::kRan : GemmRouteOutcome::kNoDecision;
}

std::vector<GemmRouteDecision> GemmRouter::Decisions() const {
  std::lock_guard lock(log_mutex_);
  return decisions_;
}

std::vector<std::string> GemmRouter::OpenErrors() const {
  std::lock_guard lock(log_mutex_);
  return open_errors_;
}

}  // namespace kselect
