#include "verbs_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace verbs_emu_test {

const char* const kExportedNames[] = {
    "ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name", "ibv_get_device_guid",
    "ibv_open_device",     "ibv_close_device",     "ibv_query_device",    "ibv_query_port",
    "ibv_query_gid",       "ibv_alloc_pd",         "ibv_dealloc_pd",      "ibv_reg_mr",
    "ibv_reg_dmabuf_mr",   "ibv_dereg_mr",         "ibv_create_cq",       "ibv_destroy_cq",
    "ibv_create_qp",       "ibv_modify_qp",        "ibv_query_qp",        "ibv_destroy_qp",
    "ibv_wc_status_str"};
const int kExportedCount = static_cast<int>(sizeof(kExportedNames) / sizeof(kExportedNames[0]));

bool VerbsApi::load(void* lib) {
  void** slots[] = {reinterpret_cast<void**>(&get_device_list), reinterpret_cast<void**>(&free_device_list),
                    reinterpret_cast<void**>(&get_device_name), reinterpret_cast<void**>(&get_device_guid),
                    reinterpret_cast<void**>(&open_device),     reinterpret_cast<void**>(&close_device),
                    reinterpret_cast<void**>(&query_device),    reinterpret_cast<void**>(&query_port),
                    reinterpret_cast<void**>(&query_gid),       reinterpret_cast<void**>(&alloc_pd),
                    reinterpret_cast<void**>(&dealloc_pd),      reinterpret_cast<void**>(&reg_mr),
                    reinterpret_cast<void**>(&reg_dmabuf_mr),   reinterpret_cast<void**>(&dereg_mr),
                    reinterpret_cast<void**>(&create_cq),       reinterpret_cast<void**>(&destroy_cq),
                    reinterpret_cast<void**>(&create_qp),       reinterpret_cast<void**>(&modify_qp),
                    reinterpret_cast<void**>(&query_qp),        reinterpret_cast<void**>(&destroy_qp),
                    reinterpret_cast<void**>(&wc_status_str)};
  static_assert(sizeof(slots) / sizeof(slots[0]) == sizeof(kExportedNames) / sizeof(kExportedNames[0]));
  for (int i = 0; i < kExportedCount; ++i) {
    *slots[i] = dlsym(lib, kExportedNames[i]);
    if (!*slots[i]) return false;
  }
  return true;
}

const VerbsApi& verbs() {
  static VerbsApi api = [] {
    // A fabric of our own: parallel test runs never meet in the registry.
    const std::string fabric = "test." + std::to_string(getpid());
    setenv("COLL_VERBS_EMU_FABRIC", fabric.c_str(), 1);
    VerbsApi a{};
    void* lib = dlopen(COLL_VERBS_EMU_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib || !a.load(lib)) {
      std::fprintf(stderr, "cannot load %s: %s\n", COLL_VERBS_EMU_LIB, dlerror());
      std::abort();
    }
    return a;
  }();
  return api;
}

int queryPort(ibv_context* ctx, ibv_port_attr* attr) {
  // As verbs.h's ___ibv_query_port does without a verbs_context.
  std::memset(attr, 0, sizeof(*attr));
  return verbs().query_port(ctx, 1, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

}  // namespace verbs_emu_test
