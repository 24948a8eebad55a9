// step.h — the closed set of steps every schedule is made of.
//
// A schedule is data: for one rank, per channel, the ordered list of steps
// that rank executes.  Executors (host loop, CUDA kernel) run it with one
// switch; the simulator runs every rank's schedule in one process.
//
// Wire rule: on every (channel, sender -> receiver) link, the k-th send step
// of the sender meets the k-th receive step of the receiver, and both carry
// the same element count.  Schedules never emit steps with count == 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coll::sched {

enum class StepKind : uint8_t {
  Send,                // wire            <- pre(src)
  Recv,                // dst             <- wire
  RecvReduceSend,      // wire(sendPeer)  <- op(wire(recvPeer), pre(src))
  RecvReduceCopy,      // dst             <- op(wire, pre(src))
  RecvReduceCopySend,  // dst, wire       <- op(wire(recvPeer), pre(src))
  RecvCopySend,        // dst, wire       <- wire(recvPeer)
  Copy,                // dst             <- pre(src)
  LocalReduce,         // dst             <- op(dst, pre(src))
};

// The rank-local buffers a step reads or writes.  "pre" (the pre-multiply
// of collRedOpCreatePreMulSum) applies to an operand read from Input of a
// reducing collective; the executor decides that from this tag, never from
// pointers, so it is right for in-place calls too.  Scratch is memory the
// executor gives the call (Schedule::scratchElems elements, private to the
// rank, contents undefined at the start): partial results that fit in
// neither of the user's buffers; what it holds is already pre-multiplied.
enum class Buf : uint8_t { Input, Output, Scratch };

struct Step {
  StepKind kind;
  Buf src = Buf::Input;  // local operand (Send, RecvReduce*, Copy, LocalReduce)
  Buf dst = Buf::Output; // written buffer (Recv, *Copy*, LocalReduce)
  bool final = false;    // the produced value is the final reduction result:
                         // apply the post-op (avg: divide by nranks)
  int32_t recvPeer = -1; // rank received from, or -1
  int32_t sendPeer = -1; // rank sent to, or -1
  size_t srcOff = 0;     // element offset into src
  size_t dstOff = 0;     // element offset into dst
  size_t count = 0;      // elements (> 0)
};

struct ChannelSchedule {
  std::vector<Step> steps;
};

struct Schedule {
  std::vector<ChannelSchedule> channels;  // size == nchannels (some may be empty)
  size_t scratchElems = 0;                // Buf::Scratch elements the steps use
};

// How work is cut: each step moves at most chunkElems elements; the data is
// split over nchannels channels that run concurrently.  ringOrder: the
// ranks in the order the ring and pipeline schedules visit them and the
// tree schedules build their trees over (ringOrder[i] is the rank at ring
// position i, nranks entries, a permutation; ring_order.h), or null for
// rank order.  Owned by the caller
// (the communicator), which outlives the schedules built from it.
struct Chunking {
  int nchannels = 1;
  size_t chunkElems = 1 << 16;
  const int* ringOrder = nullptr;
};

const char* stepKindName(StepKind k);
const char* bufName(Buf b);  // "Input", "Output", "Scratch"
bool stepReceives(StepKind k);
bool stepSends(StepKind k);
bool stepReadsSrc(StepKind k);
bool stepWritesDst(StepKind k);

}  // namespace coll::sched
