// ib_devices.h — the RDMA devices and ports of this host, read through the
// verbs table (verbs_api.h) and sysfs: what the topology, colltopo and the
// port selection (hca_filter.h) work from.
//
// sysfs fills in what verbs do not say: the GID types of RoCE ports
// (class/infiniband/<dev>/ports/<p>/gid_attrs/types/<i>) and each device's
// PCI address and NUMA node (class/infiniband/<dev>/device).  Every reader
// takes the sysfs root ("/sys"), so tests give a tree of their own.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/base/status.h"
#include "ib/verbs_api.h"

namespace coll::ib {

enum class LinkLayer { Unspecified, InfiniBand, Ethernet };
// The kernel's names: "IB/RoCE v1" (an IB port's GIDs, and RoCE v1) and
// "RoCE v2" (UDP/IP encapsulated, routable).
enum class GidType { Unknown, IbOrRoceV1, RoceV2 };

struct GidEntry {
  int index = 0;
  std::array<uint8_t, 16> gid{};
  GidType type = GidType::Unknown;
  bool ipv4Mapped = false;  // ::ffff:a.b.c.d (a RoCE GID of an IPv4 address)
};

struct IbPort {
  int port = 0;  // from 1
  bool active = false;
  int state = 0;  // ibv_port_state
  LinkLayer link = LinkLayer::Unspecified;
  int lanes = 0;           // from active_width; 0: not known
  double laneGbps = 0;     // from active_speed; 0: not known
  double rateGbps = 0;     // lanes x laneGbps
  const char* speedName = "";  // "EDR", "HDR", ...
  int mtuBytes = 0;        // active MTU
  uint16_t lid = 0;        // InfiniBand only
  std::vector<GidEntry> gids;  // the non-zero entries, by index
  int autoGidIndex = 0;    // autoGidIndex(link, gids)
};

struct IbDevice {
  std::string name;          // "mlx5_0"
  uint64_t guid = 0;         // node GUID, host byte order
  std::string pciAddress;    // "0000:3b:00.0"; empty when not known
  int numa = -1;             // -1: not known
  std::vector<IbPort> ports;
  std::string error;         // why the device could not be opened or queried (then no ports)
};

// ---- pure helpers ----
// active_width (1, 2, 4, 8, 16) -> lanes (1x, 4x, 8x, 12x, 2x); 0 if unknown.
int widthLanes(uint32_t activeWidth);
// active_speed (1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10 10, 16 FDR 14,
// 32 EDR 25, 64 HDR 50, 128 NDR 100, 256 XDR 200: Gb/s per lane, the
// nominal rates ibv_devinfo and sysfs print); 0 if unknown.
double speedLaneGbps(uint32_t activeSpeed);
const char* speedName(uint32_t activeSpeed);
// IBV_MTU_256..IBV_MTU_4096 -> bytes; 0 if unknown.
int mtuBytes(int mtu);
// The text of gid_attrs/types/<i> -> its type.
GidType parseGidType(const std::string& text);
bool isIpv4Mapped(const std::array<uint8_t, 16>& gid);
// "fe80:0000:...:0001" as ibv_devinfo -v writes a GID.
std::string formatGid(const std::array<uint8_t, 16>& gid);
// "0c42:a103:0012:3456" as ibv_devices writes a node GUID.
std::string formatGuid(uint64_t guid);
const char* linkLayerName(LinkLayer l);
const char* gidTypeName(GidType t);
// COLL_IB_GID_INDEX's automatic choice: on Ethernet (RoCE), the RoCE v2
// entry of an IPv4 address (routable, what the hosts' IP network reaches),
// else the first RoCE v2 entry, else the first entry; on InfiniBand 0.
int autoGidIndex(LinkLayer link, const std::vector<GidEntry>& gids);

// ---- sysfs ----
// Fills dev.pciAddress, dev.numa and, for each port's GIDs, their type
// (InfiniBand ports' GIDs are IbOrRoceV1 without asking), then each port's
// autoGidIndex.  What sysfs lacks stays unknown.
void addSysfsFacts(const std::string& sysRoot, IbDevice& dev);

// ---- verbs ----
// Every device the library lists, each with every port (active or not).
// A device that cannot be opened or queried is listed with its error.  A
// kernel without RDMA support (no uverbs: ibv_get_device_list fails with
// ENOSYS) has no devices; any other failure to list them is an error.
Result<std::vector<IbDevice>> listIbDevices(const VerbsApi& api, const std::string& sysRoot = "/sys");

}  // namespace coll::ib
