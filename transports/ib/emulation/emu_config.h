// The emulated fabric's shape, from the emulator's own COLL_VERBS_EMU_*
// variables.  They are read here with getenv, not through libcoll's settings
// table: this library stands in for libibverbs, a system library.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace coll::verbs_emu {

constexpr int kMaxNics = 2;
// GID table of every port: 0 = fe80:: link-local from the GUID,
// 1 = RoCE v2 IPv4-mapped ::ffff:127.0.x.y.
constexpr int kGidCount = 2;

struct EmuConfig {
  int nics = 1;               // COLL_VERBS_EMU_NICS: 0..2
  bool infiniband = false;    // COLL_VERBS_EMU_LINK=ib|eth (default eth: RoCE v2)
  int gbps = 400;             // COLL_VERBS_EMU_GBPS: 25, 50, 100, 200, 400
  uint8_t active_width = 0;   // ibv_port_attr encodings of gbps
  uint8_t active_speed = 0;
  uint64_t host_hash = 0;     // COLL_VERBS_EMU_HOST (default: boot id, else hostname)
  std::string fabric;         // COLL_VERBS_EMU_FABRIC: names the /dev/shm registry
};

// One port's addresses; they differ per simulated host and per NIC.
struct PortIdentity {
  uint64_t guid = 0;  // host order
  uint16_t lid = 0;   // InfiniBand only; 0 on Ethernet
  ibv_gid gids[kGidCount] = {};
};

// Reads the variables; false with a message naming the variable on a bad value.
bool readConfig(EmuConfig* cfg, std::string* error);
PortIdentity portIdentity(const EmuConfig& cfg, int nic);

}  // namespace coll::verbs_emu
