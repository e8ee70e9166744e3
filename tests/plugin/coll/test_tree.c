/* Tests of plugin/coll/broadcast/tree.c: the shape of the tree, for every size and root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "coll/tree.h"

#define MAXN 70

static glucx_coll_tree_t trees[MAXN];

/* Checks every rank's view of the tree of n ranks rooted at root against each other. */
static void check_tree(int n, int root)
{
    for (int r = 0; r < n; r++)
        glucx_coll_tree_build(n, root, r, &trees[r]);
    int depth = 0;
    while ((1 << depth) < n)
        depth++;
    int edges = 0;
    for (int r = 0; r < n; r++) {
        const glucx_coll_tree_t *t = &trees[r];
        /* the root has no parent, the others one; the subtree holds the rank */
        if (r == root) {
            assert_int_equal(t->parent.peer, -1);
            assert_int_equal(t->lo, 0);
            assert_int_equal(t->hi, n);
            /* ceil(log2 n) children for a power of two, fewer otherwise */
            assert_true(t->nchildren <= depth);
            if ((n & (n - 1)) == 0)
                assert_int_equal(t->nchildren, depth);
        } else {
            assert_true(t->parent.peer >= 0 && t->parent.peer < n && t->parent.peer != r);
            assert_true(t->parent.level >= 0 && t->parent.level < depth);
        }
        assert_true(t->lo <= r && r < t->hi);
        /* children: top level first; subtrees disjoint, inside mine, not holding me; each child's
         * subtree is adjacent to the union of me and the children after it (so the union of all
         * is my subtree) */
        int ulo = r, uhi = r + 1;
        for (int i = t->nchildren - 1; i >= 0; i--) {
            const glucx_coll_tree_edge_t *c = &t->children[i];
            if (i > 0)
                assert_true(t->children[i - 1].level < c->level);
            assert_true(c->peer >= c->lo && c->peer < c->hi);
            assert_true(c->hi == ulo || c->lo == uhi);
            ulo = c->lo < ulo ? c->lo : ulo;
            uhi = c->hi > uhi ? c->hi : uhi;
            /* the child sees me as its parent, on the same edge */
            const glucx_coll_tree_t *ct = &trees[c->peer];
            assert_int_equal(ct->parent.peer, r);
            assert_int_equal(ct->parent.level, c->level);
            assert_int_equal(ct->lo, c->lo);
            assert_int_equal(ct->hi, c->hi);
            edges++;
        }
        assert_int_equal(ulo, t->lo);
        assert_int_equal(uhi, t->hi);
    }
    assert_int_equal(edges, n - 1);
    /* depth: every path to the root has at most ceil(log2 n) edges */
    for (int r = 0; r < n; r++) {
        int hops = 0;
        for (int x = r; x != root; x = trees[x].parent.peer)
            assert_true(++hops <= depth);
    }
    /* power of two: the binomial tree on v = rank XOR root, parent v with its lowest bit cleared */
    if ((n & (n - 1)) == 0)
        for (int r = 0; r < n; r++)
            if (r != root) {
                int v = r ^ root;
                assert_int_equal(trees[r].parent.peer, (v & (v - 1)) ^ root);
            }
}

static void test_all_sizes_and_roots(void **state)
{
    (void)state;
    for (int n = 1; n <= 64; n++)
        for (int root = 0; root < n; root++)
            check_tree(n, root);
}

/* The halving of [lo, hi): the lower half takes the extra rank. */
static int canonical_mid(int lo, int hi)
{
    return lo + (hi - lo + 1) / 2;
}

/* Whether [lo, hi) is an interval of the canonical recursive halving of [0, n). */
static int canonical_interval(int n, int lo, int hi)
{
    int a = 0, b = n;
    while (b - a > hi - lo) {
        int m = canonical_mid(a, b);
        if (hi <= m)
            b = m;
        else if (lo >= m)
            a = m;
        else
            return 0;
    }
    return a == lo && b == hi;
}

/* The bracketing of a reduction over the tree does not depend on the root: every combine a rank
 * does (what it holds so far with one child's subtree) joins the two halves of an interval of
 * the canonical halving of [0, n) at its canonical split. */
static void test_combines_follow_the_canonical_halving(void **state)
{
    (void)state;
    for (int n = 1; n <= 64; n++)
        for (int root = 0; root < n; root++)
            for (int r = 0; r < n; r++) {
                glucx_coll_tree_t t;
                glucx_coll_tree_build(n, root, r, &t);
                int ulo = r, uhi = r + 1;
                for (int i = t.nchildren - 1; i >= 0; i--) {
                    const glucx_coll_tree_edge_t *c = &t.children[i];
                    int lo = c->lo < ulo ? c->lo : ulo, hi = c->hi > uhi ? c->hi : uhi;
                    assert_true(canonical_interval(n, lo, hi));
                    assert_int_equal(c->lo < ulo ? c->hi : uhi, canonical_mid(lo, hi));
                    ulo = lo;
                    uhi = hi;
                }
            }
}

static void test_ceil_log2(void **state)
{
    (void)state;
    assert_int_equal(glucx_coll_ceil_log2(1), 0);
    assert_int_equal(glucx_coll_ceil_log2(2), 1);
    assert_int_equal(glucx_coll_ceil_log2(3), 2);
    assert_int_equal(glucx_coll_ceil_log2(8), 3);
    assert_int_equal(glucx_coll_ceil_log2(9), 4);
    assert_int_equal(glucx_coll_ceil_log2(16384), 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_sizes_and_roots),
        cmocka_unit_test(test_combines_follow_the_canonical_halving),
        cmocka_unit_test(test_ceil_log2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
