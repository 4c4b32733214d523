// The CSV CK's grouped_conv_full_benchmark.py writes (ck_tile_heuristics.md §7.4): one row per
// successful (kernel, problem) run. Columns are matched by name; the kernel config and the
// direction come from the kernel name.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "ingest/ck_tile_common.h"
#include "kselect/ingest.h"
#include "providers/ck/ck_kernel_name.h"

namespace kselect {
namespace {

// One CSV record with the line it starts on.
struct Record {
  int64_t line = 0;
  std::vector<std::string> fields;
};

// RFC 4180 records: quoted fields may hold commas, doubled quotes and newlines. Blank lines are
// skipped. A quote inside an unquoted field, text after a closing quote, or an unclosed quote at
// the end of the input is an error.
StatusOr<std::vector<Record>> SplitRecords(std::string_view text, std::string_view source) {
  std::vector<Record> records;
  Record current;
  std::string field;
  bool in_quotes = false;
  bool field_was_quoted = false;
  bool after_quote = false;  // just closed a quoted field: only ',' or end of line may follow
  bool record_has_content = false;
  int64_t line = 1;
  int64_t quote_line = 0;
  current.line = 1;

  auto end_field = [&]() {
    current.fields.push_back(std::move(field));
    field.clear();
    field_was_quoted = false;
    after_quote = false;
  };
  auto end_record = [&]() {
    if (record_has_content || !current.fields.empty() || !field.empty() || field_was_quoted) {
      end_field();
      records.push_back(std::move(current));
    }
    current = Record{};
    field.clear();
    field_was_quoted = false;
    after_quote = false;
    record_has_content = false;
  };

  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
          after_quote = true;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '\r' && (i + 1 == text.size() || text[i + 1] == '\n')) continue;
    if (c == '\n') {
      end_record();
      ++line;
      current.line = line;
      continue;
    }
    if (c == ',') {
      record_has_content = true;
      end_field();
      continue;
    }
    if (after_quote) {
      return ParseError(text::Where(source, line) + ": text after a closing quote");
    }
    if (c == '"') {
      if (!field.empty()) {
        return ParseError(text::Where(source, line) + ": quote inside an unquoted field");
      }
      in_quotes = true;
      field_was_quoted = true;
      record_has_content = true;
      quote_line = line;
      continue;
    }
    field += c;
    record_has_content = true;
  }
  if (in_quotes) {
    return ParseError(text::Where(source, quote_line) + ": quoted field is never closed");
  }
  end_record();
  // A record that is only whitespace is a blank line.
  std::erase_if(records, [](const Record& r) {
    return r.fields.size() == 1 && text::Trim(r.fields[0]).empty();
  });
  return records;
}

enum class Column {
  kKernel,
  kProblemIdx,
  kN,
  kC,
  kK,
  kG,
  kDi,
  kHi,
  kWi,
  kZ,
  kY,
  kX,
  kStrideD,
  kStrideH,
  kStrideW,
  kPadD,
  kPadH,
  kPadW,
  kDilationD,
  kDilationH,
  kDilationW,
  kLatencyMs,
  kTflops,
  kNonZero,
  kCount
};

struct ColumnSpec {
  std::string_view name;
  Column column;
  bool required;
};

// §7.4's columns; Di, Z and the *_d columns are absent from 2D-only files.
constexpr std::array<ColumnSpec, static_cast<size_t>(Column::kCount)> kColumns = {{
    {"kernel", Column::kKernel, true},
    {"problem_idx", Column::kProblemIdx, false},
    {"N", Column::kN, true},
    {"C", Column::kC, true},
    {"K", Column::kK, true},
    {"G", Column::kG, true},
    {"Di", Column::kDi, false},
    {"Hi", Column::kHi, true},
    {"Wi", Column::kWi, true},
    {"Z", Column::kZ, false},
    {"Y", Column::kY, true},
    {"X", Column::kX, true},
    {"stride_d", Column::kStrideD, false},
    {"stride_h", Column::kStrideH, false},
    {"stride_w", Column::kStrideW, false},
    {"pad_d", Column::kPadD, false},
    {"pad_h", Column::kPadH, false},
    {"pad_w", Column::kPadW, false},
    {"dilation_d", Column::kDilationD, false},
    {"dilation_h", Column::kDilationH, false},
    {"dilation_w", Column::kDilationW, false},
    {"latency_ms", Column::kLatencyMs, true},
    {"tflops", Column::kTflops, true},
    {"non_zero", Column::kNonZero, false},
}};

std::string_view ColumnName(Column c) {
  return kColumns[static_cast<size_t>(c)].name;
}

// The kernel name's config and direction. A name without a variant token
// ("grouped_conv_bf16_2d_...") takes the direction from the options.
StatusOr<CkConvKernelName> KernelFromName(const std::string& name, const IngestOptions& options,
                                          const std::string& where) {
  StatusOr<CkConvKernelName> parsed = ParseCkConvKernelName(name);
  if (parsed.ok()) {
    if (options.conv_direction.has_value() && *options.conv_direction != parsed->direction) {
      return ParseError(where + ": kernel '" + name + "' is " +
                        std::string(ConvDirectionName(parsed->direction)) +
                        " but the conv direction option says " +
                        std::string(ConvDirectionName(*options.conv_direction)));
    }
    return parsed;
  }
  constexpr std::string_view kPrefix = "grouped_conv_";
  if (text::StartsWith(name, kPrefix)) {
    const std::string_view rest = std::string_view(name).substr(kPrefix.size());
    const std::string_view first = rest.substr(0, rest.find('_'));
    if (ParseDataType(first).ok()) {
      if (!options.conv_direction.has_value()) {
        return ParseError(where + ": kernel '" + name +
                          "' does not name its direction (fwd, bwd_data, bwd_weight) and no conv "
                          "direction was given");
      }
      const std::string with_direction = std::string(kPrefix) +
                                         std::string(ConvDirectionName(*options.conv_direction)) +
                                         "_" + std::string(rest);
      StatusOr<CkConvKernelName> retry = ParseCkConvKernelName(with_direction);
      if (retry.ok()) return retry;
    }
  }
  return ParseError(where + ": " + parsed.status().message());
}

}  // namespace

StatusOr<IngestResult> ParseCkConvCsv(std::string_view text, std::string_view source,
                                      const IngestOptions& options) {
  KSELECT_RETURN_IF_ERROR(text::CheckUtf8(text, source));
  KSELECT_ASSIGN_OR_RETURN(std::vector<Record> records, SplitRecords(text, source));
  IngestResult result;
  for (char c : text) result.lines_read += c == '\n';
  if (!text.empty() && text.back() != '\n') ++result.lines_read;
  if (records.empty()) {
    return ParseError(std::string(source) + ": empty CSV: a header row is required");
  }

  // Header: every column known, none twice, all required ones present.
  const Record& header = records.front();
  std::array<int, static_cast<size_t>(Column::kCount)> index;
  index.fill(-1);
  std::vector<std::string> unknown;
  for (size_t f = 0; f < header.fields.size(); ++f) {
    const std::string_view name = text::Trim(header.fields[f]);
    const ColumnSpec* spec = nullptr;
    for (const ColumnSpec& s : kColumns) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) {
      unknown.push_back("'" + std::string(name) + "'");
      continue;
    }
    int& slot = index[static_cast<size_t>(spec->column)];
    if (slot >= 0) {
      return ParseError(text::Where(source, header.line) + ": column '" + std::string(name) +
                        "' appears twice");
    }
    slot = static_cast<int>(f);
  }
  if (!unknown.empty()) {
    // The first few, each cut short: a file of 100,000 stray columns makes a message of a line.
    constexpr size_t kNamed = 8;
    std::string list;
    for (size_t i = 0; i < unknown.size() && i < kNamed; ++i) {
      list += (list.empty() ? "" : ", ") + text::Excerpt(unknown[i], 40);
    }
    if (unknown.size() > kNamed)
      list += " and " + std::to_string(unknown.size() - kNamed) + " more";
    return ParseError(text::Where(source, header.line) + ": unknown column(s) " + list +
                      " (not a CK grouped-conv benchmark CSV?)");
  }
  std::string missing;
  for (const ColumnSpec& s : kColumns) {
    if (s.required && index[static_cast<size_t>(s.column)] < 0) {
      missing += (missing.empty() ? "'" : ", '") + std::string(s.name) + "'";
    }
  }
  if (!missing.empty()) {
    return ParseError(text::Where(source, header.line) + ": missing required column(s) " + missing);
  }

  const std::string run_id = ck::RunIdFor(source, options);
  MeasurementMethod method;
  method.name = "ck_conv.full_benchmark";
  method.timer = "unknown";
  method.statistic = "unknown";  // the CSV does not say how ms was reduced over repeats

  for (size_t r = 1; r < records.size(); ++r) {
    const Record& record = records[r];
    const std::string where = text::Where(source, record.line);
    if (record.fields.size() != header.fields.size()) {
      return ParseError(where + ": expected " + std::to_string(header.fields.size()) +
                        " fields, found " + std::to_string(record.fields.size()));
    }
    auto raw = [&](Column c) -> std::optional<std::string_view> {
      const int i = index[static_cast<size_t>(c)];
      if (i < 0) return std::nullopt;
      return text::Trim(record.fields[static_cast<size_t>(i)]);
    };
    auto integer = [&](Column c, int64_t fallback) -> StatusOr<int64_t> {
      std::optional<std::string_view> s = raw(c);
      if (!s.has_value()) return fallback;
      StatusOr<int64_t> v = text::ParseInt64(*s);
      if (!v.ok()) {
        return ParseError(where + ": column '" + std::string(ColumnName(c)) + "': '" +
                          std::string(*s) + "' is not an integer");
      }
      return *v;
    };
    auto number = [&](Column c) -> StatusOr<double> {
      std::string_view s = *raw(c);
      StatusOr<double> v = text::ParseDouble(s);
      if (!v.ok()) {
        return ParseError(where + ": column '" + std::string(ColumnName(c)) + "': '" +
                          std::string(s) + "' is not a number");
      }
      return *v;
    };

    const std::string kernel(*raw(Column::kKernel));
    if (kernel.empty()) return ParseError(where + ": column 'kernel' is empty");
    KSELECT_ASSIGN_OR_RETURN(CkConvKernelName name, KernelFromName(kernel, options, where));
    StatusOr<DataType> dtype = ParseDataType(name.dtype);
    if (!dtype.ok()) return ParseError(where + ": " + dtype.status().message());

    ConvProblem problem;
    struct IntField {
      Column column;
      int64_t* field;
      int64_t fallback;
    };
    const IntField fields[] = {
        {Column::kN, &problem.n, 0},
        {Column::kC, &problem.c, 0},
        {Column::kK, &problem.k, 0},
        {Column::kG, &problem.g, 0},
        {Column::kDi, &problem.di, 1},
        {Column::kHi, &problem.hi, 0},
        {Column::kWi, &problem.wi, 0},
        {Column::kZ, &problem.z, 1},
        {Column::kY, &problem.y, 0},
        {Column::kX, &problem.x, 0},
        {Column::kStrideD, &problem.stride_d, 1},
        {Column::kStrideH, &problem.stride_h, 1},
        {Column::kStrideW, &problem.stride_w, 1},
        {Column::kPadD, &problem.pad_d, 0},
        {Column::kPadH, &problem.pad_h, 0},
        {Column::kPadW, &problem.pad_w, 0},
        {Column::kDilationD, &problem.dilation_d, 1},
        {Column::kDilationH, &problem.dilation_h, 1},
        {Column::kDilationW, &problem.dilation_w, 1},
    };
    for (const IntField& f : fields) {
      KSELECT_ASSIGN_OR_RETURN(*f.field, integer(f.column, f.fallback));
    }
    KSELECT_ASSIGN_OR_RETURN(int64_t problem_idx, integer(Column::kProblemIdx, 0));
    (void)problem_idx;  // checked for form only; rows are joined on dimensions, never on it
    // non_zero is 0/1, or True/False when Python's csv module wrote a bool.
    int64_t non_zero = 1;
    if (std::optional<std::string_view> s = raw(Column::kNonZero); s.has_value()) {
      if (StatusOr<bool> b = text::ParseBool(*s); b.ok()) {
        non_zero = *b ? 1 : 0;
      } else {
        KSELECT_ASSIGN_OR_RETURN(non_zero, integer(Column::kNonZero, 1));
      }
    }
    problem.direction = name.direction;
    problem.layout = ConvLayout::kChannelsLast;
    problem.dtype = *dtype;
    problem.compute = DataType::kF32;
    Status valid_problem = problem.Validate();
    if (!valid_problem.ok()) return ParseError(where + ": " + valid_problem.message());
    if (name.spatial_dims == 2 && problem.Is3d()) {
      return ParseError(where + ": kernel '" + kernel + "' is 2d but the problem is 3D (" +
                        problem.ToString() + ")");
    }

    Measurement m;
    m.op_type = "grouped_conv";
    m.problem = problem;
    m.config = name.config;
    m.kernel_name = kernel;
    KSELECT_ASSIGN_OR_RETURN(m.latency_ms, number(Column::kLatencyMs));
    KSELECT_ASSIGN_OR_RETURN(m.tflops, number(Column::kTflops));
    m.bandwidth_gb_s = ck::BandwidthGbPerS(m.problem, m.latency_ms);
    m.method = method;
    m.run_id = run_id;
    // CK keeps all-zero outputs as valid rows; a kernel that wrote nothing did not run correctly.
    ck::SetValidity(m, non_zero == 0 ? "output was all zeros" : "");
    result.measurements.push_back(std::move(m));
  }

  if (result.measurements.empty()) {
    result.warnings.push_back(std::string(source) + ": header only, no benchmark rows");
  } else {
    result.runs.push_back(
        ck::MakeAmdRunInfo(run_id, "ck grouped_conv_full_benchmark.py", method, options));
  }
  return result;
}

}  // namespace kselect
