// Writing to a worker process's pipe: whole buffers, and without the SIGPIPE that a worker dead
// since its last reply would raise (which would end the coordinator).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace kselect {

// Writes all of `text`; false on an error (EPIPE for a reader that is gone).
inline bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// WriteAll with SIGPIPE ignored for the write (EPIPE is reported instead), the handler restored.
inline bool WriteAllIgnoringSigpipe(int fd, const std::string& text) {
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  const bool written = WriteAll(fd, text);
  ::sigaction(SIGPIPE, &previous, nullptr);
  return written;
}

}  // namespace kselect
