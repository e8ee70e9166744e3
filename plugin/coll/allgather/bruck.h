/** Internal: Bruck's allgather on blocks laid out in rank order, shared with allgatherv. */
#ifndef GLUCX_COLL_ALLGATHER_BRUCK_H
#define GLUCX_COLL_ALLGATHER_BRUCK_H

#include "coll/coll.h"

/**
 * Bruck allgather of n = ctx->size blocks stored contiguously in rank order in @p buf: block b
 * is len[b] elements at element offset off[b], with off[b + 1] == off[b] + len[b]. This rank's
 * block is at @p own: the first step (which moves only that block) sends it from there, and it
 * is then copied into place before the second step reads it from @p buf (a no-op when @p own is
 * its place already; NULL: it is in place already). In step k (distance d = 2^k) rank r sends the
 * blocks [r, r + c) (mod n, c = min(d, n - d)) to r - d and receives [r + d, r + d + c) from r + d,
 * each range as at most two contiguous pieces (it may wrap around the end of the buffer), so
 * blocks land at their final place and no rotation is needed.
 * Steps 2k and 2k+1 (the two pieces), k < ceil(log2 n). Empty pieces travel as zero-byte
 * messages, so a rank with different arguments is detected everywhere.
 * @return GLUCX_OK or the failure status.
 */
glucx_status_t glucx_coll_bruck_allgather_blocks(glucx_coll_ctx_t *ctx, char *buf,
                                                 const size_t *off, const size_t *len,
                                                 const void *own);

#endif
