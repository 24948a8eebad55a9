// verbs_api.h — libibverbs reached only through one table of function
// pointers, filled by dlopen + dlsym (as NCCL's ibvwrap), never by linking
// -libverbs.  libcoll then builds and runs where rdma-core is absent, and
// COLL_IBVERBS_LIB can name another provider library with the same symbols
// (the emulated verbs of transports/ib/emulation, on machines without RDMA).
//
// ibv_post_send, ibv_post_recv and ibv_poll_cq are not in the table: verbs.h
// defines them inline, calling through the context's ops (ctx->ops), which
// the provider that opened the device filled.  So the data path calls them
// as written, and the same code serves the real library and the emulation.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "coll/base/status.h"

namespace coll::ib {

inline constexpr const char* kDefaultVerbsLib = "libibverbs.so.1";

// Members are named after the verbs without the ibv_ prefix: verbs.h makes
// ibv_query_port and ibv_reg_mr function-like macros, which would rewrite
// a call through a member of the same name.
struct VerbsApi {
  std::string path;  // the library as dlopened
  ibv_device** (*getDeviceList)(int* numDevices) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* device) = nullptr;
  __be64 (*getDeviceGuid)(ibv_device* device) = nullptr;
  ibv_context* (*openDevice)(ibv_device* device) = nullptr;
  int (*closeDevice)(ibv_context* context) = nullptr;
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr) = nullptr;
  // The exported ibv_query_port; call queryPort() below, which prepares
  // the attributes as verbs.h's ___ibv_query_port does.
  int (*queryPortExported)(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) = nullptr;
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*allocPd)(ibv_context* context) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  // The exported ibv_reg_mr (verbs.h's macro of that name picks between it
  // and ibv_reg_mr_iova2 by the access flags; the plain one suffices).
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  // nullptr where the library predates dma-buf (rdma-core < 34): device
  // memory is then staged through the host.
  ibv_mr* (*regDmabufMr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) = nullptr;
  int (*deregMr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*createCq)(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel,
                      int compVector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*queryQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
  const char* (*wcStatusStr)(ibv_wc_status status) = nullptr;

  // ibv_query_port through the exported symbol: zeroes the whole
  // ibv_port_attr first (the symbol's compat struct may be filled only in
  // part by an old provider), as verbs.h does on that path.
  int queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const;
};

// The process's table for the library at path ("" = libibverbs.so.1):
// dlopen(RTLD_NOW | RTLD_LOCAL) and dlsym of every member, once per path
// and thread-safe; a loaded library stays loaded for the process.  A
// failure (file missing, not a library, a required symbol absent) is not
// remembered, and its message names the library and the symbol.
Result<const VerbsApi*> verbsApi(const std::string& path);

}  // namespace coll::ib
