/*
 * UCX transport: the compact-address rendezvous (ucx.h, glucx_tx_ucx_listen/fetch/unlisten).
 *
 * A rank that publishes a compact address instead of its record opens a UCP listener on its own
 * worker. A peer connects to it with a client-server endpoint (UCX's tcp connection manager, then
 * UCX's wireup over a network transport); the listening rank accepts, flushes the endpoint and
 * then sends its record on it as one tagged message, GLUCX_TX_TAG_CTRL | its rank |
 * GLUCX_UCX_CTRL_RECORD. (The flush first: UCX 1.13.1 reconfigures a client-server endpoint
 * when its wireup completes, and with MM_ERROR_HANDLING=y, which glucx sets, the lanes become
 * posix/sysv; a send posted before that uses the old thresholds: "Invalid am_short length: 478
 * (expected: <= 100)" from mm_ep.c and the record never leaves, or a crash for a synchronous
 * send. Checked on this machine; after the flush it works.) The
 * fetching rank posts one receive per listener it connects to, for any such message: each
 * arriving record is assigned to the rank its tag names, and a rank that arrives twice, was not
 * asked for or sends another length than announced is an error at once (a mixed-up address).
 *
 * Callbacks. The listener's connection handler and the flush callback run inside
 * ucp_worker_progress (lock held) and only queue their work; glucx_ucx_boot_progress accepts
 * requests and sends records after the progress call. Endpoint errors may be reported from
 * UCX's asynchronous thread: the callback only stores the status and wakes the fetching waiter
 * (wake_gen, ucp_worker_signal). Endpoint records are the callbacks' user data, so they stay
 * allocated until the worker is destroyed (tx->boot_closed).
 *
 * The endpoints use peer error handling (a client-server endpoint needs a network transport in
 * any case). glucx_ucx_boot_close ends the rendezvous once the communicator is connected or
 * failed (by then every peer that fetched this rank's record has received it: its handshake,
 * which follows its fetch, reached us), but closes nothing: the endpoints and the listener are
 * closed by glucx_ucx_boot_drain right before the worker is destroyed (glucx_ucx_boot_close
 * says why).
 *
 * The listener outlives them until every peer has connected to it once. UCX 1.13.1 handles a
 * connection request on its asynchronous thread and reads the listener there; one that arrives
 * after ucp_listener_destroy crashed the process (ucp_cm_server_conn_request_cb, SIGSEGV; seen
 * when a rank failed its connect and closed its listener while its peers were still connecting).
 * Each peer connects once, so after size - 1 requests none can come; a rank that failed first
 * keeps rejecting them and, at destroy, waits up to GLUCX_UCX_LISTEN_DRAIN_NS for the rest.
 */
#include "transport/ucx_int.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/time.h"

#define SRC_OF(tag) ((int)(((tag)&GLUCX_TX_TAG_SRC_MASK) >> GLUCX_TX_TAG_SRC_SHIFT))
#define RECORD_TAG (GLUCX_TX_TAG_CTRL | GLUCX_UCX_CTRL_RECORD)
/* A formatted socket address: IPv6 (46) with an interface scope (16), brackets and a port. */
#define WHERE_LEN 80

/* "10.0.0.1:4000" or "[fe80::1%eth0]:4000" */
static void format_sockaddr(const struct sockaddr_storage *sa, char *buf, size_t len)
{
    char host[NI_MAXHOST], port[NI_MAXSERV];
    socklen_t salen =
        sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (getnameinfo((const struct sockaddr *)sa, salen, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(buf, len, "(address family %d)", (int)sa->ss_family);
        return;
    }
    snprintf(buf, len, sa->ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

static glucx_ucx_boot_t *boot_get(glucx_ucx_tx_t *tx)
{
    if (tx->boot == NULL && (tx->boot = calloc(1, sizeof(*tx->boot))) != NULL) {
        tx->boot->tx = tx;
        tx->boot->open = 1;
        tx->boot->expect = tx->base.size - 1;
    }
    return tx->boot;
}

/* Append to a growing array of pointers. @return 0, or -1 when out of memory. */
static int push(void ***arr, int *n, int *cap, void *item)
{
    if (*n == *cap) {
        int ncap = *cap > 0 ? 2 * *cap : 8;
        void **a = realloc(*arr, (size_t)ncap * sizeof(*a));
        if (a == NULL)
            return -1;
        *arr = a;
        *cap = ncap;
    }
    (*arr)[(*n)++] = item;
    return 0;
}

static void boot_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    glucx_ucx_boot_ep_t *bep = arg;
    (void)ep;
    atomic_store_explicit(&bep->error, (int)status, memory_order_release);
    if (bep->rank >= 0) { /* a fetch: its waiter looks at once */
        atomic_fetch_add_explicit(&bep->tx->base.wake_gen, 1, memory_order_acq_rel);
        ucp_worker_signal(bep->tx->worker);
    }
}

/* Lock held. */
static glucx_ucx_boot_ep_t *boot_ep_new(glucx_ucx_tx_t *tx, int rank)
{
    glucx_ucx_boot_t *b = boot_get(tx);
    glucx_ucx_boot_ep_t *bep = calloc(1, sizeof(*bep));
    if (b == NULL || bep == NULL || push((void ***)&b->eps, &b->neps, &b->eps_cap, bep) != 0) {
        free(bep);
        return NULL;
    }
    bep->tx = tx;
    bep->boot = b;
    bep->rank = rank;
    atomic_init(&bep->error, 0);
    return bep;
}

/* Inside ucp_worker_progress (lock held): queue the request, accepted (or, once closed,
 * rejected) after the progress call. */
static void conn_cb(ucp_conn_request_h req, void *arg)
{
    glucx_ucx_boot_t *b = arg;
    b->requests++;
    if (push((void ***)&b->queued, &b->nqueued, &b->queued_cap, req) != 0) {
        glucx_warn("ucx: rank %d: out of memory for a connection to its listener: rejected",
                   b->tx->base.rank);
        ucp_listener_reject(b->listener, req);
        return;
    }
    b->work++;
}

/* Reject the queued connection requests (a closed rendezvous). Lock held, outside callbacks. */
static void reject_queued(glucx_ucx_boot_t *b)
{
    for (int i = 0; i < b->nqueued; i++)
        ucp_listener_reject(b->listener, b->queued[i]);
    b->nqueued = 0;
}

static void boot_flush_cb(void *request, ucs_status_t status, void *user_data)
{
    glucx_ucx_boot_ep_t *bep = user_data;
    bep->flush_req = NULL;
    ucp_request_free(request);
    if (status == UCS_OK) { /* otherwise the fetching side sees the failure itself */
        bep->flushed = 1;
        bep->boot->work++;
    }
}

static void boot_send_cb(void *request, ucs_status_t status, void *user_data)
{
    glucx_ucx_boot_ep_t *bep = user_data;
    (void)status; /* the fetching side sees a failure itself */
    bep->send_req = NULL;
    ucp_request_free(request);
}

/* Send the record on a flushed endpoint. Lock held, outside callbacks. */
static void boot_send(glucx_ucx_tx_t *tx, glucx_ucx_boot_ep_t *bep)
{
    glucx_ucx_boot_t *b = tx->boot;
    bep->flushed = 0;
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = boot_send_cb,
        .user_data = bep,
    };
    uint64_t tag = RECORD_TAG | ((uint64_t)tx->base.rank << GLUCX_TX_TAG_SRC_SHIFT);
    void *r = ucp_tag_send_nbx(bep->ep, b->record, b->record_len, tag, &param);
    if (UCS_PTR_IS_PTR(r))
        bep->send_req = r;
    else if (UCS_PTR_IS_ERR(r))
        glucx_warn("ucx: rank %d: cannot send its record (%zu bytes) to a peer that connected "
                   "to its listener: %s",
                   tx->base.rank, b->record_len, ucs_status_string(UCS_PTR_STATUS(r)));
}

int glucx_ucx_boot_progress(glucx_ucx_tx_t *tx)
{
    glucx_ucx_boot_t *b = tx->boot;
    int done = 0;
    b->work = 0;
    for (int i = 0; i < b->neps; i++) {
        if (b->eps[i]->flushed && b->eps[i]->ep != NULL) {
            boot_send(tx, b->eps[i]);
            done++;
        }
    }
    int n = b->nqueued;
    b->nqueued = 0;
    for (int i = 0; i < n; i++) {
        ucp_conn_request_h req = b->queued[i];
        glucx_ucx_boot_ep_t *bep = boot_ep_new(tx, -1);
        if (bep == NULL) {
            glucx_warn("ucx: rank %d: out of memory for a connection to its listener: rejected",
                       tx->base.rank);
            ucp_listener_reject(b->listener, req);
            continue;
        }
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .conn_request = req,
            .err_mode = UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = boot_ep_error_cb, .arg = bep},
        };
        ucs_status_t us = ucp_ep_create(tx->worker, &ep, &bep->ep);
        if (us != UCS_OK) {
            /* The peer's fetch fails on its own (connection refused or reset). */
            bep->ep = NULL;
            glucx_warn("ucx: rank %d: cannot accept a connection to its listener: %s",
                       tx->base.rank, ucs_status_string(us));
            continue;
        }
        done++;
        /* The record goes once the wireup is complete (see the top of this file). */
        ucp_request_param_t param = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            .cb.send = boot_flush_cb,
            .user_data = bep,
        };
        void *r = ucp_ep_flush_nbx(bep->ep, &param);
        if (r == NULL)
            boot_send(tx, bep);
        else if (UCS_PTR_IS_PTR(r))
            bep->flush_req = r;
        else
            glucx_warn("ucx: rank %d: cannot flush a connection to its listener: %s", tx->base.rank,
                       ucs_status_string(UCS_PTR_STATUS(r)));
    }
    return done;
}

void glucx_ucx_boot_close(glucx_ucx_tx_t *tx)
{
    glucx_ucx_boot_t *b = tx->boot;
    if (b == NULL)
        return;
    b->open = 0;
    if (b->listener != NULL)
        reject_queued(b);
    /* The listener and the endpoints stay open until the worker is destroyed (the listener in
     * glucx_ucx_boot_drain, the endpoints by ucp_worker_destroy). Closing them here freed
     * their file descriptors while this worker could still hold events for them that UCX's
     * asynchronous thread had queued as missed; another worker of the process (another
     * communicator, another rank's thread) that got the same descriptor number before this
     * one progressed again made UCX 1.13.1 abort in __ucs_async_poll_missed (async.c,
     * "handler->async == async": 2 of 60 ContextFactory runs). Destroying the worker drops
     * its missed events without polling them. The cost is one listener and one endpoint per
     * peer and direction (a TCP connection each) for the communicator's life. The record stays
     * too: a send of it may still be under way. */
    b->next = tx->boot_closed;
    tx->boot_closed = b;
    tx->boot = NULL;
}

void glucx_ucx_boot_drain(glucx_ucx_tx_t *tx)
{
    for (glucx_ucx_boot_t *b = tx->boot_closed; b != NULL; b = b->next) {
        if (b->listener == NULL)
            continue;
        /* A communicator that never connected (it failed first) cannot have requests whose
         * callbacks a progress call would run on freed memory (ucx_wait.c, teardown): wait a
         * while for the peers that still connect, rejecting them, so that none is in flight
         * when the listener goes. */
        int64_t deadline = glucx_now_ns() + GLUCX_UCX_LISTEN_DRAIN_NS;
        pthread_mutex_lock(&tx->lock);
        while (!tx->ever_connected && b->requests < b->expect && glucx_now_ns() < deadline) {
            ucp_worker_progress(tx->worker);
            reject_queued(b);
        }
        reject_queued(b);
        if (b->requests < b->expect)
            glucx_debug("ucx: rank %d: %d of %d peers did not connect to the listener before "
                        "it closed",
                        tx->base.rank, b->expect - b->requests, b->expect);
        ucp_listener_destroy(b->listener);
        b->listener = NULL;
        pthread_mutex_unlock(&tx->lock);
    }
    /* The endpoints: force-closed, their close requests released to UCX, and no progress
     * before the worker is destroyed (glucx_ucx_boot_close says why). ucp_worker_destroy
     * would refuse an endpoint whose flush is still pending ("should have been flushed"); the
     * force close completes such requests with an error (their callbacks' records live until
     * glucx_ucx_boot_free). */
    for (glucx_ucx_boot_t *b = tx->boot_closed; b != NULL; b = b->next) {
        for (int i = 0; i < b->neps; i++) {
            if (b->eps[i]->ep == NULL)
                continue;
            ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                         .flags = UCP_EP_CLOSE_FLAG_FORCE};
            void *r = ucp_ep_close_nbx(b->eps[i]->ep, &param);
            b->eps[i]->ep = NULL;
            if (UCS_PTR_IS_PTR(r))
                ucp_request_free(r);
        }
    }
}

void glucx_ucx_boot_free(glucx_ucx_tx_t *tx)
{
    while (tx->boot_closed != NULL) {
        glucx_ucx_boot_t *b = tx->boot_closed;
        tx->boot_closed = b->next;
        for (int i = 0; i < b->neps; i++)
            free(b->eps[i]);
        free(b->eps);
        free(b->queued);
        free(b->record);
        free(b);
    }
}

glucx_status_t glucx_tx_ucx_listen(glucx_tx_t *base, const char *host, const void *record,
                                   size_t bytes, struct sockaddr_storage *addr_p)
{
    if (base == NULL || host == NULL || record == NULL || bytes == 0 || addr_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "listen: NULL argument or empty record");
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (!tx->uctx->net)
        return glucx_error(GLUCX_ERR_UNSUPPORTED,
                           "listen: rank %d: UCX_TLS='%s' lets no network transport in (tcp or "
                           "InfiniBand), which UCX's client-server connections need",
                           base->rank, getenv("UCX_TLS") != NULL ? getenv("UCX_TLS") : "");
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, "0", &hints, &res);
    if (rc != 0 || res == NULL || res->ai_addrlen > sizeof(struct sockaddr_storage)) {
        if (res != NULL)
            freeaddrinfo(res);
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "listen: rank %d: '%s' is not a numeric IPv4 or IPv6 address: %s",
                           base->rank, host, rc != 0 ? gai_strerror(rc) : "too long");
    }
    glucx_status_t st = GLUCX_OK;
    pthread_mutex_lock(&tx->lock);
    glucx_ucx_boot_t *b = boot_get(tx);
    if (b == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "listen: rank %d: out of memory", base->rank);
        goto out;
    }
    if (b->listener != NULL || tx->connected || glucx_tx_failure(base) != GLUCX_OK) {
        st = glucx_error(GLUCX_ERR_INVALID_ARG,
                         "listen: rank %d: already listening, connected or failed", base->rank);
        goto out;
    }
    b->record = malloc(bytes);
    if (b->record == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "listen: rank %d: out of memory (%zu bytes)",
                         base->rank, bytes);
        goto out;
    }
    memcpy(b->record, record, bytes);
    b->record_len = bytes;
    ucp_listener_params_t lp = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = res->ai_addr, .addrlen = res->ai_addrlen},
        .conn_handler = {.cb = conn_cb, .arg = b},
    };
    ucs_status_t us = ucp_listener_create(tx->worker, &lp, &b->listener);
    if (us != UCS_OK) {
        b->listener = NULL;
        st = glucx_error(GLUCX_ERR_TRANSPORT, "listen: rank %d: UCX cannot listen on %s: %s",
                         base->rank, host, ucs_status_string(us));
        goto out;
    }
    ucp_listener_attr_t la = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    us = ucp_listener_query(b->listener, &la);
    if (us != UCS_OK) {
        st = glucx_error(GLUCX_ERR_TRANSPORT,
                         "listen: rank %d: cannot read the port of the listener on %s: %s",
                         base->rank, host, ucs_status_string(us));
        goto out;
    }
    /* The address as given (with an IPv6 scope), the port UCX chose. */
    struct sockaddr_storage bound;
    memset(&bound, 0, sizeof(bound));
    memcpy(&bound, res->ai_addr, res->ai_addrlen);
    if (bound.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&bound)->sin6_port =
            ((const struct sockaddr_in6 *)&la.sockaddr)->sin6_port;
    else
        ((struct sockaddr_in *)&bound)->sin_port =
            ((const struct sockaddr_in *)&la.sockaddr)->sin_port;
    *addr_p = bound;
    if (GLUCX_LOG_ON(GLUCX_LOG_DEBUG)) {
        char where[WHERE_LEN];
        format_sockaddr(&bound, where, sizeof(where));
        glucx_debug("ucx: rank %d serves its record (%zu bytes) at %s", base->rank, bytes, where);
    }
out:
    if (st != GLUCX_OK)
        glucx_ucx_boot_close(tx);
    pthread_mutex_unlock(&tx->lock);
    freeaddrinfo(res);
    return st;
}

void glucx_tx_ucx_unlisten(glucx_tx_t *base)
{
    if (base == NULL)
        return;
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    pthread_mutex_lock(&tx->lock);
    if (!atomic_load_explicit(&tx->torn_down, memory_order_acquire))
        glucx_ucx_boot_close(tx);
    pthread_mutex_unlock(&tx->lock);
}

/* The ranks (and their listeners) whose record has not arrived, for an error message. */
static void list_missing(glucx_ucx_boot_ep_t *const *client, int n, void *const *records, char *buf,
                         size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < len; i++) {
        if (records[client[i]->rank] != NULL)
            continue;
        char where[WHERE_LEN];
        format_sockaddr(&client[i]->addr, where, sizeof(where));
        int w = snprintf(buf + used, len - used, "%s%d (%s)", used > 0 ? ", " : "", client[i]->rank,
                         where);
        used = w > 0 && (size_t)w < len - used ? used + (size_t)w : len - 1;
    }
}

glucx_status_t glucx_tx_ucx_fetch(glucx_tx_t *base, const struct sockaddr_storage *from,
                                  const size_t *bytes, void **records_p, int64_t deadline_ns)
{
    if (base == NULL || from == NULL || bytes == NULL || records_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "fetch: NULL argument");
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    const int rank = base->rank, size = base->size;
    int n = 0;
    size_t max = 0;
    for (int r = 0; r < size; r++) {
        records_p[r] = NULL;
        if (from[r].ss_family == AF_UNSPEC)
            continue;
        if (r == rank || bytes[r] == 0 ||
            (from[r].ss_family != AF_INET && from[r].ss_family != AF_INET6))
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "fetch: rank %d: bad request for rank %d (%zu bytes, family %d)",
                               rank, r, bytes[r], (int)from[r].ss_family);
        n++;
        if (bytes[r] > max)
            max = bytes[r];
    }
    if (n == 0)
        return GLUCX_OK;
    if (!tx->uctx->net)
        return glucx_error(GLUCX_ERR_UNSUPPORTED,
                           "fetch: rank %d: UCX_TLS='%s' lets no network transport in (tcp or "
                           "InfiniBand), which UCX's client-server connections need",
                           rank, getenv("UCX_TLS") != NULL ? getenv("UCX_TLS") : "");

    glucx_status_t st = GLUCX_OK;
    char text[700];
    text[0] = '\0';
    glucx_tx_req_t *reqs = calloc((size_t)n, sizeof(*reqs));
    glucx_tx_req_t **pending = calloc((size_t)n, sizeof(*pending));
    void **bufs = calloc((size_t)n, sizeof(*bufs));
    glucx_ucx_boot_ep_t **client = calloc((size_t)n, sizeof(*client));
    int posted = 0, got = 0, client_gone = 0;
    if (reqs == NULL || pending == NULL || bufs == NULL || client == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "fetch: rank %d: out of memory for %d records", rank,
                         n);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if ((bufs[i] = malloc(max)) == NULL) {
            st = glucx_error(GLUCX_ERR_NO_MEMORY, "fetch: rank %d: out of memory (%d x %zu bytes)",
                             rank, n, max);
            goto out;
        }
    }
    /* One receive per listener, for a record from any rank: the tag names whose it is. */
    for (int i = 0; i < n && st == GLUCX_OK; i++) {
        st = glucx_ucx_recv_raw(tx, -1, RECORD_TAG, ~GLUCX_TX_TAG_SRC_MASK, bufs[i], max, &reqs[i]);
        posted += st == GLUCX_OK;
    }
    if (st != GLUCX_OK) {
        snprintf(text, sizeof(text), "fetch: rank %d: cannot post a receive: %s", rank,
                 glucx_error_text());
        goto out;
    }
    pthread_mutex_lock(&tx->lock);
    for (int r = 0, i = 0; r < size && st == GLUCX_OK; r++) {
        if (from[r].ss_family == AF_UNSPEC)
            continue;
        glucx_ucx_boot_ep_t *bep = boot_ep_new(tx, r);
        if (bep == NULL) {
            st = glucx_error(GLUCX_ERR_NO_MEMORY, "fetch: rank %d: out of memory", rank);
            snprintf(text, sizeof(text), "%s", glucx_error_text());
            break;
        }
        bep->addr = from[r];
        client[i++] = bep;
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                          UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
            .sockaddr = {.addr = (const struct sockaddr *)&bep->addr,
                         .addrlen = bep->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                                    : sizeof(struct sockaddr_in)},
            .err_mode = UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = boot_ep_error_cb, .arg = bep},
        };
        ucs_status_t us = ucp_ep_create(tx->worker, &ep, &bep->ep);
        if (us != UCS_OK) {
            bep->ep = NULL;
            char where[WHERE_LEN];
            format_sockaddr(&bep->addr, where, sizeof(where));
            st = glucx_ucx_status(us);
            if (st == GLUCX_ERR_TRANSPORT || st == GLUCX_OK)
                st = GLUCX_ERR_PEER_FAILED;
            snprintf(text, sizeof(text),
                     "fetch: rank %d cannot connect to rank %d's listener at %s: %s", rank, r,
                     where, ucs_status_string(us));
        }
    }
    pthread_mutex_unlock(&tx->lock);
    if (st != GLUCX_OK)
        goto out;

    while (got < n) {
        unsigned gen = atomic_load_explicit(&base->wake_gen, memory_order_acquire);
        /* A listener that cannot be reached fails the fetch at once. The endpoint records are
         * read under the lock: a failure from another thread (glucx_comm_abort) frees them. */
        pthread_mutex_lock(&tx->lock);
        if (tx->boot == NULL) {
            st = glucx_tx_failure(base) != GLUCX_OK ? glucx_tx_failure(base) : GLUCX_ERR_ABORTED;
            snprintf(text, sizeof(text), "fetch: rank %d: the transport failed: %s", rank,
                     base->failure);
            client_gone = 1;
        }
        for (int i = 0; i < n && st == GLUCX_OK; i++) {
            int err = atomic_load_explicit(&client[i]->error, memory_order_acquire);
            if (err == 0 || records_p[client[i]->rank] != NULL)
                continue;
            char where[WHERE_LEN];
            format_sockaddr(&client[i]->addr, where, sizeof(where));
            st = GLUCX_ERR_PEER_FAILED;
            snprintf(text, sizeof(text),
                     "fetch: rank %d cannot get rank %d's address record from its listener at "
                     "%s: %s",
                     rank, client[i]->rank, where, ucs_status_string((ucs_status_t)err));
        }
        pthread_mutex_unlock(&tx->lock);
        if (st != GLUCX_OK)
            goto out;
        int m = 0;
        for (int i = 0; i < n; i++)
            if (bufs[i] != NULL)
                pending[m++] = &reqs[i];
        glucx_status_t ws = glucx_ucx_wait_any(base, pending, m, deadline_ns, gen);
        if (ws == GLUCX_ERR_TIMEOUT) {
            char missing[400] = "";
            pthread_mutex_lock(&tx->lock);
            if (tx->boot != NULL)
                list_missing(client, n, records_p, missing, sizeof(missing));
            pthread_mutex_unlock(&tx->lock);
            st = GLUCX_ERR_TIMEOUT;
            snprintf(text, sizeof(text),
                     "fetch: rank %d of %d: no address record by the deadline from %d rank(s) "
                     "(their listeners): %s",
                     rank, size, n - got, missing);
            goto out;
        }
        if (ws != GLUCX_OK && ws != GLUCX_INPROGRESS) {
            st = ws;
            snprintf(text, sizeof(text), "fetch: rank %d: %s", rank, glucx_error_text());
            goto out;
        }
        for (int i = 0; i < n; i++) {
            if (bufs[i] == NULL || !glucx_tx_req_done(&reqs[i]))
                continue;
            const glucx_tx_req_t *q = &reqs[i];
            int src = SRC_OF(q->tag);
            if (q->status == GLUCX_ERR_TRUNCATED || q->status == GLUCX_OK) {
                if (src == rank || src >= size || from[src].ss_family == AF_UNSPEC) {
                    st = GLUCX_ERR_MISMATCH;
                    snprintf(text, sizeof(text),
                             "fetch: rank %d of %d received the address record of a rank %d, "
                             "whose listener it was not given: some rank's address names "
                             "another rank's listener (mixed-up or stale addresses)",
                             rank, size, src);
                } else if (records_p[src] != NULL) {
                    st = GLUCX_ERR_MISMATCH;
                    snprintf(text, sizeof(text),
                             "fetch: rank %d received rank %d's address record twice: another "
                             "rank's address names rank %d's listener (mixed-up or stale "
                             "addresses)",
                             rank, src, src);
                } else if (q->status == GLUCX_ERR_TRUNCATED || q->bytes != bytes[src]) {
                    st = GLUCX_ERR_MISMATCH;
                    snprintf(text, sizeof(text),
                             "fetch: rank %d received rank %d's address record with %zu bytes, "
                             "but rank %d's address announces %zu (a mixed-up or stale "
                             "address)",
                             rank, src, q->bytes, src, bytes[src]);
                }
            } else {
                st = q->status;
                snprintf(text, sizeof(text), "fetch: rank %d: receiving an address record: %s",
                         rank, glucx_status_string(q->status));
            }
            if (st != GLUCX_OK)
                goto out;
            records_p[src] = bufs[i];
            bufs[i] = NULL;
            got++;
        }
    }

out:
    if (st != GLUCX_OK) {
        /* The receives still posted hold our buffers: failing the transport completes them
         * (and closes the listener and the endpoints) before they are freed. */
        if (posted > got && !client_gone)
            glucx_ucx_fail(base, st, text);
        for (int r = 0; r < size; r++) {
            free(records_p[r]);
            records_p[r] = NULL;
        }
        st = glucx_error(st, "%s", text[0] != '\0' ? text : glucx_error_text());
    }
    if (bufs != NULL)
        for (int i = 0; i < n; i++)
            free(bufs[i]);
    free(bufs);
    free(reqs);
    free(pending);
    free(client);
    return st;
}
