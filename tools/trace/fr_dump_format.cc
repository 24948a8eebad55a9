// formatDump: the structs back in the file format (fr_dump.h).
#include <fmt/format.h>

#include "fr_dump.h"
#include "json_line.h"

namespace coll::trace {

std::string formatDump(const FrDump& dump) {
  const FrHeader& h = dump.header;
  std::string out = fmt::format(
      "{{\"type\":\"header\",\"version\":{},\"comm\":{},\"rank\":{},\"nranks\":{},\"host\":{},\"pid\":{},"
      "\"reason\":{},\"message\":{},\"time_ns\":{},\"entries\":{},\"recorded\":{}}}\n",
      h.version, jsonQuote(h.comm), h.rank, h.nranks, jsonQuote(h.host), h.pid, jsonQuote(h.reason),
      jsonQuote(h.message), h.timeNs, h.entries, h.recorded);
  for (const FrCall& c : dump.calls) {
    out += fmt::format(
        "{{\"type\":\"call\",\"seq\":{},\"coll_seq\":{},\"p2p_seq\":{},\"op\":\"{}\",\"count\":{},\"dtype\":{},"
        "\"redop\":{},\"root\":{},\"buffer\":{},\"algo\":{},\"channels\":{},\"state\":\"{}\",\"t_enqueue_ns\":{},"
        "\"t_start_ns\":{},\"t_end_ns\":{},\"wait_peer\":{},\"wait_step\":{},\"nsteps\":{},\"wait_what\":{},"
        "\"error\":{}}}\n",
        c.seq, c.collSeq, c.p2pSeq, frOpName(c.op), c.count, jsonQuote(c.dtype), jsonQuote(c.redop), c.root,
        jsonQuote(c.buffer), jsonQuote(c.algo), c.channels, frStateName(c.state), c.tEnqueueNs, c.tStartNs,
        c.tEndNs, c.waitPeer, c.waitStep, c.nsteps, jsonQuote(c.waitWhat), jsonQuote(c.error));
  }
  return out;
}

}  // namespace coll::trace
