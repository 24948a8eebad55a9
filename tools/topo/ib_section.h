// ib_section.h — colltopo's RDMA section, in the spirit of ibv_devinfo:
// each device with its GUID, PCI address, NUMA node and the GPUs on that
// node, then each port's state, link layer, rate, MTU, LID and the GID the
// transport would pick (COLL_IB_GID_INDEX's automatic choice).
#pragma once

#include <string>
#include <vector>

#include "ib/ib_devices.h"
#include "topo/host_topology.h"

namespace coll::topo {

// The section for devices read from the library at libPath.  host (may be
// null) supplies the NUMA node where sysfs has none, and the GPUs near
// each device.
std::string describeIbDevices(const std::vector<ib::IbDevice>& devices, const std::string& libPath,
                              const HostTopology* host);

// The section for this machine: the library COLL_IBVERBS_LIB names (else
// libibverbs.so.1), its devices and /sys; says why when the library cannot
// be loaded or the devices listed.
std::string describeIbHost(const HostTopology* host);

}  // namespace coll::topo
