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
  uintptr_t tmp() const { return a_.scratch[hub_] + a_.scratchBytes; }
  size_t scratchElems() const { return std::max<size_t>(1, a_.scratchBytes / es_); }

  void copy(uintptr_t dst, uintptr_t src, size_t n) {
    if (dst != src && n > 0) out_->push_back({LocalItem::Kind::Copy, dst, 0, src, n, -1, false});
  }
  void reduceItem(uintptr_t dst, uintptr_t a, uintptr_t b, size_t n, int preRank, bool post) {
    out_->push_back({LocalItem::Kind::Reduce, dst, a, b, n, preRank, post});
  }

  // Whether the chain may write dst while reading every rank's input at
  // `srcAt` elements: dst overlaps none of them, or is exactly an input
  // read no later than the chain's first write to it (rank 0's; rank 1's
  // when the first step reads both).
  bool directOk(uintptr_t dst, size_t srcAt, size_t n) const {
    const uintptr_t bytes = n * es_;
    for (int p = 0; p < n_; ++p) {
      const uintptr_t src = send(p, srcAt);
      if (dst + bytes <= src || src + bytes <= dst) continue;
      if (dst == src && (p == 0 || (p == 1 && !a_.premul))) continue;
      return false;
    }
    return true;
  }

  // dst = reduction over every rank's input at element srcAt, n elements,
  // in rank order (n fits the scratch when pre-multiplying).
  void chain(uintptr_t dst, size_t srcAt, size_t n) {
    if (!a_.premul) {
      if (n_ == 1) return reduceItem(dst, 0, send(0, srcAt), n, -1, true);
      reduceItem(dst, send(0, srcAt), send(1, srcAt), n, -1, n_ == 2);
      for (int p = 2; p < n_; ++p) reduceItem(dst, dst, send(p, srcAt), n, -1, p == n_ - 1);
      return;
    }
    reduceItem(dst, 0, send(0, srcAt), n, 0, n_ == 1);
    for (int p = 1; p < n_; ++p) {
      reduceItem(tmp(), 0, send(p, srcAt), n, p, false);
      reduceItem(dst, dst, tmp(), n, -1, p == n_ - 1);
    }
  }

  // The reduction of inputs [srcBegin, srcBegin + n) into `dst` (n elements),
  // then `spread` copies it from there to its other destinations.  Straight
  // into dst when that is safe (in pieces of the scratch when
  // pre-multiplying), else through the accumulator in pieces.
  template <class Spread>
  void reduceInto(uintptr_t dst, size_t srcBegin, size_t n, Spread spread) {
    const bool direct = directOk(dst, srcBegin, n);
    const size_t piece = direct && !a_.premul ? n : scratchElems();
    for (size_t off = 0; off < n; off += piece) {
      const size_t len = std::min(piece, n - off);
      const uintptr_t target = direct ? at(dst, off) : acc();
      chain(target, srcBegin + off, len);
      if (!direct) copy(at(dst, off), acc(), len);
      spread(at(dst, off), off, len);
    }
  }

  // The ranks on this hub's GPU whose receive buffer can take the chain
  // straight (rank order); -1: none.
  int directHome(size_t begin, size_t n) const {
    for (int r = 0; r < n_; ++r)
      if (a_.ranks[r].hub == hub_ && a_.ranks[r].recv != 0 && directOk(recv(r, begin), begin, n)) return r;
    return -1;
  }

  void allReduce(HubSlice s) {
    const size_t n = s.end - s.begin;
    int home = directHome(s.begin, n);
    if (home < 0) {  // no output to accumulate in: the scratch, then out to every rank
      const size_t piece = scratchElems();
      for (size_t off = s.begin; off < s.end; off += piece) {
        const size_t len = std::min(piece, s.end - off);
        chain(acc(), off, len);
        for (int r = 0; r < n_; ++r) copy(recv(r, off), acc(), len);
      }
      return;
    }
    reduceInto(recv(home, s.begin), s.begin, n, [&](uintptr_t from, size_t off, size_t len) {
      for (int r = 0; r < n_; ++r)
        if (r != home) copy(recv(r, s.begin + off), from, len);
    });
  }

  void reduce(HubSlice s) {
    reduceInto(recv(a_.root, s.begin), s.begin, s.end - s.begin, [](uintptr_t, size_t, size_t) {});
  }

  void broadcast(HubSlice s) {
    for (int r = 0; r < n_; ++r) copy(recv(r, s.begin), send(a_.root, s.begin), s.end - s.begin);
  }

  // Output element j of every rank is input element j mod count of rank
  // j / count: gathered into one of this GPU's ranks, then copied to the
  // others.  In place each rank's own block is its input, which this hub
  // reads before it writes any output there.
  void allGather(HubSlice s) {
    int home = -1;
    for (int r = 0; r < n_ && home < 0; ++r)
      if (a_.ranks[r].hub == hub_) home = r;
    if (home < 0) home = 0;  // a hub with no rank: not made by the executor
    for (size_t j = s.begin; j < s.end;) {
      const int q = static_cast<int>(j / a_.count);
      const size_t blockEnd = std::min(s.end, (static_cast<size_t>(q) + 1) * a_.count);
      copy(recv(home, j), send(q, j - static_cast<size_t>(q) * a_.count), blockEnd - j);
      j = blockEnd;
    }
    for (int r = 0; r < n_; ++r)
      if (r != home) copy(recv(r, s.begin), recv(home, s.begin), s.end - s.begin);
  }

  // Input element j of every rank reduces into output element j mod count
  // of rank j / count.
  void reduceScatter(HubSlice s) {
    for (size_t j = s.begin; j < s.end;) {
      const int r = static_cast<int>(j / a_.count);
      const size_t blockEnd = std::min(s.end, (static_cast<size_t>(r) + 1) * a_.count);
      reduceInto(recv(r, j - static_cast<size_t>(r) * a_.count), j, blockEnd - j, [](uintptr_t, size_t, size_t) {});
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
