// mp_settings_mismatch — ranks started with different values of a setting
// that must be equal everywhere (COLL_STAGED_PIECE_BYTES, COLL_BOARD, ...)
// fail init, each naming the variable, instead of setting up different
// connections or cutting calls differently.
//
//   collrun -n N -- coll_mp_settings_mismatch VAR VALUE_ON_RANK_0 VALUE_ELSEWHERE
//
// Exit 0 when init failed on this rank with a message naming VAR.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "coll.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s VAR VALUE_ON_RANK_0 VALUE_ELSEWHERE\n", argv[0]);
    return 2;
  }
  const char* rank = std::getenv("COLL_RANK");
  if (rank == nullptr) {
    std::fprintf(stderr, "run under collrun (COLL_RANK is not set)\n");
    return 2;
  }
  setenv(argv[1], std::strcmp(rank, "0") == 0 ? argv[2] : argv[3], 1);
  collComm_t comm = nullptr;
  const collResult_t r = collCommInitFromEnv(&comm);
  if (r == collSuccess) {
    std::fprintf(stderr, "rank %s: init succeeded although %s differs between ranks\n", rank, argv[1]);
    collCommDestroy(comm);
    return 1;
  }
  const char* msg = collGetLastError(nullptr);
  if (std::strstr(msg, argv[1]) == nullptr) {
    std::fprintf(stderr, "rank %s: init failed (%s) without naming %s: %s\n", rank, collGetErrorString(r), argv[1],
                 msg);
    return 1;
  }
  std::printf("rank %s: init refused: %s\n", rank, msg);
  return 0;
}
