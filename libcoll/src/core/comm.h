// comm.h — the communicator behind the opaque collComm_t.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "coll.h"
#include "coll/transport.h"
#include "record/flight_recorder.h"
#include "core/plan_cache.h"
#include "core/redop_table.h"
#include "schedule/staged_pieces.h"
#include "executor/host_executor.h"
#include "tuner/port_cost.h"
#include "tuner/tuner.h"

namespace coll::device {
class DeviceComm;   // device/device_comm.h (CUDA builds)
class LocalClique;  // device/local_clique.h (CUDA builds)
}
namespace coll::core {
struct StagedState;  // device/entry/device_staged.cc (CUDA builds)
}

struct collComm {
  static constexpr uint64_t kMagic = 0x636f6c6c636f6d6dull;  // "collcomm"
  uint64_t magic = kMagic;

  int rank = 0;
  int nranks = 1;
  int localRanks = 1;
  bool allLocal = true;  // every rank on this host
  int cpuSharers = 1;    // ranks under this kernel (same CPUs), us included
  int64_t timeoutMs = 0;
  int nChannels = 2;
  bool checkMode = false;
  bool board = true;       // tiny calls through the transport's board (COLL_BOARD, and it has one)
  // The host-staged device path's piece size (COLL_STAGED_PIECE_BYTES;
  // schedule/staged_pieces.h): equal on every rank, like the settings above.
  size_t stagedPieceBytes = coll::sched::kDefaultStagedPieceBytes;
  // Its kernel's blocks, one per this many bytes of a piece
  // (COLL_STAGED_BLOCK_BYTES): this rank's own choice, peers need not agree.
  size_t stagedBlockBytes = coll::sched::kDefaultStagedBlockBytes;
  // The ring and pipeline schedules' rank order (COLL_RING_ORDER: "numa",
  // the default, keeps each host's ranks together and inside a host each
  // NUMA node's; "host" hosts only; "rank" is rank order):
  // Chunking::ringOrder, schedule/ring_order.h.  Empty: rank order.
  enum class RingOrderBy { Rank, Host, Numa };
  RingOrderBy ringOrderBy = RingOrderBy::Numa;
  int numaNode = -1;  // the NUMA node holding this rank's CPUs (-1: none or not known)
  // Ranks on several hosts: the slowest of their network ports (the
  // interface each rank's sockets use), agreed at init; tuner/port_cost.h.
  coll::tune::PortRate slowestPort;
  // COLL_PORT_RATE in Mb/s, in place of what the port reports (-1: unset);
  // tools/netsim sets it, since a veth reports 10 Gb/s whatever htb allows.
  int64_t portMbpsSet = -1;
  std::vector<int> ringOrder;
  std::string name;

  std::unique_ptr<coll::transport::Transport> transport;  // null when nranks == 1
  coll::exec::CommView view;
  std::optional<coll::tune::Tuner> tuner;
  coll::core::PlanCache plans;
  coll::core::RedOpTable redops;

  std::atomic<bool> aborted{false};
  std::atomic<int> asyncError{collSuccess};

  uint64_t collSeq = 0;
  uint64_t boardOps = 0;  // board ops so far (executor/board_collectives.h)
  std::vector<coll::transport::Board*> boards;  // every rank's, when `board` (view.boards points here)
  std::vector<uint64_t> boardFinished;            // view.boardFinished points here
  std::vector<uint64_t> sendSeq;  // per peer
  std::vector<uint64_t> recvSeq;

  // collCommRegister's handles: each names the buffer it registered with
  // the transport (transport.h, registerBuffer).
  struct Registration {
    const void* buff;
    size_t bytes;
  };
  std::mutex regMu;
  std::map<void*, std::unique_ptr<Registration>> registrations;

  // The flight recorder (record/flight_recorder.h): the last
  // COLL_FR_ENTRIES calls, dumped to COLL_FR_DIR on a failure.  commId
  // names the communicator alike on every rank (16 hex digits).
  std::unique_ptr<coll::record::FlightRecorder> recorder;
  std::string commId;
  std::string recordDir;

  std::mutex errorMu;
  std::string lastError;
  std::string failure;  // the error that made the comm unusable (asyncError), as it was said then

  // Device collectives' state, made at the first call on device buffers
  // (device/entry/device_entry.h); null until then and in builds without
  // CUDA.
  std::shared_ptr<coll::device::DeviceComm> device;
  // Device calls through the host executor instead
  // (device/entry/device_staged.h): ranks on other hosts, GPUs without peer
  // access, COLL_DEVICE_PATH=staged.
  bool deviceStaged = false;
  std::shared_ptr<coll::core::StagedState> staged;  // its pinned slots and proxy thread, made at the first call
  // Every rank in this process (collCommInitAll, a thread per rank): the
  // local device path, shared by the ranks (device/local_clique.h).
  std::shared_ptr<coll::device::LocalClique> clique;
};

namespace coll::core {

struct InitParams {
  int rank = 0;
  int nranks = 1;
  const collUniqueId* id = nullptr;  // null only when nranks == 1
  const collConfig_t* config = nullptr;
  // The launcher variables that named the rendezvous ("" for a unique id):
  // what a rank that cannot reach it should fix.
  std::string rootFrom;
};

Result<collComm*> createComm(const InitParams& p);
// Tears down; safe after abort or a failed collective.
void destroyComm(collComm* comm);

// Records a failure on comm (message for collGetLastError, async error for
// errors that leave the comm unusable) and returns its code.
collResult_t fail(collComm* comm, const Status& s);
// Calls f on every live communicator of the process (under the registry's lock).
void forEachLiveComm(const std::function<void(collComm*)>& f);

// The live-communicator registry (catches destroyed and garbage handles).
void registerComm(collComm* c);
void unregisterComm(collComm* c);
bool isLiveComm(const collComm* c);

// This thread's last error without a comm (collGetLastError(NULL)).
void setThreadError(const std::string& msg);
const char* threadError();

}  // namespace coll::core
