// Models trained outside kselect, scored by kselect's own tree evaluator (no LightGBM at run time):
// today CK Tile's dispatcher heuristics (composable_kernel dispatcher/heuristics/train.py). Such a
// model directory holds
//   model_tflops.lgbm, model_latency.lgbm, model_bandwidth.lgbm   LightGBM text models (any of
//                              them; often gzipped by hand to model_<target>.lgbm.gz)
//   feature_spec.json          feature_names (the models' input columns, in order),
//                              categorical_features, log_targets (targets trained on log1p, whose
//                              predictions go through expm1), tflops_log_transform (some versions),
//                              and keys that describe the training (op_type, dtype, arch, params,
//                              hardware, ...)
// The features come from CK's own feature engine, so rows arrive by feature name.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/model.h"
#include "kselect/status.h"

namespace kselect {

// What inference reads of CK Tile's feature_spec.json; its other keys vary across CK versions and
// are ignored.
struct CkTileSpec {
  std::vector<std::string> feature_names;  // the models' input columns, in order
  std::vector<std::string> categorical_features;
  std::set<Target> log_targets;      // trained on log1p(value)
  std::string op_type, dtype, arch;  // descriptive; "" when absent
};

// Reads the text of a CK Tile feature_spec.json. Errors name `source` and the key: not JSON or
// a key of the wrong type (kParseError); no feature_names, an empty one, a repeated feature, a
// categorical feature that is not a feature, a log target other than tflops, latency or
// bandwidth, or a tflops_log_transform that contradicts log_targets (kSchemaMismatch).
StatusOr<CkTileSpec> CkTileSpecFromJson(std::string_view text, std::string_view source);

// A loaded foreign model directory: one LightGBM model per target it has.
class ForeignModel {
 public:
  ForeignModel(ForeignModel&&) noexcept;
  ForeignModel& operator=(ForeignModel&&) noexcept;
  ~ForeignModel();

  const CkTileSpec& spec() const;
  const std::vector<std::string>& feature_names() const { return spec().feature_names; }
  bool Has(Target target) const;
  // True when the target's model was trained on log1p of the target.
  bool LogTarget(Target target) const { return spec().log_targets.count(target) > 0; }

  // Predictions in the target's units (TFLOPS, ms, GB/s) for `num_rows` row-major rows in
  // feature_names() order: expm1 of a log target's model output, other targets' output clamped
  // at 0 (as CK's predict.py does for one row). NaN is a missing value. kNotFound for a target
  // the directory has no model of.
  StatusOr<std::vector<double>> Predict(Target target, std::span<const double> rows,
                                        size_t num_rows) const;
  // One row by feature name. Every feature must be there (kInvalidArgument naming the first one
  // missing); names the model does not read are ignored.
  StatusOr<double> Predict(Target target, const std::map<std::string, double>& row) const;

  // For a table's column names: the column of each feature, in feature_names() order. A feature
  // no column has, or that two columns have, is a kInvalidArgument naming it; other columns are
  // ignored.
  StatusOr<std::vector<size_t>> ColumnsFor(std::span<const std::string> header) const;
  // A CSV table (a header line of column names, then one line of numbers per row; an empty cell
  // or "nan" is a missing value) as rows in feature_names() order; sets *num_rows. Errors name
  // `source` and the line.
  StatusOr<std::vector<double>> RowsFromCsv(std::string_view csv, std::string_view source,
                                            size_t* num_rows) const;

 private:
  struct Impl;
  friend StatusOr<ForeignModel> LoadCkTileModel(const std::string& dir);
  explicit ForeignModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Loads a CK Tile model directory: feature_spec.json and every model_<target>.lgbm present (or
// model_<target>.lgbm.gz; the plain file when both are there), at least one. A missing directory,
// spec or model is a kNotFound; an unreadable model a kParseError (or kIoError for bad gzip data)
// naming the file. Each model's feature names must be the spec's list (kSchemaMismatch naming the
// first difference; a model trained without names, whose names are LightGBM's Column_0,
// Column_1, ..., is taken to follow the spec's order when the count matches), and a feature a
// model splits as a category must be among the spec's categorical_features.
StatusOr<ForeignModel> LoadCkTileModel(const std::string& dir);

}  // namespace kselect
