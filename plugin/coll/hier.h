/**
 * Internal: what the topology-aware algorithms know of the network (glucx_coll_shape, pure, for
 * the cost functions) and of this rank's place in it (glucx_coll_layout, for the run functions),
 * and the direct (full-mesh) engines they compose with the ring engines.
 *
 * The network is seen as dimensions, innermost first. Dimension 0 is the package: the p ranks of
 * one package (host), in communicator rank order, member l being the package's "local rank" l.
 * The outer dimensions connect packages. With a topology file that the communicator covers
 * exactly (every rank of the file present, GLUCX_TOPOLOGY), they are the file's outer dimensions
 * of size > 1, a package's coordinate along each being its file coordinate; otherwise there is
 * one outer dimension of all packages in package order (the switch between hosts that glucx
 * assumes without a file). A "line" along dimension d through a rank is the ranks with its local
 * rank whose packages differ from its own in coordinate d only, ordered by that coordinate: the
 * group a phase of a hierarchical algorithm runs on.
 *
 * Packages must be of equal size; otherwise there is no shape and the hierarchical algorithms
 * return GLUCX_ERR_UNSUPPORTED (the core then runs the next algorithm by cost). A package of one
 * rank is a dimension 0 of size 1, which every algorithm handles (its phases there are copies).
 */
#ifndef GLUCX_COLL_HIER_H
#define GLUCX_COLL_HIER_H

#include "coll/coll.h"

/** How a phase moves data along one dimension. */
typedef enum glucx_coll_engine {
    GLUCX_ENGINE_DIRECT, /**< every member to every member at once: a FullyConnected or
                              Switch dimension (and the switch between hosts without a file) */
    GLUCX_ENGINE_RING    /**< pipelined ring along the line: a Ring dimension */
} glucx_coll_engine_t;

/** The dimensions of a topology as the hierarchical algorithms and their costs see them. */
typedef struct glucx_coll_shape {
    int ndims;                    /**< dimension 0 (the package) and the outer ones */
    int size[GLUCX_NET_MAX_DIMS]; /**< members along each dimension; product = ranks */
    glucx_coll_engine_t engine[GLUCX_NET_MAX_DIMS];
    glucx_link_cost_t link[GLUCX_NET_MAX_DIMS]; /**< cost of one link of the dimension */
    /** Flows that share one link of the dimension when every local rank runs its line's phase
     *  at once: 1 inside the package, ranks per package outside it (their messages cross the same
     *  links between two packages). */
    int flows[GLUCX_NET_MAX_DIMS];
} glucx_coll_shape_t;

/**
 * The shape of @p topo (see above). Link costs: with a file, glucx_topo_dim_cost (calibrated
 * where measured, else nominal); without, the link-class costs (INTRA inside, INTER between).
 * @return 1 with @p shape filled, 0 when packages are of unequal size (no shape). Pure.
 */
int glucx_coll_shape(const glucx_topo_t *topo, glucx_coll_shape_t *shape);

/** This rank's place in the shape: its line (group) along every dimension. */
typedef struct glucx_coll_layout {
    glucx_coll_shape_t shape;
    int index[GLUCX_NET_MAX_DIMS]; /**< this rank's position in each line */
    int *line[GLUCX_NET_MAX_DIMS]; /**< communicator ranks of each line, [shape.size[d]] */
    /** For every package: its position in the outer dimensions' order (outer coordinates,
     *  dimension 1 fastest), [npackages]; and each package's ranks in rank order,
     *  ranks[k * p + l] (k: that position, l: local rank). */
    int *pkg_pos;
    int *ranks;
    int pos;       /**< this rank's package's position */
    int npackages; /**< P */
    int *storage_; /* private */
} glucx_coll_layout_t;

/**
 * Build this rank's layout (ctx->rank of ctx->topo; ctx must be the communicator's context, not
 * a subgroup's). @return GLUCX_OK; GLUCX_ERR_UNSUPPORTED when there is no shape (before any
 * traffic: the same on every rank); GLUCX_ERR_NO_MEMORY (collective failed, peers notified).
 * Release with glucx_coll_layout_fini.
 */
glucx_status_t glucx_coll_layout_init(glucx_coll_ctx_t *ctx, glucx_coll_layout_t *layout);
void glucx_coll_layout_fini(glucx_coll_layout_t *layout);

/**
 * Positions a line's member covers once dimensions 1..k-1 are gathered: the product of their
 * sizes (positions vary dimension 1 fastest, so that is also dimension k's stride).
 */
static inline int glucx_coll_layout_group(const glucx_coll_layout_t *layout, int k)
{
    int g = 1;
    for (int j = 1; j < k; j++)
        g *= layout->shape.size[j];
    return g;
}

/**
 * The outer dimension (shape index, 1 .. ndims - 1) that local rank @p l visits at its outer
 * phase @p j (0-based): in order (1, 2, ...), or with @p rotated starting at dimension
 * 1 + l mod D (D = ndims - 1 outer dimensions) and wrapping, so that local ranks with different
 * l mod D are on different dimensions in every phase (the rotation of Themis, Rashidi et al.,
 * ISCA 2022). Pure; ndims >= 2.
 */
static inline int glucx_coll_outer_dim(const glucx_coll_shape_t *s, int rotated, int l, int j)
{
    const int nout = s->ndims - 1;
    return 1 + (j + (rotated ? l % nout : 0)) % nout;
}

/** Coordinate of package position @p q along outer dimension @p d (1 .. ndims - 1). */
static inline int glucx_coll_layout_coord(const glucx_coll_layout_t *layout, int q, int d)
{
    return q / glucx_coll_layout_group(layout, d) % layout->shape.size[d];
}

/** Run dimension @p d's phase on the subgroup of this rank's line: fills @p sub. */
static inline void glucx_coll_layout_line(const glucx_coll_ctx_t *ctx,
                                          const glucx_coll_layout_t *layout, int d,
                                          glucx_coll_ctx_t *sub)
{
    glucx_coll_subgroup(ctx, layout->line[d], layout->shape.size[d], layout->index[d], sub);
}

/* ---- one phase along a dimension, blocking ---- */

/**
 * Reduce-scatter of ctx's group along one dimension with @p engine: DIRECT as the step-by-step
 * phase below (one step, run to completion), RING with the segmented, pipelined
 * glucx_coll_ring_reduce_scatter_blocks (partial results of block b go to @p work at element
 * offset off[b]; @p work may equal @p in). Advances *step by the steps it used.
 * @return GLUCX_OK or the failure status (the transport is failed then).
 */
glucx_status_t glucx_coll_dim_reduce_scatter(glucx_coll_ctx_t *ctx, glucx_coll_engine_t engine,
                                             const char *in, char *work, const size_t *off,
                                             const size_t *len, char *out, unsigned *step);

/** Allgather of ctx's group along one dimension with @p engine (blocks in @p buf, own in
 *  place): DIRECT as the step-by-step phase below, RING with glucx_coll_ring_allgather_blocks;
 *  advances *step by the steps it used. */
glucx_status_t glucx_coll_dim_allgather(glucx_coll_ctx_t *ctx, glucx_coll_engine_t engine,
                                        char *buf, const size_t *off, const size_t *len,
                                        unsigned *step);

/* ---- the same phases, step by step (for algorithms that keep several in flight) ---- */

/**
 * A reduce-scatter or allgather of ctx's group along one dimension, run one step at a time
 * without blocking, so that an algorithm can keep several (e.g. of different chunks) in flight
 * and advance whichever completes (glucx_coll_wait_some). Messages, bytes per pair and reduction
 * order are those of the blocking engines' definitions:
 * - DIRECT reduce-scatter: one step; block b of @p in to member b, the n contributions of the own
 *   block reduced in member order (the lowest first, coll.h's canonical order) into @p out.
 *   Cost on a full mesh: alpha + (n-1)/n m (beta + gamma), m all blocks. Source: the direct
 *   (pairwise, one-shot) reduce-scatter of fully connected packages, as NCCL uses inside an
 *   NVLink/NVSwitch domain.
 * - RING reduce-scatter: n - 1 steps; at step s member i sends block (i - 1 - s) mod n (its input
 *   at s = 0, then the partial sum in @p work) to its right neighbour and receives block
 *   (i - 2 - s) mod n from its left one, adding its own input to it (into @p work, or @p out for
 *   its own block at the last step).
 * - DIRECT allgather: one step; the own block of @p buf to every member, theirs into place.
 *   Cost on a full mesh: alpha + (n-1)/n m beta.
 * - RING allgather: n - 1 steps; at step s block (i - s) mod n goes right, block (i - 1 - s) mod n
 *   comes from the left into place.
 * Blocks: len[b] elements at element offset off[b] (of @p in / @p work / @p buf); @p out may be
 * work + off[i] or in + off[i] (in place). Step numbers @p step .. @p step + steps - 1
 * (glucx_coll_phase_steps). The arrays and buffers are borrowed and must outlive the phase.
 */
typedef struct glucx_coll_phase {
    glucx_coll_ctx_t sub; /**< the line (glucx_coll_layout_line) */
    glucx_coll_engine_t engine;
    int rs; /**< 1: reduce-scatter, 0: allgather */
    const char *in;
    char *work, *out, *buf;
    const size_t *off, *len;
    unsigned step;
    int s, nsteps; /**< the step posted (or next), and how many */
    glucx_tx_req_t *reqs;
    int nreq; /**< requests of step s, all posted */
    char *scratch;
    const char *own; /**< direct reduce-scatter: the own contribution (a copy if out aliases it) */
} glucx_coll_phase_t;

/** Steps a phase of @p n members takes with @p engine (0 for one member). */
static inline int glucx_coll_phase_steps(glucx_coll_engine_t engine, int n)
{
    return n < 2 ? 0 : engine == GLUCX_ENGINE_DIRECT ? 1 : n - 1;
}

/**
 * Set up @p ph (its fields above filled by the caller: sub, engine, rs, in/work/out or buf,
 * off, len, step) and post its first step; a group of one member is done at once (the own block
 * copied to out). @return GLUCX_OK or the failure status (collective failed).
 */
glucx_status_t glucx_coll_phase_start(glucx_coll_phase_t *ph);

/**
 * When every one of ph->reqs[0..nreq) is done: check them (glucx_coll_waitall), finish step s
 * (reductions), post the next. @return GLUCX_OK or the failure status.
 */
glucx_status_t glucx_coll_phase_advance(glucx_coll_phase_t *ph);

/** 1 when every step is finished. */
static inline int glucx_coll_phase_done(const glucx_coll_phase_t *ph)
{
    return ph->s >= ph->nsteps;
}

/** 1 when the posted step's requests are all done (glucx_coll_phase_advance may run). */
int glucx_coll_phase_ready(const glucx_coll_phase_t *ph);

/** Release what start allocated (also after a failure: the transport completed every request). */
void glucx_coll_phase_fini(glucx_coll_phase_t *ph);

/**
 * Builds phase @p j of chunk @p c into @p ph: sub, engine, rs, the buffers, off/len (borrowed:
 * they must outlive the phase) and ph->step, the phase's first step counted from the chunk's
 * first (the executor adds c x steps_per_chunk). Members of one line must number a phase alike.
 * @return GLUCX_OK or a failure status (collective failed).
 */
typedef glucx_status_t (*glucx_coll_phase_fn)(void *arg, int c, int j, glucx_coll_phase_t *ph);

/**
 * Run @p nchunks chunks, chunk c of nphase[c] phases, every chunk's phases one after the other and
 * all chunks in flight at once: the rank advances whichever chunk's step has arrived
 * (glucx_coll_wait_some) and starts that chunk's next phase when one finishes, so a slow peer of
 * one chunk does not hold the others. Chunk c uses steps c x @p steps_per_chunk onwards
 * (nchunks x steps_per_chunk must stay below GLUCX_COLL_STEP_CONFIRM).
 * @return GLUCX_OK or the first failure status (the collective is failed then).
 */
glucx_status_t glucx_coll_pipeline(glucx_coll_ctx_t *ctx, int nchunks, const int *nphase,
                                   unsigned steps_per_chunk, glucx_coll_phase_fn build, void *arg);

/**
 * Predicted time of @p nchunks chunks in flight: the busiest of the @p nload resources' total
 * work (@p load, ns each) plus the pipeline's fill, one chunk's sequential time @p seq less its
 * share of that resource; exactly @p seq for one chunk (so one chunk ties with the sequential
 * algorithm bit for bit). Pure.
 */
double glucx_coll_pipeline_cost(const double *load, int nload, double seq, int nchunks);

/**
 * Chunks for a pipelined algorithm on @p bytes in all: one per @p chunk_bytes, 1 to
 * GLUCX_COLL_CHUNKS_MAX (8), at most @p max_chunks (e.g. elements per block), and few enough
 * that @p steps_per_chunk steps each fit below GLUCX_COLL_STEP_CONFIRM. Pure.
 * The chunk sizes keep the messages at a few hundred KiB: measured on the emulated 2x2 torus
 * (docs/perf.md), smaller messages pay the transport's per-message cost (torus_rotated with
 * 256 KiB chunks: 1 MiB allreduces 1.3-1.6x slower than one chunk; the hierarchical allgather
 * and reduce-scatter with 1 MiB chunks of all blocks: 4 MiB calls 1.4-2x slower than one
 * chunk), and more than 8 chunks gained nothing at 16 MiB.
 */
#define GLUCX_COLL_ALLREDUCE_CHUNK_BYTES ((size_t)1 << 20) /**< torus_rotated: of the vector */
#define GLUCX_COLL_OFFLOAD_CHUNK_BYTES ((size_t)4 << 20)   /**< allgather/RS: of all blocks */
#define GLUCX_COLL_CHUNKS_MAX 8
int glucx_coll_pipeline_chunks(size_t bytes, size_t chunk_bytes, size_t max_chunks,
                               unsigned steps_per_chunk);

/** Predicted time of one dimension's reduce-scatter (@p gamma: the reduction's cost per byte; 0
 *  for an allgather) of @p bytes in total over that dimension's @p d links, with @p flows such
 *  phases sharing each link (s->flows[d] when every local rank runs one). */
double glucx_coll_dim_cost(const glucx_coll_shape_t *s, int d, double bytes, double gamma,
                           int flows);

/**
 * Predicted time (ns) of the hierarchical allgather (@p rs = 0) or reduce-scatter (@p rs = 1) of
 * @p bytes in total (all blocks) on @p topo, its chunks in flight (glucx_coll_pipeline_chunks):
 * the busiest resource's total work (one direction of an outer link, every local rank's chunks
 * that cross it, beta only; or a rank's package exchanges and reductions) plus the pipeline's
 * fill, one chunk's sequential time less its share of that resource. One chunk's sequential
 * time: the package phase (one direct or ring exchange per package position, of one block per
 * member), then the outer phases with every local rank's blocks taking the outer dimensions in
 * its rotated order (glucx_coll_outer_dim), each phase the longest of its rotations, the local
 * ranks of one rotation sharing the links of its dimension. See
 * plugin/coll/allgather/hierarchical.c for the formula and its source. INFINITY without a
 * shape or with one package. Pure.
 */
double glucx_coll_offload_cost(const glucx_topo_t *topo, size_t bytes, int rs);

/* ---- rows composed of other rows on subgroups (hierarchical broadcast, reduce, alltoall) ---- */

/**
 * The outer network (dimensions 1 .. ndims - 1) seen as one link, for a phase whose members are
 * one rank per package of every package at once (a message may cross every outer dimension):
 * alpha the sum of the outer dimensions' alphas (one hop along each), beta the largest outer
 * beta. On one outer dimension (no topology file, or one outer dimension of size > 1) it is
 * that dimension's link exactly; on a torus it neglects the extra hops of rings longer than 3
 * and the sharing of a link by routes of different pairs. Pure; ndims >= 2.
 */
glucx_link_cost_t glucx_coll_outer_link(const glucx_coll_shape_t *s);

/** Fill @p members [layout->npackages] with the communicator ranks of local rank @p l of every
 *  package, in package position order (the "cross" line of local rank l: this rank's index in
 *  its own cross line is layout->pos). */
void glucx_coll_layout_cross(const glucx_coll_layout_t *layout, int l, int *members);

/**
 * Run an existing row's @p run (e.g. glucx_broadcast_binomial_run) as one phase of a composed
 * algorithm, on the subgroup @p members [@p n] of @p ctx's communicator (this rank is member
 * @p index), with @p args (borrowed: a copy of ctx->args with the subgroup's root and count),
 * input @p sendbuf and output @p recvbuf (borrowed), its steps offset by @p step_base (added to
 * ctx->step_base): each phase gets its own step range. The row's messages, errors and traces
 * name communicator ranks and ctx's collective and algorithm. A row that declines
 * (GLUCX_ERR_UNSUPPORTED) after earlier phases sent is a failure of the collective
 * (GLUCX_ERR_INVALID_ARG, "internal error", peers notified), never a silent fallback.
 * @return GLUCX_OK or the failure status (the transport is failed then).
 */
glucx_status_t glucx_coll_run_on(glucx_coll_ctx_t *ctx, const int *members, int n, int index,
                                 const glucx_coll_args_t *args, const void *sendbuf, void *recvbuf,
                                 unsigned step_base, glucx_status_t (*run)(glucx_coll_ctx_t *));

/**
 * Where the root @p root (communicator rank) sits in @p layout: its package's position
 * (*pos_p) and its local rank (*local_p). Pure.
 */
void glucx_coll_layout_find(const glucx_coll_layout_t *layout, const glucx_topo_t *topo, int root,
                            int *pos_p, int *local_p);

#endif
