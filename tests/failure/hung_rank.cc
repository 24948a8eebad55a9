// hung_rank.cc — a rank that is alive but never calls the collective.
// Run under collrun with COLL_TIMEOUT=1s (the deadline is what finds it: its
// process is there, so it is not a death).
//
// tests/api/mp_stuck_rank.cc covers the last rank stuck over shm and checks
// that one message names it.  This one puts the hung rank in the middle
// (default rank 2 of 4: ranks on both sides of it in a ring), and checks
// every survivor on its own:
//   - its all-reduce fails with collTimeout, or with collRemoteError whose
//     carried first cause is a timeout (a peer that timed out first told it),
//   - not before the deadline (>= 0.9 s: the hung rank is alive, nothing may
//     call it dead) and within 3 s,
//   - its message says which rank it was waiting for ("waiting for rank P")
//     and at which step ("step i/n", or "(COLL_CHECK signature)" when it was
//     in the signature exchange COLL_CHECK=1 adds before the first step),
//   - its message names the hung rank as stuck ("stuck: rank(s) H"), from
//     the wait reports timing-out ranks exchange,
//   - collCommDestroy returns.
// Each survivor writes "<code> <seconds> <ok> <message>" to DIR/<rank>.txt.
// The hung rank waits (up to 20 s) for all of them, then checks that every
// survivor reported OK and that at least one says "waiting for rank H".
//
// Usage: hung_rank DIR [HUNG_RANK]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "coll.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int hungRank(collComm_t comm, const std::string& dir, int me, int n) {
  // Alive, silent: wait for every survivor's report (they come after ~1 s).
  const Clock::time_point t0 = Clock::now();
  std::vector<std::string> reports(n);
  int have = 0;
  while (have < n - 1 && Clock::now() - t0 < std::chrono::seconds(20)) {
    usleep(50'000);
    have = 0;
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      // Written to a temporary name and renamed: a report is whole or absent.
      reports[r] = readFile(dir + "/" + std::to_string(r) + ".txt");
      if (!reports[r].empty()) ++have;
    }
  }
  const std::regex waitedForMe("waiting for rank " + std::to_string(me) + "(?![0-9])");
  bool ok = have == n - 1, named = false;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    const std::string& rep = reports[r];
    if (rep.empty()) {
      printf("rank %d (hung): no report from rank %d\n", me, r);
      continue;
    }
    int code = -1, good = 0;
    double secs = -1;
    std::istringstream is(rep);
    is >> code >> secs >> good;
    if (!good) ok = false;
    named |= std::regex_search(rep, waitedForMe);
  }
  if (!named) printf("rank %d (hung): FAIL: no survivor says it was waiting for rank %d\n", me, me);
  ok = ok && named;
  printf("rank %d (hung): %d of %d survivors reported; one waited for this rank: %s; %s\n", me, have, n - 1,
         named ? "yes" : "no", ok ? "PASS" : "FAILED");
  collCommDestroy(comm);
  return ok ? 0 : 1;
}

int survivor(collComm_t comm, const std::string& dir, int me, int hung) {
  std::vector<float> buf(size_t{1} << 20, 1.0f);
  const Clock::time_point t0 = Clock::now();
  collResult_t r = collAllReduce(buf.data(), buf.data(), buf.size(), collFloat32, collSum, comm, nullptr);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string msg = collGetLastError(comm);
  for (char& c : msg)
    if (c == '\n') c = ' ';
  printf("rank %d: result %d (%s) after %.3f s: %s\n", me, static_cast<int>(r), collGetErrorString(r), secs,
         msg.c_str());

  bool ok = true;
  auto expect = [&](bool cond, const char* what) {
    if (!cond) {
      printf("rank %d: FAIL: %s\n", me, what);
      ok = false;
    }
  };
  const bool timedOut = msg.find("timed out") != std::string::npos;
  expect(r == collTimeout || (r == collRemoteError && timedOut),
         "want collTimeout, or collRemoteError carrying a peer's timeout");
  expect(secs >= 0.9, "failed before the 1 s deadline: the hung rank is alive");
  expect(secs <= 3.0, "took more than 3 s with COLL_TIMEOUT=1s");
  static const std::regex waiting("waiting for rank [0-9]+");
  // A step of the schedule, or (COLL_CHECK=1, as CI runs) the signature
  // exchange that precedes the first step.
  static const std::regex step("step [0-9]+/[0-9]+|\\(COLL_CHECK signature\\)");
  expect(std::regex_search(msg, waiting), "message does not say which rank it was waiting for");
  expect(std::regex_search(msg, step), "message does not name the step");
  // Whichever notice reached it first, every survivor names the stuck rank:
  // timing-out ranks swap wait reports before they fail.
  const std::regex stuck("stuck: rank\\(s\\) " + std::to_string(hung) + "(?![0-9])");
  expect(std::regex_search(msg, stuck), "message does not name the stuck rank (\"stuck: rank(s) H\")");
  collResult_t async = collSuccess;
  collCommGetAsyncError(comm, &async);
  expect(async != collSuccess, "collCommGetAsyncError reports no error");
  collCommDestroy(comm);
  printf("rank %d: collCommDestroy returned; %s\n", me, ok ? "PASS" : "FAILED");
  const std::string tmp = dir + "/." + std::to_string(me) + ".tmp";
  std::ofstream(tmp) << static_cast<int>(r) << " " << secs << " " << (ok ? 1 : 0) << " " << msg << "\n";
  if (rename(tmp.c_str(), (dir + "/" + std::to_string(me) + ".txt").c_str()) != 0) {
    printf("rank %d: cannot write the report in %s\n", me, dir.c_str());
    ok = false;
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: hung_rank DIR [HUNG_RANK]\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string dir = argv[1];
  int hung = argc > 2 ? atoi(argv[2]) : 2;
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int me = 0, n = 0;
  collCommUserRank(comm, &me);
  collCommCount(comm, &n);
  if (n < 2 || hung < 0 || hung >= n) {
    fprintf(stderr, "hung rank %d out of range for %d ranks\n", hung, n);
    collCommDestroy(comm);
    return 2;
  }
  return me == hung ? hungRank(comm, dir, me, n) : survivor(comm, dir, me, hung);
}
