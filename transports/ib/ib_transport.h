// ib_transport.h — ranks talk over InfiniBand or RoCE: RC queue pairs and
// RDMA writes (ib_conn.h has the protocol), verbs through the dlopened
// table (verbs_api.h), so the same code runs on a real NIC and on the
// emulated provider of the tests (docs/verbs-emulation.md).
//
// Setup (connect): choose the active ports COLL_IB_HCA selects, nearest
// the rank's NUMA node first (up to kMaxRails; channel c uses NIC c mod
// NICs: rails); allocate and register the regions peers write into
// (receive rings, clear-to-send rings, control blocks) with remote write
// only there, and the staging slots with local access only; create every
// QP (a control QP per peer, COLL_IB_QPS_PER_CONNECTION per channel and
// peer); publish their numbers, the NICs' GIDs/LIDs and the regions'
// addresses and rkeys through the bootstrap; move the QPs RESET -> INIT ->
// RTR -> RTS; then every rank says whether it succeeded, so that all fail
// together, naming the rank and why.
//
// Progress is the executor's: every tryAcquire/tryPeek polls its
// connection's completion queues (no thread).  Sleeping naps, since no
// file descriptor wakes on an RDMA write.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "coll/transport.h"
#include "ib/ib_conn.h"
#include "ib/ib_control.h"
#include "ib/ib_qp.h"
#include "ib/ib_reg_cache.h"
#include "ib/ib_settings.h"

namespace coll::ib {

struct IbOptions {
  IbSettings settings;
  int numaNode = -1;  // the rank's, for choosing the nearest NICs
};

class IbTransport final : public transport::Transport {
 public:
  explicit IbTransport(IbOptions opt);
  ~IbTransport() override;

  const char* name() const override { return "ib"; }
  transport::LinkCost cost() const override;
  Status connect(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                 const std::vector<int>& peers, const transport::ConnectOptions& opt) override;
  transport::SendConn* sendConn(int channel, int peer) override;
  transport::RecvConn* recvConn(int channel, int peer) override;
  Status checkPeers() override;
  const std::vector<int>& deadPeers() override;
  bool sendsInFlight() override;
  void notifyPeers(const std::string& why) override;
  void reportWait(int waitingFor) override;
  void waitReports(std::vector<int>& byRank) override;
  uint32_t prepareToSleep() override { return 0; }
  void sleep(uint32_t token, int64_t maxNs) override;
  void cancelSleep() override {}
  void wake() override { woken_.store(true, std::memory_order_release); }
  void settleSends() override;
  Status registerBuffer(const void* p, size_t bytes) override;
  void deregisterBuffer(const void* p) override;

  // The NICs in use, "mlx5_0:1 (400 Gb/s InfiniBand)", for logs and tools.
  std::string describeNics() const;
  // The slowest NIC's rate times the NICs (rails), Gb/s.
  double railGbps() const;
  const IbCounters& counters() const { return counters_; }

 private:
  struct Region {
    char* base = nullptr;
    size_t bytes = 0;
    std::vector<ibv_mr*> mrs;  // per NIC
  };
  Status setUp(int rank, const std::vector<int>& peers, const transport::ConnectOptions& opt);
  Status allocRegion(Region& r, size_t bytes, int access, const char* what);
  Status connectPeers(const std::vector<char>& table, const std::vector<int>& peers);
  void freeRegion(Region& r);
  IbConnection* conn(int channel, int peer);

  IbOptions opt_;
  const VerbsApi* api_ = nullptr;
  transport::ConnectOptions copt_;
  IbGeometry geo_;
  int rank_ = -1;
  int nranks_ = 0;
  std::vector<IbNic> nics_;
  Region ring_, cts_, ctrl_, staging_, noticeOut_;
  std::vector<int> peerIndex_;                    // rank -> index, or -1
  std::vector<int> peers_;                        // index -> rank
  std::vector<std::unique_ptr<Lane>> lanes_;      // [peer][control, channel x qps]
  std::vector<std::unique_ptr<IbControl>> control_;          // per peer index
  std::vector<std::unique_ptr<IbConnection>> conns_;         // [channel * npeers + index]
  std::vector<std::unique_ptr<IbSendConn>> send_;
  std::vector<std::unique_ptr<IbRecvConn>> recv_;
  std::vector<int> dead_;
  RegCache regs_;
  std::vector<int64_t> brokenSinceNs_;  // per peer index: when a data QP broke while its control QP lived
  IbCounters counters_;
  std::atomic<bool> woken_{false};
  int64_t napNs_ = 0;
  uint64_t lastCqes_ = 0;  // counters_.cqes at the last nap
};

// How many active ports COLL_IB_HCA selects on this host (0: none, or no
// verbs library: then IB is not an option).  For the transport choice.
int countUsablePorts(const IbSettings& s, std::string* why);

}  // namespace coll::ib
