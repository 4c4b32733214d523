// GEMM shape sets: the (m, n, k, batch) rows kselect benches, each labelled with its regime and
// family, read from and written to CSV files under shapes/.
//
// CSV format: '#' lines are comments (the first says where the set came from); then the header
// "m,n,k,batch,regime,family"; then one row per shape. Dimensions are positive int64 element
// counts whose products m*k, k*n, m*n (times batch) fit in int64.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/status.h"

namespace kselect {

struct ShapeRow {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string regime;  // ShapeRegime(m, n, k)
  std::string family;  // how the row was made: "llm.llama7b.qkv", "square", "prime", "edge.k1", ...
  bool operator==(const ShapeRow&) const = default;
};

// "m<bucket>.n<bucket>.k<bucket>" with m buckets 1, 2-16, 17-128, 129-2048, 2049+ (the issue's
// 1 / 2-16 / 32-128 / 256-2048 / 4096-20480 with the gaps closed), n buckets 1, 2-64 ("small"),
// 65+, and k buckets 1, 2-255 ("shallow"), 256-4096, 4097+ ("deep").
std::string ShapeRegime(int64_t m, int64_t n, int64_t k);

// Parses a shape CSV; errors name `source` and the line ("shapes/x.csv:12: k: 'abc' is not a
// positive integer"). Missing regime/family columns are filled in.
StatusOr<std::vector<ShapeRow>> ParseShapeCsv(std::string_view text, std::string_view source);
StatusOr<std::vector<ShapeRow>> LoadShapeFile(const std::string& path);

// The named generated sets: "wide" (~700 rows over every regime and family), "core" (a
// systematic ~1-in-4.5 sample of wide, ~155 rows), "fp8" (core plus another 1 in 9 of wide:
// cuBLASLt runs fp8 on fewer shapes), "edge" (degenerate and alignment-hostile shapes) and
// "holdout" (~170 linear layers of LLMs the wide set does not name, at token counts 1-4096, none
// of them a wide shape: a test set for models trained on wide-set data).
// "<set>_framework" (wide, core, fp8, holdout): the same rows in framework orientation, as
// PyTorch's nn.Linear reaches cuBLAS (TN): m = out features, n = tokens (m and n swapped).
// Deterministic: the same kselect writes the same rows.
StatusOr<std::vector<ShapeRow>> GenerateShapeSet(std::string_view set);
// The CSV text of `rows`, with `origin` as the first comment line.
std::string ShapeCsv(const std::vector<ShapeRow>& rows, std::string_view origin);

}  // namespace kselect
