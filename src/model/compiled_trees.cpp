// CompiledTrees (compiled_trees.h): TreeEnsemble's decisions (tree_ensemble.cpp, LeafOf) recast as
// one unsigned comparison per node.
#include "model/compiled_trees.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

namespace kselect {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};
// A categorical node reads its bit shifted to the top: set (goes right) is above this key.
constexpr uint64_t kTopBitKey = kAll >> 1;
constexpr uint64_t kMaxSlots = uint64_t{1} << 26;  // slot * 64 fits 32 bits
constexpr size_t kMaxNodes = size_t{1} << 26;      // child << 6 | shift fits 32 bits

// Doubles (other than NaN) in order as unsigned integers: -inf < ... < -0 < +0 < ... < +inf map to
// 0x000F.. < ... < 0x7FFF.. < 0x8000.. < ... < 0xFFF0.., so 0 and ~0 stay free for the rows whose
// value goes left or right whatever a node's threshold.
uint64_t OrderKey(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
}

// A numerical node's key: a value goes right when !(value <= threshold), i.e. when its key is
// above the threshold's; every value goes right of a NaN threshold (key 0). -0.0 compares like 0.
uint64_t ThresholdKey(double threshold) {
  if (std::isnan(threshold)) return 0;
  return OrderKey(threshold == 0.0 ? 0.0 : threshold);
}

const uint64_t kZeroKey = OrderKey(0.0);

double LeafValue(uint64_t key) {
  double value;
  std::memcpy(&value, &key, sizeof value);
  return value;
}

}  // namespace

StatusOr<CompiledTrees> CompiledTrees::Compile(const TreeEnsemble& trees, const Options& options) {
  using Source = TreeEnsemble::Node;
  CompiledTrees out;
  out.num_features_ = trees.num_features();
  if (trees.nodes_.size() + trees.leaf_values_.size() >= kMaxNodes) {
    return InvalidArgumentError("the model has " +
                                std::to_string(trees.nodes_.size() + trees.leaf_values_.size()) +
                                " nodes and leaves, more than the 2^26 CompiledTrees lays out");
  }

  // Numerical slots: one per (feature, NaN key, zero key) some node reads.
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, uint32_t> numeric_slot;
  const auto slot_of = [&](const Source& n) {
    const bool nan_left = (n.meta & TreeEnsemble::kNanLeft) != 0;
    const bool zero_left = (n.meta & TreeEnsemble::kZeroLeft) != 0;
    // Zero compares as 0 unless the node's missing type sends it the default way instead.
    const bool zero_compares_left = 0.0 <= n.threshold;
    const uint64_t zero_key = zero_left == zero_compares_left ? kZeroKey : zero_left ? 0 : kAll;
    const NumericSlot slot{static_cast<uint32_t>(n.feature), nan_left ? 0 : kAll, zero_key};
    const auto [it, added] =
        numeric_slot.emplace(std::make_tuple(slot.feature, slot.nan_key, slot.zero_key),
                             static_cast<uint32_t>(out.numeric_slots_.size()));
    if (added) out.numeric_slots_.push_back(slot);
    return it->second;
  };
  for (const Source& n : trees.nodes_) {
    if (!(n.meta & TreeEnsemble::kCategorical)) slot_of(n);
  }

  // Categorical slots: a feature's nodes numbered in node order, one bit each.
  std::map<uint32_t, std::vector<size_t>> categorical_nodes;
  for (size_t i = 0; i < trees.nodes_.size(); ++i) {
    const Source& n = trees.nodes_[i];
    if (n.meta & TreeEnsemble::kCategorical) {
      categorical_nodes[static_cast<uint32_t>(n.feature)].push_back(i);
    }
  }
  uint64_t next_slot = out.numeric_slots_.size();
  std::vector<uint32_t> bit_of(trees.nodes_.size());      // a categorical node's bit
  std::vector<uint32_t> feature_of(trees.nodes_.size());  // its index in categorical_
  for (const auto& [feature, nodes] : categorical_nodes) {
    CategoricalSlots c;
    c.feature = feature;
    c.slot = static_cast<uint32_t>(std::min(next_slot, kMaxSlots));
    c.words = static_cast<uint32_t>((nodes.size() + 63) / 64);
    next_slot += c.words;
    c.node_begin = static_cast<uint32_t>(out.cat_node_bitset_.size());
    c.nodes = static_cast<uint32_t>(nodes.size());
    // Codes above the highest bit any bitset sets go right at every node, like non-codes.
    uint64_t codes = 0;
    for (size_t j = 0; j < nodes.size(); ++j) {
      bit_of[nodes[j]] = static_cast<uint32_t>(j);
      feature_of[nodes[j]] = static_cast<uint32_t>(out.categorical_.size());
      const TreeEnsemble::CatRange& range =
          trees.cat_ranges_[trees.nodes_[nodes[j]].meta >> TreeEnsemble::kFlagBits];
      for (uint32_t w = range.words; w-- > 0;) {
        if (const uint32_t bits = trees.cat_bits_[range.begin + w]; bits != 0) {
          codes = std::max<uint64_t>(codes, 32 * uint64_t{w} + 32 - std::countl_zero(bits));
          break;
        }
      }
      out.cat_node_bitset_.push_back({static_cast<uint32_t>(out.cat_bits_.size()), range.words});
      out.cat_bits_.insert(out.cat_bits_.end(), trees.cat_bits_.begin() + range.begin,
                           trees.cat_bits_.begin() + range.begin + range.words);
    }
    c.codes = static_cast<uint32_t>(codes);
    const uint64_t table_words = (codes + 1) * c.words;
    c.tabled = table_words <= options.max_category_table_words;
    if (c.tabled) {
      c.table_begin = out.cat_table_.size();
      out.cat_table_.resize(out.cat_table_.size() + table_words, kAll);
      uint64_t* table = out.cat_table_.data() + c.table_begin;
      for (uint32_t j = 0; j < c.nodes; ++j) {
        const CatBitset& b = out.cat_node_bitset_[c.node_begin + j];
        for (uint32_t w = 0; w < b.words; ++w) {
          for (uint32_t bits = out.cat_bits_[b.begin + w]; bits != 0; bits &= bits - 1) {
            const uint64_t code = 32 * uint64_t{w} + static_cast<uint32_t>(std::countr_zero(bits));
            table[code * c.words + j / 64] &= ~(uint64_t{1} << (j % 64));
          }
        }
      }
    }
    out.categorical_.push_back(c);
  }
  // Last, a slot that stays 0 in every row: leaves read it, so they never go right.
  const uint64_t zero_slot = next_slot++;
  if (next_slot >= kMaxSlots) {
    return InvalidArgumentError("the model needs " + std::to_string(next_slot) +
                                " input slots to compile, more than 2^26");
  }
  out.num_slots_ = static_cast<uint32_t>(next_slot);
  const uint32_t leaf_field = static_cast<uint32_t>(zero_slot * kLanes * 8);

  // Trees, breadth first: a node's children are appended side by side, so right = left + 1.
  std::vector<std::pair<int32_t, uint32_t>> queue;  // (TreeEnsemble child, depth)
  for (const int32_t root : trees.tree_roots_) {
    const uint32_t base = static_cast<uint32_t>(out.key_.size());
    out.tree_root_.push_back(base);
    queue.assign(1, {root, 0});
    uint32_t depth = 0;
    for (size_t q = 0; q < queue.size(); ++q) {
      const auto [child, level] = queue[q];
      const uint32_t self = base + static_cast<uint32_t>(q);
      depth = std::max(depth, level);
      uint64_t key = 0;
      Link link;
      if (child < 0) {
        // A leaf stays put (0 << 0 is above no key), so its key is free to hold its value.
        const double value = trees.leaf_values_[static_cast<size_t>(~child)];
        std::memcpy(&key, &value, sizeof value);
        link.field = leaf_field;
        link.child_shift = self << 6;
      } else {
        const Source& n = trees.nodes_[static_cast<size_t>(child)];
        link.child_shift = (base + static_cast<uint32_t>(queue.size())) << 6;
        queue.push_back({n.left, level + 1});
        queue.push_back({n.right, level + 1});
        if (n.meta & TreeEnsemble::kCategorical) {
          const CategoricalSlots& c = out.categorical_[feature_of[static_cast<size_t>(child)]];
          const uint32_t bit = bit_of[static_cast<size_t>(child)];
          key = kTopBitKey;
          link.field = (c.slot + bit / 64) * static_cast<uint32_t>(kLanes * 8);
          link.child_shift |= 63 - bit % 64;
        } else {
          key = ThresholdKey(n.threshold);
          link.field = slot_of(n) * static_cast<uint32_t>(kLanes * 8);
        }
      }
      out.key_.push_back(key);
      out.link_.push_back(link);
    }
    out.tree_depth_.push_back(depth);
  }
  return out;
}

void CompiledTrees::FillSlots(const double* row, size_t lane, uint64_t* slots) const {
  for (size_t s = 0; s < numeric_slots_.size(); ++s) {
    const NumericSlot& slot = numeric_slots_[s];
    const double value = row[slot.feature];
    // The same classes as TreeEnsemble::LeafOf: a value, NaN, or (|x| <= 1e-35) zero.
    uint64_t key;
    if (std::fabs(value) > kLightGbmZeroThreshold) {
      key = OrderKey(value);
    } else if (std::isnan(value)) {
      key = slot.nan_key;
    } else {
      key = slot.zero_key;
    }
    slots[s * kLanes + lane] = key;
  }
  for (const CategoricalSlots& c : categorical_) {
    // CategoricalDecision as TreeEnsemble::LeafOf reads it: values in (-1, 2^31) truncate to a
    // code; NaN, other negatives and larger values go right at every node.
    const double value = row[c.feature];
    const bool is_code = value > -1.0 && value < 2147483648.0;
    const uint32_t code = is_code ? static_cast<uint32_t>(static_cast<int32_t>(value)) : ~0u;
    uint64_t* dest = slots + size_t{c.slot} * kLanes + lane;
    if (c.tabled) {
      const uint64_t* right =
          cat_table_.data() + c.table_begin + size_t{std::min(code, c.codes)} * c.words;
      for (uint32_t w = 0; w < c.words; ++w) dest[w * kLanes] = right[w];
      continue;
    }
    const uint32_t word = code / 32;
    for (uint32_t w = 0; w < c.words; ++w) dest[w * kLanes] = kAll;
    for (uint32_t j = 0; j < c.nodes; ++j) {
      const CatBitset& b = cat_node_bitset_[c.node_begin + j];
      const bool left =
          is_code && word < b.words && ((cat_bits_[b.begin + word] >> (code % 32)) & 1) != 0;
      if (left) dest[(j / 64) * kLanes] &= ~(uint64_t{1} << (j % 64));
    }
  }
}

void CompiledTrees::Predict(const double* rows, size_t num_rows, double* out) const {
  const size_t stride = static_cast<size_t>(num_features_);
  std::vector<uint64_t> slots(size_t{num_slots_} * kLanes, 0);  // the zero slot stays 0
  const char* slot_bytes = reinterpret_cast<const char*>(slots.data());
  const uint64_t* keys = key_.data();
  const Link* links = link_.data();
  const size_t trees = tree_root_.size();
  // Where node `node` goes from lane `lane`: its left child, or the right one (+ 1).
  const auto next = [&](uint32_t node, size_t lane) {
    const Link link = links[node];
    uint64_t value;
    std::memcpy(&value, slot_bytes + link.field + 8 * lane, sizeof value);
    return (link.child_shift >> 6) +
           static_cast<uint32_t>((value << (link.child_shift & 63)) > keys[node]);
  };
  for (size_t first = 0; first < num_rows;) {
    const size_t count = std::min(kLanes, num_rows - first);
    if (count <= 2) {
      // A row or two walk alone: eight lanes of copies would cost more than their latency.
      FillSlots(rows + first * stride, 0, slots.data());
      double sum = 0;  // LightGBM's order: 0, + tree 0, + tree 1, ...
      for (size_t t = 0; t < trees; ++t) {
        uint32_t node = tree_root_[t];
        for (uint32_t step = 0; step < tree_depth_[t]; ++step) {
          const uint32_t to = next(node, 0);
          if (to == node) break;  // a leaf
          node = to;
        }
        sum += LeafValue(keys[node]);
      }
      out[first++] = sum;
      continue;
    }
    // Lanes past the last row walk a copy of it.
    for (size_t lane = 0; lane < kLanes; ++lane) {
      FillSlots(rows + (first + std::min(lane, count - 1)) * stride, lane, slots.data());
    }
    double sums[kLanes] = {};
    for (size_t t = 0; t < trees; ++t) {
      uint32_t node[kLanes];
      std::fill_n(node, kLanes, tree_root_[t]);
      for (uint32_t step = 0; step < tree_depth_[t]; ++step) {
        uint32_t moved = 0;
        for (size_t lane = 0; lane < kLanes; ++lane) {
          const uint32_t to = next(node[lane], lane);
          moved |= to ^ node[lane];
          node[lane] = to;
        }
        if (moved == 0) break;  // every lane is at its leaf
      }
      for (size_t lane = 0; lane < kLanes; ++lane) sums[lane] += LeafValue(keys[node[lane]]);
    }
    std::copy_n(sums, count, out + first);
    first += count;
  }
}

}  // namespace kselect
