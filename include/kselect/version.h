// The tool's version, written into every dataset, model and report kselect produces.
#pragma once

#include <string>

namespace kselect {

// Semantic version of kselect, "0.1.0".
const char* ToolVersion();
// Git commit the binary was built from ("unknown" outside a checkout).
const char* GitRevision();
// "kselect 0.1.0 (git abc1234)".
std::string ToolDescription();

}  // namespace kselect
