// Small statistics shared by the timing and merging code.
#pragma once

#include <algorithm>
#include <vector>

namespace kselect {

// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The median over rounds of num[r] / den[r] (interleaved timings: each round's ratio is free of
// the drift between rounds); 0 when either is empty.
inline double MedianRatio(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> ratios;
  for (size_t r = 0; r < num.size() && r < den.size(); ++r) ratios.push_back(num[r] / den[r]);
  return Median(std::move(ratios));
}

}  // namespace kselect
