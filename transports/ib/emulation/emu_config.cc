#include "emu_config.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace coll::verbs_emu {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Processes on one machine are one host unless COLL_VERBS_EMU_HOST says
// otherwise; the boot id is the same for all of them and differs per machine.
std::string defaultHostId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (in && std::getline(in, id) && !id.empty()) return id;
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

bool readConfig(EmuConfig* cfg, std::string* error) {
  *cfg = EmuConfig{};
  const std::string nics = env("COLL_VERBS_EMU_NICS");
  if (!nics.empty()) {
    if (nics.size() != 1 || nics[0] < '0' || nics[0] > '0' + kMaxNics) {
      *error = "COLL_VERBS_EMU_NICS=" + nics + ": expected 0, 1 or 2";
      return false;
    }
    cfg->nics = nics[0] - '0';
  }
  const std::string link = env("COLL_VERBS_EMU_LINK");
  if (link == "ib") {
    cfg->infiniband = true;
  } else if (!link.empty() && link != "eth") {
    *error = "COLL_VERBS_EMU_LINK=" + link + ": expected ib or eth";
    return false;
  }
  const std::string gbps = env("COLL_VERBS_EMU_GBPS");
  if (!gbps.empty()) cfg->gbps = std::atoi(gbps.c_str());
  // ibv_port_attr: active_width 1 = 1x, 2 = 4x; active_speed 32 = EDR
  // (25 Gb/s a lane), 64 = HDR (50), 128 = NDR (100).
  switch (cfg->gbps) {
    case 25: cfg->active_width = 1; cfg->active_speed = 32; break;
    case 50: cfg->active_width = 1; cfg->active_speed = 64; break;
    case 100: cfg->active_width = 2; cfg->active_speed = 32; break;
    case 200: cfg->active_width = 2; cfg->active_speed = 64; break;
    case 400: cfg->active_width = 2; cfg->active_speed = 128; break;
    default:
      *error = "COLL_VERBS_EMU_GBPS=" + gbps + ": expected 25, 50, 100, 200 or 400";
      return false;
  }
  std::string host = env("COLL_VERBS_EMU_HOST");
  cfg->host_hash = fnv1a(host.empty() ? defaultHostId() : host);
  cfg->fabric = env("COLL_VERBS_EMU_FABRIC");
  if (cfg->fabric.empty()) cfg->fabric = "default";
  for (char c : cfg->fabric) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      *error = "COLL_VERBS_EMU_FABRIC=" + cfg->fabric + ": letters, digits, '.', '_', '-' only";
      return false;
    }
  }
  return true;
}

PortIdentity portIdentity(const EmuConfig& cfg, int nic) {
  PortIdentity id;
  const uint64_t h = cfg.host_hash;
  // EUI-64 style GUID: the host's hash with the NIC index in the low byte.
  id.guid = (h & ~0xffull) | static_cast<uint64_t>(nic);
  if (cfg.infiniband) id.lid = static_cast<uint16_t>(1 + ((h >> 16) * 2 + nic) % 0xbffe);
  uint8_t* g0 = id.gids[0].raw;
  g0[0] = 0xfe;
  g0[1] = 0x80;
  for (int i = 0; i < 8; ++i) g0[8 + i] = static_cast<uint8_t>(id.guid >> (56 - 8 * i));
  uint8_t* g1 = id.gids[1].raw;
  g1[10] = 0xff;
  g1[11] = 0xff;
  g1[12] = 127;
  g1[13] = 0;
  g1[14] = static_cast<uint8_t>(h >> 8);
  g1[15] = static_cast<uint8_t>((h & 0x7e) + nic + 1);
  return id;
}

}  // namespace coll::verbs_emu
