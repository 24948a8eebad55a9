#!/bin/sh
# fault_on_rank1.sh FAULT PROGRAM [ARGS...]: runs PROGRAM with
# COLL_IB_FAULT=FAULT on rank 1 only (COLL_RANK), as collrun starts it.
if [ "$COLL_RANK" = 1 ]; then
  export COLL_IB_FAULT="$1"
fi
shift
exec "$@"
