#include "peer.h"

#include <cstring>

namespace coll::verbs_emu {

QpRec* findPeer(Registry* reg, const EmuQp* q) {
  QpRec* rec = reg->qpByNum(q->attr.dest_qp_num);
  if (!rec) return nullptr;
  const ibv_ah_attr& ah = q->attr.ah_attr;
  if (!ah.is_global) return rec->lid != 0 && rec->lid == ah.dlid ? rec : nullptr;
  for (int i = 0; i < kGidCount; ++i)
    if (std::memcmp(rec->gids[i], ah.grh.dgid.raw, 16) == 0) return rec;
  return nullptr;
}

bool connectedBack(const QpRec& peer, const EmuQp* q, const QpRec& self) {
  if (peer.dest_qpn != q->qp.qp_num) return false;
  if (!peer.dest_is_global) return self.lid != 0 && peer.dest_lid == self.lid;
  for (int i = 0; i < kGidCount; ++i)
    if (std::memcmp(self.gids[i], peer.dest_gid, 16) == 0) return true;
  return false;
}

}  // namespace coll::verbs_emu
