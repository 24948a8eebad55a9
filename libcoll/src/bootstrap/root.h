// root.h — the rendezvous root: the process that made the unique id serves
// one job's bootstrap on a detached thread, then exits.
//
// It accepts ranks until all nranks have said Hello (checking the secret
// first; strangers and garbage are logged and dropped), then serves
// all-gather rounds until every rank says Done.  At the deadline it tells
// every connected rank which ranks never arrived.
#pragma once

#include <cstdint>

#include "net/socket.h"
#include "bootstrap/unique_id.h"

namespace coll::boot {

void startRoot(net::Socket listener, const Secret& secret, int64_t timeoutMs);

}  // namespace coll::boot
