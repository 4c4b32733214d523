// The feature extractor registry: a table from a spec's `extractor` name to the implementation
// that fills it. A new problem kind adds one row.
#include <memory>
#include <string>

#include "kselect/features.h"

namespace kselect {
namespace {

struct ExtractorEntry {
  std::string_view name;
  StatusOr<std::unique_ptr<FeatureExtractor>> (*create)(const FeatureSpec& spec);
};

StatusOr<std::unique_ptr<FeatureExtractor>> CreateGemmExtractor(const FeatureSpec& spec) {
  KSELECT_ASSIGN_OR_RETURN(GemmFeatureExtractor extractor, GemmFeatureExtractor::Create(spec));
  return std::unique_ptr<FeatureExtractor>(
      std::make_unique<GemmFeatureExtractor>(std::move(extractor)));
}

StatusOr<std::unique_ptr<FeatureExtractor>> CreateConvExtractor(const FeatureSpec& spec) {
  KSELECT_ASSIGN_OR_RETURN(ConvFeatureExtractor extractor, ConvFeatureExtractor::Create(spec));
  return std::unique_ptr<FeatureExtractor>(
      std::make_unique<ConvFeatureExtractor>(std::move(extractor)));
}

constexpr ExtractorEntry kExtractors[] = {
    {"gemm", &CreateGemmExtractor},
    {"conv", &CreateConvExtractor},
};

}  // namespace

std::vector<std::string_view> FeatureExtractorNames() {
  std::vector<std::string_view> names;
  for (const ExtractorEntry& entry : kExtractors) names.push_back(entry.name);
  return names;
}

StatusOr<std::unique_ptr<FeatureExtractor>> CreateFeatureExtractor(const FeatureSpec& spec) {
  for (const ExtractorEntry& entry : kExtractors) {
    if (entry.name == spec.extractor) return entry.create(spec);
  }
  std::string known;
  for (const ExtractorEntry& entry : kExtractors) {
    known += (known.empty() ? "" : ", ") + std::string(entry.name);
  }
  return SchemaMismatchError("feature spec names extractor '" + spec.extractor +
                             "', which this kselect does not have (it has: " + known +
                             "); use a kselect that does or retrain the model");
}

}  // namespace kselect
