// Where the data kselect ships (rule sets, hardware profiles) is found at run time, so that an
// installed binary reads its own copy and a build tree reads the source tree's.
#pragma once

#include <string>
#include <string_view>

namespace kselect {

// The environment variable naming a data root laid out as an install's share/kselect/ (rules/,
// hardware/): it comes first when set.
inline constexpr const char* kDataDirVariable = "KSELECT_DATA_DIR";

// The path of `installed` (relative to a data root, "rules" or "hardware/nvidia-h200.json"),
// tried in order: under $KSELECT_DATA_DIR when set (returned as is, so an error names it); under
// the install prefix of the binary holding this code (an installed CLI or libkselect_c.so:
// <prefix>/bin or <prefix>/lib, then ../share/kselect) where it exists there; else `source`, the
// file in the source tree this build was made from.
std::string ShippedDataPath(std::string_view installed, std::string_view source);

}  // namespace kselect
