/**
 * @file analysis/core/event.h
 * @brief One glucx trace event as the analysis engine reads it: a flat struct filled from a
 *        Babeltrace 2 event message (plugin/report/sink.c) or built by hand (tests).
 *
 * Fields follow trace/EVENTS.md (ABI 1). Only the fields of the event's kind are meaningful;
 * the others are zero. Strings and arrays are borrowed: valid only during the
 * glucx_an_engine_feed() call that receives the event (the engine copies what it keeps).
 * Strings are never NULL (an absent string is ""). Timestamps are ns from the trace clock's
 * origin.
 */
#ifndef GLUCX_ANALYSIS_EVENT_H
#define GLUCX_ANALYSIS_EVENT_H

#include <stddef.h>
#include <stdint.h>

/** Event kinds, X(NAME, name): the name is the event's name without the "glucx:" prefix. */
#define GLUCX_AN_EVENT_MAP(X)                                                                      \
    X(COMM_INIT, comm_init)                                                                        \
    X(LINK, link)                                                                                  \
    X(PHYS_LINK, phys_link)                                                                        \
    X(ROUTE, route)                                                                                \
    X(SELECT_MAP, select_map)                                                                      \
    X(COLL_BEGIN, coll_begin)                                                                      \
    X(COLL_END, coll_end)                                                                          \
    X(SCHED_DECISION, sched_decision)                                                              \
    X(SEND_BEGIN, send_begin)                                                                      \
    X(SEND_END, send_end)                                                                          \
    X(RECV_BEGIN, recv_begin)                                                                      \
    X(RECV_END, recv_end)                                                                          \
    X(REDUCE_BEGIN, reduce_begin)                                                                  \
    X(REDUCE_END, reduce_end)                                                                      \
    X(WAIT_BEGIN, wait_begin)                                                                      \
    X(WAIT_END, wait_end)                                                                          \
    X(COMPUTE_BEGIN, compute_begin)                                                                \
    X(COMPUTE_END, compute_end)                                                                    \
    X(ITERATION_BEGIN, iteration_begin)                                                            \
    X(ITERATION_END, iteration_end)                                                                \
    X(BUCKET_READY, bucket_ready)                                                                  \
    X(ERROR, error)

typedef enum {
#define GLUCX_AN_EV_ENUM_(N, n) GLUCX_AN_EV_##N,
    GLUCX_AN_EVENT_MAP(GLUCX_AN_EV_ENUM_)
#undef GLUCX_AN_EV_ENUM_
        GLUCX_AN_EV_COUNT
} glucx_an_ev_kind_t;

/** Name of a kind ("send_begin"), or "?" when out of range. */
const char *glucx_an_ev_name(int kind);
/** Kind of a name without prefix, or -1. */
int glucx_an_ev_from_name(const char *name);

/** Names of the payload fields of each kind, in EVENTS.md order (NULL-terminated). */
const char *const *glucx_an_ev_fields(int kind);

/** Enumeration labels (EVENTS.md); out-of-range values give "unknown". */
const char *glucx_an_coll_name(int coll);
const char *glucx_an_alg_name(int alg);
const char *glucx_an_dtype_name(int dtype);
const char *glucx_an_op_name(int op);
const char *glucx_an_status_name(int status);
const char *glucx_an_decision_name(int kind);
/* Decision kinds the analysis knows (trace/EVENTS.md "kind"): 0 algorithm, 1 fallback (options
 * are algorithm ids), 2 order (options are gradient partition indices), 3 partition (options
 * are candidate partitionings), 4 priority (libglucx's choice of the collective whose next
 * chunk runs; options are the candidates' next-chunk seqs). Kinds 2 and 3 are a training
 * scheduler's plan. */
#define GLUCX_AN_DECISION_KINDS 5
#define GLUCX_AN_DECISION_ORDER 2
#define GLUCX_AN_DECISION_PARTITION 3
#define GLUCX_AN_DECISION_PRIORITY 4
/* Whether a decision of kind @p kind is measured by the time of the collective it decides
 * (its seq's): algorithm, fallback and priority (METRICS.md, "Schedule decisions"). */
int glucx_an_decision_per_coll(int kind);
/* Whether the options of a decision of kind @p kind are algorithm ids (algorithm, fallback):
 * other ways to run the same collective, whose measured times can be compared. */
int glucx_an_decision_algs(int kind);
/* The name of option @p id of a decision of kind @p kind: an algorithm's name for the
 * algorithm kinds, "partition <id>" for order, "uniform <c> KiB" / "growing from <s> KiB" /
 * "one partition" for partition, "seq <id>" for priority, the number otherwise. Returns @p buf
 * (size @p n) or a static string. */
const char *glucx_an_option_name(int kind, int32_t id, char *buf, size_t n);
/** Gloo slot prefix (gloo/types.h values) -> collective label ("gloo-prefix-N" if unknown). */
const char *glucx_an_gloo_prefix_name(unsigned prefix, char *buf, size_t len);

/**
 * The trace format version this analysis reads (trace/EVENTS.md, "Format version"), and how a
 * glucx event class carries it in the trace's metadata: model.emf.uri =
 * GLUCX_AN_FORMAT_URI_PREFIX followed by the version in decimal. Kept equal to the provider's
 * GLUCX_TP_FORMAT_VERSION (trace/include/glucx_tp/ids.h) by the trace and analysis tests.
 */
#define GLUCX_AN_FORMAT_VERSION 3
#define GLUCX_AN_FORMAT_URI_PREFIX "glucx-trace-format:"
/** The one older format also read (with a warning): 2, which is 3 without the phys_link and route
 *  events (EVENTS.md, "Format version"). */
#define GLUCX_AN_FORMAT_OLDEST_READ 2

/** The "none" values of EVENTS.md. */
#define GLUCX_AN_SEQ_NONE UINT32_C(0xffffffff)
#define GLUCX_AN_TAG_COLL_BIT (UINT64_C(1) << 63)
#define GLUCX_AN_TAG_SLOT_BIT (UINT64_C(1) << 47)

typedef struct glucx_an_event {
    int kind;           /**< glucx_an_ev_kind_t */
    int64_t ts;         /**< ns from origin */
    uint64_t comm_id;   /**< 0 = none */
    int32_t rank;       /**< -1 = none */
    int64_t vpid, vtid; /**< -1 when the trace has no such context */
    /** The host whose clock stamped the event: glucx-analyze's input index of its host (one
     *  TRACE argument per host), 0 by default. Only a multi-host merge with clock correction
     *  (glucx_an_options_t.clock) reads it. */
    int32_t host_index;
    /* comm_init */
    int32_t size, package, npackages;
    const char *name, *host;
    uint64_t topo_digest;
    /* link */
    int32_t link_id, src, dst, dim;
    double bandwidth_Bps, latency_ns;
    const char *transport;
    /* phys_link (link_id: phys_id; dim, bandwidth_Bps, latency_ns as for link) */
    int a_kind, b_kind; /**< enum node: 0 rank, 1 package, 2 switch */
    int32_t a, b;
    /* route (link: the rank pair's link id, dst: the receiving end) */
    size_t nhops;
    const int32_t *hops; /**< [nhops] physical link ids */
    const uint8_t *dirs; /**< [nhops] direction of each hop, 0: a to b, 1: b to a; or NULL */
    /* coll_begin/end, sched_decision, reduce, p2p, wait */
    uint32_t seq;
    int coll, dtype, op, alg, status;
    int32_t root;
    uint64_t bytes;
    /* sched_decision */
    int decision; /**< kind field */
    int32_t chosen;
    size_t nalt;
    const int32_t *alt_ids;
    const uint64_t *alt_cost_ns;
    const char *reason;
    /* send/recv */
    uint32_t step;
    int32_t peer, link;
    uint64_t tag;
    /* wait */
    int site;
    uint64_t req;
    uint32_t nreqs;
    /* compute / iteration / bucket */
    const char *phase;
    uint64_t id; /**< compute id, iteration number or bucket index */
    /* error */
    const char *text;
} glucx_an_event_t;

/** An event of @p kind with every field at its "none"/empty value. */
glucx_an_event_t glucx_an_event_init(int kind, int64_t ts, uint64_t comm_id, int32_t rank);

/** Format an error message into @p err (@p len bytes, always terminated when len > 0); does
 *  nothing when @p err is NULL or @p len is 0. Shared by the analysis's parts (diff, whatif). */
void glucx_an_set_err(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
