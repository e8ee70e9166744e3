/**
 * Internal: the binomial tree over contiguous rank intervals that the rooted collectives
 * (broadcast, reduce, gather, scatter) share (glucx_coll_tree_*).
 *
 * The ranks [0, size) are halved recursively (the lower half takes the extra rank when the
 * interval is odd). At each halving, the collector of the interval (the root at the top) keeps
 * the half that holds it, and the rank at the same offset in the other half (clamped to that
 * half's last rank) becomes the other half's collector and the collector's child. So:
 * - every subtree is a contiguous interval of ranks: gather and scatter move a subtree's blocks
 *   as one contiguous piece of the rank-ordered buffer, with no reordering at any root;
 * - the reduction bracketing is fixed by the halving alone, independent of the root, and every
 *   combine takes a lower interval and the adjacent higher one: reduce with any root computes
 *   ((x0 x1)(x2 x3))((x4 x5)(x6 x7)) for 8 ranks, the bracketing of recursive doubling;
 * - depth ceil(log2 size); the root has at most that many children (fewer when size is not a
 *   power of two: the halves are uneven); for a power-of-two size it is the binomial tree of
 *   MPICH on the relative rank (rank XOR root) (Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH", IJHPCA 2005).
 *
 * This file lives with broadcast because broadcast is its first user; it belongs in
 * plugin/coll/ next to common.c.
 */
#ifndef GLUCX_COLL_TREE_H
#define GLUCX_COLL_TREE_H

/** Deepest tree: ceil(log2(GLUCX_COMM_SIZE_MAX)) = 14 levels, with room to spare. */
#define GLUCX_COLL_TREE_MAX_LEVELS 32

/** One edge of the tree as seen from one of its ends. */
typedef struct glucx_coll_tree_edge {
    int peer; /**< the rank at the other end; -1 for the root's (missing) parent */
    int lo;   /**< the child's subtree is the ranks [lo, hi) */
    int hi;
    int level; /**< halving that created the edge, 0 at the top; a message step number */
} glucx_coll_tree_edge_t;

/** The tree as one rank sees it. */
typedef struct glucx_coll_tree {
    int lo, hi;                    /**< this rank's subtree: ranks [lo, hi) */
    glucx_coll_tree_edge_t parent; /**< parent.peer == -1 at the root */
    int nchildren;
    /** Children, the top level (biggest subtree) first; each subtree is adjacent to the union
     *  of this rank and the children after it. */
    glucx_coll_tree_edge_t children[GLUCX_COLL_TREE_MAX_LEVELS];
} glucx_coll_tree_t;

/**
 * Compute @p rank's view of the tree of @p size ranks rooted at @p root (0 <= rank, root <
 * size, size >= 1) into @p tree_p. Pure, O(log size), every rank computes the same tree.
 */
void glucx_coll_tree_build(int size, int root, int rank, glucx_coll_tree_t *tree_p);

/** ceil(log2(n)) for n >= 1: the number of levels of the tree (and of dissemination rounds). */
static inline int glucx_coll_ceil_log2(int n)
{
    int l = 0;
    while (l < 31 && (1 << l) < n)
        l++;
    return l;
}

#endif
