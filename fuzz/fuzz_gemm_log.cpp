// libFuzzer target: ParseGemmLog (every application GEMM log format, auto-detected or forced by
// the first byte), then the summary and its JSON, must return a value or a status for any bytes,
// never crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kselect/gemm_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte: 0 = auto-detect, 1..5 = one reader forced (it must cope with any format's text).
  kselect::GemmLogReadOptions options;
  options.format = static_cast<kselect::GemmLogFormat>(data[0] % 6);
  options.max_gemms = 10'000;
  options.max_sequence = 100'000;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const kselect::StatusOr<kselect::GemmLog> log = kselect::ParseGemmLog(text, "fuzz.log", options);
  if (!log.ok()) return 0;
  kselect::HardwareConstants hw;
  hw.arch = "sm_90";
  hw.sm_count = 132;
  hw.sm_clock_mhz = 1980;
  hw.mem_bandwidth_gb_s = 4814.3;
  hw.flops_per_clock_per_sm_16bit = 4096;
  const kselect::GemmLogSummary summary = kselect::SummarizeGemmLog(*log, hw, 0.01);
  const std::string json = kselect::GemmLogSummaryToJson(*log, summary);
  volatile size_t bytes = json.size() + log->warnings.size();
  (void)bytes;
  return 0;
}
