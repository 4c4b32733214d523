// The solution library file ("kselect.solutions"): reading, writing, the identity check and the
// merge. Runtime side: the selector reads it; the tuner writes and merges it.
#include "kselect/solutions.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/model.h"
#include "kselect/version.h"

namespace kselect {
namespace {

using json = nlohmann::json;

constexpr std::string_view kFormat = "kselect.solutions";
constexpr int64_t kVersion = 2;

json IdentityToJson(const SolutionIdentity& id) {
  return {{"device_name", id.device_name},
          {"device_kind", id.device_kind},
          {"arch", id.arch},
          {"sm_count", id.sm_count},
          {"driver_version", id.driver_version},
          {"runtime_version", id.runtime_version},
          {"cublaslt_version", id.cublaslt_version},
          {"nvrtc_version", id.nvrtc_version}};
}

StatusOr<SolutionIdentity> IdentityFromJson(const json& j, const std::string& where) {
  json_codec::ObjectReader reader(j, where);
  SolutionIdentity id;
  id.device_name = reader.String("device_name");
  id.device_kind = reader.StringOr("device_kind", "");
  id.arch = reader.String("arch");
  id.sm_count = static_cast<int32_t>(reader.Int("sm_count"));
  id.driver_version = static_cast<int32_t>(reader.IntOr("driver_version", 0));
  id.runtime_version = static_cast<int32_t>(reader.IntOr("runtime_version", 0));
  id.cublaslt_version = static_cast<int32_t>(reader.IntOr("cublaslt_version", 0));
  id.nvrtc_version = static_cast<int32_t>(reader.IntOr("nvrtc_version", 0));
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  return id;
}

}  // namespace

SolutionIdentity SolutionIdentityOf(const HardwareProfile& profile) {
  SolutionIdentity id;
  id.device_name = profile.device_name;
  id.device_kind = profile.device_kind;
  id.arch = profile.arch;
  id.sm_count = profile.sm_count;
  id.driver_version = profile.driver_version;
  id.runtime_version = profile.runtime_version;
  id.cublaslt_version = profile.cublaslt_version;
  id.nvrtc_version = profile.nvrtc_version;
  return id;
}

std::optional<size_t> SolutionLibrary::Find(const Problem& problem) const {
  const std::string key = ProblemToString(problem);
  for (size_t i = 0; i < solutions.size(); ++i) {
    if (ProblemToString(solutions[i].problem) == key) return i;
  }
  return std::nullopt;
}

StatusOr<SolutionLibrary> LoadSolutionLibrary(const std::string& path) {
  KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(path));
  KSELECT_RETURN_IF_ERROR(text::CheckJsonDepth(text, path));
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return ParseError(path + ": not a JSON object (corrupt solution library)");
  }
  json_codec::ObjectReader reader(root, path);
  const std::string format = reader.String("format");
  const int64_t version = reader.Int("version");
  const json* entries = reader.Child("solutions", true);
  reader.Child("source", false);  // provenance, for people
  const std::string tool_version = reader.StringOr("tool_version", "");
  const json* identity = reader.Child("identity", false);
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  if (format != kFormat || version < 1 || version > kVersion) {
    return ParseError(path + ": format " + format + " version " + std::to_string(version) +
                      ", expected " + std::string(kFormat) + " version 1 or 2");
  }
  SolutionLibrary library;
  library.tool_version = tool_version;
  if (version >= 2) {
    if (identity == nullptr) return ParseError(path + ": version 2 without an identity");
    KSELECT_ASSIGN_OR_RETURN(library.identity, IdentityFromJson(*identity, path + ".identity"));
  }
  if (!entries->is_array()) return ParseError(path + ".solutions: not an array");
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < entries->size(); ++i) {
    const std::string where = path + ".solutions[" + std::to_string(i) + "]";
    json_codec::ObjectReader entry((*entries)[i], where);
    const json* problem_json = entry.Child("problem", true);
    const json* config_json = entry.Child("config", true);
    Solution s;
    s.tflops = entry.NumberOr("tflops", 0);
    s.speedup = entry.NumberOr("speedup", 0);
    s.latency_ms = entry.NumberOr("latency_ms", 0);
    s.reference_latency_ms = entry.NumberOr("reference_latency_ms", 0);
    s.verification = entry.StringOr("verification", "");
    s.run_id = entry.StringOr("run_id", "");
    KSELECT_RETURN_IF_ERROR(entry.Finish());
    KSELECT_ASSIGN_OR_RETURN(s.problem,
                             json_codec::ProblemFromJson(*problem_json, where + ".problem"));
    KSELECT_ASSIGN_OR_RETURN(s.config,
                             json_codec::KernelConfigFromJson(*config_json, where + ".config"));
    for (const double value : {s.tflops, s.speedup, s.latency_ms, s.reference_latency_ms}) {
      if (!std::isfinite(value) || value < 0) {
        return ParseError(where + ": a figure is negative or not finite");
      }
    }
    const std::string key = ProblemToString(s.problem);
    if (const auto [it, inserted] = seen.emplace(key, i); !inserted) {
      return ParseError(where + ": a second solution for " + key + " (the first is solutions[" +
                        std::to_string(it->second) + "])");
    }
    library.solutions.push_back(std::move(s));
  }
  return library;
}

Status SaveSolutionLibrary(const SolutionLibrary& library, const std::string& path) {
  json entries = json::array();
  for (const Solution& s : library.solutions) {
    entries.push_back({{"problem", json_codec::ProblemToJson(s.problem)},
                       {"config", json_codec::KernelConfigToJson(s.config)},
                       {"latency_ms", s.latency_ms},
                       {"reference_latency_ms", s.reference_latency_ms},
                       {"speedup", s.speedup},
                       {"tflops", s.tflops},
                       {"verification", s.verification},
                       {"run_id", s.run_id}});
  }
  const json root = {{"format", kFormat},
                     {"version", kVersion},
                     {"tool_version", library.tool_version.empty() ? std::string(ToolVersion())
                                                                   : library.tool_version},
                     {"identity", IdentityToJson(library.identity)},
                     {"solutions", std::move(entries)}};
  const std::string text = root.dump(1) + "\n";
  if (path.ends_with(".gz")) return WriteGzipFile(path, text);
  return text::WriteFileAtomically(path, text);
}

Status CheckSolutionIdentity(const SolutionLibrary& library, const HardwareProfile& here,
                             const std::string& source) {
  const SolutionIdentity& id = library.identity;
  if (id.device_name.empty()) return Status::Ok();  // version 1: no provenance to check
  auto mismatch = [&](std::string_view what, const std::string& theirs, const std::string& ours) {
    return SchemaMismatchError(source + ": tuned on " + std::string(what) + " " + theirs +
                               ", this host has " + ours +
                               ": its measurements do not hold here; tune again here");
  };
  if (!here.device_name.empty()) {
    if (here.device_name != id.device_name) {
      return mismatch("device", id.device_name, here.device_name);
    }
    if (here.sm_count != id.sm_count) {
      return mismatch("an SM count of", std::to_string(id.sm_count), std::to_string(here.sm_count));
    }
  }
  bool has_cublaslt = false, has_tile = false;
  for (const Solution& s : library.solutions) {
    has_cublaslt |= ProviderOf(s.config) == Provider::kCublasLt;
    has_tile |= ProviderOf(s.config) == Provider::kTile;
  }
  if (has_cublaslt && id.cublaslt_version != here.cublaslt_version) {
    return mismatch("cuBLASLt", std::to_string(id.cublaslt_version),
                    std::to_string(here.cublaslt_version));
  }
  if (has_tile && id.nvrtc_version != here.nvrtc_version) {
    return mismatch("NVRTC", std::to_string(id.nvrtc_version), std::to_string(here.nvrtc_version));
  }
  return Status::Ok();
}

StatusOr<MergeSummary> MergeSolutionLibraries(SolutionLibrary& base,
                                              const SolutionLibrary& incoming, bool force) {
  if (!base.identity.device_name.empty() && !incoming.identity.device_name.empty() &&
      !(base.identity == incoming.identity)) {
    return SchemaMismatchError("the libraries were tuned on different devices or versions (" +
                               base.identity.device_name + " cuBLASLt " +
                               std::to_string(base.identity.cublaslt_version) + " vs " +
                               incoming.identity.device_name + " cuBLASLt " +
                               std::to_string(incoming.identity.cublaslt_version) +
                               "): their speedups are not comparable");
  }
  if (base.identity.device_name.empty()) base.identity = incoming.identity;
  MergeSummary summary;
  for (const Solution& s : incoming.solutions) {
    const std::optional<size_t> at = base.Find(s.problem);
    if (!at) {
      base.solutions.push_back(s);
      ++summary.added;
      continue;
    }
    Solution& existing = base.solutions[*at];
    if (existing.config == s.config) {
      ++summary.unchanged;
    } else if (force || s.speedup > existing.speedup) {
      existing = s;
      ++summary.replaced;
    } else {
      ++summary.kept;
    }
  }
  return summary;
}

}  // namespace kselect
