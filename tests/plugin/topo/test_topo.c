/* Unit tests: packages from host identity, link classes, calibration files, the physical links
 * a trace announces (without and with a topology file) and the direction a route crosses each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "topo/topo.h"

static void test_packages_from_hosts(void **state)
{
    (void)state;
    const char *hosts[] = {"b", "a", "b", "c", "a"};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(5, hosts, NULL, &t), GLUCX_OK);
    assert_int_equal(t->npackages, 3);
    /* numbered by first appearance */
    int expect[] = {0, 1, 0, 2, 1};
    for (int r = 0; r < 5; r++)
        assert_int_equal(t->package_of[r], expect[r]);
    assert_int_equal(glucx_topo_link_class(t, 0, 2), GLUCX_LINK_INTRA);
    assert_int_equal(glucx_topo_link_class(t, 0, 1), GLUCX_LINK_INTER);
    assert_int_equal(glucx_topo_link_class(t, 3, 3), GLUCX_LINK_SELF);
    assert_int_equal(glucx_topo_link_id(t, 2, 4), 2 * 5 + 4);
    /* several packages: the bottleneck is the inter-package class */
    glucx_link_cost_t b = glucx_topo_bottleneck(t);
    assert_true(b.alpha_ns == t->cost[GLUCX_LINK_INTER].alpha_ns);
    glucx_topo_destroy(t);

    const char *one[] = {"h", "h", "h"};
    assert_int_equal(glucx_topo_create(3, one, NULL, &t), GLUCX_OK);
    assert_int_equal(t->npackages, 1);
    b = glucx_topo_bottleneck(t);
    assert_true(b.beta_ns_per_byte == t->cost[GLUCX_LINK_INTRA].beta_ns_per_byte);
    glucx_topo_destroy(t);
    glucx_topo_destroy(NULL);
}

static void test_uniform(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 2, &t), GLUCX_OK);
    for (int r = 0; r < 8; r++)
        assert_int_equal(t->package_of[r], r / 4);
    glucx_topo_destroy(t);
    assert_int_equal(glucx_topo_create_uniform(2, 3, &t), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_topo_create_uniform(0, 1, &t), GLUCX_ERR_INVALID_ARG);
}

static void test_calibration_round_trip(void **state)
{
    (void)state;
    char path[] = "/tmp/glucx-cal-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(4, 2, &t), GLUCX_OK);
    t->cost[GLUCX_LINK_INTRA].alpha_ns = 1234.5;
    t->cost[GLUCX_LINK_INTER].beta_ns_per_byte = 0.125;
    t->gamma_ns_per_byte = 0.0625;
    assert_int_equal(glucx_topo_calibration_save(t, path), GLUCX_OK);
    uint64_t d1 = glucx_topo_digest(t);
    glucx_topo_destroy(t);

    const char *hosts[] = {"x", "x", "y", "y"};
    glucx_topo_t *costs;
    assert_int_equal(glucx_topo_create_uniform(1, 1, &costs), GLUCX_OK);
    assert_int_equal(glucx_topo_calibration_load(costs, path), GLUCX_OK);
    assert_int_equal(glucx_topo_create(4, hosts, costs, &t), GLUCX_OK);
    glucx_topo_destroy(costs);
    assert_true(t->cost[GLUCX_LINK_INTRA].alpha_ns == 1234.5);
    assert_true(t->cost[GLUCX_LINK_INTER].beta_ns_per_byte == 0.125);
    assert_true(t->gamma_ns_per_byte == 0.0625);
    assert_true(glucx_topo_digest(t) == d1); /* same packages, same costs */
    t->cost[GLUCX_LINK_INTER].alpha_ns += 1;
    assert_true(glucx_topo_digest(t) != d1);
    glucx_topo_destroy(t);

    /* malformed files name the file and line */
    FILE *f = fopen(path, "w");
    fprintf(f, "# comment\nintra.alpha_ns 10\nbogus.key 3\n");
    fclose(f);
    assert_int_equal(glucx_topo_create_uniform(2, 1, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_calibration_load(t, path), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "line 3"));
    f = fopen(path, "w");
    fprintf(f, "intra.alpha_ns -4\n");
    fclose(f);
    assert_int_equal(glucx_topo_calibration_load(t, path), GLUCX_ERR_INVALID_ARG);
    unlink(path);
    assert_int_equal(glucx_topo_calibration_load(t, path), GLUCX_ERR_INVALID_ARG);
    glucx_topo_destroy(t);
}

/* Physical links without a file (docs/topology.md, "Physical links without a file"), hosts
 * b a b c b a: packages (first appearance) 0 = ranks {0, 2, 4}, 1 = {1, 5}, 2 = {3}.
 * Dimension 0, package by package, pairs in rank order: package 0: 0 = (0,2), 1 = (0,4),
 * 2 = (2,4); package 1: 3 = (1,5); package 2: none. Dimension 1: uplinks 4, 5, 6 of packages
 * 0, 1, 2 to switch 0. Routes: 4 -> 2 = [2]; 5 -> 1 = [3]; 0 -> 3 = [4, 6]; 3 -> 5 = [6, 5]. */
static void test_phys_derived(void **state)
{
    (void)state;
    const char *hosts[] = {"b", "a", "b", "c", "b", "a"};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(6, hosts, NULL, &t), GLUCX_OK);
    t->cost[GLUCX_LINK_INTRA] = (glucx_link_cost_t){.alpha_ns = 300, .beta_ns_per_byte = 0.5};
    t->cost[GLUCX_LINK_INTER] = (glucx_link_cost_t){.alpha_ns = 8000, .beta_ns_per_byte = 4};
    glucx_phys_t *p;
    assert_int_equal(glucx_phys_create(t, &p), GLUCX_OK);
    assert_int_equal(p->nlinks, 7);
    const struct {
        int dim, ak, a, bk, b, announcer;
    } want[7] = {
        {0, GLUCX_NODE_RANK, 0, GLUCX_NODE_RANK, 2, 0},
        {0, GLUCX_NODE_RANK, 0, GLUCX_NODE_RANK, 4, 0},
        {0, GLUCX_NODE_RANK, 2, GLUCX_NODE_RANK, 4, 2},
        {0, GLUCX_NODE_RANK, 1, GLUCX_NODE_RANK, 5, 1},
        {1, GLUCX_NODE_PACKAGE, 0, GLUCX_NODE_SWITCH, 0, 0},
        {1, GLUCX_NODE_PACKAGE, 1, GLUCX_NODE_SWITCH, 0, 1},
        {1, GLUCX_NODE_PACKAGE, 2, GLUCX_NODE_SWITCH, 0, 3},
    };
    for (int i = 0; i < 7; i++) {
        const glucx_net_link_t *l = &p->links[i];
        assert_int_equal(l->id, i);
        assert_int_equal(l->dim, want[i].dim);
        assert_int_equal(l->a_kind, want[i].ak);
        assert_int_equal(l->a, want[i].a);
        assert_int_equal(l->b_kind, want[i].bk);
        assert_int_equal(l->b, want[i].b);
        assert_int_equal(glucx_phys_announcer(p, i), want[i].announcer);
        /* 1e9 / beta bytes/s; latency alpha inside a package, alpha / 2 per uplink */
        assert_true(p->bandwidth_Bps[i] == (want[i].dim == 0 ? 2e9 : 2.5e8));
        assert_true(p->latency_ns[i] == (want[i].dim == 0 ? 300.0 : 4000.0));
    }
    int hops[8];
    assert_int_equal(glucx_phys_route(p, 4, 2, hops, 8), 1);
    assert_int_equal(hops[0], 2);
    assert_int_equal(glucx_phys_route(p, 5, 1, hops, 8), 1);
    assert_int_equal(hops[0], 3);
    assert_int_equal(glucx_phys_route(p, 0, 3, hops, 8), 2);
    assert_int_equal(hops[0], 4);
    assert_int_equal(hops[1], 6);
    assert_int_equal(glucx_phys_route(p, 3, 5, hops, 8), 2);
    assert_int_equal(hops[0], 6);
    assert_int_equal(hops[1], 5);
    /* directions (0: a to b): 4 -> 2 crosses link 2 (2-4) from b; 5 -> 1 link 3 (1-5) from b;
     * 0 -> 2 link 0 (0-2) from a; between packages out of the sender's package to the switch
     * (a -> b), then from the switch into the receiver's (b -> a) */
    uint8_t dirs[8];
    const struct {
        int src, dst, n, d0, d1;
    } way[] = {{4, 2, 1, 1, -1}, {5, 1, 1, 1, -1}, {0, 2, 1, 0, -1},
               {0, 3, 2, 0, 1},  {3, 5, 2, 0, 1},  {5, 0, 2, 0, 1}};
    for (size_t i = 0; i < sizeof(way) / sizeof(way[0]); i++) {
        assert_int_equal(glucx_phys_route(p, way[i].src, way[i].dst, hops, 8), way[i].n);
        memset(dirs, 7, sizeof(dirs));
        assert_int_equal(glucx_phys_directions(p, way[i].src, hops, way[i].n, dirs), 0);
        assert_int_equal(dirs[0], way[i].d0);
        if (way[i].n > 1)
            assert_int_equal(dirs[1], way[i].d1);
    }
    /* not a walk from the sender: rank 0 does not touch link 3 (1-5), nor does package 0 */
    hops[0] = 3;
    assert_int_equal(glucx_phys_directions(p, 0, hops, 1, dirs), -1);
    /* uplink 5 (package 1) from rank 0 of package 0 */
    hops[0] = 5;
    assert_int_equal(glucx_phys_directions(p, 0, hops, 1, dirs), -1);
    hops[0] = 7; /* out of range */
    assert_int_equal(glucx_phys_directions(p, 0, hops, 1, dirs), -1);
    assert_int_equal(glucx_phys_directions(p, 6, hops, 0, dirs), -1);
    assert_int_equal(glucx_phys_route(p, 3, 3, hops, 8), 0);
    assert_int_equal(glucx_phys_route(p, 0, 6, hops, 8), -1);
    assert_int_equal(glucx_phys_announcer(p, 7), -1);
    glucx_phys_destroy(p);
    glucx_topo_destroy(t);
}

/* With a file: a ring of 4 packages of one rank, the communicator placed on file ranks 0 and 2
 * only (ranks 0, 1). Links (Ring of 4): 0 = 0-1, 1 = 1-2, 2 = 2-3, 3 = 3-0 (a = the lower
 * package). Rank 0 (file 0) announces 0 and 3, rank 1 (file 2) links 1 and 2; the route 0 -> 1
 * (packages 0 -> 2, a tie: increasing coordinate) is [0, 1]. */
static void test_phys_file(void **state)
{
    (void)state;
    glucx_net_dim_t dims[2] = {{GLUCX_DIM_FULLY_CONNECTED, 1, 10, 100},
                               {GLUCX_DIM_RING, 4, 0.5, 7000}};
    glucx_net_t *net;
    assert_int_equal(glucx_net_create(dims, 2, "", &net), GLUCX_OK);
    const char *hosts[] = {"p0", "p2"};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(2, hosts, NULL, &t), GLUCX_OK);
    const int net_ranks[] = {0, 2};
    assert_int_equal(glucx_topo_place(t, net, net_ranks, hosts, 0), GLUCX_OK);
    glucx_phys_t *p;
    assert_int_equal(glucx_phys_create(t, &p), GLUCX_OK);
    assert_int_equal(p->nlinks, 4);
    const int announcer[4] = {0, 1, 1, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(p->links[i].dim, 1);
        assert_int_equal(p->links[i].a_kind, GLUCX_NODE_PACKAGE);
        assert_int_equal(glucx_phys_announcer(p, i), announcer[i]);
        assert_true(p->bandwidth_Bps[i] == 5e8);
        assert_true(p->latency_ns[i] == 7000.0);
    }
    int hops[8];
    uint8_t dirs[8];
    assert_int_equal(glucx_phys_route(p, 0, 1, hops, 8), 2);
    assert_int_equal(hops[0], 0);
    assert_int_equal(hops[1], 1);
    /* package 0 -> 1 over link 0 (0-1), then 1 -> 2 over link 1 (1-2): both a to b */
    assert_int_equal(glucx_phys_directions(p, 0, hops, 2, dirs), 0);
    assert_int_equal(dirs[0], 0);
    assert_int_equal(dirs[1], 0);
    /* and back (a tie again: increasing coordinates, 2 -> 3 -> 0): link 2 (2-3) a to b, link 3
     * (3-0: a = 0, b = 3) from b to a */
    assert_int_equal(glucx_phys_route(p, 1, 0, hops, 8), 2);
    assert_int_equal(hops[0], 2);
    assert_int_equal(hops[1], 3);
    assert_int_equal(glucx_phys_directions(p, 1, hops, 2, dirs), 0);
    assert_int_equal(dirs[0], 0);
    assert_int_equal(dirs[1], 1);
    glucx_phys_destroy(p);
    glucx_topo_destroy(t);
    /* placed on file ranks 0 and 1: link 2 (packages 2-3) touches no rank of the communicator
     * and is announced by rank 0; link 1 (1-2) by rank 1, link 3 (0-3) by rank 0 */
    const int net_ranks2[] = {0, 1};
    const char *hosts2[] = {"p0", "p1"};
    assert_int_equal(glucx_topo_create(2, hosts2, NULL, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, net_ranks2, hosts2, 0), GLUCX_OK);
    assert_int_equal(glucx_phys_create(t, &p), GLUCX_OK);
    const int announcer2[4] = {0, 1, 0, 0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(glucx_phys_announcer(p, i), announcer2[i]);
    assert_int_equal(glucx_phys_route(p, 1, 0, hops, 8), 1);
    assert_int_equal(hops[0], 0);
    assert_int_equal(glucx_phys_directions(p, 1, hops, 1, dirs), 0);
    assert_int_equal(dirs[0], 1); /* package 1 -> 0 over link 0 (0-1) */
    glucx_phys_destroy(p);
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
}

/* The communicator on every rank of network @p dims (@p ndims dimensions, @p per ranks a
 * package), in the file's order; the caller destroys the three objects. */
static void place_all(const glucx_net_dim_t *dims, int ndims, int size, int per, glucx_net_t **net,
                      glucx_topo_t **t, glucx_phys_t **p)
{
    assert_int_equal(glucx_net_create(dims, ndims, "", net), GLUCX_OK);
    char names[64][16];
    const char *hosts[64];
    int net_ranks[64];
    assert_true(size <= 64);
    for (int r = 0; r < size; r++) {
        snprintf(names[r], sizeof(names[r]), "h%d", r / per);
        hosts[r] = names[r];
        net_ranks[r] = r;
    }
    assert_int_equal(glucx_topo_create(size, hosts, NULL, t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(*t, *net, net_ranks, hosts, 0), GLUCX_OK);
    assert_int_equal(glucx_phys_create(*t, p), GLUCX_OK);
}

/* Every ordered pair of @p p's ranks: the directions turn the route into a chain of (from, to)
 * endpoints that starts at the sender (its rank, or its package when the first link is not a
 * rank's), ends at the receiver (rank or package) and where each hop starts where the last
 * ended. Checked on the endpoints the directions select, not by walking. */
static void check_chains(const glucx_phys_t *p, int size, int per)
{
    int hops[64];
    uint8_t dirs[64];
    for (int s = 0; s < size; s++)
        for (int d = 0; d < size; d++) {
            int n = glucx_phys_route(p, s, d, hops, 64);
            assert_true(n >= 0 && n <= 64);
            assert_int_equal(glucx_phys_directions(p, s, hops, n, dirs), 0);
            int pk = -1, pi = -1; /* previous hop's "to" endpoint */
            for (int i = 0; i < n; i++) {
                const glucx_net_link_t *l = &p->links[hops[i]];
                assert_true(dirs[i] <= 1);
                int fk = dirs[i] ? (int)l->b_kind : (int)l->a_kind, fi = dirs[i] ? l->b : l->a;
                int tk = dirs[i] ? (int)l->a_kind : (int)l->b_kind, ti = dirs[i] ? l->a : l->b;
                if (i == 0) {
                    int rank_start = fk == GLUCX_NODE_RANK && fi == s;
                    int pkg_start = fk == GLUCX_NODE_PACKAGE && fi == s / per;
                    if (!rank_start && !pkg_start)
                        fail_msg("%d -> %d: hop 0 (link %d) starts at kind %d, %d", s, d, hops[i],
                                 fk, fi);
                } else if (fk != pk || fi != pi) {
                    fail_msg("%d -> %d: hop %d (link %d) starts at kind %d, %d, not where hop "
                             "%d ended (kind %d, %d)",
                             s, d, i, hops[i], fk, fi, i - 1, pk, pi);
                }
                pk = tk;
                pi = ti;
            }
            if (n > 0 && !(pk == GLUCX_NODE_RANK && pi == d) &&
                !(pk == GLUCX_NODE_PACKAGE && pi == d / per))
                fail_msg("%d -> %d: the route ends at kind %d, %d", s, d, pk, pi);
        }
}

/* The 2x2 torus of docs/topology.md: packages of 2 ranks (link 0-3: dimension 0 of packages
 * 0-3), links 4 (packages 0-1) and 5 (2-3) of dimension 1, 6 (0-2) and 7 (1-3) of
 * dimension 2. Package 0 -> 3 (rank 0 -> 6): link 4 from package 0 (a) to 1 (b), then link 7
 * from 1 (a) to 3 (b): 0, 0. Package 3 -> 0 (rank 7 -> 1): link 5 from 3 (b) to 2 (a), then
 * link 6 from 2 (b) to 0 (a): 1, 1. Rank 1 -> 0: link 0 (0-1) from b: 1. */
static void test_phys_directions_torus(void **state)
{
    (void)state;
    glucx_net_dim_t dims[3] = {{GLUCX_DIM_FULLY_CONNECTED, 2, 50, 500},
                               {GLUCX_DIM_RING, 2, 0.125, 10000},
                               {GLUCX_DIM_RING, 2, 0.125, 10000}};
    glucx_net_t *net;
    glucx_topo_t *t;
    glucx_phys_t *p;
    place_all(dims, 3, 8, 2, &net, &t, &p);
    int hops[8];
    uint8_t dirs[8];
    assert_int_equal(glucx_phys_route(p, 0, 6, hops, 8), 2);
    assert_int_equal(hops[0], 4);
    assert_int_equal(hops[1], 7);
    assert_int_equal(glucx_phys_directions(p, 0, hops, 2, dirs), 0);
    assert_int_equal(dirs[0], 0);
    assert_int_equal(dirs[1], 0);
    assert_int_equal(glucx_phys_route(p, 7, 1, hops, 8), 2);
    assert_int_equal(hops[0], 5);
    assert_int_equal(hops[1], 6);
    assert_int_equal(glucx_phys_directions(p, 7, hops, 2, dirs), 0);
    assert_int_equal(dirs[0], 1);
    assert_int_equal(dirs[1], 1);
    assert_int_equal(glucx_phys_route(p, 1, 0, hops, 8), 1);
    assert_int_equal(hops[0], 0);
    assert_int_equal(glucx_phys_directions(p, 1, hops, 1, dirs), 0);
    assert_int_equal(dirs[0], 1);
    /* link 7 (packages 1-3) does not touch rank 0's package */
    hops[0] = 7;
    assert_int_equal(glucx_phys_directions(p, 0, hops, 1, dirs), -1);
    check_chains(p, 8, 2);
    glucx_phys_destroy(p);
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
}

/* Switch dimensions: member to switch (a -> b, 0), then switch to member (b -> a, 1). Outer:
 * packages of one rank on one switch (links 0, 1, 2: package k - switch 0): 2 -> 0 crosses
 * link 2 then link 0. Dimension 0: packages of two ranks on their switch (package 0: links 0
 * and 1; 1 -> 0 crosses link 1 then link 0), then a Ring of 3 packages; every pair of both
 * networks makes a chain. */
static void test_phys_directions_switch(void **state)
{
    (void)state;
    glucx_net_dim_t outer[2] = {{GLUCX_DIM_FULLY_CONNECTED, 1, 10, 100},
                                {GLUCX_DIM_SWITCH, 3, 1, 1000}};
    glucx_net_t *net;
    glucx_topo_t *t;
    glucx_phys_t *p;
    place_all(outer, 2, 3, 1, &net, &t, &p);
    int hops[8];
    uint8_t dirs[8];
    assert_int_equal(glucx_phys_route(p, 2, 0, hops, 8), 2);
    assert_int_equal(hops[0], 2);
    assert_int_equal(hops[1], 0);
    assert_int_equal(glucx_phys_directions(p, 2, hops, 2, dirs), 0);
    assert_int_equal(dirs[0], 0);
    assert_int_equal(dirs[1], 1);
    check_chains(p, 3, 1);
    glucx_phys_destroy(p);
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
    glucx_net_dim_t inner[2] = {{GLUCX_DIM_SWITCH, 2, 10, 100}, {GLUCX_DIM_RING, 3, 1, 1000}};
    place_all(inner, 2, 6, 2, &net, &t, &p);
    assert_int_equal(glucx_phys_route(p, 1, 0, hops, 8), 2);
    assert_int_equal(hops[0], 1);
    assert_int_equal(hops[1], 0);
    assert_int_equal(glucx_phys_directions(p, 1, hops, 2, dirs), 0);
    assert_int_equal(dirs[0], 0);
    assert_int_equal(dirs[1], 1);
    check_chains(p, 6, 2);
    glucx_phys_destroy(p);
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packages_from_hosts),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_calibration_round_trip),
        cmocka_unit_test(test_phys_derived),
        cmocka_unit_test(test_phys_file),
        cmocka_unit_test(test_phys_directions_torus),
        cmocka_unit_test(test_phys_directions_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
