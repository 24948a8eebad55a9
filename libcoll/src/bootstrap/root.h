// root.h — the rendezvous root: the process that made the unique id serves
// one job's bootstrap on a detached thread, then exits.
//
// It accepts ranks until all nranks have said Hello (checking the secret
// first; strangers and garbage are logged and dropped), then serves
// all-gather rounds until every rank says Done.  At the deadline it tells
// every connected rank which ranks never arrived.
//
// The thread dies with its process: a rank in that process must not return
// from init (and perhaps exit) while the root still owes other ranks their
// last reply, so such a rank waits for it (awaitRootInProcess).
#pragma once

#include <cstdint>

#include "coll/base/socket.h"
#include "bootstrap/unique_id.h"
#include "coll/base/clock.h"

namespace coll::boot {

void startRoot(net::Socket listener, const Secret& secret, int64_t timeoutMs);

// When this process runs the root of the job whose secret is `secret`,
// waits until that root has served every rank (or failed), at most until
// `deadline`; else returns at once.
void awaitRootInProcess(const Secret& secret, const Deadline& deadline);

}  // namespace coll::boot
