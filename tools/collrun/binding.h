// Binding ranks to cores (collrun --bind core, the default), like mpirun's
// --bind-to core: a rank that stays on one core keeps its caches and is not
// migrated by the load balancer in the middle of a wait.  On 2 cores, 4
// unbound ranks of an 8 B all-reduce take 3.4-4.1 us per call depending on
// where the scheduler happens to put them; bound in blocks, 2.6 us
// (docs/PERFORMANCE.md).
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace collrun {

// The core rank `rank` of `nranks` is bound to, of `ncores`: rank r on core
// r while ranks fit, else blocks of consecutive ranks per core (rank r on
// core r*ncores/nranks), so ring neighbours share a core and every core
// gets the same number of ranks, give or take one.  A pure function.
int core_of_rank(int rank, int nranks, int ncores);

// --bind share: the cores [first, first + count) of rank `rank`.  With
// fewer ranks than cores, rank r gets [r ncores / nranks, (r + 1) ncores /
// nranks): consecutive runs that cover every core once, floor or ceil of
// ncores / nranks each; else core_of_rank's one core.  A pure function.
struct CoreRange {
  int first = 0;
  int count = 1;
};
CoreRange cores_of_rank(int rank, int nranks, int ncores);

// The cores collrun may use: the CPUs of its own affinity mask grouped by
// core (hyperthreads of one core together, from sysfs topology; a CPU whose
// topology cannot be read is a core of its own), ordered by first CPU.
std::vector<cpu_set_t> allowed_cores();

// "core 1 (CPU 2,3)" / "cores 0-3 (CPU 0,1,2,3)"-style text for messages.
std::string describe_core(int index, const cpu_set_t& cpus);
std::string describe_cores(CoreRange range, const cpu_set_t& cpus);

}  // namespace collrun
