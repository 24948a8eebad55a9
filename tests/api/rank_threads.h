// rank_threads.h — run N ranks as threads of this test process over
// collCommInitAll, the way Gloo's tests do: fast, and every rank's failure
// is visible in one place.
#pragma once

#include <functional>
#include <thread>
#include <vector>

#include "coll.h"

namespace colltest {

// Makes N comms, runs body(rank, comm) on N threads, destroys the comms.
// Returns false if init failed (the test then fails with the message).
inline std::vector<collComm_t> makeComms(int n) {
  std::vector<collComm_t> comms(n, nullptr);
  collResult_t r = collCommInitAll(comms.data(), n, nullptr);
  if (r != collSuccess) comms.clear();
  return comms;
}

inline void runRanks(const std::vector<collComm_t>& comms, const std::function<void(int, collComm_t)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < static_cast<int>(comms.size()); ++r) threads.emplace_back([&, r] { body(r, comms[r]); });
  for (auto& t : threads) t.join();
}

inline void destroyComms(std::vector<collComm_t>& comms) {
  for (auto c : comms) collCommDestroy(c);
  comms.clear();
}

}  // namespace colltest
