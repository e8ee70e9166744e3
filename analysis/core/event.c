/* Names and field layouts of the glucx events (trace/EVENTS.md, ABI 1). */
#include "event.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const ev_names[] = {
#define GLUCX_AN_EV_NAME_(N, n) #n,
    GLUCX_AN_EVENT_MAP(GLUCX_AN_EV_NAME_)
#undef GLUCX_AN_EV_NAME_
};

const char *glucx_an_ev_name(int kind)
{
    return kind >= 0 && kind < GLUCX_AN_EV_COUNT ? ev_names[kind] : "?";
}

int glucx_an_ev_from_name(const char *name)
{
    for (int k = 0; k < GLUCX_AN_EV_COUNT; k++)
        if (strcmp(ev_names[k], name) == 0)
            return k;
    return -1;
}

/* Payload field names per kind, EVENTS.md order; sequences appear once by their own name. */
#define F0 "comm_id", "rank"
static const char *const f_comm_init[] = {F0,     "size", "package",     "npackages",
                                          "name", "host", "topo_digest", NULL};
static const char *const f_link[] = {
    F0, "link_id", "src", "dst", "dim", "bandwidth_Bps", "latency_ns", "transport", NULL};
static const char *const f_phys_link[] = {F0,       "phys_id", "dim",           "a_kind",     "a",
                                          "b_kind", "b",       "bandwidth_Bps", "latency_ns", NULL};
static const char *const f_route[] = {F0, "link", "dst", "phys_ids", "dirs", NULL};
static const char *const f_select_map[] = {F0, "coll", "lo", "hi", "alg", "forced", NULL};
static const char *const f_coll[] = {F0,   "seq",  "coll", "bytes",  "dtype",
                                     "op", "root", "alg",  "status", NULL};
static const char *const f_decision[] = {F0,        "seq",         "kind",   "chosen",
                                         "alt_ids", "alt_cost_ns", "reason", NULL};
static const char *const f_p2p[] = {F0, "seq", "step", "peer", "link", "tag", "bytes", NULL};
static const char *const f_reduce[] = {F0, "seq", "bytes", "dtype", "op", NULL};
static const char *const f_wait[] = {F0, "site", "seq", "req", "nreqs", "status", NULL};
static const char *const f_compute[] = {F0, "phase", "id", NULL};
static const char *const f_iteration[] = {F0, "iteration", NULL};
static const char *const f_bucket[] = {F0, "bucket", "bytes", NULL};
static const char *const f_error[] = {F0, "status", "text", NULL};

const char *const *glucx_an_ev_fields(int kind)
{
    switch (kind) {
    case GLUCX_AN_EV_COMM_INIT:
        return f_comm_init;
    case GLUCX_AN_EV_LINK:
        return f_link;
    case GLUCX_AN_EV_PHYS_LINK:
        return f_phys_link;
    case GLUCX_AN_EV_ROUTE:
        return f_route;
    case GLUCX_AN_EV_SELECT_MAP:
        return f_select_map;
    case GLUCX_AN_EV_COLL_BEGIN:
    case GLUCX_AN_EV_COLL_END:
        return f_coll;
    case GLUCX_AN_EV_SCHED_DECISION:
        return f_decision;
    case GLUCX_AN_EV_SEND_BEGIN:
    case GLUCX_AN_EV_SEND_END:
    case GLUCX_AN_EV_RECV_BEGIN:
    case GLUCX_AN_EV_RECV_END:
        return f_p2p;
    case GLUCX_AN_EV_REDUCE_BEGIN:
    case GLUCX_AN_EV_REDUCE_END:
        return f_reduce;
    case GLUCX_AN_EV_WAIT_BEGIN:
    case GLUCX_AN_EV_WAIT_END:
        return f_wait;
    case GLUCX_AN_EV_COMPUTE_BEGIN:
    case GLUCX_AN_EV_COMPUTE_END:
        return f_compute;
    case GLUCX_AN_EV_ITERATION_BEGIN:
    case GLUCX_AN_EV_ITERATION_END:
        return f_iteration;
    case GLUCX_AN_EV_BUCKET_READY:
        return f_bucket;
    case GLUCX_AN_EV_ERROR:
        return f_error;
    default:
        return NULL;
    }
}

static const char *const coll_names[] = {"allreduce", "allgather", "allgatherv", "reduce_scatter",
                                         "alltoall",  "alltoallv", "broadcast",  "reduce",
                                         "gather",    "scatter",   "barrier"};
static const char *const alg_names[] = {"ring",
                                        "recursive_doubling",
                                        "rabenseifner",
                                        "bruck",
                                        "pairwise",
                                        "linear",
                                        "dissemination",
                                        "binomial",
                                        "scatter_allgather",
                                        "reduce_scatter_gather",
                                        "halving",
                                        "hierarchical",
                                        "torus",
                                        "torus_rotated"};
static const char *const dtype_names[] = {"bool", "i8",  "u8",   "i32", "i64",
                                          "u64",  "f16", "bf16", "f32", "f64"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};
static const char *const status_names[] = {"OK",
                                           "ERR_INVALID_ARG",
                                           "ERR_NO_MEMORY",
                                           "ERR_TRANSPORT",
                                           "ERR_TIMEOUT",
                                           "ERR_PEER_FAILED",
                                           "ERR_MISMATCH",
                                           "ERR_ABORTED",
                                           "ERR_UNSUPPORTED",
                                           "ERR_TRUNCATED",
                                           "ERR_STORE"};
static const char *const decision_names[] = {"algorithm", "fallback", "order", "partition",
                                             "priority"};
_Static_assert(sizeof(decision_names) / sizeof(decision_names[0]) == GLUCX_AN_DECISION_KINDS,
               "one name per decision kind");

#define LOOKUP(tab, v) ((v) >= 0 && (size_t)(v) < sizeof(tab) / sizeof(tab[0]) ? tab[v] : "unknown")

const char *glucx_an_coll_name(int c)
{
    return LOOKUP(coll_names, c);
}
const char *glucx_an_alg_name(int a)
{
    return a == -1 ? "none" : LOOKUP(alg_names, a);
}
const char *glucx_an_dtype_name(int d)
{
    return LOOKUP(dtype_names, d);
}
const char *glucx_an_op_name(int o)
{
    return LOOKUP(op_names, o);
}
const char *glucx_an_decision_name(int k)
{
    return LOOKUP(decision_names, k);
}

int glucx_an_decision_per_coll(int kind)
{
    return kind == 0 || kind == 1 || kind == GLUCX_AN_DECISION_PRIORITY;
}

int glucx_an_decision_algs(int kind)
{
    return kind == 0 || kind == 1;
}

const char *glucx_an_option_name(int kind, int32_t id, char *buf, size_t n)
{
    if (glucx_an_decision_algs(kind))
        return glucx_an_alg_name(id);
    if (kind == GLUCX_AN_DECISION_PRIORITY)
        snprintf(buf, n, "seq %" PRIu32, (uint32_t)id); /* a seq, u32 in the trace */
    else if (kind == GLUCX_AN_DECISION_ORDER)
        snprintf(buf, n, "partition %" PRId32, id);
    else if (kind == GLUCX_AN_DECISION_PARTITION && id > 0)
        snprintf(buf, n, "uniform %" PRId32 " KiB", id);
    else if (kind == GLUCX_AN_DECISION_PARTITION && id < 0)
        snprintf(buf, n, "growing from %" PRId64 " KiB", -(int64_t)id);
    else if (kind == GLUCX_AN_DECISION_PARTITION)
        snprintf(buf, n, "one partition");
    else
        snprintf(buf, n, "%" PRId32, id);
    return buf;
}

const char *glucx_an_status_name(int s)
{
    if (s == 1)
        return "INPROGRESS";
    return s <= 0 ? LOOKUP(status_names, -s) : "unknown";
}

const char *glucx_an_gloo_prefix_name(unsigned prefix, char *buf, size_t len)
{
    /* the slot prefixes of Gloo's collectives (gloo/types.h) */
    static const char *const g[] = {NULL,      "gather",    "allgather", "reduce",  "allreduce",
                                    "scatter", "broadcast", "barrier",   "alltoall"};
    if (prefix < sizeof(g) / sizeof(g[0]) && g[prefix])
        return g[prefix];
    snprintf(buf, len, "gloo-prefix-%u", prefix);
    return buf;
}

glucx_an_event_t glucx_an_event_init(int kind, int64_t ts, uint64_t comm_id, int32_t rank)
{
    glucx_an_event_t e;
    memset(&e, 0, sizeof(e));
    e.kind = kind;
    e.ts = ts;
    e.comm_id = comm_id;
    e.rank = rank;
    e.vpid = e.vtid = -1;
    e.name = e.host = e.transport = e.reason = e.phase = e.text = "";
    e.seq = GLUCX_AN_SEQ_NONE;
    e.root = e.peer = e.link = e.link_id = e.src = e.dst = -1;
    e.alg = -1;
    e.chosen = -1;
    return e;
}

void glucx_an_set_err(char *err, size_t len, const char *fmt, ...)
{
    if (err == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}
