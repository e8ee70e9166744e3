/**
 * @file analysis/core/whatif.h
 * @brief What-if prediction from a measured run (`glucx-analyze whatif`): a collective-level
 *        replay of the run's per-rank sequence of collectives with every collective re-costed on
 *        another setup (topology, link rate, algorithm, rank count) by a cost function the
 *        caller gives (the tool gives libglucx's own; METRICS.md, "What-if prediction").
 *
 * The method is an offline trace replay in the manner of SimGrid's time-independent trace
 * replay and of ASTRA-sim's analytical backend driven by a measured workload: each rank's local
 * time between two of its collectives (compute and anything else) is kept as measured; a
 * collective starts when its last participant arrives and lasts its predicted duration; each
 * participant leaves at its measured share of it (the last to leave at start + duration). Nothing
 * here reads a trace or a topology: the tool fills a glucx_an_wi_input_t from the trace, tests
 * build one by hand. No global state; not thread-safe for one input.
 */
#ifndef GLUCX_ANALYSIS_WHATIF_H
#define GLUCX_ANALYSIS_WHATIF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/** The version of whatif.json's layout (its "whatif_version"). */
#define GLUCX_AN_WHATIF_VERSION 1

/** One collective instance as measured: who took part and when. */
typedef struct glucx_an_wi_coll {
    uint64_t comm_id;
    uint32_t seq;
    int64_t iteration; /**< the report's iteration index, -1: outside iterations (set-up) */
    int coll;          /**< EVENTS.md collective kind */
    int alg;           /**< EVENTS.md algorithm that ran, -1: none recorded */
    uint64_t bytes;    /**< the collective's size as the trace gives it (glucx_coll_bytes) */
    int comm_size;     /**< ranks of its communicator in the run */
    int requested;     /**< 1: the call requested its algorithm (sched_decision reason
                            "override"): libglucx runs that one whatever the setup */
    int nparts;        /**< participants recorded */
    int32_t *proc;     /**< [nparts] process index (0 .. nprocs-1) of each participant */
    int64_t *b, *e;    /**< [nparts] begin / end on each participant, ns; -1: not recorded */
} glucx_an_wi_coll_t;

/** The measured run: its processes and collectives. Owned by the caller of _init/_free. */
typedef struct glucx_an_wi_input {
    int nprocs;
    size_t ncolls, cap;
    glucx_an_wi_coll_t *colls;
} glucx_an_wi_input_t;

/** An empty input. */
void glucx_an_wi_init(glucx_an_wi_input_t *in);
/** Whether every collective of @p in involves all of its processes, as a prediction at
 *  @p ranks ranks (--ranks) needs. @return 0, or -1 with a message naming the first
 *  collective that does not (its kind, seq, communicator and process count) in @p err
 *  (@p errlen bytes). */
int glucx_an_wi_check_ranks(const glucx_an_wi_input_t *in, int ranks, char *err, size_t errlen);
/** Free every collective of @p in (not @p in itself); accepts an initialised empty input. */
void glucx_an_wi_free(glucx_an_wi_input_t *in);

/**
 * Append a collective instance (its participants are added with glucx_an_wi_part()).
 * @param in       the input.
 * @param comm_id, seq  its identity; @param iteration the report's iteration (-1: none).
 * @param coll, alg, bytes, comm_size  as glucx_an_wi_coll_t.
 * @return the new collective (owned by @p in; valid until the next append), or NULL when out of
 *         memory.
 */
glucx_an_wi_coll_t *glucx_an_wi_add(glucx_an_wi_input_t *in, uint64_t comm_id, uint32_t seq,
                                    int64_t iteration, int coll, int alg, uint64_t bytes,
                                    int comm_size);

/**
 * Record that process @p proc (>= 0; in->nprocs grows to cover it) took part in @p c from
 * @p b to @p e (ns; -1: that end was not recorded). A process given twice keeps its last times.
 * @return 0, or -1 when out of memory.
 */
int glucx_an_wi_part(glucx_an_wi_input_t *in, glucx_an_wi_coll_t *c, int32_t proc, int64_t b,
                     int64_t e);

/** A collective's costs as the cost function gives them. */
typedef struct glucx_an_wi_cost {
    double new_ns; /**< predicted duration on the new setup, ns; NAN: not costed (the measured
                        duration is kept) */
    double old_ns; /**< the measured algorithm on the measured setup, ns; NAN: unknown (relative
                        mode then uses new_ns as it is) */
    int alg;       /**< EVENTS.md algorithm on the new setup (-1: none) */
} glucx_an_wi_cost_t;

/**
 * Cost of collective @p c (its kind, measured algorithm, bytes, whether the call requested the
 * algorithm; borrowed) on @p comm_size ranks in the new setup. Fills @p out. Must be
 * deterministic (it is called once per distinct (kind, algorithm, bytes, requested) and once
 * per group). Returns 0, or -1 with a message in @p err naming the collective, its size and
 * why (the replay fails with it).
 */
typedef int (*glucx_an_wi_cost_fn)(void *arg, const glucx_an_wi_coll_t *c, int comm_size,
                                   glucx_an_wi_cost_t *out, char *err, size_t errlen);

enum {
    GLUCX_AN_WI_RELATIVE, /**< measured duration x new cost / old cost (default) */
    GLUCX_AN_WI_ABSOLUTE, /**< the new cost as it is */
    GLUCX_AN_WI_ADDITIVE  /**< measured duration + new cost - old cost (never below 0) */
};

typedef struct glucx_an_wi_opts {
    int mode;                 /**< GLUCX_AN_WI_RELATIVE, _ABSOLUTE or _ADDITIVE */
    int ranks;                /**< 0: as measured; N: replay N ranks, rank r timed as measured
                                   process r mod nprocs (every collective must involve every
                                   process) */
    glucx_an_wi_cost_fn cost; /**< required */
    void *cost_arg;
} glucx_an_wi_opts_t;

/**
 * Replay @p in with @p opt and return the prediction (whatif.json's "prediction" and
 * "collectives" sections; METRICS.md, "What-if prediction"): per iteration the measured and
 * predicted iteration times and exposed communication, their means, and the collectives grouped
 * by (kind, bytes, algorithm on the new setup), most predicted time first (the first is the
 * bottleneck). Time: O(sum over collectives of participants + collectives x log) for the
 * measured rank count, O(collectives x N) with @p opt->ranks = N.
 * @return a new document the caller owns (json_decref()), or NULL with @p err naming the
 *         problem: a rank-count change over a collective some process missed, a cost function
 *         failure, a process sequence that cannot be replayed (a collective whose participants
 *         never all arrive: inconsistent trace), out of memory.
 */
json_t *glucx_an_wi_replay(const glucx_an_wi_input_t *in, const glucx_an_wi_opts_t *opt, char *err,
                           size_t errlen);

/**
 * Write the text form of a prediction (whatif.txt) to @p f: the predicted and measured mean
 * iteration time, exposed communication, the bottleneck, then the collective groups (at most
 * @p max_rows, 0: all). Returns 0, or -1 when writing failed.
 */
int glucx_an_wi_write_text(const json_t *doc, FILE *f, size_t max_rows);

#endif
