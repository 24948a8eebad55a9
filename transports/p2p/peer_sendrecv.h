// peer_sendrecv.h — send/recv between the ranks of a DeviceComm, one kernel per
// call or per group.
//
// Every ordered pair (s -> r) has kP2pChannels channels, each a mailbox of
// kP2pSlots slots in the sender's block (read by the receiver through its
// mapping) and two counters: sent[s->r][c] in the sender's p2p control
// words (chunks written so far) and acked[r<-s][c] in the receiver's
// (chunks consumed so far).  Chunk j of an op (kP2pSlotBytes each) goes
// through channel j mod kP2pChannels, whoever launches it: the sender waits
// until the slot's previous chunk is acked, copies, publishes sent; the
// receiver waits until the chunk is sent, copies, publishes acked.  The
// counters live in device memory and each launch starts from their current
// values, so calls and graph replays chain.
//
// Blocks: `channels` per (direction, peer) of the launch's ops (1 to
// kP2pChannels, from its largest op), block g of them serving channels g,
// g + channels, ... in chunk order; so the two sides of a pair may launch
// different block counts: one block per direction and peer, each thread
// waiting on one load at a time, was several times slower
// (docs/PERFORMANCE.md, send/recv).  The ops of different peers
// progress at once, so a group's send/recv pairs never deadlock.
//
// Sizes are checked: with each chunk the sender records its op's byte count
// in sizes[s->r][slot] (its p2p control words, published with `sent`); a
// receiver whose recv has another size records a mismatch (the error record
// of peer_barrier.h, signatures sendSigWord/recvSigWord with the two byte
// counts) and stops.  Zero-byte ops move no chunk and are not checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace coll::p2p {

constexpr int kP2pChannels = 4;  // per ordered pair
constexpr int kP2pSlots = 2;     // per channel
constexpr size_t kP2pSlotBytes = 128 << 10;
constexpr int kP2pMaxOps = 128;  // per launch (kernel parameter space)

struct P2pOp {
  void* buf = nullptr;  // send: source; recv: destination
  size_t bytes = 0;
  int peer = 0;
  int isSend = 0;
};

struct P2pLaunch {
  int nops = 0;
  P2pOp ops[kP2pMaxOps];
  char* const* bases = nullptr;  // device array: every rank's block, mapped here
  size_t ctlOffset = 0;          // p2p control words in a block: sent[N][C], acked[N][C], sizes[N][C][kP2pSlots]
  size_t mailOffset = 0;         // mailboxes in a block: [peer][channel][slot][kP2pSlotBytes]
  int nranks = 1;
  int rank = 0;
  unsigned long long timeoutNs = ~0ull;
  unsigned long long* error = nullptr;  // host-mapped error record (peer_barrier.h)
  unsigned long long sendSigWord = 0;   // packed signatures of a send and a recv (count: the bytes)
  unsigned long long recvSigWord = 0;
  int channels = 1;  // blocks per (direction, peer): launchP2p sets it
};

// Bytes of the p2p control words of a block of n ranks (256-B aligned).
constexpr size_t p2pControlBytes(int n) {
  return (sizeof(unsigned long long) * (2 + kP2pSlots) * kP2pChannels * static_cast<size_t>(n) + 255) / 256 * 256;
}
// Bytes of a block's mailboxes (n ranks): 1 MiB per peer.
constexpr size_t p2pMailboxBytes(int n) {
  return static_cast<size_t>(n) * kP2pChannels * kP2pSlots * kP2pSlotBytes;
}
// Blocks per (direction, peer) for ops of at most maxBytes: a channel per
// chunk, up to kP2pChannels.
constexpr int p2pChannelsFor(size_t maxBytes) {
  const size_t chunks = (maxBytes + kP2pSlotBytes - 1) / kP2pSlotBytes;
  return chunks < 1 ? 1 : chunks > static_cast<size_t>(kP2pChannels) ? kP2pChannels : static_cast<int>(chunks);
}

// Blocks: p2pChannelsFor(the largest op) per distinct (direction, peer).
cudaError_t launchP2p(const P2pLaunch& l, cudaStream_t s);
// Loads the send/recv kernel now (coll/kernel_launch.h, cuda::load, says why).
cudaError_t loadP2pKernel();

}  // namespace coll::p2p
