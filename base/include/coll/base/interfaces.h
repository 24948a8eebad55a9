// interfaces.h — which network interface a rank's sockets use.
//
// COLL_SOCKET_IFNAME follows NCCL_SOCKET_IFNAME: a comma-separated list of
// name prefixes ("eth,ib"), "=" before the list for exact names ("=eth0"),
// "^" before it to exclude ("^docker,lo").  Without it the first interface
// that is up and not loopback/docker/virtual-bridge is used, or loopback
// when every rank is on this host.  COLL_SOCKET_FAMILY=4|6 restricts the
// address family (default: IPv4 first, then IPv6).
#pragma once

#include <string>
#include <vector>

#include "coll/base/socket.h"
#include "coll/base/status.h"

namespace coll::net {

struct Interface {
  std::string name;
  Address address;  // port 0
  bool loopback = false;
};

struct IfnameFilter {
  std::vector<std::string> names;
  bool exclude = false;
  bool exact = false;
};

// Parses a COLL_SOCKET_IFNAME value ("" means no filter).
IfnameFilter parseIfnameFilter(const std::string& spec);
bool matches(const IfnameFilter& f, const std::string& ifname);

// Every interface that is up and has an IPv4/IPv6 address (IPv6 link-local
// addresses are skipped: they need a scope on the peer's side).
Result<std::vector<Interface>> listInterfaces();

// The interface this rank uses, from COLL_SOCKET_IFNAME / COLL_SOCKET_FAMILY.
// `allLocal`: every rank is on this host (loopback is then the default).
// A filter that matches nothing is an error listing what exists.
Result<Interface> chooseInterface(const std::vector<Interface>& all, const std::string& ifnameSpec, int family,
                                  bool allLocal);
Result<Interface> chooseInterfaceFromEnv(bool allLocal);

}  // namespace coll::net
