// tree_shape_test.cc — the double binary tree: shape, symmetry,
// complementarity and depth; the binomial tree: shape, send order, depth.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "schedule/tree_shape.h"

using coll::sched::doubleBinaryTree;
using coll::sched::doubleBinaryTreeDepth;
using coll::sched::doubleBinaryTreeRoot;
using coll::sched::TreeNode;
using coll::sched::binomialTree;
using coll::sched::binomialTreeDepth;

namespace {

int floorLog2(int n) {
  int d = 0;
  while ((2 << d) <= n) ++d;
  return d;
}

std::vector<TreeNode> tree(int N, int t) {
  std::vector<TreeNode> v;
  for (int r = 0; r < N; ++r) v.push_back(doubleBinaryTree(r, N, t));
  return v;
}

}  // namespace

TEST_CASE("each tree is a binary tree over all ranks / parent/child symmetric", "[tree]") {
  for (int N = 1; N <= 300; N += (N < 70 ? 1 : 37)) {
    for (int t = 0; t < 2; ++t) {
      INFO("N=" << N << " tree " << t);
      const auto nodes = tree(N, t);
      int roots = 0, maxDepth = 0;
      std::vector<int> parentCount(static_cast<size_t>(N), 0);
      for (int r = 0; r < N; ++r) {
        const TreeNode& n = nodes[static_cast<size_t>(r)];
        INFO("rank " << r);
        if (n.parent < 0) {
          ++roots;
          CHECK(r == doubleBinaryTreeRoot(N, t));
          CHECK(n.depth == 0);
        } else {
          REQUIRE(n.parent < N);
          REQUIRE(n.parent != r);
          const TreeNode& p = nodes[static_cast<size_t>(n.parent)];
          CHECK((p.child[0] == r || p.child[1] == r));
          CHECK(n.depth == p.depth + 1);
        }
        if (n.child[1] >= 0) CHECK(n.child[0] >= 0);  // left first
        CHECK((n.child[0] != n.child[1] || n.child[0] < 0));
        for (int c : n.child) {
          if (c < 0) continue;
          REQUIRE(c < N);
          CHECK(nodes[static_cast<size_t>(c)].parent == r);
          ++parentCount[static_cast<size_t>(c)];
        }
        maxDepth = std::max(maxDepth, n.depth);
      }
      CHECK(roots == 1);
      // Every rank but the root is somebody's child exactly once; with the
      // depth relation above this makes the graph a single tree.
      for (int r = 0; r < N; ++r)
        CHECK(parentCount[static_cast<size_t>(r)] == (r == doubleBinaryTreeRoot(N, t) ? 0 : 1));
      CHECK(maxDepth == floorLog2(N));
      CHECK(doubleBinaryTreeDepth(N) == floorLog2(N));
    }
  }
}

TEST_CASE("each rank is interior in at most one of the two trees", "[tree]") {
  for (int N = 1; N <= 300; ++N) {
    const auto a = tree(N, 0), b = tree(N, 1);
    int interior0 = 0, interior1 = 0;
    for (int r = 0; r < N; ++r) {
      const bool i0 = a[static_cast<size_t>(r)].child[0] >= 0;
      const bool i1 = b[static_cast<size_t>(r)].child[0] >= 0;
      INFO("N=" << N << " rank " << r);
      CHECK_FALSE((i0 && i1));
      interior0 += i0;
      interior1 += i1;
    }
    // Both trees have the same shape (tree 1 is tree 0 shifted by one).
    CHECK(interior0 == interior1);
    if (N >= 2) CHECK(doubleBinaryTreeRoot(N, 0) != doubleBinaryTreeRoot(N, 1));
  }
}

TEST_CASE("known shapes", "[tree]") {
  // N = 6 (tree_shape.h): tree 0 root 3, children 1 and 5; 1 -> 0, 2; 5 -> 4.
  auto n = doubleBinaryTree(3, 6, 0);
  CHECK(n.parent == -1);
  CHECK(n.child[0] == 1);
  CHECK(n.child[1] == 5);
  n = doubleBinaryTree(5, 6, 0);
  CHECK(n.parent == 3);
  CHECK(n.child[0] == 4);
  CHECK(n.child[1] == -1);
  n = doubleBinaryTree(0, 6, 0);
  CHECK(n.parent == 1);
  CHECK(n.depth == 2);
  // Tree 1 shifts: root 2, children 0 and 4; 0 -> 5, 1; 4 -> 3.
  n = doubleBinaryTree(2, 6, 1);
  CHECK(n.parent == -1);
  CHECK(n.child[0] == 0);
  CHECK(n.child[1] == 4);
  n = doubleBinaryTree(0, 6, 1);
  CHECK(n.child[0] == 5);
  CHECK(n.child[1] == 1);
  // N = 1: a lone root; N = 2: each rank the root of one tree.
  n = doubleBinaryTree(0, 1, 0);
  CHECK((n.parent == -1 && n.child[0] == -1 && n.child[1] == -1 && n.depth == 0));
  CHECK(doubleBinaryTree(1, 2, 0).child[0] == 0);
  CHECK(doubleBinaryTree(0, 2, 1).child[0] == 1);
  // Odd N: full trees, the root has two children.
  n = doubleBinaryTree(doubleBinaryTreeRoot(7, 0), 7, 0);
  CHECK((n.child[0] >= 0 && n.child[1] >= 0));
}

TEST_CASE("bad arguments are rejected", "[tree]") {
  CHECK_THROWS(doubleBinaryTree(0, 0, 0));
  CHECK_THROWS(doubleBinaryTree(3, 3, 0));
  CHECK_THROWS(doubleBinaryTree(0, 3, 2));
  CHECK_THROWS(doubleBinaryTree(-1, 3, 1));
}

TEST_CASE("binomial tree: every rank reached once, parents and children agree, largest subtree first", "[tree]") {
  for (int N = 1; N <= 40; ++N) {
    INFO("N=" << N);
    std::vector<int> reachedBy(N, -1);
    for (int v = 0; v < N; ++v) {
      const auto node = binomialTree(v, N);
      CHECK((v == 0) == (node.parent == -1));
      for (size_t i = 0; i < node.children.size(); ++i) {
        const int c = node.children[i];
        REQUIRE((c > v && c < N));
        CHECK(reachedBy[c] == -1);
        reachedBy[c] = v;
        CHECK(binomialTree(c, N).parent == v);
        if (i > 0) CHECK(c < node.children[i - 1]);  // subtree under v + 2^j: 2^j ranks at most
      }
    }
    for (int v = 1; v < N; ++v) CHECK(reachedBy[v] >= 0);
  }
}

TEST_CASE("binomial tree: with one send per step, the last rank has its data after ceil(log2 N) steps", "[tree]") {
  for (int N = 1; N <= 70; ++N) {
    INFO("N=" << N);
    // A parent sends to its children in list order, one per step, starting
    // the step after it received.
    std::vector<int> at(N, 0);
    int last = 0;
    for (int v = 0; v < N; ++v) {  // parents precede children (v < child)
      const auto node = binomialTree(v, N);
      for (size_t i = 0; i < node.children.size(); ++i) {
        at[node.children[i]] = at[v] + static_cast<int>(i) + 1;
        last = std::max(last, at[node.children[i]]);
      }
    }
    CHECK(last == binomialTreeDepth(N));
    CHECK(binomialTree(0, N).children.size() == static_cast<size_t>(binomialTreeDepth(N)));
  }
  CHECK(binomialTreeDepth(1) == 0);
  CHECK(binomialTreeDepth(2) == 1);
  CHECK(binomialTreeDepth(8) == 3);
  CHECK(binomialTreeDepth(9) == 4);
}

TEST_CASE("binomial tree: known shapes and bad arguments", "[tree]") {
  // N = 8 (tree_broadcast.cc): 0 -> 4, 2, 1; 4 -> 6, 5; 6 -> 7; 2 -> 3.
  CHECK(binomialTree(0, 8).children == std::vector<int>{4, 2, 1});
  CHECK(binomialTree(4, 8).children == std::vector<int>{6, 5});
  CHECK(binomialTree(6, 8).children == std::vector<int>{7});
  CHECK(binomialTree(2, 8).children == std::vector<int>{3});
  CHECK(binomialTree(7, 8).parent == 6);
  CHECK(binomialTree(1, 8).children.empty());
  // N = 5: 0 -> 4, 2, 1; 2 -> 3; 4 is a leaf (5, 6 do not exist).
  CHECK(binomialTree(0, 5).children == std::vector<int>{4, 2, 1});
  CHECK(binomialTree(4, 5).children.empty());
  CHECK(binomialTree(0, 1).children.empty());
  CHECK_THROWS(binomialTree(0, 0));
  CHECK_THROWS(binomialTree(5, 5));
  CHECK_THROWS(binomialTree(-1, 5));
}
