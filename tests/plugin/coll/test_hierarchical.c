/*
 * Tests of the topology-aware algorithms (plugin/coll/hier.c and the rows built on it) on the
 * fake transport: packages faked with host identities (as GLUCX_HOSTID does) or placed on a
 * topology file's network (glucx_net_create + glucx_topo_place, as GLUCX_TOPOLOGY does).
 * Results against the reference, bitwise identical on every rank for random floats, the bytes
 * each rank sends to each peer against the algorithm's analytic volume (computed here from the
 * shape, independently of plugin/coll/hier.c), and unequal packages refused before any traffic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "coll/hier.h"
#include "support/coll_harness.h"
#include "topo/topo.h"

/* ---- topologies ---- */

/* A test topology and, for the volume check, each rank's lines as the test derives them. */
typedef struct shape_case {
    const char *name;
    int n;
    glucx_topo_t *topo;
    glucx_net_t *net;
    int ndims;
    int size[GLUCX_NET_MAX_DIMS];
    int ring[GLUCX_NET_MAX_DIMS]; /* 1: the ring engine runs along this dimension */
    int index[64][GLUCX_NET_MAX_DIMS];
    int line[64][GLUCX_NET_MAX_DIMS][64]; /* communicator ranks of each rank's lines */
} shape_case_t;

/* Packages from host identities: rank r on host hosts[r] (a small integer). */
static void make_hosts(shape_case_t *s, const char *name, int n, const int *hosts)
{
    memset(s, 0, sizeof(*s));
    s->name = name;
    s->n = n;
    char buf[64][16];
    const char *ids[64];
    for (int r = 0; r < n; r++) {
        snprintf(buf[r], sizeof(buf[r]), "h%d", hosts[r]);
        ids[r] = buf[r];
    }
    assert_int_equal(glucx_topo_create(n, ids, NULL, &s->topo), GLUCX_OK);
    /* expected lines: packages in order of first appearance, local ranks in rank order */
    int pkg_of_host[64], npk = 0, local[64], count[64] = {0}, first[64];
    for (int h = 0; h < 64; h++)
        pkg_of_host[h] = -1;
    for (int r = 0; r < n; r++) {
        if (pkg_of_host[hosts[r]] < 0) {
            first[npk] = r;
            pkg_of_host[hosts[r]] = npk++;
        }
        local[r] = count[pkg_of_host[hosts[r]]]++;
    }
    (void)first;
    const int p = count[0];
    for (int k = 1; k < npk; k++)
        if (count[k] != p)
            return; /* unequal: no shape (ndims stays 0) */
    s->ndims = npk > 1 ? 2 : 1;
    s->size[0] = p;
    s->size[1] = npk;
    for (int r = 0; r < n; r++) {
        const int k = pkg_of_host[hosts[r]];
        s->index[r][0] = local[r];
        s->index[r][1] = k;
        for (int q = 0; q < n; q++) {
            const int kq = pkg_of_host[hosts[q]];
            if (kq == k)
                s->line[r][0][local[q]] = q;
            if (local[q] == local[r])
                s->line[r][1][kq] = q;
        }
    }
}

/* A topology file's network, every rank on the host of its package, rank r = file rank r. */
static void make_net(shape_case_t *s, const char *name, const glucx_net_dim_t *dims, int ndims)
{
    memset(s, 0, sizeof(*s));
    s->name = name;
    assert_int_equal(glucx_net_create(dims, ndims, "", &s->net), GLUCX_OK);
    const int n = s->net->nranks, p = dims[0].size;
    assert_true(n <= 64);
    s->n = n;
    char buf[64][16];
    const char *ids[64];
    int map[64];
    for (int r = 0; r < n; r++) {
        snprintf(buf[r], sizeof(buf[r]), "h%d", r / p);
        ids[r] = buf[r];
        map[r] = r;
    }
    assert_int_equal(glucx_topo_create(n, ids, NULL, &s->topo), GLUCX_OK);
    assert_int_equal(glucx_topo_place(s->topo, s->net, map, ids, 0), GLUCX_OK);
    /* dimensions: the package, then every outer dimension of size > 1 */
    int fdim[GLUCX_NET_MAX_DIMS];
    s->ndims = 0;
    for (int d = 0; d < ndims; d++) {
        if (d > 0 && dims[d].size < 2)
            continue;
        fdim[s->ndims] = d;
        s->size[s->ndims] = dims[d].size;
        s->ring[s->ndims] = dims[d].kind == GLUCX_DIM_RING;
        s->ndims++;
    }
    for (int r = 0; r < n; r++) {
        int c[GLUCX_NET_MAX_DIMS]; /* coordinates, innermost fastest */
        for (int d = 0, rest = r; d < ndims; d++) {
            c[d] = rest % dims[d].size;
            rest /= dims[d].size;
        }
        for (int k = 0; k < s->ndims; k++) {
            const int d = fdim[k];
            s->index[r][k] = c[d];
            for (int i = 0; i < dims[d].size; i++) {
                int cc[GLUCX_NET_MAX_DIMS], q = 0;
                memcpy(cc, c, sizeof(cc));
                cc[d] = i;
                for (int e = ndims - 1; e >= 0; e--)
                    q = q * dims[e].size + cc[e];
                s->line[r][k][i] = q;
            }
        }
    }
}

static void shape_free(shape_case_t *s)
{
    glucx_topo_destroy(s->topo);
    glucx_net_destroy(s->net);
}

/* ---- analytic volume ---- */

static void split(size_t count, int parts, int i, size_t *off, size_t *len)
{
    const size_t q = count / (size_t)parts, rem = count % (size_t)parts;
    *len = q + ((size_t)i < rem);
    *off = (size_t)i * q + ((size_t)i < rem ? (size_t)i : rem);
}

/* Bytes rank r sends to each peer (vol[q] += ...) in one reduce-scatter (rs) or allgather of a
 * span of cnt elements along dimension k of shape s. */
static void dim_volume(const shape_case_t *s, int r, int k, size_t cnt, size_t es, int rs,
                       uint64_t *vol)
{
    const int n = s->size[k], i = s->index[r][k];
    if (n < 2)
        return;
    const int *line = s->line[r][k];
    size_t o, l;
    if (s->ring[k]) {
        const int right = line[(i + 1) % n];
        /* ring reduce-scatter: every block but the own; allgather: every block but the right
         * neighbour's (it has gone round) */
        split(cnt, n, rs ? i : (i + 1) % n, &o, &l);
        vol[right] += (cnt - l) * es;
        return;
    }
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        split(cnt, n, rs ? j : i, &o, &l); /* rs: peer j's block; allgather: the own */
        vol[line[j]] += l * es;
    }
}

/* Allreduce of one chunk of cnt elements: torus (down through every dimension) or hierarchical
 * (down through the package, then an allreduce of the share along each outer dimension), the
 * outer dimensions from 1 + rot mod D on. */
static void allreduce_chunk_volume(const shape_case_t *s, int r, size_t cnt, size_t es, int torus,
                                   int rot, uint64_t *vol)
{
    size_t spans[GLUCX_NET_MAX_DIMS];
    int order[GLUCX_NET_MAX_DIMS]; /* dimensions in the order this rank visits them */
    const int nout = s->ndims - 1;
    order[0] = 0;
    for (int j = 1; j < s->ndims; j++)
        order[j] = 1 + (j - 1 + rot % nout) % nout;
    for (int j = 0; j < s->ndims; j++) {
        const int k = order[j];
        spans[j] = cnt;
        dim_volume(s, r, k, cnt, es, 1, vol);
        if (torus || k == 0) {
            size_t o;
            split(spans[j], s->size[k], s->index[r][k], &o, &cnt);
        } else {
            dim_volume(s, r, k, cnt, es, 0, vol);
        }
    }
    for (int j = (torus ? s->ndims : 1) - 1; j >= 0; j--) /* allgather back */
        dim_volume(s, r, order[j], spans[j], es, 0, vol);
}

/* Allreduce: hierarchical and torus in one piece, in dimension order; torus_rotated (rotated) in
 * chunks of 1 MiB (1 to 8, at most one per element), chunk c of local rank l starting at outer
 * dimension 1 + (l + c) mod D. */
static void allreduce_volume(const shape_case_t *s, int r, size_t count, size_t es, int torus,
                             int rotated, uint64_t *vol)
{
    size_t chunks = 1;
    if (rotated) {
        chunks = count * es / (1 << 20);
        chunks = chunks < 1 ? 1 : chunks > 8 ? 8 : chunks;
        chunks = chunks > count && count > 0 ? count : chunks;
    }
    for (size_t c = 0; c < chunks; c++) {
        size_t o, cnt;
        split(count, (int)chunks, (int)c, &o, &cnt);
        const int rot = s->ndims > 1 && rotated ? s->index[r][0] + (int)c : 0;
        allreduce_chunk_volume(s, r, cnt, es, torus, rot, vol);
    }
}

/* Hierarchical allgather (rs = 0) or reduce-scatter (rs = 1) of count elements per block, in
 * chunks of 1 MiB of all blocks (1 to 8, at most one per element of a block), chunk c of local
 * rank l taking the outer dimensions from 1 + (l + c) mod D on: at each dimension k blocks of
 * G = the product of the sizes of the dimensions visited before (the reduce-scatter visits them
 * in the reverse order, with the same span per dimension); inside the package blocks of the P
 * packages' data. */
static void offload_volume(const shape_case_t *s, int r, size_t count, size_t es, int rs,
                           uint64_t *vol)
{
    size_t chunks = count * (size_t)s->n * es / (4 << 20);
    chunks = chunks < 1 ? 1 : chunks > 8 ? 8 : chunks;
    chunks = chunks > count && count > 0 ? count : chunks;
    const int nout = s->ndims - 1;
    for (size_t c = 0; c < chunks; c++) {
        size_t o, cnt, G = 1;
        split(count, (int)chunks, (int)c, &o, &cnt);
        for (int j = 0; j < nout; j++) {
            const int k = 1 + (j + (s->index[r][0] + (int)c) % nout) % nout;
            dim_volume(s, r, k, (size_t)s->size[k] * G * cnt, es, rs, vol);
            G *= (size_t)s->size[k];
        }
        if (rs) { /* the package phase of the reduce-scatter runs the direct engine, P times */
            shape_case_t d = *s;
            d.ring[0] = 0;
            dim_volume(&d, r, 0, (size_t)s->size[0] * G * cnt, es, rs, vol);
        } else {
            dim_volume(s, r, 0, (size_t)s->size[0] * G * cnt, es, rs, vol);
        }
    }
}

/* ---- running ---- */

/* One case on shape s: results (harness), then the volume of every (rank, peer) pair. */
static int run_coll(const shape_case_t *s, glucx_coll_t coll, const char *alg, size_t count,
                    int in_place, glucx_dtype_t dt, glucx_op_t op, int random)
{
    glucx_test_case_t c;
    glucx_test_case_init(&c, coll, alg, s->n, count, dt, op);
    c.topo = s->topo;
    c.in_place = in_place;
    c.random = random;
    c.seed = (uint64_t)(count * 7 + (size_t)in_place + (size_t)s->n * 1000);
    if (glucx_test_run_case(&c) != 0) {
        fprintf(stderr, "  (%s %s on %s, count %zu, in_place %d)\n", glucx_coll_name(coll), alg,
                s->name, count, in_place);
        return 1;
    }
    if (s->ndims == 0) { /* unequal packages: refused by every rank, nothing sent */
        if (c.status != GLUCX_ERR_UNSUPPORTED) {
            fprintf(stderr, "%s on %s: status %s, expected unsupported\n", alg, s->name,
                    glucx_status_string(c.status));
            return 1;
        }
        for (int r = 0; r < s->n; r++)
            if (c.msgs_sent[r] != 0) {
                fprintf(stderr, "%s on %s: rank %d sent before refusing\n", alg, s->name, r);
                return 1;
            }
        return 0;
    }
    if (c.status != GLUCX_OK) {
        fprintf(stderr, "%s on %s: status %s\n", alg, s->name, glucx_status_string(c.status));
        return 1;
    }
    const int rotated = strcmp(alg, "torus_rotated") == 0;
    const int torus = rotated || strcmp(alg, "torus") == 0;
    for (int r = 0; r < s->n; r++) {
        uint64_t vol[64] = {0};
        if (coll == GLUCX_COLL_ALLREDUCE)
            allreduce_volume(s, r, count, glucx_dtype_size(dt), torus, rotated, vol);
        else
            offload_volume(s, r, count, glucx_dtype_size(dt), coll == GLUCX_COLL_REDUCE_SCATTER,
                           vol);
        for (int q = 0; q < s->n; q++)
            if (vol[q] != c.pair_bytes[r][q]) {
                fprintf(stderr,
                        "%s %s on %s, count %zu: rank %d sent %llu bytes to rank %d, the "
                        "algorithm's volume is %llu\n",
                        glucx_coll_name(coll), alg, s->name, count, r,
                        (unsigned long long)c.pair_bytes[r][q], q, (unsigned long long)vol[q]);
                return 1;
            }
    }
    return 0;
}

static const char *const allreduce_algs[] = {"hierarchical", "torus", "torus_rotated"};
#define NALGS (sizeof(allreduce_algs) / sizeof(allreduce_algs[0]))

/* Every shape the tests use; returns how many (at most max). */
static int all_shapes(shape_case_t *s, int max)
{
    int k = 0;
    static const int h2a[] = {0, 0}, h2b[] = {0, 1};
    static const int h3a[] = {0, 1, 2}, h3u[] = {0, 0, 1};
    static const int h4c[] = {0, 0, 1, 1}, h4i[] = {0, 1, 0, 1}, h4s[] = {3, 2, 1, 0};
    static const int h6i[] = {0, 1, 2, 0, 1, 2}, h6b[] = {5, 5, 5, 7, 7, 7};
    static const int h8c[] = {0, 0, 1, 1, 2, 2, 3, 3}, h8i[] = {0, 1, 0, 1, 0, 1, 0, 1};
    static const int h8u[] = {0, 0, 0, 1, 1, 1, 1, 1};
    make_hosts(&s[k++], "2 ranks, 1 package", 2, h2a);
    make_hosts(&s[k++], "2 packages of 1", 2, h2b);
    make_hosts(&s[k++], "3 packages of 1", 3, h3a);
    make_hosts(&s[k++], "3 ranks in packages of 2 and 1 (unequal)", 3, h3u);
    make_hosts(&s[k++], "2 packages of 2", 4, h4c);
    make_hosts(&s[k++], "2 interleaved packages of 2", 4, h4i);
    make_hosts(&s[k++], "4 packages of 1, hosts in reverse", 4, h4s);
    make_hosts(&s[k++], "3 interleaved packages of 2", 6, h6i);
    make_hosts(&s[k++], "2 packages of 3", 6, h6b);
    make_hosts(&s[k++], "4 packages of 2", 8, h8c);
    make_hosts(&s[k++], "2 interleaved packages of 4", 8, h8i);
    make_hosts(&s[k++], "8 ranks in packages of 3 and 5 (unequal)", 8, h8u);
    const glucx_net_dim_t torus[] = {{GLUCX_DIM_FULLY_CONNECTED, 2, 50, 500},
                                     {GLUCX_DIM_RING, 2, 0.1, 10000},
                                     {GLUCX_DIM_RING, 2, 0.1, 10000}};
    make_net(&s[k++], "2x2 torus of packages of 2", torus, 3);
    const glucx_net_dim_t ring3[] = {{GLUCX_DIM_RING, 3, 50, 500}, {GLUCX_DIM_RING, 3, 0.1, 10000}};
    make_net(&s[k++], "ring of 3 packages of a ring of 3", ring3, 2);
    const glucx_net_dim_t t32[] = {{GLUCX_DIM_FULLY_CONNECTED, 2, 50, 500},
                                   {GLUCX_DIM_RING, 3, 0.1, 10000},
                                   {GLUCX_DIM_RING, 1, 0.1, 10000},
                                   {GLUCX_DIM_RING, 2, 0.1, 10000}};
    make_net(&s[k++], "3x1x2 torus of packages of 2", t32, 4);
    const glucx_net_dim_t sw[] = {{GLUCX_DIM_FULLY_CONNECTED, 1, 50, 500},
                                  {GLUCX_DIM_SWITCH, 4, 0.1, 10000},
                                  {GLUCX_DIM_RING, 2, 0.1, 10000}};
    make_net(&s[k++], "switch of 4 x ring of 2, packages of 1", sw, 3);
    assert_true(k <= max);
    return k;
}

/* The shapes of all_shapes, built once for the tests that sweep them (cmocka group state). */
static shape_case_t *shapes;
static int nshapes;

static int shapes_setup(void **state)
{
    (void)state;
    shapes = calloc(32, sizeof(*shapes));
    if (shapes == NULL)
        return -1;
    nshapes = all_shapes(shapes, 32);
    return 0;
}

static int shapes_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < nshapes; i++)
        shape_free(&shapes[i]);
    free(shapes);
    return 0;
}

static void test_allreduce_shapes(void **state)
{
    (void)state;
    shape_case_t *s = shapes;
    const int ns = nshapes;
    int fails = 0;
    for (int i = 0; i < ns; i++)
        for (size_t a = 0; a < NALGS; a++) {
            const size_t n = (size_t)s[i].n;
            const size_t counts[] = {0, 1, n - 1, n + 1, 17, 1000, 100003};
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
                for (int ip = 0; ip < 2; ip++)
                    fails += run_coll(&s[i], GLUCX_COLL_ALLREDUCE, allreduce_algs[a], counts[ci],
                                      ip, GLUCX_DTYPE_F32, GLUCX_OP_SUM, 0);
        }
    assert_int_equal(fails, 0);
}

/* Random floats: within tolerance of the reference and bitwise equal on every rank (the
 * harness checks both for allreduce), every dtype and op on the torus. */
static void test_allreduce_dtypes_random(void **state)
{
    (void)state;
    shape_case_t *s = shapes;
    const int ns = nshapes;
    int fails = 0;
    for (int i = 0; i < ns; i++)
        for (size_t a = 0; a < NALGS; a++) {
            fails += run_coll(&s[i], GLUCX_COLL_ALLREDUCE, allreduce_algs[a], 100003, i % 2,
                              GLUCX_DTYPE_F32, GLUCX_OP_SUM, 1);
            fails += run_coll(&s[i], GLUCX_COLL_ALLREDUCE, allreduce_algs[a], 1001, 0,
                              GLUCX_DTYPE_BF16, GLUCX_OP_AVG, 1);
        }
    const int torus = 12; /* "2x2 torus of packages of 2" */
    assert_string_equal(s[torus].name, "2x2 torus of packages of 2");
    for (int dt = 0; dt < GLUCX_DTYPE_COUNT; dt++)
        for (int op = 0; op < GLUCX_OP_COUNT; op++)
            if (glucx_op_supported((glucx_op_t)op, (glucx_dtype_t)dt))
                for (size_t a = 0; a < NALGS; a++)
                    fails += run_coll(&s[torus], GLUCX_COLL_ALLREDUCE, allreduce_algs[a], 37,
                                      (dt + op) % 2, (glucx_dtype_t)dt, (glucx_op_t)op, 0);
    assert_int_equal(fails, 0);
}

/* torus_rotated in several chunks in flight (2, 4 and 8 chunks of 1 MiB): results within
 * tolerance and bitwise equal on every rank (random floats), volume per pair, on every shape. */
static void test_rotated_chunks(void **state)
{
    (void)state;
    shape_case_t *s = shapes;
    const int ns = nshapes;
    int fails = 0;
    for (int i = 0; i < ns; i++)
        fails += run_coll(&s[i], GLUCX_COLL_ALLREDUCE, "torus_rotated", 550007, i % 2,
                          GLUCX_DTYPE_F32, GLUCX_OP_SUM, 1);
    const int torus = 12; /* "2x2 torus of packages of 2" */
    assert_string_equal(s[torus].name, "2x2 torus of packages of 2");
    for (int ip = 0; ip < 2; ip++)
        fails += run_coll(&s[torus], GLUCX_COLL_ALLREDUCE, "torus_rotated", 1100003, ip,
                          GLUCX_DTYPE_F32, GLUCX_OP_SUM, 1);
    fails += run_coll(&s[torus], GLUCX_COLL_ALLREDUCE, "torus_rotated", 2200013, 1, GLUCX_DTYPE_F32,
                      GLUCX_OP_SUM, 1);
    fails += run_coll(&s[torus], GLUCX_COLL_ALLREDUCE, "torus_rotated", 300007, 0, GLUCX_DTYPE_F64,
                      GLUCX_OP_MAX, 1);
    assert_int_equal(fails, 0);
}

/* Hierarchical allgather and reduce-scatter on every shape: results, volume per pair. */
static void test_offload_shapes(void **state)
{
    (void)state;
    shape_case_t *s = shapes;
    const int ns = nshapes;
    int fails = 0;
    for (int i = 0; i < ns; i++) {
        const size_t n = (size_t)s[i].n;
        const size_t counts[] = {0, 1, n - 1, 17, 1000, 30001};
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
            for (int ip = 0; ip < 2; ip++) {
                fails += run_coll(&s[i], GLUCX_COLL_ALLGATHER, "hierarchical", counts[ci], ip,
                                  GLUCX_DTYPE_I32, GLUCX_OP_SUM, 0);
                fails += run_coll(&s[i], GLUCX_COLL_REDUCE_SCATTER, "hierarchical", counts[ci], ip,
                                  GLUCX_DTYPE_F32, GLUCX_OP_SUM, 0);
            }
        fails += run_coll(&s[i], GLUCX_COLL_REDUCE_SCATTER, "hierarchical", 1001, i % 2,
                          GLUCX_DTYPE_F64, GLUCX_OP_AVG, 1);
        fails += run_coll(&s[i], GLUCX_COLL_REDUCE_SCATTER, "hierarchical", 333, 0, GLUCX_DTYPE_I64,
                          GLUCX_OP_PROD, 0);
        fails += run_coll(&s[i], GLUCX_COLL_ALLGATHER, "hierarchical", 333, 1, GLUCX_DTYPE_BF16,
                          GLUCX_OP_SUM, 0);
    }
    assert_int_equal(fails, 0);
}

/* Hierarchical allgather and reduce-scatter in several chunks in flight (2 to 8 chunks of 4 MiB
 * of all blocks): results (random floats for the reduce-scatter: within tolerance, bitwise
 * equal on every rank), volume per pair, on every shape. */
static void test_offload_chunks(void **state)
{
    (void)state;
    shape_case_t *s = shapes;
    const int ns = nshapes;
    int fails = 0;
    for (int i = 0; i < ns; i++) {
        const size_t count = ((size_t)5 << 21) / ((size_t)s[i].n * 4) + 7; /* 2 chunks */
        fails += run_coll(&s[i], GLUCX_COLL_ALLGATHER, "hierarchical", count, i % 2,
                          GLUCX_DTYPE_I32, GLUCX_OP_SUM, 0);
        fails += run_coll(&s[i], GLUCX_COLL_REDUCE_SCATTER, "hierarchical", count, (i + 1) % 2,
                          GLUCX_DTYPE_F32, GLUCX_OP_SUM, 1);
    }
    const int torus = 12; /* "2x2 torus of packages of 2" */
    assert_string_equal(s[torus].name, "2x2 torus of packages of 2");
    for (int ip = 0; ip < 2; ip++) { /* 4 and 8 chunks */
        fails += run_coll(&s[torus], GLUCX_COLL_ALLGATHER, "hierarchical", 600011 * (1 + ip), ip,
                          GLUCX_DTYPE_F32, GLUCX_OP_SUM, 0);
        fails += run_coll(&s[torus], GLUCX_COLL_REDUCE_SCATTER, "hierarchical", 600011 * (2 - ip),
                          ip, GLUCX_DTYPE_F32, GLUCX_OP_SUM, 1);
    }
    fails += run_coll(&s[torus], GLUCX_COLL_REDUCE_SCATTER, "hierarchical", 300007, 0,
                      GLUCX_DTYPE_I64, GLUCX_OP_PROD, 0);
    assert_int_equal(fails, 0);
}

/* The layout the library derives equals the test's (lines and indices on every rank). */
static void test_layout(void **state)
{
    (void)state;
    shape_case_t *s = shapes;
    const int ns = nshapes;
    for (int i = 0; i < ns; i++) {
        glucx_coll_shape_t sh;
        const int has = glucx_coll_shape(s[i].topo, &sh);
        assert_int_equal(has, s[i].ndims > 0);
        if (!has)
            continue;
        assert_int_equal(sh.ndims, s[i].ndims);
        for (int r = 0; r < s[i].n; r++) {
            glucx_coll_ctx_t ctx;
            memset(&ctx, 0, sizeof(ctx));
            ctx.rank = ctx.comm_rank = r;
            ctx.size = ctx.comm_size = s[i].n;
            ctx.topo = s[i].topo;
            glucx_coll_layout_t lay;
            assert_int_equal(glucx_coll_layout_init(&ctx, &lay), GLUCX_OK);
            for (int k = 0; k < sh.ndims; k++) {
                assert_int_equal(sh.size[k], s[i].size[k]);
                assert_int_equal(lay.index[k], s[i].index[r][k]);
                for (int j = 0; j < sh.size[k]; j++)
                    assert_int_equal(lay.line[k][j], s[i].line[r][k][j]);
            }
            glucx_coll_layout_fini(&lay);
        }
    }
}

/* Costs: infinite on one package; on the torus, the torus allreduce moves less over the slow
 * links than the hierarchical one, and both less than the flat ring at large sizes. */
static void test_costs(void **state)
{
    (void)state;
    shape_case_t s;
    static const int one[] = {0, 0, 0, 0};
    make_hosts(&s, "one package", 4, one);
    const glucx_coll_table_t *t = glucx_coll_tables[GLUCX_COLL_ALLREDUCE];
    const int h = glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "hierarchical");
    const int to = glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "torus");
    const int ring = glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "ring");
    assert_true(h >= 0 && to >= 0 && ring >= 0);
    assert_true(isinf(t->algs[h].cost(s.topo, 1 << 20)));
    assert_true(isinf(t->algs[to].cost(s.topo, 1 << 20)));
    shape_free(&s);
    const glucx_net_dim_t torus[] = {{GLUCX_DIM_FULLY_CONNECTED, 2, 50, 500},
                                     {GLUCX_DIM_RING, 2, 0.1, 10000},
                                     {GLUCX_DIM_RING, 2, 0.1, 10000}};
    make_net(&s, "torus", torus, 3);
    const double m = 16 << 20;
    /* by hand: beta outer = 10 ns/B, 2 flows per link; inner beta 0.02, alpha 500 */
    const double g = s.topo->gamma_ns_per_byte;
    const double rs0 = 500 + 0.5 * m * (0.02 + g), ag0 = 500 + 0.5 * m * 0.02;
    const double want_t = rs0 + ag0 + (10000 + 0.5 * (m / 2) * (20 + g)) +
                          (10000 + 0.5 * (m / 2) * 20) + (10000 + 0.5 * (m / 4) * (20 + g)) +
                          (10000 + 0.5 * (m / 4) * 20);
    const double want_h =
        rs0 + ag0 + 2 * ((10000 + 0.5 * (m / 2) * (20 + g)) + (10000 + 0.5 * (m / 2) * 20));
    assert_true(fabs(t->algs[to].cost(s.topo, (size_t)m) - want_t) < 1e-6 * want_t);
    assert_true(fabs(t->algs[h].cost(s.topo, (size_t)m) - want_h) < 1e-6 * want_h);
    assert_true(t->algs[to].cost(s.topo, (size_t)m) < t->algs[h].cost(s.topo, (size_t)m));
    /* rotated, in 8 chunks of mc = 2 MiB in flight: one chunk's sequential time (local rank 0 on
     * dimension 1 while local rank 1 is on dimension 2, one flow per link and phase) plus the
     * busiest resource's work less one chunk's share of it; the busiest is an outer link
     * direction: per chunk, 2 x (mc/2 + mc/4) / 2 bytes at 10 ns/B */
    const int rt = glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "torus_rotated");
    const double mc = m / 8;
    const double seq_r = 500 + 0.5 * mc * (0.02 + g) + 500 + 0.5 * mc * 0.02 +
                         (10000 + 0.5 * (mc / 2) * (10 + g)) + (10000 + 0.5 * (mc / 2) * 10) +
                         (10000 + 0.5 * (mc / 4) * (10 + g)) + (10000 + 0.5 * (mc / 4) * 10);
    const double link = 8 * (2 * 0.5 * (mc / 2 + mc / 4) * 10);
    const double want_r = link + seq_r - link / 8;
    assert_true(fabs(t->algs[rt].cost(s.topo, (size_t)m) - want_r) < 1e-6 * want_r);
    /* one chunk (1 MiB): exactly the sequential rotated torus */
    const double m1 = 1 << 20;
    const double seq_1 = 500 + 0.5 * m1 * (0.02 + g) + 500 + 0.5 * m1 * 0.02 +
                         (10000 + 0.5 * (m1 / 2) * (10 + g)) + (10000 + 0.5 * (m1 / 2) * 10) +
                         (10000 + 0.5 * (m1 / 4) * (10 + g)) + (10000 + 0.5 * (m1 / 4) * 10);
    assert_true(fabs(t->algs[rt].cost(s.topo, (size_t)m1) - seq_1) < 1e-6 * seq_1);
    /* hierarchical allgather / reduce-scatter of m bytes in all, in 4 chunks of mo = 4 MiB in
     * flight. One chunk in sequence: the package phase is one direct exchange per package
     * position (4, of mo/4 each); outside, local rank 0 starts on dimension 1 while local rank
     * 1 starts on dimension 2 (one flow per link): the allgather's first phase one allgather of
     * single blocks (mo/4 per line), its second one per position a member holds (2, of mo/4
     * each); the reduce-scatter's first phase mo/2 per line, its second mo/4. The busiest
     * resource, an outer link direction: per chunk mo/8 + 2 mo/8 from the two local ranks'
     * chunks, at 10 ns/B, 4 chunks. */
    const double mo = m / 4;
    const double seq_ag = 4 * (500 + 0.5 * (mo / 4) * 0.02) + (10000 + 0.5 * (mo / 4) * 10) +
                          2 * (10000 + 0.5 * (mo / 4) * 10);
    const double seq_rs = 4 * (500 + 0.5 * (mo / 4) * (0.02 + g)) +
                          (10000 + 0.5 * (mo / 4) * (10 + g)) + (10000 + 0.5 * (mo / 2) * (10 + g));
    const double olink = 4 * ((mo / 8 + 2 * mo / 8) * 10);
    const double want_ag = olink + seq_ag - olink / 4, want_rs = olink + seq_rs - olink / 4;
    const glucx_coll_table_t *ag = glucx_coll_tables[GLUCX_COLL_ALLGATHER];
    const glucx_coll_table_t *rsc = glucx_coll_tables[GLUCX_COLL_REDUCE_SCATTER];
    const int agh = glucx_test_alg_index(GLUCX_COLL_ALLGATHER, "hierarchical");
    const int rsh = glucx_test_alg_index(GLUCX_COLL_REDUCE_SCATTER, "hierarchical");
    assert_true(fabs(ag->algs[agh].cost(s.topo, (size_t)m) - want_ag) < 1e-6 * want_ag);
    assert_true(fabs(rsc->algs[rsh].cost(s.topo, (size_t)m) - want_rs) < 1e-6 * want_rs);
    assert_true(
        ag->algs[agh].cost(s.topo, (size_t)m) <
        ag->algs[glucx_test_alg_index(GLUCX_COLL_ALLGATHER, "ring")].cost(s.topo, (size_t)m));
    assert_true(t->algs[to].cost(s.topo, (size_t)m) < t->algs[ring].cost(s.topo, (size_t)m));
    shape_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),           cmocka_unit_test(test_costs),
        cmocka_unit_test(test_allreduce_shapes), cmocka_unit_test(test_allreduce_dtypes_random),
        cmocka_unit_test(test_offload_shapes),   cmocka_unit_test(test_rotated_chunks),
        cmocka_unit_test(test_offload_chunks),
    };
    return cmocka_run_group_tests(tests, shapes_setup, shapes_teardown);
}
