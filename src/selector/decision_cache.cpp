#include "selector/decision_cache.h"

#include <bit>
#include <cstring>

namespace kselect::selector_internal {
namespace {

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

}  // namespace

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
