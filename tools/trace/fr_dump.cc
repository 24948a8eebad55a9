#include "fr_dump.h"

#include <array>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "json_line.h"
#include "trace_try.h"

namespace coll::trace {

namespace {

constexpr std::array<const char*, 7> kOpNames = {"allreduce", "allgather", "broadcast", "reducescatter",
                                                 "reduce",    "send",      "recv"};
constexpr std::array<const char*, 4> kStateNames = {"enqueued", "started", "completed", "failed"};
// Far above any job, low enough that per-rank tables stay small.
constexpr int64_t kMaxRanks = int64_t{1} << 20;

Status bad(const std::string& what) { return Status(collInvalidArgument, what); }

// A known member's destination: a string or an integer.
struct Field {
  const char* name;
  std::string* str = nullptr;
  int64_t* num = nullptr;
  bool seen = false;
};

// Fills the fields from the line's members: each exactly once, of its kind;
// members of other names are ignored.
Status bind(const std::vector<JsonMember>& members, std::vector<Field>& fields) {
  for (const JsonMember& m : members) {
    for (Field& f : fields) {
      if (m.key != f.name) continue;
      if (f.seen) return bad(fmt::format("member \"{}\" appears twice", f.name));
      f.seen = true;
      const JsonKind want = f.str ? JsonKind::String : JsonKind::Int;
      if (m.kind != want)
        return bad(fmt::format("member \"{}\" must be {}, not {}", f.name, jsonKindName(want), jsonKindName(m.kind)));
      if (f.str) {
        *f.str = m.text;
      } else {
        *f.num = m.integer;
      }
      break;
    }
  }
  for (const Field& f : fields)
    if (!f.seen) return bad(fmt::format("member \"{}\" is missing", f.name));
  return Status::ok();
}

Status inRange(const char* name, int64_t v, int64_t lo, int64_t hi, const char* why) {
  if (v < lo || v > hi) return bad(fmt::format("member \"{}\" is {}: {}", name, v, why));
  return Status::ok();
}

template <size_t N>
Status nameToEnum(const char* member, const std::string& text, const std::array<const char*, N>& names, size_t* out) {
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) {
      *out = i;
      return Status::ok();
    }
  }
  std::string known;
  for (const char* n : names) known += (known.empty() ? "" : ", ") + std::string(n);
  return bad(fmt::format("member \"{}\" is {}, not one of {}", member, jsonQuote(text), known));
}

bool isHex16(const std::string& s) {
  if (s.size() != 16) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

Status parseHeader(const std::vector<JsonMember>& members, FrHeader* h) {
  // The version first: another version's header may differ in anything else.
  int64_t version = 0;
  std::vector<Field> v{{"version", nullptr, &version}};
  TRACE_TRY(bind(members, v));
  if (version != kFrVersion)
    return bad(fmt::format("version {}: this reader knows version {} only", version, kFrVersion));
  int64_t rank = 0, nranks = 0;
  std::vector<Field> fields{{"comm", &h->comm},       {"rank", nullptr, &rank},         {"nranks", nullptr, &nranks},
                            {"host", &h->host},       {"pid", nullptr, &h->pid},        {"reason", &h->reason},
                            {"message", &h->message}, {"time_ns", nullptr, &h->timeNs}, {"entries", nullptr, &h->entries},
                            {"recorded", nullptr, &h->recorded}};
  TRACE_TRY(bind(members, fields));
  if (!isHex16(h->comm)) return bad(fmt::format("member \"comm\" is {}, not 16 hex digits", jsonQuote(h->comm)));
  TRACE_TRY(inRange("nranks", nranks, 1, kMaxRanks, "a communicator has 1 to 2^20 ranks"));
  TRACE_TRY(inRange("rank", rank, 0, nranks - 1, "not a rank below nranks"));
  TRACE_TRY(inRange("pid", h->pid, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("time_ns", h->timeNs, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("entries", h->entries, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("recorded", h->recorded, 0, INT64_MAX, "negative"));
  h->rank = static_cast<int>(rank);
  h->nranks = static_cast<int>(nranks);
  return Status::ok();
}

Status parseCall(const std::vector<JsonMember>& members, const FrHeader& h, FrCall* c) {
  std::string op, state;
  int64_t root = 0, channels = 0, waitPeer = 0;
  std::vector<Field> fields{
      {"seq", nullptr, &c->seq},          {"coll_seq", nullptr, &c->collSeq},   {"p2p_seq", nullptr, &c->p2pSeq},
      {"op", &op},                        {"count", nullptr, &c->count},        {"dtype", &c->dtype},
      {"redop", &c->redop},               {"root", nullptr, &root},             {"buffer", &c->buffer},
      {"algo", &c->algo},                 {"channels", nullptr, &channels},     {"state", &state},
      {"t_enqueue_ns", nullptr, &c->tEnqueueNs}, {"t_start_ns", nullptr, &c->tStartNs}, {"t_end_ns", nullptr, &c->tEndNs},
      {"wait_peer", nullptr, &waitPeer},  {"wait_step", nullptr, &c->waitStep}, {"nsteps", nullptr, &c->nsteps},
      {"wait_what", &c->waitWhat},        {"error", &c->error}};
  TRACE_TRY(bind(members, fields));
  size_t opIndex = 0, stateIndex = 0;
  TRACE_TRY(nameToEnum("op", op, kOpNames, &opIndex));
  TRACE_TRY(nameToEnum("state", state, kStateNames, &stateIndex));
  c->op = static_cast<FrOp>(opIndex);
  c->state = static_cast<FrState>(stateIndex);
  const int64_t last = h.nranks - 1;
  TRACE_TRY(inRange("seq", c->seq, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("count", c->count, 0, INT64_MAX, "negative"));
  // Calls on device buffers are not numbered yet (the device path numbers
  // its calls apart): -1 in both, and the analysis leaves them out.
  const bool unnumbered = c->buffer == "device" && c->collSeq == -1 && c->p2pSeq == -1;
  if (unnumbered) {
    if (c->op == FrOp::Broadcast || c->op == FrOp::Reduce || isP2p(c->op))
      TRACE_TRY(inRange("root", root, 0, last, "the root or peer is a rank below nranks"));
    else
      TRACE_TRY(inRange("root", root, -1, -1, "only broadcast, reduce, send and recv have one"));
  } else if (isP2p(c->op)) {
    TRACE_TRY(inRange("coll_seq", c->collSeq, -1, -1, "send/recv have -1"));
    TRACE_TRY(inRange("p2p_seq", c->p2pSeq, 0, INT64_MAX, "send/recv number from 0"));
    TRACE_TRY(inRange("root", root, 0, last, "the peer of a send/recv is a rank below nranks"));
  } else {
    TRACE_TRY(inRange("coll_seq", c->collSeq, 0, INT64_MAX, "collectives number from 0"));
    TRACE_TRY(inRange("p2p_seq", c->p2pSeq, -1, -1, "collectives have -1"));
    if (c->op == FrOp::Broadcast || c->op == FrOp::Reduce) {
      TRACE_TRY(inRange("root", root, 0, last, "the root is a rank below nranks"));
    } else {
      TRACE_TRY(inRange("root", root, -1, -1, "only broadcast, reduce, send and recv have one"));
    }
  }
  TRACE_TRY(inRange("channels", channels, 0, INT32_MAX, "not a channel count"));
  TRACE_TRY(inRange("wait_peer", waitPeer, -1, last, "neither -1 nor a rank below nranks"));
  TRACE_TRY(inRange("wait_step", c->waitStep, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("nsteps", c->nsteps, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("t_enqueue_ns", c->tEnqueueNs, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("t_start_ns", c->tStartNs, 0, INT64_MAX, "negative"));
  TRACE_TRY(inRange("t_end_ns", c->tEndNs, 0, INT64_MAX, "negative"));
  c->root = static_cast<int>(root);
  c->channels = static_cast<int>(channels);
  c->waitPeer = static_cast<int>(waitPeer);
  return Status::ok();
}

// What the ring's order promises across lines.
class Order {
 public:
  Status check(const FrHeader& h, const FrCall& c, size_t held) {
    if (static_cast<int64_t>(held) >= h.entries)
      return bad(fmt::format("more calls than the ring holds (\"entries\" is {})", h.entries));
    if (c.seq >= h.recorded)
      return bad(fmt::format("seq {}, but the header says {} calls were recorded", c.seq, h.recorded));
    // Gaps are allowed: the writer skips an entry it caught being rewritten.
    if (held > 0 && c.seq <= lastSeq_)
      return bad(fmt::format("seq {} after seq {}: the ring holds calls oldest first", c.seq, lastSeq_));
    lastSeq_ = c.seq;
    if (c.collSeq == -1 && c.p2pSeq == -1) return Status::ok();  // unnumbered (device buffers)
    if (!isP2p(c.op)) {
      if (c.collSeq <= lastColl_)
        return bad(fmt::format("coll_seq {} after coll_seq {}: collectives are numbered in call order", c.collSeq,
                               lastColl_));
      lastColl_ = c.collSeq;
      return Status::ok();
    }
    auto [it, fresh] = lastP2p_.try_emplace({c.op == FrOp::Send, c.root}, c.p2pSeq);
    if (!fresh) {
      if (c.p2pSeq <= it->second)
        return bad(fmt::format("p2p_seq {} after p2p_seq {} for {} rank {}: numbered in call order", c.p2pSeq,
                               it->second, c.op == FrOp::Send ? "send to" : "recv from", c.root));
      it->second = c.p2pSeq;
    }
    return Status::ok();
  }

 private:
  int64_t lastSeq_ = -1;
  int64_t lastColl_ = -1;
  std::map<std::pair<bool, int>, int64_t> lastP2p_;  // (send?, peer) -> newest p2p_seq
};

Status parseLine(std::string_view line, size_t lineNo, FrDump* dump, Order* order) {
  if (line.size() > kFrMaxLineBytes)
    return bad(fmt::format("line of {} bytes, longer than any dump line ({} at most)", line.size(), kFrMaxLineBytes));
  auto members = parseJsonLine(line);
  if (!members.isOk()) return members.status();
  std::string type;
  std::vector<Field> t{{"type", &type}};
  TRACE_TRY(bind(members.value(), t));
  if (lineNo == 1) {
    if (type != "header") return bad(fmt::format("the first line is type {}, not the \"header\"", jsonQuote(type)));
    return parseHeader(members.value(), &dump->header);
  }
  if (type == "header") return bad("a second header");
  if (type != "call") return bad(fmt::format("type {} is not one this reader knows (header, call)", jsonQuote(type)));
  FrCall c;
  TRACE_TRY(parseCall(members.value(), dump->header, &c));
  TRACE_TRY(order->check(dump->header, c, dump->calls.size()));
  dump->calls.push_back(std::move(c));
  return Status::ok();
}

}  // namespace

const char* frOpName(FrOp op) { return kOpNames[static_cast<size_t>(op)]; }
const char* frStateName(FrState s) { return kStateNames[static_cast<size_t>(s)]; }

Result<FrDump> parseDump(std::string_view name, std::string_view text) {
  if (text.empty()) return bad(fmt::format("{}:1: empty file: expected the header line", name));
  FrDump dump;
  Order order;
  size_t lineNo = 0;
  for (size_t pos = 0; pos < text.size();) {
    ++lineNo;
    const size_t nl = text.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    Status s = parseLine(text.substr(pos, end - pos), lineNo, &dump, &order);
    if (!s.isOk()) return bad(fmt::format("{}:{}: {}", name, lineNo, s.message()));
    pos = end + 1;
  }
  return dump;
}

}  // namespace coll::trace
