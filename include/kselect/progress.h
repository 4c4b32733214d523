// Progress of long library work (a bench sweep, a dataset merge, a model's predictions over a
// dataset, a config search), reported to an optional callback in the operation's options. The
// library prints nothing itself: `kselect` draws counts, rate and ETA from the reports on stderr
// (docs/cli.md, "Progress output").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace kselect {

// One report: `done` of `total` units of `unit` finished. Over one operation `total` stays the
// same and `done` never decreases; the last report has done == total unless the operation stopped
// early (an error, a time limit, a search out of proposals).
struct ProgressCount {
  int64_t done = 0;
  int64_t total = 0;
  std::string_view unit;  // what is counted, plural: "problems", "rows", "configs"
  // What just started or finished, for a verbose log ("device 0: gemm 4096x16x4096 ...: 1203
  // configs to time"); empty for a plain count.
  std::string detail;
};

// Called on the operation's thread; an empty function reports nothing.
using ProgressCallback = std::function<void(const ProgressCount&)>;

}  // namespace kselect
