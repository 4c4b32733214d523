// LightGBM's text model format and decision rules, as LightGBM 4.x writes and applies them
// (include/LightGBM/tree.h: NumericalDecision, CategoricalDecision, GetLeaf; src/io/tree.cpp:
// Tree::Tree(const char*); src/boosting/gbdt_model_text.cpp: LoadModelFromString;
// src/c_api.cpp: the dense-matrix row reader).
#include "model/tree_ensemble.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <system_error>

namespace kselect {
namespace {

// decision_type bits (tree.h).
constexpr int kCategoricalMask = 1;
constexpr int kDefaultLeftMask = 2;
enum MissingType { kMissingNone = 0, kMissingZero = 1, kMissingNan = 2 };

// Rows scored together, tree after tree: a block's rows (64 x features doubles) stay in cache while
// every tree walks them, and a tree's nodes stay in cache for the whole block.
constexpr size_t kRowBlock = 64;

std::vector<std::string_view> SplitSpaces(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    const size_t start = i;
    while (i < s.size() && s[i] != ' ') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

template <typename T>
bool ParseNumber(std::string_view token, T* value) {
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, *value);
  return ec == std::errc() && ptr == end;
}

}  // namespace

// Reads the text line by line; every error names the source and, inside trees, the tree.
class TreeEnsemble::Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  StatusOr<TreeEnsemble> Parse() {
    TreeEnsemble model;
    KSELECT_RETURN_IF_ERROR(ParseHeader(&model));
    for (int tree = 0;; ++tree) {
      std::string_view line;
      if (!NextNonEmptyLine(&line)) {
        return Error("truncated: no \"end of trees\" line after " + std::to_string(tree) +
                     " trees");
      }
      if (line == "end of trees") break;
      if (line != "Tree=" + std::to_string(tree)) {
        return Error("expected \"Tree=" + std::to_string(tree) + "\" or \"end of trees\", got \"" +
                     Clip(line) + "\"");
      }
      KSELECT_RETURN_IF_ERROR(ParseTree(tree, &model));
    }
    if (model.tree_roots_.empty()) return Error("the model has no trees");
    return model;
  }

 private:
  using KeyValues = std::map<std::string_view, std::string_view, std::less<>>;

  static std::string Clip(std::string_view s) {
    return std::string(s.substr(0, 60)) + (s.size() > 60 ? "..." : "");
  }
  Status Error(const std::string& what) const {
    return ParseError(std::string(source_) + ": " + what);
  }
  Status TreeError(int tree, const std::string& what) const {
    return Error("Tree=" + std::to_string(tree) + ": " + what);
  }

  bool NextLine(std::string_view* line) {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(pos_, end - pos_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos_ = end + 1;
    return true;
  }
  bool NextNonEmptyLine(std::string_view* line) {
    while (NextLine(line)) {
      if (!line->empty()) return true;
    }
    return false;
  }

  // key=value lines up to (not including) the first "Tree=" line, or up to an empty line.
  Status ReadKeyValues(bool stop_at_tree, KeyValues* out, int tree) {
    while (true) {
      const size_t line_start = pos_;
      std::string_view line;
      if (!NextLine(&line)) return Status::Ok();
      if (line.empty()) {
        if (stop_at_tree) continue;
        return Status::Ok();
      }
      if (stop_at_tree && (line.starts_with("Tree=") || line == "end of trees")) {
        pos_ = line_start;
        return Status::Ok();
      }
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos) {
        // The header has bare flags ("tree", "average_output"); trees have none.
        if (stop_at_tree) {
          out->emplace(line, std::string_view());
          continue;
        }
        return TreeError(tree, "expected key=value, got \"" + Clip(line) + "\"");
      }
      const std::string_view key = line.substr(0, eq);
      if (!out->emplace(key, line.substr(eq + 1)).second) {
        const std::string what = "\"" + Clip(key) + "\" appears twice";
        return stop_at_tree ? Error("header: " + what) : TreeError(tree, what);
      }
    }
  }

  Status ParseHeader(TreeEnsemble* model) {
    KeyValues header;
    KSELECT_RETURN_IF_ERROR(ReadKeyValues(/*stop_at_tree=*/true, &header, -1));
    const auto int_field = [&](std::string_view key, int* value) -> Status {
      const auto it = header.find(key);
      if (it == header.end()) return Error("header has no " + std::string(key) + " line");
      if (!ParseNumber(it->second, value)) {
        return Error("header " + std::string(key) + " is not an integer: \"" + Clip(it->second) +
                     "\"");
      }
      return Status::Ok();
    };
    int num_class = 0, trees_per_iteration = 0, max_feature_idx = 0;
    KSELECT_RETURN_IF_ERROR(int_field("num_class", &num_class));
    KSELECT_RETURN_IF_ERROR(int_field("num_tree_per_iteration", &trees_per_iteration));
    KSELECT_RETURN_IF_ERROR(int_field("max_feature_idx", &max_feature_idx));
    if (num_class != 1 || trees_per_iteration != 1) {
      return InvalidArgumentError(
          std::string(source_) + ": num_class=" + std::to_string(num_class) +
          ", num_tree_per_iteration=" + std::to_string(trees_per_iteration) +
          ": only single-output models (1 and 1) are supported");
    }
    if (max_feature_idx < 0) return Error("header max_feature_idx is negative");
    if (header.count("average_output")) {
      return InvalidArgumentError(std::string(source_) +
                                  ": averaged (random forest) output is not supported");
    }
    const auto names = header.find("feature_names");
    if (names == header.end()) return Error("header has no feature_names line");
    const std::vector<std::string_view> name_tokens = SplitSpaces(names->second);
    if (name_tokens.size() != static_cast<size_t>(max_feature_idx) + 1) {
      return Error("header feature_names has " + std::to_string(name_tokens.size()) +
                   " names, max_feature_idx=" + std::to_string(max_feature_idx) + " needs " +
                   std::to_string(static_cast<int64_t>(max_feature_idx) + 1));
    }
    for (std::string_view n : name_tokens) model->feature_names_.emplace_back(n);
    if (const auto infos = header.find("feature_infos"); infos != header.end()) {
      const size_t count = SplitSpaces(infos->second).size();
      if (count != name_tokens.size()) {
        return Error("header feature_infos has " + std::to_string(count) + " entries for " +
                     std::to_string(name_tokens.size()) + " features");
      }
    }
    if (const auto objective = header.find("objective"); objective != header.end()) {
      model->objective_ = std::string(objective->second);
      KSELECT_RETURN_IF_ERROR(CheckIdentityObjective(model->objective_));
    }
    return Status::Ok();
  }

  // LightGBM's prediction applies the objective's output transform (ConvertOutput); this
  // evaluator reproduces only the objectives where that is the identity.
  Status CheckIdentityObjective(std::string_view objective) const {
    const std::vector<std::string_view> tokens = SplitSpaces(objective);
    static constexpr std::string_view kIdentity[] = {"regression", "regression_l1", "huber",
                                                     "fair",       "quantile",      "mape",
                                                     "lambdarank", "rank_xendcg"};
    const bool identity = !tokens.empty() && std::find(std::begin(kIdentity), std::end(kIdentity),
                                                       tokens[0]) != std::end(kIdentity);
    // "regression sqrt": trained on sqrt(label), predictions squared back.
    const bool sqrt = std::find(tokens.begin(), tokens.end(), "sqrt") != tokens.end();
    if (!identity || sqrt) {
      return InvalidArgumentError(std::string(source_) + ": objective \"" + Clip(objective) +
                                  "\" transforms its output; only identity-output objectives "
                                  "(regression, lambdarank, ...) are supported");
    }
    return Status::Ok();
  }

  template <typename T>
  Status Array(int tree, const KeyValues& kv, std::string_view key, size_t count,
               std::vector<T>* out) const {
    const auto it = kv.find(key);
    if (it == kv.end()) return TreeError(tree, "no " + std::string(key) + " line");
    const std::vector<std::string_view> tokens = SplitSpaces(it->second);
    if (tokens.size() != count) {
      return TreeError(tree, std::string(key) + " has " + std::to_string(tokens.size()) +
                                 " values, expected " + std::to_string(count));
    }
    out->resize(count);
    for (size_t i = 0; i < count; ++i) {
      if (!ParseNumber(tokens[i], &(*out)[i])) {
        return TreeError(tree, std::string(key) + "[" + std::to_string(i) +
                                   "] is not a number: \"" + Clip(tokens[i]) + "\"");
      }
    }
    return Status::Ok();
  }

  Status Scalar(int tree, const KeyValues& kv, std::string_view key, int* value) const {
    const auto it = kv.find(key);
    if (it == kv.end()) return TreeError(tree, "no " + std::string(key) + " line");
    if (!ParseNumber(it->second, value)) {
      return TreeError(tree, std::string(key) + " is not an integer: \"" + Clip(it->second) + "\"");
    }
    return Status::Ok();
  }

  Status ParseTree(int tree, TreeEnsemble* model) {
    KeyValues kv;
    KSELECT_RETURN_IF_ERROR(ReadKeyValues(/*stop_at_tree=*/false, &kv, tree));
    int num_leaves = 0, num_cat = 0;
    KSELECT_RETURN_IF_ERROR(Scalar(tree, kv, "num_leaves", &num_leaves));
    KSELECT_RETURN_IF_ERROR(Scalar(tree, kv, "num_cat", &num_cat));
    if (num_leaves < 1) return TreeError(tree, "num_leaves must be at least 1");
    if (num_cat < 0) return TreeError(tree, "num_cat is negative");
    if (const auto linear = kv.find("is_linear"); linear != kv.end() && linear->second != "0") {
      if (linear->second != "1") return TreeError(tree, "is_linear is neither 0 nor 1");
      return InvalidArgumentError(std::string(source_) + ": Tree=" + std::to_string(tree) +
                                  ": linear trees are not supported");
    }
    if (const auto shrinkage = kv.find("shrinkage"); shrinkage != kv.end()) {
      double value = 0;  // leaf values already include it; only checked for well-formedness
      if (!ParseNumber(shrinkage->second, &value)) {
        return TreeError(tree, "shrinkage is not a number: \"" + Clip(shrinkage->second) + "\"");
      }
    }
    std::vector<double> leaf_values;
    KSELECT_RETURN_IF_ERROR(
        Array(tree, kv, "leaf_value", static_cast<size_t>(num_leaves), &leaf_values));
    const int32_t leaf_base = static_cast<int32_t>(model->leaf_values_.size());
    const int32_t node_base = static_cast<int32_t>(model->nodes_.size());
    if (num_leaves == 1) {
      if (num_cat != 0) return TreeError(tree, "a single-leaf tree has num_cat != 0");
      model->leaf_values_.push_back(leaf_values[0]);
      model->tree_roots_.push_back(~leaf_base);
      return Status::Ok();
    }
    const size_t num_nodes = static_cast<size_t>(num_leaves) - 1;
    std::vector<int> split_feature, decision_type, left, right;
    std::vector<double> threshold;
    KSELECT_RETURN_IF_ERROR(Array(tree, kv, "split_feature", num_nodes, &split_feature));
    KSELECT_RETURN_IF_ERROR(Array(tree, kv, "threshold", num_nodes, &threshold));
    KSELECT_RETURN_IF_ERROR(Array(tree, kv, "decision_type", num_nodes, &decision_type));
    KSELECT_RETURN_IF_ERROR(Array(tree, kv, "left_child", num_nodes, &left));
    KSELECT_RETURN_IF_ERROR(Array(tree, kv, "right_child", num_nodes, &right));
    std::vector<int64_t> cat_boundaries;
    std::vector<uint32_t> cat_threshold;
    if (num_cat > 0) {
      KSELECT_RETURN_IF_ERROR(
          Array(tree, kv, "cat_boundaries", static_cast<size_t>(num_cat) + 1, &cat_boundaries));
      const auto it = kv.find("cat_threshold");
      if (it == kv.end()) return TreeError(tree, "no cat_threshold line");
      const size_t words = SplitSpaces(it->second).size();
      if (cat_boundaries.front() != 0 || cat_boundaries.back() != static_cast<int64_t>(words) ||
          !std::is_sorted(cat_boundaries.begin(), cat_boundaries.end())) {
        return TreeError(tree, "cat_boundaries must rise from 0 to cat_threshold's " +
                                   std::to_string(words) + " words");
      }
      KSELECT_RETURN_IF_ERROR(Array(tree, kv, "cat_threshold", words, &cat_threshold));
    }
    KSELECT_RETURN_IF_ERROR(CheckTreeShape(tree, num_leaves, left, right));

    const int32_t cat_base = static_cast<int32_t>(model->cat_ranges_.size());
    const uint32_t word_base = static_cast<uint32_t>(model->cat_bits_.size());
    for (int c = 0; c < num_cat; ++c) {
      model->cat_ranges_.push_back(
          {word_base + static_cast<uint32_t>(cat_boundaries[static_cast<size_t>(c)]),
           static_cast<uint32_t>(cat_boundaries[static_cast<size_t>(c) + 1] -
                                 cat_boundaries[static_cast<size_t>(c)])});
    }
    model->cat_bits_.insert(model->cat_bits_.end(), cat_threshold.begin(), cat_threshold.end());
    const int max_feature = model->num_features() - 1;
    for (size_t i = 0; i < num_nodes; ++i) {
      const std::string node = "node " + std::to_string(i) + ": ";
      if (split_feature[i] < 0 || split_feature[i] > max_feature) {
        return TreeError(tree, node + "split_feature " + std::to_string(split_feature[i]) +
                                   " is outside 0.." + std::to_string(max_feature));
      }
      const int type = decision_type[i];
      if (type < 0 || type > 15 || ((type >> 2) & 3) == 3) {
        return TreeError(tree, node + "decision_type " + std::to_string(type) + " is invalid");
      }
      Node n;
      n.feature = split_feature[i];
      n.threshold = threshold[i];
      n.left = left[i] >= 0 ? node_base + left[i] : ~(leaf_base + ~left[i]);
      n.right = right[i] >= 0 ? node_base + right[i] : ~(leaf_base + ~right[i]);
      if (type & kCategoricalMask) {
        // LightGBM keeps the bitset's index in the threshold (static_cast<int>(threshold)).
        const double index = threshold[i];
        if (!(index >= 0 && index < num_cat && index == std::floor(index))) {
          return TreeError(tree,
                           node + "categorical threshold " + std::to_string(index) +
                               " is not a bitset index below num_cat=" + std::to_string(num_cat));
        }
        n.meta = kCategorical |
                 (static_cast<uint32_t>(cat_base + static_cast<int32_t>(index)) << kFlagBits);
      } else {
        // Where a NaN and a zero go, per missing type (NumericalDecision): None turns NaN into 0
        // and compares; Zero sends 0 (and NaN, turned into 0) the default way; NaN sends NaN the
        // default way and compares 0.
        const bool default_left = (type & kDefaultLeftMask) != 0;
        const bool zero_compares_left = 0.0 <= threshold[i];
        bool nan_left = zero_compares_left, zero_left = zero_compares_left;
        switch ((type >> 2) & 3) {
          case kMissingZero:
            nan_left = zero_left = default_left;
            break;
          case kMissingNan:
            nan_left = default_left;
            break;
          default:
            break;
        }
        n.meta = (nan_left ? kNanLeft : 0) | (zero_left ? kZeroLeft : 0);
      }
      model->nodes_.push_back(n);
    }
    model->leaf_values_.insert(model->leaf_values_.end(), leaf_values.begin(), leaf_values.end());
    model->tree_roots_.push_back(node_base);
    return Status::Ok();
  }

  // The children must form one tree rooted at node 0: every other node and every leaf the child of
  // exactly one node, all reachable from the root (so no walk can loop or leave the arrays).
  Status CheckTreeShape(int tree, int num_leaves, const std::vector<int>& left,
                        const std::vector<int>& right) const {
    const int num_nodes = num_leaves - 1;
    std::vector<int> node_parents(static_cast<size_t>(num_nodes), 0);
    std::vector<int> leaf_parents(static_cast<size_t>(num_leaves), 0);
    for (int i = 0; i < num_nodes; ++i) {
      for (int child : {left[static_cast<size_t>(i)], right[static_cast<size_t>(i)]}) {
        if (child >= num_nodes || child < -num_leaves) {
          return TreeError(tree, "node " + std::to_string(i) + ": child " + std::to_string(child) +
                                     " is out of range (" + std::to_string(num_nodes) + " nodes, " +
                                     std::to_string(num_leaves) + " leaves)");
        }
        if (child >= 0) {
          ++node_parents[static_cast<size_t>(child)];
        } else {
          ++leaf_parents[static_cast<size_t>(~child)];
        }
      }
    }
    if (node_parents[0] != 0) return TreeError(tree, "node 0 (the root) is some node's child");
    for (int i = 1; i < num_nodes; ++i) {
      if (node_parents[static_cast<size_t>(i)] != 1) {
        return TreeError(tree, "node " + std::to_string(i) + " is the child of " +
                                   std::to_string(node_parents[static_cast<size_t>(i)]) +
                                   " nodes, not 1");
      }
    }
    for (int i = 0; i < num_leaves; ++i) {
      if (leaf_parents[static_cast<size_t>(i)] != 1) {
        return TreeError(tree, "leaf " + std::to_string(i) + " is the child of " +
                                   std::to_string(leaf_parents[static_cast<size_t>(i)]) +
                                   " nodes, not 1");
      }
    }
    // With one parent each, a walk from the root visits each node once; count what it reaches.
    std::vector<int> stack = {0};
    int reached = 0;
    while (!stack.empty()) {
      const int node = stack.back();
      stack.pop_back();
      ++reached;
      for (int child : {left[static_cast<size_t>(node)], right[static_cast<size_t>(node)]}) {
        if (child >= 0) stack.push_back(child);
      }
    }
    if (reached != num_nodes) {
      return TreeError(
          tree, std::to_string(num_nodes - reached) + " nodes are not reachable from the root");
    }
    return Status::Ok();
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

StatusOr<TreeEnsemble> TreeEnsemble::FromLightGbmText(std::string_view text,
                                                      std::string_view source) {
  return Parser(text, source).Parse();
}

std::vector<int> TreeEnsemble::CategoricalSplitFeatures() const {
  std::vector<int> features;
  for (const Node& n : nodes_) {
    if (n.meta & kCategorical) features.push_back(n.feature);
  }
  std::sort(features.begin(), features.end());
  features.erase(std::unique(features.begin(), features.end()), features.end());
  return features;
}

inline int32_t TreeEnsemble::LeafOf(const double* row, int32_t node) const {
  while (node >= 0) {
    const Node& n = nodes_[static_cast<size_t>(node)];
    const double value = row[n.feature];
    bool left;
    if (n.meta & kCategorical) {
      // CategoricalDecision: NaN and codes that cast to a negative int go right. On x86-64 the
      // cast of a value >= 2^31 gives INT_MIN (negative), and values in (-1, 0) cast to 0.
      left = false;
      if (value > -1.0 && value < 2147483648.0) {
        const uint32_t code = static_cast<uint32_t>(static_cast<int32_t>(value));
        const CatRange& range = cat_ranges_[n.meta >> kFlagBits];
        const uint32_t word = code / 32;
        left = word < range.words && ((cat_bits_[range.begin + word] >> (code % 32)) & 1u) != 0;
      }
    } else if (std::fabs(value) > kLightGbmZeroThreshold) {
      left = value <= n.threshold;
    } else if (std::isnan(value)) {
      left = (n.meta & kNanLeft) != 0;
    } else {
      left = (n.meta & kZeroLeft) != 0;
    }
    node = left ? n.left : n.right;
  }
  return ~node;
}

void TreeEnsemble::Predict(const double* rows, size_t num_rows, double* out) const {
  const size_t stride = feature_names_.size();
  double sums[kRowBlock];
  for (size_t first = 0; first < num_rows; first += kRowBlock) {
    const size_t count = std::min(kRowBlock, num_rows - first);
    const double* block = rows + first * stride;
    std::fill_n(sums, count, 0.0);
    // Tree after tree, each row's sum in LightGBM's order (0, then + tree 0, + tree 1, ...).
    // Measured (shipped models, 1,700 rows, thread CPU time): this plain walk per row beat 8 rows
    // walking side by side, both with branches (+18 %) and branch-free for the tree's depth
    // (+35 %: LightGBM's trees are deep and unbalanced, so most rows stop well before it).
    for (const int32_t root : tree_roots_) {
      for (size_t r = 0; r < count; ++r) {
        sums[r] += leaf_values_[static_cast<size_t>(LeafOf(block + r * stride, root))];
      }
    }
    std::copy_n(sums, count, out + first);
  }
}

}  // namespace kselect
