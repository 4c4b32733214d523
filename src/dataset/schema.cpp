#include <string>

#include "kselect/dataset.h"

namespace kselect {

std::string_view ColumnTypeName(ColumnType type) {
  switch (type) {
    case ColumnType::kString:
      return "string";
    case ColumnType::kInt:
      return "int64";
    case ColumnType::kDouble:
      return "double";
    case ColumnType::kBool:
      return "bool";
  }
  return "unknown";
}

const std::vector<ColumnSpec>& DatasetColumns() {
  static const std::vector<ColumnSpec> columns = {
#define KSELECT_COLUMN_SPEC(name, type, group, doc) {#name, ColumnType::k##type, group, doc},
      KSELECT_DATASET_COLUMNS(KSELECT_COLUMN_SPEC)
#undef KSELECT_COLUMN_SPEC
  };
  return columns;
}

std::string DatasetSchemaMarkdown() {
  std::string out =
      "# Canonical dataset schema\n\n"
      "Generated from `KSELECT_DATASET_COLUMNS` in include/kselect/dataset.h by "
      "`kselect data schema --markdown`; a test keeps this file in sync.\n\n"
      "Schema version " +
      std::to_string(kDatasetSchemaMajor) + "." + std::to_string(kDatasetSchemaMinor) +
      ". Files are zstd-compressed Parquet. Every column is nullable (a GEMM row has no conv "
      "columns). File metadata keys: `kselect.schema_version`, `kselect.tool`, "
      "`kselect.created_at`, `kselect.rows`, `kselect.sources` (JSON: input files and their "
      "sha256), `kselect.options` (JSON: the effective options of the command that wrote it). "
      "Columns added by a minor version (1.1: `peer_rank_b`; 1.2: `power_w`, `temperature_c`, "
      "`reference_latency_ms`) are absent from older files, which "
      "read (and merge) as if those columns were null.\n\n"
      "Pages carry CRC32 checksums (files written before they did read as before). Readers "
      "verify them, check `kselect.rows` against the footer and the rows read, and apply "
      "ingest's value rules: a null `provider`, `problem_key`, `config_key` or `run_id`, or a "
      "null or non-positive `m`/`n`/`k`/`batch` in a row without `conv_direction`, or a negative "
      "or non-finite `power_w` or `reference_latency_ms`, is refused naming the file, row and "
      "column; a row claimed valid whose figures are NaN, infinite, not "
      "positive or beyond the plausible bounds is read as invalid with the reason.\n\n"
      "| column | type | group | meaning |\n|---|---|---|---|\n";
  for (const auto& c : DatasetColumns()) {
    out += "| `" + std::string(c.name) + "` | " + std::string(ColumnTypeName(c.type)) + " | " +
           std::string(c.group) + " | " + std::string(c.description) + " |\n";
  }
  return out;
}

}  // namespace kselect
