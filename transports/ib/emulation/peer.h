// Finding the QP at the other end of a connection in the fabric registry.
#pragma once

#include "objects.h"

namespace coll::verbs_emu {

// The record of q's destination: its QPN, on a port that has q's destination
// GID (or, on InfiniBand without a GRH, its LID).  nullptr when there is none
// (never created, destroyed, or its process left): a real requester would get
// no answer and time out.  Needs the registry lock.
QpRec* findPeer(Registry* reg, const EmuQp* q);

// Whether peer is connected back to q (a responder drops packets from any
// QP but the one it was connected to).
bool connectedBack(const QpRec& peer, const EmuQp* q, const QpRec& self);

}  // namespace coll::verbs_emu
