#include "objects.h"

#include <unistd.h>

namespace coll::verbs_emu {

Process& process() {
  static Process p;
  return p;
}

// A process that exits without closing its devices still leaves the fabric
// (a killed one is swept by the next process to join or leave).
Process::~Process() {
  if (reg && pid == getpid()) reg->leave();
  reg = nullptr;
}

Ring* mappedRing(Process& p, uint64_t seg) {
  auto it = p.remote_rings.find(seg);
  if (it != p.remote_rings.end()) return it->second.get();
  // Segment ids are never reused, so a cached mapping is never another
  // object's; drop the cache when it grows (re-mapping is cheap).
  if (p.remote_rings.size() > 512) p.remote_rings.clear();
  std::unique_ptr<Ring> ring = Ring::open(p.reg->segName(seg));
  if (!ring) return nullptr;
  return p.remote_rings.emplace(seg, std::move(ring)).first->second.get();
}

EmuQp* localQp(Process& p, uint32_t qpn) {
  for (EmuQp* q : p.qps)
    if (q->qp.qp_num == qpn) return q;
  return nullptr;
}

}  // namespace coll::verbs_emu
