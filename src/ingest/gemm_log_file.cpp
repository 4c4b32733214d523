// ReadGemmLog: a log file, plain or gzip-compressed, through the parsers of gemm_log.cpp. Apart
// from them so that the fuzz build compiles the parsers without zlib.
#include "kselect/gemm_log.h"
#include "kselect/model.h"

namespace kselect {

StatusOr<GemmLog> ReadGemmLog(const std::string& path, const GemmLogReadOptions& options) {
  KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(path));
  return ParseGemmLog(text, path, options);
}

}  // namespace kselect
