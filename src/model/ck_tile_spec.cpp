// CK Tile's feature_spec.json (foreign_model.h): read leniently (CK adds keys from version to
// version) but strictly typed where inference depends on a key. Kept apart from the loader so the
// fuzz build can compile it with no more than the core.
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "kselect/foreign_model.h"

namespace kselect {
namespace {

using nlohmann::json;

// CK's target names (train.py TARGET_COLUMNS) are kselect's.
bool CkTarget(std::string_view name, Target* target) {
  static constexpr std::pair<std::string_view, Target> kTargets[] = {
      {"tflops", Target::kTflops},
      {"latency", Target::kLatency},
      {"bandwidth", Target::kBandwidth}};
  for (const auto& [n, t] : kTargets) {
    if (n == name) {
      *target = t;
      return true;
    }
  }
  return false;
}

// A list of strings under `key`, or an error naming it; absent gives an empty list.
Status StringList(const json& spec, const char* key, const std::string& source,
                  std::vector<std::string>* out) {
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return ParseError(source + ": " + key + " is not a list of strings");
  for (const json& v : *it) {
    if (!v.is_string()) return ParseError(source + ": " + key + " is not a list of strings");
    out->push_back(v.get<std::string>());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<CkTileSpec> CkTileSpecFromJson(std::string_view text, std::string_view source_view) {
  const std::string source(source_view);
  KSELECT_RETURN_IF_ERROR(text::CheckJsonDepth(text, source));
  const json spec = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (spec.is_discarded()) return ParseError(source + ": not valid JSON");
  if (!spec.is_object()) return ParseError(source + ": not a JSON object");
  CkTileSpec out;
  if (!spec.contains("feature_names")) {
    return SchemaMismatchError(source +
                               ": no feature_names (is this CK Tile's feature_spec.json?)");
  }
  KSELECT_RETURN_IF_ERROR(StringList(spec, "feature_names", source, &out.feature_names));
  if (out.feature_names.empty()) return SchemaMismatchError(source + ": feature_names is empty");
  const std::set<std::string> names(out.feature_names.begin(), out.feature_names.end());
  if (names.size() != out.feature_names.size()) {
    for (size_t i = 0; i < out.feature_names.size(); ++i) {
      if (std::count(out.feature_names.begin(), out.feature_names.end(), out.feature_names[i]) >
          1) {
        return SchemaMismatchError(source + ": feature_names lists '" + out.feature_names[i] +
                                   "' twice");
      }
    }
  }
  KSELECT_RETURN_IF_ERROR(
      StringList(spec, "categorical_features", source, &out.categorical_features));
  for (const std::string& c : out.categorical_features) {
    if (!names.count(c)) {
      return SchemaMismatchError(source + ": categorical feature '" + c +
                                 "' is not in feature_names");
    }
  }
  std::vector<std::string> log_targets;
  KSELECT_RETURN_IF_ERROR(StringList(spec, "log_targets", source, &log_targets));
  for (const std::string& name : log_targets) {
    Target target;
    if (!CkTarget(name, &target)) {
      return SchemaMismatchError(source + ": log_targets names '" + name +
                                 "' (known targets: tflops, latency, bandwidth)");
    }
    out.log_targets.insert(target);
  }
  // Written by some versions beside log_targets; both must say the same.
  if (const auto it = spec.find("tflops_log_transform"); it != spec.end() && !it->is_null()) {
    if (!it->is_boolean()) return ParseError(source + ": tflops_log_transform is not a boolean");
    const bool log_tflops = it->get<bool>();
    if (spec.contains("log_targets") &&
        log_tflops != (out.log_targets.count(Target::kTflops) > 0)) {
      return SchemaMismatchError(source + ": tflops_log_transform is " +
                                 (log_tflops ? "true" : "false") + " but log_targets " +
                                 (log_tflops ? "lacks" : "lists") + " tflops");
    }
    if (log_tflops) out.log_targets.insert(Target::kTflops);
  }
  for (const auto& [key, field] : {std::pair<const char*, std::string*>{"op_type", &out.op_type},
                                   {"dtype", &out.dtype},
                                   {"arch", &out.arch}}) {
    const auto it = spec.find(key);
    if (it == spec.end() || it->is_null()) continue;
    if (!it->is_string()) return ParseError(source + ": " + key + " is not a string");
    *field = it->get<std::string>();
  }
  return out;
}

}  // namespace kselect
