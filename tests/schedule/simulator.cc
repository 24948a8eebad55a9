// simulator.cc — the engine: runs every rank's schedule in rounds over
// in-memory FIFOs and checks each step (see simulator.h).  Job layouts and
// descriptions live in sim_job.cc.
#include "simulator.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <sstream>

namespace coll::simtest {

using sched::Buf;
using sched::CollKind;
using sched::Step;
using sched::StepKind;

template <class T>
bool SimResult<T>::has(ErrorKind k) const {
  return std::any_of(errors.begin(), errors.end(), [k](const SimError& e) { return e.kind == k; });
}

template <class T>
std::string SimResult<T>::summary() const {
  std::string s;
  for (const auto& e : errors) s += std::string(errorKindName(e.kind)) + ": " + e.message + "\n";
  return s;
}

namespace {

constexpr uint8_t kWritten = 1;
constexpr uint8_t kFinal = 2;

template <class T> struct Arith;
template <> struct Arith<double> {
  static double add(double a, double b) { return a + b; }
  static double pre(double x, const SimOptions& o) { return x * o.preF64; }
  static double post(double x, int n, const SimOptions& o) { return o.avgF64 ? x / n : x; }
  static double garbage() { return -1.2345e300; }
};
template <> struct Arith<uint64_t> {
  static uint64_t add(uint64_t a, uint64_t b) { return a + b; }
  static uint64_t pre(uint64_t x, const SimOptions& o) { return x * o.preU64; }
  static uint64_t post(uint64_t x, int, const SimOptions& o) { return x * o.postU64; }
  static uint64_t garbage() { return 0xdeadbeefdeadbeefULL; }
};

template <class T>
struct Store {
  std::vector<T> v;
  std::vector<uint8_t> tag;
};

template <class T>
struct View {
  Store<T>* store = nullptr;
  size_t base = 0;
  size_t size = 0;
};

template <class T>
struct Msg {
  std::vector<T> v;
  std::vector<uint8_t> fin;
  size_t sentRound = 0;
  int rank = 0, ch = 0;
  size_t step = 0;
};

template <class T>
struct Fifo {
  std::deque<Msg<T>> q;
  size_t consumedRound = SIZE_MAX;  // slots freed in this round are usable next round
  size_t consumedCount = 0;
};

template <class T>
class Sim {
 public:
  Sim(const JobSpec& job, const std::vector<std::vector<T>>& inputs, const SimOptions& opt)
      : job_(job), inputs_(inputs), opt_(opt), N_(job.nranks) {}

  SimResult<T> run();

 private:
  bool error(ErrorKind k, std::string msg) {
    if (res_.errors.size() < opt_.maxErrors) res_.errors.push_back({k, std::move(msg)});
    return false;
  }
  std::string where(int r, int ch, size_t i) const {
    const Step& s = steps(r, ch)[i];
    return "rank " + std::to_string(r) + " ch " + std::to_string(ch) + " step " +
           std::to_string(i) + " " + describeStep(s);
  }
  const std::vector<Step>& steps(int r, int ch) const {
    static const std::vector<Step> kNone;
    const auto& chans = job_.schedules[static_cast<size_t>(r)].channels;
    return static_cast<size_t>(ch) < chans.size() ? chans[static_cast<size_t>(ch)].steps : kNone;
  }
  Fifo<T>& fifo(int ch, int from, int to) {
    return fifos_[(static_cast<size_t>(ch) * static_cast<size_t>(N_) + static_cast<size_t>(from)) *
                      static_cast<size_t>(N_) +
                  static_cast<size_t>(to)];
  }
  const View<T>& view(int r, Buf b) const {
    const size_t i = static_cast<size_t>(r);
    return b == Buf::Input ? in_[i] : b == Buf::Output ? out_[i] : scratch_[i];
  }
  bool validate();
  void setup();
  bool tryStep(int r, int ch, size_t i, size_t round);
  void reportDeadlock(const std::vector<size_t>& pc, size_t round);
  void finalChecks();

  const JobSpec& job_;
  const std::vector<std::vector<T>>& inputs_;
  const SimOptions& opt_;
  const int N_;
  int nch_ = 0;
  SimResult<T> res_;
  std::vector<Fifo<T>> fifos_;
  std::vector<Store<T>> storeIn_, storeOut_, storeScratch_;
  std::vector<View<T>> in_, out_, scratch_;
  std::vector<size_t> sentElems_;
  bool fatal_ = false;
  // Received messages' buffers, reused for the next ones sent: one
  // allocation per step was a fifth of the main grid's time (chunk 1).
  std::vector<std::vector<T>> freeValues_;
  std::vector<std::vector<uint8_t>> freeFinal_;
  template <class V>
  static V reuse(std::vector<V>& pool, size_t n) {
    V v;
    if (!pool.empty()) {
      v = std::move(pool.back());
      pool.pop_back();
    }
    v.assign(n, typename V::value_type{});
    return v;
  }
};

template <class T>
bool Sim<T>::validate() {
  bool ok = true;
  auto bad = [&](ErrorKind k, const std::string& m) { ok = error(k, m); };
  if (job_.schedules.size() != static_cast<size_t>(N_) ||
      job_.ranks.size() != static_cast<size_t>(N_)) {
    bad(ErrorKind::InvalidStep, "job has " + std::to_string(job_.schedules.size()) +
                                    " schedules and " + std::to_string(job_.ranks.size()) +
                                    " layouts for " + std::to_string(N_) + " ranks");
    return false;
  }
  for (int r = 0; r < N_; ++r) {
    const RankLayout& L = job_.ranks[static_cast<size_t>(r)];
    for (int ch = 0; ch < nch_; ++ch) {
      const auto& st = steps(r, ch);
      for (size_t i = 0; i < st.size(); ++i) {
        const Step& s = st[i];
        auto w = [&] { return where(r, ch, i); };  // built only for an error
        if (s.count == 0) bad(ErrorKind::InvalidStep, w() + ": zero count");
        if (sched::stepReceives(s.kind) != (s.recvPeer >= 0) || s.recvPeer >= N_)
          bad(ErrorKind::InvalidStep, w() + ": bad recvPeer");
        if (sched::stepSends(s.kind) != (s.sendPeer >= 0) || s.sendPeer >= N_)
          bad(ErrorKind::InvalidStep, w() + ": bad sendPeer");
        if (s.final && !job_.reducing)
          bad(ErrorKind::InvalidStep, w() + ": final step in a non-reducing collective");
        const size_t scratch = job_.schedules[static_cast<size_t>(r)].scratchElems;
        auto size = [&](Buf b) { return b == Buf::Input ? L.inCount : b == Buf::Output ? L.outCount : scratch; };
        if (sched::stepReadsSrc(s.kind) && (s.srcOff > size(s.src) || s.count > size(s.src) - s.srcOff))
          bad(ErrorKind::InvalidStep, w() + ": reads past " + sched::bufName(s.src) + " (" +
                                          std::to_string(size(s.src)) + " elements)");
        if (sched::stepWritesDst(s.kind)) {
          if (s.dst == Buf::Scratch) {
            if (s.dstOff > scratch || s.count > scratch - s.dstOff)
              bad(ErrorKind::InvalidStep, w() + ": writes past Scratch (" + std::to_string(scratch) + " elements)");
          } else if (s.dst == Buf::Input) {
            bad(ErrorKind::InvalidStep, w() + ": writes Input (the user's send buffer)");
          } else if (L.outputForbidden) {
            bad(ErrorKind::InvalidStep, w() + ": writes Output on a rank that must not (non-root)");
          } else if (s.dstOff > L.outCount || s.count > L.outCount - s.dstOff) {
            bad(ErrorKind::InvalidStep, w() + ": writes past Output (" +
                                            std::to_string(L.outCount) + " elements)");
          }
        }
      }
    }
  }
  return ok;
}

template <class T>
void Sim<T>::setup() {
  const size_t n = static_cast<size_t>(N_);
  fifos_.resize(static_cast<size_t>(nch_) * n * n);
  storeIn_.resize(n);
  storeOut_.resize(n);
  in_.resize(n);
  out_.resize(n);
  storeScratch_.resize(n);
  scratch_.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const RankLayout& L = job_.ranks[r];
    Store<T>& so = storeOut_[r];
    Store<T>& si = L.alias ? so : storeIn_[r];
    const size_t outSize = L.alias ? std::max(L.inBase + L.inCount, L.outBase + L.outCount) : L.outCount;
    so.v.assign(outSize, Arith<T>::garbage());
    so.tag.assign(outSize, 0);
    if (!L.alias) {
      si.v.assign(L.inCount, Arith<T>::garbage());
      si.tag.assign(L.inCount, 0);
    }
    in_[r] = View<T>{&si, L.alias ? L.inBase : 0, L.inCount};
    out_[r] = View<T>{&so, L.alias ? L.outBase : 0, L.outCount};
    for (size_t i = 0; i < L.inCount && i < inputs_[r].size(); ++i) si.v[in_[r].base + i] = inputs_[r][i];
    const size_t scratch = job_.schedules[r].scratchElems;
    storeScratch_[r].v.assign(scratch, Arith<T>::garbage());
    storeScratch_[r].tag.assign(scratch, 0);
    scratch_[r] = View<T>{&storeScratch_[r], 0, scratch};
  }
}

template <class T>
bool Sim<T>::tryStep(int r, int ch, size_t idx, size_t round) {
  const Step& s = steps(r, ch)[idx];
  Fifo<T>* inF = nullptr;
  Fifo<T>* outF = nullptr;
  if (sched::stepReceives(s.kind)) {
    inF = &fifo(ch, s.recvPeer, r);
    if (inF->q.empty() || inF->q.front().sentRound >= round) return false;
  }
  if (sched::stepSends(s.kind)) {
    outF = &fifo(ch, r, s.sendPeer);
    if (opt_.fifoDepth != 0) {
      const size_t used = outF->q.size() + (outF->consumedRound == round ? outF->consumedCount : 0);
      if (used >= opt_.fifoDepth) return false;
    }
  }
  const size_t n = s.count;
  Msg<T> wire;
  if (inF) {
    wire = std::move(inF->q.front());
    inF->q.pop_front();
    if (inF->consumedRound != round) {
      inF->consumedRound = round;
      inF->consumedCount = 0;
    }
    ++inF->consumedCount;
    if (wire.v.size() != n) {
      error(ErrorKind::CountMismatch,
            where(r, ch, idx) + " receives a message of " + std::to_string(wire.v.size()) +
                " elements sent by " + where(wire.rank, wire.ch, wire.step));
      fatal_ = true;
      return true;
    }
  }

  const bool reduces = s.kind == StepKind::RecvReduceSend || s.kind == StepKind::RecvReduceCopy ||
                       s.kind == StepKind::RecvReduceCopySend || s.kind == StepKind::LocalReduce;
  const bool readsSrc = sched::stepReadsSrc(s.kind);
  const View<T>* src = readsSrc ? &view(r, s.src) : nullptr;
  const View<T>& dst = view(r, s.dst);
  const bool pre = readsSrc && s.src == Buf::Input && job_.reducing;
  const RankLayout& L = job_.ranks[static_cast<size_t>(r)];
  const auto& pristine = inputs_[static_cast<size_t>(r)];

  std::vector<T> res = reuse(freeValues_, n);
  std::vector<uint8_t> fin = reuse(freeFinal_, n);
  bool hazard = false, unwritten = false, reducedFinal = false, doubleFinal = false;
  for (size_t i = 0; i < n; ++i) {
    T a{};
    bool aFin = false;
    if (readsSrc) {
      const size_t at = src->base + s.srcOff + i;
      a = src->store->v[at];
      const uint8_t tg = src->store->tag[at];
      if (s.src != Buf::Input && !(tg & kWritten)) unwritten = true;
      if (s.src == Buf::Input && L.alias && (tg & kWritten) &&
          (s.srcOff + i >= pristine.size() || !sameBits(a, pristine[s.srcOff + i])))
        hazard = true;
      aFin = (tg & kFinal) != 0 && s.src != Buf::Input;
      if (pre) a = Arith<T>::pre(a, opt_);
    }
    T v{};
    bool vFin = false;
    switch (s.kind) {
      case StepKind::Send:
      case StepKind::Copy:
        v = a;
        vFin = aFin;
        break;
      case StepKind::Recv:
      case StepKind::RecvCopySend:
        v = wire.v[i];
        vFin = wire.fin[i];
        break;
      case StepKind::RecvReduceSend:
      case StepKind::RecvReduceCopy:
      case StepKind::RecvReduceCopySend:
        v = Arith<T>::add(wire.v[i], a);
        if (wire.fin[i] || aFin) reducedFinal = true;
        break;
      case StepKind::LocalReduce: {
        const size_t at = dst.base + s.dstOff + i;
        const uint8_t tg = dst.store->tag[at];
        if (!(tg & kWritten)) unwritten = true;
        if (tg & kFinal) reducedFinal = true;
        v = Arith<T>::add(dst.store->v[at], a);
        if (aFin) reducedFinal = true;
        break;
      }
    }
    if (s.final) {
      if (vFin) doubleFinal = true;
      v = Arith<T>::post(v, N_, opt_);
      vFin = true;
    } else if (reduces) {
      vFin = false;
    }
    res[i] = v;
    fin[i] = vFin;
  }
  const std::string w = hazard || unwritten || reducedFinal || doubleFinal ? where(r, ch, idx) : "";
  if (hazard) error(ErrorKind::InPlaceHazard, w + " reads Input that an Output write already overwrote");
  if (unwritten) error(ErrorKind::ReadsUnwritten, w + " reads Output or Scratch elements never written");
  if (reducedFinal) error(ErrorKind::ReducedFinal, w + " combines a finished (post-op'd) value");
  if (doubleFinal) error(ErrorKind::DoubleFinal, w + " is final on an already finished value");

  if (sched::stepWritesDst(s.kind)) {
    for (size_t i = 0; i < n; ++i) {
      const size_t at = dst.base + s.dstOff + i;
      dst.store->v[at] = res[i];
      dst.store->tag[at] = static_cast<uint8_t>(kWritten | (fin[i] ? kFinal : 0));
    }
  }
  if (outF) {
    res_.messages++;
    auto& sent = sentElems_[static_cast<size_t>(r)];
    sent += n;
    outF->q.push_back(Msg<T>{std::move(res), std::move(fin), round, r, ch, idx});
  } else {
    freeValues_.push_back(std::move(res));
    freeFinal_.push_back(std::move(fin));
  }
  if (inF) {
    freeValues_.push_back(std::move(wire.v));
    freeFinal_.push_back(std::move(wire.fin));
  }
  res_.steps++;
  return true;
}

template <class T>
void Sim<T>::reportDeadlock(const std::vector<size_t>& pc, size_t round) {
  std::string m = "no rank can progress in round " + std::to_string(round) + ":";
  size_t shown = 0;
  for (int r = 0; r < N_; ++r)
    for (int ch = 0; ch < nch_; ++ch) {
      const size_t i = pc[static_cast<size_t>(r) * static_cast<size_t>(nch_) + static_cast<size_t>(ch)];
      const auto& st = steps(r, ch);
      if (i >= st.size()) continue;
      if (++shown > 24) continue;
      const Step& s = st[i];
      m += "\n  " + where(r, ch, i) + " of " + std::to_string(st.size()) + ": waits for ";
      if (sched::stepReceives(s.kind) && fifo(ch, s.recvPeer, r).q.empty())
        m += "a message from rank " + std::to_string(s.recvPeer) + " (link empty)";
      else
        m += "a free slot on the link to rank " + std::to_string(s.sendPeer) + " (" +
             std::to_string(fifo(ch, r, s.sendPeer).q.size()) + " of " +
             std::to_string(opt_.fifoDepth) + " in use)";
    }
  if (shown > 24) m += "\n  ... " + std::to_string(shown - 24) + " more blocked";
  error(ErrorKind::Deadlock, m);
}

template <class T>
void Sim<T>::finalChecks() {
  for (int ch = 0; ch < nch_; ++ch)
    for (int a = 0; a < N_; ++a)
      for (int b = 0; b < N_; ++b) {
        const Fifo<T>& f = fifo(ch, a, b);
        if (f.q.empty()) continue;
        const Msg<T>& m = f.q.front();
        error(ErrorKind::UnmatchedSend,
              "link ch " + std::to_string(ch) + " " + std::to_string(a) + " -> " +
                  std::to_string(b) + ": " + std::to_string(f.q.size()) +
                  " message(s) never received, the first sent by " + where(m.rank, m.ch, m.step));
      }
  for (int r = 0; r < N_; ++r) {
    const RankLayout& L = job_.ranks[static_cast<size_t>(r)];
    const View<T>& o = out_[static_cast<size_t>(r)];
    if (!L.outputExpected) continue;
    size_t unwritten = 0, nonFinal = 0, firstU = 0, firstN = 0;
    for (size_t i = 0; i < o.size; ++i) {
      const uint8_t tg = o.store->tag[o.base + i];
      if (!(tg & kWritten)) {
        if (unwritten++ == 0) firstU = i;
      } else if (job_.reducing && !(tg & kFinal)) {
        if (nonFinal++ == 0) firstN = i;
      }
    }
    if (unwritten)
      error(ErrorKind::UnwrittenOutput, "rank " + std::to_string(r) + ": " +
                                            std::to_string(unwritten) +
                                            " Output element(s) never written, first at " +
                                            std::to_string(firstU));
    if (nonFinal)
      error(ErrorKind::NonFinalOutput, "rank " + std::to_string(r) + ": " +
                                           std::to_string(nonFinal) +
                                           " Output element(s) end with a non-final value, first at " +
                                           std::to_string(firstN));
  }
  if (job_.outputsIdentical) {
    for (int r = 1; r < N_; ++r) {
      const auto& a = res_.outputs[0];
      const auto& b = res_.outputs[static_cast<size_t>(r)];
      for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (!sameBits(a[i], b[i])) {
          error(ErrorKind::NotBitIdentical, "Output[" + std::to_string(i) + "] of rank " +
                                                std::to_string(r) + " differs from rank 0's");
          break;
        }
    }
  }
}

template <class T>
SimResult<T> Sim<T>::run() {
  for (const auto& s : job_.schedules) nch_ = std::max(nch_, static_cast<int>(s.channels.size()));
  if (!validate()) return std::move(res_);
  setup();
  sentElems_.assign(static_cast<size_t>(N_), 0);
  const size_t nch = static_cast<size_t>(nch_);
  std::vector<size_t> pc(static_cast<size_t>(N_) * nch, 0);
  // Work list: (rank, channel) cursors with steps left.
  std::vector<size_t> live;
  for (size_t i = 0; i < pc.size(); ++i)
    if (!steps(static_cast<int>(i / nch), static_cast<int>(i % nch)).empty()) live.push_back(i);
  size_t round = 0;
  while (!live.empty() && !fatal_) {
    bool progressed = false;
    for (size_t j = 0; j < live.size() && !fatal_; ++j) {
      const size_t c = live[j];
      const int r = static_cast<int>(c / nch), ch = static_cast<int>(c % nch);
      if (tryStep(r, ch, pc[c], round)) {
        progressed = true;
        ++pc[c];
      }
    }
    if (fatal_) break;
    if (!progressed) {
      reportDeadlock(pc, round);
      break;
    }
    ++round;
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](size_t c) {
                                return pc[c] >= steps(static_cast<int>(c / nch), static_cast<int>(c % nch)).size();
                              }),
               live.end());
  }
  res_.rounds = round;
  for (size_t s : sentElems_) {
    res_.maxElemsSentByRank = std::max(res_.maxElemsSentByRank, s);
    res_.totalElemsSent += s;
  }
  res_.outputs.resize(static_cast<size_t>(N_));
  for (size_t r = 0; r < static_cast<size_t>(N_); ++r) {
    const View<T>& o = out_[r];
    res_.outputs[r].assign(o.store->v.begin() + static_cast<long>(o.base),
                           o.store->v.begin() + static_cast<long>(o.base + o.size));
  }
  if (live.empty() && !fatal_) finalChecks();
  return std::move(res_);
}

}  // namespace

template <class T>
SimResult<T> simulate(const JobSpec& job, const std::vector<std::vector<T>>& inputs,
                      const SimOptions& opt) {
  std::vector<std::vector<T>> padded;
  const std::vector<std::vector<T>>* in = &inputs;
  if (inputs.size() < static_cast<size_t>(job.nranks)) {
    padded = inputs;
    padded.resize(static_cast<size_t>(job.nranks));
    in = &padded;
  }
  Sim<T> sim(job, *in, opt);
  return sim.run();
}

template struct SimResult<double>;
template struct SimResult<uint64_t>;
template SimResult<double> simulate(const JobSpec&, const std::vector<std::vector<double>>&,
                                    const SimOptions&);
template SimResult<uint64_t> simulate(const JobSpec&, const std::vector<std::vector<uint64_t>>&,
                                      const SimOptions&);

}  // namespace coll::simtest
