/* UCX transport: posting, completing and cancelling requests (see ucx_int.h for the locking). */
#include "transport/ucx_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#define SRC_OF(tag) ((int)(((tag)&GLUCX_TX_TAG_SRC_MASK) >> GLUCX_TX_TAG_SRC_SHIFT))
#define SRC_BITS(rank) ((uint64_t)(rank) << GLUCX_TX_TAG_SRC_SHIFT)

glucx_status_t glucx_ucx_status(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return GLUCX_OK;
    case UCS_INPROGRESS:
        return GLUCX_INPROGRESS;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return GLUCX_ERR_TRUNCATED;
    case UCS_ERR_CANCELED:
        return GLUCX_ERR_ABORTED;
    case UCS_ERR_NO_MEMORY:
        return GLUCX_ERR_NO_MEMORY;
    case UCS_ERR_INVALID_PARAM:
        return GLUCX_ERR_INVALID_ARG;
    case UCS_ERR_UNSUPPORTED:
        return GLUCX_ERR_UNSUPPORTED;
    case UCS_ERR_TIMED_OUT:
        return GLUCX_ERR_TIMEOUT;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_SHMEM_SEGMENT:
        return GLUCX_ERR_PEER_FAILED;
    default:
        return GLUCX_ERR_TRANSPORT;
    }
}

/* ---- outstanding-request list (lock held) ---- */

static inline glucx_tx_req_t *req_next(const glucx_tx_req_t *r)
{
    return (glucx_tx_req_t *)r->impl_data[0];
}

static inline glucx_tx_req_t *req_prev(const glucx_tx_req_t *r)
{
    return (glucx_tx_req_t *)r->impl_data[1];
}

void glucx_ucx_list_add(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, int kind)
{
    req->impl = NULL;
    req->impl_data[0] = (uintptr_t)tx->outstanding;
    req->impl_data[1] = 0;
    req->impl_data[2] = (uintptr_t)tx;
    req->impl_data[3] = (uintptr_t)kind;
    if (tx->outstanding != NULL)
        tx->outstanding->impl_data[1] = (uintptr_t)req;
    tx->outstanding = req;
}

static void list_del(glucx_ucx_tx_t *tx, glucx_tx_req_t *req)
{
    glucx_tx_req_t *next = req_next(req), *prev = req_prev(req);
    if (prev != NULL)
        prev->impl_data[0] = (uintptr_t)next;
    else if (tx->outstanding == req)
        tx->outstanding = next;
    if (next != NULL)
        next->impl_data[1] = (uintptr_t)prev;
    req->impl_data[0] = req->impl_data[1] = 0;
}

static void probe_unlink(glucx_ucx_tx_t *tx, glucx_ucx_probe_t *p)
{
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        tx->probe_head = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    else
        tx->probe_tail = p->prev;
    p->next = p->prev = NULL;
}

/* ---- segments of exact-length messages (see glucx_ucx_segs_t) ---- */

static void segs_finish(glucx_ucx_tx_t *tx, glucx_ucx_segs_t *g)
{
    glucx_tx_req_t *parent = g->parent;
    if (parent == NULL)
        return;
    g->parent = NULL;
    const size_t bytes = g->status == GLUCX_OK || g->status == GLUCX_ERR_TRUNCATED ? g->bytes : 0;
    glucx_ucx_complete(tx, parent, g->status, g->peer, bytes, g->tag);
}

/* Drop one count of @p g (a child done, or the guard held while posting or cancelling): the
 * last one completes the parent if it has not completed yet and frees the block. Lock held. */
static void segs_put(glucx_ucx_tx_t *tx, glucx_ucx_segs_t *g)
{
    if (--g->left == 0) {
        segs_finish(tx, g);
        free(g);
    }
}

/* Child @p c completed (lock held; may run inside a UCX callback). A receive's segment shorter
 * than posted (the sender's last one) or longer (truncated) ends the message: the parent
 * completes with what arrived so far, as an unsegmented receive of a different length would;
 * the children still posted complete at the transport's failure or teardown. Otherwise the
 * parent completes when its last child does, with the first failure. */
static void segment_done(glucx_ucx_tx_t *tx, glucx_tx_req_t *c)
{
    glucx_ucx_segs_t *g = (glucx_ucx_segs_t *)c->impl_data[4];
    if (c->impl_data[5] != 0)
        return; /* counted already */
    c->impl_data[5] = 1;
    const int first = c == &g->child[0];
    if (!g->ended) {
        if (c->status == GLUCX_OK || c->status == GLUCX_ERR_TRUNCATED) {
            g->bytes += c->bytes;
            if (c->is_recv && first) {
                g->tag = c->tag;
                g->peer = c->peer;
            }
            if (c->is_recv && c->bytes != c->posted) {
                g->ended = 1;
                if (c->status == GLUCX_ERR_TRUNCATED)
                    g->status = GLUCX_ERR_TRUNCATED;
                segs_finish(tx, g);
            }
        } else if (g->status == GLUCX_OK) {
            g->status = c->status;
        }
    }
    segs_put(tx, g);
}

void glucx_ucx_complete(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, glucx_status_t status, int peer,
                        size_t bytes, uint64_t tag)
{
    if (atomic_load_explicit(&req->done, memory_order_relaxed))
        return;
    list_del(tx, req);
    req->impl = NULL;
    /* Once the transport failed, every request that did not succeed reports the failure. */
    glucx_status_t failed = glucx_tx_failure(&tx->base);
    if (status != GLUCX_OK && status != GLUCX_ERR_TRUNCATED && failed != GLUCX_OK)
        status = failed;
    /* fail() completes what is outstanding with the failure, even a transfer that the close of
     * an endpoint without error handling let finish (see teardown). */
    if (tx->in_teardown && !tx->fail_quiet && failed != GLUCX_OK)
        status = failed;
    req->status = status;
    if (peer >= 0)
        req->peer = peer;
    req->bytes = bytes;
    if (req->is_recv && tag != 0)
        req->tag = tag;
    atomic_store_explicit(&req->done, 1, memory_order_release);
    if (req->flags & GLUCX_UCX_FLAG_SEGMENT)
        segment_done(tx, req);
    glucx_ucx_wake_waiters(tx);
}

void glucx_ucx_req_init(void *ucx_request)
{
    glucx_ucx_req_area(ucx_request)->detached = 0;
}

void glucx_ucx_detach(glucx_tx_req_t *req)
{
    if (req->impl == NULL)
        return;
    glucx_ucx_req_area(req->impl)->detached = 1;
    req->impl = NULL;
}

/* A UCX request whose glucx request was completed without it (glucx_ucx_detach): only free it
 * (its user data may point to freed memory). @return 1 if it was detached. */
static int free_if_detached(void *request)
{
    glucx_ucx_req_area_t *area = glucx_ucx_req_area(request);
    if (!area->detached)
        return 0;
    area->detached = 0;
    ucp_request_free(request);
    return 1;
}

/* ---- UCX callbacks (lock held: they run inside UCP calls) ---- */

/*
 * A request that UCX ends with an error other than a cancellation the caller asked for or a
 * truncation means the transport is broken towards a peer: the whole transport fails (Gloo
 * semantics). The request is parked, not completed: it completes with the transport's failure
 * status once the failure is decided (a notice explaining it may still arrive; see
 * glucx_ucx_suspect). Lock held (callbacks run inside UCP calls). @return 1 if parked.
 */
static int park_on_error(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, ucs_status_t status)
{
    if (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED ||
        (status == UCS_ERR_CANCELED && glucx_ucx_req_kind(req) == GLUCX_UCX_REQ_CANCELING) ||
        glucx_tx_failure(&tx->base) != GLUCX_OK)
        return 0;
    glucx_status_t st = glucx_ucx_status(status);
    if (st == GLUCX_ERR_ABORTED)
        st = GLUCX_ERR_PEER_FAILED; /* UCX cancelled it on its own: the endpoint went away */
    if (req->peer >= 0)
        glucx_ucx_suspect(tx, -1, st, "rank %d failed: %s (%s of %zu bytes)", req->peer,
                          ucs_status_string(status), req->is_recv ? "receive" : "send",
                          req->posted);
    else
        glucx_ucx_suspect(tx, -1, st, "receive of %zu bytes failed: %s", req->posted,
                          ucs_status_string(status));
    req->impl = NULL;
    req->impl_data[3] = GLUCX_UCX_REQ_PARKED;
    return 1;
}

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    if (free_if_detached(request))
        return;
    glucx_tx_req_t *req = user_data;
    glucx_ucx_tx_t *tx = (glucx_ucx_tx_t *)req->impl_data[2];
    if (!park_on_error(tx, req, status))
        glucx_ucx_complete(tx, req, glucx_ucx_status(status), -1,
                           status == UCS_OK ? req->posted : 0, 0);
    ucp_request_free(request);
}

static void recv_done(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, ucs_status_t status,
                      const ucp_tag_recv_info_t *info)
{
    if (status == UCS_ERR_CANCELED && glucx_ucx_req_kind(req) == GLUCX_UCX_REQ_DEPARTED) {
        /* Unmatched after its source left: nothing will ever match it (ucx_wait.c). */
        glucx_ucx_record_failure(tx, GLUCX_ERR_ABORTED, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d destroyed its communicator before sending what rank %d "
                                 "waits for (a receive of %zu bytes)",
                                 req->peer, tx->base.rank, req->posted);
        glucx_ucx_complete(tx, req, GLUCX_ERR_ABORTED, -1, 0, 0);
        return;
    }
    if (park_on_error(tx, req, status))
        return;
    if ((status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED) && info != NULL) {
        /* On truncation UCX reports the sender's length; nothing past posted was written. */
        glucx_ucx_complete(tx, req, glucx_ucx_status(status), SRC_OF(info->sender_tag),
                           info->length, info->sender_tag);
    } else {
        glucx_ucx_complete(tx, req, glucx_ucx_status(status), -1, 0, 0);
    }
}

static void recv_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    if (free_if_detached(request))
        return;
    glucx_tx_req_t *req = user_data;
    recv_done((glucx_ucx_tx_t *)req->impl_data[2], req, status, info);
    ucp_request_free(request);
}

static void ctrl_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    glucx_ucx_tx_t *tx = user_data;
    /* info lives in the request: read it before the request goes back to UCX's pool */
    const uint64_t sender_tag = info != NULL ? info->sender_tag : 0;
    const size_t length = info != NULL ? info->length : 0;
    tx->ctrl_req = NULL;
    ucp_request_free(request);
    if (status != UCS_OK && status != UCS_ERR_MESSAGE_TRUNCATED)
        return; /* cancelled at teardown */
    glucx_ucx_notice_t *n = &tx->ctrl_buf;
    if ((sender_tag & GLUCX_UCX_CTRL_KIND_MASK) == GLUCX_UCX_CTRL_LEAVE && n->status == GLUCX_OK &&
        n->rank == SRC_OF(sender_tag) && n->rank < tx->base.size) {
        /* An orderly leave: a suspicion about that peer's endpoint or exit is withdrawn; its
         * receives are checked, and the control receive posted again, outside this callback. */
        const int src = n->rank;
        tx->departed[src] = 1;
        glucx_ucx_unsuspect(tx, src);
        glucx_debug("ucx: rank %d: rank %d left", tx->base.rank, src);
        tx->leave_arrived = 1;
        return;
    }
    int src = SRC_OF(sender_tag);
    n->text[sizeof(n->text) - 1] = '\0';
    glucx_status_t st = (glucx_status_t)n->status;
    if (length < offsetof(glucx_ucx_notice_t, text) || st >= GLUCX_OK ||
        strcmp(glucx_status_string(st), "unknown status") == 0)
        st = GLUCX_ERR_PEER_FAILED; /* a notice we cannot read still means the peer failed */
    const char *text = length > offsetof(glucx_ucx_notice_t, text) ? n->text : "(no text)";
    int origin = src;
    if (length >= offsetof(glucx_ucx_notice_t, text) && n->rank >= 0 && n->rank < tx->base.size)
        origin = n->rank;
    /* Forwarded at teardown (see send_notices), in the origin's words. */
    glucx_ucx_record_failure(tx, st, GLUCX_UCX_FAIL_NOTIFY, origin, text, "rank %d reported: %s",
                             origin, text);
}

glucx_status_t glucx_ucx_post_ctrl(glucx_ucx_tx_t *tx)
{
    ucp_request_param_t param = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv = ctrl_cb,
        .user_data = tx,
    };
    static char posting; /* marks "callback not run yet" */
    tx->ctrl_req = &posting;
    /* No stale payload can pass for a leave (status 0) or a notice. */
    tx->ctrl_buf.status = INT32_MIN;
    tx->ctrl_buf.rank = -1;
    /* Notices and leaves (kinds 0 and 2), not the handshake (1). */
    void *r = ucp_tag_recv_nbx(
        tx->worker, &tx->ctrl_buf, sizeof(tx->ctrl_buf), GLUCX_TX_TAG_CTRL | GLUCX_UCX_CTRL_NOTICE,
        GLUCX_TX_TAG_CTRL | (GLUCX_UCX_CTRL_KIND_MASK & ~GLUCX_UCX_CTRL_LEAVE), &param);
    if (UCS_PTR_IS_ERR(r)) {
        tx->ctrl_req = NULL;
        return glucx_error(glucx_ucx_status(UCS_PTR_STATUS(r)),
                           "ucx: cannot post the failure-notice receive: %s",
                           ucs_status_string(UCS_PTR_STATUS(r)));
    }
    if (tx->ctrl_req == &posting)
        tx->ctrl_req = r; /* otherwise the callback already ran (and freed r) */
    return GLUCX_OK;
}

/* ---- posting ---- */

static glucx_status_t post_failed(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, const char *op, int peer)
{
    glucx_status_t st = glucx_tx_failure(&tx->base);
    req->status = st;
    atomic_store_explicit(&req->done, 1, memory_order_release);
    return glucx_error(st, "%s: peer %d, bytes=%zu: transport failed: %s", op, peer, req->posted,
                       tx->base.failure);
}

static void req_start(glucx_tx_req_t *req, int is_recv, int peer, size_t bytes, uint64_t tag)
{
    req->is_recv = is_recv;
    req->flags = 0;
    req->peer = peer;
    req->posted = bytes;
    req->bytes = 0;
    req->tag = tag;
    req->status = GLUCX_INPROGRESS;
    req->impl = NULL;
    atomic_store_explicit(&req->done, 0, memory_order_relaxed);
}

/* Account for what a send post returned (r) for req: complete it, keep UCX's request, or, when
 * UCX refused, park it (a broken endpoint, e.g. the peer's shared memory is gone: it waits for
 * the transport's failure like the others) or complete it with the error. @return UCS_OK, or
 * the refusal that completed req. Lock held. */
static ucs_status_t send_posted(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, void *r)
{
    if (r == NULL) {
        glucx_ucx_complete(tx, req, GLUCX_OK, -1, req->posted, 0);
    } else if (UCS_PTR_IS_ERR(r)) {
        ucs_status_t us = UCS_PTR_STATUS(r);
        if (!park_on_error(tx, req, us)) {
            glucx_ucx_complete(tx, req, glucx_ucx_status(us), -1, 0, 0);
            return us;
        }
    } else if (!glucx_tx_req_done(req)) {
        req->impl = r;
    }
    return UCS_OK;
}

/* Lock held. sync: ucp_tag_send_sync_nbx, which completes once the receiver matched. */
static glucx_status_t send_locked(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, const void *buf,
                                  size_t bytes, int sync, glucx_tx_req_t *req)
{
    if (glucx_tx_failure(&tx->base) != GLUCX_OK)
        return post_failed(tx, req, "isend", peer);
    if (tx->connected && tx->departed[peer]) {
        /* It receives nothing more: a send to it would be lost without a word. */
        glucx_ucx_record_failure(tx, GLUCX_ERR_ABORTED, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d destroyed its communicator: rank %d cannot send it %zu "
                                 "bytes (tag 0x%llx)",
                                 peer, tx->base.rank, bytes,
                                 (unsigned long long)(wire_tag & ~GLUCX_TX_TAG_SRC_MASK));
        return post_failed(tx, req, "isend", peer);
    }
    if (!tx->connected || tx->eps[peer] == NULL) {
        req->status = GLUCX_ERR_INVALID_ARG;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        return glucx_error(GLUCX_ERR_INVALID_ARG, "isend: peer %d, bytes=%zu: not connected", peer,
                           bytes);
    }
    glucx_ucx_list_add(tx, req, GLUCX_UCX_REQ_SEND);
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = send_cb,
        .user_data = req,
    };
    if (sync)
        req->flags |= GLUCX_TX_SEND_SYNC;
    /* Local peer: fast completion, i.e. eager (through the shared-memory FIFO, no handshake) up
     * to UCX_RNDV_SEND_NBR_THRESH (256 KiB by default) instead of rendezvous from the mm segment
     * size (8 KiB) on (ucx.h, "Eager sizes"). */
    if (!sync && tx->local[peer])
        param.op_attr_mask |= UCP_OP_ATTR_FLAG_FAST_CMPL;
    ucs_status_t us =
        send_posted(tx, req,
                    sync ? ucp_tag_send_sync_nbx(tx->eps[peer], buf, bytes, wire_tag, &param)
                         : ucp_tag_send_nbx(tx->eps[peer], buf, bytes, wire_tag, &param));
    if (us != UCS_OK)
        return glucx_error(req->status, "isend: peer %d, bytes=%zu, tag=0x%llx: %s", peer, bytes,
                           (unsigned long long)wire_tag, ucs_status_string(us));
    return GLUCX_OK;
}

/* The segment size for a message of @p bytes with @p wire_tag to or from @p peer, or 0 when it
 * travels whole. Lock held. */
static size_t seg_size(const glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, size_t bytes)
{
    if (!(wire_tag & GLUCX_TX_TAG_EXACT) || !tx->connected || peer < 0 || peer >= tx->base.size)
        return 0;
    const size_t seg = tx->seg[peer];
    if (seg == 0 || bytes < seg)
        return 0;
    /* At most GLUCX_UCX_SEG_COUNT_MAX segments (their requests, and the receives UCX searches
     * when it cancels them at a failure): a longer message gets longer segments. */
    const size_t least = bytes / (GLUCX_UCX_SEG_COUNT_MAX - 1) + 1;
    return seg > least ? seg : least;
}

/* The block of a segmented request @p req of @p bytes in segments of @p seg: bytes / seg + 1
 * children (the last shorter than seg, possibly empty, so that a receive knows where the
 * sender's message ended). NULL (req completed with the error) when out of memory. */
static glucx_ucx_segs_t *segs_new(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, size_t bytes, size_t seg)
{
    const int n = (int)(bytes / seg) + 1;
    glucx_ucx_segs_t *g = calloc(1, sizeof(*g) + (size_t)n * sizeof(glucx_tx_req_t));
    if (g == NULL) {
        req->status = GLUCX_ERR_NO_MEMORY;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        glucx_error(GLUCX_ERR_NO_MEMORY, "%s: peer %d, bytes=%zu: out of memory for %d segments",
                    req->is_recv ? "irecv" : "isend", req->peer, bytes, n);
        return NULL;
    }
    g->parent = req;
    g->n = n;
    g->left = n + 1;
    g->status = GLUCX_OK;
    g->peer = req->peer;
    req->flags |= GLUCX_UCX_FLAG_SEGMENTED;
    req->impl = NULL;
    req->impl_data[0] = req->impl_data[1] = 0; /* in no list: glucx_ucx_complete unlinks nothing */
    req->impl_data[2] = (uintptr_t)tx;
    req->impl_data[4] = (uintptr_t)g;
    return g;
}

/* Bytes of child @p i of @p g for a message of @p bytes. */
static size_t seg_bytes(const glucx_ucx_segs_t *g, int i, size_t bytes, size_t seg)
{
    return i < g->n - 1 ? seg : bytes - (size_t)(g->n - 1) * seg;
}

/* Child @p c was not posted, or its post failed (some failure paths only mark a request done):
 * count it (once) with @p status. Lock held. */
static void segs_skip(glucx_ucx_tx_t *tx, glucx_tx_req_t *c, glucx_status_t status)
{
    if (!glucx_tx_req_done(c)) {
        c->status = status;
        atomic_store_explicit(&c->done, 1, memory_order_release);
    }
    segment_done(tx, c);
}

/* After posting every child: drop the posting guard. A failed post (@p st) completes the parent
 * at once with the failure, so that it is done when the caller sees the error (the children
 * already posted finish at the transport's failure and free the block). @return st. Lock held. */
static glucx_status_t segs_posted(glucx_ucx_tx_t *tx, glucx_ucx_segs_t *g, glucx_status_t st)
{
    if (st != GLUCX_OK) {
        if (g->status == GLUCX_OK)
            g->status = st;
        segs_finish(tx, g);
    }
    segs_put(tx, g);
    return st;
}

/* Child @p i of @p g, started as a send (tag @p tag) or receive of its share of @p bytes. */
static glucx_tx_req_t *segs_child(glucx_ucx_segs_t *g, int i, int is_recv, int peer, size_t bytes,
                                  size_t seg, uint64_t tag)
{
    glucx_tx_req_t *c = &g->child[i];
    req_start(c, is_recv, peer, seg_bytes(g, i, bytes, seg), tag);
    c->flags = GLUCX_UCX_FLAG_SEGMENT;
    c->impl_data[4] = (uintptr_t)g;
    return c;
}

/* Lock held. */
static glucx_status_t send_segments(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag,
                                    const void *buf, size_t bytes, size_t seg, int sync,
                                    glucx_tx_req_t *req)
{
    glucx_ucx_segs_t *g = segs_new(tx, req, bytes, seg);
    if (g == NULL)
        return GLUCX_ERR_NO_MEMORY;
    glucx_status_t st = GLUCX_OK;
    for (int i = 0; i < g->n; i++) {
        glucx_tx_req_t *c = segs_child(g, i, 0, peer, bytes, seg, wire_tag);
        if (st != GLUCX_OK) {
            segs_skip(tx, c, st);
            continue;
        }
        st = send_locked(tx, peer, wire_tag, (const char *)buf + (size_t)i * seg, c->posted, sync,
                         c);
        if (st != GLUCX_OK) {
            segs_skip(tx, c, st);
            st = glucx_error(st, "isend: peer %d, bytes=%zu (segment %d of %d): %s", peer, bytes,
                             i + 1, g->n, glucx_error_text());
        }
    }
    return segs_posted(tx, g, st);
}

static glucx_status_t send_post(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, const void *buf,
                                size_t bytes, int sync, glucx_tx_req_t *req)
{
    req_start(req, 0, peer, bytes, wire_tag);
    pthread_mutex_lock(&tx->lock);
    const size_t seg =
        glucx_tx_failure(&tx->base) == GLUCX_OK ? seg_size(tx, peer, wire_tag, bytes) : 0;
    glucx_status_t st = seg > 0 ? send_segments(tx, peer, wire_tag, buf, bytes, seg, sync, req)
                                : send_locked(tx, peer, wire_tag, buf, bytes, sync, req);
    pthread_mutex_unlock(&tx->lock);
    return st;
}

glucx_status_t glucx_ucx_send_raw(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, const void *buf,
                                  size_t bytes, glucx_tx_req_t *req)
{
    return send_post(tx, peer, wire_tag, buf, bytes, 0, req);
}

static glucx_status_t isend_common(glucx_tx_t *base, int peer, uint64_t tag, const void *buf,
                                   size_t bytes, int sync, glucx_tx_req_t *req)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "isend: peer %d, bytes=%zu: NULL request", peer,
                           bytes);
    if (peer < 0 || peer >= base->size || (bytes > 0 && buf == NULL) || (tag & GLUCX_TX_TAG_CTRL)) {
        req_start(req, 0, peer, bytes, tag);
        req->status = GLUCX_ERR_INVALID_ARG;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "isend: peer %d (size %d), bytes=%zu, buf=%p, tag=0x%llx: invalid "
                           "(peer out of range, NULL buffer or reserved control bit)",
                           peer, base->size, bytes, buf, (unsigned long long)tag);
    }
    uint64_t wire = (tag & ~GLUCX_TX_TAG_SRC_MASK) | SRC_BITS(base->rank);
    return send_post(tx, peer, wire, buf, bytes, sync, req);
}

glucx_status_t glucx_ucx_isend(glucx_tx_t *base, int peer, uint64_t tag, const void *buf,
                               size_t bytes, glucx_tx_req_t *req)
{
    return isend_common(base, peer, tag, buf, bytes, 0, req);
}

glucx_status_t glucx_ucx_isend_sync(glucx_tx_t *base, int peer, uint64_t tag, const void *buf,
                                    size_t bytes, glucx_tx_req_t *req)
{
    return isend_common(base, peer, tag, buf, bytes, 1, req);
}

/* Post active message id (user header hdr, data buf) to peer as request req of kind. hdr and
 * buf must live until the request completes. Lock held. */
static glucx_status_t am_send_locked(glucx_ucx_tx_t *tx, int peer, unsigned id, const void *hdr,
                                     size_t hdr_len, const void *buf, size_t bytes,
                                     uint32_t ucp_flags, glucx_tx_req_t *req, int kind)
{
    glucx_ucx_list_add(tx, req, kind);
    ucp_request_param_t param = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS,
        .cb.send = send_cb,
        .user_data = req,
        .flags = ucp_flags,
    };
    ucs_status_t us =
        send_posted(tx, req, ucp_am_send_nbx(tx->eps[peer], id, hdr, hdr_len, buf, bytes, &param));
    if (us != UCS_OK)
        return glucx_error(req->status, "active message to rank %d: %s", peer,
                           ucs_status_string(us));
    return GLUCX_OK;
}

glucx_status_t glucx_ucx_send_ready(glucx_ucx_tx_t *tx, int peer, glucx_tx_req_t *req)
{
    req_start(req, 0, peer, GLUCX_UCX_READY_BYTES, 0);
    pthread_mutex_lock(&tx->lock);
    glucx_status_t st;
    if (glucx_tx_failure(&tx->base) != GLUCX_OK) {
        st = post_failed(tx, req, "ready", peer);
    } else {
        /* shaped like a small put (header and data beyond what fits inline): its first send
         * to a peer sets up what later puts use */
        static const unsigned char zeros[GLUCX_UCX_READY_BYTES];
        memset(&req->impl_data[4], 0, 4 * sizeof(uintptr_t));
        glucx_ucx_put_hdr_t h = {.src = tx->base.rank, .magic = GLUCX_UCX_PUT_MAGIC};
        memcpy(&req->impl_data[4], &h, sizeof(h));
        st = am_send_locked(tx, peer, GLUCX_UCX_AM_READY, &req->impl_data[4],
                            sizeof(glucx_ucx_put_hdr_t), zeros, sizeof(zeros), 0, req,
                            GLUCX_UCX_REQ_SEND);
    }
    pthread_mutex_unlock(&tx->lock);
    return st;
}

_Static_assert(sizeof(glucx_ucx_put_hdr_t) <= 4 * sizeof(uintptr_t),
               "a put's header lives in impl_data[4..7]");

glucx_status_t glucx_ucx_put(glucx_tx_t *base, int peer, uint64_t slot, size_t offset,
                             const void *buf, size_t bytes, unsigned flags, glucx_tx_req_t *req)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "put: peer %d, bytes=%zu: NULL request", peer,
                           bytes);
    req_start(req, 0, peer, bytes, slot);
    if (peer < 0 || peer >= base->size || (bytes > 0 && buf == NULL) ||
        (flags & ~GLUCX_TX_PUT_SYNC) != 0 || offset > SIZE_MAX - bytes) {
        req->status = GLUCX_ERR_INVALID_ARG;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "put: peer %d (size %d), bytes=%zu at offset %zu, buf=%p, flags 0x%x: "
                           "invalid (peer out of range, NULL buffer, unknown flag or offset + "
                           "bytes overflows)",
                           peer, base->size, bytes, offset, buf, flags);
    }
    pthread_mutex_lock(&tx->lock);
    glucx_status_t st = GLUCX_OK;
    if (glucx_tx_failure(base) != GLUCX_OK) {
        st = post_failed(tx, req, "put", peer);
        goto out;
    }
    if (tx->connected && tx->departed[peer]) {
        glucx_ucx_record_failure(tx, GLUCX_ERR_ABORTED, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d destroyed its communicator: rank %d cannot put %zu "
                                 "bytes into its window (slot %llu, offset %zu)",
                                 peer, base->rank, bytes, (unsigned long long)slot, offset);
        st = post_failed(tx, req, "put", peer);
        goto out;
    }
    if (!tx->connected || tx->eps[peer] == NULL) {
        req->status = GLUCX_ERR_INVALID_ARG;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        st = glucx_error(GLUCX_ERR_INVALID_ARG, "put: peer %d, bytes=%zu: not connected", peer,
                         bytes);
        goto out;
    }
    glucx_ucx_put_hdr_t *hdr = (glucx_ucx_put_hdr_t *)&req->impl_data[4];
    hdr->slot = slot;
    hdr->offset = offset;
    hdr->seq = tx->put_seq_out[peer]++;
    hdr->src = base->rank;
    hdr->flags = flags & GLUCX_TX_PUT_SYNC;
    hdr->magic = GLUCX_UCX_PUT_MAGIC;
    /* A synchronous put forces rendezvous: the sender's request completes when the receiver
     * has fetched the data into its window (a rendezvous that arrives before the window is
     * held, undelivered, until it opens). */
    st = am_send_locked(tx, peer, GLUCX_UCX_AM_PUT, hdr, sizeof(*hdr), buf, bytes,
                        (flags & GLUCX_TX_PUT_SYNC) ? UCP_AM_SEND_FLAG_RNDV : 0, req,
                        GLUCX_UCX_REQ_PUT);
    if (st != GLUCX_OK)
        st = glucx_error(st, "put: peer %d, bytes=%zu, slot %llu, offset %zu: %s", peer, bytes,
                         (unsigned long long)slot, offset, glucx_error_text());
out:
    pthread_mutex_unlock(&tx->lock);
    return st;
}

/* Lock held. mask includes the source bits when matching one source. */
static glucx_status_t recv_locked(glucx_ucx_tx_t *tx, uint64_t tag, uint64_t mask, void *buf,
                                  size_t bytes, glucx_tx_req_t *req)
{
    glucx_ucx_list_add(tx, req, GLUCX_UCX_REQ_RECV);
    /* No immediate completion: UCX 1.13 leaves recv_info unfilled on that path, while the
     * callback always gets the sender's tag and length (it then runs inside this call). */
    ucp_request_param_t param = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv = recv_cb,
        .user_data = req,
    };
    void *r = ucp_tag_recv_nbx(tx->worker, buf, bytes, tag, mask, &param);
    if (UCS_PTR_IS_ERR(r)) {
        ucs_status_t us = UCS_PTR_STATUS(r);
        glucx_ucx_complete(tx, req, glucx_ucx_status(us), -1, 0, 0);
        return glucx_error(req->status, "irecv: bytes=%zu, tag=0x%llx: %s", bytes,
                           (unsigned long long)tag, ucs_status_string(us));
    } else if (r != NULL && !glucx_tx_req_done(req)) {
        req->impl = r;
        /* From a peer that left: everything it sent is here already, so unless this matched a
         * message now, it never will (the cancellation fails the transport; see recv_done). */
        if (req->peer >= 0 && req->peer < tx->base.size && tx->departed[req->peer]) {
            req->impl_data[3] = GLUCX_UCX_REQ_DEPARTED;
            ucp_request_cancel(tx->worker, r);
        }
    }
    return GLUCX_OK;
}

int glucx_ucx_probe(glucx_tx_t *base, int peer, uint64_t tag, uint64_t ignore_mask, uint64_t *tag_p)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (peer < 0 || peer >= base->size || (tag & GLUCX_TX_TAG_CTRL))
        return 0;
    uint64_t ignore = ignore_mask & ~(GLUCX_TX_TAG_SRC_MASK | GLUCX_TX_TAG_CTRL);
    uint64_t wire = (tag & ~(GLUCX_TX_TAG_SRC_MASK | ignore)) | SRC_BITS(peer);
    ucp_tag_recv_info_t info;
    int found = 0;
    pthread_mutex_lock(&tx->lock);
    if (!atomic_load_explicit(&tx->torn_down, memory_order_acquire) &&
        ucp_tag_probe_nb(tx->worker, wire, ~ignore, 0, &info) != NULL) {
        found = 1;
        if (tag_p != NULL)
            *tag_p = info.sender_tag;
    }
    pthread_mutex_unlock(&tx->lock);
    return found;
}

/* The receive side of send_segments: one receive per segment, posted in order (UCX matches
 * receives of one tag in the order they were posted, messages in the order they were sent).
 * Lock held. */
static glucx_status_t recv_segments(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, uint64_t mask,
                                    void *buf, size_t bytes, size_t seg, glucx_tx_req_t *req)
{
    glucx_ucx_segs_t *g = segs_new(tx, req, bytes, seg);
    if (g == NULL)
        return GLUCX_ERR_NO_MEMORY;
    glucx_status_t st = GLUCX_OK;
    for (int i = 0; i < g->n; i++) {
        glucx_tx_req_t *c = segs_child(g, i, 1, peer, bytes, seg, 0);
        if (st != GLUCX_OK || g->ended) {
            /* the sender's message already ended (a short segment was waiting): no more */
            segs_skip(tx, c, st != GLUCX_OK ? st : GLUCX_ERR_ABORTED);
            continue;
        }
        st = recv_locked(tx, wire_tag, mask, (char *)buf + (size_t)i * seg, c->posted, c);
        if (st != GLUCX_OK) {
            segs_skip(tx, c, st);
            st = glucx_error(st, "irecv: peer %d, bytes=%zu (segment %d of %d): %s", peer, bytes,
                             i + 1, g->n, glucx_error_text());
        }
    }
    return segs_posted(tx, g, st);
}

glucx_status_t glucx_ucx_recv_raw(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, uint64_t mask,
                                  void *buf, size_t bytes, glucx_tx_req_t *req)
{
    req_start(req, 1, peer, bytes, 0);
    pthread_mutex_lock(&tx->lock);
    glucx_status_t st;
    size_t seg;
    if (glucx_tx_failure(&tx->base) != GLUCX_OK)
        st = post_failed(tx, req, "irecv", peer);
    else if ((seg = seg_size(tx, peer, wire_tag, bytes)) > 0)
        st = recv_segments(tx, peer, wire_tag, mask, buf, bytes, seg, req);
    else
        st = recv_locked(tx, wire_tag, mask, buf, bytes, req);
    pthread_mutex_unlock(&tx->lock);
    return st;
}

glucx_status_t glucx_ucx_irecv(glucx_tx_t *base, const int *peers, int npeers, uint64_t tag,
                               uint64_t ignore_mask, void *buf, size_t bytes, glucx_tx_req_t *req)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (req == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "irecv: bytes=%zu: NULL request", bytes);
    req_start(req, 1, npeers == 1 && peers != NULL ? peers[0] : -1, bytes, 0);
    if (peers == NULL || npeers < 1 || (bytes > 0 && buf == NULL) || (tag & GLUCX_TX_TAG_CTRL)) {
        req->status = GLUCX_ERR_INVALID_ARG;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "irecv: npeers=%d, bytes=%zu, buf=%p, tag=0x%llx: invalid (no peers, "
                           "NULL buffer or reserved control bit)",
                           npeers, bytes, buf, (unsigned long long)tag);
    }
    int size = base->size;
    if (npeers == 1) {
        /* the common case: one source, no allocation */
        if (peers[0] < 0 || peers[0] >= size) {
            req->status = GLUCX_ERR_INVALID_ARG;
            atomic_store_explicit(&req->done, 1, memory_order_release);
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "irecv: peer %d out of range [0, %d), bytes=%zu", peers[0], size,
                               bytes);
        }
        uint64_t ignore = ignore_mask & ~(GLUCX_TX_TAG_SRC_MASK | GLUCX_TX_TAG_CTRL);
        uint64_t wire = (tag & ~(GLUCX_TX_TAG_SRC_MASK | ignore)) | SRC_BITS(peers[0]);
        return glucx_ucx_recv_raw(tx, peers[0], wire, ~ignore, buf, bytes, req);
    }
    /* Deduplicate the source set (duplicates and self are allowed). */
    unsigned char *seen = calloc((size_t)size, 1);
    glucx_ucx_probe_t *p = malloc(sizeof(*p) + sizeof(int) * (size_t)npeers);
    if (seen == NULL || p == NULL) {
        free(seen);
        free(p);
        req->status = GLUCX_ERR_NO_MEMORY;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        return glucx_error(GLUCX_ERR_NO_MEMORY, "irecv: npeers=%d: out of memory", npeers);
    }
    int distinct = 0;
    for (int i = 0; i < npeers; i++) {
        int r = peers[i];
        if (r < 0 || r >= size) {
            free(seen);
            free(p);
            req->status = GLUCX_ERR_INVALID_ARG;
            atomic_store_explicit(&req->done, 1, memory_order_release);
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "irecv: peers[%d]=%d out of range [0, %d), bytes=%zu", i, r, size,
                               bytes);
        }
        if (!seen[r]) {
            seen[r] = 1;
            p->peers[distinct++] = r;
        }
    }
    free(seen);
    /* Compare every bit except the ignored ones; the control bit always (it must be 0). */
    uint64_t ignore = ignore_mask & ~(GLUCX_TX_TAG_SRC_MASK | GLUCX_TX_TAG_CTRL);
    uint64_t base_tag = tag & ~(GLUCX_TX_TAG_SRC_MASK | ignore);
    uint64_t mask = ~ignore;

    pthread_mutex_lock(&tx->lock);
    glucx_status_t st = GLUCX_OK;
    if (glucx_tx_failure(base) != GLUCX_OK) {
        free(p);
        st = post_failed(tx, req, "irecv", req->peer);
    } else if (distinct == 1) {
        free(p);
        const uint64_t wire = base_tag | SRC_BITS(peers[0]);
        const size_t seg = seg_size(tx, peers[0], wire, bytes);
        st = seg > 0 ? recv_segments(tx, peers[0], wire, mask, buf, bytes, seg, req)
                     : recv_locked(tx, wire, mask, buf, bytes, req);
    } else if (distinct == size) {
        free(p);
        st = recv_locked(tx, base_tag, mask & ~GLUCX_TX_TAG_SRC_MASK, buf, bytes, req);
    } else {
        /* A UCX receive cannot name a set of sources: probe each source instead, so a message
         * from a rank outside the set is never taken. */
        p->req = req;
        p->buf = buf;
        p->tag = base_tag;
        p->mask = mask;
        p->start = 0;
        p->npeers = distinct;
        p->next = NULL;
        p->prev = tx->probe_tail;
        if (tx->probe_tail != NULL)
            tx->probe_tail->next = p;
        else
            tx->probe_head = p;
        tx->probe_tail = p;
        glucx_ucx_list_add(tx, req, GLUCX_UCX_REQ_PROBE_WAIT);
        req->impl_data[3] |= (uintptr_t)p;
        /* Messages already unexpected (e.g. self-sends) match now, in posting order. */
        glucx_ucx_probe_all(tx);
    }
    pthread_mutex_unlock(&tx->lock);
    return st;
}

int glucx_ucx_probe_all(glucx_ucx_tx_t *tx)
{
    int matched = 0;
    glucx_ucx_probe_t *next;
    for (glucx_ucx_probe_t *p = tx->probe_head; p != NULL; p = next) {
        next = p->next;
        for (int k = 0; k < p->npeers; k++) {
            int i = (p->start + k) % p->npeers;
            ucp_tag_recv_info_t info;
            ucp_tag_message_h msg =
                ucp_tag_probe_nb(tx->worker, p->tag | SRC_BITS(p->peers[i]), p->mask, 1, &info);
            if (msg == NULL)
                continue;
            p->start = (i + 1) % p->npeers;
            glucx_tx_req_t *req = p->req;
            void *buf = p->buf;
            probe_unlink(tx, p);
            free(p);
            req->impl_data[3] = GLUCX_UCX_REQ_PROBE_RECV;
            ucp_request_param_t param = {
                .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                                UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                .cb.recv = recv_cb,
                .user_data = req,
            };
            void *r = ucp_tag_msg_recv_nbx(tx->worker, buf, req->posted, msg, &param);
            if (UCS_PTR_IS_ERR(r)) {
                /* The probe told the sender and length; use them for the report. */
                recv_done(tx, req, UCS_PTR_STATUS(r), &info);
            } else if (r != NULL && !glucx_tx_req_done(req)) {
                req->impl = r;
            }
            matched++;
            break;
        }
    }
    return matched;
}

void glucx_ucx_segs_cancel(glucx_ucx_tx_t *tx, glucx_tx_req_t *req)
{
    glucx_ucx_segs_t *g = (glucx_ucx_segs_t *)req->impl_data[4];
    g->left++; /* a cancellation completes its child inside ucp_request_cancel */
    for (int i = 0; i < g->n; i++) {
        glucx_tx_req_t *c = &g->child[i];
        if (!glucx_tx_req_done(c) && glucx_ucx_req_kind(c) == GLUCX_UCX_REQ_RECV &&
            c->impl != NULL) {
            c->impl_data[3] = GLUCX_UCX_REQ_CANCELING;
            ucp_request_cancel(tx->worker, c->impl);
        }
    }
    segs_put(tx, g);
}

void glucx_ucx_cancel(glucx_tx_t *base, glucx_tx_req_t *req)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (req == NULL)
        return;
    pthread_mutex_lock(&tx->lock);
    if (!glucx_tx_req_done(req) && (glucx_ucx_tx_t *)req->impl_data[2] == tx) {
        int kind = glucx_ucx_req_kind(req);
        if (req->flags & GLUCX_UCX_FLAG_SEGMENTED) {
            glucx_ucx_segs_cancel(tx, req);
        } else if (kind == GLUCX_UCX_REQ_RECV && req->impl != NULL) {
            /* Completes with UCS_ERR_CANCELED if unmatched; a matched receive goes on. */
            req->impl_data[3] = GLUCX_UCX_REQ_CANCELING;
            ucp_request_cancel(tx->worker, req->impl);
        } else if (kind == GLUCX_UCX_REQ_PROBE_WAIT) {
            glucx_ucx_probe_t *p = glucx_ucx_req_probe(req);
            probe_unlink(tx, p);
            free(p);
            glucx_ucx_complete(tx, req, GLUCX_ERR_ABORTED, -1, 0, 0);
        }
    }
    pthread_mutex_unlock(&tx->lock);
}
