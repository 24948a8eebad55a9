/* Uses the installed libcoll: a 1-rank all-reduce through the C API. */
#include <coll.h>
#include <stdio.h>

int main(void) {
  collComm_t comm;
  float x[3] = {1, 2, 3}, y[3] = {0, 0, 0};
  if (collCommInitFromEnv(&comm) != collSuccess) return 1;
  if (collAllReduce(x, y, 3, collFloat32, collSum, comm, NULL) != collSuccess) return 2;
  collCommDestroy(comm);
  if (y[0] != 1 || y[1] != 2 || y[2] != 3) return 3;
  printf("consumer: ok\n");
  return 0;
}
