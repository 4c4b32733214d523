// Conv shape files: the regime of a convolution, the CSV parser and writer, and telling GEMM and
// conv shape files apart (kselect/shapes.h). The generated sets live in conv_shape_sets.cpp.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "kselect/shapes.h"

namespace kselect {
namespace {

// One size column of a conv shape file and the ConvProblem field it fills.
struct ConvColumn {
  std::string_view name;
  int64_t ConvProblem::*field;
};
constexpr std::array<ConvColumn, 19> kConvColumns = {{
    {"n", &ConvProblem::n},
    {"c", &ConvProblem::c},
    {"k", &ConvProblem::k},
    {"g", &ConvProblem::g},
    {"di", &ConvProblem::di},
    {"hi", &ConvProblem::hi},
    {"wi", &ConvProblem::wi},
    {"z", &ConvProblem::z},
    {"y", &ConvProblem::y},
    {"x", &ConvProblem::x},
    {"stride_d", &ConvProblem::stride_d},
    {"stride_h", &ConvProblem::stride_h},
    {"stride_w", &ConvProblem::stride_w},
    {"pad_d", &ConvProblem::pad_d},
    {"pad_h", &ConvProblem::pad_h},
    {"pad_w", &ConvProblem::pad_w},
    {"dilation_d", &ConvProblem::dilation_d},
    {"dilation_h", &ConvProblem::dilation_h},
    {"dilation_w", &ConvProblem::dilation_w},
}};

std::string ConvHeader() {
  std::string header;
  for (const ConvColumn& column : kConvColumns) header += std::string(column.name) + ",";
  return header + "regime,family";
}

// The first line that is neither blank nor a comment, and its 1-based number (0 when none).
std::pair<std::string_view, int> FirstContentLine(std::string_view text) {
  int number = 0;
  for (const std::string_view raw : text::SplitLines(text)) {
    ++number;
    const std::string_view line = text::Trim(raw);
    if (!line.empty() && line.front() != '#') return {line, number};
  }
  return {{}, 0};
}

}  // namespace

ConvProblem ConvShape(const ConvShapeRow& row, ConvDirection direction, DataType dtype) {
  ConvProblem p = row.shape;
  p.direction = direction;
  p.dtype = dtype;
  p.layout = ConvLayout::kChannelsLast;
  p.compute = DataType::kF32;
  return p;
}

std::string ConvShapeRegime(const ConvProblem& p) {
  std::string r = p.Is3d() ? "3d" : "2d";
  const int64_t pixels = p.Do() * p.Ho() * p.Wo();
  r += pixels <= 256 ? ".sp_small" : pixels <= 4096 ? ".sp_medium" : ".sp_large";
  const int64_t channels = std::max(p.c, p.k);
  r += channels <= 64 ? ".ch_narrow" : channels <= 512 ? ".ch_mid" : ".ch_wide";
  // Depthwise before grouped: G = C = 1 channel per group is its own kernel family in cuDNN.
  r += p.g == 1 ? ".dense" : p.g == p.c ? ".depthwise" : ".grouped";
  const int64_t filter = std::max({p.z, p.y, p.x});
  r += filter == 1 ? ".f1" : filter <= 3 ? ".f3" : filter <= 5 ? ".f5" : ".f7";
  r += std::max({p.stride_d, p.stride_h, p.stride_w}) > 1 ? ".strided" : ".s1";
  r += std::max({p.dilation_d, p.dilation_h, p.dilation_w}) > 1 ? ".dilated" : ".dil1";
  return r;
}

StatusOr<std::vector<ConvShapeRow>> ParseConvShapeCsv(std::string_view text,
                                                      std::string_view source) {
  std::vector<ConvShapeRow> rows;
  // Per file column: the size column it fills, or -1 for regime, -2 for family.
  std::vector<int> columns;
  int line_number = 0;
  for (const std::string_view raw : text::SplitLines(text)) {
    ++line_number;
    const std::string_view line = text::Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = text::Where(source, line_number) + ": ";
    std::vector<std::string_view> fields = text::Split(line, ',');
    for (std::string_view& f : fields) f = text::Trim(f);
    if (columns.empty()) {
      std::vector<bool> seen(kConvColumns.size(), false);
      bool has_regime = false, has_family = false;
      for (const std::string_view name : fields) {
        const auto it = std::find_if(kConvColumns.begin(), kConvColumns.end(),
                                     [&](const ConvColumn& c) { return c.name == name; });
        bool duplicate = false;
        if (it != kConvColumns.end()) {
          const auto index = static_cast<size_t>(it - kConvColumns.begin());
          duplicate = seen[index];
          seen[index] = true;
          columns.push_back(static_cast<int>(index));
        } else if (name == "regime") {
          duplicate = has_regime;
          has_regime = true;
          columns.push_back(-1);
        } else if (name == "family") {
          duplicate = has_family;
          has_family = true;
          columns.push_back(-2);
        } else {
          return ParseError(where + "unknown column '" + std::string(name) +
                            "' in the conv shape header (expected " + ConvHeader() + ")");
        }
        if (duplicate) return ParseError(where + "column '" + std::string(name) + "' repeats");
      }
      for (size_t i = 0; i < kConvColumns.size(); ++i) {
        if (!seen[i]) {
          return ParseError(where + "the conv shape header lacks column '" +
                            std::string(kConvColumns[i].name) + "' (expected " + ConvHeader() +
                            ")");
        }
      }
      continue;
    }
    if (fields.size() != columns.size()) {
      return ParseError(where + "expected " + std::to_string(columns.size()) + " fields, got " +
                        std::to_string(fields.size()));
    }
    ConvShapeRow row;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (columns[i] == -1) {
        row.regime = std::string(fields[i]);
      } else if (columns[i] == -2) {
        row.family = std::string(fields[i]);
      } else {
        const ConvColumn& column = kConvColumns[static_cast<size_t>(columns[i])];
        StatusOr<int64_t> value = text::ParseInt64(fields[i]);
        if (!value.ok()) {
          return ParseError(where + std::string(column.name) + ": " + value.status().message());
        }
        row.shape.*column.field = *value;
      }
    }
    // Signs, group divisibility and empty outputs are ConvProblem's own rules.
    if (Status valid = row.shape.Validate(); !valid.ok()) {
      return ParseError(where + valid.message());
    }
    if (!row.shape.Is3d() && (row.shape.stride_d != 1 || row.shape.dilation_d != 1)) {
      return ParseError(where +
                        "a 2D row (di = z = 1, pad_d = 0) must have stride_d = dilation_d = 1");
    }
    const std::string regime = ConvShapeRegime(row.shape);
    if (row.regime.empty()) row.regime = regime;
    if (row.regime != regime) {
      return ParseError(where + "regime '" + row.regime + "' does not match the sizes (" + regime +
                        ")");
    }
    rows.push_back(std::move(row));
  }
  if (columns.empty()) {
    return ParseError(std::string(source) + ": no header line '" + ConvHeader() + "'");
  }
  return rows;
}

StatusOr<std::vector<ConvShapeRow>> LoadConvShapeFile(const std::string& path) {
  auto contents = text::ReadFile(path);
  if (!contents.ok()) return contents.status();
  return ParseConvShapeCsv(*contents, path);
}

std::string ConvShapeCsv(const std::vector<ConvShapeRow>& rows,
                         const std::vector<std::string>& origin_lines) {
  std::string out;
  for (const std::string& line : origin_lines) out += "# " + line + "\n";
  out += ConvHeader() + "\n";
  for (const ConvShapeRow& r : rows) {
    for (const ConvColumn& column : kConvColumns)
      out += std::to_string(r.shape.*column.field) + ",";
    out += r.regime + "," + r.family + "\n";
  }
  return out;
}

StatusOr<ShapeFileKind> DetectShapeFileKind(std::string_view text, std::string_view source) {
  const auto [line, number] = FirstContentLine(text);
  if (number == 0) return ParseError(std::string(source) + ": no header line: an empty shape file");
  const std::string_view first = text::Trim(line.substr(0, line.find(',')));
  if (first == "m") return ShapeFileKind::kGemm;
  if (first == "n") return ShapeFileKind::kConv;
  return ParseError(text::Where(source, number) + ": cannot tell the shape file's kind from '" +
                    text::Excerpt(line, 80) +
                    "': a GEMM header starts 'm,n,k', a conv header 'n,c,k,g'");
}

StatusOr<ShapeFileKind> ShapeFileKindOf(const std::string& path) {
  auto contents = text::ReadFile(path);
  if (!contents.ok()) return contents.status();
  return DetectShapeFileKind(*contents, path);
}

}  // namespace kselect
