#include "env.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

namespace collrun {
namespace {

constexpr std::string_view kLauncherVars[] = {
    "COLL_RANK", "COLL_NRANKS", "COLL_LOCAL_RANK",
    "COLL_LOCAL_NRANKS", "COLL_ROOT", "COLL_SECRET"};

std::string_view name_of(std::string_view entry) {
  size_t eq = entry.find('=');
  return eq == std::string_view::npos ? entry : entry.substr(0, eq);
}

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

bool is_launcher_variable(std::string_view name) {
  for (std::string_view v : kLauncherVars)
    if (v == name) return true;
  return false;
}

std::string make_secret() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t r = getrandom(bytes + got, sizeof bytes - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw sys_error("getrandom");
    }
    got += static_cast<size_t>(r);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof bytes);
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw sys_error("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    auto err = sys_error("cannot find a free port on 127.0.0.1");
    ::close(fd);
    throw err;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string> common_env(
    const char* const* base,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> out;
  auto overridden = [&](std::string_view name) {
    if (is_launcher_variable(name)) return true;
    for (const auto& kv : extra)
      if (kv.first == name) return true;
    return false;
  };
  for (const char* const* e = base; e != nullptr && *e != nullptr; ++e)
    if (!overridden(name_of(*e))) out.emplace_back(*e);
  // A later -x of the same name wins.
  for (size_t i = 0; i < extra.size(); ++i) {
    bool later = false;
    for (size_t j = i + 1; j < extra.size(); ++j)
      if (extra[j].first == extra[i].first) later = true;
    if (!later) out.push_back(extra[i].first + "=" + extra[i].second);
  }
  return out;
}

std::vector<std::string> rank_env(const std::vector<std::string>& common,
                                  int rank, int nranks, const std::string& root,
                                  const std::string& secret) {
  std::vector<std::string> out = common;
  out.push_back("COLL_RANK=" + std::to_string(rank));
  out.push_back("COLL_NRANKS=" + std::to_string(nranks));
  out.push_back("COLL_LOCAL_RANK=" + std::to_string(rank));
  out.push_back("COLL_LOCAL_NRANKS=" + std::to_string(nranks));
  out.push_back("COLL_ROOT=" + root);
  out.push_back("COLL_SECRET=" + secret);
  return out;
}

}  // namespace collrun
