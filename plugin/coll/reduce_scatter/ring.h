/** Internal: the pipelined ring reduce-scatter engine, shared with allreduce. */
#ifndef GLUCX_COLL_REDUCE_SCATTER_RING_H
#define GLUCX_COLL_REDUCE_SCATTER_RING_H

#include "coll/coll.h"

/** Receive segments a ring rank keeps posted ahead of the one it is reducing. */
#define GLUCX_COLL_RING_WINDOW 4

/**
 * Ring reduce-scatter over n = ctx->size blocks: block b of every rank's input is len[b]
 * elements at element offset in_off[b] of @p in; this rank ends with block ctx->rank reduced
 * over all ranks in @p out (len[ctx->rank] elements).
 *
 * At step s (0..n-2) rank r sends its partial of block (r - s - 1) to the right neighbour and
 * receives the left neighbour's partial of block (r - s - 2), which it combines with its own
 * input (the received partial as the first operand) and forwards at step s + 1. Each block is
 * thus reduced once, along the ring starting at the rank after its owner. Blocks travel in
 * segments of GLUCX_COLL_RING_SEG_BYTES; GLUCX_COLL_RING_WINDOW receives stay posted into
 * small scratch slots, and each segment is reduced as soon as it is in and forwarded at once.
 *
 * @param work where partial results of block b may be written, at element offset in_off[b]
 *        (allreduce passes recvbuf; it may equal @p in, as for in-place allreduce); NULL: the
 *        engine keeps them in two block-sized scratch buffers (reduce_scatter).
 * @param out may equal in + in_off[rank] exactly (in-place allreduce); no other overlap.
 * Messages use steps step_base .. step_base + n - 2. Every send has completed on return.
 * @return GLUCX_OK or the failure status (the transport is failed then).
 */
glucx_status_t glucx_coll_ring_reduce_scatter_blocks(glucx_coll_ctx_t *ctx, const char *in,
                                                     const size_t *in_off, const size_t *len,
                                                     char *work, char *out, unsigned step_base);

#endif
