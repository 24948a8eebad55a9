// ibv_wc_status_str: rdma-core's strings, word for word (a test compares
// them with the installed libibverbs when there is one).
#include <infiniband/verbs.h>

extern "C" {

__attribute__((visibility("default"))) const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const kStrings[] = {
      "success",
      "local length error",
      "local QP operation error",
      "local EE context operation error",
      "local protection error",
      "Work Request Flushed Error",
      "memory management operation error",
      "bad response error",
      "local access error",
      "remote invalid request error",
      "remote access error",
      "remote operation error",
      "transport retry counter exceeded",
      "RNR retry counter exceeded",
      "local RDD violation error",
      "remote invalid RD request",
      "aborted error",
      "invalid EE context number",
      "invalid EE context state",
      "fatal error",
      "response timeout error",
      "general error",
      "TM error",
      "TM software rendezvous",
  };
  const int i = static_cast<int>(status);
  if (i < 0 || i >= static_cast<int>(sizeof(kStrings) / sizeof(kStrings[0]))) return "unknown";
  return kStrings[i];
}

}  // extern "C"
