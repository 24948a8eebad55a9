#include "tuner/tuner.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>

#include "schedule/tree_shape.h"
#include "coll/base/settings.h"
#include "coll/base/log.h"

namespace coll::tune {

using sched::Algo;
using sched::CollKind;

size_t collBytes(CollKind k, size_t count, size_t elemSize, int nranks) {
  if (k == CollKind::AllGather || k == CollKind::ReduceScatter) return count * elemSize * nranks;
  return count * elemSize;
}

Result<Tuner> Tuner::create(const TunerInputs& in) {
  Tuner t;
  t.in_ = in;
  if (auto v = settings::readText("COLL_ALGO")) {
    auto o = AlgoOverride::parse(*v);
    COLL_CHECK(o.status());
    t.override_ = o.take();
  }
  auto channels = settings::readInt("COLL_NCHANNELS");
  COLL_CHECK(channels.status());
  if (channels.value()) {
    if (*channels.value() > in.maxChannels)
      return makeError(collInvalidArgument, "COLL_NCHANNELS={} must be at most {} (the channels set up at init)",
                       *channels.value(), in.maxChannels);
    t.forcedChannels_ = static_cast<int>(*channels.value());
  }
  auto chunk = settings::readBytes("COLL_CHUNK_SIZE");
  COLL_CHECK(chunk.status());
  if (chunk.value()) {
    if (*chunk.value() > in.slotPayloadBytes)
      return makeError(collInvalidArgument, "COLL_CHUNK_SIZE={} must be at most {} (the slot payload)", *chunk.value(),
                       in.slotPayloadBytes);
    t.forcedChunkBytes_ = *chunk.value();
  }
  // One host protocol exists (chunked copies through slots): the table
  // allows COLL_PROTO=simple only.
  COLL_CHECK(settings::readChoice("COLL_PROTO").status());
  return t;
}

size_t minChunkBytes(const sched::LinkCost& cost) {
  // alpha/beta bytes take as long to move as the message's fixed cost;
  // rounded up to a power of two, at least 4 KiB (shm: 4 KiB; TCP on
  // loopback, 6 us at 2 GB/s: 16 KiB).
  size_t bytes = 4096;
  const double breakEven = cost.beta > 0 ? cost.alpha / cost.beta : 0;
  while (static_cast<double>(bytes) < breakEven && bytes < (size_t{1} << 30)) bytes *= 2;
  return bytes;
}

Decision Tuner::chooseChunking(CollKind k, Algo a, size_t count, size_t bytes, size_t elemSize) const {
  Decision d;
  d.algo = a;
  size_t maxChunkElems = std::max<size_t>(1, in_.slotPayloadBytes / elemSize);
  // Channels: one for small calls (one stream is cheapest to drive), all of
  // them once every channel gets a few full chunks of work.
  int nch = bytes >= static_cast<size_t>(in_.nranks) * in_.slotPayloadBytes ? in_.maxChannels : 1;
  if (socketLinksAcrossHosts()) nch = 1;
  if (a == Algo::Tree && k == CollKind::AllReduce) nch = std::max(nch, std::min(2, in_.maxChannels));  // two trees
  if (forcedChannels_) nch = *forcedChannels_;
  size_t chunkElems = maxChunkElems;
  if (forcedChunkBytes_) {
    chunkElems = std::max<size_t>(1, *forcedChunkBytes_ / elemSize);
  } else {
    // Mid-size calls: cut so each channel's pipeline has a few chunks in
    // flight (the hop latency is hidden behind the copy of the next chunk),
    // but no chunk below minChunkBytes(): a smaller one costs more in
    // per-message overhead than its bytes take to move.
    size_t perChannel = std::max<size_t>(1, count / static_cast<size_t>(nch));
    // (The tree broadcast is not cut: its root sends every chunk L times
    // in turn, so more chunks only add messages; see tree_broadcast.cc.)
    const bool pipelines = a == Algo::Pipeline || (a == Algo::Tree && k == CollKind::AllReduce);
    size_t pieces = pipelines ? 4 : 1;
    size_t want = (perChannel + pieces - 1) / pieces;
    // Recursive doubling's all-gather and halving's reduce-scatter send
    // ranges of several ranks' blocks in one step as long as they fit a
    // chunk: let a chunk hold all N blocks (the slot permitting), or a
    // round of a 64 KiB call at N = 8 goes as two messages.
    if ((a == Algo::Doubling && k == CollKind::AllGather) || (a == Algo::Halving && k == CollKind::ReduceScatter))
      want = want > maxChunkElems / static_cast<size_t>(in_.nranks) ? maxChunkElems
                                                                      : want * static_cast<size_t>(in_.nranks);
    size_t minElems = std::max<size_t>(1, minChunkBytes(in_.cost) / elemSize);
    chunkElems = std::clamp(want, std::min(minElems, maxChunkElems), maxChunkElems);
  }
  d.chunking = sched::Chunking{nch, chunkElems};
  price(k, bytes, elemSize, d);
  return d;
}

// The model's price of d as cut (the same sum as sched::predictSeconds, with
// the terms kept for collGetPlanInfo), and where ranks share CPUs and the
// transport states a handoff (shm: its alpha and beta are a spinning
// receiver's on its own core):
// - every hop costs the handoff too (a descheduled receiver switched in);
//   one-shot's extra messages do not: their senders post them together;
// - the byte term is at least all ranks' bytes / the CPUs, since all their
//   copies run there.  Where one rank's bytes set the time on a machine with
//   a core each, on 2 cores the sum does: one-shot all-reduce (N(N-1) S in
//   all) and doubling (N log2 N S) lose to the ring (2(N-1) S) sooner than
//   the busiest rank's bytes say; priced by hops alone the tuner took
//   one-shot at N = 3, 64 KiB and N = 4, 16 KiB (0.77-0.84x the former
//   choice) and doubling at N = 8, 128 KiB (0.8x).
// Sockets state no handoff: their alpha and beta already hold the kernel's
// wake-ups and copies, and with the floor over TCP the tuner moved 64 KiB-
// 16 MiB all-reduces at N = 4 to the tree, which measured 0.5-0.76x.
void Tuner::price(CollKind k, size_t bytes, size_t elemSize, Decision& d) const {
  d.terms = sched::costTerms(k, d.algo, in_.nranks, bytes, d.chunking, elemSize);
  if (in_.sharedCpus > 0 && in_.handoff > 0)
    d.terms.byteTerm = std::max(d.terms.byteTerm, d.terms.totalBytes / in_.sharedCpus);
  d.predictedSeconds = d.terms.hops * (in_.cost.alpha + in_.handoff) + d.terms.extraMessages * in_.cost.overhead +
                       d.terms.byteTerm * in_.cost.beta;
}

// One-shot all-gather is a latency algorithm: one hop instead of N-1, but a
// chunk's receives wait for its sends, so its chunks do not pipeline, and
// the model (one alpha per chunk) does not see the cost of that.  Measured
// on shm and TCP (docs/PERFORMANCE.md, "One hop for small all-gathers"):
// ahead while a rank's part is one chunk on one channel, behind from about
// 1 MiB at N=4.  At N=2 it is the ring step for step.
// One-shot reduce-scatter, its mirror, falls behind sooner: its owner
// reduces the N-1 blocks one after another as they come, where the ring
// overlaps each reduction with the next transfer.  Measured against the
// ring (docs/PERFORMANCE.md, "One hop for small reduce-scatters"): loopback
// TCP 1.2-1.5x up to 64 KiB, 0.53x at 256 KiB (N = 4); shm 1.35-2.3x up to
// 16 KiB, level or 1.1x at 64 KiB, 0.82-0.89x at 256 KiB.  So it takes calls
// of at most four times alpha/beta bytes (shm 16 KiB, loopback TCP 64 KiB),
// the bound doubling's all-gather has too.
bool Tuner::oneShotWorthIt(CollKind k, size_t bytes, const Decision& d) const {
  if (in_.nranks < 3 || !oneChunk(d)) return false;
  return k != CollKind::ReduceScatter || latencySized(bytes);
}

// The latency algorithms' shared bounds: the call is one chunk on one
// channel (their chunks do not pipeline, and their models assume a round
// goes as one message), and at most four times alpha/beta bytes.
bool Tuner::oneChunk(const Decision& d) const { return d.chunking.nchannels == 1 && d.terms.chunks <= 1; }
bool Tuner::latencySized(size_t bytes) const { return bytes <= 4 * minChunkBytes(in_.cost); }

// Recursive doubling swaps whole partial results (all-reduce) or ranges of
// blocks (all-gather) in log2 N rounds that do not pipeline: a latency
// algorithm, like one-shot, and the model misses what its rounds cost
// once bytes count:
// - across hosts it is used only below the link's alpha/beta size: on
//   netsim (1 Gbit/s, N = 4) it ran 1.4-2.8x the ring and tree up to 16
//   KiB, but a 128 KiB all-reduce took 4.4 ms against the ring's 1.7 (each
//   round a burst of the whole buffer on every link at once, which TCP
//   there did not carry at line rate);
// - its all-gather only while the call is one chunk on one channel (the
//   model assumes each round's range is one message) and at most four
//   times alpha/beta bytes: over loopback TCP with 8 ranks on 2 cores it
//   was 1.1-1.5x one-shot up to 64 KiB but 0.73x at 128 KiB (N = 4: level
//   at 128 KiB, 0.9x at 512 KiB), each round a wait for ranks that share
//   the cores, where one-shot waits once (docs/PERFORMANCE.md, "Recursive
//   doubling").  Its all-reduce measured as the model says on one host.
bool Tuner::doublingWorthIt(CollKind k, size_t bytes, const Decision& d) const {
  // (At N = 2 on one host it is one-shot, or the all-gather ring, step for
  // step: leave the call to those.)
  if (in_.nranks < 3 && in_.allLocal) return false;
  const size_t latencySize = minChunkBytes(in_.cost);
  if (!in_.allLocal && bytes > latencySize) return false;
  if (k == CollKind::AllGather)
    return oneChunk(d) && latencySized(bytes);
  return true;
}

// Recursive halving reduce-scatter (halving_reduce_scatter.cc): log2 P
// rounds of one message each, where one-shot sends N-1 messages and the
// ring takes N-1 hops in turn.  A latency algorithm like one-shot: one
// chunk on one channel (the model assumes a round's blocks go as one
// message) of at most four times alpha/beta bytes.  Unlike one-shot it may
// cross hosts: one partner per round, no N-1 senders into one host.  The
// model then picks.  Measured, medians of 3 alternating runs
// (docs/PERFORMANCE.md, "Recursive halving for small reduce-scatters"):
// loopback TCP against one-shot, 1-16 KiB: N = 8 1.27-1.35x, N = 7
// 1.25-1.31x, N = 6 1.05-1.16x, N = 4 1.24-1.41x, N = 5 level, N = 3
// 0.82-0.89x (the model keeps one-shot: the fold's two hops); at 64 KiB
// with a fold 0.65x (the model takes one-shot there too).  Netsim, 1 Gbit/s,
// against the ring up to 64 KiB: N = 4 1.02-1.85x, N = 8 1.43-2.96x; from
// 256 KiB 0.65x.  On shm one-shot's extra messages are cheap (halving ran
// 0.5-0.7x it) and the model, which prices a handoff on every hop where
// ranks share the cores, does not take halving.
bool Tuner::halvingWorthIt(CollKind k, size_t bytes, const Decision& d) const {
  return k == CollKind::ReduceScatter && in_.nranks >= 3 && oneChunk(d) && latencySized(bytes);
}

// Over TCP on one host whose ranks outnumber its CPUs, a relay through the
// kernel is costly: a rank that receives and forwards every chunk polls two
// sockets while the ranks it waits for wait for a core (strace, broadcast
// chain at N = 8: 2.2x the failed receives of the tree, 1.35-1.5x the CPU
// time for the same bytes).  Algorithms whose chunks pass through fewer
// relays in turn then beat the model's pick, as below.
bool Tuner::socketRelaysShareCpus() const {
  return in_.sharedCpus > 0 && in_.allLocal && in_.transport == "socket";
}

// Across hosts over TCP, every call on one channel (the double tree's two
// excepted: with one, a single tree carries all the data through the half
// of the ranks that are its interior).  Where a host's link is the
// bottleneck, the channels' TCP flows share it (the rings of channels 0
// and 1 run in opposite directions, but both leave a host through its one
// link), and the kernel's shares differ from host to host; a pipeline
// (ring, chain) channel then moves at its smallest share along the path,
// so the channels add up to less than one flow that has every link to
// itself.  Measured on netsim (1 Gbit/s links), one channel against two,
// medians of 3 alternating runs: N = 4 broadcast 1.21-1.29x at 1-4 MiB,
// all-gather, reduce-scatter and all-reduce 1.11-1.19x at 1-2 MiB, 0.98-
// 1.09x at 4-8 MiB; N = 8 1.07-1.56x at 2-4 MiB; at 4 Gbit/s 1.02-1.56x;
// at N = 2 (one link each way) level.  On one host the channels win
// (loopback TCP: all-reduce 1.04-1.16x with two), and so does the tree's
// second channel across hosts (1.4-2.9x at 32-256 KiB).  COLL_NCHANNELS still
// forces a count (a NIC that one flow cannot fill).
bool Tuner::socketLinksAcrossHosts() const {
  return !in_.allLocal && in_.transport.find("socket") != std::string::npos;
}

// Broadcast: the binomial tree, not the chain of N-2 relays.  Measured with
// ranks on 2 cores, 256 KiB-4 MiB, tree against chain: N = 4 1.3-2.4x, N =
// 6 1.26-1.39x, N = 7 1.25-2.1x, N = 8 1.34-2.35x; at 16 MiB 0.93-1.19x,
// from 64 MiB level (N = 8: 0.95x), so the tree takes calls up to 8 MiB.  At
// N = 5 the tree (depth 3) saves one of the chain's 4 hops and measured
// 0.86-1.18x, so the tree must save a third of the hops.  On shm the chain's
// relays are memory copies and it wins from 2 MiB, so this is the socket
// transport's only (docs/PERFORMANCE.md, "Ranks sharing cores").
bool Tuner::treeBroadcastOverChain(size_t bytes) const {
  constexpr size_t kMaxBytes = size_t{8} << 20;
  if (!socketRelaysShareCpus() || bytes > kMaxBytes) return false;
  return 3 * sched::binomialTreeDepth(in_.nranks) <= 2 * (in_.nranks - 1);
}

// All-reduce from 6 ranks on: the double binary tree (a chunk's path is
// 2 log2 N ranks), not the ring (2(N-1) in turn).  Measured with ranks on 2
// cores, tree against ring, medians of 3-5 alternating runs: from 16 MiB
// N = 6 1.26-1.34x, N = 7 1.36-1.46x, N = 8 1.28-1.48x; at 1-4 MiB it swung
// between runs (N = 6 0.71-1.17x, N = 8 0.70-1.75x), N = 5 was level and
// N = 4 0.68-0.82x.  The model, which prices the ring's bytes below the
// tree's, keeps the ring everywhere else.
bool Tuner::treeAllReduceOverRing(size_t bytes) const {
  constexpr size_t kMinBytes = size_t{16} << 20;
  return socketRelaysShareCpus() && in_.nranks >= 6 && bytes >= kMinBytes;
}

Decision Tuner::choose(CollKind k, size_t count, size_t elemSize) const {
  size_t bytes = collBytes(k, count, elemSize, in_.nranks);
  if (k == CollKind::Send || k == CollKind::Recv) {
    Decision d = chooseChunking(k, Algo::Direct, count, bytes, elemSize);
    d.chunking.nchannels = 1;  // one ordered stream per peer pair
    price(k, bytes, elemSize, d);
    return d;
  }
  Decision best;
  bool have = false;
  if (auto forced = override_.lookup(k, bytes)) {
    best = chooseChunking(k, *forced, count, bytes, elemSize);
    best.forced = true;
    have = true;
  } else {
    // Ties go to the earlier candidate.  The chain first: on a tie (N <= 3,
    // where the binomial tree's L hops are the chain's N-1) it wins, and
    // its root sends one copy, not L.  Then the latency algorithms,
    // recursive doubling before one-shot (at N = 5 the model prices them
    // alike on sockets; doubling measured 1.5x) and one-shot before the
    // ring (at N = 3 one-shot all-gathers tie the ring in the model and
    // measured 1.05-1.14x it).
    // A tree all-reduce of one chunk per channel does not pipeline: it is
    // 2D hops with two-child ranks handling six messages, where doubling
    // takes log2 N hops with one peer per round.  Measured, it ran
    // 0.55-0.6x doubling on loopback TCP (N = 3, 6) and 0.6-0.7x on shm (N
    // = 8, 1-16 KiB); so where doubling is a candidate, the tree is
    // considered only for calls it pipelines.
    // Where a handoff is priced (ranks share cores, shm) it is not
    // considered at all: its model counts 2D + k - 1 hops, the levels
    // overlapping as chunks stream, but with fewer cores than ranks the
    // levels take turns, and the handoff on its fewer hops made it the
    // model's pick at N = 6-7 from 32 KiB to 256 KiB.  Measured on 2 cores
    // over shm (N = 5-8, 16 KiB-1 MiB) it was never the fastest: doubling
    // or the ring beat it by 1.1-2x (docs/PERFORMANCE.md, "Ranks sharing
    // cores").  (Over TCP, where no handoff is priced, it ran level with
    // the ring at 64 KiB and 1.05-1.5x it from 1 MiB.)
    std::optional<Decision> doubling;
    if (sched::algoSupports(k, Algo::Doubling)) {
      Decision d = chooseChunking(k, Algo::Doubling, count, bytes, elemSize);
      if (doublingWorthIt(k, bytes, d)) doubling = d;
    }
    // The halving all-reduce (Rabenseifner) is not a candidate: the model
    // prices it below doubling and the ring from about 48 KiB to 256 KiB,
    // but on this 2-core machine it measured behind one of them at every
    // size but the 1-4 MiB rows of TCP at N = 8 (docs/PERFORMANCE.md,
    // "Recursive doubling"); COLL_ALGO=allreduce:halving uses it.
    for (Algo a : {Algo::Pipeline, Algo::Doubling, Algo::Halving, Algo::OneShot, Algo::Ring, Algo::Tree}) {
      if (!sched::algoSupports(k, a)) continue;
      if (a == Algo::Halving && k == CollKind::AllReduce) continue;
      // One-shot algorithms stay on one host.  All-reduce sends (N-1) full
      // copies out of every rank; all-gather moves the ring's bytes, but N-1
      // peers sending to one host at once stalled TCP on netsim at N=8
      // (7-12 ms for a 64 B all-gather against the ring's 0.6 ms: loss
      // probes and retransmits), though it gained 1.05-1.4x at N=4.
      // One-shot broadcast only when COLL_ALGO asks for it: the model prices
      // one call's latency (1 hop against the chain's N-1), but a
      // broadcast's root returns without waiting, so back-to-back
      // broadcasts overlap and the root's port, which carries N-1 copies,
      // sets the pace; the chain carries one per link.  Measured: 0.3-0.7x
      // the chain on netsim, 0.8-0.9x on loopback below 2 KiB.
      // The tree broadcast stays on one host for the same reason: its root
      // sends L copies of every call where the chain's sends one, and
      // across hosts that root port, not the call's hops, sets the pace of
      // back-to-back calls (netsim, N=4: 0.5-1.0x the chain at 32 B-128
      // KiB; N=8: 1.15-1.5x below 16 KiB, 0.65x at 16 KiB).  On one host
      // the hops are wake-ups of other processes, and the tree gains 1.4-
      // 1.9x at 2-16 KiB (docs/PERFORMANCE.md, "Binomial tree broadcast").
      if (a == Algo::OneShot && !in_.allLocal) continue;
      if (a == Algo::OneShot && k == CollKind::Broadcast) continue;
      if (a == Algo::Tree && k == CollKind::Broadcast && !in_.allLocal) continue;
      if (a == Algo::Doubling && !doubling) continue;
      if (a == Algo::Pipeline && k == CollKind::Broadcast && treeBroadcastOverChain(bytes)) continue;
      if (a == Algo::Ring && k == CollKind::AllReduce && treeAllReduceOverRing(bytes)) continue;
      Decision d = a == Algo::Doubling ? *doubling : chooseChunking(k, a, count, bytes, elemSize);
      if (a == Algo::OneShot && (k == CollKind::AllGather || k == CollKind::ReduceScatter) &&
          !oneShotWorthIt(k, bytes, d))
        continue;
      if (a == Algo::Halving && !halvingWorthIt(k, bytes, d)) continue;
      if (a == Algo::Tree && k == CollKind::AllReduce && doubling && d.terms.chunks < 2) continue;
      if (a == Algo::Tree && k == CollKind::AllReduce && in_.handoff > 0) continue;
      if (!have || d.predictedSeconds < best.predictedSeconds) {
        best = d;
        have = true;
      }
    }
  }
  if (log::enabled(log::Level::Info, log::kTune)) {
    // Each distinct decision once per process, not once per call.
    static std::mutex mu;
    static std::set<std::tuple<int, int, size_t, int, size_t, int>> seen;
    std::lock_guard<std::mutex> lock(mu);
    auto key = std::make_tuple(static_cast<int>(k), in_.nranks, bytes, static_cast<int>(best.algo),
                               best.chunking.chunkElems, best.chunking.nchannels);
    if (seen.insert(key).second)
      COLL_LOG(Info, kTune, in_.rank, "{} {} B n={} -> {}{}, {} ch, {} B chunks, predicted {:.1f} us",
               sched::collKindName(k), bytes, in_.nranks, sched::algoName(best.algo), best.forced ? " (COLL_ALGO)" : "",
               best.chunking.nchannels, best.chunking.chunkElems * elemSize, best.predictedSeconds * 1e6);
  }
  return best;
}

}  // namespace coll::tune
