// Line prefixing of the ranks' output: bytes read from a rank's pipe go in,
// whole "[rank] line\n" records come out, each written with one write_all so
// that lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace collrun {

// A destination fd (collrun's stdout or stderr).  After a write error
// (e.g. EPIPE: the reader went away) further output is dropped.
class OutputSink {
 public:
  explicit OutputSink(int fd) : fd_(fd) {}
  void write(const std::string& data);

 private:
  int fd_;
  bool broken_ = false;
};

class LinePrefixer {
 public:
  // A line longer than this without a newline is emitted in pieces, each
  // carrying the prefix and ending in '\n'.
  static constexpr size_t kMaxLine = 1 << 20;

  LinePrefixer(std::string prefix, OutputSink* sink)
      : prefix_(std::move(prefix)), sink_(sink) {}

  // Emits every completed line in data; keeps the unfinished tail.
  void feed(const char* data, size_t n);
  // End of stream: emits an unfinished last line, adding the newline.
  void finish();

 private:
  std::string prefix_;
  OutputSink* sink_;
  std::string pending_;  // bytes of the current, unfinished line
  std::string out_;      // scratch buffer for one feed()
};

// "[ 3] " for rank 3 of 16: the rank right-aligned to the width of nranks-1.
std::string rank_prefix(int rank, int nranks);

}  // namespace collrun
