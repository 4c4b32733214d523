// Helpers shared by the ingestion tests: fixture paths and text, substring assertions.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace kselect::testing_util {

// tests/fixtures/<folder>/<name>.
inline std::string FixturePath(std::string_view folder, std::string_view name) {
  return (std::filesystem::path(KSELECT_FIXTURE_DIR) / folder / name).string();
}

inline std::string ReadFixture(std::string_view folder, std::string_view name) {
  std::ifstream in(FixturePath(folder, name), std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << FixturePath(folder, name);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline ::testing::AssertionResult Contains(std::string_view haystack, std::string_view needle) {
  if (haystack.find(needle) != std::string_view::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << haystack << "' does not contain '" << needle << "'";
}

}  // namespace kselect::testing_util
