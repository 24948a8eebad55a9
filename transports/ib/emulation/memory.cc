// Protection domains and memory regions.  An MR is a record in the fabric
// registry (owner pid, PD, range, access, keys): a remote writer checks its
// rkey there, against the target's table, before writing a byte.
#include <unistd.h>

#include <cerrno>
#include <new>

#include "objects.h"
#include "robust_mutex.h"

#undef ibv_reg_mr

using namespace coll::verbs_emu;

namespace {

constexpr int kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                 IBV_ACCESS_RELAXED_ORDERING;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  auto* pd = new (std::nothrow) EmuPd{};
  if (!pd) {
    errno = ENOMEM;
    return nullptr;
  }
  {
    RobustLock lock(p.reg->mutex());
    pd->id = p.reg->newId();
  }
  pd->pd.context = context;
  pd->pd.handle = static_cast<uint32_t>(pd->id);
  return &pd->pd;
}

__attribute__((visibility("default"))) int ibv_dealloc_pd(ibv_pd* pd) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuPd* e = emuPd(pd);
  if (e->users > 0) return EBUSY;  // as the kernel: MRs or QPs still use it
  delete e;
  return 0;
}

__attribute__((visibility("default"))) ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  // Remote write without local write is invalid in verbs (the HCA could not
  // honour it); remote atomics, MWs and on-demand paging are not emulated.
  if ((access & ~kSupportedAccess) != 0 ||
      ((access & IBV_ACCESS_REMOTE_WRITE) && !(access & IBV_ACCESS_LOCAL_WRITE)) ||
      (length > 0 && addr == nullptr)) {
    errno = EINVAL;
    return nullptr;
  }
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  auto* mr = new (std::nothrow) EmuMr{};
  if (!mr) {
    errno = ENOMEM;
    return nullptr;
  }
  {
    RobustLock lock(p.reg->mutex());
    MrRec* rec = p.reg->allocMr(&mr->slot);
    if (!rec) {
      delete mr;
      errno = ENOMEM;
      return nullptr;
    }
    rec->pid = p.pid;
    rec->pd = emuPd(pd)->id;
    rec->addr = reinterpret_cast<uintptr_t>(addr);
    rec->length = length;
    rec->access = access;
    mr->mr.lkey = rec->lkey;
    mr->mr.rkey = rec->rkey;
    rec->live = 1;
  }
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.handle = mr->slot;
  ++emuPd(pd)->users;
  return &mr->mr;
}

// dma-buf memory (GPU memory) cannot be reached by process_vm_writev: the
// emulated device does not support it, as a provider without dma-buf
// support answers.
__attribute__((visibility("default"))) ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  errno = EOPNOTSUPP;
  return nullptr;
}

__attribute__((visibility("default"))) int ibv_dereg_mr(ibv_mr* mr) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  auto* e = reinterpret_cast<EmuMr*>(mr);
  if (p.reg) {
    RobustLock lock(p.reg->mutex());
    MrRec& rec = p.reg->data()->mrs[e->slot];
    if (rec.live && rec.lkey == mr->lkey) rec.live = 0;
  }
  --emuPd(mr->pd)->users;
  delete e;
  return 0;
}

}  // extern "C"
