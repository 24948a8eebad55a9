/*
 * coll.h — the public C API of libcoll.
 *
 * Plain C: opaque handles, enums with explicit values, a versioned config
 * struct.  Every function returns a collResult_t; no exception crosses this
 * boundary.  collGetLastError(comm) gives a message naming the argument, or
 * the rank and step, that caused the last failure.
 *
 * Semantics follow NCCL where they apply: count 0 succeeds, sendbuf ==
 * recvbuf means in-place (all-gather: sendbuf == recvbuf + rank*count),
 * avg divides after summing.  A host-memory call returns once its result is
 * in recvbuf (or, inside a group, at collGroupEnd).
 */
#ifndef COLL_H_
#define COLL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLL_MAJOR 0
#define COLL_MINOR 1
#define COLL_PATCH 0
#define COLL_VERSION_CODE (COLL_MAJOR * 10000 + COLL_MINOR * 100 + COLL_PATCH)

#if defined(__GNUC__)
#define COLL_API __attribute__((visibility("default")))
#else
#define COLL_API
#endif

/* Result codes.  0..7 have NCCL's values so the NCCL ABI layer maps 1:1. */
typedef enum {
  collSuccess = 0,
  collUnhandledCudaError = 1,
  collSystemError = 2,        /* a system call failed (shm, socket, ...) */
  collInternalError = 3,      /* a bug in libcoll */
  collInvalidArgument = 4,    /* bad pointer, dtype, op, root, count, ... */
  collInvalidUsage = 5,       /* call in the wrong state (after abort, ...) */
  collRemoteError = 6,        /* a peer failed, died or disagreed */
  collInProgress = 7,
  collTimeout = 8,            /* a wait passed its deadline (COLL_TIMEOUT) */
  collArgMismatch = 9,        /* ranks called with different count/dtype/op/root */
  collAborted = 10,           /* collCommAbort was called on this comm */
  collNumResults = 11
} collResult_t;

typedef enum {
  collInt8 = 0, collChar = 0,
  collUint8 = 1,
  collInt32 = 2, collInt = 2,
  collUint32 = 3,
  collInt64 = 4,
  collUint64 = 5,
  collFloat16 = 6, collHalf = 6,
  collFloat32 = 7, collFloat = 7,
  collFloat64 = 8, collDouble = 8,
  collBfloat16 = 9,
  collFloat8e4m3 = 10,
  collFloat8e5m2 = 11,
  collNumTypes = 12
} collDataType_t;

/* Built-in ops; values >= collNumOps are created by collRedOpCreatePreMulSum. */
typedef enum {
  collSum = 0,
  collProd = 1,
  collMax = 2,
  collMin = 3,
  collAvg = 4,
  collNumOps = 5,
  collMaxRedOp = 0x7fffffff
} collRedOp_t;

/* Where the pre-multiplication scalar lives (NCCL: ncclScalarResidence_t). */
typedef enum {
  collScalarDevice = 0,
  collScalarHostImmediate = 1
} collScalarResidence_t;

typedef struct collComm* collComm_t;

/* Opaque to users: the root's address and a random job secret. */
#define COLL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[COLL_UNIQUE_ID_BYTES];
} collUniqueId;

/* A stream handle: a cudaStream_t for device buffers, ignored for host ones. */
typedef void* collStream_t;

/* Versioned config.  Always start from COLL_CONFIG_INITIALIZER; fields left
 * at COLL_CONFIG_UNDEF take the environment's value or the default. */
#define COLL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define COLL_CONFIG_MAGIC 0x6c6c6f63u /* "coll" */
typedef struct {
  size_t size;          /* sizeof(collConfig_t) as the caller compiled it */
  unsigned int magic;   /* COLL_CONFIG_MAGIC */
  unsigned int version; /* COLL_VERSION_CODE */
  int timeoutMs;        /* deadline of every blocking wait; COLL_TIMEOUT */
  int nChannels;        /* channels per collective; COLL_NCHANNELS */
  int checkMode;        /* 1: extra argument checks; COLL_CHECK */
  const char* commName; /* shown in log lines; may be NULL */
} collConfig_t;

#define COLL_CONFIG_INITIALIZER                                           \
  {                                                                       \
    sizeof(collConfig_t), COLL_CONFIG_MAGIC, COLL_VERSION_CODE,           \
        COLL_CONFIG_UNDEF_INT, COLL_CONFIG_UNDEF_INT,                     \
        COLL_CONFIG_UNDEF_INT, NULL                                       \
  }

/* ---- Versions and errors ---- */
COLL_API collResult_t collGetVersion(int* version);
COLL_API const char* collGetErrorString(collResult_t result);
/* The last error message of comm (or of this thread's last call that had no
 * valid comm, when comm is NULL).  Never NULL; "" when there was none. */
COLL_API const char* collGetLastError(collComm_t comm);

/* ---- Communicators ---- */
/* Called by one rank (the root); the id is then given to every rank. The
 * calling process listens for the other ranks until the communicator is up. */
COLL_API collResult_t collGetUniqueId(collUniqueId* uniqueId);
COLL_API collResult_t collCommInitRank(collComm_t* comm, int nranks,
                                       collUniqueId commId, int rank);
COLL_API collResult_t collCommInitRankConfig(collComm_t* comm, int nranks,
                                             collUniqueId commId, int rank,
                                             collConfig_t* config);
/* N ranks in this process; comms[i] is rank i.  A rank's device calls run
 * on the GPU of its buffers (any number of ranks per GPU); one thread may
 * drive every rank inside collGroupStart/End, or each rank its own thread.
 * devlist is not used and may be NULL. */
COLL_API collResult_t collCommInitAll(collComm_t* comms, int ndev,
                                      const int* devlist);
/* Init from the environment a launcher set.  Rank and size come from the
 * first of these that is set: collrun (COLL_RANK, COLL_NRANKS), torchrun
 * (RANK, WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE),
 * Slurm (SLURM_PROCID, SLURM_NTASKS); none: a 1-rank communicator.  Two of
 * the first three that give the same size but different ranks are an error.
 * Rank 0 hosts the rendezvous at COLL_ROOT=host:port, else at
 * MASTER_ADDR:MASTER_PORT (a host name is resolved; under a real torchrun,
 * TORCHELASTIC_RUN_ID set, at MASTER_PORT+1 since torchrun's store holds
 * MASTER_PORT); the others connect there.  The job secret is COLL_SECRET,
 * else derived from the launcher's job id and that address, with a warning
 * on rank 0 (anyone who knows both can join).  Errors name the variables. */
COLL_API collResult_t collCommInitFromEnv(collComm_t* comm);
COLL_API collResult_t collCommDestroy(collComm_t comm);
/* Callable from any thread: every wait of comm returns collAborted
 * promptly; the comm must then be destroyed. */
COLL_API collResult_t collCommAbort(collComm_t comm);
COLL_API collResult_t collCommCount(const collComm_t comm, int* count);
COLL_API collResult_t collCommUserRank(const collComm_t comm, int* rank);
/* Registers a host buffer with the communicator's network, as NCCL's
 * ncclCommRegister: over InfiniBand, sends of 32 KiB or more from inside it
 * leave straight from it (the NIC reads it) instead of through a staging
 * copy.  The buffer must stay allocated until collCommDeregister (or the
 * communicator's destruction).  A hint: where nothing uses it (shared
 * memory, sockets, device buffers) it is only recorded. */
COLL_API collResult_t collCommRegister(const collComm_t comm, void* buff, size_t size, void** handle);
COLL_API collResult_t collCommDeregister(const collComm_t comm, void* handle);
/* Writes the communicator's flight recorder (its last COLL_FR_ENTRIES
 * calls: what, how far, whom a call still waits on) to path as JSON lines
 * (docs/flight-recorder.md); path NULL or "": COLL_FR_DIR's default file
 * coll_fr.<comm id>.r<rank>.jsonl.  Failures, and SIGUSR2, dump by
 * themselves. */
COLL_API collResult_t collCommDumpRecord(const collComm_t comm, const char* path);
COLL_API collResult_t collCommGetAsyncError(collComm_t comm,
                                            collResult_t* asyncError);

/* ---- Reduction ops ---- */
COLL_API collResult_t collRedOpCreatePreMulSum(collRedOp_t* op, void* scalar,
                                               collDataType_t datatype,
                                               collScalarResidence_t residence,
                                               collComm_t comm);
COLL_API collResult_t collRedOpDestroy(collRedOp_t op, collComm_t comm);

/* ---- Collectives ---- */
COLL_API collResult_t collAllReduce(const void* sendbuff, void* recvbuff,
                                    size_t count, collDataType_t datatype,
                                    collRedOp_t op, collComm_t comm,
                                    collStream_t stream);
/* sendcount elements per rank; recvbuff holds nranks*sendcount. */
COLL_API collResult_t collAllGather(const void* sendbuff, void* recvbuff,
                                    size_t sendcount, collDataType_t datatype,
                                    collComm_t comm, collStream_t stream);
COLL_API collResult_t collBroadcast(const void* sendbuff, void* recvbuff,
                                    size_t count, collDataType_t datatype,
                                    int root, collComm_t comm,
                                    collStream_t stream);
/* sendbuff holds nranks*recvcount; rank r receives block r. */
COLL_API collResult_t collReduceScatter(const void* sendbuff, void* recvbuff,
                                        size_t recvcount,
                                        collDataType_t datatype,
                                        collRedOp_t op, collComm_t comm,
                                        collStream_t stream);
/* recvbuff is only used on root. */
COLL_API collResult_t collReduce(const void* sendbuff, void* recvbuff,
                                 size_t count, collDataType_t datatype,
                                 collRedOp_t op, int root, collComm_t comm,
                                 collStream_t stream);
COLL_API collResult_t collSend(const void* sendbuff, size_t count,
                               collDataType_t datatype, int peer,
                               collComm_t comm, collStream_t stream);
COLL_API collResult_t collRecv(void* recvbuff, size_t count,
                               collDataType_t datatype, int peer,
                               collComm_t comm, collStream_t stream);

/* ---- The plan of a call and its cost model ---- */
/* Which call collGetPlanInfo asks about. */
typedef enum {
  collCollAllReduce = 0,
  collCollAllGather = 1,
  collCollReduceScatter = 2,
  collCollBroadcast = 3,
  collCollReduce = 4,
  collCollSend = 5,
  collCollRecv = 6,
  collNumCollectives = 7
} collCollective_t;

/* What comm would do for one call, and what the alpha-beta model predicts.
 *   predictedSeconds = hops * (alpha + handoff) + extraMessages * overhead
 *                      + byteTerm * beta
 *                    = alphaSeconds + handoffSeconds + overheadSeconds
 *                      + betaSeconds
 * alpha: seconds per message hop; beta: seconds per byte on the busiest
 * link; overhead: seconds per message a rank handles beyond one send and
 * one receive per hop (one-shot algorithms).  Where all ranks run under one
 * kernel and outnumber its CPUs (sharedCpus > 0): handoff, seconds added to
 * each hop (COLL_COST_HANDOFF; 0 elsewhere), and byteTerm is at least all
 * ranks' bytes / sharedCpus.  A call is latency-bound when the alpha,
 * handoff and overhead terms dominate. */
typedef struct {
  char algorithm[16];     /* "ring", "tree", "oneshot", "pipeline", "direct",
                             "doubling", "halving";
                             "none" when no message moves (count 0, send/recv
                             to self) */
  int forced;             /* 1: COLL_ALGO forced the algorithm */
  int nChannels;
  size_t chunkBytes;      /* largest piece one message carries */
  size_t chunks;          /* chunks per channel (ring all-reduce: loops) */
  size_t bytes;           /* the call's size S as nccl-tests counts it
                             (all-gather/reduce-scatter: nranks*count*elem) */
  int nranks;
  char transport[16];     /* "shm", "socket", "shm+socket"; "none" (1 rank) */
  double alpha;           /* s per hop, as the tuner uses it */
  double beta;            /* s per byte, as the tuner uses it */
  char costSource[256];   /* where alpha/beta came from: "transport default
                             (shm)", "file PATH (shm, DATE)" (COLL_COST_FILE),
                             "... + env COLL_COST_ALPHA COLL_COST_BETA" */
  double hops;            /* the alpha multiplier */
  double byteTerm;        /* the beta multiplier (bytes): the busiest
                             link's, or all ranks' / sharedCpus if more */
  double alphaSeconds;    /* hops * alpha */
  double betaSeconds;     /* byteTerm * beta */
  double predictedSeconds;
  char formula[64];       /* the algorithm's formula, a = alpha, B = 1/beta,
                             o = overhead, e.g. "2(N-1)L a + 2(N-1)/N S/B" */
  double overhead;        /* s per extra message, as the tuner uses it */
  double extraMessages;   /* the overhead multiplier */
  double overheadSeconds; /* extraMessages * overhead */
  double handoff;         /* s added per hop where ranks share CPUs, else 0 */
  double handoffSeconds;  /* hops * handoff */
  int sharedCpus;         /* CPUs all ranks share when they outnumber them;
                             0: not so (or ranks on several kernels) */
} collPlanInfo_t;

/* Fills *info with the decision comm's tuner and plan cache take for this
 * call (the same code path as the call itself: a call already made answers
 * from the plan cache, else the tuner is asked; nothing is communicated and
 * no other rank needs to call).  count, dtype and root mean what they mean
 * for the collective (all-gather: per-rank send count; reduce-scatter:
 * per-rank recv count; root: broadcast/reduce root, send/recv peer, else
 * ignored).  The reduction op does not change the plan and is not asked.
 * This is the host-buffer plan; calls on CUDA device buffers take the device
 * path (docs/ARCHITECTURE.md, "Device collectives"), which it does not model.
 * Errors: collInvalidArgument for a bad comm, collective, dtype, root/peer,
 * a count that overflows, or info == NULL; collInvalidUsage after an abort. */
COLL_API collResult_t collGetPlanInfo(collComm_t comm,
                                      collCollective_t collective,
                                      size_t count, collDataType_t datatype,
                                      int root, collPlanInfo_t* info);

/* ---- Groups ---- */
/* Operations between Start and End are queued and run together at End;
 * send/recv pairs in one group never deadlock; groups nest (the outermost
 * End runs them). */
COLL_API collResult_t collGroupStart(void);
COLL_API collResult_t collGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* COLL_H_ */
