// cost.cc — the alpha-beta model of every schedule (see each schedule file
// for its derivation).  A step is one message hop: alpha + bytes*beta; the
// hops term counts the steps on the critical path, the byte term the bytes
// that cross the busiest link (or rank port, for the tree) over the whole
// call.  Channels share links, so they shorten the critical path (fewer
// chunks each) but not the byte term.  A rank that sends or receives more
// than one message per hop (one-shot: N-1 of each) pays o, the transport's
// per-message overhead, for each further one.
//
//   ring all-reduce   2(N-1)L a + 2(N-1)/N S b          L = loops/channel
//                      = ceil(M / (N E)), M = count/nchannels, E = chunk
//   ring AG / RS      (N-1)k a + (N-1)/N S b            k = ceil(M / E),
//                      M = per-rank count / nchannels
//   pipeline bc / red (N+k-2)(a + S/k b)                k = ceil(M / E)
//   tree all-reduce   (2D+k-1) a + (2D f/k + (3f+g)(k-1)/k) S b
//                      D = floor(log2 N); f, g = the shares of the data on
//                      the busier / other tree (1/2, 1/2 with an even
//                      channel count; 1, 0 with one channel).  The first
//                      chunk crosses 2D hops; the rest stream at the rate of
//                      the busiest rank port, which carries 3f+g of S
//                      (interior in one tree: 2 children + 1 parent; leaf
//                      in the other).  Balanced: -> 2 S b for large k.
//   tree broadcast    L k a + L S b                     L = ceil(log2 N): the
//                                                       root's sends, in turn
//   one-shot AR, bc   k a + 2(N-2)k o + (N-1) S b       chunks not overlapped;
//                      (bc: (N-2)k o)                   every copy leaves one port
//   one-shot AG, RS   k a + 2(N-2)k o + (N-1)/N S b     the ring's bytes, one hop
//   doubling AR       H k a + H S b                     H = log2 P (+2 when N is
//                                                       not a power of two: the fold)
//   doubling AG       H k a + (N-1)/N S b               N a power of two;
//                      with a fold: H k a + (P + N + sum_j min(2^j, rem))/N S b
//                      (fold in S/N, round j (2^j + min(2^j, rem)) S/N, fold
//                      out S).  Both assume a round's range goes as one
//                      message (one chunk on one channel: the tuner's use).
//   halving AR        H k a + (2(P-1)/P + 2[rem>0]) S b H = 2 log2 P (+2 with a fold)
//   halving RS        H k a + ((P-1)/P + [rem>0](1+1/N)) S b   H = log2 P (+2)
//   direct send/recv  k a + S b
//   N == 1 or S == 0  0
// totalBytes (all ranks' sends; the tuner's floor where ranks share CPUs):
// ring AR 2(N-1)S, tree AR 2(N-1)S, one-shot AR N(N-1)S, doubling AR
// (P log2 P + 2 rem)S, halving 2(P-1+rem)S; AG, RS, bc, reduce (N-1)S
// (halving RS (P-1 + rem(1+1/N))S)
// (doubling AG + rem S/N: a folded rank gets its own block back); send S.
#include "schedule/cost.h"

#include <algorithm>
#include <limits>

#include "schedule/chunking.h"
#include "schedule/doubling_shape.h"
#include "schedule/tree_shape.h"

namespace coll::sched {

CostTerms costTerms(CollKind k, Algo a, int nranks, size_t bytes, const Chunking& c,
                    size_t elemBytes) {
  CostTerms t;
  if (!algoSupports(k, a) || nranks <= 1 || bytes == 0) return t;
  const double N = nranks, S = static_cast<double>(bytes);
  const size_t elem = std::max<size_t>(elemBytes, 1);
  const size_t nch = static_cast<size_t>(std::max(c.nchannels, 1));
  const size_t E = detail::effectiveChunk(c.chunkElems);
  size_t count = bytes / elem;
  if (k == CollKind::AllGather || k == CollKind::ReduceScatter)
    count /= static_cast<size_t>(nranks);
  const size_t M = detail::ceilDiv(std::max<size_t>(count, 1), nch);  // biggest channel part
  const size_t chunks = detail::chunksFor(M, E);
  const double kc = static_cast<double>(chunks);

  switch (a) {
    case Algo::Ring:
      if (k == CollKind::AllReduce) {
        t.chunks = detail::chunksFor(M, detail::satMul(static_cast<size_t>(nranks), E));
        t.hops = 2 * (N - 1) * static_cast<double>(t.chunks);
        t.byteTerm = 2 * (N - 1) / N * S;
        t.totalBytes = 2 * (N - 1) * S;
      } else {
        t.chunks = chunks;
        t.hops = (N - 1) * kc;
        t.byteTerm = (N - 1) / N * S;
        t.totalBytes = (N - 1) * S;
      }
      break;
    case Algo::Pipeline:
      t.chunks = chunks;
      t.hops = N + kc - 2;
      t.byteTerm = (N + kc - 2) / kc * S;
      t.totalBytes = (N - 1) * S;
      break;
    case Algo::Tree: {
      t.chunks = chunks;
      if (k == CollKind::Broadcast) {
        const double L = binomialTreeDepth(nranks);
        t.hops = L * kc;
        t.byteTerm = L * S;
        t.totalBytes = (N - 1) * S;
        break;
      }
      const double D = doubleBinaryTreeDepth(nranks);
      const double f = static_cast<double>((nch + 1) / 2) / static_cast<double>(nch);
      const double g = 1 - f;
      t.hops = 2 * D + kc - 1;
      t.byteTerm = (2 * D * f / kc + (3 * f + g) * (kc - 1) / kc) * S;
      t.totalBytes = 2 * (N - 1) * S;  // up and down each tree
      break;
    }
    case Algo::OneShot:
      t.chunks = chunks;
      t.hops = kc;
      t.byteTerm = (k == CollKind::AllGather || k == CollKind::ReduceScatter ? (N - 1) / N : N - 1) * S;
      t.extraMessages = (k == CollKind::Broadcast ? N - 2 : 2 * (N - 2)) * kc;
      t.totalBytes = (k == CollKind::AllReduce ? N : 1) * (N - 1) * S;
      break;
    case Algo::Direct:
      t.chunks = chunks;
      t.hops = kc;
      t.byteTerm = S;
      t.totalBytes = S;
      break;
    case Algo::Halving: {
      const DoublingShape shape(nranks);
      const double P = shape.P;
      t.chunks = chunks;
      if (k == CollKind::ReduceScatter) {
        // Fold in S, the rounds (P-1)/P S, fold out one block.
        const double fold = shape.rem > 0 ? 1 + 1 / N : 0;
        t.hops = shape.hops() * kc;
        t.byteTerm = ((P - 1) / P + fold) * S;
        t.totalBytes = (P - 1 + shape.rem * (1 + 1 / N)) * S;
        break;
      }
      t.hops = (2 * shape.rounds() + (shape.rem > 0 ? 2 : 0)) * kc;
      t.byteTerm = (2 * (P - 1) / P + (shape.rem > 0 ? 2 : 0)) * S;
      t.totalBytes = 2 * (P - 1 + shape.rem) * S;  // halve and gather back; fold in and out
      break;
    }
    case Algo::Doubling: {
      const DoublingShape shape(nranks);
      t.chunks = chunks;
      t.hops = shape.hops() * kc;
      // All-gather: every rank receives the N-1 blocks it lacked, and a
      // folded rank's partner sends it all N (its own block again).  All-
      // reduce: the P swap S in each round, the folds move S in and out.
      t.totalBytes = k == CollKind::AllReduce ? (shape.P * shape.rounds() + 2.0 * shape.rem) * S
                                              : (N - 1 + shape.rem / N) * S;
      if (k == CollKind::AllReduce) {
        t.byteTerm = shape.hops() * S;
      } else if (shape.rem == 0) {
        t.byteTerm = (N - 1) / N * S;
      } else {
        double blocks = shape.P + N;
        for (int d = 1; d < shape.P; d *= 2) blocks += std::min(d, shape.rem);
        t.byteTerm = blocks / N * S;
      }
      break;
    }
  }
  return t;
}

double predictSeconds(CollKind k, Algo a, int nranks, size_t bytes, const LinkCost& cost,
                      const Chunking& c, size_t elemBytes) {
  if (!algoSupports(k, a)) return std::numeric_limits<double>::infinity();
  const CostTerms t = costTerms(k, a, nranks, bytes, c, elemBytes);
  return t.hops * cost.alpha + t.extraMessages * cost.overhead + t.byteTerm * cost.beta;
}

double predictSeconds(CollKind k, Algo a, int nranks, size_t bytes, const LinkCost& cost,
                      const Chunking& c) {
  return predictSeconds(k, a, nranks, bytes, cost, c, 4);
}

const char* costFormula(CollKind k, Algo a) {
  if (!algoSupports(k, a)) return "n/a";
  switch (a) {
    case Algo::Ring:
      return k == CollKind::AllReduce ? "2(N-1)L a + 2(N-1)/N S/B" : "(N-1)k a + (N-1)/N S/B";
    case Algo::Pipeline: return "(N+k-2)(a + S/(k B))";
    case Algo::Tree:
      return k == CollKind::Broadcast ? "L k a + L S/B" : "(2D+k-1)a + (2Df/k + (3f+g)(k-1)/k) S/B";
    case Algo::OneShot:
      if (k == CollKind::Broadcast) return "k a + (N-2)k o + (N-1) S/B";
      return k == CollKind::AllGather || k == CollKind::ReduceScatter ? "k a + 2(N-2)k o + (N-1)/N S/B"
                                                                      : "k a + 2(N-2)k o + (N-1) S/B";
    case Algo::Direct: return "k a + S/B";
    case Algo::Doubling: return k == CollKind::AllReduce ? "H k a + H S/B" : "H k a + (N-1)/N S/B";
    case Algo::Halving:
      return k == CollKind::ReduceScatter ? "H k a + (P-1)/P S/B" : "H k a + 2(P-1)/P S/B";
  }
  return "n/a";
}

}  // namespace coll::sched
