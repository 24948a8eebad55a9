// ibv_context::ops: what verbs.h's inline functions call.  Operations the
// emulator does not offer answer EOPNOTSUPP (or NULL with errno), as a
// provider without them does, instead of leaving a null pointer to jump to.
#include <cerrno>
#include <cstring>

#include "ops.h"

namespace coll::verbs_emu {
namespace {

int reqNotifyCq(ibv_cq*, int) { return EOPNOTSUPP; }
int postSrqRecv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  *bad_wr = wr;
  return EOPNOTSUPP;
}
ibv_mw* allocMw(ibv_pd*, ibv_mw_type) {
  errno = EOPNOTSUPP;
  return nullptr;
}
int bindMw(ibv_qp*, ibv_mw*, ibv_mw_bind*) { return EOPNOTSUPP; }
int deallocMw(ibv_mw*) { return EOPNOTSUPP; }

}  // namespace

void fillContextOps(ibv_context_ops* ops) {
  std::memset(ops, 0, sizeof(*ops));
  ops->poll_cq = pollCq;
  ops->post_send = postSend;
  ops->post_recv = postRecv;
  ops->req_notify_cq = reqNotifyCq;
  ops->post_srq_recv = postSrqRecv;
  ops->alloc_mw = allocMw;
  ops->bind_mw = bindMw;
  ops->dealloc_mw = deallocMw;
}

}  // namespace coll::verbs_emu
