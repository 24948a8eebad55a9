// The emulator's verbs as libcoll's loader reaches them: dlopen of the
// library, dlsym of each exported symbol, and verbs.h's inline
// ibv_post_send / ibv_post_recv / ibv_poll_cq through ctx->ops.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbs_emu_test {

struct VerbsApi {
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
  const char* (*get_device_name)(ibv_device*);
  __be64 (*get_device_guid)(ibv_device*);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*query_device)(ibv_context*, ibv_device_attr*);
  int (*query_port)(ibv_context*, uint8_t, _compat_ibv_port_attr*);  // the exported form
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd*, uint64_t, size_t, uint64_t, int, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*query_qp)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);
  int (*destroy_qp)(ibv_qp*);
  const char* (*wc_status_str)(ibv_wc_status);

  // Fills every pointer from lib (a dlopen handle); false if one is missing.
  bool load(void* lib);
};

// The emulator, loaded once per process (with a fabric of this test run's own).
const VerbsApi& verbs();
// The names load() looks up, for the export test.
extern const char* const kExportedNames[];
extern const int kExportedCount;

int queryPort(ibv_context* ctx, ibv_port_attr* attr);

}  // namespace verbs_emu_test
