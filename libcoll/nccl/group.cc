#include "group.h"

#include <thread>
#include <vector>

#include "api_guard.h"
#include "cuda_bridge.h"

namespace coll::nccl {
namespace {

struct Creation {
  ncclComm* target;  // may be NULL
  int device;
  std::function<Status()> create;
};

struct GroupState {
  int depth = 0;
  bool hasOperations = false;
  std::vector<Creation> creations;
};
thread_local GroupState tls;

// Runs every queued creation on a thread of its own (each one's init waits
// for its peers, which may be the others), with the device that was
// current when it was queued.  Returns the first failure; each failed
// handle keeps its own message.
Status runCreations(std::vector<Creation> creations) {
  std::vector<Status> results(creations.size());
  std::vector<std::thread> threads;
  threads.reserve(creations.size());
  for (size_t i = 0; i < creations.size(); i++) {
    threads.emplace_back([&, i] {
      Creation& c = creations[i];
      Status s = selectCudaDevice(c.device);
      if (s.isOk()) {
        try {
          s = c.create();
        } catch (const std::exception& e) {
          s = Status(collInternalError, std::string("unexpected exception: ") + e.what());
        }
      }
      if (c.target != nullptr) {
        if (!s.isOk()) fail(c.target, s);
        c.target->pendingInit.store(false);
      }
      results[i] = std::move(s);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& s : results)
    if (!s.isOk()) return s;
  return Status::ok();
}

}  // namespace

bool inGroup() { return tls.depth > 0; }

void queueCreation(ncclComm* target, int device, std::function<Status()> create) {
  if (target != nullptr) target->pendingInit.store(true);
  tls.creations.push_back({target, device, std::move(create)});
}

void noteGroupOperation() { tls.hasOperations = true; }

Status groupStart() {
  COLL_CHECK(collStatus(nullptr, collGroupStart()));
  tls.depth++;
  return Status::ok();
}

Status groupEnd() {
  if (tls.depth == 0) return makeError(collInvalidUsage, "ncclGroupEnd: no group is open (ncclGroupStart missing)");
  if (--tls.depth > 0) return collStatus(nullptr, collGroupEnd());
  std::vector<Creation> creations = std::move(tls.creations);
  bool mixed = tls.hasOperations && !creations.empty();
  tls = GroupState{};
  if (mixed) {
    for (auto& c : creations) {
      if (c.target == nullptr) continue;
      fail(c.target, makeError(collInvalidUsage, "ncclGroupEnd: the group held communicator creations and operations"));
      c.target->pendingInit.store(false);
    }
    // The operations (on communicators that exist) still run: libcoll's
    // group has them, and their peers wait for them.
    Status ended = collStatus(nullptr, collGroupEnd());
    COLL_CHECK(ended);
    return makeError(collInvalidUsage,
                     "ncclGroupEnd: a group may hold communicator creations or collectives and send/recv, not both");
  }
  Status created = runCreations(std::move(creations));
  Status ended = collStatus(nullptr, collGroupEnd());
  COLL_CHECK(created);
  return ended;
}

}  // namespace coll::nccl
