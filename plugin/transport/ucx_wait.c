/*
 * UCX transport: the progress engine (spin, then sleep on the worker's event descriptor) and
 * failure handling (record, notify peers, force-close endpoints, complete every request).
 *
 * Sleeping. At most one waiter (the "efd owner") sleeps in ppoll on the worker's event fd after
 * ucp_worker_arm; the others sleep on tx->cond. Whoever completes a request wakes them: a
 * completion broadcasts tx->cond when someone sleeps on it and signals the worker
 * (ucp_worker_signal) when the owner sleeps, so a waiter never sleeps through a completion that
 * another thread's progress produced. The owner broadcasts tx->cond after every wake-up, so the
 * cond sleepers re-check and one of them takes over the descriptor when the owner leaves.
 * Sleeps never last past the deadline nor past tx->tick_ns: UCX's keepalive (which finds dead
 * peers of endpoints with peer error handling) only runs inside ucp_worker_progress, and local
 * peers without a pidfd are checked at each wake-up. The owner also polls the local peers'
 * pidfds, so a local peer's exit wakes it at once.
 */
#include "transport/ucx_int.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/time.h"

/* More than UCX's keepalive iteration skip (32), so a timed wake-up runs a keepalive round. */
#define KEEPALIVE_PROGRESS_CALLS 40

int glucx_ucx_record_failure(glucx_ucx_tx_t *tx, glucx_status_t status, int flags, int origin,
                             const char *notice, const char *fmt, ...)
{
    if (status >= GLUCX_OK)
        status = GLUCX_ERR_ABORTED;
    int first = 0;
    pthread_mutex_lock(&tx->fail_lock);
    if (atomic_load_explicit(&tx->base.failed, memory_order_relaxed) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tx->base.failure, sizeof(tx->base.failure), fmt, ap);
        va_end(ap);
        tx->fail_notify = (flags & GLUCX_UCX_FAIL_NOTIFY) != 0;
        tx->fail_quiet = (flags & GLUCX_UCX_FAIL_QUIET) != 0;
        tx->notice_origin = origin >= 0 ? origin : tx->base.rank;
        snprintf(tx->notice_text, sizeof(tx->notice_text), "%s",
                 notice != NULL ? notice : tx->base.failure);
        atomic_store_explicit(&tx->fail_pending, 1, memory_order_relaxed);
        atomic_store_explicit(&tx->base.failed, (int)status, memory_order_release);
        first = 1;
    }
    pthread_mutex_unlock(&tx->fail_lock);
    if (first) {
        if (!(flags & GLUCX_UCX_FAIL_QUIET))
            glucx_warn("ucx: rank %d: transport failed (%s): %s", tx->base.rank,
                       glucx_status_string(status), tx->base.failure);
        /* Wake a sleeping waiter so the teardown runs promptly. */
        ucp_worker_signal(tx->worker);
    }
    return first;
}

void glucx_ucx_suspect(glucx_ucx_tx_t *tx, int rank, glucx_status_t status, const char *fmt, ...)
{
    int first = 0;
    pthread_mutex_lock(&tx->fail_lock);
    if (tx->suspect_at_ns == 0 &&
        atomic_load_explicit(&tx->base.failed, memory_order_relaxed) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tx->suspect_text, sizeof(tx->suspect_text), fmt, ap);
        va_end(ap);
        tx->suspect_status = status;
        tx->suspect_rank = rank;
        tx->suspect_at_ns = glucx_now_ns();
        first = 1;
    }
    pthread_mutex_unlock(&tx->fail_lock);
    if (first) {
        glucx_debug("ucx: rank %d: suspects a peer failure: %s", tx->base.rank, tx->suspect_text);
        ucp_worker_signal(tx->worker);
    }
}

void glucx_ucx_unsuspect(glucx_ucx_tx_t *tx, int rank)
{
    pthread_mutex_lock(&tx->fail_lock);
    if (tx->suspect_at_ns != 0 && tx->suspect_rank == rank)
        tx->suspect_at_ns = 0;
    pthread_mutex_unlock(&tx->fail_lock);
}

/* The suspicion becomes the failure once its grace period is over. @return when it will (or
 * INT64_MAX when none is pending). */
static int64_t commit_suspicion(glucx_ucx_tx_t *tx)
{
    char text[sizeof(tx->suspect_text)];
    glucx_status_t status;
    pthread_mutex_lock(&tx->fail_lock);
    int64_t at = tx->suspect_at_ns;
    int64_t due = at != 0 ? at + GLUCX_UCX_SUSPECT_GRACE_NS : INT64_MAX;
    int commit = at != 0 && glucx_now_ns() >= due;
    if (commit) {
        memcpy(text, tx->suspect_text, sizeof(text));
        status = tx->suspect_status;
        tx->suspect_at_ns = 0;
    }
    pthread_mutex_unlock(&tx->fail_lock);
    if (commit) {
        glucx_ucx_record_failure(tx, status, GLUCX_UCX_FAIL_NOTIFY, -1, NULL, "%s", text);
        return INT64_MAX;
    }
    return atomic_load_explicit(&tx->base.failed, memory_order_relaxed) ? INT64_MAX : due;
}

void glucx_ucx_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    glucx_ucx_peer_t *peer = arg;
    glucx_ucx_tx_t *tx = peer->tx;
    (void)ep;
    tx->ep_failed[peer->rank] = 1;
    if (tx->departed[peer->rank])
        return; /* it left in order: its endpoint closing is expected */
    glucx_ucx_suspect(tx, peer->rank,
                      glucx_ucx_status(status) == GLUCX_ERR_TRANSPORT ? GLUCX_ERR_TRANSPORT
                                                                      : GLUCX_ERR_PEER_FAILED,
                      "rank %d failed: %s", peer->rank, ucs_status_string(status));
}

/* A local peer's process is gone (kill(pid, 0) fails with ESRCH, or it is a zombie). */
static int pid_gone(int pid)
{
    if (kill(pid, 0) == -1 && errno == ESRCH)
        return 1;
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0; /* no /proc: rely on kill() */
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return paren != NULL && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static void peer_exited(glucx_ucx_tx_t *tx, int r)
{
    if (tx->ep_failed[r])
        return;
    /* What it sent before it died and is already queued here is delivered first. */
    for (int i = 0; i < 256 && ucp_worker_progress(tx->worker) > 0; i++)
        ;
    tx->ep_failed[r] = 2;
    if (tx->departed[r])
        return; /* it left in order before it exited */
    glucx_ucx_suspect(tx, r, GLUCX_ERR_PEER_FAILED, "rank %d (pid %d) exited", r, tx->pid[r]);
}

void glucx_ucx_check_peers(glucx_ucx_tx_t *tx)
{
    tx->next_check_ns = glucx_now_ns() + GLUCX_UCX_PEER_CHECK_NS;
    if (!tx->connected || atomic_load_explicit(&tx->base.failed, memory_order_relaxed) != 0)
        return;
    if (tx->npidfds > 0 && poll(tx->chk, (nfds_t)tx->npidfds, 0) > 0) {
        for (int i = 0; i < tx->npidfds; i++) {
            if (tx->chk[i].revents == 0)
                continue;
            /* reported once; poll() skips negative descriptors from now on */
            tx->chk[i].fd = -1;
            tx->pfds[1 + i].fd = -1;
            peer_exited(tx, tx->pfd_rank[i]);
        }
    }
    if (tx->nkill > 0)
        for (int r = 0; r < tx->base.size; r++)
            if (tx->local[r] && r != tx->base.rank && tx->pidfd[r] < 0 && !tx->ep_failed[r] &&
                pid_gone(tx->pid[r]))
                peer_exited(tx, r);
}

static void notice_cb(void *request, ucs_status_t status, void *user_data)
{
    glucx_ucx_tx_t *tx = user_data;
    (void)status;
    tx->notices_pending--;
    ucp_request_free(request);
}

int glucx_ucx_finish_requests(glucx_ucx_tx_t *tx, void **reqs, int n, int64_t wait_ns)
{
    int64_t deadline = glucx_now_ns() + wait_ns;
    int left;
    for (;;) {
        left = 0;
        for (int i = 0; i < n; i++)
            if (reqs[i] != NULL && ucp_request_check_status(reqs[i]) == UCS_INPROGRESS)
                left++;
        if (left == 0 || glucx_now_ns() >= deadline)
            break;
        ucp_worker_progress(tx->worker);
    }
    /* Unfinished ones are released too: UCX frees them when they complete. That may happen
     * inside ucp_worker_destroy, which completes a close still flushing (its lanes' pending
     * queues are purged first) and, in UCX 1.13.1, aborts unless its owner released it
     * (ucp_ep.c:382, assertion "req->flags & UCP_REQUEST_FLAG_RELEASED"). */
    for (int i = 0; i < n; i++) {
        if (reqs[i] != NULL) {
            ucp_request_free(reqs[i]);
            reqs[i] = NULL;
        }
    }
    return left;
}

/* Send tx->notice_buf's first @p len bytes as control message @p kind to every live peer that
 * has not left, but @p skip, and wait (bounded) until the sends completed, so the buffer outlives
 * them. Lock held, not inside a callback. */
static void send_ctrl_all(glucx_ucx_tx_t *tx, uint64_t kind, size_t len, int skip)
{
    uint64_t tag = GLUCX_TX_TAG_CTRL | kind | ((uint64_t)tx->base.rank << GLUCX_TX_TAG_SRC_SHIFT);
    for (int p = 0; p < tx->base.size; p++) {
        if (p == tx->base.rank || p == skip || tx->eps[p] == NULL || tx->ep_failed[p] ||
            tx->departed[p])
            continue;
        ucp_request_param_t param = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            .cb.send = notice_cb,
            .user_data = tx,
        };
        void *r = ucp_tag_send_nbx(tx->eps[p], &tx->notice_buf, len, tag, &param);
        if (UCS_PTR_IS_PTR(r))
            tx->notices_pending++;
    }
    int64_t deadline = glucx_now_ns() + GLUCX_UCX_NOTICE_WAIT_NS;
    while (tx->notices_pending > 0 && glucx_now_ns() < deadline)
        ucp_worker_progress(tx->worker);
}

/* Tell every peer (but the origin and the dead) why this transport failed, in the origin's words:
 * a rank that fails because of a notice forwards it, so the notice reaches every peer ahead of
 * this rank closing its endpoints (same connection, in order). No loops: each rank fails once. */
static void send_notices(glucx_ucx_tx_t *tx)
{
    glucx_ucx_notice_t *n = &tx->notice_buf;
    memset(n, 0, sizeof(*n));
    n->status = (int32_t)glucx_tx_failure(&tx->base);
    n->rank = tx->notice_origin;
    snprintf(n->text, sizeof(n->text), "%s", tx->notice_text);
    send_ctrl_all(tx, GLUCX_UCX_CTRL_NOTICE,
                  offsetof(glucx_ucx_notice_t, text) + strlen(n->text) + 1, tx->notice_origin);
    /* Progressing also drains what peers sent us, so closing the connection afterwards is an
     * orderly shutdown rather than a reset that could discard our notice at the peer. */
    for (int i = 0; i < 16; i++)
        ucp_worker_progress(tx->worker);
    /* Unsent notices are cancelled by the force-close below (their callback frees them). */
}

/* Healthy destroy: tell every peer that this rank leaves, ahead of its endpoints closing (same
 * connection, in order), so a peer still waiting for a message this rank will never send fails at
 * once instead of at its timeout, and a peer whose endpoint sees the close does not take it for a
 * failure. Everything this rank sent before arrives before the leave; the flush that follows
 * delivers it. */
static void send_leaves(glucx_ucx_tx_t *tx)
{
    glucx_ucx_notice_t *n = &tx->notice_buf;
    memset(n, 0, sizeof(*n));
    n->status = GLUCX_OK;
    n->rank = tx->base.rank;
    send_ctrl_all(tx, GLUCX_UCX_CTRL_LEAVE, offsetof(glucx_ucx_notice_t, text), -1);
}

/* After a leave arrived: cancel the unmatched receives whose only source left (a cancelled one
 * can never match: all the peer sent arrived before its leave, in order), which fails the
 * transport. A synchronous send to a peer that left unacknowledged was never matched there (the
 * acknowledgement of a match travels before the leave on the same endpoint, and the progress
 * that took the leave processed it) and never will be: that fails the transport too. Lock held,
 * outside callbacks, transport not failed. */
static void leave_check(glucx_ucx_tx_t *tx)
{
    glucx_tx_req_t *next;
    for (glucx_tx_req_t *req = tx->outstanding; req != NULL; req = next) {
        next = (glucx_tx_req_t *)req->impl_data[0];
        if (req->peer < 0 || req->peer >= tx->base.size || !tx->departed[req->peer])
            continue;
        const int kind = glucx_ucx_req_kind(req);
        if (kind == GLUCX_UCX_REQ_RECV && req->impl != NULL) {
            /* Completes with UCS_ERR_CANCELED (the failure) if unmatched; goes on if matched. */
            req->impl_data[3] = GLUCX_UCX_REQ_DEPARTED;
            ucp_request_cancel(tx->worker, req->impl);
        } else if (kind == GLUCX_UCX_REQ_SEND && (req->flags & GLUCX_TX_SEND_SYNC)) {
            glucx_ucx_record_failure(tx, GLUCX_ERR_ABORTED, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                     "rank %d destroyed its communicator before receiving what "
                                     "rank %d sends it (a synchronous send of %zu bytes, tag "
                                     "0x%llx)",
                                     req->peer, tx->base.rank, req->posted,
                                     (unsigned long long)(req->tag & ~GLUCX_TX_TAG_SRC_MASK));
            return; /* the teardown completes every request with the failure */
        }
    }
}

/* A request UCX may never complete after a force close: on an endpoint without error handling
 * (a local peer; a receive from several sources might be from one). */
static int orphan(glucx_ucx_tx_t *tx, const glucx_tx_req_t *req)
{
    if (req->peer >= 0 && req->peer < tx->base.size)
        return tx->local[req->peer];
    for (int r = 0; r < tx->base.size; r++)
        if (tx->local[r])
            return 1;
    return 0;
}

static int all_orphans(glucx_ucx_tx_t *tx)
{
    for (const glucx_tx_req_t *req = tx->outstanding; req != NULL;
         req = (const glucx_tx_req_t *)req->impl_data[0])
        if (!orphan(tx, req))
            return 0;
    return 1;
}

/* Lock held, not inside a UCX callback. */
static void teardown(glucx_ucx_tx_t *tx)
{
    int size = tx->base.size;
    glucx_status_t failed = glucx_tx_failure(&tx->base);
    tx->in_teardown = 1;

    if (tx->connected && tx->fail_notify)
        send_notices(tx);
    glucx_ucx_win_teardown(tx);

    /* The compact-address rendezvous is over: nobody fetches a failed rank's record. */
    if (tx->boot != NULL)
        glucx_ucx_boot_close(tx);

    void **closing = calloc((size_t)size, sizeof(void *));
    void **flushing = calloc((size_t)size, sizeof(void *));
    if (tx->connected && tx->fail_quiet)
        send_leaves(tx);
    if (tx->connected && tx->fail_quiet && flushing != NULL) {
        /* Healthy destroy: let sends already handed to UCX reach their peers first. */
        for (int p = 0; p < size; p++) {
            if (tx->eps[p] == NULL || tx->ep_failed[p])
                continue;
            ucp_request_param_t param = {.op_attr_mask = 0};
            void *r = ucp_ep_flush_nbx(tx->eps[p], &param);
            flushing[p] = UCS_PTR_IS_PTR(r) ? r : NULL;
        }
        glucx_ucx_finish_requests(tx, flushing, size, GLUCX_UCX_FLUSH_WAIT_NS);
    }

    /* Receives that have not matched leave now; subset receives never reached UCX. */
    glucx_tx_req_t *next;
    for (glucx_tx_req_t *req = tx->outstanding; req != NULL; req = next) {
        next = (glucx_tx_req_t *)req->impl_data[0];
        int kind = glucx_ucx_req_kind(req);
        if ((kind == GLUCX_UCX_REQ_RECV || kind == GLUCX_UCX_REQ_CANCELING ||
             kind == GLUCX_UCX_REQ_DEPARTED) &&
            req->impl != NULL) {
            ucp_request_cancel(tx->worker, req->impl);
        } else if (kind == GLUCX_UCX_REQ_PARKED) {
            glucx_ucx_complete(tx, req, failed, -1, 0, 0);
        } else if (kind == GLUCX_UCX_REQ_PROBE_WAIT) {
            glucx_ucx_probe_t *p = glucx_ucx_req_probe(req);
            if (p->prev != NULL)
                p->prev->next = p->next;
            else
                tx->probe_head = p->next;
            if (p->next != NULL)
                p->next->prev = p->prev;
            else
                tx->probe_tail = p->prev;
            free(p);
            glucx_ucx_complete(tx, req, failed, -1, 0, 0);
        }
    }
    if (tx->ctrl_req != NULL)
        ucp_request_cancel(tx->worker, tx->ctrl_req);

    /* A flush of an endpoint never completes while a synchronous send on it waits for an
     * acknowledgement (its peer failed, left or will not match it), nor, towards a same-host
     * peer that exited, while sends wait in the queue of a full shared-memory FIFO it will
     * never drain (the flush waits behind them). Such endpoints are force-closed even without
     * error handling, which completes the queued sends now (UCS_ERR_CANCELED, while their
     * glucx requests exist), instead of waiting the close time out and leaving them to
     * ucp_worker_destroy — unless a receive from that peer is still outstanding (after the
     * cancellations above, a matched one, possibly a cma get under way: see below). */
    unsigned char *force = calloc((size_t)size, 1);
    if (force != NULL) {
        for (int p = 0; p < size; p++)
            force[p] = tx->ep_failed[p] == 2;
        for (const glucx_tx_req_t *req = tx->outstanding; req != NULL;
             req = (const glucx_tx_req_t *)req->impl_data[0])
            if (!req->is_recv && (req->flags & GLUCX_TX_SEND_SYNC) && req->peer >= 0 &&
                req->peer < size)
                force[req->peer] = 1;
        for (const glucx_tx_req_t *req = tx->outstanding; req != NULL;
             req = (const glucx_tx_req_t *)req->impl_data[0])
            if (req->is_recv) {
                if (req->peer >= 0 && req->peer < size)
                    force[req->peer] = 0;
                else
                    memset(force, 0, (size_t)size); /* from any: could be any peer's data */
            }
    }

    /* Matched rendezvous receives and sends cannot be cancelled in UCX 1.13: force-closing the
     * endpoints completes them (UCS_ERR_CANCELED) once their callbacks run. */
    for (int p = 0; p < size; p++) {
        if (tx->eps == NULL || tx->eps[p] == NULL)
            continue;
        /* Endpoints without error handling are closed with a flush: force-closing one with a
         * cma get under way makes UCX 1.13 abort in ucp_worker_destroy (the get stays queued on
         * the destroyed cma endpoint). The flush lets the get finish (or fail, if the peer is
         * gone) while fail() runs. One UCX reported failed is force-closed (a flush on it
         * would only log an error), and so are those of force[] above. */
        ucp_request_param_t param = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
            .flags = tx->local[p] && tx->ep_failed[p] != 1 && (force == NULL || !force[p])
                         ? 0
                         : UCP_EP_CLOSE_FLAG_FORCE,
        };
        void *r = ucp_ep_close_nbx(tx->eps[p], &param);
        tx->eps[p] = NULL;
        if (closing != NULL)
            closing[p] = UCS_PTR_IS_PTR(r) ? r : NULL;
    }
    int64_t deadline = glucx_now_ns() + GLUCX_UCX_CLOSE_WAIT_NS;
    int left =
        closing != NULL ? glucx_ucx_finish_requests(tx, closing, size, GLUCX_UCX_CLOSE_WAIT_NS) : 0;
    /* UCX 1.13 does not track the requests of endpoints without error handling, so their force
     * close leaves a rendezvous send (waiting for the peer's acknowledgement) pending for good.
     * Give such requests a short while, then complete them below; UCX keeps its request, which
     * is detached from them (ucx_int.h, glucx_ucx_req_area_t): a torn-down transport no longer
     * progresses the worker, but ucp_worker_destroy may still complete it. */
    int64_t orphan_deadline = glucx_now_ns() + GLUCX_UCX_ORPHAN_WAIT_NS;
    while (tx->outstanding != NULL && glucx_now_ns() < deadline) {
        ucp_worker_progress(tx->worker);
        if (glucx_now_ns() >= orphan_deadline && all_orphans(tx))
            break;
    }
    if (left > 0)
        glucx_warn("ucx: rank %d: %d endpoint(s) did not close within %lld ms", tx->base.rank, left,
                   GLUCX_UCX_CLOSE_WAIT_NS / 1000000);
    free(closing);
    free(flushing);
    free(force);

    /* Nothing should be left; if UCX still holds a request, report it and complete it anyway so
     * no caller waits forever. */
    for (glucx_tx_req_t *req = tx->outstanding; req != NULL; req = next) {
        next = (glucx_tx_req_t *)req->impl_data[0];
        if (orphan(tx, req))
            glucx_debug("ucx: rank %d: %s to/from local rank %d (%zu bytes) left to UCX",
                        tx->base.rank, req->is_recv ? "receive" : "send", req->peer, req->posted);
        else
            glucx_warn("ucx: rank %d: %s to/from rank %d (%zu bytes) still pending after teardown",
                       tx->base.rank, req->is_recv ? "receive" : "send", req->peer, req->posted);
        glucx_ucx_detach(req);
        glucx_ucx_complete(tx, req, failed, -1, 0, 0);
    }

    tx->connected = 0;
    tx->in_teardown = 0;
    atomic_store_explicit(&tx->fail_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&tx->torn_down, 1, memory_order_release);
    glucx_ucx_wake_waiters(tx);
}

void glucx_ucx_teardown_if_pending(glucx_ucx_tx_t *tx)
{
    if (atomic_load_explicit(&tx->fail_pending, memory_order_acquire) && !tx->in_teardown &&
        !atomic_load_explicit(&tx->torn_down, memory_order_relaxed))
        teardown(tx);
}

int glucx_ucx_progress_locked(glucx_ucx_tx_t *tx)
{
    /* Nothing is left to progress after the teardown, and UCX may still hold requests whose
     * owners are gone (see teardown): their callbacks must not run. */
    if (atomic_load_explicit(&tx->torn_down, memory_order_acquire))
        return 0;
    if ((tx->npidfds > 0 || tx->nkill > 0) && glucx_now_ns() >= tx->next_check_ns)
        glucx_ucx_check_peers(tx);
    if (tx->suspect_at_ns != 0)
        commit_suspicion(tx);
    int n = 0;
    for (int i = 0; i < 16; i++) {
        unsigned c = ucp_worker_progress(tx->worker);
        n += (int)c;
        if (c == 0)
            break;
    }
    if (tx->probe_head != NULL)
        n += glucx_ucx_probe_all(tx);
    if (tx->win_pending && atomic_load_explicit(&tx->base.failed, memory_order_relaxed) == 0)
        glucx_ucx_win_progress(tx);
    if (tx->boot != NULL && tx->boot->work > 0)
        n += glucx_ucx_boot_progress(tx);
    if (tx->leave_arrived && atomic_load_explicit(&tx->base.failed, memory_order_relaxed) == 0) {
        tx->leave_arrived = 0;
        glucx_ucx_post_ctrl(tx); /* on error, notices go unheard; the timeout still holds */
        leave_check(tx);
        glucx_ucx_win_departed(tx);
    }
    glucx_ucx_teardown_if_pending(tx);
    return n;
}

int glucx_ucx_progress(glucx_tx_t *base)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    /* Non-blocking: whoever holds the lock is progressing already. */
    if (pthread_mutex_trylock(&tx->lock) != 0)
        return 0;
    int n = glucx_ucx_progress_locked(tx);
    pthread_mutex_unlock(&tx->lock);
    return n;
}

void glucx_ucx_fail(glucx_tx_t *base, glucx_status_t status, const char *text)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    glucx_ucx_record_failure(tx, status, GLUCX_UCX_FAIL_NOTIFY, -1, NULL, "%s",
                             text != NULL ? text : "failed");
    pthread_mutex_lock(&tx->lock);
    glucx_ucx_teardown_if_pending(tx);
    pthread_mutex_unlock(&tx->lock);
}

/* What a waiter waits for: all of reqs done, or (any) one of them done or a wake-up. */
typedef struct wait_for {
    glucx_tx_req_t *const *reqs;
    int n;
    int any;
    unsigned wake_gen;
    glucx_tx_win_t *win; /**< or a window: a placed message in it (drain: no fetch into it) */
    int drain;
} wait_for_t;

static int all_done(glucx_tx_req_t *const *reqs, int n)
{
    for (int i = 0; i < n; i++)
        if (!glucx_tx_req_done(reqs[i]))
            return 0;
    return 1;
}

static int satisfied(glucx_ucx_tx_t *tx, const wait_for_t *w)
{
    if (w->win != NULL) {
        if (glucx_tx_failure(&tx->base) != GLUCX_OK)
            return 1;
        if (w->drain)
            return atomic_load_explicit(&w->win->fetching, memory_order_acquire) == 0;
        if (atomic_load_explicit(&w->win->ready, memory_order_acquire) > 0)
            return 1;
        return atomic_load_explicit(&tx->base.wake_gen, memory_order_acquire) != w->wake_gen;
    }
    if (!w->any)
        return all_done(w->reqs, w->n);
    for (int i = 0; i < w->n; i++)
        if (glucx_tx_req_done(w->reqs[i]))
            return 1;
    return atomic_load_explicit(&tx->base.wake_gen, memory_order_acquire) != w->wake_gen;
}

static void to_timespec(int64_t t_ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(t_ns / 1000000000);
    ts->tv_nsec = (long)(t_ns % 1000000000);
}

/* Sleep until an event, a completion, the deadline or the next keepalive round. */
static void block_once(glucx_ucx_tx_t *tx, const wait_for_t *w, int64_t deadline)
{
    pthread_mutex_lock(&tx->lock);
    glucx_ucx_progress_locked(tx);
    int64_t now = glucx_now_ns();
    int64_t wake = deadline;
    if (wake - now > tx->tick_ns)
        wake = now + tx->tick_ns;
    int64_t due = commit_suspicion(tx);
    if (due < wake)
        wake = due;
    if (satisfied(tx, w) || wake <= now)
        goto out;
    if (!tx->efd_owner) {
        ucs_status_t st = ucp_worker_arm(tx->worker);
        if (st == UCS_ERR_BUSY)
            goto out; /* events arrived meanwhile: progress them first */
        if (st != UCS_OK) {
            /* No usable descriptor: nap briefly on the condition variable instead. */
            if (wake - now > 1000000)
                wake = now + 1000000;
            goto cond_wait;
        }
        tx->efd_owner = 1;
        tx->efd_sleeping = 1;
        /* The worker's descriptor and, while healthy, the pidfds of local peers (readable
         * once the peer exited). Only the efd owner touches pfds outside the lock. */
        nfds_t nfds = 1;
        if (tx->connected && atomic_load_explicit(&tx->base.failed, memory_order_relaxed) == 0)
            nfds += (nfds_t)tx->npidfds;
        pthread_mutex_unlock(&tx->lock);
        struct timespec rel;
        to_timespec(wake - now, &rel);
        int rc = ppoll(tx->pfds, nfds, &rel, NULL);
        pthread_mutex_lock(&tx->lock);
        tx->efd_sleeping = 0;
        tx->efd_owner = 0;
        if (rc == 0 && !atomic_load_explicit(&tx->torn_down, memory_order_relaxed)) {
            for (int i = 0; i < KEEPALIVE_PROGRESS_CALLS; i++)
                ucp_worker_progress(tx->worker);
        }
        if (tx->npidfds > 0 || tx->nkill > 0)
            glucx_ucx_check_peers(tx);
        glucx_ucx_progress_locked(tx);
        if (tx->cond_waiters > 0)
            pthread_cond_broadcast(&tx->cond);
        goto out;
    }
cond_wait:
    tx->cond_waiters++;
    struct timespec abs;
    to_timespec(wake, &abs);
    pthread_cond_timedwait(&tx->cond, &tx->lock, &abs);
    tx->cond_waiters--;
out:
    pthread_mutex_unlock(&tx->lock);
}

glucx_ucx_yield_t glucx_ucx_yield_resolve(glucx_ucx_yield_t mode, int host_ranks, int cpus)
{
    switch (mode) {
    case GLUCX_UCX_YIELD_ALWAYS:
    case GLUCX_UCX_YIELD_NEVER:
    case GLUCX_UCX_YIELD_CHEAP:
        return mode;
    case GLUCX_UCX_YIELD_AUTO:
    default:
        /* More ranks than CPUs: a peer this wait depends on may be queued on this core. */
        return cpus > 0 && host_ranks > cpus ? GLUCX_UCX_YIELD_ALWAYS : GLUCX_UCX_YIELD_CHEAP;
    }
}

int glucx_ucx_yield_allowed(glucx_ucx_yield_t policy, const glucx_ucx_yield_state_t *state,
                            int64_t now_ns)
{
    switch (policy) {
    case GLUCX_UCX_YIELD_ALWAYS:
        return 1;
    case GLUCX_UCX_YIELD_CHEAP:
        return now_ns >= state->off_until_ns;
    default:
        return 0;
    }
}

int glucx_ucx_yield_observe(glucx_ucx_yield_t policy, glucx_ucx_yield_state_t *state,
                            int64_t before_ns, int64_t after_ns)
{
    if (policy != GLUCX_UCX_YIELD_CHEAP || after_ns - before_ns <= GLUCX_UCX_YIELD_SLOW_NS)
        return 0;
    state->off_until_ns = after_ns + GLUCX_UCX_YIELD_OFF_NS;
    return 1;
}

int64_t glucx_ucx_spin_budget(const glucx_ucx_yield_state_t *state, int64_t spin_max_ns,
                              int64_t now_ns, int *probe_p)
{
    const int probe = now_ns >= state->probe_at_ns;
    if (probe_p != NULL)
        *probe_p = probe;
    if (probe || state->spin_ns <= 0 || state->spin_ns > spin_max_ns)
        return spin_max_ns;
    return state->spin_ns;
}

void glucx_ucx_spin_learn(glucx_ucx_yield_state_t *state, int64_t spin_max_ns, int64_t now_ns,
                          int64_t caught_ns, int probe)
{
    int64_t cur =
        state->spin_ns <= 0 || state->spin_ns > spin_max_ns ? spin_max_ns : state->spin_ns;
    if (caught_ns < 0) {
        cur /= 2;
    } else if (2 * caught_ns > cur) {
        cur = 2 * caught_ns;
    }
    if (cur > spin_max_ns)
        cur = spin_max_ns;
    if (cur < GLUCX_UCX_SPIN_MIN_NS)
        cur = spin_max_ns < GLUCX_UCX_SPIN_MIN_NS ? spin_max_ns : GLUCX_UCX_SPIN_MIN_NS;
    state->spin_ns = cur;
    if (probe)
        state->probe_at_ns = now_ns + GLUCX_UCX_SPIN_PROBE_NS;
}

/* What this thread learned about its yields (the cost of a yield is a property of the core the
 * thread runs on, not of a transport). */
static _Thread_local glucx_ucx_yield_state_t yield_state;

static glucx_status_t wait_common(glucx_tx_t *base, const wait_for_t *w, int64_t deadline_ns)
{
    glucx_tx_req_t *const *reqs = w->reqs;
    int n = w->n;
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (n < 0 || (n > 0 && reqs == NULL))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "wait: n=%d, reqs=%p: invalid", n,
                           (const void *)reqs);
    for (int i = 0; i < n; i++)
        if (reqs[i] == NULL)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "wait: reqs[%d] of %d is NULL", i, n);
    const int64_t start = glucx_now_ns();
    int64_t spin_end = start + tx->spin_ns;
    const int64_t hot_end = start + GLUCX_UCX_SPIN_HOT_NS;
    /* Before connect (the policy is still AUTO) the host's ranks are unknown: yield while cheap. */
    const glucx_ucx_yield_t policy =
        tx->yield == GLUCX_UCX_YIELD_AUTO ? GLUCX_UCX_YIELD_CHEAP : tx->yield;
    int may_yield = glucx_ucx_yield_allowed(policy, &yield_state, start);
    /* Yields are off because a CPU-bound thread competes for the core: the spin adapts. */
    const int adaptive = policy == GLUCX_UCX_YIELD_CHEAP && !may_yield;
    int probe = 0, slept = 0;
    if (adaptive)
        spin_end = start + glucx_ucx_spin_budget(&yield_state, tx->spin_ns, start, &probe);
    for (;;) {
        if (satisfied(tx, w)) {
            if (adaptive) {
                int64_t end = glucx_now_ns();
                glucx_ucx_spin_learn(&yield_state, tx->spin_ns, end, slept ? -1 : end - start,
                                     probe);
            }
            break;
        }
        int64_t now = glucx_now_ns();
        if (now >= deadline_ns) {
            if (glucx_ucx_progress(base) > 0 && satisfied(tx, w))
                break;
            if (w->win != NULL)
                return GLUCX_ERR_TIMEOUT; /* the caller names the window */
            int pending = 0, first = -1;
            for (int i = 0; i < n; i++) {
                if (!glucx_tx_req_done(reqs[i])) {
                    pending++;
                    if (first < 0)
                        first = i;
                }
            }
            if (pending == 0)
                break; /* completed by another thread's progress meanwhile */
            const glucx_tx_req_t *r = reqs[first];
            return glucx_error(GLUCX_ERR_TIMEOUT,
                               "wait: rank %d: Timed out with %d of %d requests pending (first: "
                               "%s %s rank %d, bytes=%zu, tag=0x%llx)",
                               base->rank, pending, n, r->is_recv ? "receive" : "send",
                               r->is_recv ? "from" : "to", r->peer, r->posted,
                               (unsigned long long)r->tag);
        }
        if (now < spin_end) {
            pthread_mutex_lock(&tx->lock);
            int events = glucx_ucx_progress_locked(tx);
            pthread_mutex_unlock(&tx->lock);
            /* Nothing arrived: let another runnable thread on this core go first (the peer
             * this wait depends on may be queued behind us when ranks outnumber cores), unless
             * the policy says yielding costs more than it gives (glucx_ucx_yield_t). */
            if (events == 0 && now >= hot_end && may_yield) {
                sched_yield();
                if (glucx_ucx_yield_observe(policy, &yield_state, now, glucx_now_ns()))
                    may_yield = 0;
            }
            continue;
        }
        slept = 1;
        block_once(tx, w, deadline_ns);
    }
    glucx_status_t failed = glucx_tx_failure(base);
    if (w->win != NULL) {
        if (failed != GLUCX_OK)
            return failed;
        if (w->drain)
            return atomic_load_explicit(&w->win->fetching, memory_order_acquire) == 0
                       ? GLUCX_OK
                       : GLUCX_INPROGRESS;
        /* OK: look again (a placed message, which another waiter may take first: the caller
         * waits on then); INPROGRESS: woken by glucx_comm_wake and nothing is placed. The wake
         * count decides, not an empty window: the message that satisfied this wait may have
         * been taken by another waiter between here and there, which is no wake-up (seen in
         * CI: a shared window's wait returned INPROGRESS with nobody calling wake). */
        if (atomic_load_explicit(&w->win->ready, memory_order_acquire) > 0)
            return GLUCX_OK;
        return atomic_load_explicit(&tx->base.wake_gen, memory_order_acquire) != w->wake_gen
                   ? GLUCX_INPROGRESS
                   : GLUCX_OK;
    }
    if (w->any) {
        for (int i = 0; i < n; i++)
            if (glucx_tx_req_done(reqs[i]))
                return GLUCX_OK;
        return GLUCX_INPROGRESS; /* woken */
    }
    if (failed != GLUCX_OK) {
        for (int i = 0; i < n; i++)
            if (reqs[i]->status != GLUCX_OK)
                return glucx_error(failed, "wait: rank %d: transport failed: %s", base->rank,
                                   base->failure);
    }
    return GLUCX_OK;
}

glucx_status_t glucx_ucx_wait_win(glucx_ucx_tx_t *tx, glucx_tx_win_t *win, int drain,
                                  int64_t deadline_ns, unsigned wake_gen)
{
    wait_for_t w = {.any = 1, .wake_gen = wake_gen, .win = win, .drain = drain};
    return wait_common(&tx->base, &w, deadline_ns);
}

void glucx_ucx_wake_waiters(glucx_ucx_tx_t *tx)
{
    if (tx->cond_waiters > 0)
        pthread_cond_broadcast(&tx->cond);
    if (tx->efd_sleeping)
        ucp_worker_signal(tx->worker);
}

glucx_status_t glucx_ucx_wait(glucx_tx_t *base, glucx_tx_req_t *const *reqs, int n,
                              int64_t deadline_ns)
{
    wait_for_t w = {.reqs = reqs, .n = n, .any = 0, .wake_gen = 0};
    return wait_common(base, &w, deadline_ns);
}

glucx_status_t glucx_ucx_wait_any(glucx_tx_t *base, glucx_tx_req_t *const *reqs, int n,
                                  int64_t deadline_ns, unsigned wake_gen)
{
    if (n < 1)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "wait_any: %d requests", n);
    wait_for_t w = {.reqs = reqs, .n = n, .any = 1, .wake_gen = wake_gen};
    return wait_common(base, &w, deadline_ns);
}

void glucx_ucx_wake(glucx_tx_t *base)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    atomic_fetch_add_explicit(&base->wake_gen, 1, memory_order_acq_rel);
    pthread_mutex_lock(&tx->lock);
    glucx_ucx_wake_waiters(tx);
    pthread_mutex_unlock(&tx->lock);
}
