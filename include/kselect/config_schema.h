// Config schemas: each provider describes its config's fields once, in one table (its folder's
// <name>_config.cpp), and every codec reads that table: ConfigKey, JSON, dataset rows and columns,
// rule fields, the provider's feature block and the neighbourhood a search may move a field in.
// Adding a field to a provider is one table row; adding a provider is one folder plus one row in
// the schema registry (src/core/kernel_config.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kselect/kernel_config.h"
#include "kselect/status.h"

namespace kselect {

// How a field holds its value. Every kind but kText and kKnobList reads and writes as an int64
// (a bool as 0/1, an enum as its value); kEnum prints as its name.
enum class FieldType {
  kInt,
  kBool,
  kEnum,      // a named value from ConfigField::names
  kText,      // free text (AMD names' pipeline, scheduler, ...)
  kKnobList,  // cuDNN's (knob type, value) pairs
};

// How a field enters the model's features (the provider block of the GEMM and conv extractors).
enum class FeatureEncoding {
  kNone,           // not a feature of its own (tile sizes, split-K: the shared block has them)
  kNumber,         // the value
  kDefinedNumber,  // the value, NaN where 0 (undefined: cuBLASLt's AUTO ids)
  kFlag,           // 1 or 0
  kCategory,       // an integer id, categorical (its own code)
  kNamedCategory,  // the value's name, coded by its index in the field's categories (NaN if absent)
  // kKnobList: one numeric feature per knob type a feature spec lists, named <feature>_<type>,
  // the knob's value or NaN where the config lacks it (the set of knob types is open-ended).
  kKnobValues,
};

// Where a search (the tuner's mutations) may move a field.
enum class SearchMove {
  kFixed,       // never mutated on its own (derived from other fields, or an identity)
  kEnumerated,  // any value the provider's enumeration offers for the problem
  kValues,      // one of ConfigField::neighbourhood
};

struct EnumName {
  int64_t value;
  std::string_view name;
};

// One config field. Consecutive fields sharing a key label print as one "AxBxC" ConfigKey entry;
// consecutive fields sharing a JSON key form one JSON array.
struct ConfigField {
  std::string_view name;  // the member's name; rules and search name fields by it
  FieldType type = FieldType::kInt;
  int bits = 64;               // integer storage width: values outside it are refused on reading
  // The least value a config can have (a tile of 0 rows, a negative engine id is no kernel):
  // below it, reading refuses the config. The lowest int64 = no bound.
  int64_t least = std::numeric_limits<int64_t>::min();
  std::string_view key_label;  // label in ConfigKey; "" = not part of the identity (derived)
  std::string_view json_key;   // "" = not in JSON
  std::string_view column;     // dataset column (include/kselect/dataset.h); "" = not stored
  bool json_required = false;  // JSON without it is refused (otherwise the default applies)
  // Columns written for readers but never read back (derived from other fields).
  bool write_only = false;
  std::string_view feature;  // feature name; "" = none
  FeatureEncoding encoding = FeatureEncoding::kNone;
  // kEnum: the names. kText with kNamedCategory: the known values, in code order.
  std::span<const EnumName> names = {};
  std::span<const std::string_view> categories = {};
  SearchMove search = SearchMove::kFixed;
  std::span<const int64_t> neighbourhood = {};  // kValues: the values a search may choose
  // Fields a search crosses over together (their values are only good in combination); "" =
  // the key label's group.
  std::string_view search_group;
  // Accessors (kInt, kBool, kEnum: get/set; kText: get_text/set_text; kKnobList: knobs).
  int64_t (*get)(const KernelConfig&) = nullptr;
  void (*set)(KernelConfig&, int64_t) = nullptr;
  const std::string& (*get_text)(const KernelConfig&) = nullptr;
  void (*set_text)(KernelConfig&, std::string) = nullptr;
  std::vector<std::pair<int32_t, int64_t>>* (*knobs)(KernelConfig&) = nullptr;
  const std::vector<std::pair<int32_t, int64_t>>& (*get_knobs)(const KernelConfig&) = nullptr;

  bool IsInteger() const {
    return type == FieldType::kInt || type == FieldType::kBool || type == FieldType::kEnum;
  }
};

// What the GEMM features and the peer block read of a GEMM provider's config: its block tile,
// split-K, stages, threads, cluster and padding, derived by the provider (cuBLASLt decodes ids,
// CK counts wavefronts of 64). 0 = undefined.
struct GemmKernelTraits {
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;
  int64_t split_k = 1;
  int64_t stages = 0;
  int64_t threads = 0;                   // threads per block
  int64_t cluster_m = 1, cluster_n = 1;  // thread-block cluster (1 = none)
  // Bounds checks per dimension; unset where the provider does not say (cuBLASLt).
  std::optional<std::array<bool, 3>> padding;
  int64_t algo_id = -1;  // the library's algorithm id (cuBLASLt); -1 where there is none
};

// One provider's config, described.
struct ConfigSchema {
  Provider provider;
  std::string_view name;  // ProviderName
  std::span<const ConfigField> fields;
  KernelConfig (*make_default)() = nullptr;
  // A short human-readable name for tables and logs.
  std::string (*describe)(const KernelConfig&) = nullptr;
  // GEMM providers: the traits the GEMM features read; nullptr for convolution providers.
  GemmKernelTraits (*gemm_traits)(const KernelConfig&) = nullptr;
};

// The schema registry: one row per provider, in Provider order.
std::span<const ConfigSchema> ConfigSchemas();
const ConfigSchema& SchemaOf(Provider provider);
const ConfigSchema& SchemaOf(const KernelConfig& config);
// The field named `name` of the provider's schema, or nullptr.
const ConfigField* FindConfigField(Provider provider, std::string_view name);

// An integer field's value by name; nullopt when `config`'s provider has no such integer field.
std::optional<int64_t> ConfigFieldValue(const KernelConfig& config, std::string_view name);
// The text of one field's value as ConfigKey prints it: a number, 1/0, an enum name or the text.
std::string FieldText(const ConfigField& field, const KernelConfig& config);
// The GEMM traits of a config (all zero/undefined for a convolution provider).
GemmKernelTraits GemmTraitsOf(const KernelConfig& config);

// The categorical value lists the provider blocks encode with: feature name -> values.
std::vector<std::pair<std::string, std::vector<std::string>>> ConfigFeatureEncodings();

}  // namespace kselect
