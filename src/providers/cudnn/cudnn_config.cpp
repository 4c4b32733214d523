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
        .AtLeast(0)
        .Key("engine")
        .JsonRequired("engine_id")
        .Column("cudnn_engine_id")
        .Feature("cudnn_engine_id", FeatureEncoding::kCategory)
        .Search(SearchMove::kEnumerated),
    KnobsField(),
    config_table::DerivedColumn("split_k", FieldType::kInt,
                                [](const KernelConfig&) -> int64_t { return 1; }),
};

// "cudnn engine58 k2=4,k5=0,k14=6": the knob values tell apart configs of one engine, which a
// ranking lists side by side (types are cudnnBackendKnobType_t values).
std::string Describe(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  std::string text = "cudnn engine" + std::to_string(c.engine_id);
  for (size_t i = 0; i < c.knobs.size(); ++i) {
    text += (i == 0 ? " k" : ",k") + std::to_string(c.knobs[i].first) + "=" +
            std::to_string(c.knobs[i].second);
  }
  return text;
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
