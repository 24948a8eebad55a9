#include "tuner/port_cost.h"

#include <fmt/format.h>

namespace coll::tune {

PortRate slowestPort(const std::vector<int64_t>& mbpsOfRank) {
  PortRate slowest;
  for (size_t r = 0; r < mbpsOfRank.size(); ++r) {
    const int64_t m = mbpsOfRank[r];
    if (m > 0 && (slowest.rank < 0 || m < slowest.mbps)) slowest = PortRate{static_cast<int>(r), m};
  }
  return slowest;
}

double portBeta(int64_t mbps) {
  constexpr double kPayloadShare = 1448.0 / 1538.0;
  return 1.0 / (static_cast<double>(mbps) * 1e6 / 8.0 * kPayloadShare);
}

double betaWithPort(double statedBeta, const PortRate& port, std::string* note) {
  if (port.rank < 0) return statedBeta;
  const double b = portBeta(port.mbps);
  if (b <= statedBeta) return statedBeta;
  if (note != nullptr)
    *note = fmt::format("beta from the slowest network port (rank {}'s, {} Mb/s: {:.3g} GB/s of TCP payload)", port.rank,
                        port.mbps, 1e-9 / b);
  return b;
}

}  // namespace coll::tune
