// mp_rank.h — what every multi-process test program starts with: a
// communicator from the launcher's environment, and this rank's place in it.
#pragma once

#include <cstdio>

#include "coll.h"

struct MpRank {
  collComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
};

// False (after printing why) if init failed.
inline bool mpInit(MpRank* r) {
  if (collCommInitFromEnv(&r->comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return false;
  }
  collCommUserRank(r->comm, &r->rank);
  collCommCount(r->comm, &r->nranks);
  return true;
}
