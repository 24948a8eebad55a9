// A process-shared robust mutex in shared memory: a process killed while it
// holds the lock must not wedge the fabric, so the next owner takes it over
// (EOWNERDEAD) and marks it consistent.  Every structure guarded by one is
// updated so that a half-done update is harmless (a record's live flag is
// written last when it is created and first when it is freed).
#pragma once

#include <pthread.h>

namespace coll::verbs_emu {

// Initializes *m in place (shared memory, before anyone else maps it).
bool initRobustMutex(pthread_mutex_t* m);

class RobustLock {
 public:
  explicit RobustLock(pthread_mutex_t* m);
  ~RobustLock();
  RobustLock(const RobustLock&) = delete;
  RobustLock& operator=(const RobustLock&) = delete;

 private:
  pthread_mutex_t* m_;
};

}  // namespace coll::verbs_emu
