// A cuDNN engine config: the engine's global index and its knob settings (knob type, value), the
// type a cudnnBackendKnobType_t value (cuDNN's own numbering: cudnn-frontend's KnobType_t lacks
// some), sorted by type. Its fields are described once, in the table in cudnn_config.cpp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace kselect {

struct ConfigSchema;

struct CudnnConfig {
  int64_t engine_id = 0;
  std::vector<std::pair<int32_t, int64_t>> knobs;

  bool operator==(const CudnnConfig&) const = default;
};

// The table of CudnnConfig's fields (the schema registry's cuDNN row).
const ConfigSchema& CudnnConfigSchema();

}  // namespace kselect
