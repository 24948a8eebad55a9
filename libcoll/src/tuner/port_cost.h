// port_cost.h — the network port's rate in the cost model.
//
// Between hosts the socket transport states an assumed 10 GbE link
// (transports/socket).  Each rank reads the rate of the port its sockets
// use (sysfs, topo/detect.h portMbps) and the ranks agree on the slowest:
// every rank must price calls alike, and a ring is as fast as its slowest
// link.  A port slower than the assumption (1, 2.5, 5 GbE) sets beta; a
// faster one does not, since TCP through the kernel does not reach 25-100
// Gb/s on a few streams: measure it (perf/calibrate, COLL_COST_FILE).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll::tune {

struct PortRate {
  int rank = -1;       // whose port; -1: no rank's rate is known
  int64_t mbps = -1;
};

// The slowest port among the ranks' (mbpsOfRank[r] <= 0: not known,
// skipped); the lowest rank among equals.
PortRate slowestPort(const std::vector<int64_t>& mbpsOfRank);

// Seconds per byte of TCP payload through a port of mbps Mb/s (> 0): a
// 1500-byte frame carries 1448 bytes of payload in 1538 on the wire (94%).
double portBeta(int64_t mbps);

// The beta to state for a link whose transport states statedBeta, given
// the slowest port: the port's where it is slower, else statedBeta.  note
// says which and why ("" when the port changed nothing or none is known).
double betaWithPort(double statedBeta, const PortRate& port, std::string* note);

}  // namespace coll::tune
