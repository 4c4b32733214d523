#include "core/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

namespace kselect::text {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(separator, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string_view> SplitLines(std::string_view s) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view line = s.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

StatusOr<int64_t> ParseInt64(std::string_view s) {
  std::string_view t = Trim(s);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec == std::errc::invalid_argument || ptr != t.data() + t.size()) {
    return ParseError("'" + std::string(s) + "' is not an integer");
  }
  if (ec == std::errc::result_out_of_range) {
    return ParseError("'" + std::string(s) + "' does not fit in a 64-bit integer");
  }
  return value;
}

namespace {

// The power of ten of the first non-zero digit of a decimal number that from_chars read whole
// ("123.4" -> 2, "0.05" -> -2, "5e-3" -> -3), saturating far past any double's range; 0 when every
// digit is zero.
int64_t DecimalExponent(std::string_view number) {
  constexpr int64_t kFar = int64_t{1} << 40;
  size_t i = number.empty() || number.front() != '-' ? 0 : 1;
  int64_t leading = -1;  // exponent of the first significant digit, from the digits alone
  int64_t integer_digits = 0;
  bool found = false;
  for (; i < number.size() && number[i] >= '0' && number[i] <= '9'; ++i) {
    if (!found && number[i] != '0') {
      found = true;
      integer_digits = 0;
    }
    if (found) ++integer_digits;
  }
  if (found) leading = integer_digits - 1;
  if (i < number.size() && number[i] == '.') {
    int64_t position = 0;
    for (++i; i < number.size() && number[i] >= '0' && number[i] <= '9'; ++i) {
      --position;
      if (!found && number[i] != '0') {
        found = true;
        leading = position;
      }
    }
  }
  if (!found) return 0;
  int64_t exponent = 0;
  if (i < number.size() && (number[i] == 'e' || number[i] == 'E')) {
    ++i;
    const bool negative = i < number.size() && number[i] == '-';
    if (i < number.size() && (number[i] == '-' || number[i] == '+')) ++i;
    for (; i < number.size() && number[i] >= '0' && number[i] <= '9'; ++i) {
      exponent = std::min(exponent * 10 + (number[i] - '0'), kFar);
    }
    if (negative) exponent = -exponent;
  }
  return std::clamp(leading, -kFar, kFar) + exponent;
}

}  // namespace

StatusOr<double> ParseDouble(std::string_view s) {
  std::string_view t = Trim(s);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double value = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec == std::errc::invalid_argument || ptr != t.data() + t.size()) {
    return ParseError("'" + std::string(s) + "' is not a number");
  }
  if (ec == std::errc::result_out_of_range) {
    // Overflow reads as infinity, underflow as zero: validation then marks the row invalid.
    // Which one it is follows from the decimal exponent of the first significant digit, with or
    // without an exponent part (1 followed by 309 zeros overflows as 1e309 does).
    value = DecimalExponent(t) > 0 ? HUGE_VAL : 0.0;
    if (!t.empty() && t.front() == '-') value = -value;
  }
  return value;
}

StatusOr<bool> ParseBool(std::string_view s) {
  const std::string t = ToLower(Trim(s));
  if (t == "true" || t == "1") return true;
  if (t == "false" || t == "0") return false;
  return ParseError("'" + std::string(s) + "' is not a boolean (true/false)");
}

Status CheckUtf8(std::string_view data, std::string_view source) {
  int64_t line = 1;
  int64_t column = 1;
  size_t i = 0;
  while (i < data.size()) {
    const auto c = static_cast<unsigned char>(data[i]);
    size_t length = 0;
    uint32_t min_code = 0;
    if (c < 0x80) {
      length = 1;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2;
      min_code = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3;
      min_code = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4;
      min_code = 0x10000;
    }
    bool valid = length > 0 && i + length <= data.size();
    uint32_t code = length == 1 ? c : (c & (0xFF >> (length + 1)));
    for (size_t j = 1; valid && j < length; ++j) {
      const auto cont = static_cast<unsigned char>(data[i + j]);
      if ((cont & 0xC0) != 0x80) valid = false;
      code = (code << 6) | (cont & 0x3F);
    }
    if (valid && length > 1 &&
        (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))) {
      valid = false;
    }
    if (!valid) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", c);
      return ParseError(std::string(source) + ":" + std::to_string(line) + ":" +
                        std::to_string(column) + ": invalid UTF-8 byte " + hex);
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
  return Status::Ok();
}

std::string Where(std::string_view source, int64_t line) {
  return std::string(source) + ":" + std::to_string(line);
}

std::string Excerpt(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  size_t cut = max_chars;
  // Do not split a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

Status CheckJsonDepth(std::string_view text, std::string_view source, int64_t first_line,
                      int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  int64_t line = first_line;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return ParseError(Where(source, line) + ":" + std::to_string(i - line_start + 1) +
                          ": JSON nested deeper than " + std::to_string(max_depth) +
                          " levels (no kselect or CK file nests so deep: the file is corrupt)");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

Status CheckReadableFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return IoError(path + ": " + ec.message());  // a symlink loop, a name too long, ...
  }
  if (!std::filesystem::exists(status)) return NotFoundError(path + ": no such file");
  if (std::filesystem::is_directory(status)) return IoError(path + ": is a directory");
  // /dev/null reads as an empty file, which is how it is meant.
  const bool dev_null = std::filesystem::is_character_file(status) &&
                        std::filesystem::canonical(path, ec) == "/dev/null";
  if (!std::filesystem::is_regular_file(status) && !dev_null) {
    return IoError(path + ": not a regular file (a FIFO, a device or a socket): refused");
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return IoError(path + ": cannot be read: " + std::strerror(errno));
  }
  return Status::Ok();
}

StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes) {
  KSELECT_RETURN_IF_ERROR(CheckReadableFile(path));
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && static_cast<int64_t>(size) > max_bytes) {
    return IoError(path + ": " + std::to_string(size) + " bytes, over the reading limit of " +
                   std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open for reading: " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return buffer.str();
}

std::string TempPathBeside(const std::string& path) {
  const std::filesystem::path target(path);
  std::random_device rd;
  return (target.parent_path() / ("." + target.filename().string() + ".tmp." +
                                  std::to_string(::getpid()) + "." + std::to_string(rd())))
      .string();
}

Status ReplaceFolder(const std::string& staged, const std::string& target) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(target, ec)) {
    fs::rename(staged, target, ec);
    if (ec) return IoError(target + ": rename from " + staged + " failed: " + ec.message());
    return Status::Ok();
  }
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
    // A file system without exchange: the old folder steps aside first.
    const std::string aside = TempPathBeside(target);
    fs::rename(target, aside, ec);
    if (ec) return IoError(target + ": cannot move the old folder aside: " + ec.message());
    fs::rename(staged, target, ec);
    if (ec) {
      std::error_code ignored;
      fs::rename(aside, target, ignored);
      return IoError(target + ": rename from " + staged + " failed: " + ec.message());
    }
    fs::remove_all(aside, ec);
    return Status::Ok();
  }
  fs::remove_all(staged, ec);  // now the old folder
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return IoError(path + ": folder " + dir.string() + " does not exist");
  const fs::path temp = TempPathBeside(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError(temp.string() + ": cannot open for writing: " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      out.close();
      fs::remove(temp, ec);
      return IoError(temp.string() + ": write failed");
    }
  }
  fs::rename(temp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    return IoError(path + ": rename from temporary file failed: " + ec.message());
  }
  return Status::Ok();
}

Status WriteFilesAtomically(const std::vector<OutputFile>& files) {
  namespace fs = std::filesystem;
  std::vector<std::string> temps;
  auto remove_temps = [&temps] {
    std::error_code ignored;
    for (const std::string& temp : temps) fs::remove(temp, ignored);
  };
  for (const OutputFile& file : files) {
    const fs::path target(file.path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      remove_temps();
      return IoError(file.path + ": folder " + dir.string() + " does not exist (nothing written)");
    }
    temps.push_back(TempPathBeside(file.path));
    std::ofstream out(temps.back(), std::ios::binary | std::ios::trunc);
    if (out) {
      out.write(file.contents.data(), static_cast<std::streamsize>(file.contents.size()));
      out.flush();
    }
    if (!out) {
      const std::string reason = std::strerror(errno);
      out.close();
      remove_temps();
      return IoError(file.path + ": cannot write a temporary file beside it: " + reason +
                     " (nothing written)");
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    fs::rename(temps[i], files[i].path, ec);
    if (ec) {
      temps.erase(temps.begin(), temps.begin() + static_cast<std::ptrdiff_t>(i));
      remove_temps();
      return IoError(files[i].path + ": rename from temporary file failed: " + ec.message());
    }
  }
  return Status::Ok();
}

namespace {

// The file a path names, following symlinks; nullopt when it does not exist.
std::optional<std::pair<dev_t, ino_t>> FileIdentity(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return std::make_pair(info.st_dev, info.st_ino);
}

// The first of `inputs` that is the same file as `path`, or nullptr.
const std::string* SameFileAmong(const std::string& path, const std::vector<std::string>& inputs) {
  const auto identity = FileIdentity(path);
  if (!identity) return nullptr;
  for (const std::string& input : inputs) {
    if (FileIdentity(input) == identity) return &input;
  }
  return nullptr;
}

Status CheckFolderWritable(const std::filesystem::path& dir, const std::string& path,
                           std::string_view option) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return IoError(std::string(option) + " " + path + ": folder " + dir.string() +
                   " does not exist");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return IoError(std::string(option) + " " + path + ": folder " + dir.string() +
                   " is not writable");
  }
  return Status::Ok();
}

}  // namespace

Status CheckOutputFile(const std::string& output, std::string_view option,
                       const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  if (const std::string* input = SameFileAmong(output, inputs)) {
    return InvalidArgumentError(std::string(option) + " " + output +
                                " is the same file as the input " + *input +
                                ": writing it would replace the data being read; choose "
                                "another output path");
  }
  std::error_code ec;
  const fs::file_status status = fs::status(output, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    return InvalidArgumentError(std::string(option) + " " + output +
                                (fs::is_directory(status) ? " is a folder"
                                                          : " is not a regular file (a FIFO, "
                                                            "device or socket)") +
                                ": it would be replaced; give a file path");
  }
  const fs::path target(output);
  return CheckFolderWritable(target.has_parent_path() ? target.parent_path() : fs::path("."),
                             output, option);
}

Status CheckOutputFolder(const std::string& folder, std::string_view option,
                         const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(folder, ec);
  if (fs::exists(status) && !fs::is_directory(status)) {
    return InvalidArgumentError(std::string(option) + " " + folder +
                                " exists and is not a folder: give a folder path");
  }
  if (fs::exists(status)) {
    for (const std::string& input : inputs) {
      const fs::path parent =
          fs::path(input).has_parent_path() ? fs::path(input).parent_path() : fs::path(".");
      if (FileIdentity(parent.string()) == FileIdentity(folder)) {
        return InvalidArgumentError(std::string(option) + " " + folder + " holds the input " +
                                    input +
                                    ": the command writes its files there; choose another folder");
      }
    }
    if (::access(folder.c_str(), W_OK) != 0) {
      return IoError(std::string(option) + " " + folder + ": folder is not writable");
    }
    return Status::Ok();
  }
  // Absent: its nearest existing ancestor must be writable for the folder to be made.
  fs::path ancestor = fs::absolute(folder, ec).parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, ec) && ancestor != ancestor.root_path()) {
    ancestor = ancestor.parent_path();
  }
  return CheckFolderWritable(ancestor, folder, option);
}

Status CheckDistinctInputs(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  // sha256 of each input whose size another input shares, read only when needed: a copy under
  // another name or inode double-counts its records just as the same path does.
  std::vector<std::optional<std::string>> digests(inputs.size());
  auto digest = [&](size_t i) -> const std::optional<std::string>& {
    if (!digests[i]) {
      auto data = ReadFile(inputs[i]);
      if (data.ok()) digests[i] = Sha256Hex(*data);
    }
    return digests[i];
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto identity = FileIdentity(inputs[i]);
    if (!identity) continue;
    std::error_code ec;
    const auto size = fs::file_size(inputs[i], ec);
    for (size_t j = 0; j < i; ++j) {
      if (FileIdentity(inputs[j]) == identity) {
        return InvalidArgumentError(
            "input " + inputs[i] + " is the same file as input " + inputs[j] +
            ": its records would be merged with themselves (pass --allow-duplicates if that is "
            "meant)");
      }
      std::error_code other_ec;
      if (ec || fs::file_size(inputs[j], other_ec) != size || other_ec) continue;
      if (digest(i) && digest(i) == digest(j)) {
        return InvalidArgumentError("input " + inputs[i] + " is a byte-identical copy of input " +
                                    inputs[j] + " (sha256 " + *digest(i) +
                                    "): its records would be merged with themselves (pass "
                                    "--allow-duplicates if that is meant)");
      }
    }
  }
  return Status::Ok();
}

namespace {

std::string ToHex(const uint8_t* bytes, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

uint32_t RotateRight(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}
uint32_t RotateLeft(uint32_t x, int n) {
  return (x << n) | (x >> (32 - n));
}

// Pads a message the way MD5 and SHA-256 both do: 0x80, zeros, then the bit length (little-endian
// for MD5, big-endian for SHA-256), to a multiple of 64 bytes.
std::string PadMessage(std::string_view data, bool big_endian_length) {
  std::string msg(data);
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  msg += static_cast<char>(0x80);
  while (msg.size() % 64 != 56) msg += '\0';
  for (int i = 0; i < 8; ++i) {
    const int shift = big_endian_length ? (56 - 8 * i) : (8 * i);
    msg += static_cast<char>((bits >> shift) & 0xFF);
  }
  return msg;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  static constexpr uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
      0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
      0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
      0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
      0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
      0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
      0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
      0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const std::string msg = PadMessage(data, true);
  for (size_t chunk = 0; chunk < msg.size(); chunk += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const uint8_t*>(msg.data() + chunk + 4 * i);
      w[i] = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = RotateRight(w[i - 15], 7) ^ RotateRight(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = RotateRight(w[i - 2], 17) ^ RotateRight(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t s1 = RotateRight(e, 6) ^ RotateRight(e, 11) ^ RotateRight(e, 25);
      const uint32_t ch = (e & f) ^ (~e & g);
      const uint32_t t1 = hh + s1 + ch + k[i] + w[i];
      const uint32_t s0 = RotateRight(a, 2) ^ RotateRight(a, 13) ^ RotateRight(a, 22);
      const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const uint32_t t2 = s0 + maj;
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  uint8_t out[32];
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h[i] >> (24 - 8 * j));
  }
  return ToHex(out, 32);
}

std::string Md5Hex(std::string_view data) {
  static constexpr int s[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
  uint32_t k[64];
  for (int i = 0; i < 64; ++i) {
    k[i] = static_cast<uint32_t>(std::floor(std::fabs(std::sin(i + 1.0)) * 4294967296.0));
  }
  uint32_t a0 = 0x67452301, b0 = 0xefcdab89, c0 = 0x98badcfe, d0 = 0x10325476;
  const std::string msg = PadMessage(data, false);
  for (size_t chunk = 0; chunk < msg.size(); chunk += 64) {
    uint32_t m[16];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const uint8_t*>(msg.data() + chunk + 4 * i);
      m[i] =
          uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
    }
    uint32_t a = a0, b = b0, c = c0, d = d0;
    for (int i = 0; i < 64; ++i) {
      uint32_t f;
      int g;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      f = f + a + k[i] + m[g];
      a = d;
      d = c;
      c = b;
      b = b + RotateLeft(f, s[i]);
    }
    a0 += a;
    b0 += b;
    c0 += c;
    d0 += d;
  }
  uint8_t out[16];
  const uint32_t words[4] = {a0, b0, c0, d0};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(words[i] >> (8 * j));
  }
  return ToHex(out, 16);
}

std::string UtcNowIso8601(bool compact) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

uint64_t Fnv1a64(std::string_view data, uint64_t state) {
  for (const unsigned char c : data) {
    state ^= c;
    state *= 1099511628211ull;
  }
  return state;
}

double UnitIntervalDraw(std::string_view key, uint64_t state) {
  uint64_t h = Fnv1a64(key, state);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", 100.0 * fraction);
  return buf;
}

std::string Fixed(double value, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

}  // namespace kselect::text
