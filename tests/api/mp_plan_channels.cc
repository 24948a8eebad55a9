// mp_plan_channels.cc — the channels the tuner gives large calls, through a
// real communicator started by collrun: across hosts over sockets one (the
// double tree's two excepted), on one host all the comm has.
// Usage: mp_plan_channels EXPECTED (1 or 2).  Exit 0 when every rank's plans
// match on every rank's comm, else 1 with the plan that did not.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "coll.h"
#include "mp_rank.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mp_plan_channels EXPECTED\n");
    return 2;
  }
  const int expected = atoi(argv[1]);
  MpRank me;
  if (!mpInit(&me)) return 1;
  const size_t large = (64u << 20) / 4;  // floats: N slots' worth on every channel
  struct Call {
    collCollective_t coll;
    size_t count;
    int root;
    const char* name;
  };
  const Call calls[] = {{collCollAllReduce, large, -1, "allreduce"},
                        {collCollBroadcast, large, 0, "broadcast"},
                        {collCollAllGather, large / static_cast<size_t>(me.nranks), -1, "allgather"},
                        {collCollReduceScatter, large / static_cast<size_t>(me.nranks), -1, "reducescatter"}};
  int bad = 0;
  for (const Call& c : calls) {
    collPlanInfo_t p;
    if (collGetPlanInfo(me.comm, c.coll, c.count, collFloat32, c.root, &p) != collSuccess) {
      fprintf(stderr, "rank %d: collGetPlanInfo(%s) failed: %s\n", me.rank, c.name, collGetLastError(me.comm));
      return 1;
    }
    const int want = std::strcmp(p.algorithm, "tree") == 0 && c.coll == collCollAllReduce ? 2 : expected;
    if (p.nChannels != want) {
      fprintf(stderr, "rank %d: %s of %zu B over %s: %s on %d channels, want %d\n", me.rank, c.name, p.bytes,
              p.transport, p.algorithm, p.nChannels, want);
      ++bad;
    }
  }
  // The plans are used: one large all-reduce, checked.
  std::vector<float> buf(large, 1.0f);
  if (collAllReduce(buf.data(), buf.data(), large, collFloat32, collSum, me.comm, nullptr) != collSuccess) {
    fprintf(stderr, "rank %d: collAllReduce failed: %s\n", me.rank, collGetLastError(me.comm));
    return 1;
  }
  for (size_t i = 0; i < large; i += 4093)
    if (buf[i] != static_cast<float>(me.nranks)) {
      fprintf(stderr, "rank %d: element %zu is %g, want %d\n", me.rank, i, buf[i], me.nranks);
      return 1;
    }
  collCommDestroy(me.comm);
  if (me.rank == 0 && bad == 0) printf("large calls on %d channel(s) as expected\n", expected);
  return bad == 0 ? 0 : 1;
}
