// tuner.h — picks algorithm, channels and chunk size for each call from the
// alpha-beta cost model (schedule/cost.h) fed by the transport's stated
// cost.  Overrides: COLL_ALGO (see algo_override.h), COLL_NCHANNELS,
// COLL_CHUNK_SIZE, COLL_PROTO.  Each distinct decision is logged at INFO
// once: "allreduce 4 MiB n=8 -> ring, 2 ch, 256 KiB chunks, predicted 812 us".
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "schedule/cost.h"
#include "schedule/schedules.h"
#include "tuner/algo_override.h"
#include "coll/base/status.h"

namespace coll::tune {

struct Decision {
  sched::Algo algo = sched::Algo::Ring;
  sched::Chunking chunking;
  // hops * (alpha + handoff) + extraMessages * overhead + byteTerm * beta
  // (terms; where ranks share CPUs, terms.byteTerm is at least all ranks'
  // bytes / sharedCpus).
  double predictedSeconds = 0;
  sched::CostTerms terms;        // the model's multipliers for this call
  bool forced = false;  // COLL_ALGO chose the algorithm
};

struct TunerInputs {
  int rank = 0;
  int nranks = 1;
  int maxChannels = 2;          // channels the transport was connected with
  size_t slotPayloadBytes = 0;  // largest chunk one message can carry
  sched::LinkCost cost;
  std::string costSource = "transport default";  // where cost came from (collGetPlanInfo reports it)
  bool allLocal = true;         // every rank on this machine (one-shot, tree broadcast allowed)
  std::string transport = "shm";  // the transport's name ("shm", "socket", "shm+socket")
  // > 0: every rank runs under one kernel and the ranks outnumber its
  // sharedCpus online CPUs (0: not so, or not known alike everywhere).  The
  // receiver of a hop is then likely descheduled and the message waits for
  // it to be switched in, and all ranks' copies run on those CPUs.  The same
  // on every rank (comm.cc), so every rank picks alike.
  int sharedCpus = 0;
  // Seconds added to every hop where sharedCpus > 0 (0 otherwise): the
  // transport's stated handoff (transport.h LinkCost) or COLL_COST_HANDOFF.
  double handoff = 0;
};

class Tuner {
 public:
  // Reads COLL_ALGO, COLL_NCHANNELS, COLL_CHUNK_SIZE, COLL_PROTO; bad values
  // are errors.
  static Result<Tuner> create(const TunerInputs& in);

  // bytes as nccl-tests counts them (see cost.h); count as in the C API.
  Decision choose(sched::CollKind k, size_t count, size_t elemSize) const;

  const TunerInputs& inputs() const { return in_; }

 private:
  Decision chooseChunking(sched::CollKind k, sched::Algo a, size_t count, size_t bytes, size_t elemSize) const;
  void price(sched::CollKind k, size_t bytes, size_t elemSize, Decision& d) const;
  bool oneShotWorthIt(sched::CollKind k, size_t bytes, const Decision& d) const;
  bool doublingWorthIt(sched::CollKind k, size_t bytes, const Decision& d) const;
  bool halvingWorthIt(sched::CollKind k, size_t bytes, const Decision& d) const;
  bool oneChunk(const Decision& d) const;
  bool latencySized(size_t bytes) const;
  bool socketRelaysShareCpus() const;
  bool socketLinksAcrossHosts() const;
  bool treeBroadcastOverChain(size_t bytes) const;
  bool treeAllReduceOverRing(size_t bytes) const;

  TunerInputs in_;
  AlgoOverride override_;
  std::optional<int> forcedChannels_;
  std::optional<size_t> forcedChunkBytes_;
};

// The smallest chunk the tuner cuts a pipelined call into: alpha/beta of
// the link (the size whose transfer takes as long as a message's fixed
// cost), rounded up to a power of two, at least 4 KiB.
size_t minChunkBytes(const sched::LinkCost& cost);

// Bytes of a call the way nccl-tests counts them.
size_t collBytes(sched::CollKind k, size_t count, size_t elemSize, int nranks);

}  // namespace coll::tune
