// trace_try.h — TRACE_TRY(expr): return expr's Status if it failed.  The
// parser's errors are for the user ("file:line: what"), so they travel up
// without COLL_CHECK's file:line breadcrumbs of our own sources.
#pragma once

#include "coll/base/status.h"

#define TRACE_TRY(expr)                              \
  do {                                               \
    ::coll::Status trace_status_ = (expr);           \
    if (!trace_status_.isOk()) return trace_status_; \
  } while (0)
