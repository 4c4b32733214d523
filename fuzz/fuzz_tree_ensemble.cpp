// libFuzzer target: TreeEnsemble::FromLightGbmText must return a model or a status for any bytes,
// never crash, hang or trip a sanitizer; a model it accepts must score rows without reading out of
// bounds (NaN, zeros, negatives, huge and fractional values reach every kind of split).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

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
  constexpr size_t kRows = 70;  // more than one scoring block
  const size_t features = static_cast<size_t>(model->num_features());
  std::vector<double> rows(kRows * features);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = values[(i * 7 + i / 5) % std::size(values)];
  std::vector<double> out(kRows);
  model->Predict(rows.data(), kRows, out.data());
  volatile double sink = out[0];
  (void)sink;
  return 0;
}
