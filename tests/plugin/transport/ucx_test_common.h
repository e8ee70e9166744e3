/*
 * Helpers shared by the UCX transport tests (tests/plugin/transport/test_ucx*.c): bring a rank's
 * context + transport up in a forked child, exchange addresses through shared memory, checks that
 * report and return instead of aborting (cmocka's asserts belong to the parent process).
 */
#ifndef GLUCX_TEST_UCX_COMMON_H
#define GLUCX_TEST_UCX_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "support/procs.h"
#include "support/util.h"
#include "transport/tx.h"
#include "transport/ucx.h"
#include "util/error.h"
#include "util/time.h"

/** Which UCX transports a run uses. */
enum ucx_test_mode {
    UCX_TEST_DEFAULT = 0, /* UCX's choice: shared memory between processes of this host */
    UCX_TEST_TCP = 1,     /* UCX_TLS=tcp over loopback */
};

typedef struct ucx_test {
    glucx_test_exchange_t *x;
    int mode;
    int64_t keepalive_ms;
    void *shared; /* test-specific shared memory */
    /* per rank: when nonzero, glucx_tx_ucx_context_set_net_seg(value, local_too = 1) */
    size_t net_seg[16];
} ucx_test_t;

typedef struct ucx_rank {
    glucx_ucx_context_t *uctx;
    glucx_tx_t *tx;
    int rank;
    int size;
} ucx_rank_t;

static int ucx_test_rank_ = -1;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", ucx_test_rank_, __FILE__,        \
                    __LINE__, #cond);                                                              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [last error: %s]\n", glucx_error_text());                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        glucx_status_t st_ = (expr);                                                               \
        CHECK(st_ == GLUCX_OK, "%s returned %s", #expr, glucx_status_string(st_));                 \
    } while (0)

static inline ucx_test_t *ucx_test_new(int mode, size_t shared_bytes)
{
    ucx_test_t *t = glucx_test_shared_alloc(sizeof(ucx_test_t));
    if (t == NULL)
        return NULL;
    t->x = glucx_test_exchange_alloc(16);
    t->mode = mode;
    t->keepalive_ms = 500;
    t->shared = shared_bytes > 0 ? glucx_test_shared_alloc(shared_bytes) : NULL;
    return t;
}

static inline const char *ucx_mode_name(int mode)
{
    return mode == UCX_TEST_TCP ? "tcp" : "default";
}

static inline void ucx_test_progress_cb(void *arg)
{
    glucx_tx_t *tx = arg;
    tx->ops->progress(tx);
}

/** Barrier across the ranks of t that keeps tx (may be NULL) progressing meanwhile. */
static inline int ucx_barrier(ucx_test_t *t, int size, glucx_tx_t *tx)
{
    return glucx_test_barrier_wait(&t->x->barrier, size, 60000, tx ? ucx_test_progress_cb : NULL,
                                   tx);
}

/** Create context and transport for rank, set the mode's environment; no connect. */
static inline int ucx_rank_create(ucx_test_t *t, int rank, int size, ucx_rank_t *e,
                                  const void **addr, size_t *len)
{
    ucx_test_rank_ = rank;
    e->rank = rank;
    e->size = size;
    if (t->mode == UCX_TEST_TCP)
        setenv("UCX_TLS", "tcp", 1);
    else
        unsetenv("UCX_TLS");
    CHECK_OK(glucx_tx_ucx_context_create("lo", t->keepalive_ms, &e->uctx));
    if (rank < 16 && t->net_seg[rank] > 0)
        CHECK_OK(glucx_tx_ucx_context_set_net_seg(e->uctx, t->net_seg[rank], 1));
    CHECK_OK(glucx_tx_ucx_create(e->uctx, rank, size, &e->tx, addr, len));
    CHECK(e->tx->rank == rank && e->tx->size == size, "rank/size");
    return 0;
}

/** Create, exchange addresses, connect (20 s deadline, scaled). */
static inline int ucx_rank_up(ucx_test_t *t, int rank, int size, ucx_rank_t *e)
{
    const void *addr;
    size_t len;
    if (ucx_rank_create(t, rank, size, e, &addr, &len) != 0)
        return 1;
    const void *addrs[16];
    size_t lens[16];
    CHECK(glucx_test_exchange(t->x, rank, size, addr, len, addrs, lens, 60000) == 0,
          "address exchange");
    CHECK_OK(glucx_tx_ucx_connect(e->tx, addrs, lens, glucx_deadline_ns(glucx_test_ms(20000))));
    return 0;
}

static inline void ucx_rank_down(ucx_rank_t *e)
{
    if (e->tx != NULL)
        e->tx->ops->destroy(e->tx);
    glucx_tx_ucx_context_destroy(e->uctx);
    e->tx = NULL;
    e->uctx = NULL;
}

/** describe_peer(peer) names a transport of the mode. */
static inline int ucx_check_transport(ucx_test_t *t, ucx_rank_t *e, int peer)
{
    char d[128];
    e->tx->ops->describe_peer(e->tx, peer, d, sizeof(d));
    CHECK(strcmp(d, "unknown") != 0 && strcmp(d, "unconnected") != 0 && strchr(d, '/') != NULL,
          "rank %d described as '%s'", peer, d);
    if (peer == e->rank) {
        /* any transport may carry self traffic */
    } else if (t->mode == UCX_TEST_TCP) {
        CHECK(strstr(d, "tcp") != NULL, "tcp mode: rank %d described as '%s'", peer, d);
    } else {
        CHECK(strstr(d, "sysv") != NULL || strstr(d, "posix") != NULL,
              "default mode: rank %d should use shared memory, described as '%s'", peer, d);
        /* local peers' endpoints run without UCX error handling, so cma carries rendezvous */
        CHECK(strstr(d, "cma/memory") != NULL,
              "default mode: rank %d should be reached with cma too, described as '%s'", peer, d);
    }
    return 0;
}

static inline glucx_status_t ucx_wait1(glucx_tx_t *tx, glucx_tx_req_t *req, int64_t timeout_ms)
{
    glucx_tx_req_t *r[1] = {req};
    return tx->ops->wait(tx, r, 1, glucx_deadline_ns(timeout_ms));
}

/** CPU seconds (user + system) used by this process so far. */
static inline double ucx_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static inline double ucx_now_s(void)
{
    return (double)glucx_now_ns() * 1e-9;
}

/** A tag as the core would build it: source bits zero. */
static inline uint64_t ucx_tag(uint64_t hi, uint64_t lo)
{
    return (hi << 8) | (lo & 0xff);
}

#endif
