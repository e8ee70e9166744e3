/*
 * The trace model the analyzers share: communicators, ranks, iterations, messages, links,
 * collectives and decisions as the engine holds them while it streams, the results they leave
 * for the report, and the functions one analyzer calls in another. Internal to analysis/core.
 *
 * Files (one concern each; see docs/architecture.md, "Analysis"):
 *   engine.c         the driver: feeds events to the analyzers in order, finish, lifecycle
 *   model.c          helpers every file uses (growth, string lists, number formatting)
 *   names.c          interned names (phases, communicators) and their JSON-escaped forms
 *   pairing.c        compute phases and waits: a begin paired with its end, per thread
 *   breakdown.c      per-rank state machine and the time breakdown of an iteration
 *   iterations.c     iteration windows (markers, inferred, per collective) and finalisation
 *   links.c          links: announcement, bytes, busy time
 *   plinks.c         physical links and routes: every message charged to its route's links
 *   collectives.c    collectives, groups, stragglers, schedule decisions and their savings
 *   messages.c       send/receive matching, waits a message completes in, late sender/receiver
 *   critical_path.c  the critical path of an iteration
 *   failures.c       whether the run failed, and its first error
 *   clocksync.c      clocks across hosts: offset, drift, logical clock (API: clocksync.h)
 *   timeline.c       timeline.json (Chrome / Perfetto trace events)
 *   verdict.c        the one-sentence verdict
 *   report.c         report.json, report.txt, report.html: reads results, computes nothing
 *   (diff.c and whatif.c work on reports and a run's collectives: diff.h, whatif.h)
 * Metric definitions: analysis/METRICS.md.
 */
#ifndef GLUCX_ANALYSIS_MODEL_H
#define GLUCX_ANALYSIS_MODEL_H

#include <stdio.h>

#include "engine.h"
#include "ivl.h"
#include "map.h"

/* ---- per rank ------------------------------------------------------------------------------ */

/* state bits of a rank (the state log of the critical path) */
enum { ST_COMPUTE = 1, ST_COMM = 2, ST_WAIT = 4 };

typedef struct bd { /* a time breakdown, ns */
    int64_t duration, compute, comm, overlap, wait, late_sender, late_receiver, idle;
} bd_t;

typedef struct wait_rec {
    int64_t w0, w1;
    uint64_t id; /* rank-local wait id (rank_st_t.wait_ids), >= 1 */
    /* among the messages whose recv_end was emitted inside this wait on its thread (METRICS.md,
     * "Critical path"), the one whose send started last */
    int has_msg;
    int64_t m_sb;
    int32_t m_src, m_link;
    uint32_t m_seq;
} wait_rec_t;

typedef struct log_ent {
    int64_t ts;
    int bits;
} log_ent_t;

typedef struct riter { /* one rank in one iteration */
    int begun, ended;
    int64_t start, end;
    int64_t compute, comm, overlap, wait, busy;
    glucx_an_ivl_t ls, lr;
    wait_rec_t *w;
    size_t nw, capw;
    log_ent_t *log;
    size_t nlog, caplog;
    bd_t bd; /* result: the rank's breakdown, set when the iteration is finalised */
} riter_t;

typedef struct iter {
    uint64_t index;
    struct iter *next;
    int nr;
    riter_t *r;
    uint32_t ncoll;
} iter_t;

/* A distinct name, interned in the engine (names.c): one copy whatever its length, compared by
 * pointer. */
typedef struct glucx_an_name {
    struct glucx_an_name *next; /* another name of the same hash and length */
    size_t len;
    char *json; /* the name as the content of a JSON string: escaped, no quotes */
    char s[];   /* the name, NUL-terminated */
} glucx_an_name_t;

typedef struct open_ent { /* an open compute phase or wait (a wait: on one thread) */
    int is_wait;
    int is_comm; /* a framework phase named "comm:..." (METRICS.md): communication */
    int64_t vtid, ts;
    uint64_t id;
    const glucx_an_name_t *phase; /* a compute phase: its full name (interned); a wait: NULL */
    uint32_t seq;
    wait_rec_t w; /* a wait: its id and the message attributed so far (w0, w1 set at its end) */
} open_ent_t;

typedef struct anysrc {
    uint64_t tag;
    int64_t ts;
} anysrc_t;

typedef struct rank_st {
    int seen;
    int64_t vpid;
    char *host;
    int package;
    int64_t first_ts, last_ts;
    int n_compute, n_comm, n_wait;
    iter_t *cur_iter;
    uint64_t cstarts; /* collective starts (inferred iterations) */
    open_ent_t *open;
    size_t nopen, capopen;
    uint64_t wait_ids; /* waits begun so far = the id of the latest one (0: none yet) */
    anysrc_t *any;
    size_t nany, capany;
    bd_t tot;
    int64_t lateness, others_wait;
    uint64_t times_last, colls;
    int tl_meta;        /* timeline process metadata written */
    uint64_t tl_tracks; /* bit per peer track written (first 64) */
} rank_st_t;

/* ---- per communicator ---------------------------------------------------------------------- */

enum { MODE_UNDECIDED, MODE_MARKERS, MODE_INFERRED, MODE_PER_COLL, MODE_WHOLE };

typedef struct link_st {
    uint64_t comm_id;
    int32_t src, dst, dim;
    int announced;
    double bw, lat;
    char *transport;
    uint64_t bytes, messages;
    int64_t busy_committed, committed_until;
    glucx_an_ivl_t busy; /* not yet committed */
    int64_t busy_ns;     /* result: total busy time, set at the end of the input */
    int64_t cp_ns;
    int tl_meta;
} link_st_t;

/* One direction of a physical link (0: from endpoint a to b, 1: from b to a): the bytes,
 * messages and busy time of the messages that cross it that way. */
typedef struct plink_dir {
    uint64_t bytes, messages;
    int64_t busy_committed, committed_until;
    glucx_an_ivl_t busy; /* not yet committed */
    int64_t busy_ns;     /* result: its busy time, set at the end of the input */
} plink_dir_t;

/* A physical link (METRICS.md, "Physical links"): what its phys_link event announced, and the
 * bytes, busy time and critical-path time of the messages whose route crosses it, in both
 * directions together and per direction (dir[0]: a to b, dir[1]: b to a; a route without
 * directions charges only the totals). */
typedef struct plink_st {
    int32_t id, dim;
    int a_kind, b_kind; /* enum node (EVENTS.md), -1 before the announcement */
    int32_t a, b;
    int announced;
    double bw, lat;
    uint64_t bytes, messages;
    int64_t busy_committed, committed_until;
    glucx_an_ivl_t busy; /* not yet committed */
    int64_t busy_ns;     /* result: total busy time, set at the end of the input */
    int64_t cp_ns;
    plink_dir_t dir[2];
} plink_st_t;

/* The route of one ordered rank pair: the physical links a message crosses, in order. */
typedef struct route_st {
    int32_t src, dst;
    size_t n;
    int32_t *hops;
    uint8_t *dirs; /* [n] 0: a to b, 1: b to a; NULL when the route event had none */
} route_st_t;

typedef struct comm_st {
    uint64_t id;
    char *name;
    int size, npackages, have_init, gloo;
    rank_st_t *ranks;
    int nalloc, nseen;
    int mode;
    uint32_t period, offset; /* inferred iterations: collectives per iteration, set-up ones */
    int ref_rank;
    uint64_t *sigs;
    uint64_t last_slot;
    size_t nsig, capsig;
    /* events buffered while undecided */
    glucx_an_event_t *bev;
    size_t nbev, capbev;
    char **arena; /* allocations owned by buffered events */
    size_t narena, caparena;
    iter_t *iters; /* open iterations, increasing index */
    int nopen_iters;
    uint64_t iters_done;
    int has_coll_events;
    link_st_t **links; /* every link of this comm, in creation order */
    size_t nlinks, caplinks;
    glucx_an_map_t plink_map; /* (id, 0, 0) -> plink_st_t */
    plink_st_t **plinks;      /* every physical link of this comm, in creation order */
    size_t nplinks, capplinks;
    glucx_an_map_t route_map; /* (src, dst, 0) -> route_st_t */
    route_st_t **routes;
    size_t nroutes, caproutes;
} comm_st_t;

/* ---- collectives, decisions, messages ------------------------------------------------------ */

#define MAX_DECISIONS 4
typedef struct dec_st {
    int kind;
    int32_t chosen;
    size_t nalt;
    int32_t *alt_ids;
    uint64_t *alt_cost;
    char *reason;
    int agree;
} dec_st_t;

typedef struct coll_st {
    comm_st_t *c;
    uint32_t seq;
    int gloo; /* 1: recognised from Gloo slot messages */
    unsigned prefix;
    int coll, alg, dtype, op, status;
    int32_t root;
    uint64_t bytes;
    int width;      /* entries of b, e, sent */
    int64_t *b, *e; /* per rank begin/end, -1 = none */
    uint64_t *sent; /* gloo: bytes sent per rank */
    int nbegin, nend;
    int64_t first_ts;
    int64_t iteration;
    dec_st_t dec[MAX_DECISIONS];
    int ndec;
} coll_st_t;

typedef struct msg_st {
    uint64_t comm_id;
    comm_st_t *c;
    uint32_t seq, step;
    int32_t src, dst, link;
    uint64_t tag, bytes;
    int64_t sb, se, rb, re;
    int have;            /* bits: 1 sb, 2 se, 4 rb, 8 re */
    struct msg_st *next; /* the next message with the same key (get_msg: FIFO) */
    /* the receiver's wait open on the recv_end's thread when the recv_end was seen (its
     * wait_rec_t.id), 0 = none: the message is attributed to that wait only */
    uint64_t wait_id;
    /* clock collection (options.clock_collect): the host and process of each side */
    int32_t shost, dhost;
    uint64_t skey[3], dkey[3];
} msg_st_t;

typedef struct group_st {
    uint64_t comm_id;
    char coll[32], alg[32];
    int coll_id, alg_id;
    uint64_t bytes;
    uint64_t count;
    int64_t sum, min, max;
    double busbw_sum;
    uint64_t busbw_n;
} group_st_t;

/* ---- the critical path of an iteration ----------------------------------------------------- */

enum { SEG_COMPUTE, SEG_COMM, SEG_WAIT, SEG_IDLE, SEG_TRANSFER, SEG_NKINDS };

typedef struct seg {
    int rank, kind; /* SEG_* */
    int64_t a, b;
    int32_t link, peer;
    int64_t seq;
} seg_t;

typedef struct segs { /* built backwards: v[n - 1] is the path's first segment */
    seg_t *v;
    size_t n, cap;
    int truncated;
} segs_t;

/* An iteration's results, as finalize writes them into its record. */
typedef struct iter_result {
    int64_t start, end; /* first rank's begin, last rank's end */
    int complete;
    bd_t tot;                 /* sum over its ranks (each rank's: riter_t.bd) */
    const segs_t *cp;         /* its critical path */
    int64_t cp_start, cp_end; /* the path's extent */
    int64_t cp_by_kind[SEG_NKINDS];
} iter_result_t;

/* ---- a failed run -------------------------------------------------------------------------- */

typedef struct fail_ev { /* the earliest failure event of one kind */
    int seen;
    int64_t ts;
    uint64_t comm_id;
    int32_t rank;
    int status;     /* glucx_status_t */
    int coll;       /* coll_end: the collective */
    uint32_t seq;   /* coll_end: its seq */
    char text[512]; /* error: its text (cut to fit) */
} fail_ev_t;

typedef struct failure_st { /* the run failed when either was seen (METRICS.md, "Verdict") */
    fail_ev_t error;        /* the earliest error event */
    fail_ev_t coll_end;     /* the earliest coll_end whose status is not OK */
} failure_st_t;

/* ---- the verdict --------------------------------------------------------------------------- */

typedef struct verdict_st {
    const char *kind;        /* report.schema.json verdict.bottleneck */
    const plink_st_t *plink; /* kind "link": the bottleneck physical link, if the trace has them */
    uint64_t plink_comm;     /* its communicator */
    char subject[160];
    double cost_ns, share; /* per iteration; share of the mean iteration */
    /* a failed run (kind "failed"): when, from the trace's first event, and the failure event
     * named (e->fail's, with which kind of event it is: "error" or "coll_end") */
    int64_t fail_ns;
    const fail_ev_t *fail;
    const char *fail_event;
} verdict_st_t;

typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist_t;

/* ---- the engine ---------------------------------------------------------------------------- */

/* The decisions of one kind, summed for the report's scheduling section (collectives.c). */
typedef struct glucx_an_sched_kind {
    uint64_t n, n_measured, n_best; /* n_best: decisions with a best option (not priority) */
    double predicted_sum, best_sum, measured_sum;
    int64_t saving_max; /* the largest saving of one decision, described in subject */
    char subject[160];
} glucx_an_sched_kind_t;

struct glucx_an_engine {
    glucx_an_options_t opt;
    char *dir;
    char err[512];
    /* comms */
    comm_st_t **comms;
    size_t ncomms, capcomms;
    glucx_an_map_t comm_by_id;
    glucx_an_map_t vpid_map; /* vpid -> (comm, rank) of its first comm_init, value = rank_st* */
    glucx_an_map_t msgs, colls, links, groups;
    glucx_an_map_t names; /* interned names (names.c): (hash, length) -> glucx_an_name_t chain */
    uint64_t ncoll_open_gloo;
#define GLOO_OPEN_MAX 256
    struct coll_st *gloo_fifo[GLOO_OPEN_MAX];
    size_t gloo_head;
    /* trace facts */
    uint64_t events, ignored, discarded_events, discarded_packets;
    uint64_t fw_orphans; /* framework events of processes without a glucx communicator */
    int64_t t_first, t_last;
    int have_ts;
    strlist_t paths, partial, warnings, unknown_events, mismatched;
    strlist_t pid_files;                          /* process lists applied (glucx-pids) */
    uint64_t left_out_events, left_out_processes; /* events of processes they do not list */
    char *tracer, *bt_version, *command;
    uint64_t unmatched_sends, unmatched_recvs, causality, unpaired, out_of_order;
    /* temp outputs */
    FILE *f_iters, *f_colls, *f_decs, *f_tl;
    struct wbuf *w_tl, *w_it; /* buffered writers on f_tl, f_iters */
    char *p_iters, *p_colls, *p_decs, *p_tl;
    uint64_t n_iters_out, n_colls_out, n_decs_out, n_tl;
    long list_limit;
    /* totals */
    bd_t tot;
    uint64_t iterations, complete_iterations;
    int64_t iter_time_sum, cp_sum;
    /* decisions (collectives.c, at the end): savings over all, the largest one described */
    int64_t dec_saving, dec_best_saving;
    char dec_subject[160];
    /* per decision kind (the report's scheduling section): decisions, sums of the chosen
     * option's and of the cheapest option's predictions, of the measured collective times
     * (algorithm kinds), and the largest saving of one decision, described */
    glucx_an_sched_kind_t sched[GLUCX_AN_DECISION_KINDS];
    /* failures (failures.c) */
    failure_st_t fail;
    /* the verdict (verdict.c) */
    verdict_st_t vd;
    char verdict[1024];
    int finished;
    /* multi-host merge (options.clock): events waiting for their corrected time to come up,
     * a binary min-heap on (ts, arrival) */
    struct rq_ent *rq;
    size_t nrq, caprq;
    uint64_t rq_arrivals;
};

/* ---- temporary records --------------------------------------------------------------------- */

/* The temporary files' records, written by the analyzers and read back by report.c: f_colls
 * holds one coll_rec_t per collective; f_decs one dec_rec_t per decision, each followed by its
 * nalt alternative ids (int32_t), their nalt predicted costs (uint64_t, ns) and reason_len
 * bytes of reason (no terminating NUL). */
typedef struct coll_rec {
    uint64_t comm_id, bytes;
    int64_t start, end, time, span, lateness, iteration;
    uint32_t seq;
    int32_t coll, alg, dtype, op, root, nranks, last_rank, status, gloo, prefix;
    double algbw_Bps, busbw_Bps; /* NAN: none */
} coll_rec_t;

typedef struct dec_rec {
    uint64_t comm_id, bytes;
    int64_t measured;
    uint32_t seq;
    int32_t kind, coll, alg_ran, chosen, agree, gloo;
    uint32_t nalt, reason_len;
    /* the evaluation (glucx_an_decisions_evaluate, once every collective is in): the chosen
     * option's prediction (-1: none), the index of the cheapest alternative (-1: none), the
     * time another option would have saved and where that comes from (0 none, 1 model,
     * 2 measured) */
    int64_t predicted, saving;
    int32_t best_idx, source;
} dec_rec_t;

/* The key of a collective group (glucx_an_engine's groups map): one group per communicator,
 * collective, algorithm and byte count. */
static inline glucx_an_key_t glucx_an_group_key(uint64_t comm_id, int coll, int alg, uint64_t bytes)
{
    return glucx_an_key(comm_id, ((uint64_t)(uint32_t)coll << 32) | (uint32_t)alg, bytes);
}

/* The group of (comm, coll, alg, bytes), or NULL: a lookup in the results. */
static inline group_st_t *glucx_an_group_find(const glucx_an_engine_t *e, uint64_t comm, int coll,
                                              int alg, uint64_t bytes)
{
    glucx_an_key_t k = glucx_an_group_key(comm, coll, alg, bytes);
    return glucx_an_map_get(&e->groups, &k);
}

/* ---- model.c: shared helpers --------------------------------------------------------------- */

/* Grow @p p (capacity *cap elements of @p elem bytes) to hold @p need; NULL if out of memory
 * (p is then still valid). Use through GROW. */
void *glucx_an_grow(void *p, size_t *cap, size_t need, size_t elem);
#define GROW(arr, cap, need)                                                                       \
    ((arr) = glucx_an_grow((arr), &(cap), (need), sizeof(*(arr))), (arr) != NULL)
/* Set the engine's error to "out of memory: @p what" and return -1. */
int glucx_an_oom(glucx_an_engine_t *e, const char *what);
/* Add a copy of @p s to @p l unless it is there; 0, or -1 when out of memory. */
int glucx_an_strlist_add(strlist_t *l, const char *s);
/* Free the strings and the list; @p l is left empty. */
void glucx_an_strlist_free(strlist_t *l);
/* "0x..." of a communicator id into @p buf (at least 20 bytes); returns buf. */
const char *glucx_an_comm_hex(uint64_t id, char *buf);
/* A duration for people ("1.5 ms", "23.5 us") into @p buf; returns buf. */
const char *glucx_an_fmt_ns(double ns, char *buf, size_t len);
/* A byte count for people ("1 MiB", "1000 B") into @p buf; returns buf. */
const char *glucx_an_fmt_bytes(uint64_t b, char *buf, size_t len);
/* Ranks of @p c: its size, or more when a higher rank was seen. */
int glucx_an_comm_nranks(const comm_st_t *c);
/* Position of @p c among the engine's communicators (0 if absent). */
size_t glucx_an_comm_index(const glucx_an_engine_t *e, const comm_st_t *c);
/* A decision record read back: its header and what follows it. */
typedef struct dec_view {
    dec_rec_t h;
    int32_t *ids;
    uint64_t *cost;
    char *reason;
} dec_view_t;
/* Read the next decision record of @p f (ids, cost, reason allocated: glucx_an_dec_free);
 * 1, 0 at the end, -1 on a short read or out of memory. */
int glucx_an_dec_read(FILE *f, dec_view_t *d);
/* Free what glucx_an_dec_read allocated. */
void glucx_an_dec_free(dec_view_t *d);

/* ---- names.c ------------------------------------------------------------------------------- */

/* The interned copy of @p s (borrowed), added if new; NULL when out of memory (engine error set).
 * Valid until the engine is destroyed. */
const glucx_an_name_t *glucx_an_name_intern(glucx_an_engine_t *e, const char *s);
/* The interned copy of @p s, or NULL if it was never interned. */
const glucx_an_name_t *glucx_an_name_find(const glucx_an_engine_t *e, const char *s);
/* Free every interned name. */
void glucx_an_names_free(glucx_an_engine_t *e);
/* @p s as the content of a JSON string (escaped by jansson, without the quotes; bytes that are
 * not UTF-8 become U+FFFD); allocated (free()), NULL when out of memory. */
char *glucx_an_json_escape(const char *s);

/* ---- breakdown.c ----------------------------------------------------------------------------- */

/* Account the time since the rank's last event to its state, up to @p ts (METRICS.md). */
void glucx_an_bd_advance(glucx_an_engine_t *e, rank_st_t *rs, int r, int64_t ts);
/* Advance to @p ts, then change the open compute / communication / wait counts by dc, dm, dw. */
void glucx_an_bd_change(glucx_an_engine_t *e, rank_st_t *rs, int r, int64_t ts, int dc, int dm,
                        int dw);
/* Log the rank's current state at @p ts in @p ri (the critical path's state log); 0 or -1. */
int glucx_an_bd_log(riter_t *ri, const rank_st_t *rs, int64_t ts);
/* Set @p ri->bd from the rank's accounted time in a finished iteration. */
void glucx_an_bd_finish(riter_t *ri);
/* Add breakdown @p b to @p a, field by field. */
void glucx_an_bd_add(bd_t *a, const bd_t *b);

/* ---- pairing.c ----------------------------------------------------------------------------- */

/* compute_begin / wait_begin: open a phase or wait on the rank; 0 or -1. */
int glucx_an_pair_open(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                       const glucx_an_event_t *ev, int is_wait);
/* compute_end / wait_end: close the entry it pairs with (unpaired: counted); 0 or -1. */
int glucx_an_pair_close(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                        const glucx_an_event_t *ev, int is_wait);
/* The id of the newest wait open on thread @p vtid of a rank; 0 if none. */
uint64_t glucx_an_pair_open_wait(const rank_st_t *rs, int64_t vtid);

/* ---- iterations.c -------------------------------------------------------------------------- */

/* The rank's entry in @p it, grown as needed; NULL when out of memory. */
riter_t *glucx_an_iter_rank(iter_t *it, int r);
/* The rank's entry in its current iteration, or NULL. */
riter_t *glucx_an_iter_cur(rank_st_t *rs, int r);
/* The rank's iteration entry that contains @p ts (open iterations only), or NULL. */
riter_t *glucx_an_iter_at(comm_st_t *c, int r, int64_t ts);
/* iteration_begin / iteration_end of a rank (markers mode; ignored otherwise); 0 or -1. */
int glucx_an_iter_marker(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                         const glucx_an_event_t *ev);
/* A collective starts on rank r: in inferred modes it may open an iteration; 0 or -1. */
int glucx_an_iter_coll_start(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, int64_t ts);
/* Whole-trace mode: the rank's first event opens its one iteration; 0 or -1. */
int glucx_an_iter_whole(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, int64_t ts);
/* Close @p it: breakdown, critical path, record, totals; frees it. 0 or -1. */
int glucx_an_iter_finalize(glucx_an_engine_t *e, comm_st_t *c, iter_t *it, int forced);
/* Free an iteration that is not finalised (teardown). */
void glucx_an_iter_free(iter_t *it);
/* Iteration inference: a buffered event of @p c may extend the signature sequence of the
 * reference rank's collective starts. *period_p: the period found (0: none yet). 0 or -1. */
int glucx_an_iter_infer(glucx_an_engine_t *e, comm_st_t *c, const glucx_an_event_t *ev,
                        uint32_t *period_p);
/* Smallest period of @p c's signatures (sets c->offset), 0 if none; @p final: input ended. */
uint32_t glucx_an_iter_find_period(comm_st_t *c, int final);

/* ---- links.c ------------------------------------------------------------------------------- */

/* The link src -> dst of @p c, created on first use; NULL when out of memory. */
link_st_t *glucx_an_link_get(glucx_an_engine_t *e, comm_st_t *c, int32_t src, int32_t dst);
/* The link is busy in [a, b) (a message in flight); 0 or -1. */
int glucx_an_link_busy(link_st_t *l, int64_t a, int64_t b);
/* A link event: its announced dimension, bandwidth, latency and transport; 0 or -1. */
int glucx_an_link_announce(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                           const glucx_an_event_t *ev);
/* Add [a, b) to a link's busy time: the open intervals @p busy, with intervals older than the
 * open window committed (summed into *committed, dropped, *until moved past them) so memory
 * stays bounded (METRICS.md, "Links"). 0, or -1 when out of memory. */
int glucx_an_busy_add(glucx_an_ivl_t *busy, int64_t *committed, int64_t *until, int64_t a,
                      int64_t b);

/* ---- plinks.c ------------------------------------------------------------------------------ */

/* Physical link @p id (>= 0) of @p c, created on first use; NULL when out of memory. */
plink_st_t *glucx_an_plink_get(comm_st_t *c, int32_t id);
/* A phys_link event: the link's dimension, endpoints and nominal values; 0 or -1. */
int glucx_an_plink_announce(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                            const glucx_an_event_t *ev);
/* A route event: the route of (ev->rank, ev->dst), replacing an earlier one; 0 or -1. */
int glucx_an_route_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                         const glucx_an_event_t *ev);
/* The route of src -> dst, or NULL when no route event named it. */
const route_st_t *glucx_an_route(const comm_st_t *c, int32_t src, int32_t dst);
/* A send of @p bytes from src to dst: the bytes and one message to every link of its route,
 * and to the direction the route crosses it; 0, or -1 when out of memory. */
int glucx_an_route_send(glucx_an_engine_t *e, comm_st_t *c, int32_t src, int32_t dst,
                        uint64_t bytes);
/* A matched message from src to dst in flight in [a, b): every link of its route is busy then,
 * in the direction the route crosses it; 0, or -1 when out of memory. */
int glucx_an_route_busy(glucx_an_engine_t *e, comm_st_t *c, int32_t src, int32_t dst, int64_t a,
                        int64_t b);
/* @p ns of a transfer from src to dst on a critical path: added to every link of its route
 * (links not yet known are created; out of memory leaves them out). */
void glucx_an_route_cp(comm_st_t *c, int32_t src, int32_t dst, int64_t ns);
/* End of input: each physical link's busy_ns, in total and per direction. */
void glucx_an_plinks_finish(comm_st_t *c);
/* Free @p c's physical links and routes. */
void glucx_an_plinks_free(comm_st_t *c);
/* Share of its nominal bandwidth per direction that link @p l reached in direction @p d
 * (0 or 1) while that direction was busy: (bytes / busy) / bandwidth_Bps; NAN without a nominal
 * bandwidth or busy time. Call after glucx_an_plinks_finish. */
double glucx_an_plink_dir_of_nominal(const plink_st_t *l, int d);
/* The link's of_nominal, the larger of its directions' (NAN when neither has one); @p dir, when
 * not NULL, receives the direction it comes from (0 or 1; -1 with NAN). */
double glucx_an_plink_of_nominal(const plink_st_t *l, int *dir);
/* End of input: each link's busy_ns (and each physical link's). */
void glucx_an_links_finish(glucx_an_engine_t *e);
/* "package 0 - switch 0": the endpoints of physical link @p l into @p buf (report.c). */
void glucx_an_plink_ends(const plink_st_t *l, char *buf, size_t len);
/* Free @p c's links. */
void glucx_an_links_free(comm_st_t *c);

/* ---- collectives.c ------------------------------------------------------------------------- */

/* coll_begin / coll_end; 0 or -1. */
int glucx_an_coll_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                        const glucx_an_event_t *ev);
/* A message of a Gloo collective (slot tag): the collective's begin, end and bytes; 0 or -1. */
int glucx_an_coll_gloo_msg(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                           const glucx_an_event_t *ev);
/* sched_decision; 0 or -1. */
int glucx_an_dec_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                       const glucx_an_event_t *ev);
/* End of input: write out every open collective (those without coll_end make the report
 * partial); 0 or -1. */
int glucx_an_colls_finish(glucx_an_engine_t *e);
/* End of input, after glucx_an_colls_finish: evaluate every decision record in place and sum
 * the savings (e->dec_*); 0 or -1. */
int glucx_an_decisions_evaluate(glucx_an_engine_t *e);
/* Free a collective's state. */
void glucx_an_coll_free(coll_st_t *co);

/* ---- messages.c ---------------------------------------------------------------------------- */

/* send_begin/end, recv_begin/end; 0 or -1. */
int glucx_an_msg_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                       const glucx_an_event_t *ev);
/* End of input: count the sends and receives without a partner. */
void glucx_an_msgs_finish(glucx_an_engine_t *e);
/* Free every message. */
void glucx_an_msgs_free(glucx_an_engine_t *e);

/* ---- critical_path.c ----------------------------------------------------------------------- */

/* The critical path of @p it into @p s (backwards), with its extent; adds each transfer's time
 * to its link's cp_ns. 0, or -1 when out of memory. */
int glucx_an_cp_walk(glucx_an_engine_t *e, comm_st_t *c, iter_t *it, segs_t *s, int64_t *start_p,
                     int64_t *end_p);

/* ---- failures.c ---------------------------------------------------------------------------- */

/* An error event, or a coll_end (of rank ev->rank of @p c) whose status is not OK, shows the run
 * failed: remember the earliest of each kind (events may come out of time order across
 * communicators, as a communicator's events are held back until its iterations are decided). */
void glucx_an_fail_event(glucx_an_engine_t *e, const comm_st_t *c, const glucx_an_event_t *ev);
/* Whether the run failed; if so *ts_p is its first failure event's time and *first_p the
 * failure event the verdict names: the earliest error event, else the earliest failed coll_end. */
int glucx_an_failed(const glucx_an_engine_t *e, int64_t *ts_p, const fail_ev_t **first_p);

/* ---- timeline.c ---------------------------------------------------------------------------- */

/* Each writes nothing when the timeline is off (e->f_tl NULL). */
/* The file's opening. */
void glucx_an_tl_begin(glucx_an_engine_t *e);
/* A rank's process and track names (once per rank). */
void glucx_an_tl_rank(glucx_an_engine_t *e, comm_st_t *c, int r);
/* Rank r's span [a, b) of iteration @p index. */
void glucx_an_tl_iteration(glucx_an_engine_t *e, comm_st_t *c, int r, uint64_t index, int64_t a,
                           int64_t b);
/* Rank r's span of collective @p co (its begin to its end on r). */
void glucx_an_tl_collective(glucx_an_engine_t *e, comm_st_t *c, int r, const coll_st_t *co);
/* Rank r's wait [a, b). */
void glucx_an_tl_wait(glucx_an_engine_t *e, comm_st_t *c, int r, int64_t a, int64_t b);
/* Rank r's compute or framework-communication phase @p o, ended at @p b. */
void glucx_an_tl_phase(glucx_an_engine_t *e, comm_st_t *c, int r, const open_ent_t *o, int64_t b);
/* A completed message: send, receive, the link's transfer and a flow arrow. */
void glucx_an_tl_message(glucx_an_engine_t *e, comm_st_t *c, const msg_st_t *m, link_st_t *l,
                         int64_t a);
/* Close timeline.json; 0, or -1 on an I/O error. */
int glucx_an_tl_finish(glucx_an_engine_t *e);

/* ---- verdict.c ----------------------------------------------------------------------------- */

/* End of input, after every analyzer: e->vd and the sentence e->verdict. */
void glucx_an_verdict(glucx_an_engine_t *e);

/* ---- report.c ------------------------------------------------------------------------------ */

/* Append an iteration's record to the iterations list (beyond the list limit: counted, not
 * listed); 0, or -1 on an I/O error. */
int glucx_an_report_iteration(glucx_an_engine_t *e, const comm_st_t *c, const iter_t *it,
                              const iter_result_t *res);
/* Write report.json and report.txt; 0 or -1. */
int glucx_an_report_write(glucx_an_engine_t *e);

#endif
