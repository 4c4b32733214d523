// Foreign models (foreign_model.h): CK Tile's model directories, read with TreeEnsemble and scored
// with CompiledTrees, as kselect's own models are.
#include "kselect/foreign_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/text.h"
#include "model/compiled_trees.h"
#include "model/tree_ensemble.h"

namespace kselect {

namespace fs = std::filesystem;

struct ForeignModel::Impl {
  CkTileSpec spec;
  std::map<Target, CompiledTrees> models;
};

ForeignModel::ForeignModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ForeignModel::ForeignModel(ForeignModel&&) noexcept = default;
ForeignModel& ForeignModel::operator=(ForeignModel&&) noexcept = default;
ForeignModel::~ForeignModel() = default;

const CkTileSpec& ForeignModel::spec() const {
  return impl_->spec;
}

bool ForeignModel::Has(Target target) const {
  return impl_->models.count(target) > 0;
}

StatusOr<std::vector<double>> ForeignModel::Predict(Target target, std::span<const double> rows,
                                                    size_t num_rows) const {
  const auto it = impl_->models.find(target);
  if (it == impl_->models.end()) {
    return NotFoundError("the model directory has no " + std::string(TargetName(target)) +
                         " model (model_" + std::string(TargetName(target)) + ".lgbm)");
  }
  KSELECT_CHECK(rows.size() == num_rows * impl_->spec.feature_names.size());
  std::vector<double> out(num_rows);
  if (num_rows > 0) it->second.Predict(rows.data(), num_rows, out.data());
  const bool log_target = LogTarget(target);
  for (double& v : out) v = log_target ? std::expm1(v) : std::max(v, 0.0);
  return out;
}

StatusOr<double> ForeignModel::Predict(Target target,
                                       const std::map<std::string, double>& row) const {
  std::vector<double> values;
  values.reserve(feature_names().size());
  for (const std::string& name : feature_names()) {
    const auto it = row.find(name);
    if (it == row.end()) return InvalidArgumentError("the row has no value for '" + name + "'");
    values.push_back(it->second);
  }
  KSELECT_ASSIGN_OR_RETURN(const std::vector<double> out, Predict(target, values, 1));
  return out.front();
}

StatusOr<std::vector<size_t>> ForeignModel::ColumnsFor(std::span<const std::string> header) const {
  std::vector<size_t> columns;
  for (const std::string& name : feature_names()) {
    const auto first = std::find(header.begin(), header.end(), name);
    if (first == header.end()) {
      return InvalidArgumentError("no column for feature '" + name + "' (the model reads " +
                                  std::to_string(feature_names().size()) + " features, " +
                                  "named in feature_spec.json)");
    }
    if (std::find(first + 1, header.end(), name) != header.end()) {
      return InvalidArgumentError("two columns are named '" + name + "'");
    }
    columns.push_back(static_cast<size_t>(first - header.begin()));
  }
  return columns;
}

StatusOr<std::vector<double>> ForeignModel::RowsFromCsv(std::string_view csv,
                                                        std::string_view source_view,
                                                        size_t* num_rows) const {
  const std::string source(source_view);
  const std::vector<std::string_view> lines = text::SplitLines(csv);
  const auto cells = [](std::string_view line) {
    std::vector<std::string> out;
    for (std::string_view cell : text::Split(line, ',')) {
      cell = text::Trim(cell);
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
        cell = cell.substr(1, cell.size() - 2);
      }
      out.emplace_back(cell);
    }
    return out;
  };
  size_t line = 0;
  while (line < lines.size() && text::Trim(lines[line]).empty()) ++line;
  if (line == lines.size()) return ParseError(source + ": empty (expected a header line)");
  const std::vector<std::string> header = cells(lines[line]);
  StatusOr<std::vector<size_t>> columns = ColumnsFor(header);
  if (!columns.ok()) return columns.status().WithContext(source + ": header");
  std::vector<double> rows;
  *num_rows = 0;
  for (++line; line < lines.size(); ++line) {
    if (text::Trim(lines[line]).empty()) continue;
    const std::vector<std::string> row = cells(lines[line]);
    const std::string where = text::Where(source, static_cast<int64_t>(line) + 1);
    if (row.size() != header.size()) {
      return ParseError(where + ": " + std::to_string(row.size()) + " fields, the header has " +
                        std::to_string(header.size()));
    }
    for (const size_t c : *columns) {
      if (row[c].empty()) {
        rows.push_back(std::nan(""));
        continue;
      }
      StatusOr<double> value = text::ParseDouble(row[c]);
      if (!value.ok()) return value.status().WithContext(where + ": column '" + header[c] + "'");
      rows.push_back(*value);
    }
    ++*num_rows;
  }
  return rows;
}

namespace {

constexpr std::string_view kColumnPrefix = "Column_";

// The first difference between a model's feature names and the spec's, "" when they agree. A model
// trained without names carries LightGBM's Column_<i>: it follows the spec's order by position.
std::string FeatureNamesDifference(const std::vector<std::string>& model,
                                   const std::vector<std::string>& spec) {
  bool unnamed = true;
  for (size_t i = 0; i < model.size() && unnamed; ++i) {
    unnamed = model[i] == std::string(kColumnPrefix) + std::to_string(i);
  }
  if (unnamed && model.size() == spec.size()) return "";
  for (size_t i = 0; i < std::min(model.size(), spec.size()); ++i) {
    if (model[i] != spec[i]) {
      return "feature " + std::to_string(i) + " is '" + model[i] + "' in the model but '" +
             spec[i] + "' in feature_spec.json";
    }
  }
  if (model.size() != spec.size()) {
    return "the model reads " + std::to_string(model.size()) +
           " features, feature_spec.json lists " + std::to_string(spec.size());
  }
  return "";
}

// model_<target>.lgbm, else model_<target>.lgbm.gz, else "".
std::string ModelFileOf(const fs::path& dir, Target target) {
  const fs::path plain = dir / ("model_" + std::string(TargetName(target)) + ".lgbm");
  if (fs::exists(plain)) return plain.string();
  const fs::path gz = plain.string() + ".gz";
  if (fs::exists(gz)) return gz.string();
  return "";
}

StatusOr<CompiledTrees> LoadModelFile(const std::string& path, const CkTileSpec& spec) {
  KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(path));
  KSELECT_ASSIGN_OR_RETURN(const TreeEnsemble trees, TreeEnsemble::FromLightGbmText(text, path));
  if (const std::string d = FeatureNamesDifference(trees.feature_names(), spec.feature_names);
      !d.empty()) {
    return SchemaMismatchError(path + ": " + d + " (retrain, or use the feature_spec.json the " +
                               "model was trained with)");
  }
  for (const int feature : trees.CategoricalSplitFeatures()) {
    const std::string& name = spec.feature_names[static_cast<size_t>(feature)];
    if (std::find(spec.categorical_features.begin(), spec.categorical_features.end(), name) ==
        spec.categorical_features.end()) {
      return SchemaMismatchError(path + ": the model splits '" + name +
                                 "' as a category, but feature_spec.json does not list it in "
                                 "categorical_features");
    }
  }
  StatusOr<CompiledTrees> compiled = CompiledTrees::Compile(trees);
  if (!compiled.ok()) return compiled.status().WithContext(path);
  return compiled;
}

}  // namespace

StatusOr<ForeignModel> LoadCkTileModel(const std::string& dir) {
  if (!fs::is_directory(dir)) return NotFoundError(dir + ": no such model directory");
  const fs::path spec_path = fs::path(dir) / "feature_spec.json";
  auto spec_file = text::ReadFile(spec_path.string());
  if (spec_file.status().code() == StatusCode::kNotFound) {
    return NotFoundError(spec_path.string() + ": missing (CK Tile's train.py writes it beside " +
                         "the models)");
  }
  KSELECT_RETURN_IF_ERROR(spec_file.status());
  std::istringstream in(*spec_file);
  std::ostringstream spec_text;
  spec_text << in.rdbuf();
  auto impl = std::make_unique<ForeignModel::Impl>();
  KSELECT_ASSIGN_OR_RETURN(impl->spec, CkTileSpecFromJson(spec_text.str(), spec_path.string()));
  for (const Target target : {Target::kTflops, Target::kLatency, Target::kBandwidth}) {
    const std::string path = ModelFileOf(dir, target);
    if (path.empty()) continue;
    KSELECT_ASSIGN_OR_RETURN(CompiledTrees trees, LoadModelFile(path, impl->spec));
    impl->models.emplace(target, std::move(trees));
  }
  if (impl->models.empty()) {
    return NotFoundError(dir + ": no model_tflops.lgbm, model_latency.lgbm or " +
                         "model_bandwidth.lgbm (nor .lgbm.gz)");
  }
  return ForeignModel(std::move(impl));
}

}  // namespace kselect
