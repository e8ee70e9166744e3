/* Helpers shared by every collective algorithm: tagged send/receive with length and signature
 * checks, and failure propagation through the transport. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/barrier/barrier.h"
#include "util/error.h"
#include "util/time.h"

size_t glucx_coll_bytes(const glucx_coll_args_t *args, int size)
{
    size_t es = glucx_dtype_size(args->dtype);
    size_t n = 0;
    switch (args->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_BROADCAST:
    case GLUCX_COLL_REDUCE:
        n = args->count;
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_REDUCE_SCATTER:
    case GLUCX_COLL_ALLTOALL:
    case GLUCX_COLL_GATHER:
    case GLUCX_COLL_SCATTER:
        n = args->count * (size_t)size;
        break;
    case GLUCX_COLL_ALLGATHERV:
    case GLUCX_COLL_ALLTOALLV:
        if (args->counts != NULL)
            for (int r = 0; r < size; r++)
                n += args->counts[r];
        break;
    case GLUCX_COLL_BARRIER:
    default:
        n = 0;
    }
    return n * es;
}

static glucx_status_t check_peer(glucx_coll_ctx_t *ctx, int peer, unsigned step)
{
    if (peer < 0 || peer >= ctx->size || peer == ctx->rank ||
        step + ctx->step_base > GLUCX_COLL_STEP_MAX)
        return glucx_coll_fail(ctx, GLUCX_ERR_INVALID_ARG,
                               "internal error: algorithm %s posted peer %d step %u", ctx->alg_name,
                               peer, step);
    return GLUCX_OK;
}

/* Trace tag: the wire tag without the source bits (48-62), as EVENTS.md defines it. */
#define TRACE_TAG_MASK UINT64_C(0x8000ffffffffffff)

glucx_status_t glucx_coll_isend(glucx_coll_ctx_t *ctx, int peer, unsigned step, const void *buf,
                                size_t bytes, glucx_tx_req_t *req)
{
    glucx_status_t st = check_peer(ctx, peer, step);
    glucx_tx_req_init(req);
    if (st != GLUCX_OK)
        return st;
    const int me = ctx->comm_rank, to = glucx_coll_comm_rank(ctx, peer);
    GLUCX_TP(send_begin, ctx->trace_comm, me, ctx->trace_seq, step + ctx->step_base, to,
             glucx_topo_link_id(ctx->topo, me, to), glucx_coll_tag(ctx, step), bytes);
    st = ctx->tx->ops->isend(ctx->tx, to, glucx_coll_tag(ctx, step), buf, bytes, req);
    if (st != GLUCX_OK)
        GLUCX_TP(send_end, ctx->trace_comm, me, ctx->trace_seq, step + ctx->step_base, to,
                 glucx_topo_link_id(ctx->topo, me, to), glucx_coll_tag(ctx, step), bytes);
    if (st != GLUCX_OK)
        return glucx_coll_fail(ctx, st, "cannot send %zu bytes to rank %d: %s", bytes, to,
                               glucx_error_text());
    return GLUCX_OK;
}

glucx_status_t glucx_coll_irecv(glucx_coll_ctx_t *ctx, int peer, unsigned step, void *buf,
                                size_t bytes, glucx_tx_req_t *req)
{
    glucx_status_t st = check_peer(ctx, peer, step);
    glucx_tx_req_init(req);
    if (st != GLUCX_OK)
        return st;
    const int me = ctx->comm_rank;
    int from = glucx_coll_comm_rank(ctx, peer);
    GLUCX_TP(recv_begin, ctx->trace_comm, me, ctx->trace_seq, step + ctx->step_base, from,
             glucx_topo_link_id(ctx->topo, from, me), glucx_coll_tag(ctx, step), bytes);
    /* The signature is matched exactly when the transport can look for unexpected messages: a
     * message of another collective (or dtype, op, count) then never takes this receive's
     * place, and check_foreign finds it within CHECK_FOREIGN_NS. Without probe, a receive
     * takes any signature and the completion check names the difference. */
    st = ctx->tx->ops->irecv(ctx->tx, &from, 1, glucx_coll_tag(ctx, step),
                             ctx->tx->ops->probe != NULL ? 0 : GLUCX_COLL_TAG_SIG_MASK, buf, bytes,
                             req);
    if (st != GLUCX_OK)
        GLUCX_TP(recv_end, ctx->trace_comm, me, ctx->trace_seq, step + ctx->step_base, from,
                 glucx_topo_link_id(ctx->topo, from, me), glucx_coll_tag(ctx, step), (uint64_t)0);
    if (st != GLUCX_OK)
        return glucx_coll_fail(ctx, st, "cannot receive %zu bytes from rank %d: %s", bytes, from,
                               glucx_error_text());
    return GLUCX_OK;
}

void glucx_coll_subgroup(const glucx_coll_ctx_t *parent, const int *members, int n, int index,
                         glucx_coll_ctx_t *sub)
{
    *sub = *parent;
    sub->group = members;
    sub->size = n;
    sub->rank = index;
}

/* Formats "<coll> (seq S, algorithm A) on rank R: <text>", fails the transport with it (first
 * failure wins), records it as this thread's last error. */
static glucx_status_t fail_v(glucx_coll_ctx_t *ctx, glucx_status_t status, const char *fmt,
                             va_list ap)
{
    char text[sizeof(ctx->tx->failure)];
    int n = snprintf(text, sizeof(text),
                     "%s (seq %u, algorithm %s) on rank %d: ", glucx_coll_name(ctx->args->coll),
                     ctx->seq, ctx->alg_name, ctx->comm_rank);
    if (n > 0 && (size_t)n < sizeof(text))
        vsnprintf(text + n, sizeof(text) - (size_t)n, fmt, ap);
    ctx->tx->ops->fail(ctx->tx, status, text);
    /* The transport keeps the first failure; report that one (it may be a peer's notice). */
    glucx_status_t first = glucx_tx_failure(ctx->tx);
    if (first == GLUCX_OK)
        first = status;
    return glucx_error(first, "%s", ctx->tx->failure[0] ? ctx->tx->failure : text);
}

glucx_status_t glucx_coll_fail(glucx_coll_ctx_t *ctx, glucx_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    glucx_status_t st = fail_v(ctx, status, fmt, ap);
    va_end(ap);
    return st;
}

/* Name what differs, from the exact fields of the signature (see coll.h). */
static glucx_status_t sig_mismatch(glucx_coll_ctx_t *ctx, int peer, uint16_t theirs)
{
    const glucx_coll_args_t *a = ctx->args;
    const unsigned coll = theirs >> 12, dtype = (theirs >> 8) & 15u, op = (theirs >> 5) & 7u;
    if (coll != ((unsigned)ctx->sig >> 12))
        return glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                               "rank %d called %s where this rank called %s", peer,
                               glucx_coll_name((glucx_coll_t)coll), glucx_coll_name(a->coll));
    if (dtype != (((unsigned)ctx->sig >> 8) & 15u))
        return glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                               "rank %d passed dtype %s where this rank passed %s (count %zu)",
                               peer, glucx_dtype_name((glucx_dtype_t)dtype),
                               glucx_dtype_name(a->dtype), a->count);
    if (op != (((unsigned)ctx->sig >> 5) & 7u))
        return glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                               "rank %d passed op %s where this rank passed %s", peer,
                               glucx_op_name((glucx_op_t)op), glucx_op_name(a->op));
    return glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                           "rank %d passed a different %s (this rank: %s %s root %d count %zu)",
                           peer,
                           (a->coll == GLUCX_COLL_BROADCAST || a->coll == GLUCX_COLL_REDUCE ||
                            a->coll == GLUCX_COLL_GATHER || a->coll == GLUCX_COLL_SCATTER)
                               ? "root"
                               : "count or algorithm",
                           glucx_dtype_name(a->dtype), glucx_op_name(a->op), a->root, a->count);
}

/* send_end / recv_end of the messages a wait completed: completion as the waiter observes it
 * (requests still pending after a failure were completed by the transport's fail()). Once per
 * message (an algorithm may wait on a send again, e.g. the ring's last wait for all its sends);
 * none for a request still pending (a timed-out wait) or never posted. */
static void trace_xfer_end(const glucx_coll_ctx_t *ctx, glucx_tx_req_t *r)
{
    if (r->traced || r->tag == 0 || !glucx_tx_req_done(r))
        return;
    r->traced = 1;
    const uint64_t tag = r->tag & TRACE_TAG_MASK;
    const uint32_t step = (uint32_t)((tag >> GLUCX_COLL_TAG_STEP_SHIFT) & GLUCX_COLL_STEP_MAX);
    if (r->is_recv)
        GLUCX_TP(recv_end, ctx->trace_comm, ctx->comm_rank, ctx->trace_seq, step, r->peer,
                 glucx_topo_link_id(ctx->topo, r->peer, ctx->comm_rank), tag, r->bytes);
    else
        GLUCX_TP(send_end, ctx->trace_comm, ctx->comm_rank, ctx->trace_seq, step, r->peer,
                 glucx_topo_link_id(ctx->topo, ctx->comm_rank, r->peer), tag, r->posted);
}

static void trace_xfer_ends(const glucx_coll_ctx_t *ctx, glucx_tx_req_t *reqs, int n)
{
    for (int i = 0; i < n; i++)
        trace_xfer_end(ctx, &reqs[i]);
}

static glucx_status_t waitall(glucx_coll_ctx_t *ctx, glucx_tx_req_t *reqs, int n);

/* How often a blocked collective looks for a peer that runs another collective under the same
 * sequence number. Ranks that call different collectives post receives that match none of the
 * peers' messages (other steps, other partners), so the signature check never runs: without this
 * look they would only meet their timeout. */
#define CHECK_FOREIGN_NS 100000000LL

/* A message that arrived for this collective's sequence number and matches no receive: a peer
 * signs every message of one call alike, so the first one from each peer tells what it runs.
 * (With probe, receives match the signature exactly: a foreign message never completes one.) */
static glucx_status_t check_foreign(glucx_coll_ctx_t *ctx)
{
    const uint64_t ignore =
        GLUCX_COLL_TAG_SIG_MASK | ((uint64_t)GLUCX_COLL_STEP_MAX << GLUCX_COLL_TAG_STEP_SHIFT);
    for (int p = 0; p < ctx->comm_size; p++) {
        uint64_t tag = 0;
        if (p != ctx->comm_rank &&
            ctx->tx->ops->probe(ctx->tx, p, glucx_coll_tag(ctx, 0), ignore, &tag) &&
            (tag & GLUCX_COLL_TAG_SIG_MASK) != ctx->sig)
            return sig_mismatch(ctx, p, (uint16_t)(tag & GLUCX_COLL_TAG_SIG_MASK));
    }
    return GLUCX_OK;
}

/* Traced as EVENTS.md says: wait_begin/wait_end only when the wait has to block (its requests
 * are not all complete on entry); the requests' send_end/recv_end inside the wait, before its
 * wait_end, so that the analysis knows which wait observed which message. */
glucx_status_t glucx_coll_waitall(glucx_coll_ctx_t *ctx, glucx_tx_req_t *reqs, int n)
{
    const int blocks = (GLUCX_TP_ON(wait_begin) || GLUCX_TP_ON(wait_end)) &&
                       glucx_tx_would_block(ctx->tx, reqs, n);
    if (blocks)
        GLUCX_TP(wait_begin, ctx->trace_comm, ctx->comm_rank, GLUCX_TP_WAIT_COLL, ctx->trace_seq, 0,
                 (uint32_t)n, GLUCX_INPROGRESS);
    glucx_status_t st = waitall(ctx, reqs, n);
    if (GLUCX_TP_ON(send_end) || GLUCX_TP_ON(recv_end))
        trace_xfer_ends(ctx, reqs, n);
    if (blocks)
        GLUCX_TP(wait_end, ctx->trace_comm, ctx->comm_rank, GLUCX_TP_WAIT_COLL, ctx->trace_seq, 0,
                 (uint32_t)n, st);
    return st;
}

static glucx_status_t waitall(glucx_coll_ctx_t *ctx, glucx_tx_req_t *reqs, int n)
{
    glucx_tx_req_t *ptrs[64];
    glucx_tx_req_t **pp = ptrs;
    if (n <= 0)
        return glucx_tx_failure(ctx->tx) == GLUCX_OK
                   ? GLUCX_OK
                   : glucx_coll_fail(ctx, GLUCX_ERR_ABORTED, "%s", "communicator failed");
    if (n > 64) {
        pp = malloc(sizeof(*pp) * (size_t)n);
        if (pp == NULL)
            return glucx_coll_fail(ctx, GLUCX_ERR_NO_MEMORY, "cannot wait for %d requests", n);
    }
    for (int i = 0; i < n; i++)
        pp[i] = &reqs[i];

    glucx_status_t st;
    for (;;) {
        /* The wait is cut in slices only to look for a foreign collective in between. */
        int64_t until = ctx->deadline_ns;
        if (ctx->tx->ops->probe != NULL) {
            const int64_t now = glucx_now_ns();
            if (now < until - CHECK_FOREIGN_NS)
                until = now + CHECK_FOREIGN_NS;
        }
        st = ctx->tx->ops->wait(ctx->tx, pp, n, until);
        /* (A transport that failed with GLUCX_ERR_TIMEOUT, a peer's timeout, is no slice.) */
        if (st != GLUCX_ERR_TIMEOUT || until >= ctx->deadline_ns ||
            glucx_tx_failure(ctx->tx) != GLUCX_OK)
            break;
        st = check_foreign(ctx);
        if (st != GLUCX_OK) {
            if (pp != ptrs)
                free(pp);
            return st; /* failed and recorded by sig_mismatch */
        }
    }
    if (pp != ptrs)
        free(pp);

    if (st == GLUCX_ERR_TIMEOUT && glucx_tx_failure(ctx->tx) == GLUCX_OK) {
        /* name the first peer we are still waiting for */
        for (int i = 0; i < n; i++) {
            if (!glucx_tx_req_done(&reqs[i]))
                return glucx_coll_fail(ctx, GLUCX_ERR_TIMEOUT,
                                       "Timed out waiting %" PRId64 "ms to %s %zu bytes %s rank %d",
                                       ctx->timeout_ms, reqs[i].is_recv ? "receive" : "send",
                                       reqs[i].posted, reqs[i].is_recv ? "from" : "to",
                                       reqs[i].peer);
        }
        return glucx_coll_fail(ctx, GLUCX_ERR_TIMEOUT, "Timed out waiting %" PRId64 "ms",
                               ctx->timeout_ms);
    }
    if (st != GLUCX_OK)
        return glucx_coll_fail(ctx, st, "%s", ctx->tx->failure);

    for (int i = 0; i < n; i++) {
        glucx_tx_req_t *r = &reqs[i];
        /* Another collective (or dtype, op...) explains a wrong length best: say that first. */
        if (r->is_recv && (r->status == GLUCX_OK || r->status == GLUCX_ERR_TRUNCATED) &&
            (r->tag & GLUCX_COLL_TAG_SIG_MASK) != ctx->sig)
            return sig_mismatch(ctx, r->peer, (uint16_t)(r->tag & GLUCX_COLL_TAG_SIG_MASK));
        if (r->status == GLUCX_ERR_TRUNCATED)
            return glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                                   "rank %d sent more than the %zu bytes expected (%zu elements "
                                   "of %s): the ranks passed different sizes",
                                   r->peer, r->posted, r->posted / (ctx->esize ? ctx->esize : 1),
                                   glucx_dtype_name(ctx->args->dtype));
        if (r->status != GLUCX_OK)
            return glucx_coll_fail(ctx, r->status, "%s %s rank %d failed: %s",
                                   r->is_recv ? "receive from" : "send to", "", r->peer,
                                   ctx->tx->failure[0] ? ctx->tx->failure
                                                       : glucx_status_string(r->status));
        if (!r->is_recv)
            continue;
        if (r->bytes != r->posted)
            return glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                                   "rank %d sent %zu bytes where %zu were expected (%zu elements "
                                   "of %s): the ranks passed different sizes",
                                   r->peer, r->bytes, r->posted,
                                   r->posted / (ctx->esize ? ctx->esize : 1),
                                   glucx_dtype_name(ctx->args->dtype));
    }
    return GLUCX_OK;
}

glucx_status_t glucx_coll_wait_some(glucx_coll_ctx_t *ctx, glucx_tx_req_t *const *reqs, int n)
{
    for (int i = 0; i < n; i++)
        if (glucx_tx_req_done(reqs[i]))
            return GLUCX_OK;
    if (n <= 0)
        return glucx_coll_waitall(ctx, NULL, 0); /* OK, or the communicator's failure */
    const int traced = GLUCX_TP_ON(wait_begin) || GLUCX_TP_ON(wait_end);
    if (traced)
        GLUCX_TP(wait_begin, ctx->trace_comm, ctx->comm_rank, GLUCX_TP_WAIT_COLL, ctx->trace_seq, 0,
                 (uint32_t)n, GLUCX_INPROGRESS);
    glucx_status_t st;
    for (;;) {
        /* slices, as waitall's, to look for a foreign collective in between */
        int64_t until = ctx->deadline_ns;
        const int64_t now = glucx_now_ns();
        if (ctx->tx->ops->probe != NULL && now < until - CHECK_FOREIGN_NS)
            until = now + CHECK_FOREIGN_NS;
        if (ctx->tx->ops->wait_any != NULL) {
            const unsigned gen = atomic_load_explicit(&ctx->tx->wake_gen, memory_order_acquire);
            st = ctx->tx->ops->wait_any(ctx->tx, reqs, n, until, gen);
            if (st == GLUCX_INPROGRESS) /* a wake() meant for another waiter: wait on */
                continue;
        } else {
            int first = 0;
            while (first < n - 1 && glucx_tx_req_done(reqs[first]))
                first++;
            st = ctx->tx->ops->wait(ctx->tx, &reqs[first], 1, until);
        }
        if (st != GLUCX_ERR_TIMEOUT || until >= ctx->deadline_ns ||
            glucx_tx_failure(ctx->tx) != GLUCX_OK)
            break;
        st = check_foreign(ctx);
        if (st != GLUCX_OK)
            break;
    }
    int found = 0;
    for (int i = 0; i < n; i++) {
        found |= glucx_tx_req_done(reqs[i]);
        if (GLUCX_TP_ON(send_end) || GLUCX_TP_ON(recv_end))
            trace_xfer_end(ctx, reqs[i]);
    }
    if (traced)
        GLUCX_TP(wait_end, ctx->trace_comm, ctx->comm_rank, GLUCX_TP_WAIT_COLL, ctx->trace_seq, 0,
                 (uint32_t)n, found ? GLUCX_OK : st);
    if (found && glucx_tx_failure(ctx->tx) == GLUCX_OK)
        return GLUCX_OK;
    if (glucx_tx_failure(ctx->tx) != GLUCX_OK || st == GLUCX_ERR_TIMEOUT) {
        /* the first pending request, through waitall: its deadline has passed or the transport
         * failed, so it returns at once with the message naming the peer */
        for (int i = 0; i < n; i++)
            if (!glucx_tx_req_done(reqs[i]))
                return glucx_coll_waitall(ctx, reqs[i], 1);
        return glucx_coll_waitall(ctx, reqs[0], 1);
    }
    return st == GLUCX_OK ? GLUCX_OK : glucx_coll_fail(ctx, st, "%s", ctx->tx->failure);
}

glucx_status_t glucx_coll_sendrecv(glucx_coll_ctx_t *ctx, int dst, const void *sbuf, size_t sbytes,
                                   int src, void *rbuf, size_t rbytes, unsigned step)
{
    glucx_tx_req_t reqs[2];
    int n = 0;
    glucx_status_t st;
    if (src >= 0) {
        st = glucx_coll_irecv(ctx, src, step, rbuf, rbytes, &reqs[n++]);
        if (st != GLUCX_OK)
            return st;
    }
    if (dst >= 0) {
        st = glucx_coll_isend(ctx, dst, step, sbuf, sbytes, &reqs[n++]);
        if (st != GLUCX_OK) {
            /* the posted receive must not outlive this frame: the failure completed it */
            if (GLUCX_TP_ON(recv_end))
                trace_xfer_ends(ctx, reqs, n - 1);
            return st;
        }
    }
    return glucx_coll_waitall(ctx, reqs, n);
}

void glucx_coll_copy(void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes > 0)
        memmove(dst, src, bytes);
}

glucx_status_t glucx_coll_decline(glucx_coll_ctx_t *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->why, sizeof(ctx->why), fmt, ap);
    va_end(ap);
    return GLUCX_ERR_UNSUPPORTED;
}

void *glucx_coll_malloc(glucx_coll_ctx_t *ctx, size_t bytes, glucx_status_t *status_p)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        *status_p = glucx_coll_fail(ctx, GLUCX_ERR_NO_MEMORY,
                                    "cannot allocate %zu bytes of scratch", bytes);
    else
        *status_p = GLUCX_OK;
    return p;
}

/* ---- context preparation, shared by the core and the unit tests ---- */

static int is_rooted(glucx_coll_t c)
{
    return c == GLUCX_COLL_BROADCAST || c == GLUCX_COLL_REDUCE || c == GLUCX_COLL_GATHER ||
           c == GLUCX_COLL_SCATTER;
}

static int is_reducing(glucx_coll_t c)
{
    return c == GLUCX_COLL_ALLREDUCE || c == GLUCX_COLL_REDUCE_SCATTER || c == GLUCX_COLL_REDUCE;
}

/* a * b without overflow, else SIZE_MAX */
static size_t mul_sat(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Validate and compute how many elements this rank reads from sendbuf and writes to recvbuf
 * (for v-collectives: the extent up to the largest displacement + count). */
static glucx_status_t check_extents(const glucx_coll_args_t *a, int rank, int size,
                                    size_t *in_elems_p, size_t *out_elems_p)
{
    *in_elems_p = *out_elems_p = 0;
    if (a == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "collective: NULL arguments");
    const char *name = glucx_coll_name(a->coll);
    if ((unsigned)a->coll >= GLUCX_COLL_COUNT)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "collective: invalid kind %d", (int)a->coll);
    if (a->coll == GLUCX_COLL_BARRIER)
        return GLUCX_OK;
    size_t es = glucx_dtype_size(a->dtype);
    if (es == 0)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: invalid dtype %d", name, (int)a->dtype);
    if (is_reducing(a->coll) && !glucx_op_supported(a->op, a->dtype))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: op %s is not defined on dtype %s", name,
                           glucx_op_name(a->op), glucx_dtype_name(a->dtype));
    if (is_rooted(a->coll) && (a->root < 0 || a->root >= size))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: root %d out of range [0, %d)", name, a->root,
                           size);
    int is_root = is_rooted(a->coll) && a->root == rank;
    int in_place = a->sendbuf == GLUCX_IN_PLACE;
    size_t in_elems = 0, out_elems = 0; /* what this rank reads / writes */
    switch (a->coll) {
    case GLUCX_COLL_ALLREDUCE:
        in_elems = out_elems = a->count;
        break;
    case GLUCX_COLL_BROADCAST:
        out_elems = a->count;
        in_place = 0;
        break;
    case GLUCX_COLL_REDUCE:
        in_elems = a->count;
        out_elems = is_root ? a->count : 0;
        if (in_place && !is_root)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: IN_PLACE is only valid at the root",
                               name);
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_GATHER:
        in_elems = a->count;
        out_elems =
            (a->coll == GLUCX_COLL_GATHER && !is_root) ? 0 : mul_sat(a->count, (size_t)size);
        if (in_place && a->coll == GLUCX_COLL_GATHER && !is_root)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: IN_PLACE is only valid at the root",
                               name);
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
    case GLUCX_COLL_ALLTOALL:
        in_elems = mul_sat(a->count, (size_t)size);
        out_elems = a->coll == GLUCX_COLL_ALLTOALL ? in_elems : a->count;
        break;
    case GLUCX_COLL_SCATTER:
        in_elems = is_root ? mul_sat(a->count, (size_t)size) : 0;
        out_elems = a->count;
        if (in_place)
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "%s: IN_PLACE is not supported (at the root, pass recvbuf pointing "
                               "at the root's block of sendbuf instead)",
                               name);
        break;
    case GLUCX_COLL_ALLGATHERV:
    case GLUCX_COLL_ALLTOALLV: {
        const int v_send = a->coll == GLUCX_COLL_ALLTOALLV;
        if (a->counts == NULL || a->displs == NULL ||
            (v_send && !in_place && (a->send_counts == NULL || a->send_displs == NULL)))
            return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: NULL count or displacement array", name);
        for (int r = 0; r < size; r++) {
            size_t end = a->displs[r] + a->counts[r];
            if (end < a->displs[r])
                return glucx_error(GLUCX_ERR_INVALID_ARG,
                                   "%s: counts[%d]=%zu + displs[%d]=%zu overflows", name, r,
                                   a->counts[r], r, a->displs[r]);
            if (end > out_elems)
                out_elems = end;
            if (v_send && !in_place) {
                size_t send_end = a->send_displs[r] + a->send_counts[r];
                if (send_end < a->send_displs[r])
                    return glucx_error(GLUCX_ERR_INVALID_ARG,
                                       "%s: send_counts[%d]=%zu + send_displs[%d]=%zu overflows",
                                       name, r, a->send_counts[r], r, a->send_displs[r]);
                if (send_end > in_elems)
                    in_elems = send_end;
            }
        }
        if (!v_send)
            in_elems = a->counts[rank];
        if (v_send && in_place)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: IN_PLACE is not supported", name);
        break;
    }
    default:
        break;
    }
    if (mul_sat(in_elems, es) == SIZE_MAX || mul_sat(out_elems, es) == SIZE_MAX ||
        mul_sat(in_elems, es) > (SIZE_MAX >> 2) || mul_sat(out_elems, es) > (SIZE_MAX >> 2))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: %zu/%zu elements of %s overflow the size",
                           name, in_elems, out_elems, glucx_dtype_name(a->dtype));
    *in_elems_p = in_elems;
    *out_elems_p = out_elems;
    return GLUCX_OK;
}

glucx_status_t glucx_coll_args_check(const glucx_coll_args_t *a, int rank, int size)
{
    size_t in_elems, out_elems;
    glucx_status_t st = check_extents(a, rank, size, &in_elems, &out_elems);
    if (st != GLUCX_OK || a->coll == GLUCX_COLL_BARRIER)
        return st;
    const char *name = glucx_coll_name(a->coll);
    const int in_place = a->sendbuf == GLUCX_IN_PLACE;
    if (out_elems > 0 && a->recvbuf == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "%s: recvbuf is NULL but %zu elements of %s are to be written", name,
                           out_elems, glucx_dtype_name(a->dtype));
    if (in_elems > 0 && !in_place && a->sendbuf == NULL && a->coll != GLUCX_COLL_BROADCAST)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "%s: sendbuf is NULL but %zu elements of %s are to be read", name,
                           in_elems, glucx_dtype_name(a->dtype));
    if (in_place && a->recvbuf == NULL && in_elems > 0)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: IN_PLACE with a NULL recvbuf", name);
    return GLUCX_OK;
}

_Static_assert(GLUCX_COLL_COUNT <= 16 && GLUCX_DTYPE_COUNT <= 16 && GLUCX_OP_COUNT <= 8,
               "the signature holds coll, dtype and op in 4, 4 and 3 bits");

/* The signature (16 bits): coll, dtype and op exactly (4, 4, 3 bits), then 5 bits: for rooted
 * collectives the root modulo 32 (exact up to 32 ranks), otherwise an FNV-1a hash of the count
 * (for allgatherv: every rank's count, which all ranks pass alike) and the algorithm. Counts are
 * also caught by the exact length check of every receive. */
static uint16_t signature(const glucx_coll_args_t *a, int alg_index, int size)
{
    unsigned low;
    if (is_rooted(a->coll)) {
        low = (unsigned)a->root & 31u;
    } else {
        uint64_t v[2] = {0, (uint64_t)alg_index};
        if (a->coll == GLUCX_COLL_ALLGATHERV) {
            uint64_t hc = UINT64_C(0xcbf29ce484222325);
            for (int r = 0; r < size; r++)
                hc = (hc ^ (uint64_t)a->counts[r]) * UINT64_C(0x100000001b3);
            v[0] = hc;
        } else if (a->coll != GLUCX_COLL_ALLTOALLV) {
            v[0] = a->count;
        }
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        const unsigned char *p = (const unsigned char *)v;
        for (size_t i = 0; i < sizeof(v); i++)
            h = (h ^ p[i]) * UINT64_C(0x100000001b3);
        h ^= h >> 32;
        h ^= h >> 16;
        h ^= h >> 8;
        low = (unsigned)(h & 31u);
    }
    const unsigned op = is_reducing(a->coll) ? (unsigned)a->op & 7u : 0;
    return (uint16_t)((((unsigned)a->coll & 15u) << 12) | (((unsigned)a->dtype & 15u) << 8) |
                      (op << 5) | low);
}

/* Work from a private copy of the input (in-place reduce_scatter/alltoall, overlapping buffers). */
static glucx_status_t copy_input(glucx_coll_ctx_t *ctx, const void *input, size_t bytes)
{
    ctx->scratch_in = malloc(bytes ? bytes : 1);
    if (ctx->scratch_in == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "%s: cannot allocate %zu bytes for a copy of the input",
                           glucx_coll_name(ctx->args->coll), bytes);
    glucx_coll_copy(ctx->scratch_in, input, bytes);
    ctx->sendbuf = ctx->scratch_in;
    return GLUCX_OK;
}

glucx_status_t glucx_coll_ctx_init(glucx_coll_ctx_t *ctx, glucx_tx_t *tx, const glucx_topo_t *topo,
                                   const glucx_coll_args_t *args, uint32_t seq, int alg_index,
                                   int64_t timeout_ms)
{
    const glucx_coll_table_t *table = glucx_coll_tables[args->coll];
    memset(ctx, 0, sizeof(*ctx));
    ctx->tx = tx;
    ctx->rank = ctx->comm_rank = tx->rank;
    ctx->size = ctx->comm_size = tx->size;
    ctx->group = NULL;
    ctx->args = args;
    ctx->topo = topo;
    ctx->seq = seq & GLUCX_COLL_TAG_SEQ_MASK;
    ctx->trace_seq = seq;
    ctx->alg_index = alg_index;
    ctx->alg_name =
        (alg_index >= 0 && alg_index < table->count) ? table->algs[alg_index].name : "none";
    ctx->esize = glucx_dtype_size(args->dtype);
    ctx->sig = signature(args, alg_index, ctx->size);
    ctx->deadline_ns = glucx_deadline_ns(timeout_ms);
    ctx->timeout_ms = timeout_ms;
    if (is_reducing(args->coll))
        ctx->reduce = glucx_kernel_reduce_fn(args->dtype, args->op);

    const size_t es = ctx->esize;
    const int in_place = args->sendbuf == GLUCX_IN_PLACE;
    ctx->in_place = in_place;
    ctx->sendbuf = in_place ? NULL : args->sendbuf;
    ctx->recvbuf = args->recvbuf;
    char *rb = args->recvbuf;
    switch (args->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_REDUCE:
        if (in_place)
            ctx->sendbuf = rb;
        break;
    case GLUCX_COLL_BROADCAST:
        ctx->sendbuf = rb;
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_GATHER:
        if (in_place)
            ctx->sendbuf = rb + (size_t)ctx->rank * args->count * es;
        break;
    case GLUCX_COLL_ALLGATHERV:
        if (in_place)
            ctx->sendbuf = rb + args->displs[ctx->rank] * es;
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
    case GLUCX_COLL_ALLTOALL:
        if (in_place)
            return copy_input(ctx, rb, args->count * (size_t)ctx->size * es);
        break;
    default:
        break;
    }
    if (in_place || args->coll == GLUCX_COLL_BROADCAST || args->coll == GLUCX_COLL_BARRIER)
        return GLUCX_OK;

    /* The caller passed its own pointers. Where they alias exactly as IN_PLACE would, treat the
     * call as in place; where the input overlaps the output in any other way, work from a copy
     * of the input, so no algorithm ever reads what it has already overwritten. */
    size_t in_elems, out_elems;
    if (check_extents(args, ctx->rank, ctx->size, &in_elems, &out_elems) != GLUCX_OK)
        return GLUCX_OK; /* validated by glucx_coll_args_check() before */
    const char *in = ctx->sendbuf, *out = ctx->recvbuf;
    const size_t in_bytes = in_elems * es, out_bytes = out_elems * es;
    if (in == NULL || out == NULL || in_bytes == 0 || out_bytes == 0 || in + in_bytes <= out ||
        out + out_bytes <= in)
        return GLUCX_OK;
    const char *own = NULL; /* where IN_PLACE puts this rank's input */
    switch (args->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_REDUCE:
        own = rb;
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_GATHER:
        own = rb + (size_t)ctx->rank * args->count * es;
        break;
    case GLUCX_COLL_ALLGATHERV:
        own = rb + args->displs[ctx->rank] * es;
        break;
    case GLUCX_COLL_SCATTER:
        /* documented: the root's recvbuf may be its own block of sendbuf */
        if (out == in + (size_t)ctx->rank * args->count * es && out_bytes == args->count * es)
            return GLUCX_OK;
        break;
    default:
        break;
    }
    if (own != NULL && in == own) {
        ctx->in_place = 1;
        return GLUCX_OK;
    }
    return copy_input(ctx, in, in_bytes);
}

void glucx_coll_ctx_fini(glucx_coll_ctx_t *ctx)
{
    free(ctx->scratch_in);
    ctx->scratch_in = NULL;
}

glucx_status_t glucx_coll_ctx_run(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_table_t *table = glucx_coll_tables[ctx->args->coll];
    if (ctx->alg_index < 0 || ctx->alg_index >= table->count)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: no algorithm %d",
                           glucx_coll_name(ctx->args->coll), ctx->alg_index);
    if (glucx_tx_failure(ctx->tx) != GLUCX_OK)
        return glucx_error(glucx_tx_failure(ctx->tx), "%s: communicator failed earlier: %s",
                           glucx_coll_name(ctx->args->coll), ctx->tx->failure);
    glucx_status_t st = table->algs[ctx->alg_index].run(ctx);
    const glucx_coll_args_t *a = ctx->args;
    if (st == GLUCX_OK && (is_rooted(a->coll) || a->coll == GLUCX_COLL_ALLTOALLV)) {
        /* In these a rank can see only right-looking messages while a peer saw a mismatch (or
         * a rank with the wrong root may receive nothing at all). A zero-byte dissemination
         * round, signed like the collective, completes only when every rank finished without
         * error: otherwise the failure notice reaches every rank first. Cost: ceil(log2 n)
         * alpha. */
        st = glucx_barrier_dissemination_rounds(ctx, GLUCX_COLL_STEP_CONFIRM);
    }
    if (st != GLUCX_OK || a->op != GLUCX_OP_AVG || ctx->reduce == NULL)
        return st;
    if (a->coll == GLUCX_COLL_ALLREDUCE || (a->coll == GLUCX_COLL_REDUCE && a->root == ctx->rank) ||
        a->coll == GLUCX_COLL_REDUCE_SCATTER)
        glucx_kernel_avg_finalize(a->dtype, ctx->recvbuf, a->count, ctx->size);
    return GLUCX_OK;
}
