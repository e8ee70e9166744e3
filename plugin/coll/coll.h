/**
 * Internal: the collective algorithm framework (glucx_coll_*).
 *
 * Every collective kind has a table of algorithms (plugin/coll/<kind>/<kind>.c), one file per
 * algorithm. A row has a pure alpha-beta cost function and a blocking run function written on
 * the non-blocking transport interface (transport/tx.h) through the helpers below.
 *
 * Rules every algorithm follows:
 * - It decides GLUCX_ERR_UNSUPPORTED only from values that are equal on all ranks (size, count,
 *   root, dtype), before sending anything; the core then tries the next algorithm.
 * - Steps: each message carries a step number (0..65535) unique within the collective for its
 *   (sender, receiver) pair and direction, so messages of different steps never match.
 * - Reductions keep operand order canonical so every rank computes bitwise the same result:
 *   combine contributions in increasing rank order, i.e. glucx_coll_reduce(ctx, dst, lo, hi, n)
 *   where lo holds the contribution of the lower ranks.
 * - Errors: glucx_coll_waitall() checks every received message's length and signature; on any
 *   failure it fails the transport (which notifies the peers and completes every outstanding
 *   request), so an algorithm just returns the status it got. An algorithm that fails on its
 *   own (e.g. malloc) calls glucx_coll_fail().
 * - Never send to self: copy locally (glucx_coll_copy).
 * - Input and output never overlap except as glucx_coll_args_t documents for IN_PLACE: the core
 *   copies an input that overlaps the output in any other way to ctx->scratch_in first.
 * - Rooted collectives and alltoallv, where a rank's own messages may all look right while a
 *   peer's do not, are followed by a zero-byte confirmation round run by the core, so a
 *   mismatch found by any rank is returned by every rank.
 */
#ifndef GLUCX_COLL_H
#define GLUCX_COLL_H

#include <stddef.h>
#include <stdint.h>

#include <glucx/glucx.h>

#include "kernel/reduce.h"
#include "topo/topo.h"
#include "transport/tx.h"
#include "util/tracepoint.h"

/* Collective wire-tag layout (the transport adds the source in bits 48-61):
 * bit 63 = 1 (collective space), bits 32-47 seq (16 bits), bits 16-31 step (16 bits),
 * bits 0-15 signature: coll (4 bits) | dtype (4) | op (3) | root mod 32 for rooted collectives,
 * else a hash of count and algorithm (5).
 * The first three are exact, so a dtype or op mismatch is always caught; counts are caught by
 * the exact length check of every receive. */
/* The collective half of the tag space is the transport's exact-length one: every collective
 * receive is from one source with exactly the sender's length (glucx_coll_irecv). */
#define GLUCX_COLL_TAG_SPACE GLUCX_TX_TAG_EXACT
#define GLUCX_COLL_TAG_SEQ_SHIFT 32
#define GLUCX_COLL_TAG_SEQ_MASK UINT64_C(0xffff)
#define GLUCX_COLL_TAG_STEP_SHIFT 16
#define GLUCX_COLL_STEP_MAX 0xffffu
#define GLUCX_COLL_TAG_SIG_MASK UINT64_C(0xffff)
/** Steps from here up are reserved for the core's confirmation round (algorithms use fewer:
 *  at most about 2 x GLUCX_COMM_SIZE_MAX). */
#define GLUCX_COLL_STEP_CONFIRM 0xffe0u

/** Everything an algorithm needs to run one collective (built by the core, read-only to them). */
typedef struct glucx_coll_ctx {
    glucx_tx_t *tx;
    /** This rank and the number of ranks of the group the algorithm runs on: the communicator,
     *  or a subgroup of it (glucx_coll_subgroup). Peers an algorithm passes to the helpers are
     *  group ranks. */
    int rank;
    int size;
    /** group rank -> communicator rank, [size]; NULL: the group is the communicator. */
    const int *group;
    int comm_rank;                 /**< this rank in the communicator (traces, messages) */
    int comm_size;                 /**< ranks of the communicator */
    const glucx_coll_args_t *args; /**< validated; sendbuf already resolved (see below) */
    /**
     * Resolved input: never GLUCX_IN_PLACE. For in-place calls, the core points sendbuf at the
     * input location inside recvbuf as glucx_coll_args_t documents, and sets in_place.
     */
    const void *sendbuf;
    /** Output: args->recvbuf. May be NULL where the output is insignificant (non-root reduce
     *  and gather); may overlap sendbuf only as glucx_coll_args_t allows (own block of
     *  allgather(v)/gather, allreduce/reduce/broadcast in place, scatter root's own block). */
    void *recvbuf;
    int in_place;
    size_t esize;             /**< bytes per element */
    glucx_reduce_fn_t reduce; /**< kernel for (dtype, op); NULL if the collective does not reduce */
    const glucx_topo_t *topo;
    uint32_t seq;         /**< collective sequence number on this comm (same on all ranks) */
    uint16_t sig;         /**< signature of (coll, dtype, op, root, count, algorithm) */
    const char *alg_name; /**< for messages */
    int alg_index;        /**< row in glucx_coll_tables[args->coll] */
    int64_t deadline_ns;  /**< CLOCK_MONOTONIC deadline of the whole collective */
    int64_t timeout_ms;   /**< the timeout that deadline came from (< 0: none), for messages */
    void *scratch_in;     /**< core-owned copy of the input for in-place reduce_scatter and
                               alltoall (so algorithms never see input and output overlap) */
    /** Added to every step number of this context's messages (0 from glucx_coll_ctx_init): an
     *  algorithm that runs another row on a subgroup (glucx_coll_subgroup) sets it so that the
     *  row's steps 0, 1, ... become its phase's own step range. The total stays below
     *  GLUCX_COLL_STEP_CONFIRM. */
    unsigned step_base;
    uint64_t trace_comm; /**< comm id of trace events (0 when the caller sets none) */
    uint32_t trace_seq;  /**< full 32-bit sequence number for trace events */
    char why[160];       /**< why the algorithm declined (glucx_coll_decline), else "" */
} glucx_coll_ctx_t;

/** One algorithm: a row of a collective's table. */
typedef struct glucx_coll_alg {
    const char *name; /**< short name, as GLUCX_TUNE and opts.algorithm take it, e.g. "ring" */
    const char *desc; /**< one line: what it is and where it comes from */
    /**
     * Predicted time in ns for @p bytes (the collective's message size as nccl-tests counts it:
     * allreduce/reduce/broadcast count*esize; allgather(v) total output; reduce_scatter,
     * alltoall(v), scatter and gather total of all blocks; barrier 0) on @p topo with
     * topo->size ranks. Pure: no allocation, no I/O. INFINITY when the algorithm does not apply.
     */
    double (*cost)(const glucx_topo_t *topo, size_t bytes);
    /** Run the collective (blocking). @return GLUCX_OK, GLUCX_ERR_UNSUPPORTED (before any
     *  traffic; the core tries the next), or the failure status. */
    glucx_status_t (*run)(glucx_coll_ctx_t *ctx);
} glucx_coll_alg_t;

typedef struct glucx_coll_table {
    const glucx_coll_alg_t *algs;
    int count;
} glucx_coll_table_t;

/** Per collective kind, its algorithm table (plugin/coll/tables.c); each is defined as
 *  glucx_<kind>_table in plugin/coll/<kind>/<kind>.c. */
extern const glucx_coll_table_t *const glucx_coll_tables[GLUCX_COLL_COUNT];
#define GLUCX_COLL_TABLE_DECL_(name, lname) extern const glucx_coll_table_t glucx_##lname##_table;
GLUCX_COLL_MAP(GLUCX_COLL_TABLE_DECL_)
#undef GLUCX_COLL_TABLE_DECL_

/** Collective message size in bytes as glucx_coll_alg_t::cost takes it. */
size_t glucx_coll_bytes(const glucx_coll_args_t *args, int size);

/**
 * Check @p args for a communicator of @p size ranks with this @p rank: dtype/op supported,
 * root in range, buffers non-NULL where counts are non-zero, no size_t overflow.
 * @return GLUCX_OK or GLUCX_ERR_INVALID_ARG with the message naming the collective and argument.
 * Purely local: no traffic.
 */
glucx_status_t glucx_coll_args_check(const glucx_coll_args_t *args, int rank, int size);

/**
 * Prepare @p ctx to run @p args with algorithm number @p alg_index of the collective's table:
 * resolves IN_PLACE (copying the input to ctx->scratch_in where the aliasing would otherwise
 * overlap), picks the kernel, computes the signature and the deadline (timeout_ms < 0: none).
 * @return GLUCX_OK or GLUCX_ERR_NO_MEMORY (nothing to release then). Purely local.
 */
glucx_status_t glucx_coll_ctx_init(glucx_coll_ctx_t *ctx, glucx_tx_t *tx, const glucx_topo_t *topo,
                                   const glucx_coll_args_t *args, uint32_t seq, int alg_index,
                                   int64_t timeout_ms);

/** Release what glucx_coll_ctx_init() allocated. */
void glucx_coll_ctx_fini(glucx_coll_ctx_t *ctx);

/**
 * Run the algorithm chosen in ctx_init and finish the operator (AVG: divide by the number of
 * ranks where the result lands). @return as glucx_coll_alg_t::run.
 */
glucx_status_t glucx_coll_ctx_run(glucx_coll_ctx_t *ctx);

/* ---- helpers for algorithms (plugin/coll/common.c) ---- */

/** Wire tag of @p step (plus ctx->step_base) in this collective (source bits zero). */
static inline uint64_t glucx_coll_tag(const glucx_coll_ctx_t *ctx, unsigned step)
{
    step += ctx->step_base;
    return GLUCX_COLL_TAG_SPACE |
           (((uint64_t)ctx->seq & GLUCX_COLL_TAG_SEQ_MASK) << GLUCX_COLL_TAG_SEQ_SHIFT) |
           ((uint64_t)(step & GLUCX_COLL_STEP_MAX) << GLUCX_COLL_TAG_STEP_SHIFT) | ctx->sig;
}

/** Post a send of @p bytes to @p peer (!= rank) at @p step. req in caller storage. */
glucx_status_t glucx_coll_isend(glucx_coll_ctx_t *ctx, int peer, unsigned step, const void *buf,
                                size_t bytes, glucx_tx_req_t *req);

/** Post a receive of exactly @p bytes from @p peer (!= rank) at @p step. */
glucx_status_t glucx_coll_irecv(glucx_coll_ctx_t *ctx, int peer, unsigned step, void *buf,
                                size_t bytes, glucx_tx_req_t *req);

/**
 * Wait for reqs[0..n) until the collective's deadline. Checks each receive: exact length and the
 * sender's signature. On any failure (timeout, peer failed, mismatch, notice from a peer) fails
 * the transport with a message naming the collective, sizes and peer, and returns the status.
 */
glucx_status_t glucx_coll_waitall(glucx_coll_ctx_t *ctx, glucx_tx_req_t *reqs, int n);

/**
 * Wait until at least one of the @p n posted requests @p reqs is done (for algorithms that keep
 * several independent steps in flight and advance whichever completes first). Traced as a
 * blocking wait when none is done on entry (the completed requests' send_end/recv_end inside
 * it). The requests that completed are not checked here: pass each step's requests to
 * glucx_coll_waitall once all are done (it returns at once and checks lengths and signatures).
 * On a timeout, a failed transport or a foreign collective, fails the collective as
 * glucx_coll_waitall does (naming the peer) and returns the status. The transport's wait_any is
 * used where it has one; otherwise the first pending request is waited for.
 * @return GLUCX_OK (some request done) or the failure status.
 */
glucx_status_t glucx_coll_wait_some(glucx_coll_ctx_t *ctx, glucx_tx_req_t *const *reqs, int n);

/** isend to @p dst and irecv from @p src at @p step, then wait for both. Either side may be
 *  skipped by passing a peer of -1. */
glucx_status_t glucx_coll_sendrecv(glucx_coll_ctx_t *ctx, int dst, const void *sbuf, size_t sbytes,
                                   int src, void *rbuf, size_t rbytes, unsigned step);

/** dst = a op b over @p count elements with the collective's kernel (traced as
 *  reduce_begin/reduce_end). */
static inline void glucx_coll_reduce(const glucx_coll_ctx_t *ctx, void *dst, const void *a,
                                     const void *b, size_t count)
{
    GLUCX_TP(reduce_begin, ctx->trace_comm, ctx->comm_rank, ctx->trace_seq, count * ctx->esize,
             (int)ctx->args->dtype, (int)ctx->args->op);
    ctx->reduce(dst, a, b, count);
    GLUCX_TP(reduce_end, ctx->trace_comm, ctx->comm_rank, ctx->trace_seq, count * ctx->esize,
             (int)ctx->args->dtype, (int)ctx->args->op);
}

/** The communicator rank of group rank @p peer of @p ctx. */
static inline int glucx_coll_comm_rank(const glucx_coll_ctx_t *ctx, int peer)
{
    return ctx->group != NULL ? ctx->group[peer] : peer;
}

/**
 * Make @p sub a context for running an algorithm's engine on a subgroup of @p parent's
 * communicator: the same collective (arguments, buffers, signature, sequence number, deadline,
 * kernel), with rank @p index among the @p n communicator ranks @p members (e.g. the ranks of
 * one package in rank order). Messages of the subgroup are ordinary messages of the collective
 * between communicator ranks, so the caller gives each phase its own step range (a pair of ranks
 * may meet in several phases). @p members is borrowed and must outlive @p sub; @p parent may
 * itself be a subgroup (members are always communicator ranks). Purely local.
 */
void glucx_coll_subgroup(const glucx_coll_ctx_t *parent, const int *members, int n, int index,
                         glucx_coll_ctx_t *sub);

/** memmove of @p bytes when dst != src. */
void glucx_coll_copy(void *dst, const void *src, size_t bytes);

/**
 * Fail the collective for a local reason (e.g. out of memory): formats the message, prefixed
 * with the collective and rank, fails the transport so the peers do not hang, returns status.
 */
glucx_status_t glucx_coll_fail(glucx_coll_ctx_t *ctx, glucx_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Decline the collective (before any traffic, from values equal on every rank): records the
 * reason in ctx->why, which the core names when the algorithm was forced.
 * @return GLUCX_ERR_UNSUPPORTED.
 */
glucx_status_t glucx_coll_decline(glucx_coll_ctx_t *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Scratch memory for an algorithm: malloc that fails the collective (peers notified) on error. */
void *glucx_coll_malloc(glucx_coll_ctx_t *ctx, size_t bytes, glucx_status_t *status_p);

#endif
