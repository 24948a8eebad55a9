#include "core/record_hooks.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "coll/base/log.h"
#include "coll/base/settings.h"

namespace coll::core {
namespace {

const char* kindName(uint8_t k) { return sched::collKindName(static_cast<sched::CollKind>(k)); }

const char* dtypeName(uint8_t d) {
  static const char* const kNames[] = {"int8",    "uint8",   "int32",    "uint32",     "int64",     "uint64",
                                       "float16", "float32", "float64",  "bfloat16",   "float8e4m3", "float8e5m2"};
  return d < sizeof(kNames) / sizeof(kNames[0]) ? kNames[d] : "unknown";
}

const char* redopName(uint8_t o) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return o < sizeof(kNames) / sizeof(kNames[0]) ? kNames[o] : "unknown";
}

const char* algoNameOf(uint8_t a) { return sched::algoName(static_cast<sched::Algo>(a)); }

int gSignalPipe[2] = {-1, -1};

void onSignal(int) {
  const int saved = errno;
  const char one = 1;
  (void)!::write(gSignalPipe[1], &one, 1);
  errno = saved;
}

}  // namespace

record::CallInfo callInfo(const OpRequest& r, int64_t collSeq, int64_t p2pSeq, bool device) {
  record::CallInfo c;
  c.collSeq = collSeq;
  c.p2pSeq = p2pSeq;
  c.count = r.count;
  c.kind = static_cast<uint8_t>(r.kind);
  c.dtype = static_cast<uint8_t>(r.dtype);
  if (sched::reduces(r.kind)) c.redop = static_cast<uint8_t>(r.op < collNumOps ? r.op : 5);
  c.device = device ? 1 : 0;
  c.root = r.root;
  return c;
}

const record::Names& recordNames() {
  static const record::Names names{kindName, dtypeName, redopName, algoNameOf};
  return names;
}

const char* dumpReasonFor(const Status& s) {
  switch (s.code()) {
    case collTimeout: return "timeout";
    case collArgMismatch: return "mismatch";
    case collAborted: return "aborted";
    case collRemoteError:
      if (s.message().find(" died ") != std::string::npos) return "dead_peer";
      if (s.message().find(" failed: ") != std::string::npos) return "peer_failed";
      return "error";
    default: return "error";
  }
}

std::string recordPath(const collComm* comm, const std::string& dir) {
  const std::string name = fmt::format("coll_fr.{}.r{}.jsonl", comm->commId, comm->rank);
  return dir.empty() ? name : dir + "/" + name;
}

Status dumpRecord(collComm* comm, const std::string& reason, const std::string& message, const std::string& path) {
  if (!comm->recorder || !comm->recorder->on())
    return makeError(collInvalidUsage, "the flight recorder is off (COLL_FR_ENTRIES=0)");
  const std::string to = path.empty() ? recordPath(comm, comm->recordDir) : path;
  record::DumpHeader h;
  h.comm = comm->commId;
  h.rank = comm->rank;
  h.nranks = comm->nranks;
  h.reason = reason;
  h.message = message;
  Status st = comm->recorder->dump(to, h, recordNames());
  if (!st.isOk()) {
    COLL_LOG(Warn, kInit, comm->rank, "{}", st.message());
    return st;
  }
  if (reason == "api" || reason == "signal")
    COLL_LOG(Info, kInit, comm->rank, "flight recorder: wrote {} ({})", to, reason);
  else
    COLL_LOG(Warn, kInit, comm->rank, "flight recorder: wrote {} ({}; `colltrace analyze` reads every rank's)", to,
             reason);
  return Status::ok();
}

void installRecordSignal() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    if (sigaction(SIGUSR2, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;  // the program's own
    if (pipe2(gSignalPipe, O_CLOEXEC) != 0) return;
    std::thread([] {
      char c;
      while (::read(gSignalPipe[0], &c, 1) == 1)
        forEachLiveComm([](collComm* comm) { (void)dumpRecord(comm, "signal", ""); });
    }).detach();
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, nullptr);
  });
}

}  // namespace coll::core
