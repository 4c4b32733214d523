// The C API (include/kselect/c_api.h) over kselect::Selector and kselect::Gemm. Every entry point
// runs its body through Guard, which turns a Status or any C++ exception into a status code and
// the thread's last-error message: nothing may unwind into C.
#include "kselect/c_api.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <ios>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kselect/cross_provider.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/selector.h"
#include "kselect/status.h"
#include "kselect/version.h"

// The C codes are kselect::StatusCode's values; a reordered enum must fail here, not in a caller.
#define KSELECT_SAME_CODE(c_code, cpp_code) \
  static_assert((c_code) == static_cast<int>(kselect::StatusCode::cpp_code), #c_code)
KSELECT_SAME_CODE(KSELECT_OK, kOk);
KSELECT_SAME_CODE(KSELECT_INVALID_ARGUMENT, kInvalidArgument);
KSELECT_SAME_CODE(KSELECT_PARSE_ERROR, kParseError);
KSELECT_SAME_CODE(KSELECT_SCHEMA_MISMATCH, kSchemaMismatch);
KSELECT_SAME_CODE(KSELECT_NOT_FOUND, kNotFound);
KSELECT_SAME_CODE(KSELECT_IO_ERROR, kIoError);
KSELECT_SAME_CODE(KSELECT_UNAVAILABLE, kUnavailable);
KSELECT_SAME_CODE(KSELECT_CANNOT_IMPLEMENT, kCannotImplement);
KSELECT_SAME_CODE(KSELECT_FAILED_PRECONDITION, kFailedPrecondition);
KSELECT_SAME_CODE(KSELECT_TIMEOUT, kTimeout);
KSELECT_SAME_CODE(KSELECT_INTERNAL, kInternal);
KSELECT_SAME_CODE(KSELECT_UNIMPLEMENTED, kUnimplemented);
#undef KSELECT_SAME_CODE

// One model directory, or a cross-provider model directory (cross_provider.json): exactly one of
// the two is set.
struct kselect_selector {
  std::unique_ptr<kselect::Selector> selector;
  std::unique_ptr<kselect::CrossProviderSelector> cross;
  bool check_can_implement = true;
};

// Wraps a Selection the selector owns (its cache keeps it alive as long as the selector), or for
// a cross-provider selector the decision made into a Selection the handle owns: the handle holds
// the strings the accessors hand out, made once here.
struct kselect_selection {
  const kselect::Selection* selection = nullptr;
  kselect::Selection owned;
  std::string path;
  std::string decided_by;
  std::vector<std::string> keys;
  std::vector<std::string> names;
  std::vector<std::string> providers;
};

namespace {

using kselect::Status;
using kselect::StatusCode;

thread_local std::string last_error;

// A message past this many characters (a 70,000-character path in it, say) is cut.
constexpr size_t kMaxErrorLength = 4096;

int Fail(const char* function, const Status& status) {
  try {
    last_error = std::string(function) + ": " + status.ToString();
    if (last_error.size() > kMaxErrorLength) {
      const size_t cut = last_error.size() - kMaxErrorLength;
      last_error.resize(kMaxErrorLength);
      last_error += "... (" + std::to_string(cut) + " more characters)";
    }
  } catch (...) {
    // Out of memory for the message itself: the code still says what happened.
  }
  return static_cast<int>(status.code());
}

// Runs `body` (returning Status) and maps its result, or any exception, to a status code.
template <typename Body>
int Guard(const char* function, Body&& body) noexcept {
  try {
    const Status status = body();
    return status.ok() ? KSELECT_OK : Fail(function, status);
  } catch (const std::bad_alloc&) {
    return Fail(function, kselect::InternalError("out of memory"));
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the caller gave that the file system refuses (too long, a symlink loop, ...).
    return Fail(function, kselect::IoError(e.what()));
  } catch (const std::ios_base::failure& e) {
    // Reading something that is not a file (a folder given as a cache file, ...).
    return Fail(function, kselect::IoError(e.what()));
  } catch (const std::exception& e) {
    return Fail(function, kselect::InternalError(e.what()));
  } catch (...) {
    return Fail(function, kselect::InternalError("unknown C++ exception"));
  }
}

Status NullArgument(const char* name) {
  return kselect::InvalidArgumentError(std::string(name) + " is NULL");
}

// The handles this API made and has not freed: a closed or freed handle passed again is an
// error rather than a crash (unless the allocator has given its address to a new handle).
template <typename Handle>
class LiveHandles {
 public:
  void Add(const Handle* handle) {
    std::lock_guard lock(mutex_);
    live_.insert(handle);
  }
  bool Remove(const Handle* handle) {
    std::lock_guard lock(mutex_);
    return live_.erase(handle) > 0;
  }
  bool Contains(const Handle* handle) const {
    std::lock_guard lock(mutex_);
    return live_.count(handle) > 0;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_set<const Handle*> live_;
};

// Leaked on purpose: a handle may be closed from a static destructor.
LiveHandles<kselect_selector>& LiveSelectors() {
  static auto* live = new LiveHandles<kselect_selector>();
  return *live;
}
LiveHandles<kselect_selection>& LiveSelections() {
  static auto* live = new LiveHandles<kselect_selection>();
  return *live;
}

Status Stale(const char* name) {
  return kselect::InvalidArgumentError(std::string(name) +
                                       " is not an open handle (closed or freed already?)");
}

Status CheckSelector(const kselect_selector* selector) {
  if (selector == nullptr) return NullArgument("selector");
  if (!LiveSelectors().Contains(selector)) return Stale("selector");
  return Status::Ok();
}

Status CheckSelection(const kselect_selection* selection) {
  if (selection == nullptr) return NullArgument("selection");
  if (!LiveSelections().Contains(selection)) return Stale("selection");
  return Status::Ok();
}

// A C string option: NULL and "" both mean unset.
std::string OptionalString(const char* text) {
  return text == nullptr ? std::string() : text;
}

kselect::StatusOr<kselect::DataType> ParseTypeField(const char* field, const char* text) {
  if (text == nullptr) return NullArgument(field);
  auto type = kselect::ParseDataType(text);
  if (!type.ok()) return type.status().WithContext(field);
  return type;
}

kselect::StatusOr<kselect::GemmProblem> ToGemmProblem(const kselect_gemm_problem& in) {
  kselect::GemmProblem problem;
  problem.m = in.m;
  problem.n = in.n;
  problem.k = in.k;
  problem.batch = in.batch;
  if (in.layout == nullptr) return NullArgument("problem->layout");
  auto layout = kselect::ParseGemmLayout(in.layout);
  if (!layout.ok()) return layout.status().WithContext("problem->layout");
  problem.layout = *layout;
  KSELECT_ASSIGN_OR_RETURN(problem.dtype_a, ParseTypeField("problem->dtype_a", in.dtype_a));
  KSELECT_ASSIGN_OR_RETURN(problem.dtype_b, ParseTypeField("problem->dtype_b", in.dtype_b));
  KSELECT_ASSIGN_OR_RETURN(problem.dtype_c, ParseTypeField("problem->dtype_c", in.dtype_c));
  KSELECT_ASSIGN_OR_RETURN(problem.compute, ParseTypeField("problem->compute", in.compute));
  problem.alpha = in.alpha;
  problem.beta = in.beta;
  KSELECT_RETURN_IF_ERROR(problem.Validate().WithContext("problem"));
  return problem;
}

kselect::SelectorOptions ToSelectorOptions(const kselect_selector_options& in) {
  kselect::SelectorOptions options;
  options.top_k = in.top_k;
  options.provider.device = in.device;
  if (in.max_workspace_bytes > 0) options.provider.max_workspace_bytes = in.max_workspace_bytes;
  options.check_can_implement = in.check_can_implement != 0;
  options.query_heuristic = in.query_heuristic != 0;
  options.first_stage_candidates = in.first_stage_candidates;
  options.solution_library = OptionalString(in.solution_library);
  options.record_path = OptionalString(in.record_path);
  options.time_top_k = in.time_top_k;
  options.cache_capacity = static_cast<size_t>(std::max<int64_t>(in.cache_capacity, 1));
  return options;
}

Status CheckIndex(const kselect_selection* selection, size_t index) {
  KSELECT_RETURN_IF_ERROR(CheckSelection(selection));
  const size_t count = selection->selection->ranked.size();
  if (index >= count) {
    return kselect::InvalidArgumentError("index " + std::to_string(index) +
                                         " is past the selection's " + std::to_string(count) +
                                         " configs");
  }
  return Status::Ok();
}

double OrNan(const std::optional<double>& value) {
  return value ? *value : std::numeric_limits<double>::quiet_NaN();
}

// A cross-provider decision as a Selection: the decision first, then the other provider's choice
// and the reference ranker's next configs; the members' notes and what was chosen in the note.
kselect::Selection CrossSelection(const kselect::GemmProblem& problem,
                                  const kselect::CrossDecision& decision,
                                  bool check_can_implement) {
  kselect::Selection s;
  s.problem = kselect::Problem(problem);
  s.path = s.decided_by = kselect::DecisionPath::kModel;
  s.note = std::string("cross-provider: ") +
           (decision.challenger_chosen ? "challenger" : "reference") + " chosen, predicted gain " +
           std::to_string(decision.predicted_gain) +
           (decision.note.empty() ? "" : "; " + decision.note);
  // The decision is made live only (on a GPU): the reference's configs come from its library and
  // ranker, the challenger's from its selector, each checked there when the options ask.
  s.can_implement_checked = check_can_implement;
  s.candidates_considered = s.candidates_scored = decision.ranked.size();
  s.ranked = decision.ranked;
  return s;
}

// A cross-provider selector decides afresh each time (its members keep their own caches).
Status NoCrossCache(const kselect_selector& selector) {
  if (!selector.cross) return Status::Ok();
  return kselect::FailedPreconditionError(
      "a cross-provider selector has no decision cache file (its members cache their own "
      "selections)");
}

// Storage behind kselect_dispatch_info's strings: one per thread, valid until its next run.
struct DispatchStrings {
  std::string key;
  std::string name;
  std::string path;
  std::string note;
};
thread_local DispatchStrings dispatch_strings;

}  // namespace

// Refuses a NULL argument, naming it.
#define KSELECT_REQUIRE(pointer) \
  if ((pointer) == nullptr) return NullArgument(#pointer)

extern "C" {

const char* kselect_last_error(void) {
  return last_error.c_str();
}

const char* kselect_version(void) {
  return kselect::ToolVersion();
}

int kselect_selector_options_init(kselect_selector_options* options) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(options);
    const kselect::SelectorOptions defaults;
    options->top_k = defaults.top_k;
    options->device = defaults.provider.device;
    options->check_can_implement = defaults.check_can_implement ? 1 : 0;
    options->query_heuristic = defaults.query_heuristic ? 1 : 0;
    options->first_stage_candidates = defaults.first_stage_candidates;
    options->solution_library = nullptr;
    options->record_path = nullptr;
    options->max_workspace_bytes = 0;
    options->time_top_k = defaults.time_top_k;
    options->cache_capacity = static_cast<int64_t>(defaults.cache_capacity);
    return Status::Ok();
  });
}

int kselect_selector_open(const char* model_dir, const kselect_selector_options* options,
                          kselect_selector** out) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(out);
    *out = nullptr;
    KSELECT_REQUIRE(model_dir);
    kselect_selector_options defaults;
    if (options == nullptr) {
      kselect_selector_options_init(&defaults);
      options = &defaults;
    }
    if (options->top_k < 1) {
      return kselect::InvalidArgumentError("options->top_k is " + std::to_string(options->top_k) +
                                           " (at least 1)");
    }
    if (options->first_stage_candidates < 0) {
      return kselect::InvalidArgumentError("options->first_stage_candidates is negative");
    }
    if (options->cache_capacity < 1) {
      return kselect::InvalidArgumentError("options->cache_capacity is " +
                                           std::to_string(options->cache_capacity) +
                                           " (at least 1)");
    }
    auto handle = std::make_unique<kselect_selector>();
    // A list naming a cross-provider directory: the entry trained for this device.
    auto dir = kselect::ModelDirForDevice(model_dir, ToSelectorOptions(*options));
    if (!dir.ok()) return dir.status();
    if (kselect::IsCrossProviderDir(*dir)) {
      auto cross = kselect::CrossProviderSelector::Open(*dir, ToSelectorOptions(*options));
      if (!cross.ok()) return cross.status();
      handle->cross = std::move(*cross);
      handle->check_can_implement = options->check_can_implement != 0;
    } else {
      auto selector = kselect::Selector::Open(*dir, ToSelectorOptions(*options));
      if (!selector.ok()) return selector.status();
      handle->selector = std::move(*selector);
    }
    LiveSelectors().Add(handle.get());
    *out = handle.release();
    return Status::Ok();
  });
}

int kselect_selector_close(kselect_selector* selector) {
  return Guard(__func__, [&] {
    if (selector == nullptr) return Status::Ok();
    if (!LiveSelectors().Remove(selector)) return Stale("selector");
    delete selector;
    return Status::Ok();
  });
}

int kselect_gemm_problem_init(kselect_gemm_problem* problem) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(problem);
    problem->m = 0;
    problem->n = 0;
    problem->k = 0;
    problem->batch = 1;
    problem->layout = "rcc";
    problem->dtype_a = "bf16";
    problem->dtype_b = "bf16";
    problem->dtype_c = "bf16";
    problem->compute = "fp32";
    problem->alpha = 1.0;
    problem->beta = 0.0;
    return Status::Ok();
  });
}

int kselect_selector_select_gemm(kselect_selector* selector, const kselect_gemm_problem* problem,
                                 kselect_selection** out) {
  return Guard(__func__, [&]() -> Status {
    KSELECT_REQUIRE(out);
    *out = nullptr;
    KSELECT_RETURN_IF_ERROR(CheckSelector(selector));
    KSELECT_REQUIRE(problem);
    KSELECT_ASSIGN_OR_RETURN(const kselect::GemmProblem gemm, ToGemmProblem(*problem));
    auto handle = std::make_unique<kselect_selection>();
    if (selector->cross) {
      KSELECT_ASSIGN_OR_RETURN(const kselect::CrossDecision decision,
                               selector->cross->Select(gemm));
      handle->owned = CrossSelection(gemm, decision, selector->check_can_implement);
      handle->selection = &handle->owned;
    } else {
      // A copy: a decision the full cache could not keep lives in a per-thread slot that the
      // thread's next uncached selection replaces, and the caller may hold this one longer.
      KSELECT_ASSIGN_OR_RETURN(const kselect::Selection* selection,
                               selector->selector->Select(kselect::Problem(gemm)));
      handle->owned = *selection;
      handle->selection = &handle->owned;
    }
    const kselect::Selection* selection = handle->selection;
    handle->path = kselect::DecisionPathName(selection->path);
    handle->decided_by = kselect::DecisionPathName(selection->decided_by);
    for (const kselect::RankedConfig& ranked : selection->ranked) {
      handle->keys.push_back(kselect::ConfigKey(ranked.config));
      handle->names.push_back(kselect::DescribeConfig(ranked.config));
      handle->providers.emplace_back(kselect::ProviderName(kselect::ProviderOf(ranked.config)));
    }
    LiveSelections().Add(handle.get());
    *out = handle.release();
    return Status::Ok();
  });
}

int kselect_selection_free(kselect_selection* selection) {
  return Guard(__func__, [&] {
    if (selection == nullptr) return Status::Ok();
    if (!LiveSelections().Remove(selection)) return Stale("selection");
    delete selection;
    return Status::Ok();
  });
}

int kselect_selection_count(const kselect_selection* selection, size_t* out) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelection(selection));
    KSELECT_REQUIRE(out);
    *out = selection->selection->ranked.size();
    return Status::Ok();
  });
}

int kselect_selection_path(const kselect_selection* selection, const char** out) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelection(selection));
    KSELECT_REQUIRE(out);
    *out = selection->path.c_str();
    return Status::Ok();
  });
}

int kselect_selection_decided_by(const kselect_selection* selection, const char** out) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelection(selection));
    KSELECT_REQUIRE(out);
    *out = selection->decided_by.c_str();
    return Status::Ok();
  });
}

int kselect_selection_note(const kselect_selection* selection, const char** out) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelection(selection));
    KSELECT_REQUIRE(out);
    *out = selection->selection->note.c_str();
    return Status::Ok();
  });
}

int kselect_selection_can_implement_checked(const kselect_selection* selection, int* out) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelection(selection));
    KSELECT_REQUIRE(out);
    *out = selection->selection->can_implement_checked ? 1 : 0;
    return Status::Ok();
  });
}

int kselect_selection_config_key(const kselect_selection* selection, size_t index,
                                 const char** out) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(out);
    KSELECT_RETURN_IF_ERROR(CheckIndex(selection, index));
    *out = selection->keys[index].c_str();
    return Status::Ok();
  });
}

int kselect_selection_config_name(const kselect_selection* selection, size_t index,
                                  const char** out) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(out);
    KSELECT_RETURN_IF_ERROR(CheckIndex(selection, index));
    *out = selection->names[index].c_str();
    return Status::Ok();
  });
}

int kselect_selection_provider(const kselect_selection* selection, size_t index, const char** out) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(out);
    KSELECT_RETURN_IF_ERROR(CheckIndex(selection, index));
    *out = selection->providers[index].c_str();
    return Status::Ok();
  });
}

int kselect_selection_score(const kselect_selection* selection, size_t index, double* out) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(out);
    KSELECT_RETURN_IF_ERROR(CheckIndex(selection, index));
    *out = selection->selection->ranked[index].score;
    return Status::Ok();
  });
}

int kselect_selection_predicted_tflops(const kselect_selection* selection, size_t index,
                                       double* out) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(out);
    KSELECT_RETURN_IF_ERROR(CheckIndex(selection, index));
    *out = OrNan(selection->selection->ranked[index].predicted_tflops);
    return Status::Ok();
  });
}

int kselect_selection_predicted_latency_ms(const kselect_selection* selection, size_t index,
                                           double* out) {
  return Guard(__func__, [&] {
    KSELECT_REQUIRE(out);
    KSELECT_RETURN_IF_ERROR(CheckIndex(selection, index));
    *out = OrNan(selection->selection->ranked[index].predicted_latency_ms);
    return Status::Ok();
  });
}

int kselect_selector_cache_save(const kselect_selector* selector, const char* path) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelector(selector));
    KSELECT_REQUIRE(path);
    KSELECT_RETURN_IF_ERROR(NoCrossCache(*selector));
    return selector->selector->SaveCache(path);
  });
}

int kselect_selector_cache_load(kselect_selector* selector, const char* path) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelector(selector));
    KSELECT_REQUIRE(path);
    KSELECT_RETURN_IF_ERROR(NoCrossCache(*selector));
    return selector->selector->LoadCache(path);
  });
}

int kselect_selector_cache_size(const kselect_selector* selector, size_t* out) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelector(selector));
    KSELECT_REQUIRE(out);
    *out = selector->cross ? 0 : selector->selector->CachedDecisions();
    return Status::Ok();
  });
}

int kselect_selector_record_status(kselect_selector* selector) {
  return Guard(__func__, [&] {
    KSELECT_RETURN_IF_ERROR(CheckSelector(selector));
    return selector->cross ? Status::Ok() : selector->selector->FlushRecord();
  });
}

int kselect_gemm_run(kselect_selector* selector, const kselect_gemm_problem* problem, const void* a,
                     const void* b, void* c, void* workspace, int64_t workspace_bytes, void* stream,
                     kselect_dispatch_info* info) {
  return Guard(__func__, [&]() -> Status {
    KSELECT_RETURN_IF_ERROR(CheckSelector(selector));
    KSELECT_REQUIRE(problem);
    KSELECT_REQUIRE(a);
    KSELECT_REQUIRE(b);
    KSELECT_REQUIRE(c);
    if (workspace_bytes < 0) return kselect::InvalidArgumentError("workspace_bytes is negative");
    if (workspace == nullptr && workspace_bytes > 0) {
      return kselect::InvalidArgumentError("workspace is NULL but workspace_bytes is " +
                                           std::to_string(workspace_bytes));
    }
    KSELECT_ASSIGN_OR_RETURN(const kselect::GemmProblem gemm, ToGemmProblem(*problem));
    // What c_api.h promises on a host without a GPU, whichever selector kind this is.
    int devices = 0;
    if (const cudaError_t error = cudaGetDeviceCount(&devices);
        error != cudaSuccess || devices == 0) {
      cudaGetLastError();
      return kselect::UnavailableError(
          std::string("no GPU on this host (") +
          (error != cudaSuccess ? cudaGetErrorName(error) : "no CUDA device") + ")");
    }
    KSELECT_ASSIGN_OR_RETURN(const kselect::DispatchInfo dispatched,
                             selector->cross ? kselect::Gemm(*selector->cross, gemm, a, b, c,
                                                             workspace, workspace_bytes, stream)
                                             : kselect::Gemm(*selector->selector, gemm, a, b, c,
                                                             workspace, workspace_bytes, stream));
    if (info != nullptr) {
      DispatchStrings& strings = dispatch_strings;
      strings.key = kselect::ConfigKey(dispatched.config);
      strings.name = kselect::DescribeConfig(dispatched.config);
      strings.path = kselect::DecisionPathName(dispatched.path);
      strings.note = dispatched.note;
      info->config_key = strings.key.c_str();
      info->config_name = strings.name.c_str();
      info->path = strings.path.c_str();
      info->rank = dispatched.rank;
      info->note = strings.note.c_str();
    }
    return Status::Ok();
  });
}

}  // extern "C"
