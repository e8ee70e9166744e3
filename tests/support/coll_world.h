/*
 * Shared by the tests of the alltoall, alltoallv, broadcast, reduce, gather, scatter and
 * barrier algorithms: a world of N fake-transport ranks running one collective per call on
 * one thread per rank, with per-rank arguments, statuses and error texts, and a byte pattern
 * whose expected value at every position is known independently of the code under test.
 *
 * cmocka assertions only run on the main thread: rank threads record, the main thread checks.
 */
#ifndef GLUCX_TEST_COLL_WORLD_H
#define GLUCX_TEST_COLL_WORLD_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll.h"
#include "support/coll_harness.h"
#include "support/fake_tx.h"
#include "topo/topo.h"
#include "util/error.h"
#include "util/time.h"

#define CW_MAX_RANKS 16
/** Timeout of runs that must succeed (generous: the machine is shared; scaled by
 * glucx_test_ms()). */
#define CW_TIMEOUT_MS 60000
/** Timeout of runs that must fail (what is tested: not scaled; the bound on how long failing
 * may take is). */
#define CW_FAULT_TIMEOUT_MS 500

typedef struct cw_rank {
    glucx_coll_args_t args; /**< this rank's arguments, set by the test */
    int alg;                /**< algorithm index this rank runs */
    int kill;               /**< crash this rank (glucx_fake_kill) instead of calling */
    int skip;               /**< do not call at all (a rank that never arrives) */
    glucx_status_t status;  /**< result of the call */
    char error[512];        /**< glucx_error_text() after a failed call */
    int64_t elapsed_ms;
    int delay_us;       /**< sleep this long before calling */
    int64_t t_enter_ns; /**< CLOCK_MONOTONIC when the call started / returned */
    int64_t t_exit_ns;
    void *mem[4]; /**< buffers of this rank, freed by cw_fini() */
} cw_rank_t;

typedef struct cw {
    int n;
    glucx_fake_world_t *w;
    glucx_topo_t *topo;
    uint32_t seq;
    int64_t timeout_ms;
    cw_rank_t rank[CW_MAX_RANKS];
} cw_t;

/** A world of @p n ranks (one package), every rank running algorithm @p alg of @p coll. */
static inline void cw_init(cw_t *c, int n, glucx_coll_t coll, int alg)
{
    assert_true(n >= 1 && n <= CW_MAX_RANKS);
    memset(c, 0, sizeof(*c));
    c->n = n;
    c->timeout_ms = glucx_test_ms(CW_TIMEOUT_MS);
    assert_int_equal(glucx_fake_world_create(n, &c->w), GLUCX_OK);
    assert_int_equal(glucx_topo_create_uniform(n, 1, &c->topo), GLUCX_OK);
    for (int r = 0; r < n; r++) {
        c->rank[r].args.coll = coll;
        c->rank[r].alg = alg;
        c->rank[r].status = GLUCX_INPROGRESS;
    }
}

static inline void cw_fini(cw_t *c)
{
    for (int r = 0; r < c->n; r++)
        for (int i = 0; i < 4; i++)
            free(c->rank[r].mem[i]);
    glucx_fake_world_destroy(c->w);
    glucx_topo_destroy(c->topo);
    c->w = NULL;
    c->topo = NULL;
}

static inline int cw_rank_fn(glucx_fake_world_t *w, int rank, void *arg)
{
    cw_t *c = arg;
    cw_rank_t *r = &c->rank[rank];
    if (r->kill) {
        glucx_fake_kill(w, rank);
        r->status = GLUCX_ERR_ABORTED;
        return 0;
    }
    if (r->skip)
        return 0;
    if (r->delay_us > 0)
        usleep((useconds_t)r->delay_us);
    r->t_enter_ns = glucx_now_ns();
    r->status =
        glucx_test_coll(glucx_fake_tx(w, rank), c->topo, &r->args, r->alg, c->seq, c->timeout_ms);
    r->t_exit_ns = glucx_now_ns();
    r->elapsed_ms = (r->t_exit_ns - r->t_enter_ns) / 1000000;
    if (r->status != GLUCX_OK)
        snprintf(r->error, sizeof(r->error), "%s", glucx_error_text());
    return 0;
}

/** Run the collective on every rank (one thread each) and join. */
static inline void cw_run(cw_t *c)
{
    for (int r = 0; r < c->n; r++)
        c->rank[r].status = GLUCX_INPROGRESS;
    assert_int_equal(glucx_fake_run(c->w, cw_rank_fn, c), 0);
    c->seq++;
}

/** Every rank returned GLUCX_OK, sent nothing to itself and left no unmatched message. */
static inline void cw_expect_ok(const cw_t *c)
{
    int bad = 0;
    for (int r = 0; r < c->n; r++) {
        if (c->rank[r].status != GLUCX_OK) {
            print_error("rank %d: %s: %s\n", r, glucx_status_string(c->rank[r].status),
                        c->rank[r].error);
            bad++;
        }
        uint64_t msgs[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, msgs, NULL);
        if (msgs[r] != 0) {
            print_error("rank %d sent %llu messages to itself\n", r, (unsigned long long)msgs[r]);
            bad++;
        }
        if (glucx_fake_unexpected(c->w, r) != 0) {
            print_error("rank %d: %zu messages left unmatched\n", r,
                        glucx_fake_unexpected(c->w, r));
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

/** Total messages and bytes sent by all ranks (since the last reset). */
static inline void cw_totals(const cw_t *c, uint64_t *msgs_p, uint64_t *bytes_p)
{
    uint64_t m = 0, b = 0;
    for (int r = 0; r < c->n; r++) {
        uint64_t msgs[CW_MAX_RANKS], bytes[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, msgs, bytes);
        for (int p = 0; p < c->n; p++) {
            m += msgs[p];
            b += bytes[p];
        }
    }
    *msgs_p = m;
    *bytes_p = b;
}

/** Bytes sent by @p rank to all peers. */
static inline uint64_t cw_bytes_sent(const cw_t *c, int rank)
{
    uint64_t bytes[CW_MAX_RANKS], b = 0;
    glucx_fake_stats(c->w, rank, NULL, bytes);
    for (int p = 0; p < c->n; p++)
        b += bytes[p];
    return b;
}

/** Status a rank ended with: its call's, or its transport's failure if the call succeeded
 *  before a peer detected the fault (the communicator then fails shortly after). */
static inline glucx_status_t cw_final_status(const cw_t *c, int rank)
{
    if (c->rank[rank].status != GLUCX_OK)
        return c->rank[rank].status;
    return glucx_tx_failure(glucx_fake_tx(c->w, rank));
}

/** Byte k of the data that rank @p src holds for rank @p dst in test case @p salt. */
static inline uint8_t cw_byte(uint32_t salt, int src, int dst, size_t k)
{
    uint64_t x = ((uint64_t)salt << 40) ^ ((uint64_t)(unsigned)src << 20) ^ (uint64_t)(unsigned)dst;
    x = x * UINT64_C(0x9e3779b97f4a7c15) + k * UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 31;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 29;
    return (uint8_t)x;
}

/** Fill @p bytes at @p buf with the pattern of (salt, src, dst). */
static inline void cw_fill(void *buf, size_t bytes, uint32_t salt, int src, int dst)
{
    uint8_t *p = buf;
    for (size_t k = 0; k < bytes; k++)
        p[k] = cw_byte(salt, src, dst, k);
}

/** Number of bytes at @p buf that differ from the pattern of (salt, src, dst). */
static inline size_t cw_bad(const void *buf, size_t bytes, uint32_t salt, int src, int dst)
{
    const uint8_t *p = buf;
    size_t bad = 0;
    for (size_t k = 0; k < bytes; k++)
        bad += p[k] != cw_byte(salt, src, dst, k);
    return bad;
}

/** Whether every byte of @p buf is @p v (untouched guard areas). */
static inline int cw_all(const void *buf, size_t bytes, uint8_t v)
{
    const uint8_t *p = buf;
    for (size_t k = 0; k < bytes; k++)
        if (p[k] != v)
            return 0;
    return 1;
}

/** malloc that never returns NULL in a test (and gives 1 byte for 0). */
static inline void *cw_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    return p;
}

/** Element types with every element size (the data movers only see bytes). */
#define CW_NDTYPES 4
static inline glucx_dtype_t cw_dtype(int i)
{
    static const glucx_dtype_t d[CW_NDTYPES] = {GLUCX_DTYPE_U8, GLUCX_DTYPE_F16, GLUCX_DTYPE_I32,
                                                GLUCX_DTYPE_F64};
    return d[i % CW_NDTYPES];
}

/* ---- fault cases, generic over the collective ---- */

/**
 * Builds rank @p r's arguments in c->rank[r].args (coll and alg already set) for @p count
 * elements and @p root, allocating its buffers into c->rank[r].mem.
 */
typedef void (*cw_mk_t)(cw_t *c, int r, size_t count, int root);

/**
 * Rank @p bad passes count+1 (or 0 when @p zero) where the others pass @p count: every rank
 * must return GLUCX_ERR_MISMATCH, none a timeout.
 */
static inline void cw_fault_count(glucx_coll_t coll, int alg, int n, int root, int bad,
                                  size_t count, int zero, cw_mk_t mk)
{
    cw_t c;
    cw_init(&c, n, coll, alg);
    c.timeout_ms = glucx_test_ms(CW_TIMEOUT_MS); /* a timeout would be a failure: make it obvious */
    for (int r = 0; r < n; r++)
        mk(&c, r, r == bad ? (zero ? 0 : count + 1) : count, root);
    cw_run(&c);
    int direct = 0;
    for (int r = 0; r < n; r++) {
        glucx_status_t st = cw_final_status(&c, r);
        if (st != GLUCX_ERR_MISMATCH)
            print_error("%s n=%d root=%d bad=%d: rank %d ended with %s (%s)\n",
                        glucx_coll_name(coll), n, root, bad, r, glucx_status_string(st),
                        c.rank[r].error);
        assert_int_equal(st, GLUCX_ERR_MISMATCH);
        direct += c.rank[r].status == GLUCX_ERR_MISMATCH;
    }
    /* the core's confirmation round makes every rank return it, not just fail afterwards */
    assert_int_equal(direct, n);
    cw_fini(&c);
}

/**
 * Rank @p bad passes root @p bad_root where the others pass @p root. No rank may hang or
 * crash, and since the core confirms rooted collectives with a signed zero-byte round, every
 * rank must return MISMATCH (a signed message met) or TIMEOUT (a rank waits for data that went
 * to another root), within a small multiple of the timeout. @p must_detect is kept for the
 * callers' documentation: detection is now required for every case.
 */
static inline void cw_fault_root(glucx_coll_t coll, int alg, int n, int root, int bad, int bad_root,
                                 int must_detect, cw_mk_t mk)
{
    (void)must_detect;
    cw_t c;
    cw_init(&c, n, coll, alg);
    c.timeout_ms = CW_FAULT_TIMEOUT_MS;
    for (int r = 0; r < n; r++)
        mk(&c, r, 10, r == bad ? bad_root : root);
    int64_t t0 = glucx_now_ns();
    cw_run(&c);
    assert_true((glucx_now_ns() - t0) / 1000000 < glucx_test_ms(20 * CW_FAULT_TIMEOUT_MS));
    for (int r = 0; r < n; r++) {
        glucx_status_t st = c.rank[r].status;
        if (st != GLUCX_ERR_MISMATCH && st != GLUCX_ERR_TIMEOUT)
            print_error("%s n=%d root=%d bad=%d bad_root=%d: rank %d returned %s\n",
                        glucx_coll_name(coll), n, root, bad, bad_root, r, glucx_status_string(st));
        assert_true(st == GLUCX_ERR_MISMATCH || st == GLUCX_ERR_TIMEOUT);
    }
    cw_fini(&c);
}

/** Which survivors must fail when @p victim crashes (the others may also succeed). */
typedef int (*cw_must_fail_t)(int rank, int root, int victim);

static inline int cw_all_fail(int rank, int root, int victim)
{
    (void)rank, (void)root, (void)victim;
    return 1;
}

/**
 * Rank @p victim crashes at the start. Survivors return OK, PEER_FAILED or TIMEOUT (never hang);
 * those @p must_fail names return PEER_FAILED or TIMEOUT.
 */
static inline void cw_fault_kill(glucx_coll_t coll, int alg, int n, int root, int victim,
                                 size_t count, cw_must_fail_t must_fail, cw_mk_t mk)
{
    cw_t c;
    cw_init(&c, n, coll, alg);
    c.timeout_ms = CW_FAULT_TIMEOUT_MS;
    for (int r = 0; r < n; r++)
        mk(&c, r, count, root);
    c.rank[victim].kill = 1;
    cw_run(&c);
    for (int r = 0; r < n; r++) {
        if (r == victim)
            continue;
        glucx_status_t st = c.rank[r].status;
        if (!(st == GLUCX_OK || st == GLUCX_ERR_PEER_FAILED || st == GLUCX_ERR_TIMEOUT))
            print_error("%s n=%d victim=%d: rank %d returned %s\n", glucx_coll_name(coll), n,
                        victim, r, glucx_status_string(st));
        assert_true(st == GLUCX_OK || st == GLUCX_ERR_PEER_FAILED || st == GLUCX_ERR_TIMEOUT);
        if (must_fail(r, root, victim))
            assert_true(st == GLUCX_ERR_PEER_FAILED || st == GLUCX_ERR_TIMEOUT);
    }
    cw_fini(&c);
}

#endif
