// The solution library file ("kselect.solutions"): reading, writing, the identity check and the
// merge. Runtime side: the selector reads it; the tuner writes and merges it.
#include "kselect/solutions.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "core/text.h"
#include "kselect/model.h"
#include "kselect/version.h"

namespace kselect {
namespace {

using json = nlohmann::json;

constexpr std::string_view kFormat = "kselect.solutions";
constexpr int64_t kVersion = 2;

}  // namespace

std::optional<size_t> SolutionLibrary::Find(const Problem& problem) const {
  const std::string key = ProblemToString(problem);
  for (size_t i = 0; i < solutions.size(); ++i) {
    if (ProblemToString(solutions[i].problem) == key) return i;
  }
  return std::nullopt;
}

StatusOr<SolutionLibrary> LoadSolutionLibrary(const std::string& path) {
  KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(path));
  return SolutionLibraryFromJson(text, path);
}

StatusOr<SolutionLibrary> SolutionLibraryFromJson(std::string_view text, const std::string& path) {
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
  if (version >= 2) {
    if (identity == nullptr) return ParseError(path + ": version 2 without an identity");
    json_codec::ObjectReader identity_reader(*identity, path + ".identity");
    ProvenanceFields present;
    library.identity = json_codec::ReadProvenance(identity_reader, &present);
    KSELECT_RETURN_IF_ERROR(identity_reader.Finish());
    // A library is tuned on a device: an identity without one would load unchecked anywhere.
    constexpr std::pair<ProvenanceField, const char*> kRequired[] = {
        {ProvenanceField::kDeviceName, "device_name"},
        {ProvenanceField::kArch, "arch"},
        {ProvenanceField::kSmCount, "sm_count"}};
    for (const auto& [field, key] : kRequired) {
      if (!present.Has(field)) {
        return ParseError(path + ".identity." + key + ": required field is missing");
      }
    }
    // Identities written before the record held the tool: the writer's is the best we know.
    if (!present.Has(ProvenanceField::kToolVersion)) library.identity.tool_version = tool_version;
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
    // A problem no kernel runs (a negative size) is no tuning result; the config's own
    // impossible values (a negative algo id) the config reader refuses.
    if (Status valid = ValidateProblem(s.problem); !valid.ok()) {
      return ParseError(where + ".problem: " + valid.message());
    }
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
  json identity = json::object();
  json_codec::WriteProvenance(library.identity, identity);
  const json root = {{"format", kFormat},
                     {"version", kVersion},
                     {"tool_version", ToolVersion()},
                     {"identity", std::move(identity)},
                     {"solutions", std::move(entries)}};
  const std::string text = root.dump(1) + "\n";
  if (path.ends_with(".gz")) return WriteGzipFile(path, text);
  return text::WriteFileAtomically(path, text);
}

Status CheckSolutionIdentity(const SolutionLibrary& library, const HardwareProfile& here,
                             const std::string& source) {
  // The device where `here` has one (ProvenanceOf leaves its fields unknown otherwise), and the
  // version of each library whose configs the solutions name.
  ProvenanceFields fields = ProvenanceField::kDeviceName | ProvenanceField::kSmCount;
  for (const Solution& s : library.solutions) {
    if (ProviderOf(s.config) == Provider::kCublasLt) fields |= ProvenanceField::kCublasLtVersion;
    if (ProviderOf(s.config) == Provider::kTile) fields |= ProvenanceField::kNvrtcVersion;
  }
  return CheckProvenance(library.identity, ProvenanceOf(here),
                         {.fields = fields,
                          .artifact = source,
                          .remedy = "its measurements do not hold here; tune again here"});
}

namespace {

// A version 1 library records no device: where its solutions were measured is unknown.
bool HasIdentity(const SolutionLibrary& library) {
  return !library.identity.device_name.empty() || library.identity.sm_count != 0 ||
         !library.identity.arch.empty();
}

}  // namespace

StatusOr<MergeSummary> MergeSolutionLibraries(SolutionLibrary& base,
                                              const SolutionLibrary& incoming, bool force) {
  // Merged, version 1 solutions would be written under the other library's device: never
  // measured there, they would load as if they had been (issue 44, defect 12).
  if (HasIdentity(base) != HasIdentity(incoming)) {
    const bool base_has = HasIdentity(base);
    const SolutionLibrary& with = base_has ? base : incoming;
    return SchemaMismatchError(
        std::string(base_has ? "the incoming library" : "the base library") +
        " records no device (a version 1 file), " + (base_has ? "the base" : "the incoming") +
        " library was tuned on " + with.identity.device_name + " (" + with.identity.arch + ", " +
        std::to_string(with.identity.sm_count) +
        " SMs): its solutions were never checked there; tune them again on that device and "
        "merge the result");
  }
  // Speedups compare only where device and libraries are the same; which kselect or model tuned
  // them does not matter.
  KSELECT_RETURN_IF_ERROR(CheckProvenance(
      incoming.identity, base.identity,
      {.fields = ProvenanceFields::DeviceAndLibraries(),
       .artifact = "the incoming library",
       .remedy = "libraries tuned on different devices or versions are not comparable; merge "
                 "libraries from one device and library version",
       .here = "the base library"}));
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
