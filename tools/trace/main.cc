// colltrace: reads the flight recorder's dumps (docs/flight-recorder.md).
//
//   colltrace analyze DIR   per communicator in DIR: the ranks without a
//                           dump, the first collective not completed and
//                           where each rank stands in it, arguments that
//                           differ between ranks, send/recv without their
//                           other half, and a verdict line
//
// Exit status: 0 when the dumps were read and analyzed (whatever they say),
// 1 when DIR or a dump in it could not be read (the others are still
// analyzed), 2 on bad arguments.
#include <cstdio>
#include <cstring>
#include <string>

#include "fr_analyze.h"
#include "fr_dir.h"
#include "fr_render.h"

namespace {

const char* kUsage =
    "usage: colltrace analyze [--] DIR\n"
    "       colltrace --help\n"
    "  analyze DIR  read every flight recorder dump in DIR (coll_fr.<comm id>.r<rank>.jsonl: written on a\n"
    "               failed call, on SIGUSR2 or by collCommDumpRecord) and say, for each communicator, which\n"
    "               ranks left no dump, the first collective not every rank completed, who never entered it\n"
    "               and whom each rank waits on, arguments that differ between ranks, send/recv without\n"
    "               their other half; the last line of each is the verdict\n"
    "exit status: 0 the dumps were read and analyzed (whatever they say), 1 DIR or a dump in it could not\n"
    "  be read (the other dumps are still analyzed), 2 bad arguments\n"
    "format and example: docs/flight-recorder.md\n";

int usageError(const char* what) {
  std::fprintf(stderr, "colltrace: %s\n%s", what, kUsage);
  return 2;
}

int analyze(const std::string& dir) {
  auto read = coll::trace::readDumpDir(dir);
  if (!read.isOk()) {
    std::fprintf(stderr, "colltrace: %s\n", read.status().message().c_str());
    return 1;
  }
  const coll::trace::DirDumps& d = read.value();
  for (const std::string& name : d.ignored)
    std::fprintf(stderr, "colltrace: ignored %s: not a dump name (coll_fr.<16 hex digits>.r<rank>.jsonl)\n",
                 name.c_str());
  if (d.comms.empty()) {
    std::fprintf(stderr, "colltrace: no flight recorder dump (coll_fr.<comm id>.r<rank>.jsonl) in %s\n", dir.c_str());
    return 1;
  }
  for (const coll::trace::CommDumps& c : d.comms)
    for (const coll::trace::UnreadableDump& u : c.unreadable) std::fprintf(stderr, "colltrace: %s\n", u.error.c_str());
  bool first = true;
  for (const coll::trace::CommDumps& c : d.comms) {
    const std::string text = coll::trace::renderReport(coll::trace::analyzeComm(c));
    std::printf("%s%s", first ? "" : "\n", text.c_str());
    first = false;
  }
  return d.anyUnreadable() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usageError("no subcommand");
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd != "analyze") return usageError(("unknown subcommand '" + cmd + "'").c_str());
  std::string dir;
  bool operands = false;  // after "--", everything is DIR
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (!operands && (a == "-h" || a == "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (!operands && a == "--") {
      operands = true;
      continue;
    }
    if (!operands && a.size() > 1 && a[0] == '-') return usageError(("unknown option '" + a + "'").c_str());
    if (!dir.empty()) return usageError("analyze takes one DIR");
    dir = a;
  }
  if (dir.empty()) return usageError("analyze needs a DIR");
  return analyze(dir);
}
