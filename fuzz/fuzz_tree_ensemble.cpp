// libFuzzer target: TreeEnsemble::FromLightGbmText must return a model or a status for any bytes,
// never crash, hang or trip a sanitizer; a model it accepts must compile (CompiledTrees) and both
// must score rows without reading out of bounds (NaN, zeros, negatives, huge and fractional values
// reach every kind of split) and agree bit for bit, or the target traps.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "model/compiled_trees.h"
#include "model/tree_ensemble.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const kselect::StatusOr<kselect::TreeEnsemble> model =
      kselect::TreeEnsemble::FromLightGbmText(text, "fuzz.lgbm");
  if (!model.ok()) return 0;
  const double values[] = {std::numeric_limits<double>::quiet_NaN(),
                           0.0,
                           -0.0,
                           1e-36,
                           1.0,
                           -1.0,
                           2.5,
                           -0.5,
                           31.0,
                           32.0,
                           1e10,
                           -1e300,
                           std::numeric_limits<double>::infinity()};
  constexpr size_t kRows = 70;  // more than one block of rows, and a partial one
  const size_t features = static_cast<size_t>(model->num_features());
  // Features the size of the fuzzer's own limits; beyond them the row buffer alone is the cost.
  if (features > (size_t{1} << 16)) return 0;
  std::vector<double> rows(kRows * features);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = values[(i * 7 + i / 5) % std::size(values)];
  std::vector<double> expected(kRows);
  model->Predict(rows.data(), kRows, expected.data());

  // A small category table budget too, so both categorical paths run.
  for (const size_t table_words : {size_t{1} << 20, size_t{64}}) {
    const kselect::StatusOr<kselect::CompiledTrees> compiled =
        kselect::CompiledTrees::Compile(*model, {.max_category_table_words = table_words});
    if (!compiled.ok()) return 0;  // past the layout's limits
    std::vector<double> actual(kRows);
    compiled->Predict(rows.data(), kRows, actual.data());
    compiled->Predict(rows.data(), 1, actual.data());  // the one-row path
    if (std::memcmp(expected.data(), actual.data(), kRows * sizeof(double)) != 0) {
      __builtin_trap();  // the compiled scorer disagrees with its reference
    }
  }
  return 0;
}
