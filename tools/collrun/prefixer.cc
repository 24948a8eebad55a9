#include "prefixer.h"

#include <cstring>

#include "io_util.h"

namespace collrun {

void OutputSink::write(const std::string& data) {
  if (broken_ || data.empty()) return;
  if (!write_all(fd_, data)) broken_ = true;
}

void LinePrefixer::feed(const char* data, size_t n) {
  out_.clear();
  while (n > 0) {
    const char* nl = static_cast<const char*>(std::memchr(data, '\n', n));
    if (nl == nullptr) {
      size_t room = kMaxLine - pending_.size();
      if (n < room) {
        pending_.append(data, n);
        break;
      }
      // Overlong line: emit what fits as a line of its own.
      pending_.append(data, room);
      out_ += prefix_;
      out_ += pending_;
      out_ += '\n';
      pending_.clear();
      data += room;
      n -= room;
      continue;
    }
    size_t len = static_cast<size_t>(nl - data) + 1;  // including '\n'
    out_ += prefix_;
    out_ += pending_;
    out_.append(data, len);
    pending_.clear();
    data += len;
    n -= len;
  }
  sink_->write(out_);
}

void LinePrefixer::finish() {
  if (pending_.empty()) return;
  std::string line;
  line.reserve(prefix_.size() + pending_.size() + 1);
  line += prefix_;
  line += pending_;
  line += '\n';
  pending_.clear();
  sink_->write(line);
}

std::string rank_prefix(int rank, int nranks) {
  size_t width = std::to_string(nranks > 1 ? nranks - 1 : 0).size();
  std::string num = std::to_string(rank);
  std::string out = "[";
  if (num.size() < width) out.append(width - num.size(), ' ');
  out += num;
  out += "] ";
  return out;
}

}  // namespace collrun
