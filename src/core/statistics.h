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

// Per round, num[r] / den[r].
inline std::vector<double> Ratios(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> ratios;
  for (size_t r = 0; r < num.size() && r < den.size(); ++r) ratios.push_back(num[r] / den[r]);
  return ratios;
}

// The median over rounds of num[r] / den[r] (interleaved timings: each round's ratio is free of
// the drift between rounds); 0 when either is empty.
inline double MedianRatio(const std::vector<double>& num, const std::vector<double>& den) {
  return Median(Ratios(num, den));
}

// The q-quantile (0..1) of `values`, linear between order statistics; 0 when empty.
inline double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (at - static_cast<double>(below)) * (values[above] - values[below]);
}

}  // namespace kselect
