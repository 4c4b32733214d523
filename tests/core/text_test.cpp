#include "core/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace kselect::text {
namespace {

TEST(TextTest, HashesMatchKnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex("The quick brown fox jumps over the lazy dog"),
            "9e107d9d372bb6826bd81d3542a419d6");
}

TEST(TextTest, StrictNumbers) {
  EXPECT_EQ(*ParseInt64(" 42 "), 42);
  EXPECT_EQ(*ParseInt64("-7"), -7);
  EXPECT_FALSE(ParseInt64("4x").ok());
  EXPECT_FALSE(ParseInt64("").ok());
  EXPECT_NE(ParseInt64("99999999999999999999").status().message().find("64-bit"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(*ParseDouble("1.5e3"), 1500.0);
  EXPECT_TRUE(std::isnan(*ParseDouble("nan")));
  EXPECT_TRUE(std::isinf(*ParseDouble("1e999")));
  EXPECT_FALSE(ParseDouble("1.2.3").ok());
  EXPECT_TRUE(*ParseBool("True"));
  EXPECT_FALSE(*ParseBool("false"));
  EXPECT_FALSE(ParseBool("yes please").ok());
}

TEST(TextTest, Utf8CheckNamesLineAndColumn) {
  EXPECT_TRUE(CheckUtf8("plain\nü and 漢字 and 😀\n", "f").ok());
  const Status bad = CheckUtf8("ok\nab\xff", "f.log");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "f.log:2:3: invalid UTF-8 byte 0xFF");
  EXPECT_FALSE(CheckUtf8("\xc0\xaf", "overlong").ok());
  EXPECT_FALSE(CheckUtf8("\xe2\x82", "truncated").ok());
}

TEST(TextTest, SplitLinesHandlesCrlfAndNoFinalNewline) {
  const auto lines = SplitLines("a\r\nb\n\nc");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "a");
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(lines[3], "c");
}

TEST(TextTest, AtomicWriteLeavesNoPartialFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kselect_text_" + Md5Hex(UtcNowIso8601()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.txt").string();
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(*ReadFile(path), "second");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  EXPECT_EQ(WriteFileAtomically((dir / "missing" / "x").string(), "y").code(),
            StatusCode::kIoError);
  EXPECT_EQ(ReadFile((dir / "nope").string()).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kselect::text
