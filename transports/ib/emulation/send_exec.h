// Running one send WR: the requester's and the responder's checks, the copy
// into the target process, and the receive completion there.
#pragma once

#include "objects.h"

namespace coll::verbs_emu {

struct ExecResult {
  bool receiver_not_ready = false;  // no receive WR posted: retry later
  uint8_t peer_min_rnr_timer = 0;   // the responder's RNR NAK timer (encoding)
  ibv_wc_status status = IBV_WC_SUCCESS;
};

ExecResult executeWr(Process& p, EmuQp* q, const PendingWr& w);

}  // namespace coll::verbs_emu
