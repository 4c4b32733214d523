#include "kselect/ingest.h"

#include <array>

#include "core/text.h"

namespace kselect {
namespace {

struct FormatEntry {
  InputFormat format;
  std::string_view name;
  StatusOr<IngestResult> (*parse)(std::string_view, std::string_view, const IngestOptions&);
};

// The parser registry: one row per input format.
constexpr std::array<FormatEntry, 4> kFormats = {{
    {InputFormat::kKselectJsonl, "kselect-jsonl", &ParseKselectJsonl},
    {InputFormat::kCkTileLog, "ck-log", &ParseCkTileLog},
    {InputFormat::kCkTileJson, "ck-json", &ParseCkTileJson},
    {InputFormat::kCkConvCsv, "ck-conv-csv", &ParseCkConvCsv},
}};

const FormatEntry& EntryOf(InputFormat format) {
  for (const auto& e : kFormats) {
    if (e.format == format) return e;
  }
  KSELECT_CHECK_MSG(false, "unregistered input format");
  return kFormats[0];
}

}  // namespace

std::string_view InputFormatName(InputFormat format) {
  return EntryOf(format).name;
}

StatusOr<InputFormat> ParseInputFormat(std::string_view name) {
  for (const auto& e : kFormats) {
    if (e.name == name) return e.format;
  }
  return InvalidArgumentError("unknown input format '" + std::string(name) +
                              "' (expected kselect-jsonl, ck-log, ck-json or ck-conv-csv)");
}

StatusOr<InputFormat> DetectInputFormat(std::string_view data, std::string_view source) {
  const std::string_view trimmed = text::Trim(data);
  if (trimmed.empty()) return ParseError(std::string(source) + ": file is empty");
  const std::string_view first_line = text::Trim(trimmed.substr(0, trimmed.find('\n')));
  const bool kselect_record =
      first_line.find("\"type\":\"run\"") != std::string_view::npos ||
      first_line.find("\"type\":\"measurement\"") != std::string_view::npos ||
      first_line.find("kselect.bench.jsonl") != std::string_view::npos;
  if (first_line.front() == '{' && kselect_record) {
    return InputFormat::kKselectJsonl;
  }
  if (first_line.front() == '{' || first_line.front() == '[') return InputFormat::kCkTileJson;
  if (trimmed.find("Shape ") != std::string_view::npos &&
      (trimmed.find("M=") != std::string_view::npos || text::StartsWith(first_line, "CK Tile"))) {
    return InputFormat::kCkTileLog;
  }
  if (text::StartsWith(first_line, "CK Tile") || text::StartsWith(first_line, "====")) {
    return InputFormat::kCkTileLog;
  }
  if (first_line.find(',') != std::string_view::npos &&
      first_line.find("kernel") != std::string_view::npos) {
    return InputFormat::kCkConvCsv;
  }
  return ParseError(std::string(source) +
                    ": cannot tell the input format from the first line; pass --format "
                    "(kselect-jsonl, ck-log, ck-json, ck-conv-csv)");
}

StatusOr<IngestResult> IngestFile(const std::string& path, std::optional<InputFormat> format,
                                  const IngestOptions& options) {
  KSELECT_ASSIGN_OR_RETURN(std::string data, text::ReadFile(path));
  if (text::Trim(data).empty()) return ParseError(path + ": file is empty");
  KSELECT_RETURN_IF_ERROR(text::CheckUtf8(data, path));
  if (!format) {
    KSELECT_ASSIGN_OR_RETURN(format, DetectInputFormat(data, path));
  }
  return EntryOf(*format).parse(data, path, options);
}

}  // namespace kselect
