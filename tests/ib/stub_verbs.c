/* stub_verbs.c — a stand-in for libibverbs with the loader's symbols but
 * not their full types (verbs.h is not included: its macros would clash
 * with these definitions).  Lists no devices; everything else fails.
 * STUB_WITHOUT_CREATE_QP leaves ibv_create_qp out, so the loader's error
 * can be checked to name it. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

static void* no_devices[1];

void** ibv_get_device_list(int* n) {
  if (n) *n = 0;
  return no_devices;
}
void ibv_free_device_list(void** list) { (void)list; }
const char* ibv_get_device_name(void* d) { (void)d; return NULL; }
uint64_t ibv_get_device_guid(void* d) { (void)d; return 0; }

#define STUB_FAILS_PTR(name) void* name(void) { errno = ENOSYS; return NULL; }
#define STUB_FAILS_INT(name) int name(void) { return ENOSYS; }
STUB_FAILS_PTR(ibv_open_device)
STUB_FAILS_INT(ibv_close_device)
STUB_FAILS_INT(ibv_query_device)
STUB_FAILS_INT(ibv_query_port)
STUB_FAILS_INT(ibv_query_gid)
STUB_FAILS_PTR(ibv_alloc_pd)
STUB_FAILS_INT(ibv_dealloc_pd)
STUB_FAILS_PTR(ibv_reg_mr)
STUB_FAILS_INT(ibv_dereg_mr)
STUB_FAILS_PTR(ibv_create_cq)
STUB_FAILS_INT(ibv_destroy_cq)
#ifndef STUB_WITHOUT_CREATE_QP
STUB_FAILS_PTR(ibv_create_qp)
#endif
STUB_FAILS_INT(ibv_modify_qp)
STUB_FAILS_INT(ibv_query_qp)
STUB_FAILS_INT(ibv_destroy_qp)
const char* ibv_wc_status_str(int status) { (void)status; return "stub"; }
