// export_anchor.cc — libcoll.so is built from the coll_core archive (linked
// whole); a shared library target still needs one source of its own.
#include "coll.h"
