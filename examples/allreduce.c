/* allreduce.c — the smallest complete libcoll program: every rank adds its
 * vector into every other's, then checks the sum.  Start it with any
 * launcher that collCommInitFromEnv knows (collrun, torchrun, mpirun, srun),
 * or alone as a 1-rank job:
 *
 *   cc examples/allreduce.c -I libcoll/include -L build/libcoll \
 *      -Wl,-rpath,$PWD/build/libcoll -lcoll -o allreduce
 *   build/tools/collrun -n 4 -- ./allreduce
 */
#include <coll.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  collComm_t comm;
  collResult_t r = collCommInitFromEnv(&comm);
  if (r != collSuccess) {
    fprintf(stderr, "init failed: %s: %s\n", collGetErrorString(r), collGetLastError(NULL));
    return 1;
  }
  int rank = 0, nranks = 0;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &nranks);

  const size_t n = 1 << 20; /* 4 MiB of float32 */
  float* in = malloc(n * sizeof *in);
  float* out = malloc(n * sizeof *out);
  if (in == NULL || out == NULL) return 1;
  for (size_t i = 0; i < n; i++) in[i] = (float)(rank + 1);

  /* Host buffers; the stream argument is for device buffers (NULL here). */
  r = collAllReduce(in, out, n, collFloat32, collSum, comm, NULL);
  if (r != collSuccess) {
    fprintf(stderr, "rank %d: all-reduce failed: %s\n", rank, collGetLastError(comm));
    return 1;
  }
  const float want = (float)nranks * (nranks + 1) / 2; /* 1 + 2 + ... + nranks */
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += out[i] != want;
  printf("rank %d of %d: sum %g, %zu of %zu elements wrong\n", rank, nranks, out[0], wrong, n);

  free(in);
  free(out);
  collCommDestroy(comm);
  return wrong == 0 ? 0 : 2;
}
