#include "program_rank.h"

#include <cstdio>

namespace ncclprog {

std::atomic<int> failures{0};

void report(int rank, const char* file, int line, const std::string& what) {
  failures++;
  std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank, file, line, what.c_str());
}

bool useDevice() {
#ifndef NCCL_PROGRAM_NO_CUDA
  if (std::getenv("NCCL_PROGRAM_HOST") != nullptr) return false;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
#else
  return false;
#endif
}

}  // namespace ncclprog
