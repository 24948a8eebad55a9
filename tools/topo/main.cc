// colltopo: prints the host as libcoll sees it (libcoll/src/topo), or
// writes it as an hwloc XML file another machine can load through
// COLL_TOPO_FILE.
//
//   colltopo              this machine (or COLL_TOPO_FILE's), with its GPUs
//                          and network ports, and this process's CPUs; then
//                          the RDMA devices and ports libibverbs lists
//                          (COLL_IBVERBS_LIB's library, where built with
//                          verbs.h)
//   colltopo --sysfs      sysfs's view alone (what a build without hwloc
//                          sees)
//   colltopo --xml FILE   this machine as hwloc XML, port rates included
#include <cstdio>
#include <cstring>
#include <string>

#include "topo/detect.h"
#if COLL_TOPO_HAVE_IB
#include "ib_section.h"
#endif

namespace {

int usage(FILE* to) {
  std::fputs(
      "usage: colltopo [--sysfs | --xml FILE]\n"
      "  (none)       print this machine's topology (COLL_TOPO_FILE: a synthetic:<desc> or an XML file instead)\n"
      "  --sysfs      print what sysfs alone says\n"
      "  --xml FILE   write this machine as hwloc XML, with the network ports' rates, for COLL_TOPO_FILE\n",
      to);
  return to == stdout ? 0 : 2;
}

int fail(const coll::Status& s) {
  std::fprintf(stderr, "colltopo: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace coll::topo;
  const DetectOptions withDevices{true};
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) return usage(stdout);
  if (argc == 3 && std::strcmp(argv[1], "--xml") == 0) {
    if (auto s = exportXml(argv[2]); !s.isOk()) return fail(s);
    std::printf("wrote %s (load it with COLL_TOPO_FILE=%s)\n", argv[2], argv[2]);
    return 0;
  }
  coll::Result<HostTopology> t = coll::Status();
  if (argc == 2 && std::strcmp(argv[1], "--sysfs") == 0) {
    t = readSysfs("/sys", withDevices);
  } else if (argc == 1) {
    t = detectHost(withDevices);
  } else {
    return usage(stderr);
  }
  if (!t.isOk()) return fail(t.status());
  std::fputs(describe(t.value()).c_str(), stdout);
  const std::vector<int> mine = boundCpus();
  const int node = numaOfCpus(t.value(), mine);
  std::printf("this process: CPUs %s, %s\n", formatCpuList(mine).c_str(),
              node >= 0 ? ("NUMA node " + std::to_string(node)).c_str() : "on no single NUMA node");
#if COLL_TOPO_HAVE_IB
  std::fputs(describeIbHost(&t.value()).c_str(), stdout);
#else
  std::puts("RDMA devices: not built (no infiniband/verbs.h at configure time)");
#endif
  return 0;
}
