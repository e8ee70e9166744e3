/*
 * Windows (placed receives): glucx_window_create / glucx_iput / glucx_window_wait /
 * glucx_window_destroy over the transport's window ops (tx.h; UCX: ucx_win.c).
 *
 * Puts are point-to-point requests (kind P2P, is_put), so request_wait/test/wait_any/free handle
 * them as they handle sends. Tracing follows p2p.c: a put is a send (send_begin at post, send_end
 * where its completion is first observed); a message a window wait takes is a receive
 * (recv_begin and recv_end when the wait returns it, seq from the slot as for tags, step from
 * the FIFO of (sender, receiver, slot) that puts and placements count apart from sends and
 * receives). A blocking window wait is traced as wait_begin/wait_end with site window.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "util/error.h"
#include "util/fork.h"
#include "util/time.h"
#include "util/tracepoint.h"

glucx_status_t glucx_iput(glucx_comm_t *comm, const void *buf, size_t bytes, int peer,
                          uint64_t slot, size_t offset, unsigned flags, glucx_request_t **request_p)
{
    glucx_status_t st = glucx_p2p_check(comm, buf, bytes, 0, request_p, "iput");
    if (st == GLUCX_OK && (peer < 0 || peer >= comm->size))
        st = glucx_error(GLUCX_ERR_INVALID_ARG, "iput: peer %d out of range [0, %d)", peer,
                         comm->size);
    if (st == GLUCX_OK && (flags & ~(unsigned)GLUCX_PUT_SYNC) != 0)
        st = glucx_error(GLUCX_ERR_INVALID_ARG, "iput to rank %d: unknown flags 0x%x", peer,
                         flags & ~(unsigned)GLUCX_PUT_SYNC);
    if (st == GLUCX_OK && offset > SIZE_MAX - bytes)
        st = glucx_error(GLUCX_ERR_INVALID_ARG,
                         "iput of %zu bytes to rank %d: offset %zu + bytes overflows", bytes, peer,
                         offset);
    if (st == GLUCX_OK && comm->tx->ops->put == NULL)
        st = glucx_error(GLUCX_ERR_UNSUPPORTED, "iput: the transport has no windows");
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    glucx_request_t *req = glucx_request_alloc(comm, GLUCX_REQ_P2P);
    if (req == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "iput: out of memory");
    req->user_tag = slot;
    req->is_put = 1;
    const int link = glucx_topo_link_id(comm->topo, comm->rank, peer);
    if (GLUCX_TP_ON(send_begin)) {
        req->trace_seq = glucx_p2p_trace_seq(slot);
        req->trace_step = glucx_p2p_trace_step(comm->trace_id, peer, GLUCX_P2P_FIFO_PUT, slot);
        req->trace_open = 1;
        GLUCX_TP(send_begin, comm->trace_id, comm->rank, req->trace_seq, req->trace_step, peer,
                 link, slot, (uint64_t)bytes);
    }
    unsigned tflags = (flags & GLUCX_PUT_SYNC) ? GLUCX_TX_PUT_SYNC : 0;
    st = comm->tx->ops->put(comm->tx, peer, slot, offset, buf, bytes, tflags, &req->tx);
    if (st != GLUCX_OK) {
        if (req->trace_open) /* the failed post ends here */
            GLUCX_TP(send_end, comm->trace_id, comm->rank, req->trace_seq, req->trace_step, peer,
                     link, slot, (uint64_t)bytes);
        req->trace_open = 0;
        glucx_request_free(req); /* complete: the transport completed it with the error */
        return glucx_comm_record_error(
            comm, glucx_error(st, "iput of %zu bytes to rank %d (slot %" PRIu64 ", offset %zu): %s",
                              bytes, peer, slot, offset, glucx_error_text()));
    }
    glucx_stats_add_send(bytes);
    *request_p = req;
    return GLUCX_OK;
}

glucx_status_t glucx_window_create(glucx_comm_t *comm, int peer, uint64_t slot, void *buf,
                                   size_t bytes, glucx_window_t **window_p)
{
    glucx_request_t *unused = NULL;
    glucx_status_t st = glucx_p2p_check(comm, buf, bytes, 0, &unused, "window_create");
    if (st == GLUCX_OK && window_p == NULL)
        st = glucx_error(GLUCX_ERR_INVALID_ARG, "window_create: NULL window_p");
    if (st == GLUCX_OK && (peer < 0 || peer >= comm->size))
        st = glucx_error(GLUCX_ERR_INVALID_ARG, "window_create: peer %d out of range [0, %d)", peer,
                         comm->size);
    if (st == GLUCX_OK && comm->tx->ops->win_open == NULL)
        st = glucx_error(GLUCX_ERR_UNSUPPORTED, "window_create: the transport has no windows");
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    glucx_window_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "window_create: out of memory");
    st = comm->tx->ops->win_open(comm->tx, peer, slot, buf, bytes, &w->tw);
    if (st != GLUCX_OK) {
        free(w);
        return glucx_comm_record_error(
            comm, glucx_error(st,
                              "window_create of %zu bytes for rank %d's puts (slot %" PRIu64
                              ") on rank %d: %s",
                              bytes, peer, slot, comm->rank, glucx_error_text()));
    }
    w->comm = comm;
    w->peer = peer;
    w->slot = slot;
    w->bytes = bytes;
    pthread_mutex_lock(&comm->lock);
    w->next = comm->windows;
    if (comm->windows != NULL)
        comm->windows->prev = w;
    comm->windows = w;
    pthread_mutex_unlock(&comm->lock);
    *window_p = w;
    return GLUCX_OK;
}

/* recv_begin/recv_end of a message a window wait took (EVENTS.md). */
static void trace_placed(const glucx_window_t *w, size_t bytes)
{
    const glucx_comm_t *comm = w->comm;
    const uint32_t seq = glucx_p2p_trace_seq(w->slot);
    const uint32_t step =
        glucx_p2p_trace_step(comm->trace_id, w->peer, GLUCX_P2P_FIFO_PLACED, w->slot);
    const int link = glucx_topo_link_id(comm->topo, w->peer, comm->rank);
    GLUCX_TP(recv_begin, comm->trace_id, comm->rank, seq, step, w->peer, link, w->slot,
             (uint64_t)w->bytes);
    GLUCX_TP(recv_end, comm->trace_id, comm->rank, seq, step, w->peer, link, w->slot,
             (uint64_t)bytes);
}

glucx_status_t glucx_window_wait(glucx_window_t *window, int64_t timeout_ms, const unsigned *since,
                                 size_t *bytes_p, size_t *offset_p)
{
    if (window == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "window_wait: NULL window");
    glucx_comm_t *comm = window->comm;
    if (comm == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "window_wait: the window's communicator (rank %d's puts, slot %" PRIu64
                           ") was destroyed",
                           window->peer, window->slot);
    if (glucx_fork_tainted())
        return glucx_fork_refuse("window_wait for rank %d's puts (slot %" PRIu64
                                 ", %zu bytes) on communicator '%s' (rank %d of %d)",
                                 window->peer, window->slot, window->bytes, comm->name, comm->rank,
                                 comm->size);
    glucx_tx_t *tx = comm->tx;
    /* A wake after the caller's read (or after this point) interrupts the wait. */
    unsigned gen =
        since != NULL ? *since : atomic_load_explicit(&tx->wake_gen, memory_order_acquire);
    int64_t ms = timeout_ms < 0 ? comm->timeout_ms : timeout_ms;
    size_t offset = 0, bytes = 0;
    glucx_status_t st = GLUCX_ERR_TIMEOUT;
    /* Traced only when it blocks (EVENTS.md): try without waiting first. */
    int blocks = 0;
    if ((GLUCX_TP_ON(wait_begin) || GLUCX_TP_ON(wait_end)) && ms > 0) {
        st = tx->ops->win_wait(tx, window->tw, glucx_now_ns(), gen, &offset, &bytes);
        blocks = st == GLUCX_ERR_TIMEOUT;
        if (blocks)
            GLUCX_TP(wait_begin, comm->trace_id, comm->rank, GLUCX_TP_WAIT_WINDOW,
                     GLUCX_TP_SEQ_NONE, (uint64_t)(uintptr_t)window, 1u, GLUCX_INPROGRESS);
    }
    if (st == GLUCX_ERR_TIMEOUT)
        st = tx->ops->win_wait(tx, window->tw, glucx_deadline_ns(ms), gen, &offset, &bytes);
    if (st == GLUCX_OK) {
        glucx_stats_add_recv(bytes);
        if (GLUCX_TP_ON(recv_end))
            trace_placed(window, bytes);
        if (bytes_p != NULL)
            *bytes_p = bytes;
        if (offset_p != NULL)
            *offset_p = offset;
    }
    if (blocks)
        GLUCX_TP(wait_end, comm->trace_id, comm->rank, GLUCX_TP_WAIT_WINDOW, GLUCX_TP_SEQ_NONE,
                 (uint64_t)(uintptr_t)window, 1u, st);
    if (st == GLUCX_OK || st == GLUCX_INPROGRESS)
        return st;
    if (st == GLUCX_ERR_TIMEOUT) {
        if (ms == 0)
            return GLUCX_INPROGRESS; /* nothing placed, and asked not to wait */
        char text[400];
        snprintf(text, sizeof(text),
                 "Timed out waiting %" PRId64 "ms for a put from rank %d into window slot %" PRIu64
                 " (%zu bytes) on rank %d",
                 ms, window->peer, window->slot, window->bytes, comm->rank);
        /* Gloo semantics: a timed-out operation fails the communicator */
        tx->ops->fail(tx, GLUCX_ERR_TIMEOUT, text);
        return glucx_comm_record_error(comm, glucx_error(GLUCX_ERR_TIMEOUT, "%s", text));
    }
    return glucx_comm_record_error(
        comm, glucx_error(st, "window_wait on rank %d for rank %d's puts (slot %" PRIu64 "): %s",
                          comm->rank, window->peer, window->slot,
                          tx->failure[0] != '\0' ? tx->failure : glucx_error_text()));
}

void glucx_window_destroy(glucx_window_t *window)
{
    if (window == NULL)
        return;
    if (glucx_fork_tainted()) { /* the parent's: no lock, no UCX call (util/fork.h) */
        glucx_fork_retain(window);
        return;
    }
    glucx_comm_t *comm = window->comm;
    if (comm != NULL) {
        pthread_mutex_lock(&comm->lock);
        if (window->prev != NULL)
            window->prev->next = window->next;
        else
            comm->windows = window->next;
        if (window->next != NULL)
            window->next->prev = window->prev;
        pthread_mutex_unlock(&comm->lock);
        glucx_status_t st =
            comm->tx->ops->win_close(comm->tx, window->tw, glucx_deadline_ns(comm->timeout_ms));
        if (st != GLUCX_OK)
            glucx_comm_record_error(
                comm,
                glucx_error(st, "window_destroy on rank %d (rank %d's puts, slot %" PRIu64 "): %s",
                            comm->rank, window->peer, window->slot, comm->tx->failure));
    }
    free(window);
}

void glucx_window_detach_all(glucx_comm_t *comm)
{
    pthread_mutex_lock(&comm->lock);
    for (glucx_window_t *w = comm->windows; w != NULL; w = w->next) {
        w->comm = NULL;
        w->tw = NULL; /* freed with the transport */
    }
    comm->windows = NULL;
    pthread_mutex_unlock(&comm->lock);
}
