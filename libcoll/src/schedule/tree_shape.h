// tree_shape.h — the two complementary binary trees of the tree all-reduce.
//
// Tree 0: rank r sits at in-order label q = r+1 of the binary tree on labels
// 1..N whose root is the largest power of two <= N: a label q = m*2^l (m
// odd) is a node at level l; its left child is q - 2^(l-1) and its right
// child q + 2^j for the largest j < l with q + 2^j <= N.  Leaves are the odd
// labels, i.e. the even ranks.
// Tree 1: the same tree over labels shifted by one: rank r at label
// ((r+1) mod N) + 1.  A rank interior (with children) in tree 0 has an even
// label, i.e. odd r; in tree 1 it gets an odd label, i.e. is a leaf; this
// holds for odd and even N alike, so every rank is interior in at most one
// tree, and each tree's depth (edges from root to the deepest leaf) is
// floor(log2 N).
//
//   N = 6, labels; tree 0 ranks are label-1, tree 1 ranks label-2 mod 6:
//
//            4            tree 0:   3          tree 1:   2
//          /   |                  /   |                /   |
//         2    6                 1    5               0    4
//        / |   |                / |   |              / |   |
//       1  3   5               0  2   4             5  1   3
#pragma once

#include <vector>

namespace coll::sched {

struct TreeNode {
  int parent = -1;          // -1 for the root
  int child[2] = {-1, -1};  // left, right; -1 where absent (left first)
  int depth = 0;            // edges from the root
};

// Rank `rank`'s place in tree `tree` (0 or 1) of N = nranks ranks.
TreeNode doubleBinaryTree(int rank, int nranks, int tree);
// The root rank of tree `tree`.
int doubleBinaryTreeRoot(int nranks, int tree);
// floor(log2 nranks): the depth of both trees (0 for nranks == 1).
int doubleBinaryTreeDepth(int nranks);

// The binomial tree of the tree broadcast, over virtual ranks v = 0..N-1
// (v = 0 the root): v's parent is v with its lowest set bit cleared; its
// children are v + 2^j for every 2^j below v's lowest set bit (every 2^j
// for the root) with v + 2^j < N, listed largest subtree first (j
// descending), the order a parent sends in.  The subtree under v + 2^j
// holds at most 2^j ranks, so the last rank is reached after
// ceil(log2 N) sends from the root, each parent's sends in order.
struct BinomialNode {
  int parent = -1;            // -1 for the root
  std::vector<int> children;  // largest subtree first
};

BinomialNode binomialTree(int v, int nranks);
// ceil(log2 nranks): the root's number of children (0 for nranks == 1).
int binomialTreeDepth(int nranks);

}  // namespace coll::sched
