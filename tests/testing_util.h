// Helpers shared by the ingestion tests: fixture paths and text, substring assertions.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "kselect/problem.h"

namespace kselect::testing_util {

// tests/fixtures/<folder>/<name>.
inline std::string FixturePath(std::string_view folder, std::string_view name) {
  return (std::filesystem::path(KSELECT_FIXTURE_DIR) / folder / name).string();
}

// models/<name> in the source tree: a shipped model directory.
inline std::string ModelDir(std::string_view name) {
  return (std::filesystem::path(KSELECT_SOURCE_DIR) / "models" / name).string();
}

// The bytes of a file ("" when it cannot be read).
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::string ReadFixture(std::string_view folder, std::string_view name) {
  EXPECT_TRUE(std::filesystem::exists(FixturePath(folder, name)))
      << "missing fixture " << FixturePath(folder, name);
  return ReadAll(FixturePath(folder, name));
}

inline ::testing::AssertionResult Contains(std::string_view haystack, std::string_view needle) {
  if (haystack.find(needle) != std::string_view::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << haystack << "' does not contain '" << needle << "'";
}

// The bf16 GEMM PyTorch's nn.Linear reaches cuBLASLt as: TN (layout rcc) with m = out features,
// n = tokens, k = in features.
inline GemmProblem LinearGemm(int64_t out_features, int64_t tokens, int64_t in_features) {
  GemmProblem p;
  p.m = out_features;
  p.n = tokens;
  p.k = in_features;
  p.layout = GemmLayout{MatrixOrder::kRowMajor, MatrixOrder::kColMajor, MatrixOrder::kColMajor};
  return p;
}

}  // namespace kselect::testing_util
