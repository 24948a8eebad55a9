// sim_job.cc — what the simulator runs and how it talks about it: the
// buffer layout of each collective's job, and names of steps and errors.
#include <sstream>

#include "simulator.h"

namespace coll::simtest {

using sched::Buf;
using sched::CollKind;
using sched::Step;

const char* errorKindName(ErrorKind k) {
  switch (k) {
    case ErrorKind::InvalidStep: return "invalid step";
    case ErrorKind::Deadlock: return "deadlock";
    case ErrorKind::CountMismatch: return "count mismatch";
    case ErrorKind::UnmatchedSend: return "unmatched send";
    case ErrorKind::ReadsUnwritten: return "reads unwritten Output or Scratch";
    case ErrorKind::InPlaceHazard: return "in-place hazard";
    case ErrorKind::ReducedFinal: return "reduces a finished value";
    case ErrorKind::DoubleFinal: return "post-op applied twice";
    case ErrorKind::UnwrittenOutput: return "Output never written";
    case ErrorKind::NonFinalOutput: return "non-final value left in Output";
    case ErrorKind::NotBitIdentical: return "outputs differ across ranks";
  }
  return "?";
}

std::string describeStep(const Step& s) {
  std::ostringstream o;
  o << sched::stepKindName(s.kind) << "(";
  if (sched::stepReceives(s.kind)) o << "from " << s.recvPeer;
  if (sched::stepSends(s.kind))
    o << (sched::stepReceives(s.kind) ? ", " : "") << "to " << s.sendPeer;
  if (sched::stepReadsSrc(s.kind))
    o << ", src " << sched::bufName(s.src) << "+" << s.srcOff;
  if (sched::stepWritesDst(s.kind))
    o << ", dst " << sched::bufName(s.dst) << "+" << s.dstOff;
  o << ", n=" << s.count << (s.final ? ", final" : "") << ")";
  return o.str();
}

JobSpec collectiveJob(CollKind k, int nranks, int root, size_t count, bool inPlace) {
  JobSpec job;
  job.name = sched::collKindName(k);
  job.nranks = nranks;
  job.ranks.resize(static_cast<size_t>(nranks));
  const size_t N = static_cast<size_t>(nranks);
  for (int r = 0; r < nranks; ++r) {
    RankLayout& L = job.ranks[static_cast<size_t>(r)];
    const size_t rr = static_cast<size_t>(r);
    switch (k) {
      case CollKind::AllReduce:
        L.inCount = L.outCount = count;
        L.alias = inPlace;
        break;
      case CollKind::AllGather:
        L.inCount = count;
        L.outCount = N * count;
        L.alias = inPlace;
        L.inBase = rr * count;  // sendbuf == recvbuf + rank*count
        break;
      case CollKind::ReduceScatter:
        L.inCount = N * count;
        L.outCount = count;
        L.alias = inPlace;
        L.outBase = rr * count;  // recvbuf == sendbuf + rank*count
        break;
      case CollKind::Broadcast:
        L.inCount = r == root ? count : 0;
        L.outCount = count;
        L.alias = inPlace && r == root;
        break;
      case CollKind::Reduce:
        L.inCount = count;
        L.outCount = r == root ? count : 0;
        L.outputForbidden = r != root;
        L.alias = inPlace && r == root;
        break;
      case CollKind::Send:  // rank `r` sends to `root`; the peer receives
      case CollKind::Recv:
        break;
    }
    if (L.outCount == 0) L.outputExpected = false;
  }
  job.reducing = k == CollKind::AllReduce || k == CollKind::ReduceScatter || k == CollKind::Reduce;
  job.outputsIdentical =
      k == CollKind::AllReduce || k == CollKind::AllGather || k == CollKind::Broadcast;
  return job;
}

}  // namespace coll::simtest
