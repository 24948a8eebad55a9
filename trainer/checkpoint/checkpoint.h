// checkpoint.h — saving and restoring a training run.
//
// A checkpoint holds named float tensors (parameters, optimizer momentum
// buffers, batch-norm running statistics — whatever the caller lists) and the
// metadata needed to continue: epoch, step, the sampler's state, the seed,
// the model kind and free-form string pairs.
//
// Who writes: ONLY RANK 0 calls saveCheckpoint (data-parallel ranks hold
// identical tensors after each all-reduce step, so one copy is the state of
// the run).  This module does not know about ranks; that rule is the
// caller's.  Every rank may loadCheckpoint the same file to resume.
//
// Atomicity: saveCheckpoint writes "<path>.tmp.<pid>", fsyncs it, renames it
// over <path> (atomic on POSIX file systems) and fsyncs the directory.  A
// writer killed at any moment leaves <path> either the old checkpoint or the
// new one, never a mix; a killed writer may leave its .tmp.<pid> file behind
// (loadCheckpoint never looks at it).
//
// File format, version 1 (integers and floats little-endian):
//   header (32 bytes): magic "COLLCKPT" | u32 version | u32 header bytes (32)
//                      | u64 payload bytes | u32 CRC-32 of the payload (zlib
//                      crc32) | u32 reserved (0)
//   payload: i64 epoch | i64 step | u64 seed
//            | sampler: i64 epoch, i64 step, u64 seed, i64 datasetSize,
//                       i64 globalBatch, u8 shuffle, u8 dropLast
//            | str modelKind | u32 n, n x (str key, str value)
//            | u32 tensors, each: str name | u64 count | count x f32
//   str = u32 length + bytes (no terminator)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/sampler.h"
#include "coll/base/status.h"

namespace coll::train {

inline constexpr char kCheckpointMagic[8] = {'C', 'O', 'L', 'L', 'C', 'K', 'P', 'T'};
inline constexpr uint32_t kCheckpointVersion = 1;
inline constexpr size_t kCheckpointHeaderBytes = 32;

// A tensor to save: name, and count floats at data.
struct NamedTensor {
  std::string name;
  const float* data = nullptr;
  size_t count = 0;
};

// A tensor to restore into: name, and room for count floats at data.
struct TensorSlot {
  std::string name;
  float* data = nullptr;
  size_t count = 0;
};
// The same tensors viewed for saving.
std::vector<NamedTensor> asNamedTensors(const std::vector<TensorSlot>& slots);

struct CheckpointMeta {
  int64_t epoch = 0;
  int64_t step = 0;
  SamplerState sampler;
  uint64_t seed = 0;
  std::string modelKind;                      // e.g. "mlp", "resnet"
  std::map<std::string, std::string> extra;  // anything else (lr, git rev, ...)
};

struct StoredTensor {
  std::string name;
  std::vector<float> data;
};

struct Checkpoint {
  uint32_t version = kCheckpointVersion;
  CheckpointMeta meta;
  std::vector<StoredTensor> tensors;  // in the order they were saved
  const StoredTensor* find(std::string_view name) const;
};

// Writes meta and tensors to path atomically (see above).  Tensor names must
// be non-empty and unique.  A failure before the rename leaves path
// untouched and removes the temporary file; only a failed directory fsync
// (after the rename) reports an error with the new file already in place.
Status saveCheckpoint(const std::string& path, const CheckpointMeta& meta,
                      const std::vector<NamedTensor>& tensors);

// Reads and verifies path: errors name the file and say whether it is
// missing, truncated (expected vs present bytes), not a checkpoint (magic),
// of another version, or corrupt (CRC mismatch, malformed payload).
Result<Checkpoint> loadCheckpoint(const std::string& path);

// Copies the checkpoint's tensors into slots.  The sets must match exactly:
// every slot's name is in the checkpoint with the same count, and the
// checkpoint has no other tensor (order does not matter).  Everything is
// checked before anything is written; the error names the first mismatching
// tensor.
Status restoreInto(const Checkpoint& ckpt, const std::vector<TensorSlot>& slots);

namespace detail {
// Tests only: called at "tmp-opened", "payload-written", "synced" (tmp file
// complete, fsync'd and closed, not yet renamed) and "renamed" (before the
// directory fsync), so a test can kill the writer at each point.
using CheckpointHook = void (*)(const char* stage);
void setCheckpointTestHook(CheckpointHook hook);
}  // namespace detail

}  // namespace coll::train
