/*
 * Allgather, Bruck's concatenation algorithm (any number of ranks).
 *
 * Rank r holds the blocks [r, r + d) (mod n) before the step of distance d = 2^k; it sends the
 * first min(d, n - d) of them to rank r - d and receives as many from rank r + d. After
 * ceil(log2 n) steps it holds all n. Blocks stay at their final place in recvbuf (a range that
 * wraps around the end travels as two messages), so unlike the textbook form there is no final
 * rotation. The first step moves only the own block: it is sent straight from the input and
 * copied into recvbuf after that step, not before it (see recursive_doubling.c).
 *
 * Cost, m = total output bytes, n ranks: ceil(log2 n) alpha + (n-1)/n m beta (one more alpha
 * per step whose range wraps).
 * On a topology file the steps r -> r - 2^k, min(2^k, n - 2^k) blocks each cost their pattern's
 * alpha and beta on the routes (glucx_topo_step_cost: a link direction that several messages of one
 * step cross charges each of them). Topology: none assumed; distances double, so late steps cross
 * package boundaries. Source: Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient Algorithms for
 * All-to-All Communications in Multiport Message-Passing Systems" (IEEE TPDS 1997); MPICH uses it
 * for short allgathers on non-power-of-two sizes (Thakur, Rabenseifner & Gropp 2005).
 */
#include <stdlib.h>

#include "coll/allgather/allgather.h"
#include "coll/allgather/bruck.h"

/* The range of blocks [first, first + c) mod n as at most two contiguous pieces, in elements. */
static int pieces(int n, int first, int c, const size_t *off, const size_t *len, size_t *poff,
                  size_t *plen)
{
    int np = 0;
    const int end1 = first + c <= n ? first + c : n;
    poff[np] = off[first];
    plen[np++] = off[end1 - 1] + len[end1 - 1] - off[first];
    if (first + c > n) {
        const int last = first + c - n; /* blocks [0, last) */
        poff[np] = off[0];
        plen[np++] = off[last - 1] + len[last - 1] - off[0];
    }
    return np;
}

glucx_status_t glucx_coll_bruck_allgather_blocks(glucx_coll_ctx_t *ctx, char *buf,
                                                 const size_t *off, const size_t *len,
                                                 const void *own)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t es = ctx->esize;
    unsigned k = 0;
    for (int d = 1; d < n; d <<= 1, k++) {
        const int c = d < n - d ? d : n - d;
        const int to = (r - d + n) % n, from = (r + d) % n;
        size_t soff[2], slen[2], roff[2], rlen[2];
        const int ns = pieces(n, r, c, off, len, soff, slen);
        const int nr = pieces(n, from, c, off, len, roff, rlen);
        glucx_tx_req_t reqs[4];
        int nreq = 0;
        glucx_status_t st = GLUCX_OK;
        /* empty pieces still go, as zero-byte messages: see glucx_coll_ring_nseg() */
        for (int i = 0; i < nr && st == GLUCX_OK; i++)
            st = glucx_coll_irecv(ctx, from, 2 * k + (unsigned)i, buf + roff[i] * es, rlen[i] * es,
                                  &reqs[nreq++]);
        /* d == 1: the range is the own block alone (ns == 1), sent from own */
        for (int i = 0; i < ns && st == GLUCX_OK; i++)
            st = glucx_coll_isend(ctx, to, 2 * k + (unsigned)i,
                                  d == 1 && own != NULL ? own : (const void *)(buf + soff[i] * es),
                                  slen[i] * es, &reqs[nreq++]);
        if (st == GLUCX_OK)
            st = glucx_coll_waitall(ctx, reqs, nreq);
        if (st != GLUCX_OK)
            return st;
        if (d == 1 && own != NULL) /* the next step sends it from its place */
            glucx_coll_copy(buf + off[r] * es, own, len[r] * es);
    }
    return GLUCX_OK;
}

double glucx_allgather_bruck_cost(const glucx_topo_t *topo, size_t bytes)
{
    /* step k sends min(2^k, n - 2^k) blocks (of bytes / n) to r - 2^k */
    const int n = topo->size;
    double t = 0.0;
    for (int k = 0; (1 << k) < n; k++) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_SHIFT_DOWN, k);
        const int blocks = (1 << k) < n - (1 << k) ? 1 << k : n - (1 << k);
        t += l.alpha_ns + (double)blocks / n * (double)bytes * l.beta_ns_per_byte;
    }
    return t;
}

glucx_status_t glucx_allgather_bruck_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size;
    const size_t count = ctx->args->count, es = ctx->esize;
    char *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out, ctx->sendbuf, count * es);
        return GLUCX_OK;
    }
    glucx_status_t st;
    size_t *off = glucx_coll_malloc(ctx, sizeof(size_t) * 2 * (size_t)n, &st);
    if (off == NULL)
        return st;
    size_t *len = off + n;
    for (int b = 0; b < n; b++) {
        off[b] = (size_t)b * count;
        len[b] = count;
    }
    st = glucx_coll_bruck_allgather_blocks(ctx, out, off, len, ctx->sendbuf);
    free(off);
    return st;
}
