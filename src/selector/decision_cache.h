// The selector's decision cache: an open-addressing table of immutable entries whose read path
// takes no lock (a probe of atomic pointers), so many threads can ask for cached decisions at
// once. Entries are only added, never replaced or removed, so a pointer handed out stays valid
// for the cache's lifetime.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/problem.h"
#include "kselect/provenance.h"
#include "kselect/selector.h"

namespace kselect::selector_internal {

// The decision cache on disk (Selector::SaveCache): format "kselect.decision_cache" version 1.
inline constexpr std::string_view kDecisionCacheFormat = "kselect.decision_cache";

// A decision cache file as read, before a selector checks it against its own provenance, model
// and candidate table (Selector::LoadCache).
struct DecisionCacheFile {
  Provenance identity;
  double sm_clock_mhz = 0;  // the figures the features read, beside the record
  double mem_bandwidth_gb_s = 0;
  // Each decision as its stage made it (path = decided_by); problems valid, ranked non-empty.
  std::vector<Selection> decisions;
  // Beside each decision: its first-use timing's order where one was saved (from_file set; the
  // order's keys not yet checked against the ranking).
  std::vector<std::optional<FirstUseRecord>> first_use;
};

// Strict: a malformed file, an unknown stage, an impossible problem or config, an empty ranking
// is a kParseError naming `path` and the entry.
StatusOr<DecisionCacheFile> DecisionCacheFromJson(std::string_view text, const std::string& path);

// A hash of every field that tells two problems apart (the same fields operator== compares).
uint64_t HashProblem(const Problem& problem);

struct CacheEntry {
  uint64_t hash = 0;
  // The decision as its stage returned it, and the same marked as coming from the cache.
  Selection fresh;
  Selection cached;
};

class DecisionCache {
 public:
  explicit DecisionCache(size_t capacity);
  ~DecisionCache();
  DecisionCache(const DecisionCache&) = delete;
  DecisionCache& operator=(const DecisionCache&) = delete;

  // Lock-free: the entry for `problem`, or nullptr.
  const CacheEntry* Find(const Problem& problem, uint64_t hash) const;
  // Adds `entry` unless an equal problem got there first (then returns that one and drops
  // `entry`); returns nullptr, leaving `entry` with the caller, when the cache is full.
  const CacheEntry* Insert(std::unique_ptr<CacheEntry>& entry);
  size_t size() const { return size_.load(std::memory_order_relaxed); }
  size_t capacity() const { return capacity_; }
  // Every entry, in slot order (for saving); safe while others insert.
  std::vector<const CacheEntry*> Entries() const;

 private:
  size_t capacity_;
  size_t mask_;
  std::unique_ptr<std::atomic<CacheEntry*>[]> slots_;
  std::atomic<size_t> size_{0};
};

}  // namespace kselect::selector_internal
