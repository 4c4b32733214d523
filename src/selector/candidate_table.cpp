// The candidate table's file format (candidates.h).
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "kselect/candidates.h"
#include "kselect/model.h"

namespace kselect {

using json = nlohmann::json;

std::string CandidateGroupKey(const Problem& problem) {
  if (const auto* gemm = std::get_if<GemmProblem>(&problem)) {
    return "gemm a=" + std::string(DataTypeName(gemm->dtype_a)) +
           " b=" + std::string(DataTypeName(gemm->dtype_b)) +
           " c=" + std::string(DataTypeName(gemm->dtype_c)) + " layout=" + gemm->layout.ToString();
  }
  const auto& conv = std::get<ConvProblem>(problem);
  return "conv " + std::string(ConvDirectionName(conv.direction)) + " " +
         std::string(ConvLayoutName(conv.layout)) + " " + std::string(DataTypeName(conv.dtype)) +
         (conv.Is3d() ? " 3d" : " 2d");
}

std::span<const KernelConfig> CandidateTable::For(const Problem& problem) const {
  const auto it = groups.find(CandidateGroupKey(problem));
  if (it == groups.end()) return {};
  return it->second;
}

size_t CandidateTable::NumConfigs() const {
  size_t count = 0;
  for (const auto& [key, configs] : groups) count += configs.size();
  return count;
}

std::string CandidateTableToJson(const CandidateTable& table) {
  // Each distinct config once; groups refer to them by index.
  std::map<std::string, size_t> index_of;
  json configs = json::array();
  json groups = json::array();
  for (const auto& [key, members] : table.groups) {
    json indices = json::array();
    for (const KernelConfig& config : members) {
      const auto [it, inserted] = index_of.emplace(ConfigKey(config), configs.size());
      if (inserted) configs.push_back(json_codec::KernelConfigToJson(config));
      indices.push_back(it->second);
    }
    json exemplars = json::array();
    if (const auto it = table.exemplars.find(key); it != table.exemplars.end()) {
      for (const Exemplar& e : it->second) {
        exemplars.push_back(json::array({e.m, e.n, e.k, e.batch, e.fastest}));
      }
    }
    groups.push_back(
        {{"key", key}, {"configs", std::move(indices)}, {"exemplars", std::move(exemplars)}});
  }
  return json{{"format", kCandidateTableFormat},
              {"version", kCandidateTableVersion},
              {"provider", ProviderName(table.provider)},
              {"source",
               {{"data_fingerprint", table.data_fingerprint},
                {"rows", table.rows},
                {"tool_version", table.tool_version}}},
              {"configs", std::move(configs)},
              {"groups", std::move(groups)}}
      .dump();
}

StatusOr<CandidateTable> CandidateTableFromJson(std::string_view text, std::string_view source) {
  const std::string where(source);
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return ParseError(where + ": not a JSON object (corrupt candidate table)");
  }
  json_codec::ObjectReader reader(root, where);
  const std::string format = reader.String("format");
  const int64_t version = reader.Int("version");
  const std::string provider_name = reader.String("provider");
  const json* source_info = reader.Child("source", true);
  const json* configs = reader.Child("configs", true);
  const json* groups = reader.Child("groups", true);
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  if (format != kCandidateTableFormat) {
    return ParseError(where + ": format is \"" + format + "\", expected \"" +
                      std::string(kCandidateTableFormat) + "\"");
  }
  if (version != kCandidateTableVersion) {
    return ParseError(where + ": version " + std::to_string(version) + ", this build reads " +
                      std::to_string(kCandidateTableVersion));
  }
  CandidateTable table;
  auto provider = ParseProvider(provider_name);
  if (!provider.ok()) return provider.status().WithContext(where + ": provider");
  table.provider = *provider;
  json_codec::ObjectReader source_reader(*source_info, where + ".source");
  table.data_fingerprint = source_reader.String("data_fingerprint");
  table.rows = source_reader.Int("rows");
  table.tool_version = source_reader.String("tool_version");
  KSELECT_RETURN_IF_ERROR(source_reader.Finish());
  if (!configs->is_array() || !groups->is_array()) {
    return ParseError(where + ": configs and groups must be arrays");
  }
  std::vector<KernelConfig> decoded;
  decoded.reserve(configs->size());
  for (size_t i = 0; i < configs->size(); ++i) {
    const std::string path = where + ".configs[" + std::to_string(i) + "]";
    KSELECT_ASSIGN_OR_RETURN(KernelConfig config,
                             json_codec::KernelConfigFromJson((*configs)[i], path));
    if (ProviderOf(config) != table.provider) {
      return ParseError(path + ": a " + std::string(ProviderName(ProviderOf(config))) +
                        " config in a " + provider_name + " table");
    }
    decoded.push_back(std::move(config));
  }
  for (size_t g = 0; g < groups->size(); ++g) {
    const std::string path = where + ".groups[" + std::to_string(g) + "]";
    json_codec::ObjectReader group((*groups)[g], path);
    const std::string key = group.String("key");
    const json* members = group.Child("configs", true);
    const json* exemplars = group.Child("exemplars", false);
    KSELECT_RETURN_IF_ERROR(group.Finish());
    if (!members->is_array() || members->empty()) {
      return ParseError(path + ".configs: not a non-empty array of config indices");
    }
    std::vector<KernelConfig> list;
    list.reserve(members->size());
    for (const json& index : *members) {
      if (!index.is_number_unsigned() || index.get<uint64_t>() >= decoded.size()) {
        return ParseError(path + ".configs: index " + json_codec::JsonExcerpt(index) +
                          " is not one of the " + std::to_string(decoded.size()) + " configs");
      }
      list.push_back(decoded[index.get<size_t>()]);
    }
    if (exemplars != nullptr) {
      if (!exemplars->is_array()) return ParseError(path + ".exemplars: not an array");
      std::vector<Exemplar>& out = table.exemplars[key];
      for (size_t e = 0; e < exemplars->size(); ++e) {
        const json& row = (*exemplars)[e];
        const std::string at = path + ".exemplars[" + std::to_string(e) + "]";
        if (!row.is_array() || row.size() != 5 || !row[4].is_array()) {
          return ParseError(at + ": not [m, n, k, batch, [config indices]]");
        }
        Exemplar exemplar;
        int64_t* dims[] = {&exemplar.m, &exemplar.n, &exemplar.k, &exemplar.batch};
        for (int d = 0; d < 4; ++d) {
          if (!row[d].is_number_integer() || row[d].get<int64_t>() < 1) {
            return ParseError(at + ": dimension " + std::to_string(d) +
                              " is not a positive integer");
          }
          *dims[d] = row[d].get<int64_t>();
        }
        for (const json& index : row[4]) {
          if (!index.is_number_unsigned() || index.get<uint64_t>() >= list.size()) {
            return ParseError(at + ": config index " + json_codec::JsonExcerpt(index) +
                              " is not one of the group's " + std::to_string(list.size()));
          }
          exemplar.fastest.push_back(index.get<uint32_t>());
        }
        out.push_back(std::move(exemplar));
      }
    }
    if (!table.groups.emplace(key, std::move(list)).second) {
      return ParseError(path + ": group \"" + key + "\" appears twice");
    }
  }
  return table;
}

StatusOr<CandidateTable> LoadCandidateTable(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / kCandidateTableFile).string();
  if (!std::filesystem::exists(path)) {
    return NotFoundError(path +
                         ": no candidate table (write one with `kselect model candidates "
                         "--model " +
                         model_dir + " --data <training data>`, or retrain)");
  }
  KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(path));
  return CandidateTableFromJson(text, path);
}

}  // namespace kselect
