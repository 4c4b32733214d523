// Conversions between typed Measurements and flat canonical rows.
#include <algorithm>
#include <cmath>
#include <variant>

#include <nlohmann/json.hpp>

#include "kselect/config_schema.h"
#include "kselect/dataset.h"

namespace kselect {
namespace {

constexpr double kHighCvThreshold = 0.10;

void FillProblem(const GemmProblem& p, DatasetRow& row) {
  row.m = p.m;
  row.n = p.n;
  row.k = p.k;
  row.batch = p.batch;
  row.layout = p.layout.ToString();
  row.dtype = std::string(DataTypeName(p.dtype_a));
  row.dtype_a = std::string(DataTypeName(p.dtype_a));
  row.dtype_b = std::string(DataTypeName(p.dtype_b));
  row.dtype_c = std::string(DataTypeName(p.dtype_c));
  row.compute_type = std::string(DataTypeName(p.compute));
  row.alpha = p.alpha;
  row.beta = p.beta;
}

void FillProblem(const ConvProblem& p, DatasetRow& row) {
  row.conv_direction = std::string(ConvDirectionName(p.direction));
  row.conv_layout = std::string(ConvLayoutName(p.layout));
  row.spatial_dims = p.SpatialDims();
  row.conv_n = p.n;
  row.conv_c = p.c;
  row.conv_k = p.k;
  row.conv_g = p.g;
  row.conv_di = p.di;
  row.conv_hi = p.hi;
  row.conv_wi = p.wi;
  row.conv_z = p.z;
  row.conv_y = p.y;
  row.conv_x = p.x;
  row.stride_d = p.stride_d;
  row.stride_h = p.stride_h;
  row.stride_w = p.stride_w;
  row.pad_d = p.pad_d;
  row.pad_h = p.pad_h;
  row.pad_w = p.pad_w;
  row.dilation_d = p.dilation_d;
  row.dilation_h = p.dilation_h;
  row.dilation_w = p.dilation_w;
  row.dtype = std::string(DataTypeName(p.dtype));
  row.compute_type = std::string(DataTypeName(p.compute));
}

// The row member behind a config field's column.
using ColumnMember =
    std::variant<std::monostate, std::optional<int64_t> DatasetRow::*,
                 std::optional<bool> DatasetRow::*, std::optional<std::string> DatasetRow::*,
                 std::optional<double> DatasetRow::*>;

ColumnMember MemberOfColumn(std::string_view column) {
#define KSELECT_COLUMN_MEMBER(name, type, group, doc) \
  if (column == #name) return &DatasetRow::name;
  KSELECT_DATASET_COLUMNS(KSELECT_COLUMN_MEMBER)
#undef KSELECT_COLUMN_MEMBER
  return std::monostate{};
}

// Each field's column member, looked up once per provider (rows are converted by the million).
const std::vector<ColumnMember>& ColumnMembers(Provider provider) {
  static const std::vector<std::vector<ColumnMember>> members = [] {
    std::vector<std::vector<ColumnMember>> all;
    for (const ConfigSchema& schema : ConfigSchemas()) {
      std::vector<ColumnMember>& of = all.emplace_back();
      for (const ConfigField& field : schema.fields) {
        of.push_back(field.column.empty() ? ColumnMember() : MemberOfColumn(field.column));
        const ColumnMember& m = of.back();
        const bool matches = field.column.empty() ||
                             (field.type == FieldType::kInt &&
                              std::holds_alternative<std::optional<int64_t> DatasetRow::*>(m)) ||
                             (field.type == FieldType::kBool &&
                              std::holds_alternative<std::optional<bool> DatasetRow::*>(m)) ||
                             ((field.type == FieldType::kEnum || field.type == FieldType::kText ||
                               field.type == FieldType::kKnobList) &&
                              std::holds_alternative<std::optional<std::string> DatasetRow::*>(m));
        KSELECT_CHECK_MSG(matches,
                          "a config field names a dataset column that does not exist "
                          "or has another type");
      }
    }
    return all;
  }();
  return members[static_cast<size_t>(provider)];
}

void FillConfig(const KernelConfig& config, DatasetRow& row) {
  const ConfigSchema& schema = SchemaOf(config);
  const std::vector<ColumnMember>& members = ColumnMembers(schema.provider);
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const ConfigField& field = schema.fields[i];
    if (field.column.empty()) continue;
    switch (field.type) {
      case FieldType::kInt:
        row.*std::get<std::optional<int64_t> DatasetRow::*>(members[i]) = field.get(config);
        break;
      case FieldType::kBool:
        row.*std::get<std::optional<bool> DatasetRow::*>(members[i]) = field.get(config) != 0;
        break;
      case FieldType::kEnum:
      case FieldType::kText:
        row.*std::get<std::optional<std::string> DatasetRow::*>(members[i]) =
            FieldText(field, config);
        break;
      case FieldType::kKnobList: {
        nlohmann::json knobs = nlohmann::json::array();
        for (const auto& [knob, value] : field.get_knobs(config)) knobs.push_back({knob, value});
        row.*std::get<std::optional<std::string> DatasetRow::*>(members[i]) = knobs.dump();
        break;
      }
    }
  }
}

void FillHardware(const HardwareProfile& h, DatasetRow& row) {
  auto set_int = [](std::optional<int64_t>& field, int64_t value) {
    if (value != 0) field = value;  // 0 means unknown in the profile: store null
  };
  auto set_text = [](std::optional<std::string>& field, const std::string& value) {
    if (!value.empty()) field = value;
  };
  set_text(row.arch, h.arch);
  set_text(row.vendor, h.vendor);
  set_text(row.device_name, h.device_name);
  set_text(row.device_kind, h.device_kind);
  set_text(row.device_uuid, h.uuid);
  set_int(row.cc_major, h.cc_major);
  if (h.cc_major != 0) row.cc_minor = h.cc_minor;
  set_int(row.sm_count, h.sm_count);
  set_int(row.sm_clock_mhz, h.sm_clock_mhz);
  set_int(row.mem_clock_mhz, h.mem_clock_mhz);
  set_int(row.mem_bus_width_bits, h.mem_bus_width_bits);
  set_int(row.l2_bytes, h.l2_bytes);
  set_int(row.smem_per_sm_bytes, h.smem_per_sm_bytes);
  set_int(row.smem_per_block_optin_bytes, h.smem_per_block_optin_bytes);
  set_int(row.regs_per_sm, h.regs_per_sm);
  set_int(row.max_threads_per_sm, h.max_threads_per_sm);
  set_int(row.global_mem_bytes, h.global_mem_bytes);
  if (h.peak_mem_bandwidth_gb_s > 0) row.peak_mem_bandwidth_gb_s = h.peak_mem_bandwidth_gb_s;
  set_int(row.driver_version, h.driver_version);
  set_int(row.runtime_version, h.runtime_version);
  set_int(row.cublaslt_version, h.cublaslt_version);
  set_int(row.cudnn_version, h.cudnn_version);
  set_int(row.nvrtc_version, h.nvrtc_version);
}

template <typename T>
T Or(const std::optional<T>& v, T fallback) {
  return v ? *v : fallback;
}

int32_t I32(const std::optional<int64_t>& v, int32_t fallback = 0) {
  return v ? static_cast<int32_t>(*v) : fallback;
}

StatusOr<DataType> DataTypeColumn(const std::optional<std::string>& v, std::string_view column,
                                  DataType fallback) {
  if (!v) return fallback;
  auto parsed = ParseDataType(*v);
  if (!parsed.ok())
    return SchemaMismatchError("column " + std::string(column) + ": " + parsed.status().message());
  return *parsed;
}

StatusOr<Problem> ProblemFromRow(const DatasetRow& row) {
  if (row.conv_direction) {
    ConvProblem p;
    KSELECT_ASSIGN_OR_RETURN(p.direction, ParseConvDirection(*row.conv_direction));
    if (row.conv_layout) {
      KSELECT_ASSIGN_OR_RETURN(p.layout, ParseConvLayout(*row.conv_layout));
    }
    p.n = Or<int64_t>(row.conv_n, 0);
    p.c = Or<int64_t>(row.conv_c, 0);
    p.k = Or<int64_t>(row.conv_k, 0);
    p.g = Or<int64_t>(row.conv_g, 1);
    p.di = Or<int64_t>(row.conv_di, 1);
    p.hi = Or<int64_t>(row.conv_hi, 0);
    p.wi = Or<int64_t>(row.conv_wi, 0);
    p.z = Or<int64_t>(row.conv_z, 1);
    p.y = Or<int64_t>(row.conv_y, 1);
    p.x = Or<int64_t>(row.conv_x, 1);
    p.stride_d = Or<int64_t>(row.stride_d, 1);
    p.stride_h = Or<int64_t>(row.stride_h, 1);
    p.stride_w = Or<int64_t>(row.stride_w, 1);
    p.pad_d = Or<int64_t>(row.pad_d, 0);
    p.pad_h = Or<int64_t>(row.pad_h, 0);
    p.pad_w = Or<int64_t>(row.pad_w, 0);
    p.dilation_d = Or<int64_t>(row.dilation_d, 1);
    p.dilation_h = Or<int64_t>(row.dilation_h, 1);
    p.dilation_w = Or<int64_t>(row.dilation_w, 1);
    KSELECT_ASSIGN_OR_RETURN(p.dtype, DataTypeColumn(row.dtype, "dtype", p.dtype));
    KSELECT_ASSIGN_OR_RETURN(p.compute,
                             DataTypeColumn(row.compute_type, "compute_type", p.compute));
    return Problem(p);
  }
  for (const auto& [name, value] :
       {std::pair{"m", &row.m}, std::pair{"n", &row.n}, std::pair{"k", &row.k}}) {
    if (!*value) {
      return SchemaMismatchError(std::string("column ") + name +
                                 " is null and the row has no conv_direction: it is neither a "
                                 "GEMM nor a convolution");
    }
    if (**value <= 0) {
      return SchemaMismatchError(std::string("column ") + name + " is " + std::to_string(**value) +
                                 ": a GEMM dimension must be positive");
    }
  }
  if (row.batch && *row.batch <= 0) {
    return SchemaMismatchError("column batch is " + std::to_string(*row.batch) +
                               ": must be positive");
  }
  GemmProblem p;
  p.m = *row.m;
  p.n = *row.n;
  p.k = *row.k;
  p.batch = Or<int64_t>(row.batch, 1);
  if (row.layout) {
    auto layout = ParseGemmLayout(*row.layout);
    if (!layout.ok()) return SchemaMismatchError("column layout: " + layout.status().message());
    p.layout = *layout;
  }
  KSELECT_ASSIGN_OR_RETURN(
      p.dtype_a, DataTypeColumn(row.dtype_a ? row.dtype_a : row.dtype, "dtype_a", p.dtype_a));
  KSELECT_ASSIGN_OR_RETURN(
      p.dtype_b, DataTypeColumn(row.dtype_b ? row.dtype_b : row.dtype, "dtype_b", p.dtype_b));
  KSELECT_ASSIGN_OR_RETURN(p.dtype_c, DataTypeColumn(row.dtype_c, "dtype_c", p.dtype_a));
  KSELECT_ASSIGN_OR_RETURN(p.compute, DataTypeColumn(row.compute_type, "compute_type", p.compute));
  p.alpha = Or(row.alpha, 1.0);
  p.beta = Or(row.beta, 0.0);
  return Problem(p);
}

StatusOr<KernelConfig> ConfigFromRow(const DatasetRow& row) {
  if (!row.provider) return SchemaMismatchError("row has no provider");
  KSELECT_ASSIGN_OR_RETURN(Provider provider, ParseProvider(*row.provider));
  const ConfigSchema& schema = SchemaOf(provider);
  const std::vector<ColumnMember>& members = ColumnMembers(provider);
  // A null column leaves the field at its default.
  KernelConfig config = schema.make_default();
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const ConfigField& field = schema.fields[i];
    if (field.column.empty() || field.write_only) continue;
    switch (field.type) {
      case FieldType::kInt: {
        const auto& v = row.*std::get<std::optional<int64_t> DatasetRow::*>(members[i]);
        if (v) field.set(config, *v);
        break;
      }
      case FieldType::kBool: {
        const auto& v = row.*std::get<std::optional<bool> DatasetRow::*>(members[i]);
        if (v) field.set(config, *v ? 1 : 0);
        break;
      }
      case FieldType::kEnum: {
        const auto& v = row.*std::get<std::optional<std::string> DatasetRow::*>(members[i]);
        if (!v) break;
        const auto it = std::find_if(field.names.begin(), field.names.end(),
                                     [&](const EnumName& e) { return e.name == *v; });
        if (it == field.names.end()) {
          return SchemaMismatchError("column " + std::string(field.column) + ": unknown " +
                                     std::string(schema.name) + " " + std::string(field.name) +
                                     " '" + *v + "'");
        }
        field.set(config, it->value);
        break;
      }
      case FieldType::kText: {
        const auto& v = row.*std::get<std::optional<std::string> DatasetRow::*>(members[i]);
        if (v) field.set_text(config, *v);
        break;
      }
      case FieldType::kKnobList: {
        const auto& v = row.*std::get<std::optional<std::string> DatasetRow::*>(members[i]);
        if (!v) break;
        const std::string column(field.column);
        const auto knobs = nlohmann::json::parse(*v, nullptr, false);
        if (knobs.is_discarded() || !knobs.is_array()) {
          return SchemaMismatchError("column " + column + ": not a JSON array of [knob, value]");
        }
        auto* list = field.knobs(config);
        for (const auto& pair : knobs) {
          if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
              !pair[1].is_number_integer()) {
            return SchemaMismatchError("column " + column + ": bad pair " + pair.dump());
          }
          list->emplace_back(pair[0].get<int32_t>(), pair[1].get<int64_t>());
        }
        break;
      }
    }
  }
  return config;
}

}  // namespace

DatasetRow RowFromMeasurement(const Measurement& m, const RunInfo& run) {
  DatasetRow row;
  row.op_type = m.op_type;
  row.provider = std::string(ProviderName(ProviderOf(m.config)));
  row.kernel_name = m.kernel_name.empty() ? DescribeConfig(m.config) : m.kernel_name;
  row.config_key = ConfigKey(m.config);
  row.problem_key = ProblemToString(m.problem);
  row.run_id = m.run_id.empty() ? run.run_id : m.run_id;
  if (!m.timestamp.empty()) {
    row.timestamp = m.timestamp;
  } else if (!run.started_at.empty()) {
    row.timestamp = run.started_at;
  }
  if (!run.tool.empty()) row.tool_version = run.tool;
  std::visit([&row](const auto& p) { FillProblem(p, row); }, m.problem);
  FillConfig(m.config, row);
  // A NaN or infinite figure is "not measured": stored as null, with invalid_reason saying why.
  auto finite = [](double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; };
  row.measured_tflops = finite(m.tflops);
  row.latency_ms = finite(m.latency_ms);
  row.bandwidth_gb_s = finite(m.bandwidth_gb_s);
  row.is_valid = m.is_valid;
  row.invalid_reason = m.invalid_reason;
  row.cv = finite(m.cv);
  row.high_cv = m.cv > kHighCvThreshold;
  row.samples = m.samples;
  row.duplicates_merged = m.duplicates_merged;
  row.aborted = m.aborted;
  if (m.aborted) row.abort_bound_ms = m.abort_bound_ms;
  if (m.peer_rank) row.peer_rank = *m.peer_rank;
  if (m.peer_rank_b) row.peer_rank_b = *m.peer_rank_b;
  const MeasurementMethod& method = m.method.name.empty() ? run.method : m.method;
  row.method = method.name;
  row.timer = method.timer;
  row.statistic = method.statistic;
  row.warmup_iters = method.warmup_iters;
  row.repeats = method.repeats;
  row.iters_per_repeat = method.iters_per_repeat;
  row.rotating_buffer_bytes = method.rotating_buffer_bytes;
  row.sm_clock_min_mhz = method.sm_clock_min_mhz;
  row.sm_clock_max_mhz = method.sm_clock_max_mhz;
  row.power_w = method.power_w;
  row.temperature_c = method.temperature_c;
  row.reference_latency_ms = m.reference_latency_ms;
  FillHardware(run.hardware, row);
  if (!m.device_uuid.empty()) row.device_uuid = m.device_uuid;
  return row;
}

HardwareProfile HardwareFromRow(const DatasetRow& row) {
  HardwareProfile h;
  h.vendor = Or<std::string>(row.vendor, "");
  h.device_name = Or<std::string>(row.device_name, "");
  h.device_kind = Or<std::string>(row.device_kind, "");
  h.arch = Or<std::string>(row.arch, "");
  h.uuid = Or<std::string>(row.device_uuid, "");
  h.cc_major = I32(row.cc_major);
  h.cc_minor = I32(row.cc_minor);
  h.sm_count = I32(row.sm_count);
  h.sm_clock_mhz = I32(row.sm_clock_mhz);
  h.mem_clock_mhz = I32(row.mem_clock_mhz);
  h.mem_bus_width_bits = I32(row.mem_bus_width_bits);
  h.l2_bytes = Or<int64_t>(row.l2_bytes, 0);
  h.smem_per_sm_bytes = Or<int64_t>(row.smem_per_sm_bytes, 0);
  h.smem_per_block_optin_bytes = Or<int64_t>(row.smem_per_block_optin_bytes, 0);
  h.regs_per_sm = I32(row.regs_per_sm);
  h.max_threads_per_sm = I32(row.max_threads_per_sm);
  h.global_mem_bytes = Or<int64_t>(row.global_mem_bytes, 0);
  h.peak_mem_bandwidth_gb_s = Or(row.peak_mem_bandwidth_gb_s, 0.0);
  h.driver_version = I32(row.driver_version);
  h.runtime_version = I32(row.runtime_version);
  h.cublaslt_version = I32(row.cublaslt_version);
  h.cudnn_version = I32(row.cudnn_version);
  h.nvrtc_version = I32(row.nvrtc_version);
  return h;
}

StatusOr<Measurement> MeasurementFromRow(const DatasetRow& row) {
  Measurement m;
  m.op_type = Or<std::string>(row.op_type, "");
  KSELECT_ASSIGN_OR_RETURN(m.problem, ProblemFromRow(row));
  KSELECT_ASSIGN_OR_RETURN(m.config, ConfigFromRow(row));
  m.kernel_name = Or<std::string>(row.kernel_name, "");
  m.latency_ms = Or(row.latency_ms, std::nan(""));
  m.tflops = Or(row.measured_tflops, std::nan(""));
  m.bandwidth_gb_s = Or(row.bandwidth_gb_s, 0.0);
  m.is_valid = Or(row.is_valid, false);
  m.invalid_reason = Or<std::string>(row.invalid_reason, "");
  m.cv = Or(row.cv, 0.0);
  m.samples = I32(row.samples);
  m.duplicates_merged = I32(row.duplicates_merged, 1);
  m.aborted = Or(row.aborted, false);
  m.abort_bound_ms = Or(row.abort_bound_ms, 0.0);
  if (row.peer_rank) m.peer_rank = static_cast<int32_t>(*row.peer_rank);
  if (row.peer_rank_b) m.peer_rank_b = static_cast<int32_t>(*row.peer_rank_b);
  m.method.name = Or<std::string>(row.method, "");
  m.method.timer = Or<std::string>(row.timer, "");
  m.method.statistic = Or<std::string>(row.statistic, "");
  m.method.warmup_iters = I32(row.warmup_iters);
  m.method.repeats = I32(row.repeats);
  m.method.iters_per_repeat = I32(row.iters_per_repeat);
  m.method.rotating_buffer_bytes = Or<int64_t>(row.rotating_buffer_bytes, 0);
  m.method.sm_clock_min_mhz = I32(row.sm_clock_min_mhz);
  m.method.sm_clock_max_mhz = I32(row.sm_clock_max_mhz);
  m.method.power_w = Or<double>(row.power_w, 0.0);
  m.method.temperature_c = I32(row.temperature_c);
  m.reference_latency_ms = Or<double>(row.reference_latency_ms, 0.0);
  m.run_id = Or<std::string>(row.run_id, "");
  m.timestamp = Or<std::string>(row.timestamp, "");
  // The GPU of this row (runs over several GPUs name one per row); RowFromMeasurement writes it
  // back over the run's.
  m.device_uuid = Or<std::string>(row.device_uuid, "");
  // A file may claim a row valid whose figures are NaN or absurd (written by another tool, or
  // edited): apply ingest's rule again, so such a row is never used as a valid one.
  if (m.is_valid) m.Validate();
  return m;
}

}  // namespace kselect
