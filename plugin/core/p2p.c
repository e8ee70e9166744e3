/*
 * Point-to-point operations and requests. User tags live in the point-to-point half of the wire
 * tag space (bit 63 clear, bits 0-47); collectives use the other half, so the two never match.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "util/error.h"
#include "util/fork.h"
#include "util/time.h"
#include "util/tracepoint.h"

/* ---- tracing: seq/step of point-to-point messages (trace/EVENTS.md) ----
 *
 * seq: for tags in the Gloo shim's slot space (bit 47 set: 2^47 | prefix << 40 | tag << 8 |
 * delta) the slot's 32 tag bits, else the low 32 bits of the user tag. step: the message's
 * position (0, 1, ...) in the FIFO of its (sender, receiver, tag), counted by each side: a
 * send and a receive from a known peer take their position when posted (UCX matches in post
 * order per source and tag); an any-source receive takes it when its completion is first
 * observed (its recv_begin carries step 0xffffffff). The counters live in a small hash table,
 * used only while send/recv events are enabled and dropped with the communicator. */

#define TRACE_SLOT_BIT (UINT64_C(1) << 47)
#define TRACE_BUCKETS 1024u

typedef struct trace_fifo {
    struct trace_fifo *next;
    uint64_t comm_id;
    uint64_t tag;
    int32_t peer;
    int32_t is_recv;
    uint32_t count;
} trace_fifo_t;

static pthread_mutex_t trace_fifo_lock = PTHREAD_MUTEX_INITIALIZER;
static trace_fifo_t *trace_fifo_table[TRACE_BUCKETS];
static size_t trace_fifo_entries;

uint32_t glucx_p2p_trace_seq(uint64_t tag)
{
    return (tag & TRACE_SLOT_BIT) ? (uint32_t)(tag >> 8) : (uint32_t)tag;
}

uint32_t glucx_p2p_trace_step(uint64_t comm_id, int peer, int is_recv, uint64_t tag)
{
    uint64_t h =
        (comm_id ^ tag * UINT64_C(0x9e3779b97f4a7c15)) + (uint64_t)peer * 2u + (uint64_t)is_recv;
    h ^= h >> 29;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 32;
    trace_fifo_t **b = &trace_fifo_table[h % TRACE_BUCKETS];
    uint32_t pos = 0;
    pthread_mutex_lock(&trace_fifo_lock);
    trace_fifo_t *e = *b;
    while (e != NULL &&
           !(e->comm_id == comm_id && e->tag == tag && e->peer == peer && e->is_recv == is_recv))
        e = e->next;
    if (e == NULL && (e = calloc(1, sizeof(*e))) != NULL) {
        e->comm_id = comm_id;
        e->tag = tag;
        e->peer = peer;
        e->is_recv = is_recv;
        e->next = *b;
        *b = e;
        trace_fifo_entries++;
    }
    if (e != NULL)
        pos = e->count++;
    pthread_mutex_unlock(&trace_fifo_lock);
    return e != NULL ? pos : GLUCX_TP_SEQ_NONE;
}

void glucx_p2p_trace_forget(uint64_t comm_id)
{
    pthread_mutex_lock(&trace_fifo_lock);
    for (unsigned i = 0; i < TRACE_BUCKETS && trace_fifo_entries > 0; i++) {
        trace_fifo_t **pp = &trace_fifo_table[i];
        while (*pp != NULL) {
            trace_fifo_t *e = *pp;
            if (e->comm_id == comm_id) {
                *pp = e->next;
                free(e);
                trace_fifo_entries--;
            } else {
                pp = &e->next;
            }
        }
    }
    pthread_mutex_unlock(&trace_fifo_lock);
}

/* send_end / recv_end of a p2p request whose completion is observed now (once per request). */
static void trace_p2p_end(glucx_request_t *req)
{
    if (!req->trace_open)
        return;
    req->trace_open = 0;
    const glucx_comm_t *comm = req->comm;
    const glucx_tx_req_t *t = &req->tx;
    if (t->is_recv) {
        if (req->trace_step == GLUCX_TP_SEQ_NONE && t->peer >= 0 && GLUCX_TP_ON(recv_end))
            req->trace_step = glucx_p2p_trace_step(comm->trace_id, t->peer, 1, req->user_tag);
        GLUCX_TP(recv_end, comm->trace_id, comm->rank, req->trace_seq, req->trace_step, t->peer,
                 t->peer >= 0 ? glucx_topo_link_id(comm->topo, t->peer, comm->rank) : -1,
                 req->user_tag, (uint64_t)t->bytes);
    } else {
        GLUCX_TP(send_end, comm->trace_id, comm->rank, req->trace_seq, req->trace_step, t->peer,
                 glucx_topo_link_id(comm->topo, comm->rank, t->peer), req->user_tag,
                 (uint64_t)t->posted);
    }
}

/* Account for a p2p request whose completion is observed now (test, wait, wait_any or free):
 * its send_end/recv_end event and, for a successful receive, the statistics. Once per request. */
static void p2p_observed(glucx_request_t *req)
{
    trace_p2p_end(req);
    if (req->tx.is_recv && req->tx.status == GLUCX_OK && !req->counted) {
        req->counted = 1;
        glucx_stats_add_recv(req->tx.bytes);
    }
}

glucx_request_t *glucx_request_alloc(glucx_comm_t *comm, glucx_req_kind_t kind)
{
    glucx_request_t *req = calloc(1, sizeof(*req));
    if (req == NULL)
        return NULL;
    req->kind = kind;
    req->comm = comm;
    pthread_mutex_init(&req->lock, NULL);
    pthread_cond_init(&req->cond, NULL);
    glucx_tx_req_init(&req->tx);
    return req;
}

glucx_status_t glucx_p2p_check(glucx_comm_t *comm, const void *buf, size_t bytes, uint64_t tag,
                               glucx_request_t **request_p, const char *op)
{
    if (comm == NULL || request_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: NULL communicator or request_p", op);
    if (buf == NULL && bytes > 0)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: NULL buffer of %zu bytes", op, bytes);
    if (tag > GLUCX_TAG_MAX)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "%s: tag %" PRIu64 " exceeds GLUCX_TAG_MAX (2^48-1)", op, tag);
    if (bytes > (SIZE_MAX >> 2))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: %zu bytes is too large", op, bytes);
    if (glucx_fork_tainted())
        return glucx_fork_refuse("%s of %zu bytes (tag %" PRIu64
                                 ") on communicator '%s' (rank %d of %d)",
                                 op, bytes, tag, comm->name, comm->rank, comm->size);
    glucx_status_t failed = glucx_tx_failure(comm->tx);
    if (!comm->connected)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "%s: communicator '%s' on rank %d is not connected "
                           "(glucx_comm_connect)",
                           op, comm->name, comm->rank);
    if (failed != GLUCX_OK)
        return glucx_error(failed, "%s: communicator '%s' failed earlier: %s", op, comm->name,
                           comm->tx->failure);
    return GLUCX_OK;
}

static glucx_status_t check_peer(glucx_comm_t *comm, int peer, const char *op)
{
    if (peer < 0 || peer >= comm->size)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: peer %d out of range [0, %d)", op, peer,
                           comm->size);
    return GLUCX_OK;
}

glucx_status_t glucx_isend(glucx_comm_t *comm, const void *buf, size_t bytes, int peer,
                           uint64_t tag, glucx_request_t **request_p)
{
    return glucx_isend_flags(comm, buf, bytes, peer, tag, 0, request_p);
}

glucx_status_t glucx_isend_flags(glucx_comm_t *comm, const void *buf, size_t bytes, int peer,
                                 uint64_t tag, unsigned flags, glucx_request_t **request_p)
{
    const int sync = (flags & GLUCX_SEND_SYNC) != 0;
    const char *op = sync ? "isend (sync)" : "isend";
    glucx_status_t st = glucx_p2p_check(comm, buf, bytes, tag, request_p, op);
    if (st == GLUCX_OK)
        st = check_peer(comm, peer, op);
    if (st == GLUCX_OK && (flags & ~(unsigned)GLUCX_SEND_SYNC) != 0)
        st = glucx_error(GLUCX_ERR_INVALID_ARG, "%s of %zu bytes to rank %d: unknown flags 0x%x",
                         op, bytes, peer, flags & ~(unsigned)GLUCX_SEND_SYNC);
    if (st == GLUCX_OK && sync && comm->tx->ops->isend_sync == NULL)
        st = glucx_error(GLUCX_ERR_UNSUPPORTED,
                         "%s of %zu bytes to rank %d: the transport has no synchronous send", op,
                         bytes, peer);
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    glucx_request_t *req = glucx_request_alloc(comm, GLUCX_REQ_P2P);
    if (req == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "isend: out of memory");
    req->user_tag = tag;
    if (GLUCX_TP_ON(send_begin)) {
        req->trace_seq = glucx_p2p_trace_seq(tag);
        req->trace_step = glucx_p2p_trace_step(comm->trace_id, peer, 0, tag);
        req->trace_open = 1;
        GLUCX_TP(send_begin, comm->trace_id, comm->rank, req->trace_seq, req->trace_step, peer,
                 glucx_topo_link_id(comm->topo, comm->rank, peer), tag, (uint64_t)bytes);
    }
    st = (sync ? comm->tx->ops->isend_sync : comm->tx->ops->isend)(comm->tx, peer, tag, buf, bytes,
                                                                   &req->tx);
    if (st != GLUCX_OK) {
        if (req->trace_open) /* the failed post ends here */
            GLUCX_TP(send_end, comm->trace_id, comm->rank, req->trace_seq, req->trace_step, peer,
                     glucx_topo_link_id(comm->topo, comm->rank, peer), tag, (uint64_t)bytes);
        free(req);
        return glucx_comm_record_error(
            comm, glucx_error(st, "%s of %zu bytes to rank %d (tag %" PRIu64 "): %s", op, bytes,
                              peer, tag, glucx_error_text()));
    }
    glucx_stats_add_send(bytes);
    *request_p = req;
    return GLUCX_OK;
}

static glucx_status_t post_recv(glucx_comm_t *comm, void *buf, size_t bytes, const int *peers,
                                int npeers, uint64_t tag, glucx_request_t **request_p,
                                const char *op)
{
    glucx_request_t *req = glucx_request_alloc(comm, GLUCX_REQ_P2P);
    if (req == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "%s: out of memory", op);
    req->user_tag = tag;
    if (GLUCX_TP_ON(recv_begin)) {
        const int peer = npeers == 1 ? peers[0] : -1;
        req->trace_seq = glucx_p2p_trace_seq(tag);
        req->trace_step =
            peer >= 0 ? glucx_p2p_trace_step(comm->trace_id, peer, 1, tag) : GLUCX_TP_SEQ_NONE;
        req->trace_open = 1;
        GLUCX_TP(recv_begin, comm->trace_id, comm->rank, req->trace_seq, req->trace_step, peer,
                 peer >= 0 ? glucx_topo_link_id(comm->topo, peer, comm->rank) : -1, tag,
                 (uint64_t)bytes);
    }
    glucx_status_t st = comm->tx->ops->irecv(comm->tx, peers, npeers, tag, 0, buf, bytes, &req->tx);
    if (st != GLUCX_OK) {
        if (req->trace_open) /* the failed post ends here, having received nothing */
            GLUCX_TP(recv_end, comm->trace_id, comm->rank, req->trace_seq, req->trace_step,
                     npeers == 1 ? peers[0] : -1,
                     npeers == 1 ? glucx_topo_link_id(comm->topo, peers[0], comm->rank) : -1, tag,
                     (uint64_t)0);
        free(req);
        return glucx_comm_record_error(comm,
                                       glucx_error(st, "%s of %zu bytes (tag %" PRIu64 "): %s", op,
                                                   bytes, tag, glucx_error_text()));
    }
    *request_p = req;
    return GLUCX_OK;
}

glucx_status_t glucx_irecv(glucx_comm_t *comm, void *buf, size_t bytes, int peer, uint64_t tag,
                           glucx_request_t **request_p)
{
    glucx_status_t st = glucx_p2p_check(comm, buf, bytes, tag, request_p, "irecv");
    if (st == GLUCX_OK)
        st = check_peer(comm, peer, "irecv");
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    return post_recv(comm, buf, bytes, &peer, 1, tag, request_p, "irecv");
}

glucx_status_t glucx_irecv_any(glucx_comm_t *comm, void *buf, size_t bytes, const int *peers,
                               int npeers, uint64_t tag, glucx_request_t **request_p)
{
    glucx_status_t st = glucx_p2p_check(comm, buf, bytes, tag, request_p, "irecv_any");
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    if (peers == NULL || npeers < 1)
        return glucx_comm_record_error(
            comm, glucx_error(GLUCX_ERR_INVALID_ARG, "irecv_any: %s (%d peers)",
                              peers == NULL ? "NULL peer array" : "empty peer set", npeers));
    for (int i = 0; i < npeers; i++)
        if ((st = check_peer(comm, peers[i], "irecv_any")) != GLUCX_OK)
            return glucx_comm_record_error(comm, st);
    return post_recv(comm, buf, bytes, peers, npeers, tag, request_p, "irecv_any");
}

/* Final status of a completed p2p request, with the message recorded for the caller. */
static glucx_status_t p2p_result(glucx_request_t *req)
{
    glucx_tx_req_t *t = &req->tx;
    p2p_observed(req);
    if (t->status == GLUCX_OK)
        return GLUCX_OK;
    glucx_comm_t *comm = req->comm;
    if (t->status == GLUCX_ERR_TRUNCATED)
        return glucx_comm_record_error(
            comm, glucx_error(t->status,
                              "irecv on rank %d: rank %d sent more than the %zu bytes posted "
                              "(tag %" PRIu64 ")",
                              comm->rank, t->peer, t->posted, req->user_tag));
    return glucx_comm_record_error(
        comm,
        glucx_error(t->status, "%s of %zu bytes %s rank %d on rank %d: %s",
                    t->is_recv    ? "receive"
                    : req->is_put ? "put"
                                  : "send",
                    t->posted, t->is_recv ? "from" : "to", t->peer, comm->rank,
                    comm->tx->failure[0] ? comm->tx->failure : glucx_status_string(t->status)));
}

/* A request in a forked child is the parent's (util/fork.h): refused before any lock or UCX. */
static glucx_status_t request_refuse(const glucx_request_t *req, const char *op)
{
    const glucx_comm_t *comm = req->comm;
    if (req->kind == GLUCX_REQ_COLL)
        return glucx_fork_refuse("%s of a started collective on communicator '%s' (rank %d of %d)",
                                 op, comm->name, comm->rank, comm->size);
    return glucx_fork_refuse("%s of a %s of %zu bytes %s rank %d on communicator '%s' (rank %d of "
                             "%d)",
                             op, req->tx.is_recv ? "receive" : "send", req->tx.posted,
                             req->tx.is_recv ? "from" : "to", req->tx.peer, comm->name, comm->rank,
                             comm->size);
}

glucx_status_t glucx_request_test(glucx_request_t *req)
{
    if (req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "request_test: NULL request");
    if (glucx_fork_tainted())
        return request_refuse(req, "request_test");
    if (req->kind == GLUCX_REQ_COLL) {
        pthread_mutex_lock(&req->lock);
        glucx_status_t st = req->coll_done ? req->coll_status : GLUCX_INPROGRESS;
        if (req->coll_done && st != GLUCX_OK)
            glucx_error(st, "%s", req->error);
        pthread_mutex_unlock(&req->lock);
        return st;
    }
    if (!glucx_tx_req_done(&req->tx))
        req->comm->tx->ops->progress(req->comm->tx);
    if (!glucx_tx_req_done(&req->tx))
        return GLUCX_INPROGRESS;
    return p2p_result(req);
}

static glucx_status_t coll_wait(glucx_request_t *req, int64_t deadline, int64_t timeout_ms)
{
    struct timespec ts;
    pthread_mutex_lock(&req->lock);
    while (!req->coll_done) {
        if (deadline == GLUCX_NO_DEADLINE) {
            pthread_cond_wait(&req->cond, &req->lock);
            continue;
        }
        /* the condition variable uses CLOCK_REALTIME: convert the remaining time */
        int64_t left = deadline - glucx_now_ns();
        if (left <= 0)
            break;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t abs_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + left;
        ts.tv_sec = abs_ns / 1000000000;
        ts.tv_nsec = abs_ns % 1000000000;
        pthread_cond_timedwait(&req->cond, &req->lock, &ts);
    }
    int done = req->coll_done;
    glucx_status_t st = req->coll_status;
    if (done && st != GLUCX_OK)
        glucx_error(st, "%s", req->error);
    pthread_mutex_unlock(&req->lock);
    if (done)
        return st;
    glucx_comm_t *comm = req->comm;
    char text[200];
    snprintf(text, sizeof(text),
             "Timed out waiting %" PRId64 "ms for a started collective to complete on rank %d",
             timeout_ms, comm->rank);
    comm->tx->ops->fail(comm->tx, GLUCX_ERR_TIMEOUT, text);
    return glucx_comm_record_error(comm, glucx_error(GLUCX_ERR_TIMEOUT, "%s", text));
}

static glucx_status_t request_wait(glucx_request_t *req, int64_t deadline, int64_t timeout_ms);

/* Whether a wait on req does not block (EVENTS.md, wait_begin): glucx_tx_would_block for a
 * point-to-point request, its completion for a started collective. */
static int request_done(glucx_request_t *req)
{
    if (req->kind != GLUCX_REQ_COLL)
        return !glucx_tx_would_block(req->comm->tx, &req->tx, 1);
    pthread_mutex_lock(&req->lock);
    int done = req->coll_done;
    pthread_mutex_unlock(&req->lock);
    return done;
}

glucx_status_t glucx_request_wait(glucx_request_t *req, int64_t timeout_ms)
{
    if (req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "request_wait: NULL request");
    if (glucx_fork_tainted())
        return request_refuse(req, "request_wait");
    glucx_comm_t *comm = req->comm;
    int64_t deadline = glucx_deadline_ns(timeout_ms < 0 ? comm->timeout_ms : timeout_ms);
    const uint32_t tseq = req->kind == GLUCX_REQ_COLL ? req->trace_seq : GLUCX_TP_SEQ_NONE;
    /* wait events only when the wait blocks (EVENTS.md); a p2p request's send_end/recv_end
     * comes inside the wait (request_wait observes it before returning) */
    const int blocks = (GLUCX_TP_ON(wait_begin) || GLUCX_TP_ON(wait_end)) && !request_done(req);
    if (blocks)
        GLUCX_TP(wait_begin, comm->trace_id, comm->rank, GLUCX_TP_WAIT_REQUEST, tseq,
                 (uint64_t)(uintptr_t)req, 1u, GLUCX_INPROGRESS);
    glucx_status_t st = request_wait(req, deadline, timeout_ms);
    if (blocks)
        GLUCX_TP(wait_end, comm->trace_id, comm->rank, GLUCX_TP_WAIT_REQUEST, tseq,
                 (uint64_t)(uintptr_t)req, 1u, st);
    return st;
}

static glucx_status_t request_wait(glucx_request_t *req, int64_t deadline, int64_t timeout_ms)
{
    glucx_comm_t *comm = req->comm;
    if (req->kind == GLUCX_REQ_COLL)
        return coll_wait(req, deadline, timeout_ms < 0 ? comm->timeout_ms : timeout_ms);
    glucx_tx_req_t *one = &req->tx;
    glucx_status_t st = comm->tx->ops->wait(comm->tx, &one, 1, deadline);
    if (st == GLUCX_ERR_TIMEOUT) {
        char text[300];
        /* Gloo's wording ("Timed out waiting 1000ms for recv operation to complete"), which
         * code and people match on, then which operation */
        snprintf(text, sizeof(text),
                 "Timed out waiting %" PRId64 "ms for %s operation to complete: %s of %zu bytes "
                 "%s rank %d (%s %" PRIu64 ") on rank %d",
                 timeout_ms < 0 ? comm->timeout_ms : timeout_ms, one->is_recv ? "recv" : "send",
                 one->is_recv  ? "receive"
                 : req->is_put ? "put"
                               : "send",
                 one->posted, one->is_recv ? "from" : "to", one->peer, req->is_put ? "slot" : "tag",
                 req->user_tag, comm->rank);
        /* Gloo semantics: a timed-out operation fails the communicator */
        comm->tx->ops->fail(comm->tx, GLUCX_ERR_TIMEOUT, text);
        return glucx_comm_record_error(comm, glucx_error(GLUCX_ERR_TIMEOUT, "%s", text));
    }
    if (!glucx_tx_req_done(one))
        return glucx_comm_record_error(
            comm, glucx_error(st, "wait on rank %d: %s", comm->rank, comm->tx->failure));
    return p2p_result(req);
}

glucx_status_t glucx_request_cancel(glucx_request_t *req)
{
    if (req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "request_cancel: NULL request");
    if (glucx_fork_tainted())
        return request_refuse(req, "request_cancel");
    if (req->kind == GLUCX_REQ_P2P && req->tx.is_recv && !glucx_tx_req_done(&req->tx))
        req->comm->tx->ops->cancel(req->comm->tx, &req->tx);
    return GLUCX_OK;
}

glucx_status_t glucx_request_info(glucx_request_t *req, int *peer_p, size_t *bytes_p)
{
    if (req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "request_info: NULL request");
    if (glucx_fork_tainted())
        return request_refuse(req, "request_info");
    if (req->kind == GLUCX_REQ_COLL) {
        pthread_mutex_lock(&req->lock);
        int done = req->coll_done;
        pthread_mutex_unlock(&req->lock);
        if (!done)
            return GLUCX_INPROGRESS;
        if (peer_p != NULL)
            *peer_p = -1;
        if (bytes_p != NULL)
            *bytes_p = 0;
        return GLUCX_OK;
    }
    if (!glucx_tx_req_done(&req->tx))
        return GLUCX_INPROGRESS;
    if (peer_p != NULL)
        *peer_p = req->tx.peer;
    if (bytes_p != NULL)
        *bytes_p = req->tx.bytes;
    return GLUCX_OK;
}

void glucx_request_free(glucx_request_t *req)
{
    if (req == NULL)
        return;
    if (glucx_fork_tainted()) { /* the parent's: not waited for, not cancelled (util/fork.h) */
        glucx_fork_retain(req);
        return;
    }
    if (req->kind == GLUCX_REQ_COLL) {
        /* the collective thread still references it until completion */
        pthread_mutex_lock(&req->lock);
        while (!req->coll_done)
            pthread_cond_wait(&req->cond, &req->lock);
        pthread_mutex_unlock(&req->lock);
    } else if (!glucx_tx_req_done(&req->tx)) {
        glucx_comm_t *comm = req->comm;
        if (req->tx.is_recv)
            comm->tx->ops->cancel(comm->tx, &req->tx);
        glucx_tx_req_t *one = &req->tx;
        if (comm->tx->ops->wait(comm->tx, &one, 1, glucx_deadline_ns(comm->timeout_ms)) !=
                GLUCX_OK &&
            !glucx_tx_req_done(one)) {
            /* never leave the transport a pointer into freed memory */
            char text[200];
            snprintf(text, sizeof(text),
                     "Timed out waiting %" PRId64 "ms for the %s of %zu bytes %s rank %d to "
                     "complete before its request was freed, on rank %d",
                     comm->timeout_ms, one->is_recv ? "receive" : "send", one->posted,
                     one->is_recv ? "from" : "to", one->peer, comm->rank);
            comm->tx->ops->fail(comm->tx, GLUCX_ERR_TIMEOUT, text);
        }
    }
    if (req->kind == GLUCX_REQ_P2P && glucx_tx_req_done(&req->tx))
        p2p_observed(req);
    pthread_cond_destroy(&req->cond);
    pthread_mutex_destroy(&req->lock);
    free(req);
}

glucx_status_t glucx_request_wait_any(glucx_request_t *const *reqs, size_t n, int64_t timeout_ms,
                                      const unsigned *since, size_t *index_p)
{
    enum { STACK = 16 };
    if (reqs == NULL || n == 0 || n > INT32_MAX || index_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "request_wait_any: %zu requests at %p, index_p %p: invalid", n,
                           (const void *)reqs, (void *)index_p);
    glucx_comm_t *comm = reqs[0] != NULL ? reqs[0]->comm : NULL;
    for (size_t i = 0; i < n; i++) {
        if (reqs[i] == NULL || reqs[i]->kind != GLUCX_REQ_P2P || reqs[i]->comm != comm)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "request_wait_any: request %zu of %zu is %s",
                               i, n,
                               reqs[i] == NULL                  ? "NULL"
                               : reqs[i]->kind != GLUCX_REQ_P2P ? "a started collective"
                                                                : "of another communicator");
    }
    if (glucx_fork_tainted())
        return glucx_fork_refuse("request_wait_any of %zu operations on communicator '%s' (rank "
                                 "%d of %d)",
                                 n, comm->name, comm->rank, comm->size);
    if (comm->tx->ops->wait_any == NULL)
        return glucx_error(GLUCX_ERR_UNSUPPORTED, "request_wait_any: transport cannot");
    /* A wake after the caller's read (or after this point) interrupts the wait. */
    unsigned gen =
        since != NULL ? *since : atomic_load_explicit(&comm->tx->wake_gen, memory_order_acquire);
    glucx_tx_req_t *stack[STACK];
    glucx_tx_req_t **t = n <= STACK ? stack : malloc(n * sizeof(*t));
    if (t == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "request_wait_any: %zu requests", n);
    for (size_t i = 0; i < n; i++)
        t[i] = &reqs[i]->tx;
    int64_t ms = timeout_ms < 0 ? comm->timeout_ms : timeout_ms;
    /* wait events only when the wait blocks: no request complete on entry (EVENTS.md); the
     * completed request's send_end/recv_end inside the wait */
    int blocks = GLUCX_TP_ON(wait_begin) || GLUCX_TP_ON(wait_end);
    for (size_t i = 0; i < n && blocks; i++)
        if (glucx_tx_req_done(t[i]))
            blocks = 0;
    if (blocks)
        GLUCX_TP(wait_begin, comm->trace_id, comm->rank, GLUCX_TP_WAIT_WAIT_ANY, GLUCX_TP_SEQ_NONE,
                 (uint64_t)(uintptr_t)reqs[0], (uint32_t)n, GLUCX_INPROGRESS);
    glucx_status_t st = comm->tx->ops->wait_any(comm->tx, t, (int)n, glucx_deadline_ns(ms), gen);
    size_t found = n;
    for (size_t i = 0; i < n && found == n; i++)
        if (glucx_tx_req_done(t[i]))
            found = i;
    if (found < n)
        p2p_observed(reqs[found]);
    if (blocks)
        GLUCX_TP(wait_end, comm->trace_id, comm->rank, GLUCX_TP_WAIT_WAIT_ANY, GLUCX_TP_SEQ_NONE,
                 found < n ? (uint64_t)(uintptr_t)reqs[found] : 0, (uint32_t)n,
                 found < n ? GLUCX_OK : (st == GLUCX_OK ? GLUCX_INPROGRESS : st));
    if (found < n) {
        *index_p = found;
        st = GLUCX_OK;
    } else if (st == GLUCX_ERR_TIMEOUT) {
        char text[400];
        int len = snprintf(text, sizeof(text),
                           "Timed out waiting %" PRId64
                           "ms for any of %zu operations to complete on rank %d; "
                           "pending:",
                           ms, n, comm->rank);
        for (size_t i = 0; i < n && i < 8 && len > 0 && (size_t)len < sizeof(text); i++)
            len += snprintf(text + len, sizeof(text) - (size_t)len, " %s %zu bytes %s rank %d%s",
                            t[i]->is_recv ? "receive" : "send", t[i]->posted,
                            t[i]->is_recv ? "from" : "to", t[i]->peer, i + 1 < n ? "," : "");
        /* Gloo semantics: a timed-out operation fails the communicator */
        comm->tx->ops->fail(comm->tx, GLUCX_ERR_TIMEOUT, text);
        st = glucx_comm_record_error(comm, glucx_error(GLUCX_ERR_TIMEOUT, "%s", text));
    } else if (st == GLUCX_OK) {
        st = GLUCX_INPROGRESS;
    }
    if (t != stack)
        free(t);
    return st;
}

unsigned glucx_comm_wake_count(const glucx_comm_t *comm)
{
    if (comm == NULL || comm->tx == NULL)
        return 0;
    return atomic_load_explicit(&((glucx_tx_t *)comm->tx)->wake_gen, memory_order_acquire);
}

void glucx_comm_wake(glucx_comm_t *comm)
{
    if (comm != NULL && !glucx_fork_tainted() && comm->tx != NULL && comm->tx->ops->wake != NULL)
        comm->tx->ops->wake(comm->tx);
}
