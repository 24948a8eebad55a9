// The shapes, round by round (a round's ranks exit right after the split,
// so a process that hosts the new communicator's rendezvous leaves as early
// as a real program can):
//   rank k excluded (NCCL_SPLIT_NOCOLOR), for each k in turn, the root's
//     host (rank 0) among them;
//   all but rank k excluded (a one-rank communicator);
//   every rank its own color;
//   two colors, keys descending (each new rank 0 is its color's highest
//     parent rank, so the id comes from a rank that is not the parent's 0).
// Every other round the members also all-reduce on the new communicator.
#include "split_stress.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/test_scale.h"
#include "program_rank.h"

namespace ncclprog {
namespace {

struct Shape {
  std::string name;
  std::vector<int> color, key;  // per parent rank
};

Shape shapeOf(int n, int round) {
  const int kinds = n + 3, kind = round % kinds, k = (round / kinds) % n;
  Shape s;
  s.color.assign(n, 0);
  s.key.assign(n, 0);
  if (kind < n) {
    s.name = "rank " + std::to_string(kind) + " excluded";
    s.color[kind] = NCCL_SPLIT_NOCOLOR;
  } else if (kind == n) {
    s.name = "all but rank " + std::to_string(k) + " excluded";
    for (int r = 0; r < n; r++) s.color[r] = r == k ? 0 : NCCL_SPLIT_NOCOLOR;
  } else if (kind == n + 1) {
    s.name = "every rank its own color";
    for (int r = 0; r < n; r++) s.color[r] = r;
  } else {
    s.name = "two colors, keys descending";
    for (int r = 0; r < n; r++) s.color[r] = r % 2, s.key[r] = -r;
  }
  return s;
}

// One rank's round, in its own process.
void splitRank(int me, int n, const ncclUniqueId& id, const Shape& s, bool allReduce) {
  ncclComm_t parent = nullptr, child = nullptr;
  OK(me, nullptr, ncclCommInitRank(&parent, n, id, me));
  if (parent == nullptr) return;
  OK(me, parent, ncclCommSplit(parent, s.color[me], s.key[me], &child, nullptr));
  const int color = s.color[me];
  int size = 0, rank = 0, sum = 0;
  for (int r = 0; r < n; r++)
    if (color != NCCL_SPLIT_NOCOLOR && s.color[r] == color) {
      size++;
      sum += r;
      if (s.key[r] < s.key[me] || (s.key[r] == s.key[me] && r < me)) rank++;
    }
  if (color == NCCL_SPLIT_NOCOLOR) {
    CHECK(me, child == nullptr, s.name + ": an excluded rank got a communicator");
  } else if (child == nullptr) {
    CHECK(me, false, s.name + ": no communicator");
  } else {
    int gotSize = -1, gotRank = -1;
    OK(me, child, ncclCommCount(child, &gotSize));
    OK(me, child, ncclCommUserRank(child, &gotRank));
    CHECK(me, gotSize == size && gotRank == rank,
          s.name + ": size " + std::to_string(gotSize) + " rank " + std::to_string(gotRank) + ", want " +
              std::to_string(size) + " and " + std::to_string(rank));
    if (allReduce) {
      int v = me;
      OK(me, child, ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, child, nullptr));
      CHECK(me, v == sum, s.name + ": all-reduce gave " + std::to_string(v) + ", want " + std::to_string(sum));
    }
    OK(me, child, ncclCommDestroy(child));
  }
  OK(me, parent, ncclCommDestroy(parent));
}

}  // namespace

int runSplitStress(int n, int rounds) {
  // The sanitizer builds look for memory errors, which one pass over every
  // shape reaches; the race wants the plain build's many rounds.
  if (coll::testing::kSanitizedBuild) rounds = std::max(n + 3, rounds / 10);
  int total = 0;
  for (int round = 0; round < rounds; round++) {
    const Shape s = shapeOf(n, round);
    const bool allReduce = (round / (n + 3)) % 2 == 1;
    // Fork first, then make the id (its root thread must not be forked).
    std::vector<pid_t> kids;
    std::vector<int> writeEnds;
    for (int r = 0; r < n; r++) {
      int fds[2];
      if (pipe(fds) != 0) return total + 1;
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[1]);
        ncclUniqueId id;
        if (read(fds[0], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) _exit(101);
        splitRank(r, n, id, s, allReduce);
        std::fflush(stderr);
        _exit(failures.load() > 100 ? 100 : failures.load());
      }
      close(fds[0]);
      if (pid < 0) return total + 1;
      kids.push_back(pid);
      writeEnds.push_back(fds[1]);
    }
    ncclUniqueId id;
    OK(0, nullptr, ncclGetUniqueId(&id));
    for (int fd : writeEnds) {
      if (write(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) report(0, NCCLPROG_HERE_, __LINE__, "write");
      close(fd);
    }
    int failed = 0;
    for (pid_t k : kids) {
      int st = 0;
      waitpid(k, &st, 0);
      failed += WIFEXITED(st) ? WEXITSTATUS(st) : 100;
    }
    if (failed != 0)
      std::fprintf(stderr, "round %d (%s%s): %d failure(s)\n", round, s.name.c_str(), allReduce ? ", all-reduce" : "",
                   failed);
    total += failed;
  }
  return total + failures.load();
}

}  // namespace ncclprog
