// local_plan.cc — see local_plan.h.
#include "schedule/local_plan.h"

#include <algorithm>

namespace coll::sched {
namespace {

struct HubSlice {
  size_t begin = 0, end = 0;  // elements
};

// Hub h's part of `total` elements, cut at multiples of `unit`.
HubSlice hubSlice(size_t total, size_t hubs, size_t h, size_t unit) {
  const size_t units = (total + unit - 1) / unit, per = units / hubs, rem = units % hubs;
  const size_t first = h * per + std::min(h, rem), n = per + (h < rem ? 1 : 0);
  return {std::min(total, first * unit), std::min(total, (first + n) * unit)};
}

class LocalPlanner {
 public:
  explicit LocalPlanner(const LocalPlanArgs& a) : a_(a), es_(a.elemSize), n_(static_cast<int>(a.ranks.size())) {}

  std::vector<std::vector<LocalItem>> run() {
    std::vector<std::vector<LocalItem>> plan(a_.scratch.size());
    const size_t hubs = a_.scratch.size();
    const size_t total = a_.kind == CollKind::AllGather || a_.kind == CollKind::ReduceScatter
                             ? a_.count * static_cast<size_t>(n_)
                             : a_.count;
    for (size_t h = 0; h < hubs; ++h) {
      const HubSlice s = hubSlice(total, hubs, h, localSliceUnit(es_));
      if (s.end == s.begin) continue;
      out_ = &plan[h];
      hub_ = static_cast<int>(h);
      switch (a_.kind) {
        case CollKind::AllReduce: allReduce(s); break;
        case CollKind::Reduce: reduce(s); break;
        case CollKind::Broadcast: broadcast(s); break;
        case CollKind::AllGather: allGather(s); break;
        case CollKind::ReduceScatter: reduceScatter(s); break;
        default: break;  // send/recv are not planned here
      }
    }
    return plan;
  }

 private:
  uintptr_t at(uintptr_t base, size_t elems) const { return base + elems * es_; }
  uintptr_t send(int r, size_t elems) const { return at(a_.ranks[r].send, elems); }
  uintptr_t recv(int r, size_t elems) const { return at(a_.ranks[r].recv, elems); }
  uintptr_t acc() const { return a_.scratch[hub_]; }
  size_t scratchElems() const { return std::max<size_t>(1, a_.scratchBytes / es_); }
  int fan() const { return std::clamp(a_.fan, 2, kLocalFan); }

  // Every target = src (n elements), the source read once per item of up
  // to `fan` targets; a target that is the source is skipped, and one that
  // overlaps it partially (never in NCCL's layouts) gets a copy of its own.
  void copyTo(const std::vector<uintptr_t>& targets, uintptr_t src, size_t n) {
    if (n == 0) return;
    const uintptr_t bytes = n * es_;
    LocalItem it;
    it.kind = LocalItem::Kind::Copy;
    it.src[0] = {src, -1};
    it.nsrc = 1;
    it.count = n;
    auto flush = [&] {
      if (it.ndst > 0) out_->push_back(it);
      it.ndst = 0;
    };
    for (uintptr_t t : targets) {
      if (t == src) continue;
      const bool overlaps = t < src + bytes && src < t + bytes;
      if (overlaps) flush();
      it.dst[it.ndst++] = t;
      if (overlaps || it.ndst == fan()) flush();
    }
    flush();
  }

  // Whether the chain below may write `targets` while it reads every rank's
  // input at `srcAt` (n elements): each target is disjoint from each input
  // or exactly it, and the accumulator (targets[0], written by the first
  // item when the ranks outnumber the fan) is no input a later item reads.
  bool targetsOk(const std::vector<uintptr_t>& targets, size_t srcAt, size_t n) const {
    const uintptr_t bytes = n * es_;
    for (size_t k = 0; k < targets.size(); ++k)
      for (int p = 0; p < n_; ++p) {
        const uintptr_t dst = targets[k], src = send(p, srcAt);
        if (dst + bytes <= src || src + bytes <= dst) continue;
        if (dst != src || (k == 0 && n_ > fan() && p >= fan())) return false;
      }
    return true;
  }

  // Every target = the reduction over every rank's input at element srcAt,
  // n elements, in rank order: one item while the ranks fit the fan, else
  // targets[0] accumulates through a chain of items; targets past the fan
  // are copies of targets[0].
  void chain(const std::vector<uintptr_t>& targets, size_t srcAt, size_t n) {
    int next = 0;
    for (bool first = true;; first = false) {
      LocalItem it;
      it.kind = LocalItem::Kind::Reduce;
      it.count = n;
      if (!first) it.src[it.nsrc++] = {targets[0], -1};
      for (; it.nsrc < fan() && next < n_; ++next) it.src[it.nsrc++] = {send(next, srcAt), a_.premul ? next : -1};
      it.post = next == n_;
      const size_t outs = it.post ? std::min(targets.size(), static_cast<size_t>(fan())) : 1;
      for (size_t k = 0; k < outs; ++k) it.dst[it.ndst++] = targets[k];
      out_->push_back(it);
      if (it.post) break;
    }
    if (targets.size() > static_cast<size_t>(fan()))
      copyTo(std::vector<uintptr_t>(targets.begin() + fan(), targets.end()), targets[0], n);
  }

  // targets[k] + [0, n) = the reduction of inputs [srcBegin, srcBegin + n):
  // straight, or through the scratch in pieces when some target overlaps
  // an input other than exactly.
  void reduceTo(const std::vector<uintptr_t>& targets, size_t srcBegin, size_t n) {
    if (targetsOk(targets, srcBegin, n)) return chain(targets, srcBegin, n);
    const size_t piece = scratchElems();
    for (size_t off = 0; off < n; off += piece) {
      const size_t len = std::min(piece, n - off);
      chain({acc()}, srcBegin + off, len);
      std::vector<uintptr_t> pieces;
      for (uintptr_t t : targets) pieces.push_back(at(t, off));
      copyTo(pieces, acc(), len);
    }
  }

  // Every rank's output, one of this GPU's ranks first (the accumulator of
  // a chain is then local memory).
  void allReduce(HubSlice s) {
    std::vector<uintptr_t> targets;
    for (int local = 1; local >= 0; --local)
      for (int r = 0; r < n_; ++r)
        if ((a_.ranks[r].hub == hub_) == (local == 1)) targets.push_back(recv(r, s.begin));
    reduceTo(targets, s.begin, s.end - s.begin);
  }

  void reduce(HubSlice s) { reduceTo({recv(a_.root, s.begin)}, s.begin, s.end - s.begin); }

  void broadcast(HubSlice s) { copyTo(recvTargets(s.begin), send(a_.root, s.begin), s.end - s.begin); }

  // Every rank's output at element `at`.
  std::vector<uintptr_t> recvTargets(size_t at) const {
    std::vector<uintptr_t> t;
    for (int r = 0; r < n_; ++r) t.push_back(recv(r, at));
    return t;
  }

  // Output element j of every rank is input element j mod count of rank
  // j / count: each input block read once, written to every rank's
  // output.  In place a rank's own block is its input (skipped).
  void allGather(HubSlice s) {
    for (size_t j = s.begin; j < s.end;) {
      const int q = static_cast<int>(j / a_.count);
      const size_t blockEnd = std::min(s.end, (static_cast<size_t>(q) + 1) * a_.count);
      copyTo(recvTargets(j), send(q, j - static_cast<size_t>(q) * a_.count), blockEnd - j);
      j = blockEnd;
    }
  }

  // Input element j of every rank reduces into output element j mod count
  // of rank j / count.
  void reduceScatter(HubSlice s) {
    for (size_t j = s.begin; j < s.end;) {
      const int r = static_cast<int>(j / a_.count);
      const size_t blockEnd = std::min(s.end, (static_cast<size_t>(r) + 1) * a_.count);
      reduceTo({recv(r, j - static_cast<size_t>(r) * a_.count)}, j, blockEnd - j);
      j = blockEnd;
    }
  }

  const LocalPlanArgs& a_;
  const size_t es_;
  const int n_;
  std::vector<LocalItem>* out_ = nullptr;
  int hub_ = 0;
};

}  // namespace

size_t localSliceUnit(size_t elemSize) { return std::max<size_t>(1, 256 / std::max<size_t>(1, elemSize)); }

std::vector<std::vector<LocalItem>> planLocal(const LocalPlanArgs& args) {
  if (args.ranks.empty() || args.scratch.empty() || args.count == 0) return std::vector<std::vector<LocalItem>>(args.scratch.size());
  return LocalPlanner(args).run();
}

}  // namespace coll::sched
