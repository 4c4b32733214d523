// Solution libraries: the tuner's verified winners, one per exact problem, which the selector and
// kselect::Gemm read before anything else (the NVIDIA analogue of hipBLASLt's "Equality" logic
// files). A library is self-describing (device, driver, CUDA and library versions, tool version,
// run id) and refuses to load where its measurements do not hold: on another device or another
// version of the library whose configs it names. Format: "kselect.solutions" version 2 (JSON, plain
// or gzip; docs/formats.md); version 1 files (entries without provenance) still load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/hardware.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/provenance.h"
#include "kselect/status.h"

namespace kselect {

// One tuned problem: the config to run and what it was measured against.
struct Solution {
  Problem problem;
  KernelConfig config;
  // Median latency of the config and of the reference (the provider library's default pick),
  // timed interleaved in one process (ms); 0 where unknown (a version 1 file).
  double latency_ms = 0;
  double reference_latency_ms = 0;
  double speedup = 0;  // reference / config, median of the interleaved rounds' ratios
  double tflops = 0;
  // The check against the reference GEMM on random data ("max err ..., rel rms ...").
  std::string verification;
  std::string run_id;  // the tune run that produced it
};

// Where a library's figures were measured: the provenance record (kselect/provenance.h) under the
// key "identity". A library loads only where device_name, sm_count and the provider library's
// version match (driver and runtime versions are recorded, not enforced: a driver update does not
// change which kernels cuBLASLt runs).
using SolutionIdentity = Provenance;

struct SolutionLibrary {
  // Where it was tuned; identity.tool_version is the kselect that tuned it (the file's top-level
  // "tool_version" names the kselect that wrote the file).
  SolutionIdentity identity;
  std::vector<Solution> solutions;  // one per distinct problem (ProblemToString)
  // Index of the solution for `problem`, or nullopt.
  std::optional<size_t> Find(const Problem& problem) const;
};

// Reads a library (plain or gzip). Errors name the file and entry; a library with two solutions
// for one problem is refused.
StatusOr<SolutionLibrary> LoadSolutionLibrary(const std::string& path);
// The same from the file's text (plain JSON); `path` names it in errors.
StatusOr<SolutionLibrary> SolutionLibraryFromJson(std::string_view text, const std::string& path);
// Writes atomically (version 2, gzip when the path ends in .gz).
Status SaveSolutionLibrary(const SolutionLibrary& library, const std::string& path);

// OK when `library` was measured where `here` is: the same device name and SM count (checked
// only when `here` has a device) and the same cuBLASLt version for cuBLASLt solutions (NVRTC's
// for the tile engine). kSchemaMismatch naming the field that differs otherwise (CheckProvenance).
Status CheckSolutionIdentity(const SolutionLibrary& library, const HardwareProfile& here,
                             const std::string& source);

// What a merge did.
struct MergeSummary {
  int64_t added = 0;      // problems the base lacked
  int64_t replaced = 0;   // problems whose incoming solution was faster (or forced)
  int64_t kept = 0;       // problems whose base solution stayed (incoming not faster)
  int64_t unchanged = 0;  // problems whose incoming solution was the same config
};

// Merges `incoming` into `base` with TensileMergeLibrary's rules: a new problem is added; an
// existing one is replaced when the incoming solution has the higher speedup over the reference
// (or `force`), kept otherwise. Both must share one identity, tool and model aside
// (kSchemaMismatch naming the field that differs otherwise).
StatusOr<MergeSummary> MergeSolutionLibraries(SolutionLibrary& base,
                                              const SolutionLibrary& incoming, bool force);

}  // namespace kselect
