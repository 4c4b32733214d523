// Catalogue snapshots (kselect.catalogue_snapshot): one writer and one reader for every provider.
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "kselect/catalogue.h"

namespace kselect {
namespace {

using nlohmann::json;

constexpr std::string_view kSnapshotFormat = "kselect.catalogue_snapshot";
constexpr int64_t kSnapshotFormatVersion = 1;

}  // namespace

std::string CatalogueSnapshotToJson(const CatalogueSnapshot& snapshot) {
  json head{{"format", kSnapshotFormat},
            {"format_version", kSnapshotFormatVersion},
            {"rule_set", snapshot.rule_set},
            {"provider", ProviderName(snapshot.provider)},
            {"rules_fingerprint", FingerprintText(snapshot.rules_fingerprint)},
            {"tool", snapshot.tool},
            {"count", snapshot.configs.size()}};
  if (snapshot.problem) head["problem"] = json_codec::ProblemToJson(*snapshot.problem);
  if (snapshot.provenance) {
    json_codec::WriteProvenance(*snapshot.provenance, head, KnownFields(*snapshot.provenance));
  }
  if (snapshot.max_workspace_bytes) head["max_workspace_bytes"] = *snapshot.max_workspace_bytes;
  if (snapshot.enumerated) head["enumerated"] = *snapshot.enumerated;
  // The head with sorted keys, then the configs last, one a line: a regenerated snapshot's diff
  // shows the configs that came and went.
  std::string text = head.dump(1);
  text.resize(text.rfind('}'));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  text += ",\n \"configs\": [";
  for (size_t i = 0; i < snapshot.configs.size(); ++i) {
    text +=
        (i == 0 ? "\n  " : ",\n  ") + json_codec::KernelConfigToJson(snapshot.configs[i]).dump();
  }
  text += "\n ]\n}\n";
  return text;
}

StatusOr<CatalogueSnapshot> ParseCatalogueSnapshot(std::string_view text, std::string_view source) {
  const std::string at(source);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    return ParseError(at + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) return ParseError(at + ": expected a JSON object");
  json_codec::ObjectReader r(root, at);
  const std::string format = r.String("format");
  const int64_t version = r.Int("format_version");
  if (r.ok() && format != kSnapshotFormat)
    return SchemaMismatchError(at + ": format is not " + std::string(kSnapshotFormat));
  if (r.ok() && version != kSnapshotFormatVersion) {
    return SchemaMismatchError(at + ": format_version " + std::to_string(version) +
                               " is not supported (this kselect reads 1)");
  }
  CatalogueSnapshot snapshot;
  snapshot.rule_set = r.String("rule_set");
  const std::string provider = r.String("provider");
  const std::string fingerprint = r.String("rules_fingerprint");
  snapshot.tool = r.String("tool");
  const int64_t count = r.Int("count");
  if (const json* problem = r.Child("problem", false)) {
    auto parsed = json_codec::ProblemFromJson(*problem, r.PathOf("problem"));
    if (!parsed.ok()) return parsed.status();
    snapshot.problem = *parsed;
  }
  ProvenanceFields recorded;
  const Provenance provenance = json_codec::ReadProvenance(r, &recorded);
  if (!recorded.empty()) snapshot.provenance = provenance;
  if (r.Has("max_workspace_bytes")) snapshot.max_workspace_bytes = r.Int("max_workspace_bytes");
  if (r.Has("enumerated")) snapshot.enumerated = r.Int("enumerated");
  const json* configs = r.Child("configs", true);
  KSELECT_RETURN_IF_ERROR(r.Finish());
  KSELECT_ASSIGN_OR_RETURN(snapshot.provider, ParseProvider(provider));
  try {
    snapshot.rules_fingerprint = std::stoull(fingerprint, nullptr, 16);
  } catch (const std::exception&) {
    return ParseError(at + ".rules_fingerprint: '" + fingerprint + "' is not 0x + hex digits");
  }
  if (!configs->is_array()) return ParseError(at + ".configs: expected an array");
  for (size_t i = 0; i < configs->size(); ++i) {
    KSELECT_ASSIGN_OR_RETURN(KernelConfig config,
                             json_codec::KernelConfigFromJson(
                                 (*configs)[i], at + ".configs[" + std::to_string(i) + "]"));
    if (ProviderOf(config) != snapshot.provider) {
      return ParseError(at + ".configs[" + std::to_string(i) + "]: a " +
                        std::string(ProviderName(ProviderOf(config))) + " config in a " + provider +
                        " snapshot");
    }
    snapshot.configs.push_back(std::move(config));
  }
  if (count != static_cast<int64_t>(snapshot.configs.size())) {
    return ParseError(at + ".count: " + std::to_string(count) + ", but " +
                      std::to_string(snapshot.configs.size()) + " configs are listed");
  }
  return snapshot;
}

}  // namespace kselect
