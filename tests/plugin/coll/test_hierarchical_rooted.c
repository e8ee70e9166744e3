/*
 * Tests of the hierarchical broadcast, reduce, alltoall and alltoallv (plugin/coll/broadcast/
 * hierarchical.c, reduce/, alltoall/, alltoallv/hierarchical.c) on the fake transport, with
 * packages faked from host identities (as GLUCX_HOSTID does) or placed on a topology file's
 * 2x2 torus (as GLUCX_TOPOLOGY does): results against references computed here (the reduce's
 * bitwise, in its documented bracketing), every root, odd and zero counts, in place; the
 * traffic between packages (only leaders / matched local ranks cross, and how many bytes);
 * unequal packages refused before any traffic, one package run as the package's phase; a rank that
 * never arrives; the costs against hand-computed values.
 */
#include "support/coll_world.h"

#include "coll/alltoall/alltoall.h"
#include "coll/alltoallv/alltoallv.h"
#include "coll/broadcast/broadcast.h"
#include "coll/reduce/reduce.h"

/* ---- shapes ---- */

typedef struct shape {
    const char *name;
    int n;
    int hosts[CW_MAX_RANKS];
    const glucx_net_dim_t *dims; /* NULL: hosts only */
    int ndims;
    /* derived here: package of each rank (positions in order of first appearance, which is
     * the file's package order for the torus below), local rank, ranks per package */
    int pkg[CW_MAX_RANKS], local[CW_MAX_RANKS], npk, p, equal;
} shape_t;

static const glucx_net_dim_t torus_dims[] = {{GLUCX_DIM_FULLY_CONNECTED, 2, 50, 500},
                                             {GLUCX_DIM_RING, 2, 0.1, 10000},
                                             {GLUCX_DIM_RING, 2, 0.1, 10000}};

static shape_t shapes[] = {
    {.name = "2 packages of 1", .n = 2, .hosts = {0, 1}},
    {.name = "1 package of 2", .n = 2, .hosts = {0, 0}},
    {.name = "3 packages of 1", .n = 3, .hosts = {0, 1, 2}},
    {.name = "packages of 2 and 1", .n = 3, .hosts = {0, 0, 1}},
    {.name = "2 packages of 2", .n = 4, .hosts = {0, 0, 1, 1}},
    {.name = "2 interleaved packages of 2", .n = 4, .hosts = {0, 1, 0, 1}},
    {.name = "3 interleaved packages of 2", .n = 6, .hosts = {4, 2, 9, 4, 2, 9}},
    {.name = "4 packages of 2", .n = 8, .hosts = {0, 0, 1, 1, 2, 2, 3, 3}},
    {.name = "2 interleaved packages of 4", .n = 8, .hosts = {0, 1, 0, 1, 0, 1, 0, 1}},
    {.name = "2 packages of 4, hosts reversed", .n = 8, .hosts = {7, 7, 7, 7, 3, 3, 3, 3}},
    {.name = "packages of 3 and 5", .n = 8, .hosts = {0, 0, 0, 1, 1, 1, 1, 1}},
    {.name = "2x2 torus of packages of 2",
     .n = 8,
     .hosts = {0, 0, 1, 1, 2, 2, 3, 3},
     .dims = torus_dims,
     .ndims = 3},
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static void shape_derive(shape_t *s)
{
    int first[CW_MAX_RANKS], count[CW_MAX_RANKS] = {0};
    s->npk = 0;
    for (int r = 0; r < s->n; r++) {
        int k = 0;
        while (k < s->npk && s->hosts[first[k]] != s->hosts[r])
            k++;
        if (k == s->npk)
            first[s->npk++] = r;
        s->pkg[r] = k;
        s->local[r] = count[k]++;
    }
    s->p = count[0];
    s->equal = 1;
    for (int k = 0; k < s->npk; k++)
        s->equal &= count[k] == s->p;
}

/* The rank at package position q, local rank l. */
static int rank_at(const shape_t *s, int q, int l)
{
    for (int r = 0; r < s->n; r++)
        if (s->pkg[r] == q && s->local[r] == l)
            return r;
    return -1;
}

/* Whether the hierarchical rows run on s (else every rank must decline): packages of equal
 * size (on one package they run as the package's phase alone) */
static int runs_on(const shape_t *s)
{
    return s->equal;
}

/* A topology for s (and the network it is placed on, destroyed after it). */
static glucx_topo_t *make_topo(const shape_t *s, glucx_net_t **net_p)
{
    char buf[CW_MAX_RANKS][16];
    const char *ids[CW_MAX_RANKS];
    int map[CW_MAX_RANKS];
    for (int r = 0; r < s->n; r++) {
        snprintf(buf[r], sizeof(buf[r]), "h%d", s->hosts[r]);
        ids[r] = buf[r];
        map[r] = r;
    }
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(s->n, ids, NULL, &t), GLUCX_OK);
    *net_p = NULL;
    if (s->dims != NULL) {
        assert_int_equal(glucx_net_create(s->dims, s->ndims, "", net_p), GLUCX_OK);
        assert_int_equal(glucx_topo_place(t, *net_p, map, ids, 0), GLUCX_OK);
    }
    return t;
}

/* A world on shape s running the hierarchical row of coll */
static glucx_net_t *world(cw_t *c, const shape_t *s, glucx_coll_t coll)
{
    const int alg = glucx_test_alg_index(coll, "hierarchical");
    assert_true(alg >= 0);
    cw_init(c, s->n, coll, alg);
    glucx_topo_destroy(c->topo);
    glucx_net_t *net;
    c->topo = make_topo(s, &net);
    return net;
}

static void world_fini(cw_t *c, glucx_net_t *net)
{
    glucx_topo_destroy(c->topo);
    c->topo = NULL;
    cw_fini(c);
    glucx_net_destroy(net);
}

/* Every rank declined before sending anything (unequal packages). */
static void expect_declined(const cw_t *c, const shape_t *s)
{
    for (int r = 0; r < c->n; r++) {
        uint64_t m[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, m, NULL);
        for (int q = 0; q < c->n; q++)
            if (m[q] != 0)
                print_error("%s: rank %d sent %llu messages to %d before declining\n", s->name, r,
                            (unsigned long long)m[q], q);
        if (c->rank[r].status != GLUCX_ERR_UNSUPPORTED)
            print_error("%s: rank %d: %s, want unsupported\n", s->name, r,
                        glucx_status_string(c->rank[r].status));
        assert_int_equal(c->rank[r].status, GLUCX_ERR_UNSUPPORTED);
    }
}

/* Bytes each package receives from (in = 1) or sends to (in = 0) other packages; and fails
 * when a rank other than the ones @p leader allows talks across packages. */
static void cross_bytes(const cw_t *c, const shape_t *s, int in,
                        int (*leader)(const shape_t *, int, int, int), int arg, uint64_t *per_pkg)
{
    memset(per_pkg, 0, sizeof(uint64_t) * CW_MAX_RANKS);
    for (int r = 0; r < c->n; r++) {
        uint64_t m[CW_MAX_RANKS], b[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, m, b);
        for (int q = 0; q < c->n; q++) {
            if (s->pkg[q] == s->pkg[r] || m[q] == 0)
                continue;
            if (!leader(s, r, q, arg))
                print_error("%s: rank %d sent %llu messages to rank %d across packages\n", s->name,
                            r, (unsigned long long)m[q], q);
            assert_true(leader(s, r, q, arg));
            per_pkg[in ? s->pkg[q] : s->pkg[r]] += b[q];
        }
    }
}

/* Both ends have local rank @p l */
static int both_local(const shape_t *s, int r, int q, int l)
{
    return s->local[r] == l && s->local[q] == l;
}

/* Both ends have the same local rank */
static int matched(const shape_t *s, int r, int q, int unused)
{
    (void)unused;
    return s->local[r] == s->local[q];
}

/* ---- broadcast ---- */

static void bcast_case(const shape_t *s, int root, size_t count, glucx_dtype_t dt)
{
    cw_t c;
    glucx_net_t *net = world(&c, s, GLUCX_COLL_BROADCAST);
    const size_t bytes = count * glucx_dtype_size(dt);
    const uint32_t salt = (uint32_t)(s->n * 1000 + root * 10) + (uint32_t)count;
    for (int r = 0; r < s->n; r++) {
        void *buf = c.rank[r].mem[0] = cw_malloc(bytes);
        if (r == root)
            cw_fill(buf, bytes, salt, root, 0);
        else
            memset(buf, 0xEE, bytes);
        c.rank[r].args.recvbuf = count ? buf : NULL;
        c.rank[r].args.count = count;
        c.rank[r].args.dtype = dt;
        c.rank[r].args.root = root;
    }
    cw_run(&c);
    if (!runs_on(s)) {
        expect_declined(&c, s);
        world_fini(&c, net);
        return;
    }
    cw_expect_ok(&c);
    for (int r = 0; r < s->n; r++) {
        const size_t bad = cw_bad(c.rank[r].mem[0], bytes, salt, root, 0);
        if (bad)
            print_error("%s root %d count %zu: rank %d has %zu wrong bytes\n", s->name, root, count,
                        r, bad);
        assert_int_equal(bad, 0);
    }
    /* only the root's local ranks cross; each package other than the root's gets the message
     * exactly once with a binomial tree across packages (small messages), at most twice with
     * scatter-allgather (large ones: the root's package then gets its share of the ring) */
    uint64_t in[CW_MAX_RANKS];
    cross_bytes(&c, s, 1, both_local, s->local[root], in);
    for (int k = 0; k < s->npk; k++) {
        const uint64_t want = k == s->pkg[root] ? 0 : bytes;
        const int ok = count <= 64 ? in[k] == want
                                   : (k == s->pkg[root] ? in[k] <= bytes
                                                        : in[k] >= bytes && in[k] <= 2 * bytes);
        if (!ok)
            print_error("%s root %d count %zu: package %d received %llu bytes, want %llu\n",
                        s->name, root, count, k, (unsigned long long)in[k],
                        (unsigned long long)want);
        assert_true(ok);
    }
    world_fini(&c, net);
}

static void test_broadcast(void **state)
{
    (void)state;
    static const size_t counts[] = {0, 1, 7, 13, 64, 100003};
    int k = 0;
    for (size_t i = 0; i < NSHAPES; i++)
        for (int root = 0; root < shapes[i].n; root++)
            for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++, k++)
                bcast_case(&shapes[i], root, counts[j], cw_dtype(k));
}

/* ---- reduce ---- */

/* The halving bracketing of x[lo..hi): lower half (taking the extra one) on the left */
static float halve_f32(const float *x, int lo, int hi)
{
    if (hi - lo == 1)
        return x[lo];
    const int mid = lo + (hi - lo + 1) / 2;
    return halve_f32(x, lo, mid) + halve_f32(x, mid, hi);
}

static double halve_f64(const double *x, int lo, int hi)
{
    if (hi - lo == 1)
        return x[lo];
    const int mid = lo + (hi - lo + 1) / 2;
    return halve_f64(x, lo, mid) + halve_f64(x, mid, hi);
}

/* The documented order: halving inside each package (local ranks in rank order), then halving
 * over the packages' results in package order. */
static void reduce_ref_sum(const shape_t *s, glucx_dtype_t dt, void *const *in, size_t count,
                           void *out)
{
    for (size_t j = 0; j < count; j++) {
        if (dt == GLUCX_DTYPE_F32) {
            float part[CW_MAX_RANKS], x[CW_MAX_RANKS];
            for (int q = 0; q < s->npk; q++) {
                for (int l = 0; l < s->p; l++)
                    memcpy(&x[l], (const char *)in[rank_at(s, q, l)] + j * 4, 4);
                part[q] = halve_f32(x, 0, s->p);
            }
            const float v = halve_f32(part, 0, s->npk);
            memcpy((char *)out + j * 4, &v, 4);
        } else {
            double part[CW_MAX_RANKS], x[CW_MAX_RANKS];
            for (int q = 0; q < s->npk; q++) {
                for (int l = 0; l < s->p; l++)
                    memcpy(&x[l], (const char *)in[rank_at(s, q, l)] + j * 8, 8);
                part[q] = halve_f64(x, 0, s->p);
            }
            const double v = halve_f64(part, 0, s->npk);
            memcpy((char *)out + j * 8, &v, 8);
        }
    }
}

/* @p random: random floats (F32/F64 SUM), the root's result bitwise the documented order;
 * else exact inputs, against the rank-order reference. */
static void reduce_case(const shape_t *s, int root, size_t count, glucx_dtype_t dt, glucx_op_t op,
                        int random, int in_place)
{
    cw_t c;
    glucx_net_t *net = world(&c, s, GLUCX_COLL_REDUCE);
    const size_t bytes = count * glucx_dtype_size(dt);
    const uint64_t seed = (uint64_t)s->n * 7919 + (uint64_t)root * 131 + count;
    void *pristine[CW_MAX_RANKS];
    for (int r = 0; r < s->n; r++) {
        cw_rank_t *k = &c.rank[r];
        void *in = k->mem[0] = cw_malloc(bytes);
        if (random)
            glucx_test_fill_random(dt, in, count, seed + (uint64_t)r);
        else
            glucx_test_fill_exact(dt, op, in, count, seed + (uint64_t)r);
        pristine[r] = k->mem[1] = cw_malloc(bytes);
        memcpy(pristine[r], in, bytes);
        k->mem[2] = cw_malloc(bytes);
        memset(k->mem[2], 0xEE, bytes);
        k->args.sendbuf = in;
        k->args.recvbuf = r % 2 ? NULL : k->mem[2];
        if (r == root) {
            k->args.recvbuf = k->mem[2];
            if (in_place) {
                memcpy(k->mem[2], in, bytes);
                k->args.sendbuf = GLUCX_IN_PLACE;
            }
        }
        k->args.count = count;
        k->args.dtype = dt;
        k->args.op = op;
        k->args.root = root;
    }
    cw_run(&c);
    if (!runs_on(s)) {
        expect_declined(&c, s);
        world_fini(&c, net);
        return;
    }
    cw_expect_ok(&c);
    void *want = cw_malloc(bytes);
    if (random)
        reduce_ref_sum(s, dt, pristine, count, want);
    else
        glucx_test_ref_reduce(dt, op, s->n, (const void *const *)pristine, count, want);
    const void *got = c.rank[root].mem[2];
    const size_t at = random ? (memcmp(got, want, bytes) == 0 ? (size_t)-1 : 0)
                             : glucx_test_compare(dt, got, want, count, 0);
    if (at != (size_t)-1)
        print_error("%s root %d count %zu %s %s: element %zu is %.17g, want %.17g\n", s->name, root,
                    count, glucx_dtype_name(dt), glucx_op_name(op), at, glucx_test_get(dt, got, at),
                    glucx_test_get(dt, want, at));
    assert_true(at == (size_t)-1);
    for (int r = 0; r < s->n; r++) {
        if (!(r == root && in_place) && bytes > 0)
            assert_memory_equal(c.rank[r].mem[0], pristine[r], bytes);
        if (r != root)
            assert_true(cw_all(c.rank[r].mem[2], bytes, 0xEE));
    }
    /* only the root's local ranks cross; with the binomial tree across packages (up to 4 KB
     * on these shapes: below where the reduce-scatter + gather pays, 7.8 KB on the torus), every
     * package but the root's sends its partial result exactly once; with the reduce-scatter +
     * gather (large vectors, a power-of-two number of packages), at most twice */
    uint64_t out[CW_MAX_RANKS];
    cross_bytes(&c, s, 0, both_local, s->local[root], out);
    for (int k = 0; k < s->npk; k++) {
        const uint64_t want = k == s->pkg[root] ? 0 : bytes;
        const int ok = bytes <= 4100 ? out[k] == want : out[k] <= 2 * bytes;
        if (!ok)
            print_error("%s root %d count %zu: package %d sent %llu bytes, want %llu\n", s->name,
                        root, count, k, (unsigned long long)out[k], (unsigned long long)want);
        assert_true(ok);
    }
    free(want);
    world_fini(&c, net);
}

static void test_reduce(void **state)
{
    (void)state;
    static const size_t counts[] = {0, 1, 7, 13, 1001};
    for (size_t i = 0; i < NSHAPES; i++)
        for (int root = 0; root < shapes[i].n; root++)
            for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++) {
                const int ip = (int)((root + j) % 2);
                reduce_case(&shapes[i], root, counts[j], GLUCX_DTYPE_F32, GLUCX_OP_SUM, 1, ip);
                reduce_case(&shapes[i], root, counts[j], GLUCX_DTYPE_F64, GLUCX_OP_SUM, 1, !ip);
            }
}

/* Large vectors (400 KB of f32): the phases with a power-of-two number of members run the
 * reduce-scatter + gather (by their costs: inside packages of 2 and 4 from 30 and 13 KB, across
 * 2 and 4 packages without a file from 400 and 76 KB, across the torus's 4 from 8 KB), whose
 * bracketing is the tree's: bitwise the same reference. */
static void test_reduce_large(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSHAPES; i++)
        for (int root = 0; root<shapes[i].n; root += shapes[i].n> 1 ? shapes[i].n - 1 : 1) {
            reduce_case(&shapes[i], root, 100003, GLUCX_DTYPE_F32, GLUCX_OP_SUM, 1, root % 2);
            reduce_case(&shapes[i], root, 60001, GLUCX_DTYPE_F64, GLUCX_OP_SUM, 1, 0);
        }
}

/* Every supported (dtype, op), exact inputs, on the torus and an interleaved shape; AVG too. */
static void test_reduce_ops(void **state)
{
    (void)state;
    const shape_t *sh[] = {&shapes[NSHAPES - 1], &shapes[6]};
    for (size_t i = 0; i < 2; i++)
        for (int d = 0; d < GLUCX_DTYPE_COUNT; d++)
            for (int o = 0; o < GLUCX_OP_COUNT; o++)
                if (glucx_op_supported((glucx_op_t)o, (glucx_dtype_t)d))
                    reduce_case(sh[i], (d + o) % sh[i]->n, 33, (glucx_dtype_t)d, (glucx_op_t)o, 0,
                                (d + o) % 2);
}

/* ---- alltoall ---- */

static void alltoall_case(const shape_t *s, size_t count, glucx_dtype_t dt, int in_place)
{
    cw_t c;
    glucx_net_t *net = world(&c, s, GLUCX_COLL_ALLTOALL);
    const size_t b = count * glucx_dtype_size(dt), m = b * (size_t)s->n;
    const uint32_t salt = (uint32_t)(s->n * 100) + (uint32_t)count;
    for (int r = 0; r < s->n; r++) {
        char *in = c.rank[r].mem[0] = cw_malloc(m);
        char *out = c.rank[r].mem[1] = cw_malloc(m);
        for (int d = 0; d < s->n; d++)
            cw_fill(in + (size_t)d * b, b, salt, r, d);
        memset(out, 0xEE, m);
        if (in_place)
            memcpy(out, in, m);
        c.rank[r].args.sendbuf = in_place ? GLUCX_IN_PLACE : (count ? in : NULL);
        c.rank[r].args.recvbuf = count ? out : NULL;
        c.rank[r].args.count = count;
        c.rank[r].args.dtype = dt;
    }
    cw_run(&c);
    if (!runs_on(s)) {
        expect_declined(&c, s);
        world_fini(&c, net);
        return;
    }
    cw_expect_ok(&c);
    for (int r = 0; r < s->n; r++)
        for (int q = 0; q < s->n; q++) {
            const size_t bad = cw_bad((char *)c.rank[r].mem[1] + (size_t)q * b, b, salt, q, r);
            if (bad)
                print_error("%s count %zu: rank %d's block from %d has %zu wrong bytes\n", s->name,
                            count, r, q, bad);
            assert_int_equal(bad, 0);
        }
    /* aggregation: only ranks with the same local rank talk across packages; with the pairwise
     * exchange across (large blocks), one message of p blocks per ordered pair of them */
    uint64_t out[CW_MAX_RANKS];
    cross_bytes(&c, s, 0, matched, 0, out);
    if (count >= 1000) {
        for (int r = 0; r < s->n; r++) {
            uint64_t msgs[CW_MAX_RANKS], bytes[CW_MAX_RANKS];
            glucx_fake_stats(c.w, r, msgs, bytes);
            for (int q = 0; q < s->n; q++) {
                const int across = s->pkg[q] != s->pkg[r] && s->local[q] == s->local[r];
                if (s->pkg[q] == s->pkg[r])
                    continue;
                assert_int_equal(msgs[q], across ? 1 : 0);
                assert_int_equal(bytes[q], across ? (uint64_t)s->p * b : 0);
            }
        }
    }
    world_fini(&c, net);
}

static void test_alltoall(void **state)
{
    (void)state;
    static const size_t counts[] = {0, 1, 7, 13, 1001};
    int k = 0;
    for (size_t i = 0; i < NSHAPES; i++)
        for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++, k++)
            for (int ip = 0; ip < 2; ip++)
                alltoall_case(&shapes[i], counts[j], cw_dtype(k), ip);
}

/* ---- alltoallv ---- */

/* Elements s sends d in case k: uneven, some zero (0, base/2, base, 3 base/2 or 2 base) */
static size_t v_count(int s, int d, size_t base, int k)
{
    return (size_t)((s * 7 + d * 3 + k) % 5) * base / 2;
}

/* Uneven blocks, packed send displacements, receive displacements in reverse rank order with
 * gaps (left untouched); @p bad_rank >= 0 expects one element more from the last rank. */
static void alltoallv_case(const shape_t *s, size_t base, glucx_dtype_t dt, int k, int bad_rank)
{
    cw_t c;
    glucx_net_t *net = world(&c, s, GLUCX_COLL_ALLTOALLV);
    const size_t es = glucx_dtype_size(dt);
    const uint32_t salt = (uint32_t)(s->n * 100 + k) + (uint32_t)base;
    const int n = s->n;
    size_t rtotal[CW_MAX_RANKS];
    if (bad_rank >= 0)
        c.timeout_ms = CW_FAULT_TIMEOUT_MS;
    for (int r = 0; r < n; r++) {
        size_t *v = c.rank[r].mem[2] = cw_malloc(sizeof(size_t) * 4 * (size_t)n);
        size_t *sc = v, *sd = v + n, *rc = v + 2 * n, *rd = v + 3 * n, so = 0, ro = 0;
        for (int d = 0; d < n; d++) {
            sc[d] = v_count(r, d, base, k);
            sd[d] = so;
            so += sc[d];
        }
        for (int q = n - 1; q >= 0; q--) {
            rc[q] = v_count(q, r, base, k) + (r == bad_rank && q == n - 1);
            rd[q] = ro + 3;
            ro += rc[q] + 3;
        }
        rtotal[r] = ro;
        char *in = c.rank[r].mem[0] = cw_malloc(so * es);
        char *out = c.rank[r].mem[1] = cw_malloc(ro * es);
        for (int d = 0; d < n; d++)
            cw_fill(in + sd[d] * es, sc[d] * es, salt, r, d);
        memset(out, 0xEE, ro * es);
        glucx_coll_args_t *a = &c.rank[r].args;
        a->sendbuf = in;
        a->recvbuf = out;
        a->send_counts = sc;
        a->send_displs = sd;
        a->counts = rc;
        a->displs = rd;
        a->dtype = dt;
    }
    cw_run(&c);
    if (!runs_on(s)) {
        expect_declined(&c, s);
        world_fini(&c, net);
        return;
    }
    if (bad_rank >= 0) {
        for (int r = 0; r < n; r++) {
            if (c.rank[r].status == GLUCX_OK || strstr(c.rank[r].error, "alltoallv") == NULL)
                print_error("%s: rank %d expects one element more from %d: rank %d: %s: %s\n",
                            s->name, bad_rank, n - 1, r, glucx_status_string(c.rank[r].status),
                            c.rank[r].error);
            assert_int_not_equal(c.rank[r].status, GLUCX_OK);
            assert_true(c.rank[r].elapsed_ms < 20 * CW_FAULT_TIMEOUT_MS);
        }
        assert_int_equal(c.rank[bad_rank].status, GLUCX_ERR_MISMATCH);
        world_fini(&c, net);
        return;
    }
    cw_expect_ok(&c);
    for (int r = 0; r < n; r++) {
        const size_t *rc = (const size_t *)c.rank[r].mem[2] + 2 * n, *rd = rc + n;
        const char *out = c.rank[r].mem[1];
        size_t at = 0;
        for (int q = n - 1; q >= 0; q--) { /* the gap before the block, then the block */
            assert_true(cw_all(out + at * es, 3 * es, 0xEE));
            const size_t bad = cw_bad(out + rd[q] * es, rc[q] * es, salt, q, r);
            if (bad)
                print_error("%s base %zu: rank %d's block from %d has %zu wrong bytes\n", s->name,
                            base, r, q, bad);
            assert_int_equal(bad, 0);
            at = rd[q] + rc[q];
        }
        assert_int_equal(at, rtotal[r]);
    }
    uint64_t out[CW_MAX_RANKS];
    cross_bytes(&c, s, 0, matched, 0, out);
    world_fini(&c, net);
}

static void test_alltoallv(void **state)
{
    (void)state;
    static const size_t bases[] = {0, 1, 7, 1001};
    int k = 0;
    for (size_t i = 0; i < NSHAPES; i++)
        for (size_t j = 0; j < sizeof(bases) / sizeof(bases[0]); j++, k++)
            alltoallv_case(&shapes[i], bases[j], cw_dtype(k), k, -1);
    alltoallv_case(&shapes[4], 7, GLUCX_DTYPE_I32, 0, 0);
    alltoallv_case(&shapes[NSHAPES - 1], 7, GLUCX_DTYPE_I32, 1, 2);
}

/* ---- a rank that never arrives ---- */

static void absent_case(glucx_coll_t coll, int root)
{
    const shape_t *s = &shapes[4]; /* 2 packages of 2 */
    cw_t c;
    glucx_net_t *net = world(&c, s, coll);
    c.timeout_ms = CW_FAULT_TIMEOUT_MS;
    for (int r = 0; r < s->n; r++) {
        void *in = c.rank[r].mem[0] = cw_malloc(64 * 4 * (size_t)s->n);
        void *out = c.rank[r].mem[1] = cw_malloc(64 * 4 * (size_t)s->n);
        memset(in, 1, 64 * 4 * (size_t)s->n);
        c.rank[r].args.sendbuf = coll == GLUCX_COLL_BROADCAST ? NULL : in;
        c.rank[r].args.recvbuf = coll == GLUCX_COLL_BROADCAST ? in : out;
        c.rank[r].args.count = 64;
        c.rank[r].args.dtype = GLUCX_DTYPE_I32;
        c.rank[r].args.op = GLUCX_OP_SUM;
        c.rank[r].args.root = root;
    }
    c.rank[3].skip = 1;
    cw_run(&c);
    for (int r = 0; r < 3; r++) {
        if (c.rank[r].status == GLUCX_OK || strstr(c.rank[r].error, glucx_coll_name(coll)) == NULL)
            print_error("%s without rank 3: rank %d: %s: %s\n", glucx_coll_name(coll), r,
                        glucx_status_string(c.rank[r].status), c.rank[r].error);
        assert_int_not_equal(c.rank[r].status, GLUCX_OK);
        assert_non_null(strstr(c.rank[r].error, glucx_coll_name(coll)));
        assert_true(c.rank[r].elapsed_ms < 20 * CW_FAULT_TIMEOUT_MS);
    }
    world_fini(&c, net);
}

static void test_absent_rank(void **state)
{
    (void)state;
    for (int root = 0; root < 4; root += 3) {
        absent_case(GLUCX_COLL_BROADCAST, root);
        absent_case(GLUCX_COLL_REDUCE, root);
    }
    absent_case(GLUCX_COLL_ALLTOALL, 0);
}

/* ---- costs ---- */

static int clog2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* The flat rows' formulas, written here from their header comments */
static double bc_tree(int n, glucx_link_cost_t l, double m)
{
    return clog2(n) * (l.alpha_ns + m * l.beta_ns_per_byte);
}

static double bc_sag(int n, glucx_link_cost_t l, double m)
{
    return (clog2(n) + n - 1) * l.alpha_ns + 2.0 * (n - 1) / n * m * l.beta_ns_per_byte;
}

static double a2a_pairwise(int n, glucx_link_cost_t l, double y, int f, double copy)
{
    return (n - 1) * (l.alpha_ns + y * f * l.beta_ns_per_byte) + y * copy;
}

/* 8 ranks in 2 packages of 4 without a file: the package's link is the INTRA class, the
 * outer one the INTER class; on one package every cost is infinite. */
static void test_costs(void **state)
{
    (void)state;
    glucx_net_t *net;
    const glucx_topo_t *t = make_topo(&shapes[9], &net);
    const glucx_link_cost_t l0 = t->cost[GLUCX_LINK_INTRA], l1 = t->cost[GLUCX_LINK_INTER];
    const double g = t->gamma_ns_per_byte, cp = t->copy_ns_per_byte;
    const glucx_coll_table_t *bt = glucx_coll_tables[GLUCX_COLL_BROADCAST];
    const glucx_coll_table_t *rt = glucx_coll_tables[GLUCX_COLL_REDUCE];
    const glucx_coll_table_t *at = glucx_coll_tables[GLUCX_COLL_ALLTOALL];
    const int bh = glucx_test_alg_index(GLUCX_COLL_BROADCAST, "hierarchical");
    const int rh = glucx_test_alg_index(GLUCX_COLL_REDUCE, "hierarchical");
    const int ah = glucx_test_alg_index(GLUCX_COLL_ALLTOALL, "hierarchical");
    static const double sizes[] = {1024, 1 << 20, 16 << 20};
    for (size_t i = 0; i < 3; i++) {
        const double m = sizes[i];
        /* broadcast: the faster of tree and scatter-allgather, across 2 packages then in 4 */
        const double b1 = fmin(bc_tree(2, l1, m), bc_sag(2, l1, m));
        const double b0 = fmin(bc_tree(4, l0, m), bc_sag(4, l0, m));
        const double want_b = b1 + b0;
        /* reduce: the faster of a tree (2 levels inside, 1 across) and, the member counts being
         * powers of two, the reduce-scatter + gather (2 log2 n alphas, (n-1)/n m twice at beta
         * and once at gamma) */
        const double tree0 = 2 * (l0.alpha_ns + m * (l0.beta_ns_per_byte + g));
        const double rsg0 = 4 * l0.alpha_ns + 0.75 * m * (2 * l0.beta_ns_per_byte + g);
        const double tree1 = l1.alpha_ns + m * (l1.beta_ns_per_byte + g);
        const double rsg1 = 2 * l1.alpha_ns + 0.5 * m * (2 * l1.beta_ns_per_byte + g);
        const double want_r = fmin(tree0, rsg0) + fmin(tree1, rsg1);
        const double got_b = bt->algs[bh].cost(t, (size_t)m);
        const double got_r = rt->algs[rh].cost(t, (size_t)m);
        assert_true(fabs(got_b - want_b) <= 1e-9 * want_b);
        assert_true(fabs(got_r - want_r) <= 1e-9 * want_r);
        /* the flat tree crosses the slow links at every level: the hierarchical rows win */
        assert_true(got_b < bt->algs[glucx_test_alg_index(GLUCX_COLL_BROADCAST, "binomial")].cost(
                                t, (size_t)m));
        assert_true(got_r < rt->algs[glucx_test_alg_index(GLUCX_COLL_REDUCE, "binomial")].cost(
                                t, (size_t)m));
    }
    /* alltoall at 16 MiB (b = 2 MiB; the pairwise exchange in both phases: Bruck moves each
     * block about twice): inside, 3 steps of P b = 4 MiB; across, 1 step of p b = 8 MiB shared
     * by the 4 local ranks; 3 m of local copies */
    const double m = 16 << 20, b = m / 8;
    const double want_a =
        a2a_pairwise(4, l0, 2 * b, 1, cp) + a2a_pairwise(2, l1, 4 * b, 4, cp) + 3 * m * cp;
    const double got_a = at->algs[ah].cost(t, (size_t)m);
    assert_true(fabs(got_a - want_a) <= 1e-9 * want_a);
    glucx_topo_destroy((glucx_topo_t *)t);
    glucx_net_destroy(net);
    /* the 2x2 torus of packages of 2 (file: package links 50 GB/s and 500 ns, torus links
     * 0.1 GB/s and 10 us): the outer network as one link has the two dimensions' alphas in
     * sequence and the slower beta, 10 ns/B; reduce: 1 level inside, 2 across, or the
     * reduce-scatter + gather (2 and 4 members) */
    t = make_topo(&shapes[NSHAPES - 1], &net);
    for (size_t i = 0; i < 3; i++) {
        const double mm = sizes[i], gg = t->gamma_ns_per_byte;
        const double want = fmin(500 + mm * (0.02 + gg), 1000 + 0.5 * mm * (0.04 + gg)) +
                            fmin(2 * (20000 + mm * (10 + gg)), 80000 + 0.75 * mm * (20 + gg));
        const double got = rt->algs[rh].cost(t, (size_t)mm);
        if (fabs(got - want) > 1e-9 * want)
            print_error("torus reduce cost at %.0f bytes: %.17g, want %.17g\n", mm, got, want);
        assert_true(fabs(got - want) <= 1e-9 * want);
    }
    glucx_topo_destroy((glucx_topo_t *)t);
    glucx_net_destroy(net);
    /* one package: infinite */
    t = make_topo(&shapes[1], &net);
    assert_true(isinf(bt->algs[bh].cost(t, 1024)));
    assert_true(isinf(rt->algs[rh].cost(t, 1024)));
    assert_true(isinf(at->algs[ah].cost(t, 1024)));
    glucx_topo_destroy((glucx_topo_t *)t);
}

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSHAPES; i++)
        shape_derive(&shapes[i]);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_costs),        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_reduce),       cmocka_unit_test(test_reduce_ops),
        cmocka_unit_test(test_reduce_large), cmocka_unit_test(test_alltoall),
        cmocka_unit_test(test_alltoallv),    cmocka_unit_test(test_absent_rank),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
