/* Internal state of the analysis engine, shared by engine.c (streaming metrics) and report.c
 * (outputs). See METRICS.md for what each quantity means. */
#ifndef GLUCX_ANALYSIS_ENGINE_IMPL_H
#define GLUCX_ANALYSIS_ENGINE_IMPL_H

#include <stdio.h>

#include "engine.h"
#include "ivl.h"
#include "map.h"

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
} riter_t;

typedef struct iter {
    uint64_t index;
    struct iter *next;
    int nr;
    riter_t *r;
    uint32_t ncoll;
} iter_t;

typedef struct open_ent { /* an open compute phase or wait (a wait: on one thread) */
    int is_wait;
    int is_comm; /* a framework phase named "comm:..." (METRICS.md): communication */
    int64_t vtid, ts;
    uint64_t id;
    char phase[32];
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
    riter_t *cur;
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
    int64_t cp_ns;
    int tl_meta;
} link_st_t;

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
} comm_st_t;

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

typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist_t;

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
    char verdict[1024];
    int finished;
};

/* The temporary files' records, written by engine.c and read back by report.c: f_colls holds
 * one coll_rec_t per collective; f_decs one dec_rec_t per decision, each followed by its
 * nalt alternative ids (int32_t), their nalt predicted costs (uint64_t, ns) and reason_len
 * bytes of reason (no terminating NUL). */
typedef struct coll_rec {
    uint64_t comm_id, bytes;
    int64_t start, end, time, span, lateness, iteration;
    uint32_t seq;
    int32_t coll, alg, dtype, op, root, nranks, last_rank, status, gloo, prefix;
} coll_rec_t;

typedef struct dec_rec {
    uint64_t comm_id, bytes;
    int64_t measured;
    uint32_t seq;
    int32_t kind, coll, alg_ran, chosen, agree, gloo;
    uint32_t nalt, reason_len;
} dec_rec_t;

/* The key of a collective group (glucx_an_engine's groups map): one group per communicator,
 * collective, algorithm and byte count. */
static inline glucx_an_key_t glucx_an_group_key(uint64_t comm_id, int coll, int alg, uint64_t bytes)
{
    return glucx_an_key(comm_id, ((uint64_t)(uint32_t)coll << 32) | (uint32_t)alg, bytes);
}

/* engine.c */
/* Bus bandwidth over algorithm bandwidth of collective @p coll (glucx_coll_t order) on @p n
 * ranks; NAN for a collective it does not know. */
double glucx_an_busbw_factor(int coll, int n);

/* report.c */
int glucx_an_report_write(glucx_an_engine_t *e);
void glucx_an_bd_json_fields(void *obj, const bd_t *b); /* obj: json_t* */
int glucx_an_strlist_add(strlist_t *l, const char *s);
const char *glucx_an_comm_hex(uint64_t id, char *buf);

#endif
