// The candidate table: the kernel configs a model chooses among, shipped in its directory
// (candidates.json.gz), so a selector learns its candidates without the training data. Configs
// are grouped by what a problem must match to use them: for GEMMs the dtypes and layout (a config
// measured on bf16 TN problems is a candidate for bf16 TN problems only).
//
// File format "kselect.candidate_table" version 1 (gzip-compressed JSON):
//   {"format": "kselect.candidate_table", "version": 1, "provider": "cublaslt",
//    "source": {"data_fingerprint": "...", "rows": N, "tool_version": "..."},
//    "configs": [ {typed config}, ... ],                  // each distinct config once
//    "groups": [ {"key": "gemm a=bf16 b=bf16 c=bf16 layout=rcc", "configs": [0, 1, ...],
//                 "exemplars": [[m, n, k, batch, [i, ...]], ...]} ]}
// An exemplar is one measured problem of the group with its fastest configs (indices into the
// group's configs, fastest first): what won on shapes near a new one, for the selector's first
// stage.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect {

inline constexpr std::string_view kCandidateTableFormat = "kselect.candidate_table";
inline constexpr int kCandidateTableVersion = 1;
// The file of the candidate table in a model directory.
inline constexpr const char* kCandidateTableFile = "candidates.json.gz";

// What a problem must match to share candidates: "gemm a=bf16 b=bf16 c=bf16 layout=rcc", or for
// a convolution its direction, layout and dtype.
std::string CandidateGroupKey(const Problem& problem);

// Fastest configs kept per exemplar.
inline constexpr size_t kExemplarConfigs = 16;

struct Exemplar {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::vector<uint32_t> fastest;  // indices into the group's configs, fastest first
};

struct CandidateTable {
  Provider provider = Provider::kCublasLt;
  std::string data_fingerprint;  // of the rows the configs came from
  int64_t rows = 0;
  std::string tool_version;
  // Group key -> its configs, in a stable order (sorted by ConfigKey).
  std::map<std::string, std::vector<KernelConfig>, std::less<>> groups;
  // Group key -> its measured problems with their fastest configs (may be empty).
  std::map<std::string, std::vector<Exemplar>, std::less<>> exemplars;

  // The group's configs, empty when the table has none for the problem.
  std::span<const KernelConfig> For(const Problem& problem) const;
  size_t NumConfigs() const;  // over all groups (a config in two groups counts twice)
};

std::string CandidateTableToJson(const CandidateTable& table);
// Strict: another format or version, a config of another provider, an index out of range or a
// malformed config is a kParseError naming `source` and the JSON path.
StatusOr<CandidateTable> CandidateTableFromJson(std::string_view text, std::string_view source);
// Reads <model_dir>/candidates.json.gz; kNotFound when the directory has none (saying how to
// make one).
StatusOr<CandidateTable> LoadCandidateTable(const std::string& model_dir);

}  // namespace kselect
