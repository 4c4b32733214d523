// Gzip file reading and writing (model.h): model files, candidate tables, solution libraries and
// application logs go through these, with zlib and nothing else (the fuzz build links them alone).
#include <zlib.h>

#include <string>

#include "core/text.h"
#include "kselect/model.h"

namespace kselect {

StatusOr<std::string> ReadMaybeGzipFile(const std::string& path, int64_t max_bytes) {
  KSELECT_RETURN_IF_ERROR(text::CheckReadableFile(path));
  gzFile file = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (file == nullptr) return IoError(path + ": cannot open");
  std::string contents;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) {
    if (static_cast<int64_t>(contents.size()) + n > max_bytes) {
      gzclose(file);
      return IoError(path + ": more than " + std::to_string(max_bytes) +
                     " bytes once decompressed, over the reading limit (a runaway or corrupt "
                     "file?)");
    }
    contents.append(buffer, n);
  }
  int error = Z_OK;
  const char* message = gzerror(file, &error);
  const bool failed = n < 0 || (error != Z_OK && error != Z_STREAM_END);
  const std::string reason = failed ? message : "";
  gzclose(file);
  if (failed) return IoError(path + ": corrupt or truncated gzip data (" + reason + ")");
  return contents;
}

Status WriteGzipFile(const std::string& path, const std::string& text) {
  // deflate with windowBits 15 + 16 writes the gzip format; level 6 as gzip's default. One call:
  // zlib counts input and output in 32 bits.
  if (text.size() > (1ull << 31)) return InvalidArgumentError(path + ": over 2 GiB to compress");
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return InternalError("zlib: deflateInit2 failed");
  std::string compressed(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(compressed.data());
  z.avail_out = static_cast<uInt>(compressed.size());
  const int result = deflate(&z, Z_FINISH);
  compressed.resize(z.total_out);
  deflateEnd(&z);
  if (result != Z_STREAM_END) return InternalError(path + ": gzip compression failed");
  return text::WriteFileAtomically(path, compressed);
}

}  // namespace kselect
