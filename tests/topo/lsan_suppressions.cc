// LeakSanitizer (the ASan build) reports memory that hwloc's PCI discovery
// keeps: its plugin (hwloc_pci.so, on libpciaccess) allocates during
// hwloc_topology_load and is unloaded before the leak check, so the report
// names no module.  Only loads with devices do PCI discovery (colltopo and
// these tests; communicators do not).  Leaks whose stack passes through
// hwloc_topology_load are hwloc's, not ours: ours would show our frames
// without it.  The plugin has no frame pointers, so the stacks are taken
// with the slow unwinder, or they would end inside it.
extern "C" const char* __lsan_default_suppressions() { return "leak:hwloc_topology_load\n"; }
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }
