// The tuner's config spaces (include/kselect/search_space.h): an enumerated provider space as
// genes, and a tile rule set's generator space.
#include "kselect/search_space.h"

#include <algorithm>
#include <map>
#include <set>

#include "providers/tile/tile_config.h"
#include "providers/tile/tile_engine.h"

namespace kselect {

namespace {

std::string GeneBytes(std::span<const int32_t> genes) {
  return std::string(reinterpret_cast<const char*>(genes.data()), genes.size() * sizeof(int32_t));
}

}  // namespace

std::optional<size_t> SearchSpace::Find(std::span<const int32_t> config_genes) const {
  const auto it = by_genes.find(GeneBytes(config_genes));
  if (it == by_genes.end()) return std::nullopt;
  return it->second;
}

StatusOr<SearchSpace> MakeSearchSpace(std::vector<KernelConfig> configs) {
  if (configs.empty()) return InvalidArgumentError("search space: no configs");
  const ConfigSchema& schema = SchemaOf(configs.front());
  SearchSpace space;
  std::vector<const ConfigField*> fields;
  std::map<std::string_view, int> group_of;
  for (const ConfigField& field : schema.fields) {
    if (field.search == SearchMove::kFixed || !field.IsInteger()) continue;
    const int gene = static_cast<int>(fields.size());
    fields.push_back(&field);
    space.gene_names.emplace_back(field.name);
    const std::string_view group = field.search_group.empty()
                                       ? (field.key_label.empty() ? field.name : field.key_label)
                                       : field.search_group;
    const auto [it, inserted] = group_of.emplace(group, static_cast<int>(space.groups.size()));
    if (inserted) space.groups.emplace_back();
    space.groups[static_cast<size_t>(it->second)].push_back(gene);
  }
  if (fields.empty()) {
    return InvalidArgumentError("search space: " + std::string(schema.name) +
                                " configs have no searchable field");
  }
  std::vector<std::set<int64_t>> seen(fields.size());
  std::set<std::string> keys;
  for (const KernelConfig& config : configs) {
    if (ProviderOf(config) != schema.provider) {
      return InvalidArgumentError("search space: configs of two providers");
    }
    if (!keys.insert(ConfigKey(config)).second) {
      return InvalidArgumentError("search space: config " + ConfigKey(config) + " twice");
    }
    for (size_t g = 0; g < fields.size(); ++g) seen[g].insert(fields[g]->get(config));
  }
  for (const std::set<int64_t>& values : seen)
    space.values.emplace_back(values.begin(), values.end());
  space.genes.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    std::vector<int32_t> genes(fields.size());
    for (size_t g = 0; g < fields.size(); ++g) {
      const std::vector<int64_t>& values = space.values[g];
      genes[g] = static_cast<int32_t>(
          std::lower_bound(values.begin(), values.end(), fields[g]->get(configs[i])) -
          values.begin());
    }
    space.by_genes.emplace(GeneBytes(genes), i);  // configs differing only in fixed fields: first
    space.genes.push_back(std::move(genes));
  }
  space.configs = std::move(configs);
  return space;
}

// ---------------------------------------------------------------------------------------------
// The space.

double TileSearchGroup::Size() const {
  double size = 1;
  for (const std::vector<int64_t>& v : values) size *= static_cast<double>(v.size());
  return size;
}

double TileSearchSpace::Size() const {
  double size = 0;
  for (const TileSearchGroup& g : groups) size += g.Size();
  return size;
}

TileConfig TileSearchSpace::Config(size_t group, std::span<const int32_t> indices) const {
  KernelConfig config{TileConfig{}};
  const TileSearchGroup& g = groups.at(group);
  for (size_t gene = 0; gene < genes.size(); ++gene) {
    genes[gene]->set(config, g.values[gene].at(static_cast<size_t>(indices[gene])));
  }
  return tile::WithDerivedFields(std::get<TileConfig>(config));
}

StatusOr<TileSearchSpace> MakeTileSearchSpace(const RuleSet& rules) {
  KSELECT_ASSIGN_OR_RETURN(const std::vector<std::vector<TileConfig>> generated,
                           tile::ExpandGeneratorGroups(rules));
  TileSearchSpace space;
  space.rule_set = rules.name;
  space.rules_fingerprint = rules.fingerprint;
  // Every identity field a config's value can be set through: the pipeline, tiles, warps, the
  // instruction shape, masks, split-K, clusters, swizzle. Not MakeSearchSpace's genes, which leave
  // out the fields the tuner never moves on their own (warps_k, instr), though the generator
  // varies them (the decode family's warps_k, the warp-specialized instr_n).
  for (const ConfigField& field : TileConfigSchema().fields) {
    if (field.IsInteger() && field.set != nullptr && !field.key_label.empty()) {
      space.genes.push_back(&field);
    }
  }
  std::map<int64_t, size_t> group_of;  // pipeline -> group
  std::vector<std::vector<std::set<int64_t>>> seen;
  for (const std::vector<TileConfig>& group : generated) {
    for (const TileConfig& c : group) {
      const KernelConfig config(c);
      const auto [it, inserted] =
          group_of.emplace(static_cast<int64_t>(c.pipeline), space.groups.size());
      if (inserted) {
        space.groups.push_back({.pipeline = c.pipeline});
        seen.emplace_back(space.genes.size());
      }
      for (size_t gene = 0; gene < space.genes.size(); ++gene) {
        seen[it->second][gene].insert(space.genes[gene]->get(config));
      }
    }
  }
  if (space.groups.empty()) {
    return InvalidArgumentError("rule set " + rules.name + ": its generator makes no configs");
  }
  for (size_t g = 0; g < space.groups.size(); ++g) {
    for (const std::set<int64_t>& values : seen[g]) {
      space.groups[g].values.emplace_back(values.begin(), values.end());
    }
    // A field the pipeline derives from others (tile::WithDerivedFields) is no gene of its own:
    // one value, so mutations are not spent on it.
    TileConfig probe;
    probe.pipeline = space.groups[g].pipeline;
    for (size_t gene = 0; gene < space.genes.size(); ++gene) {
      std::vector<int64_t>& values = space.groups[g].values[gene];
      KernelConfig moved{probe};
      space.genes[gene]->set(moved, space.genes[gene]->get(KernelConfig(probe)) + 1000);
      const KernelConfig derived(tile::WithDerivedFields(std::get<TileConfig>(moved)));
      if (space.genes[gene]->get(derived) != space.genes[gene]->get(moved)) values.resize(1);
    }
  }
  return space;
}

}  // namespace kselect
