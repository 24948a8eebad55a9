// Built without hwloc (detect.h): files and synthetic descriptions need it;
// this machine is read from sysfs instead.
#include "topo/detect.h"

namespace coll::topo {

bool builtWithHwloc() { return false; }

Result<HostTopology> readHwloc(const std::string& spec, const DetectOptions&) {
  return makeError(collInvalidUsage, "'{}' needs hwloc, and libcoll was built without it (apt-get install libhwloc-dev)",
                   spec.empty() ? "this machine" : spec);
}

Status exportXml(const std::string& path) {
  return makeError(collInvalidUsage, "writing {} needs hwloc, and libcoll was built without it (apt-get install libhwloc-dev)",
                   path);
}

}  // namespace coll::topo
