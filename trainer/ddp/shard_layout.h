// shard_layout.h — which part of every parameter tensor a rank updates when
// the optimizer is sharded (--shard-optimizer, ZeRO stage 1).
//
// A tensor of `count` elements is cut into nranks pieces of
// piece = count / nranks; rank r owns [r*piece, (r+1)*piece).  The
// count - nranks*piece leftover elements at the end (fewer than nranks) are
// everybody's: all-reduced and updated the same way on every rank, so no
// tensor needs padding and the pieces stay the in-place layout of
// collReduceScatter (recvbuff = sendbuff + rank*piece) and collAllGather.
// A pure function of (counts, rank, nranks): tests check it alone.
#pragma once

#include <cstddef>
#include <vector>

namespace coll::train {

struct TensorShard {
  size_t count = 0;   // the tensor's elements
  size_t piece = 0;   // count / nranks: each rank's piece
  size_t begin = 0;   // this rank's piece: [begin, end)
  size_t end = 0;
  size_t tail = 0;    // nranks * piece: [tail, count) is every rank's
};

struct ShardLayout {
  int rank = 0;
  int nranks = 1;
  std::vector<TensorShard> tensors;  // one per tensor, in the order given
  // Elements this rank updates: its pieces and every tail.
  size_t updatedElements() const;
};

ShardLayout shardTensors(const std::vector<size_t>& counts, int rank, int nranks);

}  // namespace coll::train
