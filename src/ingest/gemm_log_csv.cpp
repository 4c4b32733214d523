// Plain CSV: a header row naming columns, one GEMM per row.
#include "ingest/gemm_log_parse.h"

namespace kselect::gemm_log {
namespace {

using nlohmann::json;

enum class CsvColumn {
  kM,
  kN,
  kK,
  kBatch,
  kTransA,
  kTransB,
  kLayout,
  kDtype,
  kA,
  kB,
  kC,
  kCompute,
  kAlpha,
  kBeta,
  kCalls,
  kLda,
  kLdb,
  kLdc,
  kEpilogue,
  kIgnored
};

struct CsvColumnName {
  std::string_view name;
  CsvColumn column;
};
constexpr std::array<CsvColumnName, 21> kCsvColumns = {{
    {"m", CsvColumn::kM},
    {"n", CsvColumn::kN},
    {"k", CsvColumn::kK},
    {"batch", CsvColumn::kBatch},
    {"transa", CsvColumn::kTransA},
    {"transb", CsvColumn::kTransB},
    {"layout", CsvColumn::kLayout},
    {"dtype", CsvColumn::kDtype},
    {"a", CsvColumn::kA},
    {"b", CsvColumn::kB},
    {"c", CsvColumn::kC},
    {"compute", CsvColumn::kCompute},
    {"alpha", CsvColumn::kAlpha},
    {"beta", CsvColumn::kBeta},
    {"calls", CsvColumn::kCalls},
    {"lda", CsvColumn::kLda},
    {"ldb", CsvColumn::kLdb},
    {"ldc", CsvColumn::kLdc},
    {"epilogue", CsvColumn::kEpilogue},
    // kselect's shape files (shapes/*.csv) read as logs of one call per shape.
    {"regime", CsvColumn::kIgnored},
    {"family", CsvColumn::kIgnored},
}};

std::string CsvColumnList() {
  std::string list;
  for (const CsvColumnName& c : kCsvColumns)
    list += (list.empty() ? "" : ",") + std::string(c.name);
  return list;
}

std::string_view Unquote(std::string_view field) {
  field = text::Trim(field);
  if (field.size() >= 2 && field.front() == '"' && field.back() == '"') {
    field = field.substr(1, field.size() - 2);
  }
  return field;
}

StatusOr<std::vector<CsvColumn>> ReadCsvHeader(std::string_view line) {
  std::vector<CsvColumn> columns;
  for (const std::string_view raw : text::Split(line, ',')) {
    const std::string name = text::ToLower(Unquote(raw));
    const auto it = std::find_if(kCsvColumns.begin(), kCsvColumns.end(),
                                 [&](const CsvColumnName& c) { return c.name == name; });
    if (it == kCsvColumns.end()) {
      return ParseError("unknown column '" + text::Excerpt(name, 40) +
                        "' (known: " + CsvColumnList() + ")");
    }
    if (it->column != CsvColumn::kIgnored &&
        std::find(columns.begin(), columns.end(), it->column) != columns.end()) {
      return ParseError("column '" + name + "' given twice");
    }
    columns.push_back(it->column);
  }
  auto has = [&](CsvColumn c) {
    return std::find(columns.begin(), columns.end(), c) != columns.end();
  };
  if (!has(CsvColumn::kM) || !has(CsvColumn::kN) || !has(CsvColumn::kK)) {
    return ParseError("the header must name columns m, n and k (known: " + CsvColumnList() + ")");
  }
  if (has(CsvColumn::kTransA) != has(CsvColumn::kTransB)) {
    return ParseError("transa and transb go together");
  }
  if (has(CsvColumn::kTransA) && has(CsvColumn::kLayout)) {
    return ParseError("give either transa/transb or layout, not both");
  }
  return columns;
}

StatusOr<LoggedCall> ParseCsvRow(std::string_view line, const std::vector<CsvColumn>& columns) {
  const std::vector<std::string_view> fields = text::Split(line, ',');
  if (fields.size() != columns.size()) {
    return ParseError("expected " + std::to_string(columns.size()) + " fields, got " +
                      std::to_string(fields.size()));
  }
  LoggedCall call;
  GemmProblem& p = call.gemm.problem;
  p.layout = GemmLayout{MatrixOrder::kRowMajor, MatrixOrder::kColMajor, MatrixOrder::kColMajor};
  std::string ops;
  std::optional<OperandTypes> types;
  std::optional<DataType> a, b, c, compute;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string_view value = Unquote(fields[i]);
    const CsvColumn column = columns[i];
    const std::string_view name =
        std::find_if(kCsvColumns.begin(), kCsvColumns.end(), [&](const CsvColumnName& n) {
          return n.column == column;
        })->name;
    auto integer = [&](int64_t& out) -> Status {
      auto parsed = text::ParseInt64(value);
      if (!parsed.ok())
        return ParseError(std::string(name) + ": '" + text::Excerpt(value, 40) +
                          "' is not an integer");
      out = *parsed;
      return Status::Ok();
    };
    auto number = [&](double& out) -> Status {
      auto parsed = text::ParseDouble(value);
      if (!parsed.ok())
        return ParseError(std::string(name) + ": '" + text::Excerpt(value, 40) +
                          "' is not a number");
      out = *parsed;
      return Status::Ok();
    };
    auto dtype = [&](std::optional<DataType>& out) -> Status {
      auto parsed = ParseDataType(text::ToLower(value));
      if (!parsed.ok()) return parsed.status().WithContext(name);
      out = *parsed;
      return Status::Ok();
    };
    switch (column) {
      case CsvColumn::kM:
        KSELECT_RETURN_IF_ERROR(integer(p.m));
        break;
      case CsvColumn::kN:
        KSELECT_RETURN_IF_ERROR(integer(p.n));
        break;
      case CsvColumn::kK:
        KSELECT_RETURN_IF_ERROR(integer(p.k));
        break;
      case CsvColumn::kBatch:
        KSELECT_RETURN_IF_ERROR(integer(p.batch));
        break;
      case CsvColumn::kTransA:
      case CsvColumn::kTransB: {
        KSELECT_ASSIGN_OR_RETURN(const char op, BlasOp(value));
        // Columns may come in any order: A's letter first.
        if (column == CsvColumn::kTransA)
          ops.insert(ops.begin(), op);
        else
          ops.push_back(op);
        break;
      }
      case CsvColumn::kLayout: {
        KSELECT_ASSIGN_OR_RETURN(p.layout, ParseGemmLayout(text::ToLower(value)));
        break;
      }
      case CsvColumn::kDtype: {
        std::optional<DataType> input;
        KSELECT_RETURN_IF_ERROR(dtype(input));
        types = TypesOfInput(*input);
        break;
      }
      case CsvColumn::kA:
        KSELECT_RETURN_IF_ERROR(dtype(a));
        break;
      case CsvColumn::kB:
        KSELECT_RETURN_IF_ERROR(dtype(b));
        break;
      case CsvColumn::kC:
        KSELECT_RETURN_IF_ERROR(dtype(c));
        break;
      case CsvColumn::kCompute:
        KSELECT_RETURN_IF_ERROR(dtype(compute));
        break;
      case CsvColumn::kAlpha:
        KSELECT_RETURN_IF_ERROR(number(p.alpha));
        break;
      case CsvColumn::kBeta:
        KSELECT_RETURN_IF_ERROR(number(p.beta));
        break;
      case CsvColumn::kCalls:
        KSELECT_RETURN_IF_ERROR(integer(call.calls));
        break;
      case CsvColumn::kLda:
        KSELECT_RETURN_IF_ERROR(integer(call.gemm.lda));
        break;
      case CsvColumn::kLdb:
        KSELECT_RETURN_IF_ERROR(integer(call.gemm.ldb));
        break;
      case CsvColumn::kLdc:
        KSELECT_RETURN_IF_ERROR(integer(call.gemm.ldc));
        break;
      case CsvColumn::kEpilogue:
        if (value != "none") call.gemm.epilogue = std::string(value);
        break;
      case CsvColumn::kIgnored:
        break;
    }
  }
  if (!ops.empty()) {
    KSELECT_ASSIGN_OR_RETURN(p.layout, GemmLayoutFromBlasOps(ops));
  }
  OperandTypes t = types.value_or(OperandTypes{});
  if (a) t.a = *a;
  if (b) t.b = *b;
  if (c) t.c = *c;
  if (compute) t.compute = *compute;
  SettleTf32(t);
  p.dtype_a = t.a;
  p.dtype_b = t.b;
  p.dtype_c = t.c;
  p.compute = t.compute;
  ToColumnMajorC(call.gemm);
  return call;
}

}  // namespace

Status ParsePlainCsv(std::string_view text, LogBuilder& builder, std::string_view source) {
  std::optional<std::vector<CsvColumn>> columns;
  return ForEachLine(text, [&](std::string_view line, int64_t number) -> Status {
    if (line.starts_with('#')) return Status::Ok();
    if (!columns) {
      auto header = ReadCsvHeader(line);
      if (!header.ok()) {
        return header.status().WithContext(text::Where(source, number) + ": CSV header");
      }
      columns = std::move(*header);
      return Status::Ok();
    }
    return builder.Add(ParseCsvRow(line, *columns), number);
  });
}

bool LooksLikeCsvHeader(std::string_view line) {
  if (line.find(',') == std::string_view::npos) return false;
  for (const std::string_view field : text::Split(line, ',')) {
    const std::string name = text::ToLower(Unquote(field));
    for (const CsvColumnName& c : kCsvColumns) {
      if (c.name == name) return true;
    }
  }
  return false;
}

}  // namespace kselect::gemm_log
