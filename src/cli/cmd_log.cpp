// kselect log: application GEMM logs (include/kselect/gemm_log.h). `log summarize` reads a log
// (hipBLASLt profile, cuBLASLt trace, TunableOp CSV, plain CSV, kselect problem records) and ranks
// its distinct GEMMs by calls x roofline-estimated time: the GEMMs worth tuning.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/data_files.h"
#include "core/text.h"
#include "kselect/features.h"
#include "kselect/gemm_log.h"
#include "kselect/hardware.h"

#ifndef KSELECT_DEFAULT_HARDWARE_PROFILE
#define KSELECT_DEFAULT_HARDWARE_PROFILE "data/hardware/nvidia-h200.json"
#endif

namespace kselect::cli {
namespace {

// Warnings printed before "... and N more" (all of them are counted in the summary).
constexpr size_t kWarningsShown = 20;

struct LogArgs {
  std::string log;
  std::string format = "auto";
  double threshold = 0.01;
  bool json = false;
  std::string output;
  std::string hardware;  // "" = the shipped H200 profile
};

StatusOr<HardwareConstants> HardwareOf(const std::string& path) {
  // The shipped profile: $KSELECT_DATA_DIR's, an installed binary's, else the source tree's.
  const std::string file =
      path.empty() ? ShippedDataPath("hardware/nvidia-h200.json", KSELECT_DEFAULT_HARDWARE_PROFILE)
                   : path;
  StatusOr<HardwareProfile> profile = LoadHardwareProfile(file);
  if (!profile.ok() && path.empty()) {
    return profile.status().WithContext(
        "the shipped H200 profile (the default of --hw) cannot be read; pass --hw PROFILE.json "
        "(`kselect hw --save` writes one)");
  }
  if (!profile.ok()) return profile.status();
  return HardwareConstantsFor(*profile);
}

std::string Text(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

std::string SummaryText(const GemmLog& log, const GemmLogSummary& summary,
                        const HardwareConstants& hw) {
  std::string out = log.source + " (" + std::string(GemmLogFormatName(log.format)) +
                    "): " + std::to_string(log.total_calls) + " calls, " +
                    std::to_string(log.gemms.size()) + " distinct GEMMs, " +
                    std::to_string(log.warnings.size()) + " lines skipped\n";
  out += "estimated on " + hw.arch + " (" + std::to_string(hw.sm_count) + " SMs, " +
         std::to_string(hw.sm_clock_mhz) + " MHz, " + Text("%.0f", hw.mem_bandwidth_gb_s) +
         " GB/s): max(FLOPs / tensor peak, bytes / bandwidth) + launch floor\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%4s %10s %7s %7s %7s %6s %-8s %-24s %12s %8s %8s  %s\n",
                "rank", "calls", "m", "n", "k", "batch", "layout", "a/b/c/acc", "est us/call",
                "share", "cumul", "epilogue");
  out += line;
  for (size_t r = 0; r < summary.kept.size(); ++r) {
    const GemmLogSummaryEntry& e = summary.kept[r];
    const LoggedGemm& g = log.gemms[e.gemm];
    const GemmProblem& p = g.problem;
    const std::string layout = p.layout.ToString() + "(" + p.layout.BlasOps() + ")";
    const std::string types =
        std::string(DataTypeName(p.dtype_a)) + "/" + std::string(DataTypeName(p.dtype_b)) + "/" +
        std::string(DataTypeName(p.dtype_c)) + "/" + std::string(DataTypeName(p.compute));
    std::snprintf(
        line, sizeof(line), "%4zu %10lld %7lld %7lld %7lld %6lld %-8s %-24s %12.2f %8s %8s  %s\n",
        r + 1, static_cast<long long>(g.calls), static_cast<long long>(p.m),
        static_cast<long long>(p.n), static_cast<long long>(p.k), static_cast<long long>(p.batch),
        layout.c_str(), types.c_str(), e.estimated_us, text::Percent(e.share).c_str(),
        text::Percent(e.cumulative_share).c_str(), g.epilogue.empty() ? "-" : g.epilogue.c_str());
    out += line;
  }
  out += "kept " + std::to_string(summary.kept.size()) + " of " + std::to_string(log.gemms.size()) +
         " GEMMs (" + text::Percent(summary.kept_share) + " of the estimated GEMM time); " +
         std::to_string(summary.dropped) + " below --thr " + Text("%g", summary.threshold) + "\n";
  return out;
}

int Run(const LogArgs& args) {
  const bool to_file = !args.output.empty() && args.output != "-";
  if (to_file) {
    if (auto s = text::CheckOutputFile(args.output, "--output", {args.log}); !s.ok()) {
      return ReportError("log", s);
    }
  }
  GemmLogReadOptions options;
  const StatusOr<GemmLogFormat> format = ParseGemmLogFormat(args.format);
  if (!format.ok()) return ReportError("log", format.status());
  options.format = *format;
  const StatusOr<HardwareConstants> hw = HardwareOf(args.hardware);
  if (!hw.ok()) return ReportError("log", hw.status());

  const StatusOr<GemmLog> log = ReadGemmLog(args.log, options);
  if (!log.ok()) return ReportError("log", log.status());
  for (size_t i = 0; i < log->warnings.size() && i < kWarningsShown; ++i) {
    std::cerr << "kselect log: warning: " << log->warnings[i] << "\n";
  }
  if (log->warnings.size() > kWarningsShown) {
    std::cerr << "kselect log: ... and " << log->warnings.size() - kWarningsShown
              << " more warnings\n";
  }

  const GemmLogSummary summary = SummarizeGemmLog(*log, *hw, args.threshold);
  const std::string out =
      args.json ? GemmLogSummaryToJson(*log, summary) + "\n" : SummaryText(*log, summary, *hw);
  if (!to_file) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    return kExitOk;
  }
  if (auto s = text::WriteFileAtomically(args.output, out); !s.ok()) return ReportError("log", s);
  std::fprintf(stderr, "kselect log: wrote %s (%zu GEMMs)\n", args.output.c_str(),
               summary.kept.size());
  return kExitOk;
}

}  // namespace

Command LogCommand() {
  return {"log",
          "application GEMM logs: `log summarize LOG` ranks the GEMMs an application calls by "
          "their share of the estimated GEMM time",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<LogArgs>();
            app.require_subcommand(1);
            CLI::App* summarize = app.add_subcommand(
                "summarize",
                "read a hipBLASLt profile, cuBLASLt trace, TunableOp CSV, plain CSV or kselect "
                "problem record (plain or .gz) and rank its distinct GEMMs");
            summarize->add_option("log", args->log, "the log file")->required();
            summarize
                ->add_option("--format", args->format,
                             "auto, hipblaslt_profile, cublaslt_trace, tunableop_csv, csv or "
                             "problem_record")
                ->capture_default_str();
            summarize
                ->add_option("--thr", args->threshold,
                             "keep GEMMs whose share of the estimated time is at least this "
                             "fraction (0 keeps all)")
                ->check(CLI::Range(0.0, 1.0))
                ->capture_default_str();
            summarize->add_flag("--json", args->json,
                                "print the summary as JSON (kselect.gemm_log_summary)");
            summarize->add_option("-o,--output", args->output, "write to FILE (default: stdout)")
                ->type_name("FILE");
            summarize
                ->add_option("--hw", args->hardware,
                             "hardware profile JSON to estimate with (default: the shipped "
                             "data/hardware/nvidia-h200.json)")
                ->type_name("PROFILE.json");
            return [args] { return Run(*args); };
          }};
}

}  // namespace kselect::cli
