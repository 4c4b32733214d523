#include "core/text.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

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

// Issue 44, defect 15: out of range without an exponent part reads as the exponent form does
// (1 and 309 zeros overflows like 1e309; it read as 0).
TEST(TextTest, OutOfRangeNumbersWithoutAnExponentOverflowOrUnderflowRight) {
  const std::string huge = "1" + std::string(309, '0');
  EXPECT_EQ(*ParseDouble(huge), HUGE_VAL);
  EXPECT_EQ(*ParseDouble("-" + huge), -HUGE_VAL);
  EXPECT_EQ(*ParseDouble(huge + ".5"), HUGE_VAL);
  EXPECT_EQ(*ParseDouble("000" + huge), HUGE_VAL);
  EXPECT_EQ(*ParseDouble("0." + std::string(400, '0') + "1"), 0.0);
  EXPECT_EQ(*ParseDouble("0.0000001e-400"), 0.0);
  EXPECT_EQ(*ParseDouble("0.001e312"), HUGE_VAL);
  EXPECT_EQ(*ParseDouble(huge + "e-9999999999999999999999"), 0.0);
  EXPECT_EQ(*ParseDouble("1e-99999999999999999999999"), 0.0);
  EXPECT_DOUBLE_EQ(*ParseDouble("1" + std::string(300, '0')), 1e300);
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

// A fresh folder per test, removed at the end.
class OutputPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kselect_output_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    input_ = Path("input.jsonl");
    ASSERT_TRUE(WriteFileAtomically(input_, "{}\n").ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
  std::string input_;
};

TEST_F(OutputPathTest, RefusesAnOutputThatIsAnInputByAnyName) {
  EXPECT_TRUE(CheckOutputFile(Path("out.parquet"), "--output", {input_}).ok());
  EXPECT_EQ(CheckOutputFile(input_, "--output", {input_}).code(), StatusCode::kInvalidArgument);
  std::filesystem::create_symlink(input_, Path("link.jsonl"));
  std::filesystem::create_hard_link(input_, Path("hard.jsonl"));
  for (const std::string& alias :
       {Path("link.jsonl"), Path("hard.jsonl"), (dir_ / "." / "input.jsonl").string()}) {
    const Status s = CheckOutputFile(alias, "--output", {input_});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << alias;
    EXPECT_NE(s.message().find("is the same file as the input " + input_), std::string::npos)
        << s.message();
  }
}

TEST_F(OutputPathTest, RefusesFifosDevicesFoldersAndMissingFolders) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  EXPECT_NE(CheckOutputFile(Path("fifo"), "--output", {}).message().find("not a regular file"),
            std::string::npos);
  EXPECT_FALSE(CheckOutputFile("/dev/null", "--output", {}).ok());
  EXPECT_NE(CheckOutputFile(dir_.string(), "--output", {}).message().find("is a folder"),
            std::string::npos);
  EXPECT_NE(CheckOutputFile(Path("missing/x.md"), "--md", {}).message().find("does not exist"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_fifo(Path("fifo")));  // untouched
}

TEST_F(OutputPathTest, OutputFolderMustNotHoldAnInput) {
  EXPECT_TRUE(CheckOutputFolder(Path("model"), "--out", {input_}).ok());
  EXPECT_TRUE(CheckOutputFolder(Path("a/b/model"), "--out", {input_}).ok());
  EXPECT_FALSE(CheckOutputFolder(dir_.string(), "--out", {input_}).ok());
  EXPECT_FALSE(CheckOutputFolder(input_, "--out", {}).ok());
}

TEST_F(OutputPathTest, RefusesTheSameInputTwice) {
  EXPECT_TRUE(CheckDistinctInputs({input_}).ok());
  std::filesystem::create_symlink(input_, Path("link.jsonl"));
  const Status s = CheckDistinctInputs({input_, Path("link.jsonl")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--allow-duplicates"), std::string::npos);
  // A byte-identical copy under another name and inode double-counts just the same.
  ASSERT_TRUE(WriteFileAtomically(Path("copy.jsonl"), "{}\n").ok());
  const Status copy = CheckDistinctInputs({input_, Path("copy.jsonl")});
  EXPECT_EQ(copy.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(copy.message().find("is a byte-identical copy of input " + input_), std::string::npos)
      << copy.message();
  // Same size, other bytes: distinct inputs.
  ASSERT_TRUE(WriteFileAtomically(Path("other.jsonl"), "[]\n").ok());
  EXPECT_TRUE(CheckDistinctInputs({input_, Path("other.jsonl")}).ok());
}

TEST_F(OutputPathTest, ReplaceFolderLeavesOnlyTheNewFiles) {
  namespace fs = std::filesystem;
  fs::create_directories(Path("model"));
  ASSERT_TRUE(WriteFileAtomically(Path("model/model_tflops.txt"), "old").ok());
  ASSERT_TRUE(WriteFileAtomically(Path("model/model_latency.txt"), "old").ok());
  const std::string staged = TempPathBeside(Path("model"));
  fs::create_directories(staged);
  ASSERT_TRUE(WriteFileAtomically(staged + "/model_tflops.txt", "new").ok());
  ASSERT_TRUE(ReplaceFolder(staged, Path("model")).ok());
  EXPECT_EQ(*ReadFile(Path("model/model_tflops.txt")), "new");
  EXPECT_FALSE(fs::exists(Path("model/model_latency.txt")));  // stale: gone
  EXPECT_FALSE(fs::exists(staged));
  // Into a folder that does not exist yet: a rename.
  const std::string fresh = TempPathBeside(Path("other"));
  fs::create_directories(fresh);
  ASSERT_TRUE(ReplaceFolder(fresh, Path("other")).ok());
  EXPECT_TRUE(fs::is_directory(Path("other")));
}

TEST_F(OutputPathTest, WritesEveryFileOrNone) {
  const Status s =
      WriteFilesAtomically({{Path("ok.md"), "markdown"}, {Path("missing/x.html"), "html"}});
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_FALSE(std::filesystem::exists(Path("ok.md")));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1u);  // only the input: no temporary left behind
  ASSERT_TRUE(WriteFilesAtomically({{Path("ok.md"), "markdown"}, {Path("ok.html"), "html"}}).ok());
  EXPECT_EQ(*ReadFile(Path("ok.html")), "html");
}

TEST(TextTest, JsonDepthCountsBracketsOutsideStringsOnly) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a": [1, {"b": "[[[[{{{{\"[["}]})", "f").ok());
  EXPECT_TRUE(CheckJsonDepth(std::string(3, '[') + std::string(3, ']'), "f", 1, 3).ok());
  const Status deep = CheckJsonDepth("{\n  [[[[]]]]}", "f.json", 10, 3);
  EXPECT_EQ(deep.code(), StatusCode::kParseError);
  EXPECT_EQ(deep.message().rfind("f.json:11:5: JSON nested deeper than 3 levels", 0), 0u)
      << deep.message();
}

TEST(TextTest, ExcerptIsBoundedAndSaysSo) {
  EXPECT_EQ(Excerpt("short"), "short");
  const std::string cut = Excerpt(std::string(100000, 'x'));
  EXPECT_LT(cut.size(), 240u);
  EXPECT_NE(cut.find("... (100000 bytes)"), std::string::npos);
  EXPECT_TRUE(CheckUtf8(Excerpt(std::string(199, 'x') + "\u00fc" + "tail", 200), "e").ok());
}

}  // namespace
}  // namespace kselect::text

namespace kselect::text {
namespace {

// Readers refuse what is not a readable regular file before opening it (a FIFO would block
// open() forever, /dev/zero never ends), and files past the reading limit, naming the path.
TEST(TextTest, ReadersRefuseFifosDevicesAndOversizedFiles) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kselect_text_read_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Status on_fifo = CheckReadableFile(fifo);
  EXPECT_EQ(on_fifo.code(), StatusCode::kIoError);
  EXPECT_NE(on_fifo.message().find("not a regular file"), std::string::npos);
  EXPECT_EQ(ReadFile(fifo).status().code(), StatusCode::kIoError);
  EXPECT_EQ(ReadFile("/dev/zero").status().code(), StatusCode::kIoError);
  EXPECT_EQ(ReadFile((dir / "missing").string()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadFile(dir.string()).status().code(), StatusCode::kIoError);
  const std::string file = (dir / "ten_bytes").string();
  ASSERT_TRUE(WriteFileAtomically(file, "0123456789").ok());
  EXPECT_EQ(ReadFile(file, 10).value(), "0123456789");
  const Status over = ReadFile(file, 9).status();
  EXPECT_NE(over.message().find("ten_bytes"), std::string::npos);
  EXPECT_NE(over.message().find("reading limit"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kselect::text
