#include "ib/verbs_api.h"

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace coll::ib {
namespace {

// Resolves one member; a required symbol that is missing becomes the error.
class Binder {
 public:
  Binder(void* handle, const std::string& path) : handle_(handle), path_(path) {}

  template <class Fn>
  void bind(Fn*& slot, const char* symbol, bool required = true) {
    if (!status_.isOk()) return;
    dlerror();  // a symbol's value may be NULL: dlerror tells a miss apart
    void* p = dlsym(handle_, symbol);
    const char* err = dlerror();
    if (err != nullptr || p == nullptr) {
      if (required)
        status_ = makeError(collSystemError,
                            "verbs library '{}' lacks {} (COLL_IBVERBS_LIB must name a libibverbs, or a provider "
                            "library exporting all of its symbols): {}",
                            path_, symbol, err ? err : "NULL");
      return;
    }
    slot = reinterpret_cast<Fn*>(p);
  }
  const Status& status() const { return status_; }

 private:
  void* handle_;
  const std::string& path_;
  Status status_;
};

Result<std::unique_ptr<VerbsApi>> load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return makeError(collSystemError, "cannot load verbs library '{}'{}: {}", path,
                     path == kDefaultVerbsLib ? " (rdma-core's libibverbs1 package)" : " (COLL_IBVERBS_LIB)",
                     err ? err : "unknown dlopen error");
  }
  auto api = std::make_unique<VerbsApi>();
  api->path = path;
  Binder b(handle, path);
  b.bind(api->getDeviceList, "ibv_get_device_list");
  b.bind(api->freeDeviceList, "ibv_free_device_list");
  b.bind(api->getDeviceName, "ibv_get_device_name");
  b.bind(api->getDeviceGuid, "ibv_get_device_guid");
  b.bind(api->openDevice, "ibv_open_device");
  b.bind(api->closeDevice, "ibv_close_device");
  b.bind(api->queryDevice, "ibv_query_device");
  b.bind(api->queryPortExported, "ibv_query_port");
  b.bind(api->queryGid, "ibv_query_gid");
  b.bind(api->allocPd, "ibv_alloc_pd");
  b.bind(api->deallocPd, "ibv_dealloc_pd");
  b.bind(api->regMr, "ibv_reg_mr");
  b.bind(api->regDmabufMr, "ibv_reg_dmabuf_mr", /*required=*/false);
  b.bind(api->deregMr, "ibv_dereg_mr");
  b.bind(api->createCq, "ibv_create_cq");
  b.bind(api->destroyCq, "ibv_destroy_cq");
  b.bind(api->createQp, "ibv_create_qp");
  b.bind(api->modifyQp, "ibv_modify_qp");
  b.bind(api->queryQp, "ibv_query_qp");
  b.bind(api->destroyQp, "ibv_destroy_qp");
  b.bind(api->wcStatusStr, "ibv_wc_status_str");
  if (!b.status().isOk()) {
    dlclose(handle);  // nothing of it is in use yet
    return b.status();
  }
  return api;
}

}  // namespace

int VerbsApi::queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const {
  std::memset(attr, 0, sizeof(*attr));
  return queryPortExported(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

Result<const VerbsApi*> verbsApi(const std::string& path) {
  static std::mutex mu;
  // Never freed: the providers' contexts and the transport's objects point
  // into the library for the rest of the process.
  static auto* loaded = new std::map<std::string, std::unique_ptr<VerbsApi>>();
  const std::string file = path.empty() ? kDefaultVerbsLib : path;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded->find(file); it != loaded->end()) return static_cast<const VerbsApi*>(it->second.get());
  auto api = load(file);
  COLL_CHECK(api.status());
  const VerbsApi* p = api.value().get();
  loaded->emplace(file, api.take());
  return p;
}

}  // namespace coll::ib
