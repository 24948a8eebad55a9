/* mpi_allreduce_perf.c — Open MPI's MPI_Allreduce timed the way our perf
 * tools time ours (warm-up, then the average of N iterations per rank, the
 * max over ranks), float32 sum, out-of-place, so the numbers in
 * docs/PERFORMANCE.md compare line by line.  A fuller side-by-side harness
 * (Gloo, other collectives, plots) is later work.
 * Usage: mpirun -np N mpi_allreduce_perf MINBYTES MAXBYTES FACTOR ITERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t minB = argc > 1 ? strtoull(argv[1], NULL, 10) : 8;
  size_t maxB = argc > 2 ? strtoull(argv[2], NULL, 10) : (64u << 20);
  int factor = argc > 3 ? atoi(argv[3]) : 2;
  int iters = argc > 4 ? atoi(argv[4]) : 20;
  if (factor < 2 || minB < 4 || maxB < minB || iters < 1) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce_perf MINBYTES MAXBYTES FACTOR ITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  float* in = malloc(maxB);
  float* out = malloc(maxB);
  for (size_t i = 0; i < maxB / 4; ++i) in[i] = (float)(rank + (int)(i % 7));
  if (rank == 0) printf("#       size    time(us)   busbw(GB/s)   [Open MPI MPI_Allreduce, %d ranks, float sum]\n", n);
  for (size_t bytes = minB; bytes <= maxB; bytes *= (size_t)factor) {
    int count = (int)(bytes / 4);
    for (int w = 0; w < 5; ++w) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; ++it) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters, tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double busbw = (double)bytes / tmax / 1e9 * 2.0 * (n - 1) / n;
    if (rank == 0) printf("%12zu  %10.2f  %12.2f\n", bytes, tmax * 1e6, busbw);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
