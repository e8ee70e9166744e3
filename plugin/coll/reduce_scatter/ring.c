/*
 * Reduce-scatter, pipelined ring.
 *
 * For n-1 steps each rank combines the partial sum of one block that arrives from its left
 * neighbour with its own input and passes it on to the right; after the last step it holds its
 * own block reduced over all ranks. Blocks travel in segments (GLUCX_COLL_RING_SEG_BYTES) with
 * a window of receives posted ahead into small scratch slots; a segment is reduced straight
 * from the slot it arrived in and forwarded at once, so transfer, reduction and forwarding of
 * consecutive segments overlap, and the step boundaries do not drain the pipeline.
 *
 * Each block is reduced exactly once, along the ring from the rank after its owner, so the
 * result is a deterministic function of the inputs. The travelling partial is the first operand
 * of every combine (for the ranks below the owner it holds only lower ranks, as coll.h's
 * canonical order asks; past the wrap it cannot).
 *
 * Cost, m = total input bytes (n blocks), n ranks:
 *   (n-1) alpha + (n-1)/n m beta + (n-1)/n m gamma.
 * On a topology file the ring steps r -> r+1 cost their pattern's alpha and beta on the
 * routes (glucx_topo_step_cost: a link direction that several messages of one step cross
 * charges each of them).
 * Bandwidth- and computation-optimal; the latency term grows linearly: the large-message choice.
 * Topology: a ring of neighbours (ranks r and r+1, usually in one package).
 * Source: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
 * workstations" (JPDC 2009); the segment pipeline follows the chunked rings of NCCL and of
 * Baidu's ring allreduce.
 */
#include <stdlib.h>

#include "coll/allgather/ring.h"
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/reduce_scatter/ring.h"

/* Walks the receive units (step s, segment j) in order. */
typedef struct unit_cursor {
    int s;
    size_t j;
    int b;
    size_t nseg;
} unit_cursor_t;

static void cursor_settle(unit_cursor_t *c, int n, int r, const size_t *len, size_t es)
{
    while (c->s < n - 1) {
        c->b = (r - c->s - 2 + 2 * n) % n;
        c->nseg = glucx_coll_ring_nseg(len[c->b], es);
        if (c->j < c->nseg)
            return;
        c->s++;
        c->j = 0;
    }
}

glucx_status_t glucx_coll_ring_reduce_scatter_blocks(glucx_coll_ctx_t *ctx, const char *in,
                                                     const size_t *in_off, const size_t *len,
                                                     char *work, char *out, unsigned step_base)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t es = ctx->esize;
    if (n == 1) {
        glucx_coll_copy(out, in + in_off[0] * es, len[0] * es);
        return GLUCX_OK;
    }
    const int right = (r + 1) % n, left = (r + n - 1) % n;

    const int b0 = (r + n - 1) % n; /* the block this rank starts: sent at step 0 */
    size_t nunits = 0, slot_elems = 0, max_len = 0;
    for (int b = 0; b < n; b++) {
        const size_t nseg = glucx_coll_ring_nseg(len[b], es);
        if (nseg > 0 && (len[b] + nseg - 1) / nseg > slot_elems)
            slot_elems = (len[b] + nseg - 1) / nseg;
        if (len[b] > max_len)
            max_len = len[b];
        if (b != b0) /* every block but the one this rank starts is received once */
            nunits += nseg;
    }
    const size_t nsend0 = glucx_coll_ring_nseg(len[b0], es);

    const size_t window = nunits < GLUCX_COLL_RING_WINDOW ? nunits : GLUCX_COLL_RING_WINDOW;
    const size_t slot_bytes = slot_elems * es;
    const size_t dbuf_bytes = (work == NULL && n > 2) ? max_len * es : 0;
    glucx_status_t st;
    char *scratch = glucx_coll_malloc(ctx, window * slot_bytes + 2 * dbuf_bytes, &st);
    if (scratch == NULL)
        return st;
    glucx_tx_req_t *rreq = glucx_coll_malloc(ctx, sizeof(*rreq) * (window + nsend0 + nunits), &st);
    if (rreq == NULL) {
        free(scratch);
        return st;
    }
    glucx_tx_req_t *sreq = rreq + window;
    size_t ns = 0;
    char *const dbuf[2] = {scratch + window * slot_bytes,
                           scratch + window * slot_bytes + dbuf_bytes};

    /* receives first, into the window's slots */
    unit_cursor_t post = {0, 0, 0, 0};
    cursor_settle(&post, n, r, len, es);
    for (size_t v = 0; v < window; v++) {
        size_t sl;
        glucx_coll_split(len[post.b], post.nseg, post.j, &sl);
        st = glucx_coll_irecv(ctx, left, step_base + (unsigned)post.s, scratch + v * slot_bytes,
                              sl * es, &rreq[v]);
        if (st != GLUCX_OK)
            goto out;
        post.j++;
        cursor_settle(&post, n, r, len, es);
    }
    for (size_t j = 0; j < nsend0; j++) {
        size_t sl, so = glucx_coll_split(len[b0], nsend0, j, &sl);
        st = glucx_coll_isend(ctx, right, step_base, in + (in_off[b0] + so) * es, sl * es,
                              &sreq[ns++]);
        if (st != GLUCX_OK)
            goto out;
    }

    size_t u = 0;
    size_t step_sends[2] = {ns, ns}; /* where the sends of steps s-2 and s-1 start in sreq */
    for (int s = 0; s < n - 1; s++) {
        const int b = (r - s - 2 + 2 * n) % n;
        const size_t nseg = glucx_coll_ring_nseg(len[b], es);
        char *const dst_block = work != NULL ? work + in_off[b] * es : dbuf[s % 2];
        if (work == NULL && s >= 2) {
            /* dbuf[s % 2] still feeds the sends of step s-1 (the results of step s-2) */
            st =
                glucx_coll_waitall(ctx, &sreq[step_sends[0]], (int)(step_sends[1] - step_sends[0]));
            if (st != GLUCX_OK)
                goto out;
        }
        step_sends[0] = step_sends[1];
        step_sends[1] = ns;
        for (size_t j = 0; j < nseg; j++, u++) {
            const size_t v = u % window;
            char *slot = scratch + v * slot_bytes;
            st = glucx_coll_waitall(ctx, &rreq[v], 1);
            if (st != GLUCX_OK)
                goto out;
            size_t sl, so = glucx_coll_split(len[b], nseg, j, &sl);
            const char *mine = in + (in_off[b] + so) * es;
            if (s < n - 2) {
                char *dst = dst_block + so * es;
                glucx_coll_reduce(ctx, dst, slot, mine, sl);
                st = glucx_coll_isend(ctx, right, step_base + (unsigned)s + 1, dst, sl * es,
                                      &sreq[ns++]);
            } else {
                glucx_coll_reduce(ctx, out + so * es, slot, mine, sl);
            }
            if (st != GLUCX_OK)
                goto out;
            if (post.s < n - 1) { /* the slot is free again: post the unit `window` ahead */
                size_t pl;
                glucx_coll_split(len[post.b], post.nseg, post.j, &pl);
                st = glucx_coll_irecv(ctx, left, step_base + (unsigned)post.s, slot, pl * es,
                                      &rreq[v]);
                if (st != GLUCX_OK)
                    goto out;
                post.j++;
                cursor_settle(&post, n, r, len, es);
            }
        }
    }
    st = glucx_coll_waitall(ctx, sreq, (int)ns);
out:
    /* on failure the transport completed every outstanding request: both may go */
    free(rreq);
    free(scratch);
    return st;
}

double glucx_reduce_scatter_ring_cost(const glucx_topo_t *topo, size_t bytes)
{
    const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_SHIFT_UP, 0);
    const double n = topo->size;
    return (n - 1) * l.alpha_ns +
           (n - 1) / n * (double)bytes * (l.beta_ns_per_byte + topo->gamma_ns_per_byte);
}

glucx_status_t glucx_reduce_scatter_ring_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size;
    const size_t count = ctx->args->count;
    glucx_status_t st;
    size_t *off = glucx_coll_malloc(ctx, sizeof(size_t) * 2 * (size_t)n, &st);
    if (off == NULL)
        return st;
    size_t *len = off + n;
    for (int b = 0; b < n; b++) {
        off[b] = (size_t)b * count;
        len[b] = count;
    }
    st = glucx_coll_ring_reduce_scatter_blocks(ctx, ctx->sendbuf, off, len, NULL, ctx->recvbuf, 0);
    free(off);
    return st;
}
