// The canonical dataset: the contract between all stages (bench -> ingest -> train -> eval).
// One flat row per measured (problem, kernel config) pair, stored as zstd-compressed Parquet.
// The column list below is the single source of truth: the Arrow schema, the reader's checks, the
// row conversions and docs/dataset_schema.md are all generated from it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/measurement.h"
#include "kselect/progress.h"
#include "kselect/status.h"

namespace kselect {

// Major versions are incompatible (readers refuse them); minor versions add metadata or nullable
// columns (kDatasetColumnsAddedLater), which files of an earlier minor version lack and read as
// null. 1.1 added peer_rank_b; 1.2 power_w, temperature_c and reference_latency_ms.
inline constexpr int kDatasetSchemaMajor = 1;
inline constexpr int kDatasetSchemaMinor = 2;

// clang-format off
// X(name, type, group, description). Types: String, Int, Double, Bool. Every column is nullable:
// a GEMM row has no conv columns, an AMD row no CUDA versions.
#define KSELECT_DATASET_COLUMNS(X)                                                               \
  /* identity */                                                                                 \
  X(op_type, String, "identity", "operation: gemm, grouped_conv, gemm_universal (CK), ...")     \
  X(provider, String, "identity", "kernel provider: cublaslt, tile, cudnn, ck_tile, ck_conv")   \
  X(kernel_name, String, "identity", "human-readable kernel name (AMD rows: the name parsed)")   \
  X(config_key, String, "identity", "canonical text of every typed config field; never parsed") \
  X(problem_key, String, "identity", "canonical text of the problem (GroupKFold / join key)")   \
  X(run_id, String, "identity", "collection run the row came from")                              \
  X(timestamp, String, "identity", "when the row was measured (ISO 8601 UTC)")                  \
  X(tool_version, String, "identity", "tool that measured the row (kselect x.y.z (git ...))")   \
  /* GEMM problem */                                                                             \
  X(m, Int, "gemm", "rows of A and C")                                                           \
  X(n, Int, "gemm", "columns of B and C")                                                        \
  X(k, Int, "gemm", "reduction dimension")                                                       \
  X(batch, Int, "gemm", "batch count of the strided-batched GEMM (1 = plain)")                  \
  X(layout, String, "gemm", "memory order of A, B, C as r/c letters, e.g. rcr; TN = rcc")       \
  X(dtype, String, "problem", "input element type (A/B, or conv tensors): bf16, fp16, fp8, ...") \
  X(dtype_a, String, "gemm", "element type of A")                                               \
  X(dtype_b, String, "gemm", "element type of B")                                               \
  X(dtype_c, String, "gemm", "element type of C/D")                                             \
  X(compute_type, String, "problem", "accumulator type (fp32)")                                 \
  X(alpha, Double, "gemm", "scale of the product")                                               \
  X(beta, Double, "gemm", "scale of the input C")                                                \
  /* convolution problem */                                                                      \
  X(conv_direction, String, "conv", "fwd, bwd_data or bwd_weight")                              \
  X(conv_layout, String, "conv", "tensor layout: nhwgc (channels last) or ngchw")               \
  X(spatial_dims, Int, "conv", "2 or 3")                                                         \
  X(conv_n, Int, "conv", "batch N")                                                              \
  X(conv_c, Int, "conv", "input channels C (total over groups)")                                 \
  X(conv_k, Int, "conv", "output channels K (total over groups)")                                \
  X(conv_g, Int, "conv", "groups G")                                                             \
  X(conv_di, Int, "conv", "input depth (1 for 2D)")                                              \
  X(conv_hi, Int, "conv", "input height")                                                        \
  X(conv_wi, Int, "conv", "input width")                                                         \
  X(conv_z, Int, "conv", "filter depth (1 for 2D)")                                              \
  X(conv_y, Int, "conv", "filter height")                                                        \
  X(conv_x, Int, "conv", "filter width")                                                         \
  X(stride_d, Int, "conv", "stride in depth")                                                    \
  X(stride_h, Int, "conv", "stride in height")                                                   \
  X(stride_w, Int, "conv", "stride in width")                                                    \
  X(pad_d, Int, "conv", "padding in depth")                                                      \
  X(pad_h, Int, "conv", "padding in height")                                                     \
  X(pad_w, Int, "conv", "padding in width")                                                      \
  X(dilation_d, Int, "conv", "dilation in depth")                                                \
  X(dilation_h, Int, "conv", "dilation in height")                                               \
  X(dilation_w, Int, "conv", "dilation in width")                                                \
  /* measured figures */                                                                         \
  X(measured_tflops, Double, "figures", "achieved TFLOP/s (2 flops per multiply-add)")          \
  X(latency_ms, Double, "figures", "time per launch in milliseconds (the method's statistic)")  \
  X(bandwidth_gb_s, Double, "figures", "minimum bytes moved / latency, GB/s")                   \
  X(is_valid, Bool, "figures", "true only for finite positive figures of a completed run")      \
  X(invalid_reason, String, "figures", "why is_valid is false (empty when valid)")              \
  X(cv, Double, "figures", "coefficient of variation over the timed repeats")                   \
  X(high_cv, Bool, "figures", "cv above 10 %: a noisy point")                                   \
  X(samples, Int, "figures", "timed repeats behind the statistic")                              \
  X(duplicates_merged, Int, "figures", "repeated measurements merged into this row (median)")   \
  X(aborted, Bool, "figures", "stopped early: clearly slower than the best so far")             \
  X(abort_bound_ms, Double, "figures", "for aborted rows: latency the kernel was known to exceed") \
  X(peer_rank, Int, "figures", "rank in the peer heuristic's list (1 = its pick), null if unlisted") \
  X(peer_rank_b, Int, "figures", "rank in the provider's second heuristic (cuDNN mode B), null if unlisted or none") \
  /* kernel config: fields shared by providers */                                               \
  X(split_k, Int, "config", "split-K factor (1 = none)")                                         \
  X(tile_m, Int, "config", "block tile rows")                                                    \
  X(tile_n, Int, "config", "block tile columns")                                                 \
  X(tile_k, Int, "config", "block tile depth")                                                   \
  X(warp_m, Int, "config", "warps per block along M (CK warp_m; tile engine warps_m)")          \
  X(warp_n, Int, "config", "warps per block along N")                                            \
  X(warp_k, Int, "config", "warps per block along K")                                            \
  X(stages, Int, "config", "pipeline stages")                                                    \
  X(pipeline, String, "config", "pipeline (CK: compv3/compv4/mem; tile: multistage/...)")       \
  X(scheduler, String, "config", "scheduler (CK: intrawave/interwave; tile: data_parallel/...)") \
  X(epilogue, String, "config", "epilogue (CK: cshuffle/default; tile: direct/smem)")           \
  X(pad_m, Bool, "config", "masking/padding along M (CK pad_m; tile mask_m)")                   \
  X(pad_n, Bool, "config", "masking/padding along N")                                            \
  X(pad_k, Bool, "config", "masking/padding along K")                                            \
  X(persistent, Bool, "config", "persistent kernel")                                             \
  X(cluster_m, Int, "config", "thread-block cluster size along M")                              \
  X(cluster_n, Int, "config", "thread-block cluster size along N")                              \
  X(cluster_k, Int, "config", "thread-block cluster size along K")                              \
  X(swizzle, Int, "config", "raster swizzle (tile: width in tiles; cuBLASLt: CTA swizzling 0/1)") \
  /* kernel config: provider-specific */                                                         \
  X(warp_tile_m, Int, "ck_tile", "CK per-warp tile rows")                                        \
  X(warp_tile_n, Int, "ck_tile", "CK per-warp tile columns")                                     \
  X(warp_tile_k, Int, "ck_tile", "CK per-warp tile depth")                                       \
  X(vec_a, Int, "ck_tile", "CK global vector width of A (0 = native)")                          \
  X(vec_b, Int, "ck_tile", "CK global vector width of B (0 = native)")                          \
  X(vec_c, Int, "ck_tile", "CK global vector width of C (0 = native)")                          \
  X(double_smem_buffer, Bool, "ck_conv", "CK conv _dsb: double shared-memory buffer")           \
  X(split_image, Bool, "ck_conv", "CK conv _si: split image")                                    \
  X(instr_m, Int, "tile", "tile engine MMA instruction rows")                                    \
  X(instr_n, Int, "tile", "tile engine MMA instruction columns")                                 \
  X(instr_k, Int, "tile", "tile engine MMA instruction depth")                                   \
  X(cublaslt_algo_id, Int, "cublaslt", "CUBLASLT_ALGO_CONFIG_ID")                                \
  X(cublaslt_tile_id, Int, "cublaslt", "cublasLtMatmulTile_t id")                                \
  X(cublaslt_stages_id, Int, "cublaslt", "cublasLtMatmulStages_t id")                            \
  X(cublaslt_reduction_scheme, Int, "cublaslt", "cublasLtReductionScheme_t")                    \
  X(cublaslt_custom_option, Int, "cublaslt", "CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION")              \
  X(cublaslt_cluster_shape_id, Int, "cublaslt", "cublasLtClusterShape_t id")                    \
  X(cublaslt_inner_shape_id, Int, "cublaslt", "cublasLtMatmulInnerShape_t id")                  \
  X(stage_k, Int, "cublaslt", "K depth of one stage, decoded from the stages id")               \
  X(cudnn_engine_id, Int, "cudnn", "cuDNN engine global index")                                  \
  X(cudnn_knobs, String, "cudnn", "cuDNN knob settings as JSON [[knob_type, value], ...]")      \
  /* method */                                                                                   \
  X(method, String, "method", "measurement method name (kselect.bench, ck_tile.streaming_log)") \
  X(timer, String, "method", "cuda_events, hip_events or unknown")                               \
  X(statistic, String, "method", "median or mean over the timed repeats")                       \
  X(warmup_iters, Int, "method", "warm-up launches before timing")                               \
  X(repeats, Int, "method", "timed batches the statistic is taken over")                        \
  X(iters_per_repeat, Int, "method", "launches per timed batch")                                 \
  X(rotating_buffer_bytes, Int, "method", "input bytes rotated through to defeat L2 (0 = none)") \
  X(sm_clock_min_mhz, Int, "method", "lowest SM clock seen while timing (0 = not sampled)")      \
  X(sm_clock_max_mhz, Int, "method", "highest SM clock seen while timing (0 = not sampled)")     \
  X(power_w, Double, "method", "mean board power while timing, W (0 = not sampled)")           \
  X(temperature_c, Int, "method", "highest GPU temperature while timing (0 = not sampled)")      \
  X(reference_latency_ms, Double, "method",                                                      \
    "drift reference's latency in batches interleaved with this row's (0 = none)")            \
  /* hardware profile */                                                                         \
  X(arch, String, "hardware", "sm_90, gfx950, ...")                                              \
  X(vendor, String, "hardware", "nvidia or amd")                                                 \
  X(device_name, String, "hardware", "device name as the driver reports it")                     \
  X(device_kind, String, "hardware", "lender's kind name (nvidia-h200) when known")             \
  X(device_uuid, String, "hardware", "device UUID")                                              \
  X(cc_major, Int, "hardware", "compute capability major")                                       \
  X(cc_minor, Int, "hardware", "compute capability minor")                                       \
  X(sm_count, Int, "hardware", "streaming multiprocessors")                                      \
  X(sm_clock_mhz, Int, "hardware", "maximum SM clock")                                           \
  X(mem_clock_mhz, Int, "hardware", "maximum memory clock")                                      \
  X(mem_bus_width_bits, Int, "hardware", "memory bus width")                                     \
  X(l2_bytes, Int, "hardware", "L2 cache size")                                                  \
  X(smem_per_sm_bytes, Int, "hardware", "shared memory per SM")                                  \
  X(smem_per_block_optin_bytes, Int, "hardware", "opt-in shared memory per block")              \
  X(regs_per_sm, Int, "hardware", "32-bit registers per SM")                                     \
  X(max_threads_per_sm, Int, "hardware", "resident threads per SM")                              \
  X(global_mem_bytes, Int, "hardware", "device memory")                                          \
  X(peak_mem_bandwidth_gb_s, Double, "hardware", "theoretical memory bandwidth")                 \
  X(driver_version, Int, "hardware", "CUDA driver version (13000 = 13.0)")                       \
  X(runtime_version, Int, "hardware", "CUDA runtime version")                                    \
  X(cublaslt_version, Int, "hardware", "cuBLASLt version")                                       \
  X(cudnn_version, Int, "hardware", "cuDNN version (0 = absent)")                                \
  X(nvrtc_version, Int, "hardware", "NVRTC version")
// clang-format on

// Columns added by a minor schema version: a file written before them lacks them, and reads (and
// merges) as if every row held null there.
inline constexpr std::string_view kDatasetColumnsAddedLater[] = {
    "peer_rank_b", "power_w", "temperature_c", "reference_latency_ms"};

namespace dataset_types {
using String = std::string;
using Int = int64_t;
using Double = double;
using Bool = bool;
}  // namespace dataset_types

// One canonical row; std::nullopt is a Parquet null.
struct DatasetRow {
#define KSELECT_DECLARE_FIELD(name, type, group, doc) std::optional<dataset_types::type> name;
  KSELECT_DATASET_COLUMNS(KSELECT_DECLARE_FIELD)
#undef KSELECT_DECLARE_FIELD
  bool operator==(const DatasetRow&) const = default;
};

enum class ColumnType { kString, kInt, kDouble, kBool };
std::string_view ColumnTypeName(ColumnType type);  // "string", "int64", "double", "bool"

struct ColumnSpec {
  std::string_view name;
  ColumnType type;
  std::string_view group;
  std::string_view description;
};
// Every column, in file order.
const std::vector<ColumnSpec>& DatasetColumns();
// docs/dataset_schema.md: one line per column (kept in sync by a test).
std::string DatasetSchemaMarkdown();

DatasetRow RowFromMeasurement(const Measurement& m, const RunInfo& run);
// The inverse: rebuilds the typed problem and config from the row's typed columns.
StatusOr<Measurement> MeasurementFromRow(const DatasetRow& row);
// The hardware columns of a row as a profile.
HardwareProfile HardwareFromRow(const DatasetRow& row);

// Rows plus the file-level metadata (schema version, tool, sources, options, created_at).
struct Dataset {
  std::vector<DatasetRow> rows;
  std::map<std::string, std::string> metadata;
};

// Writes zstd-compressed Parquet through a temporary file renamed on success: a failure leaves
// neither a partial file nor a changed old one. Adds the schema-version metadata.
Status WriteDataset(const Dataset& dataset, const std::string& path);
// Refuses files of another schema major version, and files whose columns or column types differ
// from DatasetColumns(), naming the column.
StatusOr<Dataset> ReadDataset(const std::string& path);

// A plain column table for exports that are not datasets (feature matrices for notebooks):
// string columns, then double columns (NaN stays NaN), all of `rows` length. Written like a
// dataset: zstd Parquet through a temporary file, with the metadata as file key-values.
struct ExportTable {
  int64_t rows = 0;
  std::vector<std::pair<std::string, std::vector<std::string>>> string_columns;
  std::vector<std::pair<std::string, std::vector<double>>> double_columns;
  std::map<std::string, std::string> metadata;
};
Status WriteExportTable(const ExportTable& table, const std::string& path);

struct DatasetSummary {
  int64_t rows = 0, valid_rows = 0, invalid_rows = 0, high_cv_rows = 0, aborted_rows = 0;
  int64_t shapes = 0, configs = 0;
  std::map<std::string, int64_t> providers, devices, runs, archs, dtype_layouts, op_types;
  double median_cv = 0;
};
DatasetSummary SummarizeDataset(const Dataset& dataset);
std::string SummaryToJson(const DatasetSummary& summary, const Dataset& dataset);
std::string SummaryToText(const DatasetSummary& summary, const Dataset& dataset);

// OK when every row comes from one device (device kind, else device name and arch), or when
// allow_mixed; else kFailedPrecondition listing the devices and ending with `remedy`.
Status CheckOneDevice(const std::vector<DatasetRow>& rows, bool allow_mixed,
                      std::string_view remedy =
                          "Pass --allow-mixed to write them into one "
                          "dataset anyway");

// Concatenates datasets, merging repeated (run, problem, config) rows into their median, or with
// MergeScope::kAcrossRuns repeated (problem, config) rows of any run (MergeDuplicateMeasurements).
// Refuses (kFailedPrecondition) rows from more than one device kind/arch unless allow_mixed.
StatusOr<Dataset> MergeDatasets(const std::vector<Dataset>& inputs, bool allow_mixed,
                                MergeScope scope = MergeScope::kWithinRun);

// Keeps rows matching every set criterion.
// An inclusive range of one dimension (`kselect data filter --m 1:16`); one value is a range
// of one (implicitly, so `filter.m = 4096` keeps meaning exactly 4096).
struct DimRange {
  int64_t min = 0, max = 0;
  DimRange() = default;
  DimRange(int64_t value) : min(value), max(value) {}  // NOLINT(google-explicit-constructor)
  DimRange(int64_t lo, int64_t hi) : min(lo), max(hi) {}
  bool Contains(int64_t value) const { return value >= min && value <= max; }
};

struct RowFilter {
  std::optional<DimRange> m, n, k;
  std::optional<std::string> provider, run_id, dtype, layout, op_type, device_kind, arch;
  bool valid_only = false;
  // Only the rows the provider's heuristics listed (peer_rank or peer_rank_b > 0): their picks
  // per problem, what a peer model needs on a host without the GPU to ask.
  bool peer_picks_only = false;
};
Dataset FilterDataset(const Dataset& dataset, const RowFilter& filter);

// Streaming operations on dataset files: they read row groups batch by batch and only the
// columns they need, holding no DatasetRow per row, so their memory does not grow with the file
// (docs/lab/data_layer.md). Every read applies the checks of ReadDataset.

// A file's row count and kselect.* metadata, from its footer (no data is read).
struct DatasetFileInfo {
  int64_t rows = 0;
  std::map<std::string, std::string> metadata;
};
StatusOr<DatasetFileInfo> InspectDatasetFile(const std::string& path);
// Rows delivered by a visitor: a source calls `visit` once per row, in order, and stops at the
// first error it returns. Lets a consumer take a file streamed or a dataset in memory alike.
using RowSource = std::function<Status(const std::function<Status(const DatasetRow&)>& visit)>;
// The rows of a dataset in memory (which must outlive the source).
RowSource RowsOf(const Dataset& dataset);
// The rows of a file, streamed by ForEachDatasetRow at each call.
RowSource RowsOfFile(const std::string& path);

// Calls `visit` on every row of a file in order, a few thousand rows in memory at a time; stops at
// the first error `visit` returns.
Status ForEachDatasetRow(const std::string& path,
                         const std::function<Status(const DatasetRow&)>& visit);
// SummarizeDataset over a file; `metadata` (optional) gets the file's metadata.
StatusOr<DatasetSummary> SummarizeDatasetFile(const std::string& path,
                                              std::map<std::string, std::string>* metadata);
// MergeDatasets over files, written to `output` with `metadata` (kselect.rows, the schema
// version and, when absent, the tool and time are added). Returns the rows written. `progress`
// counts "rows" over the merge's three passes: 3 x the inputs' rows in all.
StatusOr<int64_t> MergeDatasetFiles(const std::vector<std::string>& inputs,
                                    const std::string& output,
                                    const std::map<std::string, std::string>& metadata,
                                    bool allow_mixed, MergeScope scope = MergeScope::kWithinRun,
                                    const ProgressCallback& progress = {});
// FilterDataset over a file, plus `keep` (optional) called on each row that passes `filter`;
// `metadata` is called once every row was judged (so `keep` may record what it used) and gives
// the output's metadata. Returns the rows written.
using RowPredicate = std::function<StatusOr<bool>(const DatasetRow&)>;
StatusOr<int64_t> FilterDatasetFile(
    const std::string& input, const std::string& output, const RowFilter& filter,
    const RowPredicate& keep, const std::function<std::map<std::string, std::string>()>& metadata);

// Metadata keys written into every file.
inline constexpr std::string_view kMetaSchemaVersion = "kselect.schema_version";
inline constexpr std::string_view kMetaTool = "kselect.tool";
inline constexpr std::string_view kMetaCreatedAt = "kselect.created_at";
inline constexpr std::string_view kMetaSources = "kselect.sources";
inline constexpr std::string_view kMetaOptions = "kselect.options";
inline constexpr std::string_view kMetaRows = "kselect.rows";

}  // namespace kselect
