// mp_unique_id.cc — NCCL's init pattern across hosts: rank 0 makes an id
// with collGetUniqueId, the id travels to every rank (here over the
// launcher's communicator, as a job would send it over MPI), and every rank
// joins with collCommInitRank; then one all-reduce on the new communicator
// is checked.  Under tools/netsim (tests/netsim: netsim.unique_id.n3) the
// ranks are on different simulated hosts, so the id must carry an address
// they can reach (COLL_SOCKET_IFNAME picks it), not loopback.
#include <cstdio>
#include <cstring>

#include "coll.h"
#include "mp_rank.h"

int main() {
  MpRank me;
  if (!mpInit(&me)) return 1;
  collUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (me.rank == 0 && collGetUniqueId(&id) != collSuccess) {
    fprintf(stderr, "rank 0: collGetUniqueId: %s\n", collGetLastError(nullptr));
    return 1;
  }
  if (collBroadcast(&id, &id, sizeof id, collUint8, 0, me.comm, nullptr) != collSuccess) {
    fprintf(stderr, "rank %d: broadcast of the id: %s\n", me.rank, collGetLastError(me.comm));
    return 1;
  }
  collComm_t c = nullptr;
  if (collCommInitRank(&c, me.nranks, id, me.rank) != collSuccess) {
    fprintf(stderr, "rank %d: collCommInitRank: %s\n", me.rank, collGetLastError(nullptr));
    return 1;
  }
  int v = me.rank + 1, sum = 0;
  if (collAllReduce(&v, &sum, 1, collInt32, collSum, c, nullptr) != collSuccess) {
    fprintf(stderr, "rank %d: all-reduce: %s\n", me.rank, collGetLastError(c));
    return 1;
  }
  const int want = me.nranks * (me.nranks + 1) / 2;
  if (sum != want) {
    fprintf(stderr, "rank %d: all-reduce on the new communicator: got %d, want %d\n", me.rank, sum, want);
    return 1;
  }
  if (me.rank == 0) printf("collGetUniqueId + collCommInitRank on %d ranks: all-reduce %d ok\n", me.nranks, sum);
  collCommDestroy(c);
  collCommDestroy(me.comm);
  return 0;
}
