// kselect hw: show (and optionally save) the hardware profile of a GPU, or of a saved file.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "cli/command.h"
#include "kselect/hardware.h"

namespace kselect::cli {
namespace {

struct HwOptions {
  int device = 0;
  std::string save_path;
  std::string load_path;
  std::string device_kind;
  bool json = false;
  bool libraries_only = false;
};

// CUDA-style versions (13000 -> "13.0"); cuBLASLt and cuDNN 9 count major*10000+minor*100+patch.
std::string CudaVersionText(int32_t v) {
  if (v <= 0) return "absent";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) + " (" + std::to_string(v) +
         ")";
}
std::string TripleVersionText(int32_t v) {
  if (v <= 0) return "absent";
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
         std::to_string(v % 100) + " (" + std::to_string(v) + ")";
}

void PrintRow(const char* label, const std::string& value) {
  std::printf("  %-26s %s\n", label, value.c_str());
}

void PrintLibraries(const HardwareProfile& p) {
  std::printf("libraries\n");
  PrintRow("driver (CUDA API)",
           p.driver_version > 0 ? CudaVersionText(p.driver_version) : "absent (no NVIDIA driver)");
  PrintRow("runtime", CudaVersionText(p.runtime_version));
  PrintRow("cublasLt", TripleVersionText(p.cublaslt_version));
  PrintRow("cudnn", TripleVersionText(p.cudnn_version));
  PrintRow("nvrtc", CudaVersionText(p.nvrtc_version));
}

// Sizes as a reader compares them with data sheets: "50 MiB" L2, "228 KiB" shared memory.
std::string SizeText(int64_t bytes) {
  char text[64];
  if (bytes >= 1024 * 1024) {
    std::snprintf(text, sizeof(text), "%.4g MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  } else {
    std::snprintf(text, sizeof(text), "%.4g KiB", static_cast<double>(bytes) / 1024.0);
  }
  return text;
}

void PrintProfile(const HardwareProfile& p) {
  std::printf("device\n");
  PrintRow("name", p.device_name);
  PrintRow("kind", p.device_kind.empty() ? "(unknown)" : p.device_kind);
  PrintRow("vendor", p.vendor);
  PrintRow("arch",
           p.arch + " (cc " + std::to_string(p.cc_major) + "." + std::to_string(p.cc_minor) + ")");
  PrintRow("uuid", p.uuid);
  PrintRow("SMs", std::to_string(p.sm_count));
  PrintRow("SM clock (max)", std::to_string(p.sm_clock_mhz) + " MHz");
  PrintRow("memory clock (max)", std::to_string(p.mem_clock_mhz) + " MHz");
  PrintRow("memory bus", std::to_string(p.mem_bus_width_bits) + " bits");
  char bandwidth[64];
  std::snprintf(bandwidth, sizeof(bandwidth), "%.1f GB/s", p.peak_mem_bandwidth_gb_s);
  PrintRow("peak memory bandwidth", bandwidth);
  char memory[64];
  std::snprintf(memory, sizeof(memory), "%.2f GiB",
                static_cast<double>(p.global_mem_bytes) / (1024.0 * 1024.0 * 1024.0));
  PrintRow("global memory", memory);
  PrintRow("L2", SizeText(p.l2_bytes));
  PrintRow("shared memory per SM", SizeText(p.smem_per_sm_bytes));
  PrintRow("shared memory per block", SizeText(p.smem_per_block_optin_bytes) + " (opt-in)");
  PrintRow("registers per SM", std::to_string(p.regs_per_sm));
  PrintRow("max threads per SM", std::to_string(p.max_threads_per_sm));
  PrintLibraries(p);
}

void Print(const HardwareProfile& profile, bool json) {
  if (json) {
    std::cout << HardwareProfileToJson(profile) << "\n";
  } else {
    PrintProfile(profile);
  }
}

int Run(const HwOptions& options) {
  if (!options.load_path.empty()) {
    const StatusOr<HardwareProfile> loaded = LoadHardwareProfile(options.load_path);
    if (!loaded.ok()) return ReportError("hw", loaded.status());
    Print(*loaded, options.json);
    return kExitOk;
  }

  if (options.libraries_only) {
    const HardwareProfile libraries = QueryLibraryVersions();
    if (options.json) {
      std::cout << HardwareProfileToJson(libraries) << "\n";
    } else {
      PrintLibraries(libraries);
    }
    return kExitOk;
  }

  StatusOr<HardwareProfile> queried = QueryHardwareProfile(options.device);
  if (!queried.ok()) {
    // Still say what software is here: often the question is whether the toolkit is usable at
    // all. Not in --json mode, where a zero-filled profile on stdout would pass for a real one.
    if (!options.json) PrintLibraries(QueryLibraryVersions());
    std::fflush(stdout);
    return ReportError("hw", queried.status());
  }
  HardwareProfile profile = std::move(queried).value();
  profile.device_kind = options.device_kind;
  Print(profile, options.json);
  if (!options.save_path.empty()) {
    const Status saved = SaveHardwareProfile(profile, options.save_path);
    if (!saved.ok()) return ReportError("hw", saved);
    std::fprintf(stderr, "kselect hw: saved profile to %s\n", options.save_path.c_str());
  }
  return kExitOk;
}

}  // namespace

Command HwCommand() {
  return {"hw", "show the GPU and CUDA library profile, or a saved one; --save writes it as JSON",
          [](CLI::App& app) -> RunFunction {
            auto options = std::make_shared<HwOptions>();
            auto* device = app.add_option("--device", options->device, "CUDA device index")
                               ->type_name("N")
                               ->check(CLI::NonNegativeNumber)
                               ->capture_default_str();
            auto* save = app.add_option("--save", options->save_path,
                                        "write the profile to FILE as JSON (atomically)")
                             ->type_name("FILE");
            auto* kind = app.add_option("--device-kind", options->device_kind,
                                        "record the lender's kind name (e.g. nvidia-h200)")
                             ->type_name("NAME");
            auto* libraries = app.add_flag(
                "--libraries-only", options->libraries_only,
                "show only the CUDA library versions; succeeds on hosts without a GPU");
            app.add_option("--load", options->load_path,
                           "read, validate and show a saved profile instead of querying a GPU")
                ->type_name("FILE")
                ->excludes(device)
                ->excludes(save)
                ->excludes(kind)
                ->excludes(libraries);
            libraries->excludes(device)->excludes(save)->excludes(kind);
            app.add_flag("--json", options->json, "print JSON instead of a table");
            return [options] { return Run(*options); };
          }};
}

}  // namespace kselect::cli
