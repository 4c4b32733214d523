// Loading cuDNN 9 at run time: kselect never links libcudnn, so every binary starts on a host
// without it, and the cuDNN provider reports kUnavailable there instead.
#pragma once

#include <string>

#include "kselect/status.h"

namespace kselect::cudnn {

// The loaded library, once per process.
struct CudnnLibrary {
  std::string path;  // what dlopen was given ("libcudnn.so.9", or $KSELECT_CUDNN_LIBRARY)
  long version = 0;  // cudnnGetVersion(): 91300 for 9.13.0
  std::string VersionText() const;  // "9.13.0"
};

// Loads libcudnn.so.9 (or the file $KSELECT_CUDNN_LIBRARY names) on first use and points
// cudnn-frontend's dynamic loader at it. kUnavailable, saying what was tried, when it is
// missing or older than cuDNN 9; the same answer afterwards (no retry per call).
StatusOr<const CudnnLibrary*> LoadCudnn();

}  // namespace kselect::cudnn
