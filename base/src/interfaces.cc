#include "coll/base/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "coll/base/settings.h"

namespace coll::net {
namespace {

bool isLinkLocal6(const sockaddr_in6* a) { return IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr); }

// Interfaces that are never a good default: container and VM bridges.
bool virtualByDefault(const std::string& name) {
  for (const char* p : {"docker", "virbr", "veth", "br-", "lxc", "cni", "flannel"})
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

std::string describe(const std::vector<Interface>& all) {
  if (all.empty()) return "none is up with an address";
  std::string out;
  for (const auto& i : all) {
    if (!out.empty()) out += ", ";
    out += i.name;
    out += " (";
    out += i.address.toString();
    out += ")";
  }
  return out;
}

}  // namespace

IfnameFilter parseIfnameFilter(const std::string& spec) {
  IfnameFilter f;
  size_t pos = 0;
  if (pos < spec.size() && spec[pos] == '^') {
    f.exclude = true;
    ++pos;
  }
  if (pos < spec.size() && spec[pos] == '=') {
    f.exact = true;
    ++pos;
  }
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    if (comma > pos) f.names.push_back(spec.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return f;
}

bool matches(const IfnameFilter& f, const std::string& ifname) {
  bool hit = false;
  for (const auto& n : f.names)
    if (f.exact ? ifname == n : ifname.rfind(n, 0) == 0) hit = true;
  return f.exclude ? !hit : hit;
}

Result<std::vector<Interface>> listInterfaces() {
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) return makeError(collSystemError, "getifaddrs failed: {}", strerror(errno));
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> list(raw, freeifaddrs);
  std::vector<Interface> out;
  for (ifaddrs* i = raw; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (fam == AF_INET6 && isLinkLocal6(reinterpret_cast<const sockaddr_in6*>(i->ifa_addr))) continue;
    Interface itf;
    itf.name = i->ifa_name;
    itf.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    size_t len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    memcpy(&itf.address.storage, i->ifa_addr, len);
    itf.address.len = static_cast<socklen_t>(len);
    out.push_back(itf);
  }
  return out;
}

Result<Interface> chooseInterface(const std::vector<Interface>& all, const std::string& ifnameSpec, int family,
                                  bool allLocal) {
  std::vector<const Interface*> candidates;
  IfnameFilter filter = parseIfnameFilter(ifnameSpec);
  for (const auto& i : all) {
    if (family == 4 && i.address.storage.ss_family != AF_INET) continue;
    if (family == 6 && i.address.storage.ss_family != AF_INET6) continue;
    if (!ifnameSpec.empty()) {
      if (matches(filter, i.name)) candidates.push_back(&i);
    } else if (allLocal ? i.loopback : !i.loopback && !virtualByDefault(i.name)) {
      candidates.push_back(&i);
    }
  }
  if (candidates.empty()) {
    if (!ifnameSpec.empty())
      return makeError(collInvalidUsage, "COLL_SOCKET_IFNAME={} matches no usable interface{}; interfaces: {}",
                       ifnameSpec, family ? fmt::format(" with IPv{}", family) : "", describe(all));
    return makeError(collSystemError,
                     "no usable network interface{} (all are loopback or virtual): set COLL_SOCKET_IFNAME; "
                     "interfaces: {}",
                     family ? fmt::format(" with IPv{}", family) : "", describe(all));
  }
  // IPv4 first (more common on clusters), keeping the system's order otherwise.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Interface* a, const Interface* b) {
    return a->address.storage.ss_family == AF_INET && b->address.storage.ss_family != AF_INET;
  });
  return *candidates.front();
}

Result<Interface> chooseInterfaceFromEnv(bool allLocal) {
  auto family = settings::readChoice("COLL_SOCKET_FAMILY");
  COLL_CHECK(family.status());
  auto all = listInterfaces();
  COLL_CHECK(all.status());
  return chooseInterface(all.value(), settings::readText("COLL_SOCKET_IFNAME").value_or(""),
                         family.value() ? std::stoi(*family.value()) : 0, allLocal);
}

}  // namespace coll::net
