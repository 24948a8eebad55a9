// paper_table.h — the cost model's busbw for clusters not at hand: an
// all-reduce across H hosts, one rank per host, each host's P network ports
// taken as one link of P x rate x efficiency (as the IB transport states
// its rails, transports/ib), priced by the tuner as it would price the
// call (its channels and chunks, tuner/tuner.h; the algorithm forced as
// COLL_ALGO forces it).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coll/base/status.h"
#include "schedule/schedules.h"

namespace coll::model {

struct PaperSpec {
  std::vector<int> hosts;
  std::vector<int> ports;          // per host
  double rateGbps = 0;             // one port's data rate, Gb/s
  double efficiency = 1;           // the share of it beta prices (headers, protocol traffic)
  double alpha = 0;                // s per hop (an assumption: no IB transport measured yet)
  std::vector<size_t> sizes;       // all-reduce bytes, nccl-tests' size column
  std::vector<sched::Algo> algos;  // Ring, Tree
  int maxChannels = 0;             // COLL_NCHANNELS
  size_t slotPayloadBytes = 0;     // COLL_SHM_SLOT_SIZE less the slot header
  size_t elemBytes = 4;            // float, the perf tools' default
};

struct PaperRow {
  int hosts = 0;
  int ports = 0;
  sched::Algo algo = sched::Algo::Ring;
  size_t bytes = 0;
  int channels = 0;
  size_t chunkBytes = 0;
  size_t chunks = 0;          // per channel (ring: loops)
  double alphaSeconds = 0;    // hops x alpha
  double betaSeconds = 0;     // byte term x beta
  double seconds = 0;         // the prediction
  double busbwGBps = 0;       // nccl-tests' busbw: S / t x 2(N-1)/N
  double portShare = 0;       // busbw / (ports x rate / 8)
};

// Every hosts x ports x algos x sizes cell, in that order.  Errors: an empty
// or non-positive input, an algorithm the all-reduce lacks, a tuner that
// refuses the settings in force (COLL_NCHANNELS, COLL_CHUNK_SIZE).
Result<std::vector<PaperRow>> paperRows(const PaperSpec& spec);

// A markdown table: one row per hosts x ports x algorithm, one column per
// size, each cell "busbw GB/s (share of the ports' rate)".
std::string paperMarkdown(const PaperSpec& spec, const std::vector<PaperRow>& rows);

// One line per cell with the tuner's channels and chunks and the two terms.
std::string paperDetail(const std::vector<PaperRow>& rows);

}  // namespace coll::model
