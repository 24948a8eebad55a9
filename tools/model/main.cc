// collmodel: the cost model's all-reduce busbw for clusters not at hand
// (paper_table.h): H hosts, one rank each, P ports of R Gb/s per host, a
// stated alpha per hop.  The tuner's channels and slot come from the
// settings in force (COLL_NCHANNELS, COLL_SHM_SLOT_SIZE), as in a real run.
//
//   collmodel [--hosts 8,16,32,64] [--ports 1,2] [--rate 400] [--alpha 5e-6]
//             [--efficiency 0.92] [--sizes 1M,64M,1G] [--algos ring,tree] [--detail]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll/base/env.h"
#include "coll/base/settings.h"
#include "coll/transport.h"
#include "paper_table.h"

namespace {

using coll::model::PaperSpec;

const char* kUsage =
    "usage: collmodel [--hosts LIST] [--ports LIST] [--rate GBPS] [--alpha SECONDS] [--efficiency F]\n"
    "                 [--sizes LIST] [--algos ring,tree] [--detail]\n"
    "  the alpha-beta model's all-reduce busbw, one rank per host, each host's ports one link of\n"
    "  ports x rate x efficiency; channels and chunks as the tuner picks them (COLL_NCHANNELS,\n"
    "  COLL_SHM_SLOT_SIZE); the defaults of alpha and efficiency are the IB transport's stated cost\n"
    "  (transports/ib/ib_transport.cc, IbTransport::cost)\n"
    "  --hosts LIST     host counts (default 8,16,32,64)\n"
    "  --ports LIST     ports per host (default 1,2)\n"
    "  --rate GBPS      one port's rate in Gb/s (default 400)\n"
    "  --alpha SECONDS  seconds per hop (default 5e-6)\n"
    "  --efficiency F   the share of the rate beta prices, in (0, 1] (default 0.92)\n"
    "  --sizes LIST     all-reduce sizes, K/M/G suffixes (default 1M,64M,1G)\n"
    "  --algos LIST     ring, tree (default both)\n"
    "  --detail         also one line per cell: channels, chunks, the alpha and beta terms\n";

bool parseInts(const char* text, std::vector<int>* out) {
  out->clear();
  std::string s(text);
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = std::min(s.find(',', pos), s.size());
    auto v = coll::env::parseInt("list", s.substr(pos, end - pos), 1, 1 << 20);
    if (!v.isOk()) return false;
    out->push_back(static_cast<int>(v.value()));
    pos = end + 1;
  }
  return !out->empty();
}

bool parseSizes(const char* text, std::vector<size_t>* out) {
  out->clear();
  std::string s(text);
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = std::min(s.find(',', pos), s.size());
    auto v = coll::env::parseSize("--sizes", s.substr(pos, end - pos));
    if (!v.isOk()) return false;
    out->push_back(v.value());
    pos = end + 1;
  }
  return !out->empty();
}

bool parseAlgos(const char* text, std::vector<coll::sched::Algo>* out) {
  out->clear();
  std::string s(text);
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = std::min(s.find(',', pos), s.size());
    const std::string name = s.substr(pos, end - pos);
    if (name == "ring") {
      out->push_back(coll::sched::Algo::Ring);
    } else if (name == "tree") {
      out->push_back(coll::sched::Algo::Tree);
    } else {
      return false;
    }
    pos = end + 1;
  }
  return !out->empty();
}

bool parseDouble(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0';
}

int bad(const char* flag, const char* value) {
  std::fprintf(stderr, "collmodel: bad value for %s: '%s'\n%s", flag, value, kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  PaperSpec spec;
  spec.hosts = {8, 16, 32, 64};
  spec.ports = {1, 2};
  spec.rateGbps = 400;
  // The IB transport's stated cost (IbTransport::cost): a copy, kept in
  // step by hand, since that cost needs open NICs to be asked.
  spec.alpha = 5e-6;
  spec.efficiency = 0.92;
  spec.sizes = {size_t{1} << 20, size_t{64} << 20, size_t{1} << 30};
  spec.algos = {coll::sched::Algo::Ring, coll::sched::Algo::Tree};
  bool detail = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (std::strcmp(a, "--detail") == 0) {
      detail = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "collmodel: %s needs a value (or is unknown)\n%s", a, kUsage);
      return 2;
    }
    const char* v = argv[++i];
    bool ok = false;
    if (std::strcmp(a, "--hosts") == 0) ok = parseInts(v, &spec.hosts);
    else if (std::strcmp(a, "--ports") == 0) ok = parseInts(v, &spec.ports);
    else if (std::strcmp(a, "--rate") == 0) ok = parseDouble(v, &spec.rateGbps) && spec.rateGbps > 0;
    else if (std::strcmp(a, "--alpha") == 0) ok = parseDouble(v, &spec.alpha) && spec.alpha >= 0;
    else if (std::strcmp(a, "--efficiency") == 0)
      ok = parseDouble(v, &spec.efficiency) && spec.efficiency > 0 && spec.efficiency <= 1;
    else if (std::strcmp(a, "--sizes") == 0) ok = parseSizes(v, &spec.sizes);
    else if (std::strcmp(a, "--algos") == 0) ok = parseAlgos(v, &spec.algos);
    else {
      std::fprintf(stderr, "collmodel: unknown option %s\n%s", a, kUsage);
      return 2;
    }
    if (!ok) return bad(a, v);
  }
  auto channels = coll::settings::intOr("COLL_NCHANNELS");
  auto slot = coll::settings::bytesOr("COLL_SHM_SLOT_SIZE");
  for (const coll::Status& s : {channels.status(), slot.status()}) {
    if (!s.isOk()) {
      std::fprintf(stderr, "collmodel: %s\n", s.message().c_str());
      return 2;
    }
  }
  spec.maxChannels = static_cast<int>(channels.value());
  spec.slotPayloadBytes = slot.value() - coll::transport::kSlotHeaderBytes;
  auto rows = coll::model::paperRows(spec);
  if (!rows.isOk()) {
    std::fprintf(stderr, "collmodel: %s\n", rows.status().message().c_str());
    return 2;
  }
  std::printf("# all-reduce, float, one rank per host; alpha %g s per hop; a port %g Gb/s = %g GB/s, beta at %g of it;\n"
              "# %d channels at most (COLL_NCHANNELS), slot payload %zu B (COLL_SHM_SLOT_SIZE less %zu B header);\n"
              "# busbw = S/t x 2(N-1)/N; %% = busbw against the host's ports (ports x rate / 8)\n",
              spec.alpha, spec.rateGbps, spec.rateGbps / 8, spec.efficiency, spec.maxChannels, spec.slotPayloadBytes,
              static_cast<size_t>(coll::transport::kSlotHeaderBytes));
  std::fputs(coll::model::paperMarkdown(spec, rows.value()).c_str(), stdout);
  if (detail) std::fputs(("\n" + coll::model::paperDetail(rows.value())).c_str(), stdout);
  return 0;
}
