// record_hooks.h — core's side of the flight recorder
// (record/flight_recorder.h, docs/flight-recorder.md): what a call is in
// the recorder's terms, the names the dump prints, and the dumps
// themselves (on a failure, on SIGUSR2, on collCommDumpRecord).
#pragma once

#include <string>

#include "core/comm.h"
#include "core/op_request.h"
#include "record/flight_recorder.h"

namespace coll::core {

record::CallInfo callInfo(const OpRequest& r, int64_t collSeq, int64_t p2pSeq, bool device);
const record::Names& recordNames();

// The reason a failure is dumped for (the dump header's "reason").
const char* dumpReasonFor(const Status& s);
// COLL_FR_DIR/coll_fr.<comm id>.r<rank>.jsonl (dir "" = the working directory).
std::string recordPath(const collComm* comm, const std::string& dir);
// Writes comm's ring to `path` ("" = recordPath(comm, COLL_FR_DIR)); logs
// where (WARN for failures) or why it could not.
Status dumpRecord(collComm* comm, const std::string& reason, const std::string& message, const std::string& path = "");
// Once per process, where SIGUSR2 is not taken: a thread that dumps every
// live communicator when the signal comes.
void installRecordSignal();

}  // namespace coll::core
