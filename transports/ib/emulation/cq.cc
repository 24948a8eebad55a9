// Completion queues: a ring of exactly cqe entries in its own segment (a
// remote writer pushes receive completions into it).  A completion that finds
// the ring full breaks the CQ: every later poll fails, nothing is dropped
// silently.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "objects.h"
#include "ops.h"
#include "robust_mutex.h"

using namespace coll::verbs_emu;

namespace {
constexpr int kMaxCqe = 1 << 16;
}  // namespace

extern "C" {

__attribute__((visibility("default"))) ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                                                            ibv_comp_channel* channel, int comp_vector) {
  // Completion channels (ibv_create_comp_channel) are not emulated: no
  // caller can hold one of ours.
  if (cqe < 1 || cqe > kMaxCqe || channel != nullptr || comp_vector != 0) {
    errno = EINVAL;
    return nullptr;
  }
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  auto* cq = new (std::nothrow) EmuCq{};
  if (!cq) {
    errno = ENOMEM;
    return nullptr;
  }
  {
    RobustLock lock(p.reg->mutex());
    cq->seg = p.reg->newId();
    if (!p.reg->addSeg(cq->seg, p.pid)) {
      delete cq;
      errno = ENOMEM;
      return nullptr;
    }
  }
  cq->ring = Ring::create(p.reg->segName(cq->seg), static_cast<uint32_t>(cqe), sizeof(CqEntry));
  if (!cq->ring) {
    int saved = errno;
    RobustLock lock(p.reg->mutex());
    p.reg->freeSeg(cq->seg);
    delete cq;
    errno = saved;
    return nullptr;
  }
  cq->cq.context = context;
  cq->cq.cq_context = cq_context;
  cq->cq.cqe = cqe;
  cq->cq.handle = static_cast<uint32_t>(cq->seg);
  pthread_mutex_init(&cq->cq.mutex, nullptr);
  pthread_cond_init(&cq->cq.cond, nullptr);
  p.cqs.push_back(cq);
  return &cq->cq;
}

__attribute__((visibility("default"))) int ibv_destroy_cq(ibv_cq* cq) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuCq* e = emuCq(cq);
  if (e->users > 0) return EBUSY;  // as the kernel: a QP still uses it
  if (p.reg) {
    RobustLock lock(p.reg->mutex());
    p.reg->freeSeg(e->seg);
  }
  p.cqs.erase(std::remove(p.cqs.begin(), p.cqs.end(), e), p.cqs.end());
  pthread_cond_destroy(&e->cq.cond);
  pthread_mutex_destroy(&e->cq.mutex);
  delete e;
  return 0;
}

}  // extern "C"

namespace coll::verbs_emu {

int pollCq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  if (num_entries < 0) return -1;
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuCq* e = emuCq(cq);
  // Polling is the progress point for WRs that wait (receiver not ready) and
  // where a dead peer is noticed.
  for (EmuQp* q : p.qps)
    if (!q->pending.empty()) runPending(p, q);
  checkHealth(p, e);
  if (e->ring->overflowed()) {
    errno = EOVERFLOW;
    return -1;
  }
  CqEntry entries[16];
  int got = 0;
  while (got < num_entries) {
    const uint32_t want = static_cast<uint32_t>(std::min(num_entries - got, 16));
    const uint32_t n = e->ring->pop(entries, want);
    for (uint32_t i = 0; i < n; ++i) {
      wc[got + static_cast<int>(i)] = entries[i].wc;
      if (entries[i].is_send) {
        if (EmuQp* q = localQp(p, entries[i].wc.qp_num))
          q->send_retired = std::max(q->send_retired, entries[i].send_seq);
      }
    }
    got += static_cast<int>(n);
    if (n < want) break;
  }
  return got;
}

}  // namespace coll::verbs_emu
