// A LightGBM tree ensemble laid out for scoring many rows at once, with the same results as
// TreeEnsemble (and so as LightGBM) bit for bit: the same decisions for NaN, missing type Zero,
// |x| <= 1e-35, default directions and categorical bitsets, and the leaf values summed in double
// in tree order.
//
// Every decision is one unsigned comparison, so a walk has no data-dependent branch: a row is first
// turned into 64-bit keys ("slots"), ordered as the values are, with NaN and zero mapped below or
// above every value as each node's missing-value rule needs (a node reads the slot of its
// feature's variant); a categorical feature's slots hold, for the row's category code, one bit per
// node of that feature saying it goes right (a table built at compile time). A node then goes right
// when (slot << shift) > key. Eight rows walk a tree side by side, one level per step, the next
// node being child + (went right); leaves point to themselves, and a step where no row moved ends
// the walk. Why this scheme (and not QuickScorer's bit vectors): docs/lab/compiled_scorer.md.
//
// Depends only on kselect's core and TreeEnsemble.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kselect/status.h"
#include "model/tree_ensemble.h"

namespace kselect {

class CompiledTrees {
 public:
  struct Options {
    // Largest table (64-bit words) of a categorical feature's decisions per category code; a
    // feature whose table would be larger has each row's decisions read from the nodes' bitsets
    // instead (slower, no table). Bounds the memory a model with huge bitsets can claim.
    size_t max_category_table_words = size_t{1} << 20;
  };

  // Lays out `trees`. Fails (kInvalidArgument) only for models past the layout's limits (2^26 input
  // slots, 2^26 nodes and leaves: a model text of gigabytes).
  static StatusOr<CompiledTrees> Compile(const TreeEnsemble& trees, const Options& options);
  static StatusOr<CompiledTrees> Compile(const TreeEnsemble& trees) {
    return Compile(trees, Options());
  }

  int num_features() const { return num_features_; }
  int num_trees() const { return static_cast<int>(tree_root_.size()); }

  // Scores `num_rows` row-major rows of num_features() doubles into out[0..num_rows), exactly as
  // TreeEnsemble::Predict does. One thread; no allocation beyond a few KiB of scratch per call.
  void Predict(const double* rows, size_t num_rows, double* out) const;

 private:
  // Rows walked side by side: enough independent walks to hide a step's latency, few enough that
  // the slowest of them (every walk takes as many steps as the deepest) wastes little.
  static constexpr size_t kLanes = 8;

  // A node is its key (key_) and where it reads and goes (link_), both indexed by node. It goes
  // right when (slot value << shift) > key. A leaf reads the zero slot, so it never goes right
  // whatever its key, which holds its value (a double's bits).
  struct Link {
    uint32_t field = 0;        // slot * kLanes * 8: the slot's byte offset in the lane-major block
    uint32_t child_shift = 0;  // left child << 6 | shift (right = left + 1; a leaf: itself)
  };
  // A numerical feature's slot variant: the keys of NaN and of zero (|x| <= 1e-35).
  struct NumericSlot {
    uint32_t feature = 0;
    uint64_t nan_key = 0;
    uint64_t zero_key = 0;
  };
  // A categorical feature's slots: `words` words of right-going bits per code, codes
  // 0..codes - 1, then one row for everything else (not a code, or a code no bitset names).
  struct CategoricalSlots {
    uint32_t feature = 0;
    uint32_t slot = 0;
    uint32_t words = 0;
    uint32_t codes = 0;
    bool tabled = true;
    size_t table_begin = 0;   // into cat_table_
    uint32_t node_begin = 0;  // untabled: its nodes' bitsets in cat_node_bitset_
    uint32_t nodes = 0;
  };
  struct CatBitset {
    uint32_t begin = 0;  // into cat_bits_
    uint32_t words = 0;  // 32-bit words
  };

  class Builder;
  CompiledTrees() = default;
  // Fills lane `lane` of the lane-major slot block from one row.
  void FillSlots(const double* row, size_t lane, uint64_t* slots) const;

  int num_features_ = 0;
  uint32_t num_slots_ = 0;                  // numerical, then categorical, then one always 0
  std::vector<NumericSlot> numeric_slots_;  // slots 0 .. numeric_slots_.size() - 1
  std::vector<CategoricalSlots> categorical_;
  std::vector<uint64_t> cat_table_;
  std::vector<CatBitset> cat_node_bitset_;
  std::vector<uint32_t> cat_bits_;

  // Every tree's nodes, breadth first, siblings side by side; apart, so that a node's two halves
  // are addressed by its index alone.
  std::vector<uint64_t> key_;
  std::vector<Link> link_;
  std::vector<uint32_t> tree_root_;
  std::vector<uint32_t> tree_depth_;  // steps from the root to the deepest leaf
};

}  // namespace kselect
