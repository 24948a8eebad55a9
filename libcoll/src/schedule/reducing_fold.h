// reducing_fold.h — the steps around the doubling and halving all-reduces
// that make any N work: the fold of doubling_shape.h for one chunk.
// Internal to the schedule library.
#pragma once

#include <vector>

#include "schedule/chunking.h"
#include "schedule/doubling_shape.h"

namespace coll::sched::detail {

// Appends rank's opening steps for chunk r and returns true when the
// rank's part of the chunk is complete already:
//   N == 1:          a final Copy Input -> Output;
//   folded out:      Send Input -> rank+1, then Recv the result <- rank+1;
//   folds in:        RecvReduceCopy <- rank-1 with Input; *acc = Output;
//   otherwise:       nothing; *acc = Input.
// *acc is the buffer holding the rank's partial result so far.
inline bool openReducingFold(std::vector<Step>& steps, const DoublingShape& shape, int rank, const Range& r,
                             Buf* acc) {
  auto whole = [&](Step s) { steps.push_back(placed(s, r.off, r.off, r.len)); };
  *acc = Buf::Input;
  if (shape.nranks == 1) {
    whole(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .final = true});
    return true;
  }
  if (shape.foldedOut(rank)) {
    whole(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = rank + 1});
    whole(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = rank + 1});
    return true;
  }
  if (shape.foldsIn(rank)) {
    whole(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input, .dst = Buf::Output, .recvPeer = rank - 1});
    *acc = Buf::Output;
  }
  return false;
}

// Appends the closing step: a rank that folds in sends the result back.
inline void closeReducingFold(std::vector<Step>& steps, const DoublingShape& shape, int rank, const Range& r) {
  if (shape.foldsIn(rank))
    steps.push_back(placed(Step{.kind = StepKind::Send, .src = Buf::Output, .sendPeer = rank - 1}, r.off, r.off, r.len));
}

}  // namespace coll::sched::detail
