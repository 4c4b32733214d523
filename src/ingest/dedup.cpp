#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/statistics.h"
#include "kselect/ingest.h"

namespace kselect {
namespace {

double CoefficientOfVariation(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  double var = 0;
  for (double v : values) var += (v - mean) * (v - mean);
  var /= static_cast<double>(values.size() - 1);
  return mean > 0 ? std::sqrt(var) / mean : 0;
}

// Sorted distinct non-empty values joined by kMergedRunSeparator.
std::string JoinDistinct(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::string out;
  for (const std::string& v : values) {
    if (v.empty()) continue;
    if (!out.empty()) out += kMergedRunSeparator;
    out += v;
  }
  return out;
}

Measurement MergeGroup(std::vector<Measurement*>& group) {
  std::vector<const Measurement*> valid, aborted;
  int32_t merged = 0;
  for (const Measurement* m : group) {
    merged += std::max(1, m->duplicates_merged);
    if (m->is_valid) valid.push_back(m);
    if (!m->is_valid && m->aborted) aborted.push_back(m);
  }
  Measurement out = *group.front();
  out.duplicates_merged = merged;
  if (valid.empty() && aborted.empty()) return out;  // every repeat invalid: the first verdict
  if (valid.empty()) {
    // Only early-aborted repeats: their one or two timed batches, medianed; the bound is the
    // tightest any of them proved.
    std::vector<double> latency, tflops, bandwidth;
    out = *aborted.front();
    for (const Measurement* m : aborted) {
      latency.push_back(m->latency_ms);
      tflops.push_back(m->tflops);
      bandwidth.push_back(m->bandwidth_gb_s);
      out.abort_bound_ms = std::max(out.abort_bound_ms, m->abort_bound_ms);
    }
    out.duplicates_merged = merged;
    out.latency_ms = Median(latency);
    out.tflops = Median(tflops);
    out.bandwidth_gb_s = Median(bandwidth);
    return out;
  }
  std::vector<double> latency, tflops, bandwidth, reference;
  double own_cv = 0;
  int32_t samples = 0;
  for (const Measurement* m : valid) {
    if (m->reference_latency_ms > 0) reference.push_back(m->reference_latency_ms);
    latency.push_back(m->latency_ms);
    tflops.push_back(m->tflops);
    bandwidth.push_back(m->bandwidth_gb_s);
    own_cv = std::max(own_cv, m->cv);
    samples += m->samples;
  }
  out = *valid.front();
  out.duplicates_merged = merged;
  out.latency_ms = Median(latency);
  out.tflops = Median(tflops);
  out.bandwidth_gb_s = Median(bandwidth);
  out.reference_latency_ms = reference.empty() ? 0 : Median(reference);
  out.cv = std::max(own_cv, CoefficientOfVariation(latency));
  out.samples = samples;
  // The merged figures are new: a CV that overflowed to NaN must not pass as valid.
  out.Validate();
  return out;
}

}  // namespace

std::string MeasurementKey(const Measurement& m, MergeScope scope) {
  const std::string run = scope == MergeScope::kWithinRun ? m.run_id : std::string();
  return run + "|" + m.op_type + "|" + ProblemToString(m.problem) + "|" + ConfigKey(m.config);
}

std::vector<Measurement> MergeDuplicateMeasurements(std::vector<Measurement> measurements,
                                                    MergeScope scope) {
  std::unordered_map<std::string, size_t> group_of;
  std::vector<std::vector<Measurement*>> groups;
  for (Measurement& m : measurements) {
    auto [it, inserted] = group_of.try_emplace(MeasurementKey(m, scope), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&m);
  }
  std::vector<Measurement> out;
  out.reserve(groups.size());
  for (auto& group : groups) {
    if (group.size() == 1) {
      out.push_back(std::move(*group.front()));
      continue;
    }
    out.push_back(MergeGroup(group));
    if (scope == MergeScope::kAcrossRuns) {
      std::vector<std::string> runs, devices, timestamps;
      for (const Measurement* m : group) {
        runs.push_back(m->run_id);
        devices.push_back(m->device_uuid);
        timestamps.push_back(m->timestamp);
      }
      out.back().run_id = JoinDistinct(runs);
      out.back().device_uuid = JoinDistinct(devices);
      out.back().timestamp = *std::max_element(timestamps.begin(), timestamps.end());
    }
  }
  return out;
}

}  // namespace kselect
