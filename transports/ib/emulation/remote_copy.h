// Moving bytes into another process's memory with process_vm_writev (cross
// memory attach: same user, no ptrace restriction in the way).  The kernel
// checks every page of the target range, so a range the target has not
// mapped fails with EFAULT instead of corrupting anything.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <vector>

namespace coll::verbs_emu {

// Writes the gather list (len bytes in all) to [remote_addr, remote_addr +
// len) of pid, in 64 KiB pieces from the highest address down: an RDMA
// write promises no order within itself, and a transport that polls its
// buffer's last byte must fail here too.  0, or an errno (ESRCH: the
// process is gone; EFAULT: the range is not mapped there).
int writeRemote(pid_t pid, const std::vector<iovec>& local, uint64_t remote_addr, size_t len);

// Writes the gather list into the scatter list remote (a SEND into a
// receive WR's buffers); the scatter list holds at least as many bytes.
int scatterRemote(pid_t pid, const std::vector<iovec>& local, const std::vector<iovec>& remote);

}  // namespace coll::verbs_emu
