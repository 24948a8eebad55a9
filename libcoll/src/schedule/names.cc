// names.cc — names and the per-kind predicates of step.h / schedules.h.
#include "schedule/schedules.h"

namespace coll::sched {

const char* stepKindName(StepKind k) {
  switch (k) {
    case StepKind::Send: return "Send";
    case StepKind::Recv: return "Recv";
    case StepKind::RecvReduceSend: return "RecvReduceSend";
    case StepKind::RecvReduceCopy: return "RecvReduceCopy";
    case StepKind::RecvReduceCopySend: return "RecvReduceCopySend";
    case StepKind::RecvCopySend: return "RecvCopySend";
    case StepKind::Copy: return "Copy";
    case StepKind::LocalReduce: return "LocalReduce";
  }
  return "?";
}

const char* bufName(Buf b) {
  switch (b) {
    case Buf::Input: return "Input";
    case Buf::Output: return "Output";
    case Buf::Scratch: return "Scratch";
  }
  return "?";
}

bool stepReceives(StepKind k) {
  switch (k) {
    case StepKind::Recv:
    case StepKind::RecvReduceSend:
    case StepKind::RecvReduceCopy:
    case StepKind::RecvReduceCopySend:
    case StepKind::RecvCopySend: return true;
    default: return false;
  }
}

bool stepSends(StepKind k) {
  switch (k) {
    case StepKind::Send:
    case StepKind::RecvReduceSend:
    case StepKind::RecvReduceCopySend:
    case StepKind::RecvCopySend: return true;
    default: return false;
  }
}

bool stepReadsSrc(StepKind k) {
  switch (k) {
    case StepKind::Send:
    case StepKind::RecvReduceSend:
    case StepKind::RecvReduceCopy:
    case StepKind::RecvReduceCopySend:
    case StepKind::Copy:
    case StepKind::LocalReduce: return true;
    default: return false;
  }
}

bool stepWritesDst(StepKind k) {
  switch (k) {
    case StepKind::Recv:
    case StepKind::RecvReduceCopy:
    case StepKind::RecvReduceCopySend:
    case StepKind::RecvCopySend:
    case StepKind::Copy:
    case StepKind::LocalReduce: return true;
    default: return false;
  }
}

const char* collKindName(CollKind k) {
  switch (k) {
    case CollKind::AllReduce: return "allreduce";
    case CollKind::AllGather: return "allgather";
    case CollKind::ReduceScatter: return "reducescatter";
    case CollKind::Broadcast: return "broadcast";
    case CollKind::Reduce: return "reduce";
    case CollKind::Send: return "send";
    case CollKind::Recv: return "recv";
  }
  return "?";
}

const char* algoName(Algo a) {
  switch (a) {
    case Algo::Ring: return "ring";
    case Algo::Tree: return "tree";
    case Algo::OneShot: return "oneshot";
    case Algo::Pipeline: return "pipeline";
    case Algo::Direct: return "direct";
    case Algo::Doubling: return "doubling";
    case Algo::Halving: return "halving";
  }
  return "?";
}

}  // namespace coll::sched
