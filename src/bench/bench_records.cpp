// The CPU side of kselect bench: shard arithmetic, JSONL records and resume state.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/bench.h"
#include "kselect/hardware.h"
#include "kselect/ingest.h"

namespace kselect {
namespace {

using nlohmann::json;

StatusOr<int> ParseNonNegative(std::string_view text, std::string_view what) {
  int value = -1;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    return InvalidArgumentError(std::string(what) + ": '" + std::string(text) +
                                "' is not a non-negative integer");
  }
  return value;
}

StatusOr<ShardSpec> MakeShard(int index, int count, std::string_view what) {
  if (count < 1 || index >= count) {
    return InvalidArgumentError(std::string(what) + ": shard " + std::to_string(index) + "/" +
                                std::to_string(count) + " needs 0 <= i < N");
  }
  return ShardSpec{index, count};
}

}  // namespace

StatusOr<std::vector<int>> ParseDeviceList(std::string_view text) {
  std::vector<int> devices;
  for (const std::string_view item : text::Split(text, ',')) {
    StatusOr<int64_t> device = text::ParseInt64(text::Trim(item));
    if (!device.ok() || *device < 0 || *device > 1024) {
      return InvalidArgumentError("--devices: '" + std::string(item) +
                                  "' is not a device index (expected a list such as 0,1)");
    }
    if (std::find(devices.begin(), devices.end(), *device) != devices.end()) {
      return InvalidArgumentError("--devices: device " + std::string(item) + " listed twice");
    }
    devices.push_back(static_cast<int>(*device));
  }
  if (devices.empty()) return InvalidArgumentError("--devices: no device given");
  return devices;
}

StatusOr<ShardSpec> ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    return InvalidArgumentError("--shard '" + std::string(text) + "': expected i/N");
  KSELECT_ASSIGN_OR_RETURN(int index, ParseNonNegative(text.substr(0, slash), "--shard index"));
  KSELECT_ASSIGN_OR_RETURN(int count, ParseNonNegative(text.substr(slash + 1), "--shard count"));
  return MakeShard(index, count, "--shard");
}

StatusOr<ShardSpec> ShardFromEnvironment() {
  for (const auto& [rank_var, size_var] :
       {std::pair{"SLURM_PROCID", "SLURM_NTASKS"},
        std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}}) {
    const char* rank = std::getenv(rank_var);
    const char* size = std::getenv(size_var);
    if (rank == nullptr || size == nullptr) continue;
    KSELECT_ASSIGN_OR_RETURN(int index, ParseNonNegative(rank, rank_var));
    KSELECT_ASSIGN_OR_RETURN(int count, ParseNonNegative(size, size_var));
    return MakeShard(index, count, std::string(rank_var) + "/" + size_var);
  }
  return ShardSpec{};
}

std::vector<size_t> ShardIndices(size_t total, const ShardSpec& shard) {
  std::vector<size_t> indices;
  for (size_t i = static_cast<size_t>(shard.index); i < total;
       i += static_cast<size_t>(shard.count)) {
    indices.push_back(i);
  }
  return indices;
}

std::string PairKey(const Problem& problem, const KernelConfig& config) {
  return ProblemToString(problem) + " | " + ConfigKey(config);
}

std::vector<size_t> ConfirmationSet(const Problem& p, const std::vector<KernelConfig>& configs,
                                    const std::map<std::string, int32_t>& peer_rank,
                                    std::vector<std::pair<double, std::string>> valid_rows, int top,
                                    const std::map<std::string, int32_t>& peer_rank_b) {
  std::unordered_map<std::string, size_t> index_of;
  for (size_t i = 0; i < configs.size(); ++i) index_of.emplace(PairKey(p, configs[i]), i);
  std::sort(valid_rows.begin(), valid_rows.end());
  std::vector<size_t> chosen;
  std::set<size_t> valid;
  for (const auto& [latency, key] : valid_rows) {
    const auto it = index_of.find(key);
    if (it == index_of.end()) continue;
    valid.insert(it->second);
    if (static_cast<int>(chosen.size()) < top &&
        std::find(chosen.begin(), chosen.end(), it->second) == chosen.end()) {
      chosen.push_back(it->second);
    }
  }
  // The heuristics' picks come first in the timing order, so this search ends early.
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string config_key = ConfigKey(configs[i]);
    const auto rank = peer_rank.find(config_key);
    const auto rank_b = peer_rank_b.find(config_key);
    if (rank == peer_rank.end() && rank_b == peer_rank_b.end()) break;
    const bool top_pick = (rank != peer_rank.end() && rank->second == 1) ||
                          (rank_b != peer_rank_b.end() && rank_b->second == 1);
    if (top_pick && valid.contains(i) &&
        std::find(chosen.begin(), chosen.end(), i) == chosen.end()) {
      chosen.push_back(i);
    }
  }
  return chosen;
}

TimingOrder PlanTimingOrder(const std::vector<KernelConfig>& peers,
                            const std::vector<KernelConfig>& peers_b,
                            const std::vector<KernelConfig>& catalogue,
                            int64_t max_catalogue_configs) {
  TimingOrder order;
  std::set<std::string> listed;
  auto rank_list = [&](const std::vector<KernelConfig>& picks,
                       std::map<std::string, int32_t>& ranks) {
    int32_t rank = 0;
    for (const KernelConfig& config : picks) {
      std::string key = ConfigKey(config);
      if (ranks.contains(key)) continue;  // a heuristic listing a config twice ranks it once
      ranks[key] = ++rank;
      if (listed.insert(std::move(key)).second) order.configs.push_back(config);
    }
  };
  rank_list(peers, order.peer_rank);
  rank_list(peers_b, order.peer_rank_b);
  int64_t taken = 0;
  for (const KernelConfig& config : catalogue) {
    if (max_catalogue_configs > 0 && taken >= max_catalogue_configs) break;
    ++taken;
    if (listed.insert(ConfigKey(config)).second) order.configs.push_back(config);
  }
  return order;
}

std::string RunRecordLine(const RunInfo& run) {
  json j = json::object();
  j["type"] = "run";
  j["format"] = "kselect.bench.jsonl";
  j["format_version"] = 1;
  j["run_id"] = run.run_id;
  j["tool"] = run.tool;
  j["started_at"] = run.started_at;
  j["hardware"] = json::parse(HardwareProfileToJson(run.hardware, -1));
  j["method"] = json_codec::MethodToJson(run.method);
  return j.dump() + "\n";
}

std::string MeasurementLine(const Measurement& m) {
  json j = json::object();
  j["type"] = "measurement";
  j["run_id"] = m.run_id;
  j["op_type"] = m.op_type;
  j["problem"] = json_codec::ProblemToJson(m.problem);
  j["config"] = json_codec::KernelConfigToJson(m.config);
  j["kernel_name"] = m.kernel_name;
  j["latency_ms"] = m.latency_ms;
  j["tflops"] = m.tflops;
  j["bandwidth_gb_s"] = m.bandwidth_gb_s;
  j["cv"] = m.cv;
  j["samples"] = m.samples;
  j["is_valid"] = m.is_valid;
  j["invalid_reason"] = m.invalid_reason;
  j["aborted"] = m.aborted;
  j["abort_bound_ms"] = m.abort_bound_ms;
  j["peer_rank"] = m.peer_rank ? json(*m.peer_rank) : json(nullptr);
  // Only providers with a second heuristic write it: files of the others stay as they were.
  if (m.peer_rank_b) j["peer_rank_b"] = *m.peer_rank_b;
  j["method"] = json_codec::MethodToJson(m.method);
  j["timestamp"] = m.timestamp;
  if (!m.device_uuid.empty()) j["device_uuid"] = m.device_uuid;
  if (m.reference_latency_ms > 0) j["reference_latency_ms"] = m.reference_latency_ms;
  if (m.is_drift_reference) j["is_drift_reference"] = true;
  return j.dump() + "\n";
}

std::string ProblemDoneLine(const ProblemDone& done) {
  json j = json::object();
  j["type"] = "problem_done";
  j["run_id"] = done.run_id;
  j["problem"] = json_codec::ProblemToJson(done.problem);
  j["configs"] = done.configs;
  j["rows"] = done.rows;
  j["skipped"] = done.skipped;
  j["enumerated"] = done.enumerated;
  j["confirmed"] = done.confirmed;
  j["confirm_rounds"] = done.confirm_rounds;
  j["plan_seconds"] = done.plan_seconds;
  j["seconds"] = done.seconds;
  return j.dump() + "\n";
}

StatusOr<ResumeState> LoadResumeState(const std::string& path, bool repair) {
  ResumeState state;
  std::ifstream in(path, std::ios::binary);
  if (!in) return state;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  in.close();
  const size_t last_newline = text.rfind('\n');
  const size_t complete = last_newline == std::string::npos ? 0 : last_newline + 1;
  state.torn_bytes = static_cast<int64_t>(text.size() - complete);
  if (state.torn_bytes > 0) {
    text.resize(complete);
    if (repair && ::truncate(path.c_str(), static_cast<off_t>(complete)) != 0) {
      return IoError(path + ": cannot truncate the torn last line");
    }
  }
  if (text.empty()) return state;
  // The ingestion parser is the reference reader: whatever it accepts, resume accepts.
  KSELECT_ASSIGN_OR_RETURN(IngestResult parsed, ParseKselectJsonl(text, path, IngestOptions{}));
  if (!parsed.runs.empty()) {
    state.has_run_record = true;
    state.run = parsed.runs.front();
  }
  for (const auto& done : parsed.completed_problems) state.completed.insert(done.problem);
  for (const Measurement& m : parsed.measurements) {
    state.done.insert(PairKey(m.problem, m.config));
    ++state.measurements;
    if (m.is_valid && !m.aborted) {
      const std::string key = ProblemToString(m.problem);
      auto it = state.best_ms.find(key);
      if (it == state.best_ms.end() || m.latency_ms < it->second) state.best_ms[key] = m.latency_ms;
      if (!state.completed.contains(key))
        state.unfinished_valid[key].emplace_back(m.latency_ms, PairKey(m.problem, m.config));
    }
  }
  return state;
}

}  // namespace kselect
