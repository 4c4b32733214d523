#include "providers/cudnn/cudnn_config.h"

#include <string>

#include "providers/config_table.h"

namespace kselect {
namespace {

using config_table::Field;
using C = CudnnConfig;

config_table::FieldRow KnobsField() {
  config_table::FieldRow f;
  f.name = "knobs";
  f.type = FieldType::kKnobList;
  f.key_label = "k";  // each knob prints as k<type>=<value>
  f.json_key = "knobs";
  f.column = "cudnn_knobs";
  f.search = SearchMove::kEnumerated;
  // One feature per knob type (cudnnBackendKnobType_t value), cudnn_knob_<type>.
  f.feature = "cudnn_knob";
  f.encoding = FeatureEncoding::kKnobValues;
  f.knobs = [](KernelConfig& c) { return &std::get<C>(c).knobs; };
  f.get_knobs = [](const KernelConfig& c) -> const std::vector<std::pair<int32_t, int64_t>>& {
    return std::get<C>(c).knobs;
  };
  return f;
}

const ConfigField kFields[] = {
    Field<&C::engine_id>("engine_id")
        .Key("engine")
        .JsonRequired("engine_id")
        .Column("cudnn_engine_id")
        .Feature("cudnn_engine_id", FeatureEncoding::kCategory)
        .Search(SearchMove::kEnumerated),
    KnobsField(),
    config_table::DerivedColumn("split_k", FieldType::kInt,
                                [](const KernelConfig&) -> int64_t { return 1; }),
};

std::string Describe(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  return "cudnn engine" + std::to_string(c.engine_id) + " knobs" + std::to_string(c.knobs.size());
}

}  // namespace

const ConfigSchema& CudnnConfigSchema() {
  static const ConfigSchema schema{
      .provider = Provider::kCudnn,
      .name = "cudnn",
      .fields = kFields,
      .make_default = [] { return KernelConfig(C{}); },
      .describe = &Describe,
  };
  return schema;
}

}  // namespace kselect
