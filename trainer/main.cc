// coll-train — data-parallel MLP / ResNet training on Fashion-MNIST over
// libcoll.  Ranks come from collrun, torchrun, mpirun or srun (see
// README "Running on several machines"); one process is a 1-rank job.
#include <cstdio>
#include <cstdlib>

#include "coll.h"
#include "ddp/comm_worker.h"
#include "train/check_grads.h"
#include "train/options.h"
#include "train/train_loop.h"

int main(int argc, char** argv) {
  auto opts = coll::train::parseOptions(argc, argv);
  if (!opts.isOk()) {
    fprintf(stderr, "coll-train: %s\n%s", opts.status().message().c_str(), coll::train::usage());
    return 2;
  }
  if (opts.value().help) {
    printf("%s", coll::train::usage());
    return 0;
  }
  // The communicator is driven by a second thread that shares its core
  // with the compute thread: while it waits for peers it must give the core
  // back quickly instead of spinning (the user's COLL_SPIN/COLL_YIELD win).
  setenv("COLL_SPIN", "64", 0);
  setenv("COLL_YIELD", "16", 0);
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "coll-train: init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int rc;
  {
    coll::train::CommWorker worker(comm);
    coll::train::RunContext ctx;
    ctx.comm = comm;
    collCommUserRank(comm, &ctx.rank);
    collCommCount(comm, &ctx.nranks);
    ctx.worker = &worker;
    rc = opts.value().checkGrads ? coll::train::runGradCheck(opts.value(), ctx)
                                 : coll::train::runTraining(opts.value(), ctx);
  }
  collCommDestroy(comm);
  return rc;
}
