/*
 * Unit tests of the topology file's network (plugin/topo/net.c, net_file.c): reading the YAML
 * file and its errors, rank coordinates, physical links, dimension-order routes, and placing a
 * communicator's ranks on the file (glucx_topo_place).
 *
 * Expected links and routes of the 2x2 torus are written out by hand below; for other shapes
 * every route is checked against properties computed here independently: it is a walk of
 * adjacent links from the source to the destination, its dimensions never decrease, and its
 * length per dimension is the ring distance (min(d, n - d)), 1 (FullyConnected) or 2 (Switch).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "topo/topo.h"

static char path_buf[64];

/* Write @p text to a fresh temporary file; its path is in path_buf. */
static const char *write_file(const char *text)
{
    snprintf(path_buf, sizeof(path_buf), "/tmp/glucx-topo-XXXXXX");
    int fd = mkstemp(path_buf);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path_buf;
}

static glucx_net_t *load_text(const char *text)
{
    glucx_net_t *net = NULL;
    const char *path = write_file(text);
    glucx_status_t st = glucx_net_load(path, &net);
    if (st != GLUCX_OK)
        fail_msg("load failed: %s", glucx_last_error());
    unlink(path);
    return net;
}

/* Loading @p text fails with a message that contains the file name and every @p want. */
static void expect_error(const char *text, const char *want1, const char *want2)
{
    glucx_net_t *net = NULL;
    const char *path = write_file(text);
    assert_int_equal(glucx_net_load(path, &net), GLUCX_ERR_INVALID_ARG);
    assert_null(net);
    const char *msg = glucx_last_error();
    if (strstr(msg, path) == NULL || strstr(msg, want1) == NULL ||
        (want2 != NULL && strstr(msg, want2) == NULL))
        fail_msg("message '%s' lacks '%s' / '%s' / '%s'", msg, path, want1, want2 ? want2 : "");
    unlink(path);
}

static const char *torus_yaml = "# a 2x2 torus of packages of 2\n"
                                "topology: [FullyConnected, Ring, Ring]\n"
                                "npus_count: [2, 2, 2]\n"
                                "bandwidth: [50, 0.125, 0.25]   # GB/s\n"
                                "latency: [500, 10000, 20000]   # ns\n";

static void test_torus_by_hand(void **state)
{
    (void)state;
    glucx_net_t *net = load_text(torus_yaml);
    assert_int_equal(net->ndims, 3);
    assert_int_equal(net->nranks, 8);
    assert_int_equal(net->npackages, 4);
    assert_int_equal(net->ranks_per_package, 2);
    assert_int_equal(net->dim[1].kind, GLUCX_DIM_RING);
    assert_true(net->dim[2].bandwidth_GBps == 0.25 && net->dim[2].latency_ns == 20000);
    /* innermost fastest: rank 5 = member 1 of package 2 = coordinates (1, 0, 1) */
    int c[GLUCX_NET_MAX_DIMS];
    glucx_net_coords(net, 5, c);
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 0);
    assert_int_equal(c[2], 1);
    glucx_net_coords(net, 6, c);
    assert_int_equal(c[0], 0);
    assert_int_equal(c[1], 1);
    assert_int_equal(c[2], 1);
    /* links: 4 inside packages, then dimension 1 (0-1, 2-3), then dimension 2 (0-2, 1-3);
     * a Ring of 2 is one link */
    static const int want[8][4] = {
        {0, GLUCX_NODE_RANK, 0, 1},    {0, GLUCX_NODE_RANK, 2, 3},    {0, GLUCX_NODE_RANK, 4, 5},
        {0, GLUCX_NODE_RANK, 6, 7},    {1, GLUCX_NODE_PACKAGE, 0, 1}, {1, GLUCX_NODE_PACKAGE, 2, 3},
        {2, GLUCX_NODE_PACKAGE, 0, 2}, {2, GLUCX_NODE_PACKAGE, 1, 3},
    };
    assert_int_equal(net->nlinks, 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(net->links[i].id, i);
        assert_int_equal(net->links[i].dim, want[i][0]);
        assert_int_equal((int)net->links[i].a_kind, want[i][1]);
        assert_int_equal((int)net->links[i].b_kind, want[i][1]);
        assert_int_equal(net->links[i].a, want[i][2]);
        assert_int_equal(net->links[i].b, want[i][3]);
    }
    /* dimension order: the diagonal 0 -> 3 goes along dimension 1 first (0-1), then 1-3 */
    int r[8];
    assert_int_equal(glucx_net_package_route(net, 0, 3, r, 8), 2);
    assert_int_equal(r[0], 4);
    assert_int_equal(r[1], 7);
    assert_int_equal(glucx_net_package_route(net, 3, 0, r, 8), 2);
    assert_int_equal(r[0], 5); /* 3 -> 2 along dimension 1, then 2 -> 0 */
    assert_int_equal(r[1], 6);
    /* rank routes: inside a package its dimension-0 link; across, the package route */
    assert_int_equal(glucx_net_route(net, 6, 7, r, 8), 1);
    assert_int_equal(r[0], 3);
    assert_int_equal(glucx_net_route(net, 1, 6, r, 8), 2);
    assert_int_equal(r[0], 4);
    assert_int_equal(r[1], 7);
    assert_int_equal(glucx_net_route(net, 2, 2, r, 8), 0);
    assert_int_equal(glucx_net_route(net, 0, 8, r, 8), -1);
    assert_int_equal(glucx_net_package_route(net, 0, 4, r, 8), -1);
    glucx_net_destroy(net);
}

/* the node at the other end of link l from node (kind, id); -1 if l does not touch it */
static int other_end(const glucx_net_link_t *l, glucx_node_kind_t kind, int id,
                     glucx_node_kind_t *k2)
{
    if (l->a_kind == kind && l->a == id) {
        *k2 = l->b_kind;
        return l->b;
    }
    if (l->b_kind == kind && l->b == id) {
        *k2 = l->a_kind;
        return l->a;
    }
    return -1;
}

/* Every ordered pair of packages (or ranks of package 0 for dimension 0): the route is a walk
 * from src to dst with non-decreasing dimensions and the expected length per dimension. */
static void check_routes(const glucx_net_t *net)
{
    int route[GLUCX_NET_MAX_ROUTE];
    for (int s = 0; s < net->nranks; s++)
        for (int t = 0; t < net->nranks; t++) {
            int n = glucx_net_route(net, s, t, route, GLUCX_NET_MAX_ROUTE);
            int cs[GLUCX_NET_MAX_DIMS], ct[GLUCX_NET_MAX_DIMS];
            glucx_net_coords(net, s, cs);
            glucx_net_coords(net, t, ct);
            int same_pkg = s / net->ranks_per_package == t / net->ranks_per_package;
            int expect = 0;
            for (int d = same_pkg ? 0 : 1; d < (same_pkg ? 1 : net->ndims); d++) {
                int sz = net->dim[d].size, delta = ((ct[d] - cs[d]) % sz + sz) % sz;
                if (delta == 0)
                    continue;
                expect += net->dim[d].kind == GLUCX_DIM_RING
                              ? (delta < sz - delta ? delta : sz - delta)
                          : net->dim[d].kind == GLUCX_DIM_FULLY_CONNECTED ? 1
                                                                          : 2;
            }
            if (s == t)
                expect = 0;
            assert_int_equal(n, expect);
            glucx_node_kind_t kind = same_pkg ? GLUCX_NODE_RANK : GLUCX_NODE_PACKAGE;
            int at = same_pkg ? s : s / net->ranks_per_package;
            int last_dim = 0;
            for (int i = 0; i < n; i++) {
                const glucx_net_link_t *l = &net->links[route[i]];
                assert_int_equal(l->id, route[i]);
                assert_true(l->dim >= last_dim);
                last_dim = l->dim;
                glucx_node_kind_t k2 = kind;
                int next = other_end(l, kind, at, &k2);
                if (next < 0)
                    fail_msg("route %d -> %d: link %d does not touch %d", s, t, l->id, at);
                kind = k2;
                at = next;
            }
            if (n > 0) {
                assert_int_equal((int)kind, same_pkg ? GLUCX_NODE_RANK : GLUCX_NODE_PACKAGE);
                assert_int_equal(at, same_pkg ? t : t / net->ranks_per_package);
            }
        }
}

/* no two links of one dimension join the same pair of nodes; counts per kind */
static void check_links(const glucx_net_t *net, int want_links, int want_switches)
{
    assert_int_equal(net->nlinks, want_links);
    assert_int_equal(net->nswitches, want_switches);
    for (int i = 0; i < net->nlinks; i++)
        for (int j = i + 1; j < net->nlinks; j++) {
            const glucx_net_link_t *x = &net->links[i], *y = &net->links[j];
            assert_false(x->a_kind == y->a_kind && x->b_kind == y->b_kind && x->a == y->a &&
                         x->b == y->b);
        }
}

static void test_shapes(void **state)
{
    (void)state;
    /* Ring of 4 inside, Switch of 3 outside: 3 packages x 4 ring links + 1 switch x 3 links */
    glucx_net_t *net = load_text("topology: [Ring, Switch]\nnpus_count: [4, 3]\n"
                                 "bandwidth: [100, 12.5]\nlatency: [100, 1000]\n");
    check_links(net, 3 * 4 + 3, 1);
    check_routes(net);
    /* ring tie (distance 2 of 4) goes up: 0 -> 1 -> 2 */
    int r[8];
    assert_int_equal(glucx_net_route(net, 0, 2, r, 8), 2);
    assert_int_equal(r[0], 0);
    assert_int_equal(r[1], 1);
    /* 3 -> 0 is the wrap link (3, 0), link 3 */
    assert_int_equal(glucx_net_route(net, 3, 0, r, 8), 1);
    assert_int_equal(r[0], 3);
    /* across the switch: member link of package 0, then of package 2 */
    assert_int_equal(glucx_net_route(net, 1, 9, r, 8), 2);
    assert_int_equal(r[0], 12);
    assert_int_equal(r[1], 14);
    assert_int_equal((int)net->links[14].b_kind, GLUCX_NODE_SWITCH);
    glucx_net_destroy(net);

    /* 3-D: FC 3 x Ring 5 x FC 3 x Ring 1 (no links) */
    net = load_text("topology: [FullyConnected, Ring, FullyConnected, Ring]\n"
                    "npus_count: [3, 5, 3, 1]\nbandwidth: [1, 2, 3, 4]\nlatency: [0, 0, 0, 0]\n");
    check_links(net, 15 * 3 + 3 * 5 + 5 * 3, 0);
    check_routes(net);
    glucx_net_destroy(net);

    /* one package: every rank on one host */
    net = load_text("topology: [Switch]\nnpus_count: [4]\nbandwidth: [50]\nlatency: [1]\n");
    check_links(net, 4, 1);
    check_routes(net);
    glucx_net_destroy(net);
}

static void test_file_errors(void **state)
{
    (void)state;
    expect_error("topology: [Ring, Torus]\nnpus_count: [2, 2]\nbandwidth: [1, 1]\n"
                 "latency: [1, 1]\n",
                 ":1: field 'topology'", "Torus");
    expect_error("topology: [Ring, Ring]\nnpus_count: [2]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
                 ":2: field 'npus_count'", "1 entries");
    expect_error("topology: [Ring]\nnpus_count: [0]\nbandwidth: [1]\nlatency: [1]\n",
                 ":2: field 'npus_count'", "'0'");
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [fast]\nlatency: [1]\n",
                 ":3: field 'bandwidth'", "positive");
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [0]\nlatency: [1]\n",
                 ":3: field 'bandwidth'", NULL);
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [1]\nlatency: [-1]\n",
                 ":4: field 'latency'", "non-negative");
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [1]\n", "field 'latency'",
                 "missing");
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [1]\nlatency: [1]\nlinks: [3]\n",
                 ":5: field 'links'", "unknown field");
    expect_error("topology: [Ring]\ntopology: [Ring]\nnpus_count: [2]\nbandwidth: [1]\n"
                 "latency: [1]\n",
                 ":2: field 'topology'", "twice");
    expect_error("topology: Ring\nnpus_count: [2]\nbandwidth: [1]\nlatency: [1]\n",
                 "field 'topology'", "expected a list");
    expect_error("topology: [Ring\nnpus_count: [2]\n", "not valid YAML", NULL);
    expect_error("", "empty", NULL);
    expect_error("- Ring\n- Ring\n", "(top level)", "mapping");
    expect_error("topology: [Ring, Ring]\nnpus_count: [2048, 1024]\nbandwidth: [1, 1]\n"
                 "latency: [1, 1]\n",
                 ":2: field 'npus_count'", "more than 1048576 ranks");
    /* bandwidths and latencies beyond any real link: a unit mistake, said where */
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [1e9]\nlatency: [1]\n",
                 ":3: field 'bandwidth'", "outside");
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [1e-300]\nlatency: [1]\n",
                 ":3: field 'bandwidth'", "outside");
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [1]\nlatency: [1e13]\n",
                 ":4: field 'latency'", "more than");
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [0x10]\nlatency: [1]\n",
                 ":3: field 'bandwidth'", "decimal");
    /* one document per file */
    expect_error("topology: [Ring]\nnpus_count: [2]\nbandwidth: [1]\nlatency: [1]\n---\n"
                 "topology: [Ring]\n",
                 "second YAML document", NULL);
    glucx_net_t *net = NULL;
    assert_int_equal(glucx_net_load("/nonexistent/topo.yaml", &net), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "/nonexistent/topo.yaml"));
    assert_int_equal(glucx_net_load("/tmp", &net), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "a directory"));
    /* glucx_net_create checks what it is given, too */
    glucx_net_dim_t d = {.kind = GLUCX_DIM_RING, .size = 2, .bandwidth_GBps = 2e6};
    assert_int_equal(glucx_net_create(&d, 1, "x", &net), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "dimension 0 (Ring)"));
}

static void test_place(void **state)
{
    (void)state;
    glucx_net_t *net = load_text(torus_yaml);
    /* fits: hosts a, b, c, d hold packages 0..3 */
    const char *hosts[] = {"a", "a", "b", "b", "c", "c", "d", "d"};
    int map[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(8, hosts, NULL, &t), GLUCX_OK);
    uint64_t before = glucx_topo_digest(t);
    assert_int_equal(glucx_topo_place(t, net, map, hosts, 0), GLUCX_OK);
    assert_true(glucx_topo_digest(t) != before);
    assert_int_equal(t->npackages, 4);
    assert_int_equal(t->package_of[7], 3);
    /* nominal costs: 50 GB/s = 0.02 ns per byte inside; the slower outer dimension outside */
    assert_true(t->cost[GLUCX_LINK_INTRA].alpha_ns == 500);
    assert_true(t->cost[GLUCX_LINK_INTRA].beta_ns_per_byte == 1.0 / 50);
    assert_true(t->cost[GLUCX_LINK_INTER].alpha_ns == 20000);
    assert_true(t->cost[GLUCX_LINK_INTER].beta_ns_per_byte == 1.0 / 0.125);
    int r[8];
    assert_int_equal(glucx_topo_route(t, 0, 7, r, 8), 2);
    assert_int_equal(r[0], 4);
    glucx_topo_destroy(t);

    /* a smaller communicator placed by job rank: file ranks 1, 6 (packages 0, 3); keep costs */
    const char *two[] = {"a", "d"};
    int map2[2] = {1, 6};
    assert_int_equal(glucx_topo_create(2, two, NULL, &t), GLUCX_OK);
    double inter = t->cost[GLUCX_LINK_INTER].alpha_ns;
    assert_int_equal(glucx_topo_place(t, net, map2, two, 1), GLUCX_OK);
    assert_int_equal(t->npackages, 2);
    assert_true(t->cost[GLUCX_LINK_INTER].alpha_ns == inter);
    assert_int_equal(glucx_topo_route(t, 1, 0, r, 8), 2); /* 3 -> 0: links 5, 6 */
    assert_int_equal(r[0], 5);
    assert_int_equal(r[1], 6);
    glucx_topo_destroy(t);

    /* does not fit: package 1's ranks on two hosts */
    const char *split[] = {"a", "a", "b", "x", "c", "c", "d", "d"};
    assert_int_equal(glucx_topo_create(8, split, NULL, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, map, split, 0), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "ranks 2 and 3 are in package 1"));
    glucx_topo_destroy(t);
    /* does not fit: one host holds packages 0 and 1 */
    const char *merged[] = {"a", "a", "a", "a", "c", "c", "d", "d"};
    assert_int_equal(glucx_topo_create(8, merged, NULL, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, map, merged, 0), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "share host 'a' but are in packages 0 and 1"));
    glucx_topo_destroy(t);
    /* two ranks claim one file rank; a file rank out of range; a communicator too large */
    int dup[2] = {3, 3};
    const char *bb[] = {"b", "b"};
    assert_int_equal(glucx_topo_create(2, bb, NULL, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, dup, bb, 0), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "both claim rank 3"));
    int out[2] = {2, 8};
    assert_int_equal(glucx_topo_place(t, net, out, bb, 0), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "rank 8 in the file"));
    glucx_topo_destroy(t);
    const char *nine[9] = {"a", "a", "b", "b", "c", "c", "d", "d", "e"};
    int map9[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(glucx_topo_create(9, nine, NULL, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, map9, nine, 0), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "describes 8 ranks"));
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
}

/* dim<d> keys of a calibration: round trip, partial dimension refused, and placed on a network
 * the measured dimensions define the classes; unmeasured ones keep the file's nominal cost */
static void test_dim_calibration(void **state)
{
    (void)state;
    glucx_topo_t *cal;
    assert_int_equal(glucx_topo_create_uniform(1, 1, &cal), GLUCX_OK);
    assert_true(cal->dim_cost[0].alpha_ns < 0);
    cal->dim_cost[0] = (glucx_link_cost_t){700.0, 0.05};
    cal->dim_cost[1] = (glucx_link_cost_t){15000.0, 4.0};
    char path[] = "/tmp/glucx-cal-dims-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(glucx_topo_calibration_save(cal, path), GLUCX_OK);
    uint64_t digest = glucx_topo_costs_digest(cal);
    glucx_topo_destroy(cal);
    assert_int_equal(glucx_topo_create_uniform(1, 1, &cal), GLUCX_OK);
    assert_int_equal(glucx_topo_calibration_load(cal, path), GLUCX_OK);
    assert_true(cal->dim_cost[1].beta_ns_per_byte == 4.0 && cal->dim_cost[0].alpha_ns == 700.0);
    assert_true(cal->dim_cost[2].alpha_ns < 0);
    assert_true(glucx_topo_costs_digest(cal) == digest);

    glucx_net_t *net = load_text(torus_yaml);
    const char *hosts[] = {"a", "a", "b", "b", "c", "c", "d", "d"};
    int map[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(8, hosts, cal, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, map, hosts, 1), GLUCX_OK);
    assert_true(t->cost[GLUCX_LINK_INTRA].alpha_ns == 700.0);
    assert_true(t->cost[GLUCX_LINK_INTER].beta_ns_per_byte == 4.0); /* only dim 1 measured */
    glucx_link_cost_t d1 = glucx_topo_dim_cost(t, 1), d2 = glucx_topo_dim_cost(t, 2);
    assert_true(d1.alpha_ns == 15000.0);
    assert_true(d2.alpha_ns == 20000.0 && d2.beta_ns_per_byte == 1.0 / 0.25); /* nominal */
    assert_true(glucx_topo_dim_cost(t, 3).alpha_ns < 0);
    assert_string_equal(glucx_topo_dim_cost_source(t, 1), "calibrated");
    assert_string_equal(glucx_topo_dim_cost_source(t, 2), "nominal");
    glucx_topo_destroy(t);
    glucx_topo_destroy(cal);

    /* with the nominal costs it was measured against, a calibration is carried to the file's
     * rates: dim 1 measured as 15000 ns / 4 ns/B where the file said 10000 ns / 2 ns/B (0.5 GB/s),
     * placed on the torus file's dim 1 (10000 ns, 0.125 GB/s = 8 ns/B): 15000 ns, 16 ns/B */
    assert_int_equal(glucx_topo_create_uniform(1, 1, &cal), GLUCX_OK);
    cal->dim_cost[1] = (glucx_link_cost_t){15000.0, 4.0};
    cal->dim_nominal[1] = (glucx_link_cost_t){10000.0, 2.0};
    assert_int_equal(glucx_topo_calibration_save(cal, path), GLUCX_OK);
    digest = glucx_topo_costs_digest(cal);
    glucx_topo_destroy(cal);
    assert_int_equal(glucx_topo_create_uniform(1, 1, &cal), GLUCX_OK);
    assert_int_equal(glucx_topo_calibration_load(cal, path), GLUCX_OK);
    assert_true(cal->dim_nominal[1].alpha_ns == 10000.0 &&
                cal->dim_nominal[1].beta_ns_per_byte == 2.0);
    assert_true(glucx_topo_costs_digest(cal) == digest);
    assert_int_equal(glucx_topo_create(8, hosts, cal, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, map, hosts, 1), GLUCX_OK);
    d1 = glucx_topo_dim_cost(t, 1);
    assert_true(d1.alpha_ns == 15000.0 && d1.beta_ns_per_byte == 16.0);
    assert_true(t->cost[GLUCX_LINK_INTER].beta_ns_per_byte == 16.0); /* the classes carried too */
    assert_string_equal(glucx_topo_dim_cost_source(t, 1), "calibrated at other rates, carried");
    /* measured where the wire latency was 20 us and the overhead beyond it negative: never < 0 */
    t->dim_nominal[1] = (glucx_link_cost_t){30000.0, 8.0};
    d1 = glucx_topo_dim_cost(t, 1);
    assert_true(d1.alpha_ns == 0.0 && d1.beta_ns_per_byte == 4.0);
    t->dim_nominal[1] = (glucx_link_cost_t){10000.0, 8.0};
    assert_string_equal(glucx_topo_dim_cost_source(t, 1), "calibrated at these rates");
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
    glucx_topo_destroy(cal);

    FILE *f = fopen(path, "w");
    fprintf(f, "dim1.alpha_ns 5\n");
    fclose(f);
    assert_int_equal(glucx_topo_create_uniform(1, 1, &cal), GLUCX_OK);
    assert_int_equal(glucx_topo_calibration_load(cal, path), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "dimension 1 has only one"));
    f = fopen(path, "w");
    fprintf(f, "dim9.alpha_ns 5\n");
    fclose(f);
    assert_int_equal(glucx_topo_calibration_load(cal, path), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "line 1"));
    glucx_topo_destroy(cal);
    /* nominal costs without the measured ones, or only half of them */
    const char *bad[] = {"dim1.nominal_alpha_ns 5\ndim1.nominal_beta_ns_per_byte 2\n",
                         "dim1.alpha_ns 5\ndim1.beta_ns_per_byte 2\ndim1.nominal_alpha_ns 5\n",
                         "dim1.alpha_ns 5\ndim1.beta_ns_per_byte 2\ndim1.nominal_alpha_ns 5\n"
                         "dim1.nominal_beta_ns_per_byte 0\n"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        f = fopen(path, "w");
        fputs(bad[k], f);
        fclose(f);
        assert_int_equal(glucx_topo_create_uniform(1, 1, &cal), GLUCX_OK);
        assert_int_equal(glucx_topo_calibration_load(cal, path), GLUCX_ERR_INVALID_ARG);
        assert_non_null(strstr(glucx_last_error(), "dim1.nominal_alpha_ns"));
        glucx_topo_destroy(cal);
    }
    unlink(path);
}

static int cost_is(glucx_link_cost_t c, double alpha, double beta)
{
    return fabs(c.alpha_ns - alpha) < 1e-9 && fabs(c.beta_ns_per_byte - beta) < 1e-12;
}

/* Congestion-aware step costs on the torus above, worked out by hand from docs/topology.md's
 * routes (dimension 0: 500 ns, 0.02 ns/B; 1: 10000 ns, 8 ns/B; 2: 20000 ns, 4 ns/B). Packages
 * 0..3 sit at (0,0), (1,0), (0,1), (1,1); ranks 2p and 2p+1 in package p. */
static void test_step_costs(void **state)
{
    (void)state;
    glucx_net_t *net = load_text(torus_yaml);
    const char *hosts[] = {"a", "a", "b", "b", "c", "c", "d", "d"};
    int map[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(8, hosts, NULL, &t), GLUCX_OK);
    /* before placement: no routes, the class model (the slowest class) */
    glucx_link_cost_t b = glucx_topo_bottleneck(t);
    assert_true(
        cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 1), b.alpha_ns, b.beta_ns_per_byte));
    assert_true(cost_is(glucx_topo_pairwise_cost(t), 7 * b.alpha_ns, 7 * b.beta_ns_per_byte));
    assert_int_equal(glucx_topo_place(t, net, map, hosts, 0), GLUCX_OK);
    /* r XOR 1: inside each package; r XOR 2: both ranks of a package cross its dimension-1
     * link, two messages each way; r XOR 4: the same on dimension 2 */
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 0), 500, 0.02));
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 1), 10000, 16));
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 2), 20000, 8));
    /* r + 1: 3 -> 4 and 7 -> 0 cross a dimension-1 and a dimension-2 link; no link direction
     * carries two messages */
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_SHIFT_UP, 0), 30000, 8));
    /* r + 2: package p to p + 1, two messages on each way of every dimension-1 link */
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_SHIFT_UP, 1), 30000, 16));
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_SHIFT_UP, 2), 20000, 8));
    /* r - 1: 4 -> 3 and 0 -> 7 take two hops (dimension 1, then 2) */
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_SHIFT_DOWN, 0), 30000, 8));
    /* 2^k >= size: no such step, the class model */
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 3),
                        glucx_topo_bottleneck(t).alpha_ns,
                        glucx_topo_bottleneck(t).beta_ns_per_byte));
    /* pairwise, r + d for d = 1..7: (30000, 8) (30000, 16) (30000, 8) (20000, 8) (30000, 8)
     * (30000, 16) (30000, 8) */
    assert_true(cost_is(glucx_topo_pairwise_cost(t), 200000, 72));
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
}

/* One link at its own rate (glucx_net_set_link_rate, glucx-analyze whatif --link-rate): link 4
 * (dimension 1, packages 0-1) at 1/32 GB/s, beta 32 ns/B instead of 8. The step that crosses it
 * charges it (r XOR 2: both ranks of packages 0 and 1 cross link 4, two messages each way:
 * 2 x 32); the dimension's cost is its slowest link's; dimension 2 and its steps are untouched. */
static void test_link_rate(void **state)
{
    (void)state;
    glucx_net_t *net = load_text(torus_yaml);
    assert_int_equal(glucx_net_set_link_rate(net, 99, 1.0), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "no link 99"));
    assert_int_equal(glucx_net_set_link_rate(net, 4, 0.0), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "link 4"));
    assert_int_equal(glucx_net_set_link_rate(net, 4, 1.0 / 32), GLUCX_OK);
    assert_true(fabs(glucx_net_link_rate(net, 4) - 1.0 / 32) < 1e-15);
    assert_true(fabs(glucx_net_link_rate(net, 5) - 0.125) < 1e-15);
    assert_true(fabs(glucx_net_dim_min_rate(net, 1) - 1.0 / 32) < 1e-15);
    const char *hosts[] = {"a", "a", "b", "b", "c", "c", "d", "d"};
    int map[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(8, hosts, NULL, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_place(t, net, map, hosts, 0), GLUCX_OK);
    assert_true(cost_is(glucx_topo_dim_cost(t, 1), 10000, 32));
    assert_true(cost_is(glucx_topo_dim_cost(t, 2), 20000, 4));
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 1), 10000, 64));
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 2), 20000, 8));
    assert_true(cost_is(glucx_topo_step_cost(t, GLUCX_PATTERN_XOR, 0), 500, 0.02));
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
}

static void test_digest(void **state)
{
    (void)state;
    glucx_net_t *a = load_text(torus_yaml);
    glucx_net_t *b = load_text(torus_yaml);
    assert_true(glucx_net_digest(a) == glucx_net_digest(b));
    glucx_net_destroy(b);
    b = load_text("topology: [FullyConnected, Ring, Ring]\nnpus_count: [2, 2, 2]\n"
                  "bandwidth: [50, 0.125, 0.5]\nlatency: [500, 10000, 20000]\n");
    assert_true(glucx_net_digest(a) != glucx_net_digest(b));
    glucx_net_destroy(a);
    glucx_net_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torus_by_hand),   cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_file_errors),     cmocka_unit_test(test_place),
        cmocka_unit_test(test_digest),          cmocka_unit_test(test_step_costs),
        cmocka_unit_test(test_dim_calibration), cmocka_unit_test(test_link_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
