/* In-process fake transport: see fake_tx.h. One mutex per world guards every queue; each rank
 * has a condition variable (CLOCK_MONOTONIC) that wait() sleeps on. */
#include "support/fake_tx.h"

#include "coll/coll.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/time.h"

/* A message that arrived before a matching receive was posted (payload copied). */
typedef struct fake_msg {
    struct fake_msg *next;
    int src;
    uint64_t tag; /* wire tag, source bits included */
    size_t bytes;
    unsigned char data[];
} fake_msg_t;

/* A posted receive waiting for a message. */
typedef struct fake_recv {
    struct fake_recv *next;
    struct fake_recv *prev;
    glucx_tx_req_t *req;
    uint64_t tag;
    uint64_t ignore_mask;
    void *buf;
    size_t bytes;
    int npeers;
    int *peers;
    int peers_inline[4];
} fake_recv_t;

typedef struct fake_rank {
    glucx_tx_t tx; /* first: the ops get a glucx_tx_t * and cast back */
    glucx_fake_world_t *w;
    pthread_cond_t cond;
    fake_msg_t *uq_head; /* unexpected messages, arrival order */
    fake_msg_t *uq_tail;
    fake_recv_t *rq_head; /* posted receives, post order */
    fake_recv_t *rq_tail;
    int dead;
    uint64_t *msgs_to;
    uint64_t *bytes_to;
} fake_rank_t;

struct glucx_fake_world {
    int size;
    pthread_mutex_t lock;
    fake_rank_t *ranks;
    uint64_t *stats; /* [size][2][size] */
};

static const glucx_tx_ops_t fake_ops;

static fake_rank_t *to_rank(glucx_tx_t *tx)
{
    return (fake_rank_t *)tx;
}

/* ---- helpers; the world lock is held ---- */

static void complete(fake_rank_t *owner, glucx_tx_req_t *req, glucx_status_t status)
{
    req->status = status;
    req->impl = NULL;
    atomic_store_explicit(&req->done, 1, memory_order_release);
    pthread_cond_broadcast(&owner->cond);
}

static void rq_unlink(fake_rank_t *rk, fake_recv_t *rv)
{
    if (rv->prev != NULL)
        rv->prev->next = rv->next;
    else
        rk->rq_head = rv->next;
    if (rv->next != NULL)
        rv->next->prev = rv->prev;
    else
        rk->rq_tail = rv->prev;
}

static void recv_free(fake_recv_t *rv)
{
    if (rv->peers != rv->peers_inline)
        free(rv->peers);
    free(rv);
}

static int recv_matches(const fake_recv_t *rv, int src, uint64_t wire_tag)
{
    const uint64_t care = ~(rv->ignore_mask | GLUCX_TX_TAG_SRC_MASK);
    if (((wire_tag ^ rv->tag) & care) != 0)
        return 0;
    for (int i = 0; i < rv->npeers; i++)
        if (rv->peers[i] == src)
            return 1;
    return 0;
}

/* The core's zero-byte confirmation round after rooted collectives (coll/coll.h): statistics
 * leave it out, so they measure what the algorithm itself moves. */
static int is_confirmation(uint64_t tag)
{
    return (tag & GLUCX_COLL_TAG_SPACE) &&
           ((tag >> GLUCX_COLL_TAG_STEP_SHIFT) & GLUCX_COLL_STEP_MAX) >= GLUCX_COLL_STEP_CONFIRM;
}

/* Copy a message into a posted receive and complete it (truncating as tx.h says). */
static void deliver(fake_rank_t *dst, fake_recv_t *rv, int src, uint64_t wire_tag, const void *data,
                    size_t bytes)
{
    glucx_tx_req_t *req = rv->req;
    size_t n = bytes <= rv->bytes ? bytes : rv->bytes;
    if (n > 0)
        memcpy(rv->buf, data, n);
    req->peer = src;
    req->tag = wire_tag;
    req->bytes = bytes; /* the sender's length, as the UCX transport reports it */
    complete(dst, req, bytes <= rv->bytes ? GLUCX_OK : GLUCX_ERR_TRUNCATED);
}

/* First failure wins: record it, complete every posted receive, optionally notify the others. */
static void fail_rank(glucx_fake_world_t *w, int rank, glucx_status_t status, const char *text,
                      int notify)
{
    fake_rank_t *rk = &w->ranks[rank];
    if (glucx_tx_failure(&rk->tx) != GLUCX_OK)
        return;
    if (status == GLUCX_OK || status == GLUCX_INPROGRESS)
        status = GLUCX_ERR_ABORTED;
    snprintf(rk->tx.failure, sizeof(rk->tx.failure), "%s", text);
    atomic_store_explicit(&rk->tx.failed, (int)status, memory_order_release);
    fake_recv_t *rv = rk->rq_head;
    rk->rq_head = rk->rq_tail = NULL;
    while (rv != NULL) {
        fake_recv_t *next = rv->next;
        complete(rk, rv->req, status);
        recv_free(rv);
        rv = next;
    }
    pthread_cond_broadcast(&rk->cond);
    if (!notify)
        return;
    char notice[sizeof(rk->tx.failure)];
    snprintf(notice, sizeof(notice), "rank %d reported: %s", rank, text);
    for (int q = 0; q < w->size; q++)
        if (q != rank && !w->ranks[q].dead)
            fail_rank(w, q, status, notice, 0);
}

/* ---- the ops ---- */

static glucx_status_t fake_isend(glucx_tx_t *tx, int peer, uint64_t tag, const void *buf,
                                 size_t bytes, glucx_tx_req_t *req)
{
    fake_rank_t *rk = to_rank(tx);
    glucx_fake_world_t *w = rk->w;
    if (peer < 0 || peer >= w->size || (buf == NULL && bytes > 0) || req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "fake isend: invalid arguments (rank %d to peer %d, %zu bytes)",
                           tx->rank, peer, bytes);
    const uint64_t wire =
        (tag & ~GLUCX_TX_TAG_SRC_MASK) | ((uint64_t)tx->rank << GLUCX_TX_TAG_SRC_SHIFT);
    req->peer = peer;
    req->posted = bytes;
    req->bytes = bytes;
    req->tag = wire;
    req->is_recv = 0;
    req->impl = NULL;
    atomic_store_explicit(&req->done, 0, memory_order_relaxed);

    pthread_mutex_lock(&w->lock);
    glucx_status_t st = glucx_tx_failure(tx);
    if (st != GLUCX_OK) {
        pthread_mutex_unlock(&w->lock);
        return glucx_error(st, "fake isend: rank %d cannot send %zu bytes to rank %d: %s", tx->rank,
                           bytes, peer, tx->failure);
    }
    if (!is_confirmation(tag)) {
        rk->msgs_to[peer]++;
        rk->bytes_to[peer] += bytes;
    }
    fake_rank_t *dst = &w->ranks[peer];
    if (!dst->dead && glucx_tx_failure(&dst->tx) == GLUCX_OK) {
        fake_recv_t *rv = dst->rq_head;
        while (rv != NULL && !recv_matches(rv, tx->rank, wire))
            rv = rv->next;
        if (rv != NULL) {
            rq_unlink(dst, rv);
            deliver(dst, rv, tx->rank, wire, buf, bytes);
            recv_free(rv);
        } else {
            fake_msg_t *m = malloc(sizeof(*m) + bytes);
            if (m == NULL) {
                pthread_mutex_unlock(&w->lock);
                return glucx_error(GLUCX_ERR_NO_MEMORY,
                                   "fake isend: cannot queue %zu bytes from rank %d to rank %d",
                                   bytes, tx->rank, peer);
            }
            m->next = NULL;
            m->src = tx->rank;
            m->tag = wire;
            m->bytes = bytes;
            if (bytes > 0)
                memcpy(m->data, buf, bytes);
            if (dst->uq_tail != NULL)
                dst->uq_tail->next = m;
            else
                dst->uq_head = m;
            dst->uq_tail = m;
        }
    }
    /* eager: the payload was copied (or dropped for a dead peer) */
    complete(rk, req, GLUCX_OK);
    pthread_mutex_unlock(&w->lock);
    return GLUCX_OK;
}

static glucx_status_t fake_irecv(glucx_tx_t *tx, const int *peers, int npeers, uint64_t tag,
                                 uint64_t ignore_mask, void *buf, size_t bytes, glucx_tx_req_t *req)
{
    fake_rank_t *rk = to_rank(tx);
    glucx_fake_world_t *w = rk->w;
    if (peers == NULL || npeers <= 0 || (buf == NULL && bytes > 0) || req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "fake irecv: invalid arguments (rank %d, %d peers, %zu bytes)", tx->rank,
                           npeers, bytes);
    for (int i = 0; i < npeers; i++)
        if (peers[i] < 0 || peers[i] >= w->size)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "fake irecv: rank %d: peer %d out of range",
                               tx->rank, peers[i]);
    fake_recv_t *rv = malloc(sizeof(*rv));
    if (rv == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "fake irecv: out of memory");
    rv->peers = rv->peers_inline;
    if (npeers > (int)(sizeof(rv->peers_inline) / sizeof(rv->peers_inline[0]))) {
        rv->peers = malloc(sizeof(int) * (size_t)npeers);
        if (rv->peers == NULL) {
            free(rv);
            return glucx_error(GLUCX_ERR_NO_MEMORY, "fake irecv: out of memory");
        }
    }
    memcpy(rv->peers, peers, sizeof(int) * (size_t)npeers);
    rv->npeers = npeers;
    rv->req = req;
    rv->tag = tag;
    rv->ignore_mask = ignore_mask;
    rv->buf = buf;
    rv->bytes = bytes;
    rv->next = rv->prev = NULL;
    req->peer = npeers == 1 ? peers[0] : -1;
    req->posted = bytes;
    req->bytes = 0;
    req->tag = 0;
    req->is_recv = 1;
    req->impl = NULL;
    atomic_store_explicit(&req->done, 0, memory_order_relaxed);

    pthread_mutex_lock(&w->lock);
    glucx_status_t st = glucx_tx_failure(tx);
    if (st != GLUCX_OK) {
        pthread_mutex_unlock(&w->lock);
        recv_free(rv);
        return glucx_error(st, "fake irecv: rank %d cannot receive %zu bytes: %s", tx->rank, bytes,
                           tx->failure);
    }
    fake_msg_t *prev = NULL, *m = rk->uq_head;
    while (m != NULL && !recv_matches(rv, m->src, m->tag)) {
        prev = m;
        m = m->next;
    }
    if (m != NULL) {
        if (prev != NULL)
            prev->next = m->next;
        else
            rk->uq_head = m->next;
        if (rk->uq_tail == m)
            rk->uq_tail = prev;
        deliver(rk, rv, m->src, m->tag, m->data, m->bytes);
        free(m);
        recv_free(rv);
    } else {
        req->impl = rv;
        rv->prev = rk->rq_tail;
        if (rk->rq_tail != NULL)
            rk->rq_tail->next = rv;
        else
            rk->rq_head = rv;
        rk->rq_tail = rv;
    }
    pthread_mutex_unlock(&w->lock);
    return GLUCX_OK;
}

static int fake_progress(glucx_tx_t *tx)
{
    (void)tx; /* everything happens at post time */
    return 0;
}

static glucx_status_t fake_wait(glucx_tx_t *tx, glucx_tx_req_t *const *reqs, int n,
                                int64_t deadline_ns)
{
    fake_rank_t *rk = to_rank(tx);
    glucx_fake_world_t *w = rk->w;
    struct timespec ts;
    if (deadline_ns != GLUCX_NO_DEADLINE) {
        ts.tv_sec = (time_t)(deadline_ns / 1000000000);
        ts.tv_nsec = (long)(deadline_ns % 1000000000);
    }
    glucx_status_t st = GLUCX_OK;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        st = glucx_tx_failure(tx);
        if (st != GLUCX_OK)
            break;
        int all = 1;
        for (int i = 0; i < n && all; i++)
            all = glucx_tx_req_done(reqs[i]);
        if (all)
            break;
        if (deadline_ns == GLUCX_NO_DEADLINE) {
            pthread_cond_wait(&rk->cond, &w->lock);
        } else if (glucx_now_ns() >= deadline_ns ||
                   pthread_cond_timedwait(&rk->cond, &w->lock, &ts) == ETIMEDOUT) {
            /* one last look: the wake-up and the deadline may coincide */
            all = 1;
            for (int i = 0; i < n && all; i++)
                all = glucx_tx_req_done(reqs[i]);
            st = glucx_tx_failure(tx);
            if (st == GLUCX_OK && !all)
                st = GLUCX_ERR_TIMEOUT;
            break;
        }
    }
    pthread_mutex_unlock(&w->lock);
    return st;
}

static void fake_cancel(glucx_tx_t *tx, glucx_tx_req_t *req)
{
    fake_rank_t *rk = to_rank(tx);
    pthread_mutex_lock(&rk->w->lock);
    fake_recv_t *rv = req->impl;
    if (!glucx_tx_req_done(req) && rv != NULL && req->is_recv) {
        rq_unlink(rk, rv);
        complete(rk, req, GLUCX_ERR_ABORTED);
        recv_free(rv);
    }
    pthread_mutex_unlock(&rk->w->lock);
}

static void fake_fail(glucx_tx_t *tx, glucx_status_t status, const char *text)
{
    fake_rank_t *rk = to_rank(tx);
    pthread_mutex_lock(&rk->w->lock);
    if (!rk->dead)
        fail_rank(rk->w, tx->rank, status, text != NULL ? text : "failed", 1);
    pthread_mutex_unlock(&rk->w->lock);
}

static void fake_describe_peer(glucx_tx_t *tx, int peer, char *buf, size_t len)
{
    if (len > 0)
        snprintf(buf, len, "fake/inproc (rank %d to %d)", tx->rank, peer);
}

/* Fails the rank quietly and drops its queued messages; the memory stays with the world. */
static void fake_destroy(glucx_tx_t *tx)
{
    fake_rank_t *rk = to_rank(tx);
    pthread_mutex_lock(&rk->w->lock);
    fail_rank(rk->w, tx->rank, GLUCX_ERR_ABORTED, "transport destroyed", 0);
    fake_msg_t *m = rk->uq_head;
    while (m != NULL) {
        fake_msg_t *next = m->next;
        free(m);
        m = next;
    }
    rk->uq_head = rk->uq_tail = NULL;
    pthread_mutex_unlock(&rk->w->lock);
}

static const glucx_tx_ops_t fake_ops = {
    .isend = fake_isend,
    .irecv = fake_irecv,
    .progress = fake_progress,
    .wait = fake_wait,
    .cancel = fake_cancel,
    .fail = fake_fail,
    .describe_peer = fake_describe_peer,
    .destroy = fake_destroy,
};

/* ---- world ---- */

glucx_status_t glucx_fake_world_create(int size, glucx_fake_world_t **w_p)
{
    if (size < 1 || size > (1 << GLUCX_TX_TAG_SRC_BITS) || w_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "fake world: invalid size %d", size);
    glucx_fake_world_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "fake world: out of memory");
    w->size = size;
    w->ranks = calloc((size_t)size, sizeof(*w->ranks));
    w->stats = calloc((size_t)size * 2 * (size_t)size, sizeof(uint64_t));
    if (w->ranks == NULL || w->stats == NULL) {
        free(w->ranks);
        free(w->stats);
        free(w);
        return glucx_error(GLUCX_ERR_NO_MEMORY, "fake world: out of memory for %d ranks", size);
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int r = 0; r < size; r++) {
        fake_rank_t *rk = &w->ranks[r];
        rk->tx.ops = &fake_ops;
        rk->tx.rank = r;
        rk->tx.size = size;
        atomic_init(&rk->tx.failed, 0);
        rk->w = w;
        pthread_cond_init(&rk->cond, &ca);
        rk->msgs_to = w->stats + (size_t)r * 2 * (size_t)size;
        rk->bytes_to = rk->msgs_to + size;
    }
    pthread_condattr_destroy(&ca);
    *w_p = w;
    return GLUCX_OK;
}

void glucx_fake_world_destroy(glucx_fake_world_t *w)
{
    if (w == NULL)
        return;
    for (int r = 0; r < w->size; r++) {
        fake_destroy(&w->ranks[r].tx);
        pthread_cond_destroy(&w->ranks[r].cond);
    }
    pthread_mutex_destroy(&w->lock);
    free(w->stats);
    free(w->ranks);
    free(w);
}

glucx_tx_t *glucx_fake_tx(glucx_fake_world_t *w, int rank)
{
    if (w == NULL || rank < 0 || rank >= w->size)
        return NULL;
    return &w->ranks[rank].tx;
}

void glucx_fake_kill(glucx_fake_world_t *w, int rank)
{
    if (w == NULL || rank < 0 || rank >= w->size)
        return;
    char text[64];
    pthread_mutex_lock(&w->lock);
    w->ranks[rank].dead = 1;
    snprintf(text, sizeof(text), "rank %d was killed", rank);
    fail_rank(w, rank, GLUCX_ERR_ABORTED, text, 0);
    snprintf(text, sizeof(text), "rank %d failed", rank);
    for (int q = 0; q < w->size; q++)
        if (q != rank && !w->ranks[q].dead)
            fail_rank(w, q, GLUCX_ERR_PEER_FAILED, text, 0);
    pthread_mutex_unlock(&w->lock);
}

typedef struct run_arg {
    glucx_fake_world_t *w;
    int rank;
    glucx_fake_rank_fn_t fn;
    void *arg;
    int rc;
} run_arg_t;

static void *run_thread(void *p)
{
    run_arg_t *a = p;
    a->rc = a->fn(a->w, a->rank, a->arg);
    return NULL;
}

int glucx_fake_run(glucx_fake_world_t *w, glucx_fake_rank_fn_t fn, void *arg)
{
    const int n = w->size;
    run_arg_t *args = calloc((size_t)n, sizeof(*args));
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    int *started = calloc((size_t)n, sizeof(int));
    int rc = 0;
    if (args == NULL || th == NULL || started == NULL) {
        rc = -1;
        goto out;
    }
    for (int r = 0; r < n; r++) {
        args[r] = (run_arg_t){.w = w, .rank = r, .fn = fn, .arg = arg, .rc = 0};
        if (pthread_create(&th[r], NULL, run_thread, &args[r]) != 0) {
            /* the started ranks may wait for this one: fail the world so they return */
            fake_fail(&w->ranks[r].tx, GLUCX_ERR_ABORTED, "test harness: cannot start thread");
            rc = -1;
            break;
        }
        started[r] = 1;
    }
    for (int r = 0; r < n; r++) {
        if (!started[r])
            continue;
        pthread_join(th[r], NULL);
        if (rc == 0 && args[r].rc != 0)
            rc = args[r].rc;
    }
out:
    free(started);
    free(th);
    free(args);
    return rc;
}

void glucx_fake_stats(glucx_fake_world_t *w, int rank, uint64_t *msgs_to, uint64_t *bytes_to)
{
    pthread_mutex_lock(&w->lock);
    const fake_rank_t *rk = &w->ranks[rank];
    if (msgs_to != NULL)
        memcpy(msgs_to, rk->msgs_to, sizeof(uint64_t) * (size_t)w->size);
    if (bytes_to != NULL)
        memcpy(bytes_to, rk->bytes_to, sizeof(uint64_t) * (size_t)w->size);
    pthread_mutex_unlock(&w->lock);
}

void glucx_fake_stats_reset(glucx_fake_world_t *w)
{
    pthread_mutex_lock(&w->lock);
    memset(w->stats, 0, sizeof(uint64_t) * (size_t)w->size * 2 * (size_t)w->size);
    pthread_mutex_unlock(&w->lock);
}

size_t glucx_fake_unexpected(glucx_fake_world_t *w, int rank)
{
    size_t n = 0;
    pthread_mutex_lock(&w->lock);
    for (const fake_msg_t *m = w->ranks[rank].uq_head; m != NULL; m = m->next)
        n++;
    pthread_mutex_unlock(&w->lock);
    return n;
}
