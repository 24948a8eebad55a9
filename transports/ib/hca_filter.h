// hca_filter.h — COLL_IB_HCA: which RDMA devices and ports to use, in
// NCCL_IB_HCA's grammar:
//   mlx5              every port of devices whose name starts with "mlx5"
//   mlx5_0:1,mlx5_1:1 port 1 of mlx5_0* and of mlx5_1*
//   =mlx5_0:1         exact names: port 1 of mlx5_0 only (not mlx5_01)
//   ^mlx5_2           every device but mlx5_2* (^= : exact names excluded)
// Entries are comma-separated `name[:port]`; a leading `^` excludes what
// follows, then a leading `=` makes the names exact instead of prefixes.
// Unset or empty: every port.  Pure functions, no devices needed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "coll/base/status.h"

namespace coll::ib {

struct HcaEntry {
  std::string name;
  int port = -1;  // -1: every port
};

struct HcaFilter {
  bool exclude = false;  // ^: the entries are those NOT to use
  bool exact = false;    // =: names match whole, not as prefixes
  std::vector<HcaEntry> entries;  // none: every port
};

struct PortRef {
  std::string device;
  int port = 0;
  bool operator==(const PortRef&) const = default;
};

// Errors (collInvalidArgument) name COLL_IB_HCA and the bad entry: an empty
// name, a port that is not a number in 1..255, white space in a name.
Result<HcaFilter> parseHcaFilter(std::string_view text);

// Whether one entry takes the port.
bool hcaEntryMatches(const HcaEntry& e, bool exact, const PortRef& p);

// The ports of `available` the filter selects, in their order.
std::vector<PortRef> selectPorts(const HcaFilter& f, const std::vector<PortRef>& available);

}  // namespace coll::ib
