// The host's steady clock for kselect's own timings (sweeps, progress, decisions), one place.
#pragma once

#include <chrono>

namespace kselect {

// Seconds on the steady clock, from an arbitrary origin: for differences only.
inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Milliseconds from `start` (a steady_clock::now()) to now.
inline double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace kselect
