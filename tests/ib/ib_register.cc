// ib_register — collCommRegister end to end: every rank registers its send
// and receive buffers, then all-gathers, broadcasts and sends/receives
// 1 MiB (the collectives whose sends may leave from the caller's buffer),
// checks every byte, and deregisters.  Over COLL_NET=ib the transport's
// summary (COLL_DEBUG=INFO) then counts writes "from registered memory";
// the test's command checks that line.  Also: a handle deregistered twice,
// or one never registered, is refused.
#include <cstdio>
#include <cstring>
#include <vector>

#include "coll.h"

namespace {

int failures = 0;

void check(bool ok, int rank, const char* what) {
  if (ok) return;
  fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
  ++failures;
}

}  // namespace

int main() {
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 1;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &n);
  const size_t count = size_t{1} << 18;  // 1 MiB of int32 per rank
  std::vector<int> send(count), recv(count * n);
  void *hs = nullptr, *hr = nullptr;
  check(collCommRegister(comm, send.data(), send.size() * sizeof(int), &hs) == collSuccess, rank, "register send");
  check(collCommRegister(comm, recv.data(), recv.size() * sizeof(int), &hr) == collSuccess, rank, "register recv");
  for (int iter = 0; iter < 3; ++iter) {
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<int>(rank * 1000003 + i * 7 + iter);
    check(collAllGather(send.data(), recv.data(), count, collInt32, comm, nullptr) == collSuccess, rank, "allgather");
    bool same = true;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) same = same && recv[r * count + i] == static_cast<int>(r * 1000003 + i * 7 + iter);
    check(same, rank, "allgather result");
    const int root = iter % n;
    std::vector<int>& buf = recv;
    if (rank == root)
      for (size_t i = 0; i < count; ++i) buf[i] = static_cast<int>((i ^ 0x5a5a) + iter);
    check(collBroadcast(buf.data(), buf.data(), count, collInt32, root, comm, nullptr) == collSuccess, rank, "broadcast");
    same = true;
    for (size_t i = 0; i < count; ++i) same = same && buf[i] == static_cast<int>((i ^ 0x5a5a) + iter);
    check(same, rank, "broadcast result");
    // A ring of send/recv: each rank sends its block to the next.
    const int to = (rank + 1) % n, from = (rank + n - 1) % n;
    collGroupStart();
    collSend(send.data(), count, collInt32, to, comm, nullptr);
    collRecv(recv.data(), count, collInt32, from, comm, nullptr);
    check(collGroupEnd() == collSuccess, rank, "send/recv");
    same = true;
    for (size_t i = 0; i < count; ++i) same = same && recv[i] == static_cast<int>(from * 1000003 + i * 7 + iter);
    check(same, rank, "send/recv result");
  }
  check(collCommDeregister(comm, hs) == collSuccess, rank, "deregister send");
  check(collCommDeregister(comm, hs) == collInvalidArgument, rank, "second deregister refused");
  check(collCommDeregister(comm, &failures) == collInvalidArgument, rank, "unknown handle refused");
  // hr stays registered: destroy releases it.
  (void)hr;
  check(collCommDestroy(comm) == collSuccess, rank, "destroy");
  if (failures == 0) printf("rank %d: PASS\n", rank);
  return failures == 0 ? 0 : 1;
}
