// Small EINTR-safe I/O and time helpers shared by the collrun sources.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace collrun {

// Writes all n bytes, retrying on EINTR, short writes and EAGAIN (waiting
// for POLLOUT on a non-blocking fd).  Returns false
// (errno set) on any other error.
bool write_all(int fd, const char* data, size_t n);
inline bool write_all(int fd, const std::string& s) {
  return write_all(fd, s.data(), s.size());
}

// read(2) retried on EINTR.
ssize_t read_retry(int fd, void* buf, size_t n);

// close(2) that ignores errors and treats -1 as "nothing to close".
void close_fd(int& fd);

// Monotonic clock in milliseconds.
int64_t now_ms();

// "SIGKILL" for 9, "SIG42" style fallback for unnamed signals.
std::string signal_name(int sig);

// One "collrun: <msg>\n" line on stderr, written with a single write.
void report(const std::string& msg);

// Makes sure fds 0, 1 and 2 are open (on /dev/null if they were closed), so
// that pipes created later never land on them.
void ensure_std_fds_open();

}  // namespace collrun
