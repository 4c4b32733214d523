#include "kselect/measurement.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace kselect {
namespace {

// Why a figure cannot be trusted, or "" when it is a finite positive number up to `max`.
std::string FigureProblem(std::string_view name, double value, double max) {
  if (std::isnan(value)) return std::string(name) + " is NaN";
  if (std::isinf(value)) return std::string(name) + " is infinite";
  if (value <= 0) return std::string(name) + " is not positive (" + std::to_string(value) + ")";
  if (value > max) {
    char text[96];
    std::snprintf(text, sizeof(text), " is %g, above %g: no real GPU run reaches it", value, max);
    return std::string(name) + text;
  }
  return "";
}

}  // namespace

std::string ImplausibleFigures(double latency_ms, double tflops, double bandwidth_gb_s, double cv) {
  std::string reason = FigureProblem("latency_ms", latency_ms, kMaxPlausibleLatencyMs);
  if (reason.empty()) reason = FigureProblem("tflops", tflops, kMaxPlausibleTflops);
  // Bandwidth may legitimately be unreported (0); it only condemns a row when it is garbage.
  if (reason.empty() && bandwidth_gb_s != 0) {
    reason = FigureProblem("bandwidth_gb_s", bandwidth_gb_s, kMaxPlausibleBandwidthGbS);
  }
  if (reason.empty() && (std::isnan(cv) || std::isinf(cv) || cv < 0)) {
    reason = "cv is not a finite non-negative number";
  }
  return reason;
}

void Measurement::Validate() {
  if (!is_valid && !invalid_reason.empty()) return;  // keep the recorded verdict
  std::string reason = ImplausibleFigures(latency_ms, tflops, bandwidth_gb_s, cv);
  if (!reason.empty()) {
    is_valid = false;
    invalid_reason = reason;
    return;
  }
  is_valid = true;
  invalid_reason.clear();
}

void DeriveRates(Measurement& m) {
  if (!(m.latency_ms > 0) || std::isinf(m.latency_ms)) return;
  const double seconds = m.latency_ms * 1e-3;
  if (m.tflops == 0) m.tflops = ProblemFlops(m.problem) / seconds / 1e12;
  if (m.bandwidth_gb_s == 0) m.bandwidth_gb_s = ProblemMinBytes(m.problem) / seconds / 1e9;
}

}  // namespace kselect
