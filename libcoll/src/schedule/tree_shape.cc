// tree_shape.cc — see tree_shape.h.  All arithmetic is on 1-based in-order
// labels; label(rank) = ((rank + tree) mod N) + 1.
#include "schedule/tree_shape.h"

#include <stdexcept>
#include <string>

namespace coll::sched {
namespace {

int level(long q) { return __builtin_ctzl(static_cast<unsigned long>(q)); }

long topPow2(long n) {
  long p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int rankOf(long label, int nranks, int tree) {
  return static_cast<int>(((label - 1 - tree) % nranks + nranks) % nranks);
}

// Parent label in the tree over 1..n: the nearest ancestor of q in the
// infinite in-order tree that is <= n.  In that tree, q = m*2^l (m odd) has
// parent q + 2^l when m = 1 mod 4, else q - 2^l (the neighbour at level l+1).
long parentLabel(long q, long n) {
  long u = q;
  do {
    const int l = level(u);
    u = ((u >> (l + 1)) & 1) == 0 ? u + (1L << l) : u - (1L << l);
  } while (u > n);
  return u;
}

void check(int rank, int nranks, int tree) {
  if (nranks < 1 || rank < 0 || rank >= nranks || (tree != 0 && tree != 1))
    throw std::invalid_argument("doubleBinaryTree: bad rank " + std::to_string(rank) +
                                " / nranks " + std::to_string(nranks) + " / tree " +
                                std::to_string(tree));
}

}  // namespace

int doubleBinaryTreeRoot(int nranks, int tree) {
  check(0, nranks, tree);
  return rankOf(topPow2(nranks), nranks, tree);
}

int doubleBinaryTreeDepth(int nranks) {
  int d = 0;
  while ((2L << d) <= nranks) ++d;
  return d;
}

TreeNode doubleBinaryTree(int rank, int nranks, int tree) {
  check(rank, nranks, tree);
  const long n = nranks;
  const long q = ((rank + tree) % nranks) + 1;
  const long root = topPow2(n);
  TreeNode t;
  const int l = level(q);
  if (l > 0) {
    t.child[0] = rankOf(q - (1L << (l - 1)), nranks, tree);
    for (int j = l - 1; j >= 0; --j)
      if (q + (1L << j) <= n) {
        t.child[1] = rankOf(q + (1L << j), nranks, tree);
        break;
      }
  }
  for (long u = q; u != root; u = parentLabel(u, n)) ++t.depth;
  if (q != root) t.parent = rankOf(parentLabel(q, n), nranks, tree);
  return t;
}

int binomialTreeDepth(int nranks) {
  int d = 0;
  while ((1L << d) < nranks) ++d;
  return d;
}

BinomialNode binomialTree(int v, int nranks) {
  if (nranks < 1 || v < 0 || v >= nranks)
    throw std::invalid_argument("binomialTree: virtual rank " + std::to_string(v) + " outside [0, " +
                                std::to_string(nranks) + ")");
  BinomialNode b;
  const long low = v == 0 ? 1L << binomialTreeDepth(nranks) : static_cast<long>(v) & -static_cast<long>(v);
  if (v != 0) b.parent = static_cast<int>(v - low);
  for (long step = low / 2; step >= 1; step /= 2)
    if (v + step < nranks) b.children.push_back(static_cast<int>(v + step));
  return b;
}

}  // namespace coll::sched
