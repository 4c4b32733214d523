// Small text helpers shared by the parsers: strict number parsing, splitting, UTF-8 checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/status.h"

namespace kselect::text {

std::string_view Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
std::vector<std::string_view> Split(std::string_view s, char separator);
// Splits on '\n', dropping one trailing '\r' per line; a final line without '\n' is kept.
std::vector<std::string_view> SplitLines(std::string_view s);
std::string ToLower(std::string_view s);

// Whole-string decimal integer (optional sign), failing on junk, empty text or overflow.
StatusOr<int64_t> ParseInt64(std::string_view s);
// Whole-string floating point; "nan"/"inf" parse (callers decide what they mean).
StatusOr<double> ParseDouble(std::string_view s);
StatusOr<bool> ParseBool(std::string_view s);  // true/false/True/False/1/0

// OK when `data` is valid UTF-8; otherwise a ParseError "source:line:column: invalid UTF-8 byte".
Status CheckUtf8(std::string_view data, std::string_view source);

// "source:line: message" — the shape of every parser error.
std::string Where(std::string_view source, int64_t line);

// At most `max_chars` bytes of `text` for an error message, "..." marking a cut (a record or
// value can be megabytes; the message should stay readable).
inline constexpr size_t kExcerptChars = 200;
std::string Excerpt(std::string_view text, size_t max_chars = kExcerptChars);

// How deep JSON arrays and objects may nest. Every file kselect reads nests under 10 levels;
// nlohmann's recursive code (destruction, dump, comparisons) overflows the stack at tens of
// thousands, so a hostile or corrupt file is refused before it is parsed.
inline constexpr int kMaxJsonDepth = 256;
// OK when JSON `text` nests arrays and objects at most `max_depth` deep (brackets inside strings
// do not count); otherwise a ParseError "source:line:column: JSON nested deeper than N levels",
// the line counted from `first_line`.
Status CheckJsonDepth(std::string_view text, std::string_view source, int64_t first_line = 1,
                      int max_depth = kMaxJsonDepth);

// The most a reader reads into memory (after decompression): a bigger file is refused with its
// name instead of ending in an allocation failure that names nothing.
inline constexpr int64_t kMaxReadBytes = int64_t{4} << 30;

// What every reader checks before it opens `path`: kNotFound where there is nothing; kIoError
// naming the path for a folder, for anything but a regular file or /dev/null (a FIFO would block
// open() forever, /dev/zero never ends) and for a file this process may not read (not reported
// as missing or corrupt).
Status CheckReadableFile(const std::string& path);

// Reads a whole file (CheckReadableFile first, at most `max_bytes`); kNotFound / kIoError with
// the path in the message.
StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes = kMaxReadBytes);
// A fresh hidden temporary name beside `path` (same folder, so a rename onto `path` is atomic).
std::string TempPathBeside(const std::string& path);
// Moves the finished folder `staged` (made beside `target`, say by TempPathBeside) to `target`.
// An existing folder there is exchanged with it in one step where the file system can
// (renameat2 RENAME_EXCHANGE; else two renames) and then removed: readers see the old folder or
// the new one, never a mix, and no file of the old one survives.
Status ReplaceFolder(const std::string& staged, const std::string& target);
// Writes `path` through a temporary file in the same folder and a rename, so a failure never
// leaves a partial file under the final name.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// One file of a multi-file output: where it goes and what it holds.
struct OutputFile {
  std::string path;
  std::string contents;
};
// Writes every file to a temporary beside it and renames them into place only once all were
// written, so a failure (say a missing folder for the second) leaves none of them written.
Status WriteFilesAtomically(const std::vector<OutputFile>& files);

// Checked before a command reads anything: `output` (named `option` in the error, "--output")
// may be written only when its folder exists and is writable, it is absent or a regular file (a
// FIFO or device node would be replaced by a regular file), and it is none of `inputs` (same
// device and inode, so symlinks and hard links count too).
Status CheckOutputFile(const std::string& output, std::string_view option,
                       const std::vector<std::string>& inputs);
// The same for an output folder (train --out): absent or a folder, and holding none of `inputs`
// (the command writes files into it by fixed names).
Status CheckOutputFolder(const std::string& folder, std::string_view option,
                         const std::vector<std::string>& inputs);
// Refuses the same file given twice among `inputs` (by device and inode), or a byte-identical copy
// of another input (same size and sha256): its records would be merged with themselves.
Status CheckDistinctInputs(const std::vector<std::string>& inputs);

// sha256 of bytes, lowercase hex (for fingerprints and run ids).
std::string Sha256Hex(std::string_view data);
// md5 of bytes, lowercase hex (CK Tile derives run ids from md5 of the log's file name).
std::string Md5Hex(std::string_view data);
// Current UTC time, ISO 8601 with seconds ("2026-11-22T00:31:33Z"; compact: "20261122T003133Z",
// for run ids).
std::string UtcNowIso8601(bool compact = false);

// FNV-1a 64 of `data`, continuing from `state` (the standard offset basis to start).
inline constexpr uint64_t kFnv1a64Basis = 14695981039346656037ull;
uint64_t Fnv1a64(std::string_view data, uint64_t state = kFnv1a64Basis);
// A deterministic draw in [0, 1) from `key`: FNV-1a 64 of it from `state` (a seed mixed into a
// basis), spread by the splitmix64 finaliser so nearby keys land far apart. Keeping the keys whose
// draw is under p keeps each with probability p, independently of order and of the other keys.
double UnitIntervalDraw(std::string_view key, uint64_t state);

// Report formatting: a fraction as a percentage with two decimals ("96.15%"), and a number with
// `decimals` digits after the point.
std::string Percent(double fraction);
std::string Fixed(double value, int decimals);

}  // namespace kselect::text
