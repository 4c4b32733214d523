// Test inputs for tree evaluators: what a LightGBM text model's splits look at (read from the text
// itself, independently of the parsers under test), and random rows that reach every kind of
// decision of such a model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace kselect::testing_util {

// Every shipped model file (models/*/model_*.lgbm.gz), sorted.
inline std::vector<std::filesystem::path> ShippedModelFiles() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path models = std::filesystem::path(KSELECT_SOURCE_DIR) / "models";
  for (const auto& dir : std::filesystem::directory_iterator(models)) {
    for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = file.path().filename().string();
      if (name.starts_with("model_") && name.ends_with(".lgbm.gz")) files.push_back(file.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// What the model's splits look at, per feature: numerical thresholds and the largest category
// code its bitsets name (read from the text, independently of the parser under test).
struct FeatureUse {
  std::set<double> thresholds;
  bool categorical = false;
  int max_code = 0;
};

inline std::vector<FeatureUse> ReadFeatureUse(const std::string& text, int num_features) {
  std::vector<FeatureUse> use(static_cast<size_t>(num_features));
  std::istringstream in(text);
  std::string line;
  std::vector<int> features, types;
  std::vector<double> thresholds;
  std::vector<uint32_t> words;
  // strtod reads "nan" and "inf" too, as LightGBM's own reader does.
  auto numbers = [](const std::string& values, auto* out) {
    out->clear();
    std::istringstream s(values);
    std::string token;
    using T = typename std::remove_pointer_t<decltype(out)>::value_type;
    while (s >> token) out->push_back(static_cast<T>(std::strtod(token.c_str(), nullptr)));
  };
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), values = line.substr(eq + 1);
    if (key == "Tree") features.clear();
    if (key == "split_feature") numbers(values, &features);
    if (key == "decision_type") numbers(values, &types);
    if (key == "threshold") numbers(values, &thresholds);
    if (key == "cat_threshold") {
      numbers(values, &words);
      for (size_t i = 0; i < features.size(); ++i) {
        if (types[i] & 1) {
          use[size_t(features[i])].categorical = true;
          use[size_t(features[i])].max_code =
              std::max(use[size_t(features[i])].max_code, int(32 * words.size()));
        }
      }
    }
    if (key == "leaf_value") {
      for (size_t i = 0; i < features.size() && i < types.size(); ++i) {
        if (!(types[i] & 1) && i < thresholds.size() && !std::isnan(thresholds[i])) {
          use[size_t(features[i])].thresholds.insert(thresholds[i]);
        }
      }
    }
  }
  return use;
}

// Random rows that reach every kind of decision: values exactly at, just under and just over the
// thresholds, NaN, +-0, tiny values LightGBM reads as zero, values past every threshold, and
// category codes in and out of the bitsets (negative, fractional, huge).
inline std::vector<double> RandomRows(const std::vector<FeatureUse>& use, size_t rows,
                                      uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> out;
  out.reserve(rows * use.size());
  for (size_t r = 0; r < rows; ++r) {
    for (const FeatureUse& f : use) {
      const double p = unit(rng);
      double v;
      if (p < 0.05) {
        v = std::numeric_limits<double>::quiet_NaN();
      } else if (p < 0.08) {
        v = 0.0;
      } else if (p < 0.10) {
        const double specials[] = {-0.0,    1e-36, -1e-36, 1e-35f,
                                   -1e-300, 1e300, -1e300, std::numeric_limits<double>::infinity()};
        v = specials[rng() % std::size(specials)];
      } else if (f.categorical) {
        const double odd[] = {-1, -0.5, -7, 0.5, 2.9, 1e10, 3e9, 2147483647.0};
        v = p < 0.2 ? odd[rng() % std::size(odd)] : double(rng() % uint64_t(f.max_code + 40));
      } else if (!f.thresholds.empty() && p < 0.85) {
        auto it = f.thresholds.begin();
        std::advance(it, long(rng() % f.thresholds.size()));
        const int nudge = int(rng() % 3);
        v = nudge == 0 ? *it : std::nextafter(*it, nudge == 1 ? -INFINITY : INFINITY);
      } else {
        const double lo = f.thresholds.empty() ? -10 : *f.thresholds.begin();
        const double hi = f.thresholds.empty() ? 10 : *f.thresholds.rbegin();
        v = lo - 1 + (hi - lo + 2) * unit(rng);
        if (unit(rng) < 0.1) v = -std::fabs(v) - 1;
      }
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace kselect::testing_util
