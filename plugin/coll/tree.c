/* The binomial tree over contiguous rank intervals (see tree.h). */
#include "coll/tree.h"

void glucx_coll_tree_build(int size, int root, int rank, glucx_coll_tree_t *tree_p)
{
    glucx_coll_tree_t t;
    t.lo = 0;
    t.hi = size;
    t.parent = (glucx_coll_tree_edge_t){-1, 0, size, -1};
    t.nchildren = 0;

    int lo = 0, hi = size, c = root; /* the interval that holds rank, and its collector */
    for (int level = 0; hi - lo > 1 && level < GLUCX_COLL_TREE_MAX_LEVELS; level++) {
        int mid = lo + (hi - lo + 1) / 2;
        int clo, chi, olo, ohi; /* the collector's half and the other half */
        if (c < mid) {
            clo = lo, chi = mid, olo = mid, ohi = hi;
        } else {
            clo = mid, chi = hi, olo = lo, ohi = mid;
        }
        int off = c - clo;
        int d = olo + (off < ohi - olo ? off : ohi - olo - 1);
        if (rank == c)
            t.children[t.nchildren++] = (glucx_coll_tree_edge_t){d, olo, ohi, level};
        if (rank >= olo && rank < ohi) {
            if (rank == d) {
                t.parent = (glucx_coll_tree_edge_t){c, olo, ohi, level};
                t.lo = olo;
                t.hi = ohi;
            }
            lo = olo, hi = ohi, c = d;
        } else {
            lo = clo, hi = chi;
        }
    }
    *tree_p = t;
}
