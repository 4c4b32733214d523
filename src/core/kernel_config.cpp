// The schema registry and the codecs every provider shares: identity keys, descriptions and field
// access all read the providers' field tables (include/kselect/config_schema.h).
#include "kselect/kernel_config.h"

#include <array>
#include <string>

#include "kselect/config_schema.h"

namespace kselect {
namespace {

// The registry: one row per provider, in Provider (and KernelConfig alternative) order.
using SchemaGetter = const ConfigSchema& (*)();
constexpr SchemaGetter kSchemaRegistry[] = {
    &CublasLtConfigSchema, &TileConfigSchema,   &CudnnConfigSchema,
    &CkTileConfigSchema,   &CkConvConfigSchema,
};
static_assert(std::size(kSchemaRegistry) == std::variant_size_v<KernelConfig>);

const std::vector<ConfigSchema>& Registry() {
  static const std::vector<ConfigSchema> schemas = [] {
    std::vector<ConfigSchema> all;
    for (SchemaGetter get : kSchemaRegistry) {
      all.push_back(get());
      KSELECT_CHECK_MSG(static_cast<size_t>(all.back().provider) == all.size() - 1,
                        "schema registry out of Provider order");
      KSELECT_CHECK_MSG(all.back().make_default().index() == all.size() - 1,
                        "schema registry out of KernelConfig order");
    }
    return all;
  }();
  return schemas;
}

}  // namespace

std::string_view ProviderName(Provider provider) {
  const size_t i = static_cast<size_t>(provider);
  return i < std::size(kSchemaRegistry) ? kSchemaRegistry[i]().name : "unknown";
}

StatusOr<Provider> ParseProvider(std::string_view name) {
  std::string expected;
  for (const ConfigSchema& schema : Registry()) {
    if (schema.name == name) return schema.provider;
    expected += (expected.empty() ? "" : ", ") + std::string(schema.name);
  }
  return InvalidArgumentError("unknown provider '" + std::string(name) +
                              "' (expected one of: " + expected + ")");
}

std::span<const ConfigSchema> ConfigSchemas() {
  return Registry();
}
const ConfigSchema& SchemaOf(Provider provider) {
  const size_t i = static_cast<size_t>(provider);
  KSELECT_CHECK_MSG(i < Registry().size(), "no schema for this provider");
  return Registry()[i];
}
const ConfigSchema& SchemaOf(const KernelConfig& config) {
  return Registry()[config.index()];
}

Provider ProviderOf(const KernelConfig& config) {
  return SchemaOf(config).provider;
}

const ConfigField* FindConfigField(Provider provider, std::string_view name) {
  for (const ConfigField& field : SchemaOf(provider).fields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

std::optional<int64_t> ConfigFieldValue(const KernelConfig& config, std::string_view name) {
  const ConfigField* field = FindConfigField(ProviderOf(config), name);
  if (!field || !field->IsInteger()) return std::nullopt;
  return field->get(config);
}

int32_t SplitKOf(const KernelConfig& config) {
  const std::optional<int64_t> split_k = ConfigFieldValue(config, "split_k");
  return split_k ? static_cast<int32_t>(*split_k) : 1;
}

std::string FieldText(const ConfigField& field, const KernelConfig& config) {
  switch (field.type) {
    case FieldType::kInt:
      return std::to_string(field.get(config));
    case FieldType::kBool:
      return field.get(config) != 0 ? "1" : "0";
    case FieldType::kEnum: {
      const int64_t value = field.get(config);
      for (const EnumName& e : field.names) {
        if (e.value == value) return std::string(e.name);
      }
      return "unknown";
    }
    case FieldType::kText:
      return field.get_text(config);
    case FieldType::kKnobList: {
      std::string text;
      for (const auto& [knob, value] : field.get_knobs(config)) {
        text += (text.empty() ? "" : ",") + std::to_string(knob) + "=" + std::to_string(value);
      }
      return text;
    }
  }
  return "";
}

std::string ConfigKey(const KernelConfig& config) {
  const ConfigSchema& schema = SchemaOf(config);
  std::string text(schema.name);
  text += ':';
  bool first = true;
  auto add = [&](std::string_view label, const std::string& value) {
    if (!first) text += ',';
    first = false;
    text += label;
    text += '=';
    text += value;
  };
  const std::span<const ConfigField> fields = schema.fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    const ConfigField& field = fields[i];
    if (field.key_label.empty()) continue;
    if (field.type == FieldType::kKnobList) {
      for (const auto& [knob, value] : field.get_knobs(config)) {
        add(std::string(field.key_label) + std::to_string(knob), std::to_string(value));
      }
      continue;
    }
    // Consecutive fields under one label print as AxBxC.
    std::string value = FieldText(field, config);
    while (i + 1 < fields.size() && fields[i + 1].key_label == field.key_label) {
      value += 'x' + FieldText(fields[++i], config);
    }
    add(field.key_label, value);
  }
  return text;
}

std::string DescribeConfig(const KernelConfig& config) {
  return SchemaOf(config).describe(config);
}

GemmKernelTraits GemmTraitsOf(const KernelConfig& config) {
  const ConfigSchema& schema = SchemaOf(config);
  GemmKernelTraits traits;
  if (schema.gemm_traits) traits = schema.gemm_traits(config);
  return traits;
}

std::vector<std::pair<std::string, std::vector<std::string>>> ConfigFeatureEncodings() {
  std::vector<std::pair<std::string, std::vector<std::string>>> encodings;
  for (const ConfigSchema& schema : Registry()) {
    for (const ConfigField& field : schema.fields) {
      if (field.encoding != FeatureEncoding::kNamedCategory) continue;
      std::vector<std::string> values;
      for (const EnumName& e : field.names) values.emplace_back(e.name);
      for (std::string_view c : field.categories) values.emplace_back(c);
      encodings.emplace_back(std::string(field.feature), std::move(values));
    }
  }
  return encodings;
}

}  // namespace kselect
