// ring_order.h — the order in which the ring and pipeline schedules visit
// the ranks (Chunking::ringOrder), from where the ranks are.
//
// Why: a ring of N ranks on H hosts crosses between hosts once per pair of
// neighbours on different hosts.  With each host's ranks next to each other
// that is H crossings, and each host's network link carries one ring hop out
// and one in.  Ranks dealt to hosts in turn (rank r on host r % H: Slurm's
// cyclic distribution, mpirun --map-by node) put every neighbour pair on
// two hosts: N crossings, N/H hops out and in on every host's link, so a
// bandwidth-bound all-reduce takes N/H times as long.  NCCL orders its rings
// by topology for the same reason.
#pragma once

#include <cstdint>
#include <vector>

namespace coll::sched {

// groupOfRank[r]: rank r's group (its host).  The ranks of a group next to
// each other, groups in the order of their lowest rank, ranks in rank order
// inside a group.  Empty when that is rank order already (the ring does not
// change).
std::vector<int> ringOrderGrouped(const std::vector<uint64_t>& groupOfRank);

// Groups inside groups: hosts (outer[r]) as above, and inside each host the
// ranks of one NUMA node (inner[r]) next to each other, in the order of
// their lowest rank.  Inside a host the same argument holds for the link
// between two sockets: a ring through interleaved ranks crosses it at
// every hop, a grouped one twice.  outer and inner have one entry per rank.
std::vector<int> ringOrderGrouped(const std::vector<uint64_t>& outer, const std::vector<uint64_t>& inner);

}  // namespace coll::sched
