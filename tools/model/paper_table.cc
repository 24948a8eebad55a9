#include "paper_table.h"

#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "tuner/tuner.h"

namespace coll::model {
namespace {

std::string sizeText(size_t b) {
  if (b >= (size_t{1} << 30) && b % (size_t{1} << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (size_t{1} << 20) && b % (size_t{1} << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (size_t{1} << 10) && b % (size_t{1} << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// The tuner takes a forced algorithm only from COLL_ALGO (Tuner::create),
// so it is set for the call and the caller's value put back.
Result<tune::Tuner> forcedTuner(sched::Algo a, const tune::TunerInputs& in) {
  const char* old = std::getenv("COLL_ALGO");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("COLL_ALGO", fmt::format("allreduce:{}", sched::algoName(a)).c_str(), 1);
  auto t = tune::Tuner::create(in);
  if (saved)
    setenv("COLL_ALGO", saved->c_str(), 1);
  else
    unsetenv("COLL_ALGO");
  return t;
}

Status checkSpec(const PaperSpec& s) {
  if (s.hosts.empty() || s.ports.empty() || s.sizes.empty() || s.algos.empty())
    return makeError(collInvalidArgument, "hosts, ports, sizes and algorithms must each name at least one");
  for (int h : s.hosts)
    if (h < 2) return makeError(collInvalidArgument, "hosts must be at least 2 (got {})", h);
  for (int p : s.ports)
    if (p < 1) return makeError(collInvalidArgument, "ports must be at least 1 (got {})", p);
  for (size_t b : s.sizes)
    if (b < s.elemBytes) return makeError(collInvalidArgument, "size {} B is less than one element", b);
  for (sched::Algo a : s.algos)
    if (!sched::algoSupports(sched::CollKind::AllReduce, a))
      return makeError(collInvalidArgument, "the all-reduce has no {} algorithm", sched::algoName(a));
  if (!(s.rateGbps > 0) || !(s.alpha >= 0) || s.maxChannels < 1 || s.slotPayloadBytes < s.elemBytes)
    return makeError(collInvalidArgument, "rate, channels and slot must be positive, alpha not negative");
  if (!(s.efficiency > 0 && s.efficiency <= 1))
    return makeError(collInvalidArgument, "efficiency must be in (0, 1] (got {})", s.efficiency);
  return Status();
}

}  // namespace

Result<std::vector<PaperRow>> paperRows(const PaperSpec& spec) {
  COLL_CHECK(checkSpec(spec));
  std::vector<PaperRow> rows;
  for (int h : spec.hosts) {
    for (int p : spec.ports) {
      tune::TunerInputs in;
      in.nranks = h;
      in.maxChannels = spec.maxChannels;
      in.slotPayloadBytes = spec.slotPayloadBytes;
      const double portsBytesPerSec = p * spec.rateGbps * 1e9 / 8;
      in.cost = sched::LinkCost{spec.alpha, 1 / (portsBytesPerSec * spec.efficiency), 0};
      in.costSource = "collmodel";
      in.allLocal = false;  // every rank on its own host
      in.transport = "ib";
      for (sched::Algo a : spec.algos) {
        auto tuner = forcedTuner(a, in);
        COLL_CHECK(tuner.status());
        for (size_t bytes : spec.sizes) {
          const tune::Decision d = tuner.value().choose(sched::CollKind::AllReduce, bytes / spec.elemBytes, spec.elemBytes);
          PaperRow r;
          r.hosts = h;
          r.ports = p;
          r.algo = d.algo;
          r.bytes = bytes;
          r.channels = d.chunking.nchannels;
          r.chunkBytes = d.chunking.chunkElems * spec.elemBytes;
          r.chunks = d.terms.chunks;
          r.alphaSeconds = d.terms.hops * in.cost.alpha;
          r.betaSeconds = d.terms.byteTerm * in.cost.beta;
          r.seconds = d.predictedSeconds;
          const double busFactor = 2.0 * (h - 1) / h;
          r.busbwGBps = r.seconds > 0 ? static_cast<double>(bytes) / r.seconds * busFactor / 1e9 : 0;
          r.portShare = r.busbwGBps * 1e9 / portsBytesPerSec;
          rows.push_back(r);
        }
      }
    }
  }
  return rows;
}

std::string paperMarkdown(const PaperSpec& spec, const std::vector<PaperRow>& rows) {
  std::string out = "| hosts | ports | algorithm |";
  std::string rule = "|---|---|---|";
  for (size_t b : spec.sizes) {
    out += " " + sizeText(b) + " |";
    rule += "---|";
  }
  out += "\n" + rule + "\n";
  const size_t perLine = spec.sizes.size();
  for (size_t i = 0; i + perLine <= rows.size(); i += perLine) {
    const PaperRow& first = rows[i];
    out += fmt::format("| {} | {} x {:g} Gb/s | {} |", first.hosts, first.ports, spec.rateGbps,
                       sched::algoName(first.algo));
    for (size_t j = 0; j < perLine; ++j)
      out += fmt::format(" {:.1f} GB/s ({:.0f}%) |", rows[i + j].busbwGBps, 100 * rows[i + j].portShare);
    out += "\n";
  }
  return out;
}

std::string paperDetail(const std::vector<PaperRow>& rows) {
  std::string out = fmt::format("{:>5} {:>5} {:>5} {:>8} {:>3} {:>9} {:>7} {:>11} {:>11} {:>11} {:>9} {:>6}\n", "hosts",
                                "ports", "algo", "size", "ch", "chunk", "chunks", "alpha(us)", "beta(us)", "pred(us)",
                                "busbw", "share");
  for (const PaperRow& r : rows)
    out += fmt::format("{:>5} {:>5} {:>5} {:>8} {:>3} {:>9} {:>7} {:>11.1f} {:>11.1f} {:>11.1f} {:>9.2f} {:>5.0f}%\n",
                       r.hosts, r.ports, sched::algoName(r.algo), sizeText(r.bytes), r.channels,
                       sizeText(r.chunkBytes), r.chunks, r.alphaSeconds * 1e6, r.betaSeconds * 1e6, r.seconds * 1e6,
                       r.busbwGBps, 100 * r.portShare);
  return out;
}

}  // namespace coll::model
