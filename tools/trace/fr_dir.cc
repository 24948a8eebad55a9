#include "fr_dir.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

namespace coll::trace {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "coll_fr.";
constexpr std::string_view kSuffix = ".jsonl";

Result<std::string> readFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return makeError(collSystemError, "{}: cannot open: {}", path, std::strerror(errno));
  std::string text;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) return makeError(collSystemError, "{}: cannot read: {}", path, std::strerror(err));
  return text;
}

// The dump in `path`, or why it cannot be used.
Result<FrDump> loadDump(const fs::directory_entry& entry, const DumpFileName& name) {
  const std::string path = entry.path().string();
  std::error_code ec;
  if (!entry.is_regular_file(ec)) return makeError(collSystemError, "{}: not a regular file", path);
  auto text = readFile(path);
  if (!text.isOk()) return text.status();
  auto dump = parseDump(path, text.value());
  if (!dump.isOk()) return dump.status();
  const FrHeader& h = dump.value().header;
  if (h.comm != name.comm || h.rank != name.rank)
    return makeError(collInvalidArgument, "{}:1: the header says comm {} rank {}, the file name comm {} rank {}", path,
                     h.comm, h.rank, name.comm, name.rank);
  return dump;
}

}  // namespace

std::optional<DumpFileName> parseDumpFileName(std::string_view name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix))
    return std::nullopt;
  std::string_view mid = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  // <16 hex>.r<digits>
  if (mid.size() < 19 || mid.substr(16, 2) != ".r") return std::nullopt;
  DumpFileName out;
  out.comm = std::string(mid.substr(0, 16));
  if (!std::all_of(out.comm.begin(), out.comm.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  const std::string_view digits = mid.substr(18);
  // Seven digits reach past any rank the format allows (fr_dump.cc: 2^20).
  if (digits.size() > 7 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    out.rank = out.rank * 10 + (c - '0');
  }
  return out;
}

bool DirDumps::anyUnreadable() const {
  return std::any_of(comms.begin(), comms.end(), [](const CommDumps& c) { return !c.unreadable.empty(); });
}

Result<DirDumps> readDumpDir(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return makeError(collSystemError, "{}: cannot list the directory: {}", dir, ec.message());
  std::vector<fs::directory_entry> entries;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    entries.push_back(*it);
  }
  if (ec) return makeError(collSystemError, "{}: cannot list the directory: {}", dir, ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const fs::directory_entry& a, const fs::directory_entry& b) { return a.path() < b.path(); });

  DirDumps out;
  std::map<std::string, CommDumps> byComm;
  for (const fs::directory_entry& entry : entries) {
    const std::string file = entry.path().filename().string();
    const auto name = parseDumpFileName(file);
    if (!name) {
      if (file.starts_with(kPrefix)) out.ignored.push_back(file);
      continue;
    }
    CommDumps& comm = byComm[name->comm];
    comm.comm = name->comm;
    auto dump = loadDump(entry, *name);
    if (dump.isOk()) {
      comm.dumps.push_back(dump.take());
    } else {
      comm.unreadable.push_back({name->rank, dump.status().message()});
    }
  }
  for (auto& [id, comm] : byComm) {
    std::sort(comm.dumps.begin(), comm.dumps.end(),
              [](const FrDump& a, const FrDump& b) { return a.header.rank < b.header.rank; });
    std::sort(comm.unreadable.begin(), comm.unreadable.end(),
              [](const UnreadableDump& a, const UnreadableDump& b) { return a.rank < b.rank; });
    out.comms.push_back(std::move(comm));
  }
  return out;
}

}  // namespace coll::trace
