/**
 * Internal: block arithmetic and the pipelined ring allgather engine, shared by allgather,
 * allgatherv and allreduce (glucx_coll_split, glucx_coll_ring_allgather_blocks).
 */
#ifndef GLUCX_COLL_ALLGATHER_RING_H
#define GLUCX_COLL_ALLGATHER_RING_H

#include "coll/coll.h"

/**
 * Segment size of the pipelined rings: a block larger than this travels as several messages
 * of at most about this many bytes, so that a segment is reduced or forwarded while the next one
 * is on the wire, and a received segment is still in cache when it is reduced.
 */
#define GLUCX_COLL_RING_SEG_BYTES ((size_t)256 * 1024)

/**
 * Split @p count elements into @p parts nearly equal parts (the first count % parts get one
 * more). @return the offset of part @p i; its length in *len_p.
 */
static inline size_t glucx_coll_split(size_t count, size_t parts, size_t i, size_t *len_p)
{
    const size_t q = count / parts, rem = count % parts;
    *len_p = q + (i < rem ? 1 : 0);
    return i * q + (i < rem ? i : rem);
}

/**
 * Segments a block of @p len elements of @p esize bytes travels in. An empty block still travels
 * as one zero-byte message: every rank then hears (through a chain of checked messages) from
 * every other, so a rank whose arguments differ is detected on all ranks, even when its own
 * block is empty.
 */
static inline size_t glucx_coll_ring_nseg(size_t len, size_t esize)
{
    const size_t bytes = len * esize;
    return bytes == 0 ? 1 : (bytes + GLUCX_COLL_RING_SEG_BYTES - 1) / GLUCX_COLL_RING_SEG_BYTES;
}

/**
 * Ring allgather of n = ctx->size blocks inside @p buf: block b is len[b] elements at element
 * offset off[b]. This rank's block (ctx->rank) is at @p own, from where it is sent and then
 * copied into place once the exchange is over (a no-op when @p own is its place already; NULL:
 * it is in place already, and sent from there). At step t (0..n-2)
 * each rank forwards block (rank - t) to its right neighbour and receives block (rank - t - 1)
 * from its left one, in segments of GLUCX_COLL_RING_SEG_BYTES, each forwarded as soon as it
 * arrived. All receives are posted before the first send.
 * Messages use steps step_base .. step_base + n - 2. Blocks must not overlap; an empty block
 * travels as a zero-byte message.
 * @return GLUCX_OK or the failure status (the transport is failed then).
 */
glucx_status_t glucx_coll_ring_allgather_blocks(glucx_coll_ctx_t *ctx, char *buf, const size_t *off,
                                                const size_t *len, unsigned step_base,
                                                const void *own);

#endif
