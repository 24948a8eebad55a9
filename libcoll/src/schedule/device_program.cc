// device_program.cc — see device_program.h.  Bytes each rank moves through
// memory per piece of S bytes (reads + writes; docs/PERFORMANCE.md uses them
// for the bandwidth bound):
//   all-reduce, two-phase: stage 2S, reduce its slice S + S/N, gather 2S
//   all-reduce, one-shot:  stage 2S, reduce all N·S + S
//   all-gather:            stage 2s (own block of s = S/N), gather 2S
//   broadcast:             root 2S (+2S out of place), others 2S
//   reduce-scatter:        stage 2S, reduce its block S + S/N
//   reduce:                stage 2S, root N·S + S
#include "schedule/device_program.h"

#include <algorithm>

namespace coll::sched {
namespace {

struct Slice {
  uint64_t begin, len;
};
// Rank r's part of `total` elements: the first total % n ranks get one more.
Slice sliceOf(uint64_t total, int n, int r) {
  const uint64_t q = total / static_cast<uint64_t>(n), rem = total % static_cast<uint64_t>(n);
  const uint64_t ur = static_cast<uint64_t>(r);
  return {ur * q + std::min(ur, rem), q + (ur < rem ? 1 : 0)};
}

// Appends steps for one call; offsets in elements are turned into bytes.
class Builder {
 public:
  Builder(std::vector<DevStep>& out, uint8_t call, uint32_t es) : out_(out), call_(call), es_(es) {}

  void data(DevStepKind kind, DevBuf dst, uint64_t dstAt, DevBuf src, int srcRank, uint64_t srcAt, uint64_t count) {
    DevStep s;
    s.kind = kind;
    s.call = call_;
    s.dst = dst;
    s.src = src;
    s.srcRank = srcRank;
    s.dstOff = dstAt * es_;
    s.srcOff = srcAt * es_;
    s.count = count;
    out_.push_back(s);
  }
  void barrier() {
    DevStep s;
    s.kind = DevStepKind::Barrier;
    s.call = call_;
    out_.push_back(s);
  }

 private:
  std::vector<DevStep>& out_;
  uint8_t call_;
  uint32_t es_;
};

void allReduce(Builder& b, const DevProgramCall& c, int rank, int n, uint64_t cap, uint64_t oneShotBytes) {
  for (uint64_t off = 0; off < c.count;) {
    const uint64_t piece = std::min(cap, c.count - off);
    if (piece * c.elemSize <= oneShotBytes) {
      b.data(DevStepKind::Stage, DevBuf::Input, 0, DevBuf::Send, rank, off, piece);
      b.barrier();
      b.data(DevStepKind::Reduce, DevBuf::Recv, off, DevBuf::Input, 0, 0, piece);
    } else {
      // Staged slice by slice: rank s reduces slice s of every input region,
      // and its block k must find there what block k of each rank staged.
      for (int s = 0; s < n; ++s) {
        const Slice sl = sliceOf(piece, n, s);
        b.data(DevStepKind::Stage, DevBuf::Input, sl.begin, DevBuf::Send, rank, off + sl.begin, sl.len);
      }
      b.barrier();
      const Slice mine = sliceOf(piece, n, rank);
      b.data(DevStepKind::Reduce, DevBuf::Result, mine.begin, DevBuf::Input, 0, mine.begin, mine.len);
      b.barrier();
      for (int s = 0; s < n; ++s) {
        const Slice sl = sliceOf(piece, n, s);
        b.data(DevStepKind::Copy, DevBuf::Recv, off + sl.begin, DevBuf::Result, s, sl.begin, sl.len);
      }
    }
    b.barrier();  // nobody refills a region while a peer may still read it
    off += piece;
  }
}

void allGather(Builder& b, const DevProgramCall& c, int rank, int n, uint64_t cap) {
  for (uint64_t off = 0; off < c.count;) {
    const uint64_t piece = std::min(cap, c.count - off);
    b.data(DevStepKind::Copy, DevBuf::Input, 0, DevBuf::Send, rank, off, piece);
    b.barrier();
    for (int s = 0; s < n; ++s)
      b.data(DevStepKind::Copy, DevBuf::Recv, static_cast<uint64_t>(s) * c.count + off, DevBuf::Input, s, 0, piece);
    b.barrier();
    off += piece;
  }
}

void broadcast(Builder& b, const DevProgramCall& c, int rank, uint64_t cap) {
  const bool root = rank == c.root;
  for (uint64_t off = 0; off < c.count;) {
    const uint64_t piece = std::min(cap, c.count - off);
    b.data(DevStepKind::Copy, DevBuf::Input, 0, DevBuf::Send, rank, off, root ? piece : 0);
    b.barrier();
    if (root) b.data(DevStepKind::Copy, DevBuf::Recv, off, DevBuf::Send, rank, off, piece);
    else b.data(DevStepKind::Copy, DevBuf::Recv, off, DevBuf::Input, c.root, 0, piece);
    b.barrier();
    off += piece;
  }
}

void reduceScatter(Builder& b, const DevProgramCall& c, int rank, int n, uint64_t blockCap) {
  // The input region holds one piece of every rank's block.
  for (uint64_t off = 0; off < c.count;) {
    const uint64_t piece = std::min(blockCap, c.count - off);
    for (int s = 0; s < n; ++s) {
      const uint64_t at = static_cast<uint64_t>(s) * piece;
      b.data(DevStepKind::Stage, DevBuf::Input, at, DevBuf::Send, rank, static_cast<uint64_t>(s) * c.count + off, piece);
    }
    b.barrier();
    b.data(DevStepKind::Reduce, DevBuf::Recv, off, DevBuf::Input, 0, static_cast<uint64_t>(rank) * piece, piece);
    b.barrier();
    off += piece;
  }
}

void reduce(Builder& b, const DevProgramCall& c, int rank, uint64_t cap) {
  for (uint64_t off = 0; off < c.count;) {
    const uint64_t piece = std::min(cap, c.count - off);
    b.data(DevStepKind::Stage, DevBuf::Input, 0, DevBuf::Send, rank, off, piece);
    b.barrier();
    b.data(DevStepKind::Reduce, DevBuf::Recv, off, DevBuf::Input, 0, 0, rank == c.root ? piece : 0);
    b.barrier();
    off += piece;
  }
}

}  // namespace

bool appendDeviceProgram(std::vector<DevStep>& out, const DevProgramCall& c, uint8_t callIndex, int rank, int nranks,
                         size_t regionBytes, size_t oneShotBytes) {
  if (nranks < 1 || rank < 0 || rank >= nranks || c.elemSize == 0) return false;
  const uint64_t cap = regionBytes / c.elemSize;
  if (cap == 0) return c.count == 0;
  Builder b(out, callIndex, c.elemSize);
  switch (c.kind) {
    case CollKind::AllReduce: allReduce(b, c, rank, nranks, cap, oneShotBytes); return true;
    case CollKind::AllGather: allGather(b, c, rank, nranks, cap); return true;
    case CollKind::Broadcast:
      if (c.root < 0 || c.root >= nranks) return false;
      broadcast(b, c, rank, cap);
      return true;
    case CollKind::ReduceScatter: {
      const uint64_t blockCap = cap / static_cast<uint64_t>(nranks);
      if (blockCap == 0) return c.count == 0;
      reduceScatter(b, c, rank, nranks, blockCap);
      return true;
    }
    case CollKind::Reduce:
      if (c.root < 0 || c.root >= nranks) return false;
      reduce(b, c, rank, cap);
      return true;
    default: return false;
  }
}

uint64_t programUnit(uint64_t maxPieceBytes, int channels) {
  constexpr uint64_t kMin = 1 << 10, kMax = 32 << 10;
  uint64_t unit = kMax;
  while (unit > kMin && maxPieceBytes / unit < static_cast<uint64_t>(channels > 0 ? channels : 1)) unit /= 2;
  return unit;
}

std::vector<size_t> splitProgram(const std::vector<DevStep>& steps, size_t maxSteps,
                                 const std::vector<size_t>& startsAt) {
  std::vector<size_t> ends;
  size_t start = 0, lastBarrier = 0;  // lastBarrier: one past the last barrier seen since start
  auto forced = startsAt.begin();
  for (size_t i = 0; i < steps.size(); ++i) {
    while (forced != startsAt.end() && *forced <= start) ++forced;  // at the launch's start already
    if (forced != startsAt.end() && *forced == i) {
      if (steps[i - 1].kind != DevStepKind::Barrier) return {};
      ends.push_back(i);
      start = lastBarrier = i;
    }
    if (i + 1 - start > maxSteps) {  // step i does not fit: cut after the last barrier
      if (lastBarrier <= start) return {};  // one stretch longer than a launch
      ends.push_back(lastBarrier);
      start = lastBarrier;
    }
    if (steps[i].kind == DevStepKind::Barrier) lastBarrier = i + 1;
  }
  if (start < steps.size()) {
    if (steps.back().kind != DevStepKind::Barrier) return {};  // the builders always end with one
    ends.push_back(steps.size());
  }
  return ends;
}

}  // namespace coll::sched
