// The config spaces the tuner searches, as genes (one per searchable field of a provider's field
// table, each a sorted list of values): one module for both searches. SearchSpace is an
// enumerated space (the configs a provider lists for a problem), searched by the genetic
// algorithm of `kselect tune` (tuner.h); TileSearchSpace is a generator's space (per tile
// pipeline, the cross product of the values a rule set lists), searched by the model-guided
// `kselect search` (search.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kselect/catalogue.h"
#include "kselect/config_schema.h"
#include "kselect/kernel_config.h"
#include "kselect/status.h"

namespace kselect {

// ---------------------------------------------------------------------------------------------
// An enumerated space.

// A finite config space as genes: one gene per searchable integer field of the provider's schema
// (SearchMove other than kFixed), each config's genes as indices into the sorted values its field
// takes in the space. Fields sharing a search group (ConfigField::search_group, else the key
// label) are crossed over together.
struct SearchSpace {
  std::vector<KernelConfig> configs;
  std::vector<std::string> gene_names;
  std::vector<std::vector<int>> groups;      // gene indices per coupled group
  std::vector<std::vector<int64_t>> values;  // per gene: the values the space uses, ascending
  std::vector<std::vector<int32_t>> genes;   // per config: a value index per gene
  std::unordered_map<std::string, size_t> by_genes;  // gene vector (as bytes) -> first config

  // The config with exactly these genes, if the space has one.
  std::optional<size_t> Find(std::span<const int32_t> config_genes) const;
};

// The space of `configs` (one provider's, no duplicates by ConfigKey). kInvalidArgument when empty
// or mixing providers.
StatusOr<SearchSpace> MakeSearchSpace(std::vector<KernelConfig> configs);

// ---------------------------------------------------------------------------------------------
// A generator's space (the tile engine's rule sets).

// One pipeline's part of the space: per gene, the values the rule set's generator groups of that
// pipeline list for the field (their union), ascending. The part is their cross product.
struct TileSearchGroup {
  TilePipeline pipeline = TilePipeline::kMultistage;
  std::vector<std::vector<int64_t>> values;  // per gene (TileSearchSpace::genes), never empty
  double Size() const;                       // configs in the cross product
};

struct TileSearchSpace {
  std::string rule_set;  // the rule set's name
  uint64_t rules_fingerprint = 0;
  // One gene per integer field of TileConfig's field table, in the table's order (the pipeline's
  // gene has one value per group).
  std::vector<const ConfigField*> genes;
  std::vector<TileSearchGroup> groups;  // one per pipeline, in the generator's order
  double Size() const;                  // configs over all groups
  // The config of `group` with one value index per gene.
  TileConfig Config(size_t group, std::span<const int32_t> indices) const;
};

// The space of a tile rule set's generator (ExpandGeneratorGroups, grouped by pipeline).
// kInvalidArgument for another provider's rule set; ParseErrors name the JSON path.
StatusOr<TileSearchSpace> MakeTileSearchSpace(const RuleSet& rules);

}  // namespace kselect
