/*
 * UCX transport: windows (placed receives), the model of Gloo's bound buffers.
 *
 * A put is a UCX active message (id GLUCX_UCX_AM_PUT) with a 32-byte user header (slot, offset,
 * sender, sequence; glucx_ucx_put_hdr_t). A tag receive cannot serve: it must be posted at its
 * final address before the message says where it goes. The handler runs inside whichever
 * ucp_worker_progress drives this worker (any wait on the transport), so a rank blocked in any
 * other wait still places puts. Each (sender, slot) has a channel: its messages in arrival order
 * (UCX delivers the messages of one endpoint in order; the sequence number checks it) and the
 * window open for it, if any.
 *
 * Placing. A message whose window is open and that overlaps no earlier message still to be placed
 * is placed at once: eager data is copied into the window inside the handler, rendezvous data is
 * fetched by ucp_am_recv_data_nbx straight into window + offset (over cma: one copy, read from the
 * sender's memory). Any other message is held: eager data by keeping UCX's descriptor (returning
 * UCS_INPROGRESS) when UCX allows it, else by a malloc'd copy. A rendezvous message of a
 * GLUCX_TX_PUT_SYNC put (a header flag) is held by keeping its descriptor, so the sender's request
 * stays incomplete until the data is fetched into the window; one of a plain put is fetched into
 * a malloc'd copy at once while the hold budget allows ("bouncing"), so a plain put completes
 * whether or not the window is open, as an eager one does (otherwise two ranks that each wait
 * for a large put before opening their window would deadlock, at rendezvous sizes only); past
 * the budget its descriptor is held instead. Held messages
 * are placed outside callbacks (tx->win_pending, glucx_ucx_win_progress) once their window opens
 * or the earlier overlapping message is placed, so placement order per channel is arrival order
 * wherever messages overlap. A window wait takes messages in arrival order: the head of the
 * channel, once placed.
 *
 * Bound. Held messages cost their payload copy (eager data, bounced rendezvous data) plus
 * GLUCX_UCX_HOLD_OVERHEAD bytes each; an eager put or descriptor that would take the total past
 * uctx->hold_max (GLUCX_WINDOW_HOLD) fails the transport with GLUCX_ERR_NO_MEMORY naming the
 * sender, slot and sizes, instead of growing without bound.
 *
 * Failure. A put that does not fit its window (offset + bytes > window size) fails the transport
 * with GLUCX_ERR_TRUNCATED (notices carry it to every rank); nothing is written. At teardown held
 * eager data is released; held rendezvous descriptors are not (ucp_am_data_release would
 * acknowledge them to the sender as if placed): UCX frees them with the worker.
 */
#include "transport/ucx_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/time.h"

static unsigned chan_bucket(int src, uint64_t slot)
{
    uint64_t h = slot * UINT64_C(0x9e3779b97f4a7c15) + (uint64_t)(uint32_t)src;
    h ^= h >> 31;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 29;
    return (unsigned)(h % GLUCX_UCX_CHAN_BUCKETS);
}

/* The channel of (src, slot), created if asked; NULL when absent (or out of memory). */
static glucx_ucx_chan_t *chan_get(glucx_ucx_tx_t *tx, int src, uint64_t slot, int create)
{
    glucx_ucx_chan_t **b = &tx->chans[chan_bucket(src, slot)];
    for (glucx_ucx_chan_t *c = *b; c != NULL; c = c->hnext)
        if (c->src == src && c->slot == slot)
            return c;
    if (!create)
        return NULL;
    glucx_ucx_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->tx = tx;
    c->src = src;
    c->slot = slot;
    c->hnext = *b;
    *b = c;
    return c;
}

/* Drop a channel that has neither a window nor messages. */
static void chan_drop_if_idle(glucx_ucx_tx_t *tx, glucx_ucx_chan_t *chan)
{
    if (chan->win != NULL || chan->head != NULL)
        return;
    glucx_ucx_chan_t **pp = &tx->chans[chan_bucket(chan->src, chan->slot)];
    while (*pp != NULL && *pp != chan)
        pp = &(*pp)->hnext;
    if (*pp == chan)
        *pp = chan->hnext;
    free(chan);
}

static void chan_append(glucx_ucx_chan_t *chan, glucx_ucx_msg_t *m)
{
    m->next = NULL;
    m->chan = chan;
    if (chan->tail != NULL)
        chan->tail->next = m;
    else
        chan->head = m;
    chan->tail = m;
}

/* Recount the placed messages at the head of win's channel (what a wait may take) and wake the
 * waiters when there are some. Lock held. */
static void win_update_ready(glucx_ucx_tx_t *tx, glucx_tx_win_t *win)
{
    int n = 0;
    for (glucx_ucx_msg_t *m = win->chan->head; m != NULL && m->state == GLUCX_UCX_MSG_PLACED;
         m = m->next)
        n++;
    int before = atomic_exchange_explicit(&win->ready, n, memory_order_acq_rel);
    if (n > before)
        glucx_ucx_wake_waiters(tx);
}

static int overlaps(const glucx_ucx_msg_t *a, const glucx_ucx_msg_t *b)
{
    return a->bytes > 0 && b->bytes > 0 && a->offset < b->offset + b->bytes &&
           b->offset < a->offset + a->bytes;
}

/* Whether m may be placed now: no earlier message of its channel that is not placed yet overlaps
 * it (so overlapping puts land in arrival order). */
static int may_place(const glucx_ucx_msg_t *m)
{
    for (const glucx_ucx_msg_t *e = m->chan->head; e != NULL && e != m; e = e->next)
        if ((e->state == GLUCX_UCX_MSG_HELD || e->state == GLUCX_UCX_MSG_FETCHING ||
             e->state == GLUCX_UCX_MSG_BOUNCING) &&
            overlaps(e, m))
            return 0;
    return 1;
}

/* Fail the transport: m does not fit its window. Lock held. */
static void fail_truncated(glucx_ucx_tx_t *tx, const glucx_ucx_msg_t *m, const glucx_tx_win_t *win)
{
    glucx_ucx_record_failure(tx, GLUCX_ERR_TRUNCATED, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                             "put from rank %d into window slot %" PRIu64 " on rank %d does not "
                             "fit: offset %zu + length %zu > window size %zu bytes",
                             m->chan->src, m->chan->slot, tx->base.rank, m->offset, m->bytes,
                             win->bytes);
}

static int fits(const glucx_ucx_msg_t *m, const glucx_tx_win_t *win)
{
    return m->offset <= win->bytes && m->bytes <= win->bytes - m->offset;
}

/* A message whose fetch is under way when its window or transport goes: UCX may still call
 * fetch_cb (ucp_worker_destroy purges requests of endpoints with error handling), so it stays
 * allocated, detached, until the worker is destroyed. */
static void msg_orphan(glucx_ucx_tx_t *tx, glucx_ucx_msg_t *m)
{
    m->chan = NULL;
    m->next = tx->orphans;
    tx->orphans = m;
}

static int fetch_under_way(const glucx_ucx_msg_t *m)
{
    return m->state == GLUCX_UCX_MSG_FETCHING || m->state == GLUCX_UCX_MSG_BOUNCING;
}

static void fetch_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    glucx_ucx_msg_t *m = user_data;
    if (m->chan == NULL) { /* orphan: its window and transport are gone */
        ucp_request_free(request);
        return;
    }
    glucx_ucx_tx_t *tx = m->chan->tx;
    glucx_tx_win_t *win = m->chan->win;
    const int bounce = m->state == GLUCX_UCX_MSG_BOUNCING;
    (void)length;
    ucp_request_free(request);
    if (status == UCS_OK) {
        m->state = bounce ? GLUCX_UCX_MSG_HELD : GLUCX_UCX_MSG_PLACED;
    } else {
        m->state = GLUCX_UCX_MSG_BROKEN;
        glucx_ucx_suspect(tx, -1,
                          glucx_ucx_status(status) == GLUCX_ERR_TRANSPORT ? GLUCX_ERR_TRANSPORT
                                                                          : GLUCX_ERR_PEER_FAILED,
                          "rank %d failed: %s (put of %zu bytes into window slot %" PRIu64 ")",
                          m->chan->src, ucs_status_string(status), m->bytes, m->chan->slot);
    }
    if (!bounce)
        m->data = NULL;
    if (win != NULL && !bounce) {
        atomic_fetch_sub_explicit(&win->fetching, 1, memory_order_acq_rel);
        win_update_ready(tx, win);
    }
    tx->win_pending = 1; /* messages behind it (or this bounced one) may be placed now */
    glucx_ucx_wake_waiters(tx);
}

/* Receive rendezvous message m (UCX descriptor desc) into dest: its window (state FETCHING) or
 * its copy (state BOUNCING, set by the caller). Lock held; inside the put handler (for that
 * message's own descriptor) or outside callbacks. @return 0, or -1 when UCX refused (the
 * transport is failed). */
static int fetch_into(glucx_ucx_tx_t *tx, glucx_ucx_msg_t *m, void *desc, void *dest)
{
    glucx_tx_win_t *win = m->chan->win;
    const int bounce = m->state == GLUCX_UCX_MSG_BOUNCING;
    if (!bounce) {
        m->state = GLUCX_UCX_MSG_FETCHING;
        m->data = NULL;
        atomic_fetch_add_explicit(&win->fetching, 1, memory_order_acq_rel);
    }
    ucp_request_param_t param = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv_am = fetch_cb,
        .user_data = m,
    };
    void *r = ucp_am_recv_data_nbx(tx->worker, desc, dest, m->bytes, &param);
    if (!UCS_PTR_IS_ERR(r))
        return 0; /* fetch_cb marks it done (it may have run already) */
    /* UCX owns the descriptor now, even on failure. */
    m->state = GLUCX_UCX_MSG_BROKEN;
    if (!bounce)
        atomic_fetch_sub_explicit(&win->fetching, 1, memory_order_acq_rel);
    glucx_ucx_record_failure(
        tx, glucx_ucx_status(UCS_PTR_STATUS(r)), GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
        "rank %d cannot receive a put of %zu bytes from rank %d (slot %" PRIu64 "): %s",
        tx->base.rank, m->bytes, m->chan->src, m->chan->slot, ucs_status_string(UCS_PTR_STATUS(r)));
    return -1;
}

/* Place held message m into its open window. Lock held, outside callbacks. */
static void place_held(glucx_ucx_tx_t *tx, glucx_ucx_msg_t *m)
{
    glucx_tx_win_t *win = m->chan->win;
    tx->held_bytes -= m->cost;
    m->cost = 0;
    void *data = m->data;
    m->data = NULL;
    switch (m->kind) {
    case GLUCX_UCX_MSG_DESC:
        if (m->bytes > 0)
            memcpy(win->buf + m->offset, data, m->bytes);
        ucp_am_data_release(tx->worker, data);
        m->state = GLUCX_UCX_MSG_PLACED;
        break;
    case GLUCX_UCX_MSG_COPY:
        if (m->bytes > 0)
            memcpy(win->buf + m->offset, data, m->bytes);
        free(data);
        m->state = GLUCX_UCX_MSG_PLACED;
        break;
    default:
        if (m->bytes > 0) {
            fetch_into(tx, m, data, win->buf + m->offset);
        } else {
            /* Nothing to fetch: the release acknowledges it to the sender. (UCX 1.13 does not
             * release the descriptor of a zero-byte ucp_am_recv_data_nbx.) */
            ucp_am_data_release(tx->worker, data);
            m->state = GLUCX_UCX_MSG_PLACED;
        }
        break;
    }
}

/* Place what may be placed in chan's open window, in order. Lock held, outside callbacks. */
static void chan_advance(glucx_ucx_tx_t *tx, glucx_ucx_chan_t *chan)
{
    glucx_tx_win_t *win = chan->win;
    if (win == NULL || win->closing)
        return;
    for (glucx_ucx_msg_t *m = chan->head; m != NULL; m = m->next) {
        if (glucx_tx_failure(&tx->base) != GLUCX_OK)
            break;
        if (m->state != GLUCX_UCX_MSG_HELD || !may_place(m))
            continue;
        if (!fits(m, win)) {
            fail_truncated(tx, m, win);
            break;
        }
        place_held(tx, m);
    }
    win_update_ready(tx, win);
}

void glucx_ucx_win_progress(glucx_ucx_tx_t *tx)
{
    if (!tx->win_pending)
        return;
    tx->win_pending = 0;
    for (glucx_tx_win_t *w = tx->wins; w != NULL; w = w->next)
        chan_advance(tx, w->chan);
}

static ucs_status_t put_handler(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ucp_am_recv_param_t *param)
{
    glucx_ucx_tx_t *tx = arg;
    const int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    const int can_keep = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
    /* a rendezvous put refused with an error status completes the sender's request with it */
    const ucs_status_t refuse = rndv ? UCS_ERR_CANCELED : UCS_OK;
    glucx_ucx_put_hdr_t h;
    if (header == NULL || header_length != sizeof(h)) {
        glucx_ucx_record_failure(tx, GLUCX_ERR_TRANSPORT, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d: a put of %zu bytes arrived with a %zu-byte header "
                                 "(expected %zu)",
                                 tx->base.rank, length, header_length, sizeof(h));
        return refuse;
    }
    memcpy(&h, header, sizeof(h));
    if (h.magic != GLUCX_UCX_PUT_MAGIC || h.src < 0 || h.src >= tx->base.size) {
        glucx_ucx_record_failure(tx, GLUCX_ERR_TRANSPORT, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d: a put of %zu bytes arrived with a malformed header "
                                 "(magic 0x%x, sender %d)",
                                 tx->base.rank, length, h.magic, (int)h.src);
        return refuse;
    }
    if (glucx_tx_failure(&tx->base) != GLUCX_OK || tx->in_teardown)
        return refuse; /* failed: nothing more is placed */
    if (h.seq != tx->put_seq_in[h.src]) {
        glucx_ucx_record_failure(tx, GLUCX_ERR_TRANSPORT, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d: put number %u from rank %d arrived when number %u "
                                 "was due (slot %" PRIu64 ", %zu bytes)",
                                 tx->base.rank, h.seq, (int)h.src, tx->put_seq_in[h.src], h.slot,
                                 length);
        return refuse;
    }
    tx->put_seq_in[h.src]++;
    glucx_ucx_chan_t *chan = chan_get(tx, h.src, h.slot, 1);
    glucx_ucx_msg_t *m = calloc(1, sizeof(*m));
    if (chan == NULL || m == NULL) {
        free(m);
        glucx_ucx_record_failure(tx, GLUCX_ERR_NO_MEMORY, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d: out of memory for a put of %zu bytes from rank %d "
                                 "(slot %" PRIu64 ")",
                                 tx->base.rank, length, (int)h.src, h.slot);
        return rndv ? UCS_ERR_NO_MEMORY : UCS_OK;
    }
    m->offset = (size_t)h.offset;
    m->bytes = length;
    m->kind = rndv ? GLUCX_UCX_MSG_RNDV : GLUCX_UCX_MSG_DESC;
    m->state = GLUCX_UCX_MSG_HELD;
    chan_append(chan, m);
    glucx_tx_win_t *win = chan->win;
    if (win != NULL && !win->closing && !fits(m, win)) {
        fail_truncated(tx, m, win);
        m->state = GLUCX_UCX_MSG_BROKEN;
        return rndv ? UCS_ERR_MESSAGE_TRUNCATED : UCS_OK;
    }
    if (win != NULL && !win->closing && may_place(m)) {
        if (!rndv) {
            if (length > 0)
                memcpy(win->buf + m->offset, data, length);
            m->state = GLUCX_UCX_MSG_PLACED;
            win_update_ready(tx, win);
            return UCS_OK;
        }
        if (length == 0) { /* UCS_OK: UCX acknowledges it to the sender and releases it */
            m->state = GLUCX_UCX_MSG_PLACED;
            win_update_ready(tx, win);
            return UCS_OK;
        }
        /* Started inside the handler: UCX keeps the descriptor (RNDV_STARTED). */
        return fetch_into(tx, m, data, win->buf + m->offset) == 0 ? UCS_INPROGRESS : UCS_OK;
    }
    /* Held until its window opens or the overlapping put before it is placed. */
    const size_t max = tx->uctx->hold_max;
    const size_t left = tx->held_bytes < max ? max - tx->held_bytes : 0;
    if (rndv && !(h.flags & GLUCX_TX_PUT_SYNC) && length > 0 && length <= left &&
        GLUCX_UCX_HOLD_OVERHEAD <= left - length) {
        /* A plain put: receive it into a copy now, so it completes without the window. */
        m->data = malloc(length > 0 ? length : 1);
        if (m->data != NULL) {
            m->kind = GLUCX_UCX_MSG_COPY;
            m->state = GLUCX_UCX_MSG_BOUNCING;
            m->cost = length + GLUCX_UCX_HOLD_OVERHEAD;
            tx->held_bytes += m->cost;
            return fetch_into(tx, m, data, m->data) == 0 ? UCS_INPROGRESS : UCS_OK;
        }
    }
    size_t cost = (rndv ? 0 : length) + GLUCX_UCX_HOLD_OVERHEAD;
    if (cost > left) {
        m->state = GLUCX_UCX_MSG_BROKEN;
        glucx_ucx_record_failure(tx, GLUCX_ERR_NO_MEMORY, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d holds %zu bytes of puts that no window took yet; a "
                                 "put of %zu bytes from rank %d (slot %" PRIu64 ", offset %zu) "
                                 "would pass the limit of %zu bytes (GLUCX_WINDOW_HOLD)",
                                 tx->base.rank, tx->held_bytes, length, (int)h.src, h.slot,
                                 m->offset, max);
        return rndv ? UCS_ERR_NO_MEMORY : UCS_OK;
    }
    m->cost = cost;
    tx->held_bytes += cost;
    if (win != NULL)
        tx->win_pending = 1;
    if (rndv || can_keep) {
        m->data = data;
        return UCS_INPROGRESS;
    }
    m->kind = GLUCX_UCX_MSG_COPY;
    m->data = malloc(length > 0 ? length : 1);
    if (m->data == NULL) {
        m->state = GLUCX_UCX_MSG_BROKEN;
        glucx_ucx_record_failure(tx, GLUCX_ERR_NO_MEMORY, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d: out of memory holding a put of %zu bytes from rank %d "
                                 "(slot %" PRIu64 ")",
                                 tx->base.rank, length, (int)h.src, h.slot);
        return UCS_OK;
    }
    if (length > 0)
        memcpy(m->data, data, length);
    return UCS_OK;
}

/* The connect handshake's active message: sending it sets up what puts use; its arrival tells
 * the receiver that the sender's readiness message no longer depends on the receiver (a rank
 * that left connect before its peers' messages arrived could destroy its worker under them). */
static ucs_status_t ready_handler(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param)
{
    glucx_ucx_tx_t *tx = arg;
    (void)data, (void)length;
    glucx_ucx_put_hdr_t h;
    if (header_length != sizeof(h) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK; /* not ours: the handshake's own deadline reports a missing peer */
    memcpy(&h, header, sizeof(h));
    if (h.magic != GLUCX_UCX_PUT_MAGIC || h.src < 0 || h.src >= tx->base.size)
        return UCS_OK;
    tx->ready_in[h.src] = 1;
    glucx_tx_req_t *req = tx->ready_wait[h.src];
    if (req != NULL) {
        tx->ready_wait[h.src] = NULL;
        req->status = GLUCX_OK;
        atomic_store_explicit(&req->done, 1, memory_order_release);
        glucx_ucx_wake_waiters(tx);
    }
    return UCS_OK;
}

void glucx_ucx_expect_ready(glucx_ucx_tx_t *tx, int peer, glucx_tx_req_t *req)
{
    req->is_recv = 1;
    req->peer = peer;
    req->posted = req->bytes = GLUCX_UCX_READY_BYTES;
    req->tag = 0;
    req->impl = NULL;
    pthread_mutex_lock(&tx->lock);
    int arrived = tx->ready_in[peer];
    req->status = arrived ? GLUCX_OK : GLUCX_INPROGRESS;
    atomic_store_explicit(&req->done, arrived, memory_order_release);
    tx->ready_wait[peer] = arrived ? NULL : req;
    pthread_mutex_unlock(&tx->lock);
}

void glucx_ucx_unexpect_ready(glucx_ucx_tx_t *tx)
{
    pthread_mutex_lock(&tx->lock);
    for (int p = 0; p < tx->base.size; p++)
        tx->ready_wait[p] = NULL;
    pthread_mutex_unlock(&tx->lock);
}

glucx_status_t glucx_ucx_win_init(glucx_ucx_tx_t *tx)
{
    tx->put_seq_out = calloc((size_t)tx->base.size, sizeof(*tx->put_seq_out));
    tx->put_seq_in = calloc((size_t)tx->base.size, sizeof(*tx->put_seq_in));
    tx->ready_in = calloc((size_t)tx->base.size, sizeof(*tx->ready_in));
    tx->ready_wait = calloc((size_t)tx->base.size, sizeof(*tx->ready_wait));
    if (tx->put_seq_out == NULL || tx->put_seq_in == NULL || tx->ready_in == NULL ||
        tx->ready_wait == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "ucx create: rank %d: out of memory for %d peers",
                           tx->base.rank, tx->base.size);
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = GLUCX_UCX_AM_PUT,
        .flags = UCP_AM_FLAG_WHOLE_MSG,
        .cb = put_handler,
        .arg = tx,
    };
    ucs_status_t us = ucp_worker_set_am_recv_handler(tx->worker, &hp);
    if (us == UCS_OK) {
        hp.id = GLUCX_UCX_AM_READY;
        hp.cb = ready_handler;
        us = ucp_worker_set_am_recv_handler(tx->worker, &hp);
    }
    if (us != UCS_OK)
        return glucx_error(GLUCX_ERR_TRANSPORT,
                           "ucx create: rank %d: cannot register the put handler: %s",
                           tx->base.rank, ucs_status_string(us));
    return GLUCX_OK;
}

glucx_status_t glucx_ucx_win_open(glucx_tx_t *base, int peer, uint64_t slot, void *buf,
                                  size_t bytes, glucx_tx_win_t **win_p)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (win_p == NULL || peer < 0 || peer >= base->size || (buf == NULL && bytes > 0))
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "window_create: peer %d (size %d), %zu bytes at %p: invalid (peer out "
                           "of range or NULL buffer)",
                           peer, base->size, bytes, buf);
    pthread_mutex_lock(&tx->lock);
    glucx_status_t st = GLUCX_OK;
    glucx_ucx_chan_t *chan = NULL;
    if (glucx_tx_failure(base) != GLUCX_OK) {
        st = glucx_error(glucx_tx_failure(base),
                         "window_create: rank %d, peer %d, slot %" PRIu64 ": transport failed: %s",
                         base->rank, peer, slot, base->failure);
        goto out;
    }
    chan = chan_get(tx, peer, slot, 1);
    if (chan != NULL && chan->win != NULL) {
        st = glucx_error(GLUCX_ERR_INVALID_ARG,
                         "window_create: rank %d already has a window for rank %d's puts with "
                         "slot %" PRIu64 " (%zu bytes)",
                         base->rank, peer, slot, chan->win->bytes);
        goto out;
    }
    glucx_tx_win_t *win = chan != NULL ? calloc(1, sizeof(*win)) : NULL;
    if (win == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "window_create: rank %d: out of memory", base->rank);
        goto out;
    }
    win->chan = chan;
    win->buf = buf;
    win->bytes = bytes;
    atomic_init(&win->ready, 0);
    atomic_init(&win->fetching, 0);
    win->next = tx->wins;
    if (tx->wins != NULL)
        tx->wins->prev = win;
    tx->wins = win;
    chan->win = win;
    chan_advance(tx, chan); /* what arrived before the window */
    *win_p = win;
out:
    if (chan != NULL && st != GLUCX_OK)
        chan_drop_if_idle(tx, chan);
    pthread_mutex_unlock(&tx->lock);
    return st;
}

/* A wait on win can never be satisfied: its peer left in order and nothing for it is queued.
 * Lock held, outside callbacks. */
static void win_check_departed(glucx_ucx_tx_t *tx, glucx_tx_win_t *win)
{
    const glucx_ucx_chan_t *c = win->chan;
    if (!tx->connected || !tx->departed[c->src] || c->head != NULL ||
        glucx_tx_failure(&tx->base) != GLUCX_OK)
        return;
    glucx_ucx_record_failure(tx, GLUCX_ERR_ABORTED, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                             "rank %d destroyed its communicator before putting what rank %d "
                             "waits for (window slot %" PRIu64 " of %zu bytes)",
                             c->src, tx->base.rank, c->slot, win->bytes);
}

void glucx_ucx_win_departed(glucx_ucx_tx_t *tx)
{
    for (glucx_tx_win_t *w = tx->wins; w != NULL; w = w->next)
        if (w->waiters > 0)
            win_check_departed(tx, w);
    /* A put whose receiver left before placing it is never acknowledged. What the receiver
     * fetched before leaving was acknowledged ahead of its leave (same endpoint, in order). */
    for (glucx_tx_req_t *r = tx->outstanding; r != NULL; r = (glucx_tx_req_t *)r->impl_data[0]) {
        if (glucx_ucx_req_kind(r) != GLUCX_UCX_REQ_PUT || r->peer < 0 || !tx->departed[r->peer])
            continue;
        const glucx_ucx_put_hdr_t *h = (const glucx_ucx_put_hdr_t *)&r->impl_data[4];
        glucx_ucx_record_failure(tx, GLUCX_ERR_ABORTED, GLUCX_UCX_FAIL_NOTIFY, -1, NULL,
                                 "rank %d destroyed its communicator before placing rank %d's "
                                 "put of %zu bytes (window slot %" PRIu64 ", offset %" PRIu64 ")",
                                 r->peer, tx->base.rank, r->posted, h->slot, h->offset);
        break;
    }
}

/* Take the head of win's channel (placed). Lock held. */
static void win_take(glucx_ucx_tx_t *tx, glucx_tx_win_t *win, size_t *offset_p, size_t *bytes_p)
{
    glucx_ucx_chan_t *c = win->chan;
    glucx_ucx_msg_t *m = c->head;
    c->head = m->next;
    if (c->head == NULL)
        c->tail = NULL;
    if (offset_p != NULL)
        *offset_p = m->offset;
    if (bytes_p != NULL)
        *bytes_p = m->bytes;
    free(m);
    atomic_fetch_sub_explicit(&win->ready, 1, memory_order_acq_rel);
    (void)tx;
}

glucx_status_t glucx_ucx_win_wait(glucx_tx_t *base, glucx_tx_win_t *win, int64_t deadline_ns,
                                  unsigned wake_gen, size_t *offset_p, size_t *bytes_p)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (win == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "window_wait: NULL window");
    pthread_mutex_lock(&tx->lock);
    win->waiters++;
    win_check_departed(tx, win);
    pthread_mutex_unlock(&tx->lock);
    glucx_status_t st;
    for (;;) {
        st = glucx_ucx_wait_win(tx, win, 0, deadline_ns, wake_gen);
        pthread_mutex_lock(&tx->lock);
        glucx_status_t failed = glucx_tx_failure(base);
        if (failed != GLUCX_OK) {
            /* nothing is written into a window once this returns the failure */
            glucx_ucx_teardown_if_pending(tx);
            st = glucx_error(failed,
                             "window_wait: rank %d, puts from rank %d, slot %" PRIu64
                             ": transport failed: %s",
                             base->rank, win->chan->src, win->chan->slot, base->failure);
            break;
        }
        if (atomic_load_explicit(&win->ready, memory_order_acquire) > 0) {
            win_take(tx, win, offset_p, bytes_p);
            st = GLUCX_OK;
            break;
        }
        if (st != GLUCX_OK)
            break; /* woken, or the deadline */
        /* another waiter took the message that woke this one: wait on */
        pthread_mutex_unlock(&tx->lock);
    }
    win->waiters--;
    pthread_mutex_unlock(&tx->lock);
    return st;
}

glucx_status_t glucx_ucx_win_close(glucx_tx_t *base, glucx_tx_win_t *win, int64_t deadline_ns)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (win == NULL)
        return GLUCX_OK;
    pthread_mutex_lock(&tx->lock);
    win->closing = 1;
    int fetching = atomic_load_explicit(&win->fetching, memory_order_acquire);
    pthread_mutex_unlock(&tx->lock);
    if (fetching > 0 && !atomic_load_explicit(&tx->torn_down, memory_order_acquire)) {
        glucx_status_t st = glucx_ucx_wait_win(tx, win, 1, deadline_ns, 0);
        if (st == GLUCX_ERR_TIMEOUT) {
            char text[300];
            snprintf(text, sizeof(text),
                     "window_destroy on rank %d: %d put(s) from rank %d being received into "
                     "window slot %" PRIu64 " did not finish by the deadline",
                     base->rank, atomic_load(&win->fetching), win->chan->src, win->chan->slot);
            glucx_ucx_fail(base, GLUCX_ERR_TIMEOUT, text); /* tears down: nothing writes now */
        }
    }
    pthread_mutex_lock(&tx->lock);
    glucx_ucx_teardown_if_pending(tx);
    glucx_ucx_chan_t *c = win->chan;
    /* Placed (and broken) messages went into this window; those still held wait for the next
     * one. After a teardown nothing is progressed any more: whatever was under way is dropped
     * (its callbacks never run). */
    const int dead = atomic_load_explicit(&tx->torn_down, memory_order_acquire);
    glucx_ucx_msg_t **pp = &c->head;
    c->tail = NULL;
    while (*pp != NULL) {
        glucx_ucx_msg_t *m = *pp;
        const int unplaced = m->state == GLUCX_UCX_MSG_HELD || m->state == GLUCX_UCX_MSG_FETCHING ||
                             m->state == GLUCX_UCX_MSG_BOUNCING;
        if (!unplaced || (dead && m->state != GLUCX_UCX_MSG_HELD)) {
            *pp = m->next;
            if (fetch_under_way(m)) {
                msg_orphan(tx, m);
                continue;
            }
            if (m->kind == GLUCX_UCX_MSG_COPY)
                free(m->data); /* a held copy (BROKEN), else NULL */
            free(m);
        } else {
            c->tail = m;
            pp = &m->next;
        }
    }
    c->win = NULL;
    if (win->prev != NULL)
        win->prev->next = win->next;
    else
        tx->wins = win->next;
    if (win->next != NULL)
        win->next->prev = win->prev;
    free(win);
    chan_drop_if_idle(tx, c);
    glucx_status_t st = glucx_tx_failure(base);
    pthread_mutex_unlock(&tx->lock);
    return st;
}

void glucx_ucx_win_teardown(glucx_ucx_tx_t *tx)
{
    for (int b = 0; b < GLUCX_UCX_CHAN_BUCKETS; b++) {
        for (glucx_ucx_chan_t *c = tx->chans[b]; c != NULL; c = c->hnext) {
            for (glucx_ucx_msg_t *m = c->head; m != NULL; m = m->next) {
                if (m->state != GLUCX_UCX_MSG_HELD || m->data == NULL)
                    continue;
                if (m->kind == GLUCX_UCX_MSG_DESC)
                    ucp_am_data_release(tx->worker, m->data);
                else if (m->kind == GLUCX_UCX_MSG_COPY)
                    free(m->data);
                else
                    continue; /* rendezvous: left to UCX (see the top of this file) */
                m->data = NULL;
                m->state = GLUCX_UCX_MSG_BROKEN;
            }
        }
    }
    tx->held_bytes = 0;
}

void glucx_ucx_win_free(glucx_ucx_tx_t *tx)
{
    for (int b = 0; b < GLUCX_UCX_CHAN_BUCKETS; b++) {
        glucx_ucx_chan_t *c = tx->chans[b];
        while (c != NULL) {
            glucx_ucx_chan_t *cn = c->hnext;
            glucx_ucx_msg_t *m = c->head;
            while (m != NULL) {
                glucx_ucx_msg_t *mn = m->next;
                if (fetch_under_way(m)) {
                    msg_orphan(tx, m);
                } else {
                    if (m->kind == GLUCX_UCX_MSG_COPY)
                        free(m->data); /* a held copy; NULL once placed or released */
                    free(m);
                }
                m = mn;
            }
            free(c);
            c = cn;
        }
        tx->chans[b] = NULL;
    }
    while (tx->wins != NULL) {
        glucx_tx_win_t *w = tx->wins;
        tx->wins = w->next;
        free(w);
    }
}

void glucx_ucx_win_free_orphans(glucx_ucx_tx_t *tx)
{
    while (tx->orphans != NULL) {
        glucx_ucx_msg_t *m = tx->orphans;
        tx->orphans = m->next;
        if (m->kind == GLUCX_UCX_MSG_COPY)
            free(m->data);
        free(m);
    }
}
