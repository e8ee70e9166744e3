/*
 * Alltoall, Bruck's algorithm (radix 2).
 *
 * With t[i] the block this rank holds for rank r+i (mod n): round k = 0 .. ceil(log2 n)-1
 * sends every t[i] whose index has bit k set to rank r+2^k, packed into one message, and
 * replaces them with the blocks of the same indices from rank r-2^k. Afterwards t[i] is the
 * block rank r-i sent to r. Rather than rotating into a temporary array and back (the two
 * local permutations of the paper), t[i] is kept in its final slot of recvbuf, (r-i) mod n, so
 * the only local copies are the initial one and each round's pack and unpack. Any n.
 *
 * Cost, b = block bytes, m = n b, n ranks, B_k blocks moved in round k (about n/2):
 *   ceil(log2 n) alpha + sum_k B_k b beta + (n + 2 sum_k B_k) b copy
 * On a topology file the rounds r -> r + 2^k cost their pattern's alpha and beta on the
 * routes (glucx_topo_step_cost: a link direction that several messages of one step cross
 * charges each of them).
 * Far fewer messages than pairwise, but each block travels about log2(n)/2 times: for small
 * blocks only.
 * Topology: none assumed.
 * Source: Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient algorithms for all-to-all
 * communications in multiport message-passing systems", IEEE TPDS 8(11), 1997; MPICH's
 * short-message alltoall (Thakur, Rabenseifner & Gropp, IJHPCA 2005).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/alltoall/alltoall.h"

double glucx_alltoall_bruck_cost(const glucx_topo_t *topo, size_t bytes)
{
    const int n = topo->size;
    const double b = (double)bytes / n;
    double t = n * b * topo->copy_ns_per_byte;
    for (int k = 0; (1 << k) < n; k++) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_SHIFT_UP, k);
        const double moved = glucx_alltoall_bruck_blocks(n, k) * b;
        t += l.alpha_ns + moved * l.beta_ns_per_byte + 2.0 * moved * topo->copy_ns_per_byte;
    }
    return t;
}

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static char *at(const void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

glucx_status_t glucx_alltoall_bruck_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t b = ctx->args->count * ctx->esize;
    const void *in = ctx->sendbuf;
    char *out = ctx->recvbuf;
#define SLOT(i) at(out, (size_t)((r - (i) + n) % n) * b)

    /* t[i] = the block for rank r+i, kept in slot (r-i) */
    if (b > 0)
        for (int i = 0; i < n; i++)
            memcpy(SLOT(i), at(in, (size_t)((r + i) % n) * b), b);
    if (n == 1)
        return GLUCX_OK;

    int most = 0;
    for (int k = 0; (1 << k) < n; k++)
        if (glucx_alltoall_bruck_blocks(n, k) > most)
            most = glucx_alltoall_bruck_blocks(n, k);
    glucx_status_t st;
    char *pack = glucx_coll_malloc(ctx, 2 * (size_t)most * b, &st);
    if (pack == NULL)
        return st;
    char *unpack = at(pack, (size_t)most * b);

    for (int k = 0; (1 << k) < n; k++) {
        const int bit = 1 << k;
        const int nb = glucx_alltoall_bruck_blocks(n, k);
        glucx_tx_req_t reqs[2];
        st =
            glucx_coll_irecv(ctx, (r - bit + n) % n, (unsigned)k, unpack, (size_t)nb * b, &reqs[0]);
        if (st != GLUCX_OK)
            break;
        if (b > 0)
            for (int i = bit, j = 0; i < n; i++)
                if (i & bit)
                    memcpy(pack + (size_t)j++ * b, SLOT(i), b);
        st = glucx_coll_isend(ctx, (r + bit) % n, (unsigned)k, pack, (size_t)nb * b, &reqs[1]);
        if (st == GLUCX_OK)
            st = glucx_coll_waitall(ctx, reqs, 2);
        if (st != GLUCX_OK)
            break;
        if (b > 0)
            for (int i = bit, j = 0; i < n; i++)
                if (i & bit)
                    memcpy(SLOT(i), unpack + (size_t)j++ * b, b);
    }
#undef SLOT
    free(pack);
    return st;
}
