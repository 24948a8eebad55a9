#include "ddp/shard_layout.h"

#include <stdexcept>

namespace coll::train {

size_t ShardLayout::updatedElements() const {
  size_t n = 0;
  for (const TensorShard& t : tensors) n += (t.end - t.begin) + (t.count - t.tail);
  return n;
}

ShardLayout shardTensors(const std::vector<size_t>& counts, int rank, int nranks) {
  if (nranks < 1 || rank < 0 || rank >= nranks) throw std::invalid_argument("shardTensors: rank out of range");
  ShardLayout l;
  l.rank = rank;
  l.nranks = nranks;
  const size_t n = static_cast<size_t>(nranks), r = static_cast<size_t>(rank);
  for (size_t count : counts) {
    TensorShard t;
    t.count = count;
    t.piece = count / n;
    t.begin = r * t.piece;
    t.end = t.begin + t.piece;
    t.tail = n * t.piece;
    l.tensors.push_back(t);
  }
  return l;
}

}  // namespace coll::train
