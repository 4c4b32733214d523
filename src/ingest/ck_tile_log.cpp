// CK Tile streaming benchmark logs (ck_tile_heuristics.md §6.1, §6.2): shape headers followed by
// the JSON each benchmark binary printed. Also home of the helpers in ck_tile_common.h, which the
// CK JSON and conv CSV parsers share.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text.h"
#include "ingest/ck_tile_common.h"
#include "kselect/ingest.h"
#include "providers/ck/ck_kernel_name.h"

namespace kselect {
namespace ck {

std::string RunIdFor(std::string_view source, const IngestOptions& options) {
  if (!options.run_id.empty()) return options.run_id;
  std::string_view file_name = source;
  const size_t slash = file_name.find_last_of("/\\");
  if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  return text::Md5Hex(file_name).substr(0, 12);
}

RunInfo MakeAmdRunInfo(const std::string& run_id, std::string tool, MeasurementMethod method,
                       const IngestOptions& options) {
  RunInfo run;
  run.run_id = run_id;
  run.tool = std::move(tool);
  run.hardware.vendor = "amd";
  run.hardware.arch = options.arch;
  run.hardware.device_kind = options.device_kind;
  run.method = std::move(method);
  return run;
}

namespace {

std::string Describe(const Json& value) {
  std::string shown = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  return std::string(value.type_name()) + " " + shown;
}

Status TypeError(std::string_view path, std::string_view expected, const Json& value) {
  return ParseError(std::string(path) + ": expected " + std::string(expected) + ", got " +
                    Describe(value));
}

}  // namespace

StatusOr<int64_t> JsonInt(const Json& value, std::string_view path) {
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<int64_t>();
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(u);
    }
  } else if (value.is_number_float()) {
    // Python writes 1024.0 for ints that went through a float; accept exact integers only.
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
      return static_cast<int64_t>(d);
    }
  }
  return TypeError(path, "an integer", value);
}

StatusOr<double> JsonNumber(const Json& value, std::string_view path) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  return TypeError(path, "a number", value);
}

StatusOr<std::string> JsonString(const Json& value, std::string_view path) {
  if (value.is_string()) return value.get<std::string>();
  return TypeError(path, "a string", value);
}

StatusOr<bool> JsonBool(const Json& value, std::string_view path) {
  if (value.is_boolean()) return value.get<bool>();
  // Some writers emit 0/1 for booleans.
  if (value.is_number_integer() && (value.get<int64_t>() == 0 || value.get<int64_t>() == 1)) {
    return value.get<int64_t>() == 1;
  }
  return TypeError(path, "a boolean", value);
}

const Json* Member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string ReplaceNonFiniteLiterals(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size());
  bool in_string = false;
  bool escape = false;
  for (size_t i = 0; i < json_text.size(); ++i) {
    const char c = json_text[i];
    if (in_string) {
      out += c;
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    if (!letter) {
      out += c;
      continue;
    }
    size_t end = i;
    while (end < json_text.size() && ((json_text[end] >= 'A' && json_text[end] <= 'Z') ||
                                      (json_text[end] >= 'a' && json_text[end] <= 'z'))) {
      ++end;
    }
    const std::string_view word = json_text.substr(i, end - i);
    const bool non_finite = word == "NaN" || word == "nan" || word == "Infinity" || word == "inf" ||
                            word == "INF" || word == "NAN";
    if (non_finite) {
      // Drop a sign written right before the literal.
      if (!out.empty() && (out.back() == '-' || out.back() == '+')) out.pop_back();
      out += "null";
    } else {
      out += word;
    }
    i = end - 1;
  }
  return out;
}

StatusOr<Json> ParseJsonText(std::string_view json_text, std::string_view source,
                             int64_t first_line) {
  KSELECT_RETURN_IF_ERROR(text::CheckJsonDepth(json_text, source, first_line));
  try {
    return Json::parse(json_text.begin(), json_text.end());
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based and may point one past the end.
    const size_t offset = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, json_text.size());
    int64_t line = first_line;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (json_text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    std::string message = e.what();
    // nlohmann's text starts "[json.exception.parse_error.101] parse error at line 1, column 2: ";
    // keep only the explanation after it, the position is ours.
    const size_t colon = message.find(": ", message.find("parse error"));
    if (colon != std::string::npos) message = message.substr(colon + 2);
    return ParseError(text::Where(source, line) + ":" + std::to_string(offset - line_start + 1) +
                      ": invalid JSON: " + text::Excerpt(message));
  } catch (const Json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e999") throws out_of_range.406,
    // which carries no position.
    return ParseError(text::Where(source, first_line) +
                      ": invalid JSON: " + text::Excerpt(e.what()));
  }
}

DataType CkTileOutputType(DataType input) {
  if (input == DataType::kF8E4M3 || input == DataType::kF8E5M2) return DataType::kF16;
  return input;
}

double BandwidthGbPerS(const Problem& problem, double latency_ms) {
  if (!std::isfinite(latency_ms) || latency_ms <= 0) return 0;
  // bytes / (ms * 1e-3 s) / 1e9 = bytes / (ms * 1e6)
  return ProblemMinBytes(problem) / (latency_ms * 1e6);
}

void SetValidity(Measurement& m, std::string reason) {
  if (reason.empty()) {
    m.is_valid = true;
    m.invalid_reason.clear();
    m.Validate();
  } else {
    m.is_valid = false;
    m.invalid_reason = std::move(reason);
  }
}

namespace {

std::string Joined(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return std::string(prefix) + "." + std::string(key);
}

// A layout letter from CK's layout_a/b/c values ("row"/"col", "RowMajor"/"ColumnMajor").
StatusOr<char> LayoutLetter(const Json& value, std::string_view path) {
  KSELECT_ASSIGN_OR_RETURN(std::string name, JsonString(value, path));
  const std::string lower = text::ToLower(name);
  if (text::StartsWith(lower, "row")) return 'r';
  if (text::StartsWith(lower, "col")) return 'c';
  return ParseError(std::string(path) + ": '" + name + "' is neither row nor col");
}

}  // namespace

StatusOr<Measurement> ConvertBenchmarkObject(const Json& object, const ObjectContext& context,
                                             std::vector<std::string>& warnings) {
  const std::string& where = context.where;
  auto fail = [&](const Status& status) { return ParseError(where + ": " + status.message()); };
  auto path = [&](std::string_view key) { return Joined(context.path, key); };
  if (!object.is_object()) {
    const std::string object_path = context.path.empty() ? "(top level)" : context.path;
    return fail(TypeError(object_path, "an object", object));
  }

  const Json* name_value = Member(object, "name");
  if (name_value == nullptr) return fail(ParseError(path("name") + ": missing kernel name"));
  StatusOr<std::string> name = JsonString(*name_value, path("name"));
  if (!name.ok()) return fail(name.status());
  StatusOr<CkTileKernelName> parsed_name = ParseCkTileKernelName(*name);
  if (!parsed_name.ok()) return fail(parsed_name.status());

  const Json* problem_json = Member(object, "problem");
  const std::string problem_path = path("problem");
  if (problem_json != nullptr && !problem_json->is_object()) {
    return fail(TypeError(problem_path, "an object", *problem_json));
  }
  auto problem_member = [&](std::string_view key) -> const Json* {
    return problem_json == nullptr ? nullptr : Member(*problem_json, key);
  };

  GemmProblem problem;
  // m, n, k: the problem object first, then the shape header.
  struct Dim {
    std::string_view key;
    int64_t* field;
    int64_t header_value;
  };
  const ShapeHeader* header = context.header;
  const Dim dims[] = {{"m", &problem.m, header ? header->m : 0},
                      {"n", &problem.n, header ? header->n : 0},
                      {"k", &problem.k, header ? header->k : 0}};
  for (const Dim& dim : dims) {
    const std::string dim_path = Joined(problem_path, dim.key);
    if (const Json* value = problem_member(dim.key)) {
      StatusOr<int64_t> parsed = JsonInt(*value, dim_path);
      if (!parsed.ok()) return fail(parsed.status());
      *dim.field = *parsed;
      if (header != nullptr && *parsed != dim.header_value) {
        warnings.push_back(where + ": " + dim_path + "=" + std::to_string(*parsed) +
                           " differs from the shape header's " + std::to_string(dim.header_value) +
                           " (line " + std::to_string(header->line) + "); using the JSON value");
      }
    } else if (header != nullptr) {
      *dim.field = dim.header_value;
    } else {
      return fail(ParseError(dim_path + ": missing, and no shape header precedes this block"));
    }
  }

  int32_t split_k_value = 1;
  if (const Json* split = problem_member("split_k")) {
    StatusOr<int64_t> split_k = JsonInt(*split, Joined(problem_path, "split_k"));
    if (!split_k.ok()) return fail(split_k.status());
    if (*split_k < 1 || *split_k > (int64_t{1} << 20)) {
      return fail(ParseError(Joined(problem_path, "split_k") + ": " + std::to_string(*split_k) +
                             " is not a valid split-K factor"));
    }
    split_k_value = static_cast<int32_t>(*split_k);
  }

  // Element types: problem.dtype_a, else the header, else the kernel name.
  std::string dtype_name = parsed_name->dtype;
  std::string dtype_path = "kernel name";
  if (const Json* value = problem_member("dtype_a")) {
    dtype_path = Joined(problem_path, "dtype_a");
    StatusOr<std::string> s = JsonString(*value, dtype_path);
    if (!s.ok()) return fail(s.status());
    dtype_name = *s;
  } else if (header != nullptr) {
    dtype_path = "shape header";
    dtype_name = header->dtype;
  }
  StatusOr<DataType> dtype = ParseDataType(dtype_name);
  if (!dtype.ok()) return fail(ParseError(dtype_path + ": " + dtype.status().message()));
  StatusOr<DataType> name_dtype = ParseDataType(parsed_name->dtype);
  if (!name_dtype.ok() || *name_dtype != *dtype) {
    return fail(ParseError(dtype_path + " says dtype " + dtype_name + " but kernel '" + *name +
                           "' is " + parsed_name->dtype));
  }
  problem.dtype_a = *dtype;
  problem.dtype_b = *dtype;
  problem.dtype_c = CkTileOutputType(*dtype);
  problem.compute = DataType::kF32;
  struct TypeField {
    std::string_view key;
    DataType* field;
  };
  const TypeField type_fields[] = {{"dtype_b", &problem.dtype_b},
                                   {"dtype_c", &problem.dtype_c},
                                   {"dtype_acc", &problem.compute}};
  for (const TypeField& tf : type_fields) {
    const Json* value = problem_member(tf.key);
    if (value == nullptr) continue;
    const std::string type_path = Joined(problem_path, tf.key);
    StatusOr<std::string> s = JsonString(*value, type_path);
    if (!s.ok()) return fail(s.status());
    StatusOr<DataType> t = ParseDataType(*s);
    if (!t.ok()) return fail(ParseError(type_path + ": " + t.status().message()));
    *tf.field = *t;
  }

  // Layout: layout_a/b/c, else the header, else the kernel name.
  std::string layout_text = parsed_name->layout;
  std::string layout_path = "kernel name";
  const Json* layout_values[] = {problem_member("layout_a"), problem_member("layout_b"),
                                 problem_member("layout_c")};
  const int layouts_present =
      (layout_values[0] != nullptr) + (layout_values[1] != nullptr) + (layout_values[2] != nullptr);
  if (layouts_present == 3) {
    layout_path = Joined(problem_path, "layout_a/b/c");
    layout_text.clear();
    const char* keys[] = {"layout_a", "layout_b", "layout_c"};
    for (int i = 0; i < 3; ++i) {
      StatusOr<char> letter = LayoutLetter(*layout_values[i], Joined(problem_path, keys[i]));
      if (!letter.ok()) return fail(letter.status());
      layout_text += *letter;
    }
  } else if (layouts_present != 0) {
    return fail(ParseError(problem_path + ": has only some of layout_a, layout_b, layout_c"));
  } else if (header != nullptr) {
    layout_path = "shape header";
    layout_text = header->layout;
  }
  StatusOr<GemmLayout> layout = ParseGemmLayout(layout_text);
  if (!layout.ok()) return fail(ParseError(layout_path + ": " + layout.status().message()));
  if (layout_text != parsed_name->layout) {
    return fail(ParseError(layout_path + " says layout " + layout_text + " but kernel '" + *name +
                           "' is " + parsed_name->layout));
  }
  problem.layout = *layout;

  Status valid_problem = problem.Validate();
  if (!valid_problem.ok()) return fail(ParseError("problem: " + valid_problem.message()));

  Measurement m;
  m.op_type = parsed_name->op;
  m.problem = problem;
  auto config = parsed_name->config;
  config.split_k = split_k_value;
  ApplyCkMemPipelinePadding(config);
  m.config = config;
  m.kernel_name = *name;

  std::string reason;
  const Json* perf = Member(object, "perf_result");
  const std::string perf_path = path("perf_result");
  if (perf == nullptr) {
    reason = "no perf_result in the benchmark output";
  } else if (!perf->is_object()) {
    return fail(TypeError(perf_path, "an object", *perf));
  } else {
    struct Figure {
      std::string_view key;
      double* field;
    };
    const Figure figures[] = {{"latency(ms)", &m.latency_ms},
                              {"tflops(TFlops)", &m.tflops},
                              {"bandwidth(GB/s)", &m.bandwidth_gb_s}};
    for (const Figure& figure : figures) {
      const Json* value = Member(*perf, figure.key);
      if (value == nullptr) {
        *figure.field = std::numeric_limits<double>::quiet_NaN();
        if (reason.empty() && figure.key != "bandwidth(GB/s)") {
          reason = Joined(perf_path, figure.key) + " is missing";
        }
        continue;
      }
      StatusOr<double> number = JsonNumber(*value, Joined(perf_path, figure.key));
      if (!number.ok()) return fail(number.status());
      *figure.field = *number;
    }
    if (std::isnan(m.bandwidth_gb_s)) m.bandwidth_gb_s = 0;
  }
  SetValidity(m, reason);
  return m;
}

}  // namespace ck

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsWordChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// "=====" or "-----": CK's rules between shapes.
bool IsSeparatorLine(std::string_view trimmed) {
  return trimmed.find_first_not_of("=-") == std::string_view::npos;
}

// A line that is meant as a shape header: "Shape" then whitespace. It must then match
// Shape\s+\d+:\s+M=(\d+)\s+N=(\d+)\s+K=(\d+)\s+dtype=(\w+)\s+layout=(\w+) (text after it is
// ignored, as CK's unanchored regex does).
bool LooksLikeShapeHeader(std::string_view trimmed) {
  return trimmed.size() > 5 && text::StartsWith(trimmed, "Shape") && IsSpace(trimmed[5]);
}

// Hand-written instead of std::regex: libstdc++'s regex recurses per character and can overflow
// the stack on long lines.
class HeaderCursor {
 public:
  explicit HeaderCursor(std::string_view s) : s_(s) {}
  bool Spaces() {
    const size_t start = pos_;
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
    return pos_ > start;
  }
  bool Literal(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) return false;
    pos_ += lit.size();
    return true;
  }
  std::string_view Run(bool (*pred)(char)) {
    const size_t start = pos_;
    while (pos_ < s_.size() && pred(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // Up to 24 characters from the current position, to show where a header went wrong.
  std::string_view Rest() const {
    std::string_view rest = s_.substr(pos_);
    return rest.size() > 24 ? rest.substr(0, 24) : rest;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

StatusOr<ck::ShapeHeader> ParseShapeHeader(std::string_view trimmed, std::string_view where) {
  HeaderCursor cur(trimmed);
  HeaderCursor mark = cur;  // start of the field being read, for the message
  auto bad = [&](std::string_view expected) {
    return ParseError(std::string(where) + ": malformed shape header: expected " +
                      std::string(expected) + " at '" + std::string(mark.Rest()) + "'");
  };
  cur.Literal("Shape");
  if (!cur.Spaces() || cur.Run(IsDigit).empty() || !cur.Literal(":")) {
    return bad("'Shape <index>:'");
  }
  ck::ShapeHeader header;
  struct Dim {
    std::string_view key;
    int64_t* field;
  };
  const Dim dims[] = {{"M=", &header.m}, {"N=", &header.n}, {"K=", &header.k}};
  for (const Dim& dim : dims) {
    const std::string expected = "'" + std::string(dim.key) + "<integer>'";
    if (!cur.Spaces()) return bad(expected);
    mark = cur;
    if (!cur.Literal(dim.key)) return bad(expected);
    const std::string_view digits = cur.Run(IsDigit);
    if (digits.empty()) return bad(expected);
    StatusOr<int64_t> value = text::ParseInt64(digits);
    if (!value.ok()) {
      return ParseError(std::string(where) + ": shape header " + std::string(dim.key) +
                        std::string(digits) + " is out of range");
    }
    *dim.field = *value;
  }
  mark = cur;
  if (!cur.Spaces() || !cur.Literal("dtype=")) return bad("'dtype=<name>'");
  header.dtype = std::string(cur.Run(IsWordChar));
  if (header.dtype.empty()) return bad("'dtype=<name>'");
  mark = cur;
  if (!cur.Spaces() || !cur.Literal("layout=")) return bad("'layout=<abc>'");
  header.layout = std::string(cur.Run(IsWordChar));
  if (header.layout.empty()) return bad("'layout=<abc>'");

  if (StatusOr<DataType> dtype = ParseDataType(header.dtype); !dtype.ok()) {
    return ParseError(std::string(where) + ": shape header dtype: " + dtype.status().message());
  }
  if (StatusOr<GemmLayout> layout = ParseGemmLayout(header.layout); !layout.ok()) {
    return ParseError(std::string(where) + ": shape header layout: " + layout.status().message());
  }
  return header;
}

// A JSON block being assembled: brace depth tracked across lines, ignoring braces in strings.
struct Block {
  int64_t start_line = 0;
  std::string text;
  int64_t depth = 0;
  bool in_string = false;
  bool escape = false;

  void Add(std::string_view line) {
    text.append(line);
    text += '\n';
    for (char c : line) {
      if (in_string) {
        if (escape) {
          escape = false;
        } else if (c == '\\') {
          escape = true;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        --depth;
        // Text after the closing brace stays in the block and makes it undecodable, as in CK.
        if (depth == 0) return;
      }
    }
  }
};

}  // namespace

StatusOr<IngestResult> ParseCkTileLog(std::string_view text, std::string_view source,
                                      const IngestOptions& options) {
  KSELECT_RETURN_IF_ERROR(text::CheckUtf8(text, source));
  const std::vector<std::string_view> lines = text::SplitLines(text);

  IngestResult result;
  result.lines_read = static_cast<int64_t>(lines.size());
  const std::string run_id = ck::RunIdFor(source, options);
  MeasurementMethod method;
  method.name = "ck_tile.streaming_log";
  // CK's binaries time with HIP events but the log does not say how; it says the figures are
  // averages over `repeat` runs, whose count it does not record.
  method.timer = "unknown";
  method.statistic = "mean";

  std::optional<ck::ShapeHeader> header;
  std::optional<Block> block;
  bool saw_header = false;
  bool saw_block = false;
  int64_t stray_lines = 0;
  int64_t first_stray_line = 0;

  auto finish_block = [&]() -> Status {
    Block done = std::move(*block);
    block.reset();
    const std::string where = text::Where(source, done.start_line);
    StatusOr<ck::Json> json =
        ck::ParseJsonText(ck::ReplaceNonFiniteLiterals(done.text), source, done.start_line);
    if (!json.ok() || !json->is_object()) {
      result.warnings.push_back(
          where + ": skipped undecodable JSON block" +
          (json.ok() ? std::string(": not a JSON object") : ": " + json.status().message()));
      return Status::Ok();
    }
    ck::ObjectContext context{where, "", header ? &*header : nullptr};
    KSELECT_ASSIGN_OR_RETURN(Measurement m,
                             ck::ConvertBenchmarkObject(*json, context, result.warnings));
    m.method = method;
    m.run_id = run_id;
    result.measurements.push_back(std::move(m));
    return Status::Ok();
  };
  auto drop_truncated = [&](std::string_view cut_by) {
    result.warnings.push_back(text::Where(source, block->start_line) +
                              ": skipped truncated JSON block (cut off by " + std::string(cut_by) +
                              ")");
    block.reset();
  };

  for (size_t index = 0; index < lines.size(); ++index) {
    const int64_t line_no = static_cast<int64_t>(index) + 1;
    const std::string_view line = lines[index];
    const std::string_view trimmed = text::Trim(line);
    const bool header_line = LooksLikeShapeHeader(trimmed);

    if (block.has_value()) {
      // A shape header, or a '{' in column 0 (an unindented new block), while a block is open
      // means the open block was cut off; resynchronise there.
      if (header_line) {
        drop_truncated("the shape header at line " + std::to_string(line_no));
      } else if (!line.empty() && line[0] == '{') {
        drop_truncated("a new block at line " + std::to_string(line_no));
      } else {
        block->Add(line);
        if (block->depth <= 0) KSELECT_RETURN_IF_ERROR(finish_block());
        continue;
      }
    }

    if (header_line) {
      KSELECT_ASSIGN_OR_RETURN(header, ParseShapeHeader(trimmed, text::Where(source, line_no)));
      header->line = line_no;
      saw_header = true;
      continue;
    }
    if (text::StartsWith(trimmed, "{")) {
      saw_block = true;
      block.emplace();
      block->start_line = line_no;
      block->Add(line);
      if (block->depth <= 0) KSELECT_RETURN_IF_ERROR(finish_block());
      continue;
    }
    // Everything else ("=====", "Found N kernels", the file's own header lines) carries nothing
    // the rows need. Other text once the shapes began is no part of CK's format: say so (once,
    // with a count), since it may be a block mangled beyond recognition.
    if ((saw_header || saw_block) && !trimmed.empty() && !IsSeparatorLine(trimmed) &&
        !text::StartsWith(trimmed, "Found ")) {
      if (stray_lines++ == 0) first_stray_line = line_no;
    }
  }
  if (block.has_value()) drop_truncated("the end of the file");
  if (stray_lines > 0) {
    result.warnings.push_back(text::Where(source, first_stray_line) + ": ignored " +
                              std::to_string(stray_lines) +
                              " line(s) between blocks that are neither a shape header nor JSON "
                              "(the first is this one)");
  }

  if (!saw_header && !saw_block) {
    return ParseError(std::string(source) +
                      ": no shape header or JSON block found; not a CK Tile streaming log");
  }
  if (result.measurements.empty()) {
    result.warnings.push_back(std::string(source) + ": no benchmark results in the log");
  } else {
    result.runs.push_back(ck::MakeAmdRunInfo(run_id, "ck_tile streaming log", method, options));
  }
  return result;
}

}  // namespace kselect
