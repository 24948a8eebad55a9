/* peer_common.h — what the peer harnesses (mpi_coll_perf.c, gloo_coll_perf.cc)
 * share, so that they print exactly the table our perf tools print
 * (perf/common/perf.cc, nccl-tests' layout) with the same size, algbw and
 * busbw definitions (perf/common/colls.cc perfSizes), and check results the
 * same way: a known pattern of small integers per rank, verified exactly.
 *
 * Plain C99 that also compiles as C++ (static functions only). */
#ifndef COLL_PERF_COMPARE_PEER_COMMON_H
#define COLL_PERF_COMPARE_PEER_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum peer_coll { PEER_ALLREDUCE = 0, PEER_ALLGATHER = 1, PEER_BROADCAST = 2, PEER_REDUCESCATTER = 3 };

struct peer_args {
  enum peer_coll coll;
  size_t min_bytes, max_bytes;
  int factor;
  int iters, warmup, check;
  int root;
  const char* algo;  /* Gloo only; NULL = the collective's default */
  const char* iface; /* Gloo only */
  const char* host;  /* Gloo only */
  const char* store; /* Gloo only */
  int timeout_s;     /* Gloo only */
};

/* Sizes of one row: PerfSizes of perf/common/colls.cc for float32. */
struct peer_sizes {
  size_t count;      /* elements per rank's input (allgather: per rank's chunk) */
  size_t size_bytes; /* the "size" column */
  double bus_factor;
};

static inline const char* peer_coll_name(enum peer_coll c) {
  return c == PEER_ALLREDUCE ? "allreduce" : c == PEER_ALLGATHER ? "allgather" : c == PEER_BROADCAST ? "broadcast" : "reducescatter";
}

static inline struct peer_sizes peer_sizes_of(enum peer_coll c, size_t bytes, int nranks) {
  struct peer_sizes p;
  const size_t elems = bytes / 4;
  const double nd = (double)nranks;
  if (c == PEER_ALLGATHER || c == PEER_REDUCESCATTER) { /* count: per rank, as nccl-tests */
    p.count = elems / (size_t)nranks;
    p.size_bytes = p.count * (size_t)nranks * 4;
    p.bus_factor = (nd - 1.0) / nd;
  } else {
    p.count = elems;
    p.size_bytes = elems * 4;
    p.bus_factor = c == PEER_ALLREDUCE ? 2.0 * (nd - 1.0) / nd : 1.0;
  }
  return p;
}

/* "64M", "4K", "1G", "123": bytes; 0 on a bad value. */
static inline size_t peer_parse_size(const char* s) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return 0;
  if (*end == 'K' || *end == 'k') v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
  else if (*end == 'G' || *end == 'g') v <<= 30, ++end;
  if (*end == 'B' || *end == 'b') ++end;
  return *end ? 0 : (size_t)v;
}

static inline void peer_usage(const char* prog) {
  fprintf(stderr,
          "usage: %s [-C allreduce|allgather|broadcast|reducescatter] [-b MINBYTES] [-e MAXBYTES] [-f FACTOR]\n"
          "          [-n ITERS] [-w WARMUP] [-c CHECK(0|1)] [-r ROOT]\n"
          "          (Gloo only:) [-a ALGO] [-i IFACE | -H HOST] [-S STORE_DIR] [-T TIMEOUT_S]\n"
          "float32, sum; prints nccl-tests' table like build/perf/*_perf.\n",
          prog);
}

/* Returns 0 on success, 2 on a usage error (message printed). */
static inline int peer_parse_args(int argc, char** argv, struct peer_args* a) {
  memset(a, 0, sizeof *a);
  a->coll = PEER_ALLREDUCE;
  a->min_bytes = 8;
  a->max_bytes = 64u << 20;
  a->factor = 2;
  a->iters = 20;
  a->warmup = 5;
  a->check = 1;
  a->timeout_s = 300;
  for (int i = 1; i < argc; ++i) {
    const char* o = argv[i];
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      peer_usage(argv[0]);
      return 2;
    }
    if (o[0] != '-' || !o[1] || o[2] || i + 1 >= argc) {
      fprintf(stderr, "%s: bad argument '%s'\n", argv[0], o);
      peer_usage(argv[0]);
      return 2;
    }
    const char* v = argv[++i];
    int bad = 0;
    switch (o[1]) {
      case 'C':
        if (!strcmp(v, "allreduce") || !strcmp(v, "all_reduce")) a->coll = PEER_ALLREDUCE;
        else if (!strcmp(v, "allgather") || !strcmp(v, "all_gather")) a->coll = PEER_ALLGATHER;
        else if (!strcmp(v, "broadcast")) a->coll = PEER_BROADCAST;
        else if (!strcmp(v, "reducescatter") || !strcmp(v, "reduce_scatter")) a->coll = PEER_REDUCESCATTER;
        else bad = 1;
        break;
      case 'b': bad = !(a->min_bytes = peer_parse_size(v)); break;
      case 'e': bad = !(a->max_bytes = peer_parse_size(v)); break;
      case 'f': a->factor = atoi(v); bad = a->factor < 2; break;
      case 'n': a->iters = atoi(v); bad = a->iters < 1; break;
      case 'w': a->warmup = atoi(v); bad = a->warmup < 0; break;
      case 'c': a->check = atoi(v); bad = a->check < 0; break;
      case 'r': a->root = atoi(v); bad = a->root < 0; break;
      case 'a': a->algo = v; break;
      case 'i': a->iface = v; break;
      case 'H': a->host = v; break;
      case 'S': a->store = v; break;
      case 'T': a->timeout_s = atoi(v); bad = a->timeout_s < 1; break;
      default: bad = 1; break;
    }
    if (bad) {
      fprintf(stderr, "%s: bad value '%s' for %s\n", argv[0], v, o);
      peer_usage(argv[0]);
      return 2;
    }
  }
  if (a->max_bytes < a->min_bytes || a->max_bytes > ((size_t)1 << 33)) {
    fprintf(stderr, "%s: need MINBYTES <= MAXBYTES <= 8G\n", argv[0]);
    return 2;
  }
  return 0;
}

/* The known patterns (small integers, so float sums are exact). */
static inline float peer_allreduce_in(int rank, size_t i) { return (float)((rank + (int)(i % 13)) % 13); }
static inline float peer_allreduce_out(int nranks, size_t i) {
  int s = 0;
  for (int r = 0; r < nranks; ++r) s += (r + (int)(i % 13)) % 13;
  return (float)s;
}
static inline float peer_allgather_val(int rank, size_t i) { return (float)((rank * 31 + (int)(i % 251)) % 251); }
static inline float peer_bcast_val(int root, size_t i) { return (float)((root * 17 + (int)(i % 241)) % 241 + 1); }
#define PEER_SENTINEL (-1.0f)

/* Fills this rank's inputs for one run. inplace: in the layout of the
 * in-place call (allreduce: recv; allgather: own chunk of recv; broadcast:
 * the root's recv; reducescatter: all N blocks in recv, MPI_IN_PLACE's
 * layout, the result then in recv's first block); else send. zeros: all-reduce inputs 0 (the timed
 * in-place loop feeds its result back in; 0 is a fixed point of sum). The
 * output (recv) is set to PEER_SENTINEL where the collective must write. */
static inline void peer_fill(enum peer_coll c, int rank, int nranks, int root, size_t count, int inplace, int zeros,
                      float* send, float* recv) {
  size_t i;
  if (c == PEER_ALLREDUCE) {
    float* in = inplace ? recv : send;
    for (i = 0; i < count; ++i) in[i] = zeros ? 0.0f : peer_allreduce_in(rank, i);
    if (!inplace)
      for (i = 0; i < count; ++i) recv[i] = PEER_SENTINEL;
  } else if (c == PEER_ALLGATHER) {
    for (i = 0; i < count * (size_t)nranks; ++i) recv[i] = PEER_SENTINEL;
    float* in = inplace ? recv + (size_t)rank * count : send;
    for (i = 0; i < count; ++i) in[i] = peer_allgather_val(rank, i);
  } else if (c == PEER_REDUCESCATTER) {
    /* Block b holds rank's terms of elements b*count.. of the all-reduce
     * pattern, so rank b's result is that pattern's sum there. */
    float* in = inplace ? recv : send;
    for (i = 0; i < count * (size_t)nranks; ++i) in[i] = zeros ? 0.0f : peer_allreduce_in(rank, i);
    if (!inplace)
      for (i = 0; i < count; ++i) recv[i] = PEER_SENTINEL;
  } else {
    for (i = 0; i < count; ++i) recv[i] = PEER_SENTINEL;
    if (rank == root) {
      float* in = inplace ? recv : send;
      for (i = 0; i < count; ++i) in[i] = peer_bcast_val(root, i);
    }
  }
}

/* Number of wrong elements in this rank's output. */
static inline size_t peer_verify(enum peer_coll c, int rank, int nranks, int root, size_t count, const float* recv) {
  size_t wrong = 0, i;
  if (c == PEER_ALLREDUCE) {
    float want[13]; /* the expected sum depends on i % 13 only */
    for (i = 0; i < 13; ++i) want[i] = peer_allreduce_out(nranks, i);
    for (i = 0; i < count; ++i) wrong += recv[i] != want[i % 13];
  } else if (c == PEER_REDUCESCATTER) {
    for (i = 0; i < count; ++i) wrong += recv[i] != peer_allreduce_out(nranks, (size_t)rank * count + i);
  } else if (c == PEER_ALLGATHER) {
    for (int r = 0; r < nranks; ++r)
      for (i = 0; i < count; ++i) wrong += recv[(size_t)r * count + i] != peer_allgather_val(r, i);
  } else {
    for (i = 0; i < count; ++i) wrong += recv[i] != peer_bcast_val(root, i);
  }
  return wrong;
}

static inline void peer_print_header(const struct peer_args* a, const char* what) {
  printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %d(factor) warmup iters: %d iters: %d "
         "agg iters: 1 validation: %d graph: 0\n",
         a->min_bytes, a->max_bytes, a->factor, a->warmup, a->iters, a->check);
  printf("# peer: %s\n", what);
  printf("# time: the max over ranks of the per-iteration average of %d iterations, after %d warm-up "
         "iterations per cell\n",
         a->iters, a->warmup);
  printf("#\n");
  printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
         "", "", "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
         "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
         "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  fflush(stdout);
}

static inline void peer_print_row_start(enum peer_coll c, size_t size_bytes, size_t count, int root) {
  printf("%12zu  %12zu  %8s  %6s  %6d", size_bytes, count, "float", c == PEER_ALLREDUCE || c == PEER_REDUCESCATTER ? "sum" : "none",
         c == PEER_BROADCAST ? root : -1);
}

/* One cell's columns; returns busbw. */
static inline double peer_print_cell(const struct peer_args* a, const struct peer_sizes* ps, double sec,
                              unsigned long long wrong) {
  const double alg = sec > 0 ? (double)ps->size_bytes / 1.0e9 / sec : 0.0;
  const double bus = alg * ps->bus_factor;
  const double us = sec * 1.0e6;
  char t[32], w[32];
  if (us >= 10000.0) snprintf(t, sizeof t, "%7.0f", us);
  else if (us >= 100.0) snprintf(t, sizeof t, "%7.1f", us);
  else snprintf(t, sizeof t, "%7.2f", us);
  if (a->check > 0) snprintf(w, sizeof w, "%5llu", wrong);
  else snprintf(w, sizeof w, "%5s", "N/A");
  printf("  %7s  %6.2f  %6.2f  %5s", t, alg, bus, w);
  return bus;
}

static inline void peer_print_footer(long failed_rows, double bw_sum, int bw_count, unsigned long long wrong_total) {
  printf("# Out of bounds values : %ld %s\n", failed_rows, failed_rows ? "FAILED" : "OK");
  printf("# Avg bus bandwidth    : %g \n", bw_count ? bw_sum / bw_count : 0.0);
  printf("#\n");
  if (wrong_total) printf("# FAILED: %llu wrong values\n", wrong_total);
  fflush(stdout);
}

#endif
