#include "selector/decision_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "core/text.h"

namespace kselect {

std::string_view DecisionPathName(DecisionPath path) {
  switch (path) {
    case DecisionPath::kSolutionLibrary:
      return "solution_library";
    case DecisionPath::kCache:
      return "cache";
    case DecisionPath::kModel:
      return "model";
    case DecisionPath::kAnalytical:
      return "analytical";
    case DecisionPath::kHeuristic:
      return "heuristic";
    case DecisionPath::kFirstImplementable:
      return "first_implementable";
  }
  return "unknown";
}

}  // namespace kselect

namespace kselect::selector_internal {
namespace {

using nlohmann::json;

// A stage that decides (kCache never does: it only answers with an earlier decision).
StatusOr<DecisionPath> ParseDecidingStage(std::string_view name) {
  for (DecisionPath path :
       {DecisionPath::kSolutionLibrary, DecisionPath::kModel, DecisionPath::kAnalytical,
        DecisionPath::kHeuristic, DecisionPath::kFirstImplementable}) {
    if (DecisionPathName(path) == name) return path;
  }
  return ParseError("unknown deciding stage \"" + std::string(name).substr(0, 64) +
                    "\" (expected solution_library, model, analytical, heuristic or "
                    "first_implementable)");
}

std::optional<double> NumberOrNothing(const json& value) {
  if (value.is_number()) return value.get<double>();
  return std::nullopt;
}

uint64_t Mix(uint64_t h, uint64_t v) {
  // splitmix64's finaliser over a running combination: cheap, and spreads small integers.
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  return h;
}

uint64_t Bits(double value) {
  return std::bit_cast<uint64_t>(value);
}

// {"order": [config keys], "vendor_pick": config (absent when the heuristic had none),
// "vendor_timed": bool, "vendor_kept": bool}
StatusOr<FirstUseRecord> FirstUseFromJson(const json& j, const std::string& where) {
  json_codec::ObjectReader reader(j, where);
  const json* order = reader.Child("order", true);
  const json* vendor = reader.Child("vendor_pick", false);
  FirstUseRecord record;
  record.vendor_timed = reader.Bool("vendor_timed");
  record.vendor_kept = reader.Bool("vendor_kept");
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  if (!order->is_array() || order->empty()) {
    return ParseError(where + ".order: not a non-empty array");
  }
  for (size_t i = 0; i < order->size(); ++i) {
    const json& key = (*order)[i];
    if (!key.is_string() || key.get_ref<const std::string&>().empty()) {
      return ParseError(where + ".order[" + std::to_string(i) + "]: not a config key");
    }
    record.order.push_back(key.get<std::string>());
  }
  if (vendor != nullptr) {
    KSELECT_ASSIGN_OR_RETURN(record.vendor_pick,
                             json_codec::KernelConfigFromJson(*vendor, where + ".vendor_pick"));
  }
  record.from_file = true;
  return record;
}

}  // namespace

StatusOr<DecisionCacheFile> DecisionCacheFromJson(std::string_view text, const std::string& path) {
  KSELECT_RETURN_IF_ERROR(text::CheckJsonDepth(text, path));
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return ParseError(path + ": not a JSON object (corrupt decision cache)");
  }
  json_codec::ObjectReader reader(root, path);
  const std::string format = reader.String("format");
  const int64_t version = reader.Int("version");
  reader.String("tool_version");
  const json* identity = reader.Child("identity", true);
  const json* entries = reader.Child("entries", true);
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  if (format != kDecisionCacheFormat || version != 1) {
    return ParseError(path + ": format " + format.substr(0, 64) + " version " +
                      std::to_string(version) + ", expected " + std::string(kDecisionCacheFormat) +
                      " version 1");
  }
  DecisionCacheFile file;
  json_codec::ObjectReader identity_reader(*identity, path + ".identity");
  file.identity = json_codec::ReadProvenance(identity_reader);
  file.sm_clock_mhz = identity_reader.NumberOr("sm_clock_mhz", 0);
  file.mem_bandwidth_gb_s = identity_reader.NumberOr("mem_bandwidth_gb_s", 0);
  KSELECT_RETURN_IF_ERROR(identity_reader.Finish());
  if (!entries->is_array()) return ParseError(path + ".entries: not an array");
  file.decisions.reserve(entries->size());
  for (size_t i = 0; i < entries->size(); ++i) {
    const std::string where = path + ".entries[" + std::to_string(i) + "]";
    json_codec::ObjectReader entry((*entries)[i], where);
    const json* problem_json = entry.Child("problem", true);
    const std::string decided_by = entry.String("decided_by");
    const std::string note = entry.String("note");
    const bool checked = entry.Bool("can_implement_checked");
    const int64_t considered = entry.Int("candidates_considered");
    const int64_t scored = entry.Int("candidates_scored");
    const json* ranked = entry.Child("ranked", true);
    const json* first_use = entry.Child("first_use", false);
    KSELECT_RETURN_IF_ERROR(entry.Finish());
    Selection s;
    KSELECT_ASSIGN_OR_RETURN(s.problem, json_codec::ProblemFromJson(*problem_json, where));
    if (Status valid = ValidateProblem(s.problem); !valid.ok()) {
      return ParseError(where + ".problem: " + valid.message());
    }
    auto stage = ParseDecidingStage(decided_by);
    if (!stage.ok()) return ParseError(where + ".decided_by: " + stage.status().message());
    s.decided_by = s.path = *stage;
    s.note = note;
    s.can_implement_checked = checked;
    s.candidates_considered = static_cast<size_t>(std::max<int64_t>(considered, 0));
    s.candidates_scored = static_cast<size_t>(std::max<int64_t>(scored, 0));
    if (!ranked->is_array() || ranked->empty()) {
      return ParseError(where + ".ranked: not a non-empty array");
    }
    for (size_t r = 0; r < ranked->size(); ++r) {
      const std::string at = where + ".ranked[" + std::to_string(r) + "]";
      json_codec::ObjectReader item((*ranked)[r], at);
      const json* config = item.Child("config", true);
      const double score = item.Number("score");
      const json* tflops = item.Child("predicted_tflops", false);
      const json* latency = item.Child("predicted_latency_ms", false);
      KSELECT_RETURN_IF_ERROR(item.Finish());
      KSELECT_ASSIGN_OR_RETURN(KernelConfig kernel,
                               json_codec::KernelConfigFromJson(*config, at + ".config"));
      s.ranked.push_back({std::move(kernel), score,
                          tflops ? NumberOrNothing(*tflops) : std::nullopt,
                          latency ? NumberOrNothing(*latency) : std::nullopt});
    }
    file.decisions.push_back(std::move(s));
    file.first_use.emplace_back();
    if (first_use != nullptr) {
      KSELECT_ASSIGN_OR_RETURN(file.first_use.back(),
                               FirstUseFromJson(*first_use, where + ".first_use"));
    }
  }
  return file;
}

uint64_t HashProblem(const Problem& problem) {
  uint64_t h = problem.index();
  if (const auto* g = std::get_if<GemmProblem>(&problem)) {
    h = Mix(h, g->m);
    h = Mix(h, g->n);
    h = Mix(h, g->k);
    h = Mix(h, g->batch);
    h = Mix(h, (static_cast<uint64_t>(g->layout.a) << 2) |
                   (static_cast<uint64_t>(g->layout.b) << 1) | static_cast<uint64_t>(g->layout.c));
    h = Mix(h, (static_cast<uint64_t>(g->dtype_a) << 24) |
                   (static_cast<uint64_t>(g->dtype_b) << 16) |
                   (static_cast<uint64_t>(g->dtype_c) << 8) | static_cast<uint64_t>(g->compute));
    h = Mix(h, Bits(g->alpha));
    h = Mix(h, Bits(g->beta));
    return h;
  }
  const auto& c = std::get<ConvProblem>(problem);
  for (int64_t v :
       {c.n, c.c, c.k, c.g, c.di, c.hi, c.wi, c.z, c.y, c.x, c.stride_d, c.stride_h, c.stride_w,
        c.pad_d, c.pad_h, c.pad_w, c.dilation_d, c.dilation_h, c.dilation_w}) {
    h = Mix(h, static_cast<uint64_t>(v));
  }
  h = Mix(h, (static_cast<uint64_t>(c.direction) << 24) | (static_cast<uint64_t>(c.layout) << 16) |
                 (static_cast<uint64_t>(c.dtype) << 8) | static_cast<uint64_t>(c.compute));
  return h;
}

DecisionCache::DecisionCache(size_t capacity) : capacity_(capacity) {
  // At most half the slots filled keeps probes short.
  const size_t slots = std::bit_ceil(std::max<size_t>(2 * capacity, 16));
  mask_ = slots - 1;
  slots_ = std::make_unique<std::atomic<CacheEntry*>[]>(slots);
  for (size_t i = 0; i < slots; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

DecisionCache::~DecisionCache() {
  for (size_t i = 0; i <= mask_; ++i) delete slots_[i].load(std::memory_order_relaxed);
}

const CacheEntry* DecisionCache::Find(const Problem& problem, uint64_t hash) const {
  for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
    const CacheEntry* entry = slots_[i].load(std::memory_order_acquire);
    if (entry == nullptr) return nullptr;
    if (entry->hash == hash && entry->fresh.problem == problem) return entry;
  }
}

const CacheEntry* DecisionCache::Insert(std::unique_ptr<CacheEntry>& entry) {
  if (size_.fetch_add(1, std::memory_order_relaxed) >= capacity_) {
    size_.fetch_sub(1, std::memory_order_relaxed);
    return Find(entry->fresh.problem, entry->hash);  // nullptr unless someone cached it
  }
  for (size_t i = entry->hash & mask_;; i = (i + 1) & mask_) {
    CacheEntry* expected = nullptr;
    if (slots_[i].compare_exchange_strong(expected, entry.get(), std::memory_order_release,
                                          std::memory_order_acquire)) {
      return entry.release();
    }
    if (expected->hash == entry->hash && expected->fresh.problem == entry->fresh.problem) {
      size_.fetch_sub(1, std::memory_order_relaxed);
      entry.reset();
      return expected;
    }
  }
}

std::vector<const CacheEntry*> DecisionCache::Entries() const {
  std::vector<const CacheEntry*> out;
  for (size_t i = 0; i <= mask_; ++i) {
    if (const CacheEntry* entry = slots_[i].load(std::memory_order_acquire)) out.push_back(entry);
  }
  return out;
}

}  // namespace kselect::selector_internal
