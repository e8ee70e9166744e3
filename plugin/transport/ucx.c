/* UCX transport: context, worker, endpoints and handshake, peer descriptions, destroy. */
#include "transport/ucx.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/ucx_int.h"
#include "util/error.h"
#include "util/fork.h"
#include "util/time.h"

#define UCX_DEFAULT_KEEPALIVE_NS 20000000000LL
/* UCX's TCP segment size that glucx sets (glucx_tx_ucx_context_create says why) */
#define GLUCX_UCX_TCP_SEG "256K"

static glucx_status_t config_set(ucp_config_t *cfg, const char *name, const char *value)
{
    ucs_status_t us = ucp_config_modify(cfg, name, value);
    if (us != UCS_OK)
        return glucx_error(GLUCX_ERR_TRANSPORT, "ucx context: cannot set %s=%s: %s", name, value,
                           ucs_status_string(us));
    return GLUCX_OK;
}

/* Which transports UCX_TLS (NULL: not set) lets in: *mm = posix or sysv, *cma = cma, *net = a
 * network transport (tcp, or an InfiniBand one: ib, rc*, ud*, dc*), *tcp_p = tcp. Setting the mm
 * options when they are all off makes UCX warn about an unused ("invalid") configuration;
 * client-server endpoints (compact addresses) need a network transport. */
static void tls_enabled(const char *tls, int *mm, int *cma, int *net, int *tcp_p)
{
    if (tls == NULL || tls[0] == '\0') {
        *mm = *cma = *net = *tcp_p = 1;
        return;
    }
    int negate = tls[0] == '^';
    int all = 0, posix = 0, sysv = 0, c = 0, tcp = 0, ib = 0, rc = 0, ud = 0, dc = 0;
    for (const char *p = tls + negate; *p != '\0';) {
        size_t n = strcspn(p, ",");
        const char *item = p;
        size_t len = n;
        if (len > 0 && *item == '\\') { /* explicit name, no alias */
            item++;
            len--;
        }
#define NAMED(s) (len == strlen(s) && strncmp(item, s, len) == 0)
#define PREFIX(s) (len >= strlen(s) && strncmp(item, s, strlen(s)) == 0)
        if (NAMED("all"))
            all = 1;
        if (NAMED("sm") || NAMED("shm"))
            posix = sysv = c = 1;
        if (NAMED("mm"))
            posix = sysv = 1;
        if (NAMED("posix"))
            posix = 1;
        if (NAMED("sysv"))
            sysv = 1;
        if (NAMED("cma"))
            c = 1;
        if (NAMED("tcp"))
            tcp = 1;
        if (NAMED("ib"))
            ib = 1;
        if (PREFIX("rc"))
            rc = 1;
        if (PREFIX("ud"))
            ud = 1;
        if (PREFIX("dc"))
            dc = 1;
#undef PREFIX
#undef NAMED
        p += n;
        if (*p == ',')
            p++;
    }
    if (negate) {
        *mm = !(posix && sysv);
        *cma = !c;
        *net = !(tcp && (ib || (rc && ud && dc)));
        *tcp_p = !tcp;
    } else {
        *mm = all || posix || sysv;
        *cma = all || c;
        *net = all || tcp || ib || rc || ud || dc;
        *tcp_p = all || tcp;
    }
}

void glucx_tx_ucx_context_set_spin(glucx_ucx_context_t *uctx, int64_t spin_ns)
{
    if (uctx != NULL)
        uctx->spin_ns = spin_ns < 0 ? 0 : spin_ns;
}

void glucx_tx_ucx_context_set_yield(glucx_ucx_context_t *uctx, glucx_ucx_yield_t mode)
{
    if (uctx != NULL && (mode == GLUCX_UCX_YIELD_AUTO || mode == GLUCX_UCX_YIELD_ALWAYS ||
                         mode == GLUCX_UCX_YIELD_NEVER))
        uctx->yield = mode;
}

glucx_ucx_yield_t glucx_tx_ucx_yield(glucx_tx_t *base)
{
    return base != NULL ? glucx_ucx_tx(base)->yield : GLUCX_UCX_YIELD_AUTO;
}

/* CPUs this process may run on (its affinity mask), 0 when unknown. */
static int usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < INT32_MAX ? (int)n : 0;
}

glucx_status_t glucx_tx_ucx_context_set_net_seg(glucx_ucx_context_t *uctx, size_t seg_bytes,
                                                int local_too)
{
    if (uctx == NULL || seg_bytes > ((size_t)1 << 30) ||
        (seg_bytes > 0 && seg_bytes < GLUCX_UCX_NET_SEG_MIN))
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "ucx context: segment size %zu bytes: %s (0 or %zu bytes to 1 GiB)",
                           seg_bytes, uctx == NULL ? "no context" : "out of range",
                           GLUCX_UCX_NET_SEG_MIN);
    uctx->net_seg = (uint32_t)seg_bytes | (seg_bytes > 0 && local_too ? GLUCX_UCX_SEG_LOCAL : 0);
    return GLUCX_OK;
}

void glucx_tx_ucx_context_set_hold(glucx_ucx_context_t *uctx, size_t hold_bytes)
{
    if (uctx != NULL)
        uctx->hold_max = hold_bytes;
}

glucx_status_t glucx_tx_ucx_context_create(const char *net_devices, int64_t keepalive_ms,
                                           glucx_ucx_context_t **uctx_p)
{
    glucx_status_t st;
    if (uctx_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "ucx context: NULL output pointer");
    glucx_ucx_context_t *uctx = calloc(1, sizeof(*uctx));
    if (uctx == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "ucx context: out of memory");
    ucp_config_t *cfg;
    ucs_status_t us = ucp_config_read(NULL, NULL, &cfg);
    if (us != UCS_OK) {
        st = glucx_error(GLUCX_ERR_TRANSPORT, "ucx context: cannot read the UCX configuration: %s",
                         ucs_status_string(us));
        goto err_free;
    }
    if (net_devices != NULL && (st = config_set(cfg, "NET_DEVICES", net_devices)) != GLUCX_OK)
        goto err_cfg;
    int mm, cma, net, tcp;
    tls_enabled(getenv("UCX_TLS"), &mm, &cma, &net, &tcp);
    uctx->shm = mm || cma;
    uctx->net = net;
    /* Local peers (same boot, PID namespace and host) get endpoints without error handling.
     * Peer error handling stays for the others; one of those on this machine (another PID
     * namespace) can still share memory with us, and peer error handling drops posix/sysv
     * unless they expose it. UCX 1.13 applies the base name MM_ERROR_HANDLING to both through
     * ucp_config_modify (the POSIX_/SYSV_ names are not applied from there). The user's own
     * setting wins. */
    if (getenv("UCX_MM_ERROR_HANDLING") == NULL && getenv("UCX_POSIX_ERROR_HANDLING") == NULL &&
        getenv("UCX_SYSV_ERROR_HANDLING") == NULL && mm &&
        (st = config_set(cfg, "MM_ERROR_HANDLING", "y")) != GLUCX_OK)
        goto err_cfg;
    /* TCP segments of GLUCX_UCX_TCP_SEG (256 KiB) instead of UCX's 8 KiB: UCX's TCP transport
     * then sends messages up to the segment size eagerly instead of by its rendezvous. Between
     * two hosts, a rendezvous transfer each way at once ran at half the link (the two
     * directions took turns: 2 ranks, ring allgather of 16 MiB, 137 ms instead of 73; one
     * direction alone fills the link either way), and the pipelined rows send segments of at
     * most 256 KiB (GLUCX_COLL_RING_SEG_BYTES), which then all go eagerly (docs/perf.md, "Two
     * hosts sending to each other"). ucp_config_modify takes the names without the
     * transport's prefix (as for MM_ERROR_HANDLING); of the transports UCX 1.13 builds here only
     * TCP has them. The user's own setting of either wins. */
    if (getenv("UCX_TCP_TX_SEG_SIZE") == NULL && getenv("UCX_TCP_RX_SEG_SIZE") == NULL && tcp) {
        if ((st = config_set(cfg, "TX_SEG_SIZE", GLUCX_UCX_TCP_SEG)) != GLUCX_OK ||
            (st = config_set(cfg, "RX_SEG_SIZE", GLUCX_UCX_TCP_SEG)) != GLUCX_OK)
            goto err_cfg;
        /* and a single message larger than that goes as segments of it (between hosts) */
        uctx->net_seg = (uint32_t)GLUCX_UCX_NET_SEG_DEFAULT;
    }
    /* Eager sends copied, never zero-copy: when a peer on another host dies during a large
     * collective, UCX 1.13's TCP transport can deliver a zero-copy send's completion to a
     * request that already completed, and a survivor aborts in UCX (uct_iface.h:884
     * "Assertion comp->count > 0", 4 of 11 runs) instead of returning the peer's failure.
     * Copied eager sends avoided it in every run, for up to ~3% on 8-rank rows of 4-16 MiB
     * (docs/perf.md, "A UCX abort after a peer on another host died"; tests/cluster fault). Only
     * TCP has zero-copy eager sends of the transports glucx uses. The user's own UCX_ZCOPY_THRESH
     * wins. */
    if (getenv("UCX_ZCOPY_THRESH") == NULL && tcp &&
        (st = config_set(cfg, "ZCOPY_THRESH", "inf")) != GLUCX_OK)
        goto err_cfg;
    /* No UCP registration cache: its creation in ucp_init() installs a UCM memory-event
     * handler, which takes UCM's lock for writing, and every mmap/munmap in the process holds
     * that lock for reading (libucs hooks them as soon as it is loaded). In a child forked
     * while another thread was inside mmap the lock stays held by a thread that does not
     * exist there, and ucp_init() would block forever. The transports glucx uses (posix, sysv,
     * cma, tcp, self) need no costly registration, so the cache saves nothing. The user's own
     * UCX_RCACHE_ENABLE wins, except in a forked child, where it would bring the hang back. */
    const char *rcache = getenv("UCX_RCACHE_ENABLE");
    if (rcache == NULL || glucx_fork_forked()) {
        if (rcache != NULL && strcasecmp(rcache, "n") != 0 && strcasecmp(rcache, "no") != 0)
            glucx_info("ucx context: UCX_RCACHE_ENABLE=%s ignored in a forked process (its "
                       "registration cache could block ucp_init on UCM's memory-hook lock)",
                       rcache);
        if ((st = config_set(cfg, "RCACHE_ENABLE", "n")) != GLUCX_OK)
            goto err_cfg;
    }
    uctx->keepalive_ns = UCX_DEFAULT_KEEPALIVE_NS;
    uctx->spin_ns = GLUCX_UCX_SPIN_NS;
    uctx->hold_max = GLUCX_UCX_HOLD_DEFAULT;
    if (keepalive_ms > 0) {
        char value[32];
        snprintf(value, sizeof(value), "%" PRId64 "ms", keepalive_ms);
        if ((st = config_set(cfg, "KEEPALIVE_INTERVAL", value)) != GLUCX_OK)
            goto err_cfg;
        uctx->keepalive_ns = keepalive_ms * 1000000;
    }
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_NAME | UCP_PARAM_FIELD_REQUEST_SIZE |
                      UCP_PARAM_FIELD_REQUEST_INIT,
        .features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 0,
        .name = "glucx",
        /* glucx's own word in every request (ucx_int.h, glucx_ucx_req_area_t) */
        .request_size = sizeof(glucx_ucx_req_area_t),
        .request_init = glucx_ucx_req_init,
    };
    us = ucp_init(&params, cfg, &uctx->ucp);
    if (us != UCS_OK) {
        st = glucx_error(GLUCX_ERR_TRANSPORT, "ucx context: ucp_init failed: %s",
                         ucs_status_string(us));
        goto err_cfg;
    }
    ucp_config_release(cfg);
    *uctx_p = uctx;
    return GLUCX_OK;

err_cfg:
    ucp_config_release(cfg);
err_free:
    free(uctx);
    return st;
}

void glucx_tx_ucx_context_destroy(glucx_ucx_context_t *uctx)
{
    if (uctx == NULL)
        return;
    ucp_cleanup(uctx->ucp);
    free(uctx);
}

static void ucx_describe_peer(glucx_tx_t *base, int peer, char *buf, size_t len)
{
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    if (buf == NULL || len == 0)
        return;
    if (peer < 0 || peer >= base->size)
        snprintf(buf, len, "invalid peer %d", peer);
    else if (tx->desc[peer][0] == '\0')
        snprintf(buf, len, "unconnected");
    else
        snprintf(buf, len, "%s", tx->desc[peer]);
}

static void free_tx(glucx_ucx_tx_t *tx)
{
    if (tx->pidfd != NULL)
        for (int r = 0; r < tx->base.size; r++)
            if (tx->pidfd[r] >= 0)
                close(tx->pidfd[r]);
    free(tx->eps);
    free(tx->peers);
    free(tx->ep_failed);
    free(tx->departed);
    free(tx->desc);
    free(tx->blob);
    free(tx->local);
    free(tx->seg);
    free(tx->pid);
    free(tx->pidfd);
    free(tx->pfds);
    free(tx->chk);
    free(tx->pfd_rank);
    free(tx->put_seq_out);
    free(tx->put_seq_in);
    free(tx->ready_in);
    free(tx->ready_wait);
    free(tx);
}

/* Control messages that arrived after the control receive was cancelled (a peer's leave or
 * notice crossing this rank's own teardown) are taken, so that destroying the worker does not
 * warn about unexpected messages. They are small (eager): each completes in place, without
 * progress (the worker is no longer progressed: see teardown). */
static void drain_ctrl(glucx_ucx_tx_t *tx)
{
    for (int i = 0; i < 4 * tx->base.size + 16; i++) {
        ucp_tag_recv_info_t info;
        ucp_tag_message_h msg =
            ucp_tag_probe_nb(tx->worker, GLUCX_TX_TAG_CTRL, GLUCX_TX_TAG_CTRL, 1, &info);
        if (msg == NULL)
            return;
        ucp_request_param_t param = {.op_attr_mask = 0};
        void *r =
            ucp_tag_msg_recv_nbx(tx->worker, &tx->ctrl_buf, sizeof(tx->ctrl_buf), msg, &param);
        if (UCS_PTR_IS_PTR(r))
            ucp_request_free(r); /* UCX releases it when done; ctrl_buf outlives the worker */
    }
}

static void ucx_destroy(glucx_tx_t *base)
{
    if (base == NULL)
        return;
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    glucx_ucx_record_failure(tx, GLUCX_ERR_ABORTED, GLUCX_UCX_FAIL_QUIET, -1, NULL,
                             "transport destroyed");
    pthread_mutex_lock(&tx->lock);
    glucx_ucx_teardown_if_pending(tx);
    pthread_mutex_unlock(&tx->lock);
    if (tx->ctrl_req != NULL) {
        /* Matched but not finished when cancelled: let it finish (bounded). */
        int64_t deadline = glucx_now_ns() + GLUCX_UCX_FLUSH_WAIT_NS;
        while (tx->ctrl_req != NULL && glucx_now_ns() < deadline)
            ucp_worker_progress(tx->worker);
    }
    if (tx->ctrl_req == NULL)
        drain_ctrl(tx);
    glucx_ucx_win_free(tx);
    glucx_ucx_boot_drain(tx);
    ucp_worker_release_address(tx->worker, tx->addr);
    ucp_worker_destroy(tx->worker);
    glucx_ucx_win_free_orphans(tx);
    glucx_ucx_boot_free(tx);
    pthread_cond_destroy(&tx->cond);
    pthread_mutex_destroy(&tx->lock);
    pthread_mutex_destroy(&tx->fail_lock);
    free_tx(tx);
}

/* This process's identity (fields left empty when unknown: such a process is never local). */
static void read_ident(glucx_ucx_ident_t *id)
{
    memset(id, 0, sizeof(*id));
    id->magic = GLUCX_UCX_IDENT_MAGIC;
    id->head_len = sizeof(*id);
    id->pid = (int32_t)getpid();
    struct stat sb;
    if (stat("/proc/self/ns/pid", &sb) == 0) {
        id->pidns_ino = (uint64_t)sb.st_ino;
        id->pidns_dev = (uint64_t)sb.st_dev;
    }
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(id->boot_id, sizeof(id->boot_id), f) == NULL)
            id->boot_id[0] = '\0';
        id->boot_id[strcspn(id->boot_id, "\n")] = '\0';
        fclose(f);
    }
    if (gethostname(id->host, sizeof(id->host) - 1) != 0)
        id->host[0] = '\0';
    id->host[sizeof(id->host) - 1] = '\0';
}

/* Same boot of the same kernel, same PID namespace, same host name. */
static int same_machine(const glucx_ucx_ident_t *a, const glucx_ucx_ident_t *b)
{
    return a->boot_id[0] != '\0' && a->pidns_ino != 0 && strcmp(a->boot_id, b->boot_id) == 0 &&
           a->pidns_ino == b->pidns_ino && a->pidns_dev == b->pidns_dev &&
           strcmp(a->host, b->host) == 0;
}

static const glucx_tx_ops_t ucx_ops = {
    .isend = glucx_ucx_isend,
    .isend_sync = glucx_ucx_isend_sync,
    .irecv = glucx_ucx_irecv,
    .progress = glucx_ucx_progress,
    .wait = glucx_ucx_wait,
    .wait_any = glucx_ucx_wait_any,
    .wake = glucx_ucx_wake,
    .cancel = glucx_ucx_cancel,
    .probe = glucx_ucx_probe,
    .put = glucx_ucx_put,
    .win_open = glucx_ucx_win_open,
    .win_wait = glucx_ucx_win_wait,
    .win_close = glucx_ucx_win_close,
    .fail = glucx_ucx_fail,
    .describe_peer = ucx_describe_peer,
    .destroy = ucx_destroy,
};

glucx_status_t glucx_tx_ucx_create(glucx_ucx_context_t *uctx, int rank, int size, glucx_tx_t **tx_p,
                                   const void **addr_p, size_t *addr_len_p)
{
    glucx_status_t st;
    ucs_status_t us;
    if (uctx == NULL || tx_p == NULL || addr_p == NULL || addr_len_p == NULL || size < 1 ||
        size > (1 << GLUCX_TX_TAG_SRC_BITS) || rank < 0 || rank >= size)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "ucx create: rank %d, size %d (at most %d ranks) or NULL argument", rank,
                           size, 1 << GLUCX_TX_TAG_SRC_BITS);
    glucx_ucx_tx_t *tx = calloc(1, sizeof(*tx));
    if (tx == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "ucx create: out of memory");
    tx->base.ops = &ucx_ops;
    tx->base.rank = rank;
    tx->base.size = size;
    atomic_init(&tx->base.failed, 0);
    atomic_init(&tx->fail_pending, 0);
    atomic_init(&tx->torn_down, 0);
    tx->uctx = uctx;
    tx->spin_ns = uctx->spin_ns;
    tx->yield = GLUCX_UCX_YIELD_AUTO;
    int64_t tick = uctx->keepalive_ns / 2;
    tx->tick_ns = tick < 10000000 ? 10000000 : tick > 1000000000 ? 1000000000 : tick;
    tx->eps = calloc((size_t)size, sizeof(*tx->eps));
    tx->peers = calloc((size_t)size, sizeof(*tx->peers));
    tx->ep_failed = calloc((size_t)size, 1);
    tx->departed = calloc((size_t)size, 1);
    tx->suspect_rank = -1;
    tx->desc = calloc((size_t)size, sizeof(*tx->desc));
    tx->local = calloc((size_t)size, 1);
    tx->seg = calloc((size_t)size, sizeof(*tx->seg));
    tx->pid = calloc((size_t)size, sizeof(*tx->pid));
    tx->pidfd = malloc((size_t)size * sizeof(*tx->pidfd));
    tx->pfds = calloc((size_t)size + 1, sizeof(*tx->pfds));
    tx->chk = calloc((size_t)size, sizeof(*tx->chk));
    tx->pfd_rank = calloc((size_t)size, sizeof(*tx->pfd_rank));
    if (tx->eps == NULL || tx->peers == NULL || tx->ep_failed == NULL || tx->departed == NULL ||
        tx->desc == NULL || tx->local == NULL || tx->seg == NULL || tx->pid == NULL ||
        tx->pidfd == NULL || tx->pfds == NULL || tx->chk == NULL || tx->pfd_rank == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "ucx create: out of memory for %d peers", size);
        goto err_free;
    }
    for (int r = 0; r < size; r++) {
        tx->peers[r].tx = tx;
        tx->peers[r].rank = r;
        tx->pidfd[r] = -1;
    }
    read_ident(&tx->ident);
    tx->ident.net_seg = uctx->net_seg;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tx->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&tx->lock, NULL);
    pthread_mutex_init(&tx->fail_lock, NULL);

    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };
    us = ucp_worker_create(uctx->ucp, &wp, &tx->worker);
    if (us != UCS_OK) {
        st = glucx_error(GLUCX_ERR_TRANSPORT, "ucx create: rank %d: cannot create a worker: %s",
                         rank, ucs_status_string(us));
        goto err_sync;
    }
    us = ucp_worker_get_efd(tx->worker, &tx->efd);
    if (us != UCS_OK) {
        st = glucx_error(GLUCX_ERR_TRANSPORT,
                         "ucx create: rank %d: no event descriptor for the worker: %s", rank,
                         ucs_status_string(us));
        goto err_worker;
    }
    us = ucp_worker_get_address(tx->worker, &tx->addr, &tx->addr_len);
    if (us != UCS_OK) {
        st = glucx_error(GLUCX_ERR_TRANSPORT, "ucx create: rank %d: cannot get the address: %s",
                         rank, ucs_status_string(us));
        goto err_worker;
    }
    tx->blob_len = sizeof(tx->ident) + tx->addr_len;
    tx->blob = malloc(tx->blob_len);
    if (tx->blob == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "ucx create: rank %d: out of memory (%zu bytes)",
                         rank, tx->blob_len);
        goto err_addr;
    }
    memcpy(tx->blob, &tx->ident, sizeof(tx->ident));
    memcpy((char *)tx->blob + sizeof(tx->ident), tx->addr, tx->addr_len);
    tx->pfds[0].fd = tx->efd;
    tx->pfds[0].events = POLLIN;
    st = glucx_ucx_win_init(tx);
    if (st != GLUCX_OK)
        goto err_addr;
    pthread_mutex_lock(&tx->lock);
    st = glucx_ucx_post_ctrl(tx);
    pthread_mutex_unlock(&tx->lock);
    if (st != GLUCX_OK)
        goto err_addr;
    *tx_p = &tx->base;
    *addr_p = tx->blob;
    *addr_len_p = tx->blob_len;
    return GLUCX_OK;

err_addr:
    ucp_worker_release_address(tx->worker, tx->addr);
err_worker:
    ucp_worker_destroy(tx->worker);
err_sync:
    pthread_cond_destroy(&tx->cond);
    pthread_mutex_destroy(&tx->lock);
    pthread_mutex_destroy(&tx->fail_lock);
err_free:
    free_tx(tx);
    return st;
}

/* "sysv/memory, cma/memory" from the lane lines of ucp_ep_print_info ("lane[0]:  3:sysv/memory.0
 * ...").
 */
static void summarize_lanes(const char *info, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *p = strstr(info, "lane["); p != NULL; p = strstr(p + 1, "lane[")) {
        const char *q = strstr(p, "]:");
        if (q == NULL)
            break;
        q += 2;
        while (*q == ' ')
            q++;
        const char *colon = q;
        while (*colon >= '0' && *colon <= '9')
            colon++;
        if (*colon == ':')
            q = colon + 1;
        size_t n = strcspn(q, " \t\n");
        /* drop the ".<path index>" suffix of the device */
        size_t end = n;
        while (end > 0 && q[end - 1] >= '0' && q[end - 1] <= '9')
            end--;
        if (end > 0 && end < n && q[end - 1] == '.')
            n = end - 1;
        if (n == 0 || memchr(q, '/', n) == NULL)
            continue;
        char item[GLUCX_UCX_DESC_LEN];
        snprintf(item, sizeof(item), "%.*s", (int)n, q);
        /* skip duplicates (several lanes on one transport) */
        int dup = 0;
        for (const char *s = out; (s = strstr(s, item)) != NULL; s++) {
            size_t il = strlen(item);
            if ((s == out || s[-1] == ' ') && (s[il] == '\0' || s[il] == ',')) {
                dup = 1;
                break;
            }
        }
        if (dup)
            continue;
        int w = snprintf(out + used, len - used, "%s%s", used > 0 ? ", " : "", item);
        if (w < 0 || (size_t)w >= len - used) {
            out[used] = '\0';
            break;
        }
        used += (size_t)w;
    }
    if (out[0] == '\0')
        snprintf(out, len, "unknown");
}

static void describe_endpoints(glucx_ucx_tx_t *tx)
{
    for (int r = 0; r < tx->base.size; r++) {
        char *text = NULL;
        size_t text_len = 0;
        FILE *f = open_memstream(&text, &text_len);
        if (f == NULL) {
            snprintf(tx->desc[r], sizeof(tx->desc[r]), "unknown");
            continue;
        }
        pthread_mutex_lock(&tx->lock);
        if (tx->eps[r] != NULL)
            ucp_ep_print_info(tx->eps[r], f);
        pthread_mutex_unlock(&tx->lock);
        fclose(f);
        summarize_lanes(text != NULL ? text : "", tx->desc[r], sizeof(tx->desc[r]));
        free(text);
        glucx_info("ucx: rank %d reaches rank %d over %s", tx->base.rank, r, tx->desc[r]);
    }
}

glucx_status_t glucx_tx_ucx_connect(glucx_tx_t *base, const void *const *addrs, const size_t *lens,
                                    int64_t deadline_ns)
{
    if (base == NULL || addrs == NULL || lens == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "connect: NULL argument");
    glucx_ucx_tx_t *tx = glucx_ucx_tx(base);
    int rank = base->rank, size = base->size;
    glucx_status_t st = GLUCX_OK;
    if (size < 1 || size > (1 << GLUCX_TX_TAG_SRC_BITS))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "connect: bad size %d", size);
    if (glucx_tx_failure(base) != GLUCX_OK)
        return glucx_error(glucx_tx_failure(base), "connect: rank %d: transport failed: %s", rank,
                           base->failure);
    if (tx->connected)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "connect: rank %d: already connected", rank);
    for (int r = 0; r < size; r++)
        if (addrs[r] == NULL || lens[r] == 0)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "connect: rank %d: no address for rank %d",
                               rank, r);

    /* Each blob: the owner's identity, then its UCX worker address. */
    glucx_ucx_ident_t *ids = calloc((size_t)size, sizeof(*ids));
    if (ids == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "connect: out of memory for %d peers", size);
    for (int r = 0; r < size; r++) {
        if (lens[r] > sizeof(ids[r]))
            memcpy(&ids[r], addrs[r], sizeof(ids[r]));
        if (lens[r] <= sizeof(ids[r]) || ids[r].magic != GLUCX_UCX_IDENT_MAGIC ||
            ids[r].head_len != sizeof(ids[r])) {
            free(ids);
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "connect: rank %d: the address of rank %d (%zu bytes) is not a "
                               "glucx UCX address (expected %zu-byte identity, then the worker "
                               "address)",
                               rank, r, lens[r], sizeof(ids[r]));
        }
        ids[r].boot_id[sizeof(ids[r].boot_id) - 1] = '\0';
        ids[r].host[sizeof(ids[r].host) - 1] = '\0';
    }

    /* The wait policy: yield always when this host has more of the job's ranks than CPUs. */
    int host_ranks = 0;
    for (int r = 0; r < size; r++)
        host_ranks += r == rank || same_machine(&tx->ident, &ids[r]);
    const int cpus = usable_cpus();
    tx->yield = glucx_ucx_yield_resolve(tx->uctx->yield, host_ranks, cpus);
    glucx_debug("ucx: rank %d: %d of %d ranks on this host, %d usable CPUs: waits yield %s", rank,
                host_ranks, size, cpus,
                tx->yield == GLUCX_UCX_YIELD_ALWAYS  ? "always"
                : tx->yield == GLUCX_UCX_YIELD_NEVER ? "never"
                                                     : "while yielding is cheap");

    pthread_mutex_lock(&tx->lock);
    for (int r = 0; r < size; r++) {
        /* Local peers: no UCX error handling (so UCX may use cma); we watch their pid. */
        int local = tx->uctx->shm && same_machine(&tx->ident, &ids[r]);
        tx->local[r] = (unsigned char)local;
        /* Segments only where both sides cut alike (the same setting on both). */
        const uint32_t seg = tx->ident.net_seg;
        tx->seg[r] = seg != 0 && ids[r].net_seg == seg && (!local || (seg & GLUCX_UCX_SEG_LOCAL))
                         ? seg & ~GLUCX_UCX_SEG_LOCAL
                         : 0;
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .address = (const ucp_address_t *)((const char *)addrs[r] + sizeof(ids[r])),
            .err_mode = local ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = glucx_ucx_ep_error_cb, .arg = &tx->peers[r]},
        };
        ucs_status_t us = ucp_ep_create(tx->worker, &ep, &tx->eps[r]);
        if (us != UCS_OK) {
            tx->eps[r] = NULL;
            st = glucx_error(GLUCX_ERR_TRANSPORT,
                             "connect: rank %d cannot create an endpoint to rank %d (address of "
                             "%zu bytes, %s error handling): %s",
                             rank, r, lens[r], local ? "no" : "peer", ucs_status_string(us));
            break;
        }
        if (!local || r == rank)
            continue;
        tx->pid[r] = ids[r].pid;
        int fd = -1;
#ifdef SYS_pidfd_open
        fd = (int)syscall(SYS_pidfd_open, (pid_t)ids[r].pid, 0);
#else
        errno = ENOSYS;
#endif
        if (fd >= 0) {
            tx->pidfd[r] = fd;
            tx->pfd_rank[tx->npidfds] = r;
            tx->pfds[1 + tx->npidfds].fd = fd;
            tx->pfds[1 + tx->npidfds].events = POLLIN;
            tx->chk[tx->npidfds] = tx->pfds[1 + tx->npidfds];
            tx->npidfds++;
        } else {
            /* ESRCH: gone already; the first check reports it. */
            glucx_debug("ucx: rank %d: no pidfd for rank %d (pid %d): %s; checking kill(pid, 0)",
                        rank, r, (int)ids[r].pid, strerror(errno));
            tx->nkill++;
        }
    }
    free(ids);
    tx->connected = 1;
    tx->ever_connected = 1;
    pthread_mutex_unlock(&tx->lock);
    if (st != GLUCX_OK) {
        glucx_ucx_fail(base, st, glucx_error_text());
        return glucx_error(st, "%s", base->failure);
    }

    /* Handshake: a hello to and from every other rank. */
    glucx_ucx_hello_t out = {.magic = GLUCX_UCX_HELLO_MAGIC, .rank = rank, .size = size};
    glucx_ucx_hello_t *in = calloc((size_t)size, sizeof(*in));
    glucx_tx_req_t *reqs = calloc((size_t)size * 4, sizeof(*reqs));
    glucx_tx_req_t **ptrs = calloc((size_t)size * 4, sizeof(*ptrs));
    if (in == NULL || reqs == NULL || ptrs == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "connect: out of memory for %d peers", size);
        glucx_ucx_fail(base, st, "connect: out of memory");
        goto out;
    }
    int n = 0, ready_posted = 0;
    for (int p = 0; p < size && st == GLUCX_OK; p++) {
        if (p == rank)
            continue;
        uint64_t from =
            GLUCX_TX_TAG_CTRL | GLUCX_UCX_CTRL_HELLO | ((uint64_t)p << GLUCX_TX_TAG_SRC_SHIFT);
        uint64_t to =
            GLUCX_TX_TAG_CTRL | GLUCX_UCX_CTRL_HELLO | ((uint64_t)rank << GLUCX_TX_TAG_SRC_SHIFT);
        st = glucx_ucx_recv_raw(tx, p, from, ~UINT64_C(0), &in[p], sizeof(in[p]), &reqs[2 * p]);
        ptrs[n++] = &reqs[2 * p];
        if (st == GLUCX_OK) {
            st = glucx_ucx_send_raw(tx, p, to, &out, sizeof(out), &reqs[2 * p + 1]);
            ptrs[n++] = &reqs[2 * p + 1];
        }
    }
    if (st == GLUCX_OK)
        st = glucx_ucx_wait(base, ptrs, n, deadline_ns);
    if (st == GLUCX_OK) {
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            if (reqs[2 * p].status != GLUCX_OK || reqs[2 * p].bytes != sizeof(in[p]) ||
                in[p].magic != GLUCX_UCX_HELLO_MAGIC || in[p].rank != p || in[p].size != size) {
                char text[300];
                snprintf(text, sizeof(text),
                         "connect: rank %d of %d: bad hello from rank %d (%zu bytes, status %s, "
                         "says rank %d of %d)",
                         rank, size, p, reqs[2 * p].bytes, glucx_status_string(reqs[2 * p].status),
                         (int)in[p].rank, (int)in[p].size);
                glucx_ucx_fail(base, GLUCX_ERR_MISMATCH, text);
                st = glucx_error(GLUCX_ERR_MISMATCH, "%s", text);
                goto out;
            }
        }
        /* Every peer answered, so every peer progresses: now one put-shaped active message
         * each way (glucx_ucx_send_ready), which needs the peer's progress to complete. Each
         * rank also waits for every peer's message to arrive: a rank that only waited for its
         * own could leave connect and destroy its worker while a slower peer's message to it
         * was still on its way, failing that peer's connect (seen over tcp). */
        n = 0;
        ready_posted = 1;
        for (int p = 0; p < size && st == GLUCX_OK; p++) {
            if (p == rank)
                continue;
            glucx_ucx_expect_ready(tx, p, &reqs[3 * size + p]);
            ptrs[n++] = &reqs[3 * size + p];
            st = glucx_ucx_send_ready(tx, p, &reqs[2 * size + p]);
            ptrs[n++] = &reqs[2 * size + p];
        }
        if (st == GLUCX_OK)
            st = glucx_ucx_wait(base, ptrs, n, deadline_ns);
        glucx_ucx_unexpect_ready(tx);
    }
    if (st == GLUCX_ERR_TIMEOUT) {
        char missing[256];
        size_t used = 0;
        int count = 0;
        missing[0] = '\0';
        for (int p = 0; p < size; p++) {
            if (p == rank ||
                (glucx_tx_req_done(&reqs[2 * p]) && glucx_tx_req_done(&reqs[2 * p + 1]) &&
                 (!ready_posted || (glucx_tx_req_done(&reqs[2 * size + p]) &&
                                    glucx_tx_req_done(&reqs[3 * size + p])))))
                continue;
            count++;
            if (used < sizeof(missing) - 16) {
                int w = snprintf(missing + used, sizeof(missing) - used, "%s%d",
                                 used > 0 ? ", " : "", p);
                used += w > 0 ? (size_t)w : 0;
            } else if (used < sizeof(missing) - 4) {
                used += (size_t)snprintf(missing + used, sizeof(missing) - used, "...");
            }
        }
        char text[400];
        snprintf(text, sizeof(text),
                 "connect: rank %d of %d: Timed out waiting for the handshake with %d rank(s): %s",
                 rank, size, count, missing);
        /* Fail quietly towards peers: they time out on their own; this completes our hellos. */
        glucx_ucx_record_failure(tx, GLUCX_ERR_TIMEOUT, 0, -1, NULL, "%s", text);
        glucx_ucx_fail(base, GLUCX_ERR_TIMEOUT, text);
        st = glucx_error(GLUCX_ERR_TIMEOUT, "%s", text);
        goto out;
    }
    if (st != GLUCX_OK) {
        glucx_ucx_fail(base, st, glucx_error_text());
        st = glucx_error(st, "connect: rank %d: handshake failed: %s", rank, base->failure);
        goto out;
    }
    describe_endpoints(tx);

out:
    free(in);
    free(reqs);
    free(ptrs);
    return st;
}
