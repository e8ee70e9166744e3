/**
 * @file analysis/core/clocksync.h
 * @brief Clock correction for traces of several hosts: each host's clock offset and linear drift
 *        against a reference host, estimated from matched send/receive pairs, then a controlled
 *        logical clock that removes the causality violations left.
 *
 * Model. Host h's clock reads L_h(t) = t + o_h + d_h (t - t0) at reference time t, with t0 the
 * reference host's first event (ns, trace clock). A message sent at sb (sender's clock) and
 * received at re (receiver's clock) satisfies, in reference time, re >= sb + lmin, where lmin
 * is a lower bound on the one-way latency (0 unless the caller knows better). Rewritten in
 * (o, d), a message from the reference to h gives o + d (s - t0) <= re - s with s = sb + lmin,
 * and one from h to the reference o + d (r - t0) >= sb - r with r = re - lmin: both are linear,
 * so the (o, d) consistent with every message form a convex polygon (the intersection of one
 * half-plane per message); if the clock is linear and lmin holds, the true (o, d) lies in it.
 * What is applied is the smallest model the messages require: nothing when (0, 0) lies in the
 * polygon (the raw clocks satisfy every message: status consistent); else, when the polygon
 * bounds the drift within 100 ppm, its centroid (ok), the bound on its error being the largest
 * distance from the estimate to a vertex, in offset and in drift separately; else, when drift 0
 * fits, drift 0 and the middle of the offsets allowed at drift 0 (offset_only). A consistent
 * host's bound is the farthest the truth can be from 0. With messages of one-way latency l in
 * both directions spread over the run, the offset bound of ok is about l. This is the
 * convex-hull / linear-programming estimate of Duda, Harrus, Haddad and Bernard ("Estimating
 * global time in distributed systems", ICDCS 1987) and of Jezequel
 * ("Building a global time on parallel machines", 1989), also the idea behind Score-P / Scalasca's
 * offset interpolation from ping-pongs (Becker, Rabenseifner, Wolf, Linford: "Scalable timestamp
 * synchronization for event traces of message-passing applications", Parallel Computing 35(12),
 * 2009); here every matched message of the trace is a measurement, none is added to the run.
 *
 * A host without messages both ways with the reference is estimated the same way against the
 * host estimated from both sides (ok, consistent, offset_only) it has most messages both ways
 * with, whose times are first mapped to reference time; each of its bounds is widened by the
 * error that mapping may have, so its error bound includes the intermediate host's. Such an
 * estimate, when bounded from both sides, replaces a one-sided one.
 *
 * Remaining violations (a non-linear clock, jitter, host pairs without direct messages) are
 * removed by a controlled logical clock (Rabenseifner, "The controlled logical clock", 1997;
 * Becker et al. 2009 above) with forward amortisation only: each process p gets a shift D_p(t)
 * that never decreases along its timeline; a receive that would end before its send began (plus
 * lmin) moves forward to that point, and every later event of its process moves by at least as
 * much. The intervals between consecutive events of a process keep their length, except the one
 * that ends at a moved receive (it grows by the jump). No event moves backward.
 *
 * Not thread-safe. Internal to the analysis (no Babeltrace).
 */
#ifndef GLUCX_ANALYSIS_CLOCKSYNC_H
#define GLUCX_ANALYSIS_CLOCKSYNC_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

typedef struct glucx_an_clock glucx_an_clock_t;

/** How a host's clock was estimated (report.json clock.hosts[].status: the lower-case name). */
#define GLUCX_AN_CLOCK_STATUS_MAP(X)                                                               \
    X(REFERENCE, reference)       /* the reference host: offset 0, drift 0 by definition */        \
    X(OK, ok)                     /* offset and drift, bounded from both sides */                  \
    X(CONSISTENT, consistent)     /* the raw clock satisfies every message: not corrected */       \
    X(OFFSET_ONLY, offset_only)   /* both directions, drift not determined: drift taken as 0 */    \
    X(ONE_SIDED, one_sided)       /* messages one way only: one side of the offset is bounded */   \
    X(INCONSISTENT, inconsistent) /* no linear clock satisfies every message: midpoint estimate */ \
    X(NO_MESSAGES, no_messages)   /* no matched message with the reference: not corrected */

typedef enum {
#define GLUCX_AN_CLOCK_ENUM_(N, n) GLUCX_AN_CLOCK_##N,
    GLUCX_AN_CLOCK_STATUS_MAP(GLUCX_AN_CLOCK_ENUM_)
#undef GLUCX_AN_CLOCK_ENUM_
} glucx_an_clock_status_t;

/** "ok", "one_sided", ... ("?" out of range). */
const char *glucx_an_clock_status_name(int status);

/** One host's estimate (valid after glucx_an_clock_estimate()). */
typedef struct glucx_an_clock_host {
    int status;             /**< glucx_an_clock_status_t */
    double offset_ns;       /**< o_h: the host's clock minus the reference's at t0, ns (applied) */
    double drift;           /**< d_h: the host's clock rate minus 1 (1e-6 = 1 ppm) (applied) */
    double offset_bound_ns; /**< |error of offset_ns| <= this (ok, consistent, offset_only; with
                                 drift_bound NAN: if the drift is 0); NAN otherwise */
    double drift_bound;     /**< |error of drift| <= this (ok; consistent when the drift is
                                 determined); NAN otherwise (drift taken as 0, or unbounded) */
    /** The range of offsets consistent with the messages (the polygon's when the drift is
     *  estimated or determined, else at drift 0), ns; a side
     *  without bound is -INFINITY / INFINITY (one_sided, no_messages); inconsistent: lo > hi. */
    double offset_lo_ns, offset_hi_ns;
    uint64_t to_host, from_host; /**< matched messages reference -> host, host -> reference
                                      (through another host: that host -> this one, back) */
    int via;       /**< -1: estimated against the reference; else the host it was estimated through
                        (no messages both ways with the reference): its bounds include that host's */
    char why[384]; /**< a sentence naming the host when the status is not ok */
} glucx_an_clock_host_t;

/**
 * A clock estimator for @p nhosts hosts (indices 0..nhosts-1; the tool's input traces, one per
 * host), host @p ref being the reference. @p min_latency_ns (>= 0): lmin, a lower bound on every
 * message's one-way latency. Returns NULL when out of memory or on bad arguments.
 */
glucx_an_clock_t *glucx_an_clock_create(int nhosts, int ref, int64_t min_latency_ns);

/** Free everything; accepts NULL. */
void glucx_an_clock_destroy(glucx_an_clock_t *cs);

/**
 * Name host @p h for the report (a copy of @p name: its trace directory, and hostname when one
 * directory holds several hosts). Returns 0, or -1 when out of memory or @p h is out of range.
 */
int glucx_an_clock_set_name(glucx_an_clock_t *cs, int h, const char *name);
/** Host @p h's name ("" when none was set). Borrowed. */
const char *glucx_an_clock_name(const glucx_an_clock_t *cs, int h);

/** Hosts, reference and t0 (the reference host's first event seen; INT64_MAX before any). */
int glucx_an_clock_nhosts(const glucx_an_clock_t *cs);
int glucx_an_clock_ref(const glucx_an_clock_t *cs);
int64_t glucx_an_clock_t0(const glucx_an_clock_t *cs);
int64_t glucx_an_clock_min_latency(const glucx_an_clock_t *cs);

/**
 * An event of host @p host at @p ts (its own clock, ns) was read: the reference host's earliest
 * one is t0. Hosts out of range are ignored.
 */
void glucx_an_clock_seen(glucx_an_clock_t *cs, int host, int64_t ts);

/**
 * The process an event belongs to, for the logical clock: (host, vpid) when the event has a
 * vpid, else (host, communicator, rank). Written into @p key (3 x u64).
 */
void glucx_an_clock_proc_key(const glucx_an_event_t *ev, uint64_t key[3]);

/**
 * A matched message: sent by process @p skey (glucx_an_clock_proc_key of its send_begin) of host
 * @p src_host, whose send began at @p sb (sender's clock, ns), received by process @p dkey of
 * host @p dst_host, whose receive ended at @p re (receiver's clock). Keys are copied. Returns 0,
 * or -1 when out of memory. Call before glucx_an_clock_estimate().
 */
int glucx_an_clock_add(glucx_an_clock_t *cs, int src_host, const uint64_t skey[3], int64_t sb,
                       int dst_host, const uint64_t dkey[3], int64_t re);

/**
 * Estimate every host's offset and drift, then the logical clock's shifts. Call once, after the
 * last glucx_an_clock_add(). Returns 0, or -1 when out of memory (the estimator then corrects
 * nothing).
 */
int glucx_an_clock_estimate(glucx_an_clock_t *cs);

/** Host @p h's estimate (NULL when out of range or before the estimate). Borrowed. */
const glucx_an_clock_host_t *glucx_an_clock_host(const glucx_an_clock_t *cs, int h);

/**
 * @p ts of host @p host's clock in reference time, rounded to ns: t0 + (ts - t0 - o)/(1 + d).
 * Non-decreasing in @p ts. Identity before the estimate or for a host out of range.
 */
int64_t glucx_an_clock_map(const glucx_an_clock_t *cs, int host, int64_t ts);

/**
 * The corrected time of an event of process @p key (glucx_an_clock_proc_key) of host @p host at
 * @p ts (own clock): glucx_an_clock_map() plus the process's logical-clock shift there (>= 0).
 * Non-decreasing in @p ts for one process.
 */
int64_t glucx_an_clock_apply(const glucx_an_clock_t *cs, int host, const uint64_t key[3],
                             int64_t ts);

/**
 * The earliest corrected time any event read after one at raw time @p ts can have:
 * min over hosts of glucx_an_clock_map(h, ts) (the merge's reorder watermark).
 */
int64_t glucx_an_clock_watermark(const glucx_an_clock_t *cs, int64_t ts);

/** Counts over the matched messages given (after the estimate). */
typedef struct glucx_an_clock_stats {
    uint64_t messages;          /**< matched messages given */
    uint64_t cross_host;        /**< of them, between two hosts */
    uint64_t violations_before; /**< re < sb on the raw clocks */
    uint64_t violations_synced; /**< re < sb after offset and drift correction (before the CLC) */
    uint64_t violations_after;  /**< re < sb after the logical clock: 0 unless unresolved */
    uint64_t clc_moved;         /**< receives the logical clock moved forward */
    int64_t clc_max_shift_ns;   /**< the largest shift it gave an event */
    int clc_unresolved;         /**< the fixed point was not reached (a cycle of mis-paired
                                     messages): violations may remain */
} glucx_an_clock_stats_t;

/** The counts (zero before the estimate). */
glucx_an_clock_stats_t glucx_an_clock_stats(const glucx_an_clock_t *cs);

#endif
