// A native evaluator of LightGBM tree ensembles read from LightGBM's text model format, so model
// inference needs no LightGBM library (the runtime links without it). Predictions are bit-identical
// to LightGBM's own (LGBM_BoosterPredictForMat, C_API_PREDICT_NORMAL, all iterations) for the
// objectives whose output transform is the identity: the same decisions (missing-value types,
// default directions, categorical bitsets), the same zeroing of |x| <= 1e-35 inputs that LightGBM's
// dense-matrix reader does, and the leaf values summed in double in tree order.
//
// Depends only on kselect's core (status.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/status.h"

namespace kselect {

// LightGBM's kZeroThreshold (meta.h): inputs within it are zero. The dense-matrix reader of
// LGBM_BoosterPredictForMat drops them (they read back as 0), and "missing type Zero" splits send
// them the default way.
inline constexpr double kLightGbmZeroThreshold = 1e-35f;

class CompiledTrees;

class TreeEnsemble {
 public:
  // Parses a LightGBM text model (the contents of a model_*.lgbm file, already gunzipped).
  // `source` names the text in messages (a path). Malformed text (truncated, wrong counts, child
  // or feature indices out of range, non-numbers, a node graph that is not a tree) gives a
  // kParseError naming `source` and the tree; models this evaluator cannot reproduce exactly
  // (num_class != 1, linear trees, averaged random-forest output, an objective whose output is
  // transformed, such as binary or poisson) give kInvalidArgument.
  static StatusOr<TreeEnsemble> FromLightGbmText(std::string_view text, std::string_view source);

  int num_features() const { return static_cast<int>(feature_names_.size()); }
  int num_trees() const { return static_cast<int>(tree_roots_.size()); }
  const std::vector<std::string>& feature_names() const { return feature_names_; }
  // The header's objective line ("regression", "lambdarank", ...; empty when absent).
  std::string_view objective() const { return objective_; }
  // The features some node splits as a category, ascending.
  std::vector<int> CategoricalSplitFeatures() const;

  // Scores `num_rows` row-major rows of num_features() doubles into out[0..num_rows): the sum of
  // every tree's leaf value, as LightGBM predicts it.
  void Predict(const double* rows, size_t num_rows, double* out) const;

 private:
  // CompiledTrees (compiled_trees.h) reads the parsed trees to lay them out for batch scoring.
  friend class CompiledTrees;

  // One internal node, packed so a visit touches one cache line: the fields every decision reads.
  struct Node {
    double threshold = 0;  // numerical: go left when value <= threshold
    int32_t feature = 0;
    // A child >= 0 is a node index into nodes_; < 0 is ~(leaf index into leaf_values_).
    int32_t left = 0;
    int32_t right = 0;
    // kCategorical, kNanLeft, kZeroLeft bits; categorical nodes keep their bitset's index in
    // cat_ranges_ in the bits above kFlagBits.
    uint32_t meta = 0;
  };
  static constexpr uint32_t kCategorical = 1;
  static constexpr uint32_t kNanLeft = 2;   // where a NaN goes
  static constexpr uint32_t kZeroLeft = 4;  // where an exact 0 goes
  static constexpr int kFlagBits = 3;
  struct CatRange {
    uint32_t begin = 0;  // first 32-bit word in cat_bits_
    uint32_t words = 0;
  };

  class Parser;
  TreeEnsemble() = default;
  int32_t LeafOf(const double* row, int32_t node) const;

  std::vector<std::string> feature_names_;
  std::string objective_;
  std::vector<Node> nodes_;           // every tree's internal nodes, tree after tree
  std::vector<double> leaf_values_;   // every tree's leaves, tree after tree
  std::vector<int32_t> tree_roots_;   // each tree's root: a node index, or ~leaf for one leaf
  std::vector<CatRange> cat_ranges_;  // every categorical split's bitset
  std::vector<uint32_t> cat_bits_;    // the bitsets' words
};

}  // namespace kselect
