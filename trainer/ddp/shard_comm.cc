#include "ddp/shard_comm.h"

namespace coll::train {

collResult_t reduceScatterAvg(float* grad, const TensorShard& s, int rank, collComm_t comm) {
  collResult_t r = collSuccess;
  if (s.piece > 0) r = collReduceScatter(grad, grad + static_cast<size_t>(rank) * s.piece, s.piece, collFloat32, collAvg,
                                         comm, nullptr);
  if (r == collSuccess && s.tail < s.count)
    r = collAllReduce(grad + s.tail, grad + s.tail, s.count - s.tail, collFloat32, collAvg, comm, nullptr);
  return r;
}

collResult_t allGatherPieces(float* data, const TensorShard& s, int rank, collComm_t comm) {
  if (s.piece == 0) return collSuccess;
  return collAllGather(data + static_cast<size_t>(rank) * s.piece, data, s.piece, collFloat32, comm, nullptr);
}

std::string gatherAll(CommWorker& worker, const std::vector<float*>& data, const ShardLayout& layout) {
  return worker.call([&](collComm_t comm) {
    collResult_t r = collGroupStart();
    for (size_t i = 0; i < data.size() && r == collSuccess; ++i)
      r = allGatherPieces(data[i], layout.tensors[i], layout.rank, comm);
    collResult_t end = collGroupEnd();
    return r != collSuccess ? r : end;
  });
}

}  // namespace coll::train
