/* mpi_coll_perf.c — Open MPI's MPI_Allreduce, MPI_Allgather, MPI_Bcast and
 * MPI_Reduce_scatter_block timed the way our perf tools time ours, printing
 * the same table
 * (peer_common.h): float32 sum, per cell W untimed warm-up calls, a barrier,
 * then the average of N calls per rank, the max over ranks; then (-c 1) one
 * call on fresh data, checked exactly (#wrong, summed over ranks).
 *
 * Columns: out-of-place is MPI's two-buffer call; in-place is MPI_IN_PLACE
 * (all-reduce, all-gather: own chunk already at rank*count of the output).
 * MPI_Bcast has one buffer, so it is the in-place column; the out-of-place
 * column is the root copying its send buffer into the output, then MPI_Bcast.
 * The same two buffers (MAXBYTES each) serve every call.
 *
 * MPI_Reduce_scatter_block's in-place form (MPI_IN_PLACE) takes all N blocks
 * in recv and leaves the result in its first block.
 *
 * Usage: mpirun -np N mpi_coll_perf -C allreduce|allgather|broadcast|reducescatter
 *          -b 8 -e 64M -f 2 -n 20 -w 5 -c 1 [-r ROOT] */
#include <mpi.h>

#include "peer_common.h"

static void run_once(const struct peer_args* a, size_t count, int inplace, int rank, const float* send, float* recv) {
  const int n = (int)count;
  switch (a->coll) {
    case PEER_ALLREDUCE:
      MPI_Allreduce(inplace ? MPI_IN_PLACE : send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case PEER_ALLGATHER:
      if (inplace) MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
      else MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case PEER_BROADCAST:
      if (!inplace && rank == a->root) memcpy(recv, send, count * sizeof(float));
      MPI_Bcast(recv, n, MPI_FLOAT, a->root, MPI_COMM_WORLD);
      break;
    case PEER_REDUCESCATTER:
      MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct peer_args a;
  if (peer_parse_args(argc, argv, &a) != 0) {
    MPI_Finalize();
    return 2;
  }
  if (a.root >= nranks) {
    if (rank == 0) fprintf(stderr, "mpi_coll_perf: root %d but %d ranks\n", a.root, nranks);
    MPI_Finalize();
    return 2;
  }
  if (a.max_bytes / 4 > 0x7fffffff) {
    if (rank == 0) fprintf(stderr, "mpi_coll_perf: MAXBYTES too large for an int count\n");
    MPI_Finalize();
    return 2;
  }
  const size_t cap = (a.max_bytes + 63) / 64 * 64;
  float* send = (float*)aligned_alloc(64, cap ? cap : 64);
  float* recv = (float*)aligned_alloc(64, cap ? cap : 64);
  if (!send || !recv) {
    fprintf(stderr, "mpi_coll_perf: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(send, 0, cap);
  memset(recv, 0, cap);

  if (rank == 0) {
    char what[512], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char* nl = strchr(lib, '\n');
    if (nl) *nl = '\0';
    char* comma = strchr(lib, ',');
    if (comma) *comma = '\0';
    snprintf(what, sizeof what, "%.200s MPI_%s, %d ranks, float32 sum", lib,
             a.coll == PEER_ALLREDUCE    ? "Allreduce"
             : a.coll == PEER_ALLGATHER  ? "Allgather"
             : a.coll == PEER_BROADCAST  ? "Bcast"
                                         : "Reduce_scatter_block",
             nranks);
    peer_print_header(&a, what);
  }

  long failed_rows = 0;
  unsigned long long wrong_total = 0;
  double bw_sum = 0;
  int bw_count = 0;
  for (size_t bytes = a.min_bytes; bytes <= a.max_bytes; bytes *= (size_t)a.factor) {
    const struct peer_sizes ps = peer_sizes_of(a.coll, bytes, nranks);
    if (rank == 0) peer_print_row_start(a.coll, ps.size_bytes, ps.count, a.root);
    for (int inplace = 0; inplace < 2; ++inplace) {
      peer_fill(a.coll, rank, nranks, a.root, ps.count, inplace, inplace, send, recv);
      for (int w = 0; w < a.warmup; ++w) run_once(&a, ps.count, inplace, rank, send, recv);
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int it = 0; it < a.iters; ++it) run_once(&a, ps.count, inplace, rank, send, recv);
      double sec = (MPI_Wtime() - t0) / a.iters, sec_max = 0;
      MPI_Allreduce(&sec, &sec_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      unsigned long long wrong = 0;
      for (int k = 0; k < a.check && !wrong; ++k) {
        peer_fill(a.coll, rank, nranks, a.root, ps.count, inplace, 0, send, recv);
        run_once(&a, ps.count, inplace, rank, send, recv);
        unsigned long long mine = peer_verify(a.coll, rank, nranks, a.root, ps.count, recv);
        MPI_Allreduce(&mine, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      }
      if (wrong) {
        ++failed_rows;
        wrong_total += wrong;
      }
      if (rank == 0) bw_sum += peer_print_cell(&a, &ps, sec_max, wrong);
      ++bw_count;
    }
    if (rank == 0) printf("\n");
    if (bytes > a.max_bytes / (size_t)a.factor) break;
  }
  if (rank == 0) peer_print_footer(failed_rows, bw_sum, bw_count, wrong_total);
  free(send);
  free(recv);
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
