// The functions verbs.h's inline calls reach through ibv_context::ops, and the
// QP error path they share.
#pragma once

#include <infiniband/verbs.h>

#include "objects.h"

namespace coll::verbs_emu {

int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int pollCq(ibv_cq* cq, int num_entries, ibv_wc* wc);
// Fills ctx->ops: the three above, and EOPNOTSUPP for what is not emulated
// (completion channels, SRQs, memory windows) instead of a null pointer.
void fillContextOps(ibv_context_ops* ops);

// Runs this QP's waiting send WRs as far as they can go now.
void runPending(Process& p, EmuQp* q);
// Moves q to ERR: the first waiting send WR completes with first_status
// (IBV_WC_WR_FLUSH_ERR to flush it like the rest), every other waiting send
// WR and every posted receive WR with IBV_WC_WR_FLUSH_ERR.
void enterError(Process& p, EmuQp* q, ibv_wc_status first_status);
// Records q's state in the registry, where peers look.
void publishState(Process& p, EmuQp* q);
// Pushes a completion of q's send WR on its send CQ.
void completeSend(EmuQp* q, const PendingWr& w, ibv_wc_status status);
// Polling's look at the QPs on cq: a peer gone or a remote responder error
// moves them to ERR (rate-limited: it takes the registry lock).
void checkHealth(Process& p, EmuCq* cq);

}  // namespace coll::verbs_emu
