// Options shared by the GEMM subcommands (bench, catalogue, tile bench, search): dtype and
// transpose pair -> problem, --shape arguments and shape files -> shape rows.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/text.h"
#include "kselect/problem.h"
#include "kselect/shapes.h"
#include "kselect/status.h"

namespace kselect::cli {

// The check of every dimension and count option (--m, --n, --k, --batch, --top): a whole number
// from 1 to 2^63-1. CLI11's PositiveNumber prints a 309-digit range for 0, and a plain int64
// option clamps 2^64 silently; a refusal says what was wrong instead.
inline CLI::Validator PositiveInteger() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const auto parsed = text::ParseInt64(value);
        if (!parsed.ok()) return "'" + value + "' is not a whole number within 64 bits";
        if (*parsed < 1) return "must be a positive whole number, got " + value;
        return "";
      },
      "POSITIVE");
}

// "bf16" (A, B, C bf16), "fp16" (all fp16), "fp8" (A, B e4m3, C bf16); fp32 accumulation.
// `ops` is the cuBLAS transpose pair ("TN": A row-major m x k, B column-major, C column-major).
inline StatusOr<GemmProblem> MakeGemmProblem(int64_t m, int64_t n, int64_t k, int64_t batch,
                                             const std::string& dtype, const std::string& ops) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  KSELECT_ASSIGN_OR_RETURN(p.layout, GemmLayoutFromBlasOps(ops));
  if (dtype == "bf16") {
    p.dtype_a = p.dtype_b = p.dtype_c = DataType::kBF16;
  } else if (dtype == "fp16") {
    p.dtype_a = p.dtype_b = p.dtype_c = DataType::kF16;
  } else if (dtype == "fp8") {
    p.dtype_a = p.dtype_b = DataType::kF8E4M3;
    p.dtype_c = DataType::kBF16;
  } else {
    return InvalidArgumentError("unknown --dtype '" + dtype + "' (bf16, fp16, fp8)");
  }
  p.compute = DataType::kF32;
  KSELECT_RETURN_IF_ERROR(p.Validate());
  return p;
}

// "m,n,k" or "m,n,k,batch" (a --shape argument).
inline StatusOr<ShapeRow> ParseShapeArg(const std::string& text) {
  const std::vector<std::string_view> parts = text::Split(text, ',');
  if (parts.size() != 3 && parts.size() != 4) {
    return InvalidArgumentError("--shape '" + text + "' is not m,n,k or m,n,k,batch");
  }
  int64_t dims[4] = {0, 0, 0, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    KSELECT_ASSIGN_OR_RETURN(dims[i], text::ParseInt64(parts[i]));
  }
  ShapeRow row;
  row.m = dims[0], row.n = dims[1], row.k = dims[2], row.batch = dims[3];
  return row;
}

// The rows of the --shape arguments, then of the --shapes file ("" = none); kInvalidArgument when
// there are none.
inline StatusOr<std::vector<ShapeRow>> ShapeRowsOf(const std::vector<std::string>& shapes,
                                                   const std::string& shape_file) {
  std::vector<ShapeRow> rows;
  for (const std::string& s : shapes) {
    KSELECT_ASSIGN_OR_RETURN(ShapeRow row, ParseShapeArg(s));
    rows.push_back(row);
  }
  if (!shape_file.empty()) {
    KSELECT_ASSIGN_OR_RETURN(std::vector<ShapeRow> file, LoadShapeFile(shape_file));
    rows.insert(rows.end(), file.begin(), file.end());
  }
  if (rows.empty()) return InvalidArgumentError("no --shape or --shapes given");
  return rows;
}

}  // namespace kselect::cli
