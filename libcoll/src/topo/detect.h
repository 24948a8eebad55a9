// detect.h — reading a HostTopology (host_topology.h) from the machine, an
// hwloc XML file or an hwloc synthetic description.
//
// COLL_TOPO_FILE picks the source, so a test or a laptop can stand in for
// a machine it is not:
//   unset                  this machine: hwloc where libcoll was built with
//                          it, else sysfs;
//   synthetic:<desc>       the machine hwloc builds from <desc>, e.g.
//                          "synthetic:pack:2 numa:1 core:4 pu:2" (hwloc's
//                          synthetic grammar: CPUs and NUMA nodes, no
//                          devices), CPUs numbered 0, 1, ... in order;
//   <path>                 an hwloc XML file (tools' colltopo --xml writes
//                          one, with the network ports' rates; lstopo's
//                          files work too, without them).
// The rank's own CPUs always come from the OS (sched_getaffinity), so a
// process bound with taskset sits on the loaded machine's CPUs of those
// numbers.
#pragma once

#include <string>
#include <vector>

#include "topo/host_topology.h"
#include "coll/base/status.h"

namespace coll::topo {

struct DetectOptions {
  // PCI devices (GPUs, network adapters) too: PCI discovery, slower than
  // CPUs and NUMA nodes alone, which is all a communicator needs.
  bool devices = false;
};

// From COLL_TOPO_FILE's source (above).  Errors: a file that cannot be
// read or parsed, a synthetic description hwloc rejects, a file or
// description where libcoll was built without hwloc.
Result<HostTopology> detectHost(const DetectOptions& opts);

// The same, memoized per COLL_TOPO_FILE value and options: communicators
// created one after another load the machine once.
Result<HostTopology> detectHostCached(const DetectOptions& opts);

// hwloc's view: spec "" is this machine, "synthetic:<desc>" or a path as
// above.  collInternalError when libcoll was built without hwloc.
Result<HostTopology> readHwloc(const std::string& spec, const DetectOptions& opts);
bool builtWithHwloc();

// sysfs's view, under root (normally "/sys"; tests give a tree of their
// own): NUMA nodes (devices/system/node), packages and cores
// (devices/system/cpu), and with opts.devices the network ports
// (class/net, class/infiniband) and NVIDIA GPUs (bus/pci/devices).
Result<HostTopology> readSysfs(const std::string& root, const DetectOptions& opts);

// A network port's rate from sysfs, -1 when unknown: class/net/<name>/speed
// (Mb/s; -1 or unreadable when the link is down or virtual), or for an
// InfiniBand device the first active port's ports/<p>/rate ("100 Gb/sec
// (4X EDR)").
int64_t portMbps(const std::string& root, DeviceKind kind, const std::string& osName);

// This machine with its devices as an hwloc XML file, each network port's
// sysfs rate added as the info "CollLinkMbps" (readHwloc reads it back).
Status exportXml(const std::string& path);

// The CPUs this thread may run on (sched_getaffinity), ascending.
std::vector<int> boundCpus();

}  // namespace coll::topo
