/*
 * Collective dispatch: validate, choose the algorithm (opts.algorithm, else the selection map
 * with GLUCX_TUNE applied), run it, fall back to the next-cheapest algorithm when one answers
 * GLUCX_ERR_UNSUPPORTED (decided identically on every rank before any traffic).
 * glucx_coll_start() queues the same work on a per-communicator thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"
#include "util/error.h"
#include "util/fork.h"
#include "util/time.h"
#include "util/tracepoint.h"

struct glucx_coll_job {
    glucx_coll_job_t *next;
    glucx_coll_args_t args;
    glucx_coll_opts_t opts;
    char algorithm[32];
    uint32_t seq;             /**< scheduled: its agreements'; its chunks' follow (sched_step) */
    uint32_t nseq;            /**< sequence numbers it reserved (comm->seqs_outstanding) */
    uint64_t order;           /**< position in the start order (comm->job_order) */
    glucx_request_t *req;     /**< glucx_coll_start(): the request to complete */
    glucx_coll_callback_t cb; /**< glucx_coll_start_cb(): the callback to call instead */
    void *cb_arg;
    /* scheduled (GLUCX_COLL_OPT_PRIORITY) only; written by the collective thread */
    int scheduled;
    uint32_t nchunks;     /**< chunks of chunk_elems elements (the last one shorter) */
    uint32_t next_chunk;  /**< chunks done */
    size_t chunk_elems;   /**< elements per chunk */
    uint32_t decisions;   /**< decisions taken while this job was the oldest (their tags) */
    uint32_t passed_over; /**< of those, how many chose another job */
};

static int find_alg(glucx_coll_t coll, const char *name)
{
    const glucx_coll_table_t *t = glucx_coll_tables[coll];
    for (int i = 0; i < t->count; i++)
        if (strcmp(t->algs[i].name, name) == 0)
            return i;
    return -1;
}

/* Checks that need no traffic: arguments, options, communicator state. */
static glucx_status_t precheck(glucx_comm_t *comm, const glucx_coll_args_t *args,
                               const glucx_coll_opts_t *opts)
{
    if (comm == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "collective: NULL communicator");
    if (!comm->connected)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "collective: communicator '%s' on rank %d is not connected", comm->name,
                           comm->rank);
    glucx_status_t st = glucx_coll_args_check(args, comm->rank, comm->size);
    if (st != GLUCX_OK)
        return st;
    if (opts != NULL) {
        if ((opts->field_mask & GLUCX_COLL_OPT_ALGORITHM) && opts->algorithm != NULL &&
            find_alg(args->coll, opts->algorithm) < 0)
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "%s: unknown algorithm '%s' (glucx-info lists them)",
                               glucx_coll_name(args->coll), opts->algorithm);
        if ((opts->field_mask & GLUCX_COLL_OPT_CHUNK) && opts->chunk_bytes == 0)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "%s of %zu %s elements: chunk_bytes 0",
                               glucx_coll_name(args->coll), args->count,
                               glucx_dtype_name(args->dtype));
        if ((opts->field_mask & GLUCX_COLL_OPT_TIMEOUT) && opts->timeout_ms <= 0)
            return glucx_error(GLUCX_ERR_INVALID_ARG, "%s: timeout_ms %" PRId64 " <= 0",
                               glucx_coll_name(args->coll), opts->timeout_ms);
    }
    if (glucx_fork_tainted())
        return glucx_fork_refuse("%s of %zu %s elements (root %d) on communicator '%s' (rank %d "
                                 "of %d)",
                                 glucx_coll_name(args->coll), args->count,
                                 glucx_dtype_name(args->dtype), args->root, comm->name, comm->rank,
                                 comm->size);
    glucx_status_t failed = glucx_tx_failure(comm->tx);
    if (failed != GLUCX_OK)
        return glucx_error(failed, "%s: communicator '%s' failed earlier: %s",
                           glucx_coll_name(args->coll), comm->name, comm->tx->failure);
    glucx_stats_add_coll();
    return GLUCX_OK;
}

/* ---- tracing ---- */

#define TP_MAX_ALGS 32
static int tp_alg_ids[GLUCX_COLL_COUNT][TP_MAX_ALGS];
static pthread_once_t tp_alg_once = PTHREAD_ONCE_INIT;

static void tp_alg_init(void)
{
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        const glucx_coll_table_t *t = glucx_coll_tables[c];
        for (int i = 0; i < t->count && i < TP_MAX_ALGS; i++)
            tp_alg_ids[c][i] = glucx_tp_alg_id(t->algs[i].name);
    }
}

int glucx_coll_tp_alg(glucx_coll_t coll, int index)
{
    if ((unsigned)coll >= GLUCX_COLL_COUNT || index < 0 || index >= TP_MAX_ALGS ||
        index >= glucx_coll_tables[coll]->count)
        return GLUCX_TP_ALG_NONE;
    pthread_once(&tp_alg_once, tp_alg_init);
    return tp_alg_ids[coll][index];
}

static int32_t tp_root(const glucx_coll_args_t *a)
{
    return (a->coll == GLUCX_COLL_BROADCAST || a->coll == GLUCX_COLL_REDUCE ||
            a->coll == GLUCX_COLL_GATHER || a->coll == GLUCX_COLL_SCATTER)
               ? a->root
               : -1;
}

/* The alternatives of the last sched_decision this thread emitted: the cost functions depend
 * only on the communicator's topology (fixed once it exists; trace_id names one creation of
 * it), the collective and the size, so a loop of equal collectives evaluates them once. */
typedef struct tp_alternatives {
    uint64_t comm;
    int coll;
    size_t bytes;
    int n; /* -1: empty */
    int32_t ids[TP_MAX_ALGS];
    uint64_t costs[TP_MAX_ALGS];
} tp_alternatives_t;
static _Thread_local tp_alternatives_t tp_last = {.n = -1};

/* sched_decision: every algorithm of the collective with a finite predicted cost, cheapest
 * first, and the one chosen. Only called while the event is enabled. */
static void tp_decision(const glucx_comm_t *comm, const glucx_coll_args_t *args, size_t bytes,
                        uint32_t seq, int kind, int chosen, const char *reason)
{
    tp_alternatives_t *a = &tp_last;
    if (a->n < 0 || a->comm != comm->trace_id || a->coll != (int)args->coll || a->bytes != bytes) {
        int order[TP_MAX_ALGS];
        double raw[TP_MAX_ALGS];
        const int n = glucx_select_by_cost(comm->topo, args->coll, bytes, order, raw, TP_MAX_ALGS);
        for (int k = 0; k < n; k++) {
            a->ids[k] = glucx_coll_tp_alg(args->coll, order[k]);
            a->costs[k] = raw[k] <= 0 ? 0 : (uint64_t)llround(raw[k]);
        }
        a->comm = comm->trace_id;
        a->coll = (int)args->coll;
        a->bytes = bytes;
        a->n = n;
    }
    GLUCX_TP(sched_decision, comm->trace_id, comm->rank, seq, kind,
             glucx_coll_tp_alg(args->coll, chosen), (uint32_t)a->n, a->ids, a->costs, reason);
}

static glucx_status_t execute_run(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                  const char *algorithm, int64_t timeout_ms, uint32_t seq,
                                  unsigned step_base, size_t bytes, int *order, int norder,
                                  int forced, int *ran_p);

/* Run a validated collective with sequence number seq; its steps start at step_base (0 except
 * for the scheduler's agreements, which share one sequence number). */
static glucx_status_t execute(glucx_comm_t *comm, const glucx_coll_args_t *args,
                              const char *algorithm, int64_t timeout_ms, uint32_t seq,
                              unsigned step_base)
{
    const size_t bytes = glucx_coll_bytes(args, comm->size);
    int order[64];
    int norder = 0;
    int forced = 0;
    if (algorithm != NULL) {
        order[norder++] = find_alg(args->coll, algorithm);
        forced = 1;
    } else {
        const glucx_select_range_t *r = glucx_select_lookup(&comm->select, args->coll, bytes);
        if (r->alg >= 0)
            order[norder++] = r->alg;
        forced = r->forced;
    }

    if (GLUCX_TP_ON(coll_begin) || GLUCX_TP_ON(sched_decision)) {
        const int first = norder > 0 ? order[0] : -1;
        GLUCX_TP(coll_begin, comm->trace_id, comm->rank, seq, (int)args->coll, (uint64_t)bytes,
                 (int)args->dtype, (int)args->op, tp_root(args),
                 glucx_coll_tp_alg(args->coll, first), GLUCX_INPROGRESS);
        if (GLUCX_TP_ON(sched_decision) && first >= 0)
            tp_decision(comm, args, bytes, seq, GLUCX_TP_DECISION_ALGORITHM, first,
                        algorithm != NULL ? "override"
                        : forced          ? "GLUCX_TUNE"
                                          : "selection map");
    }
    int ran = -1; /* the last algorithm tried */
    glucx_status_t st = execute_run(comm, args, algorithm, timeout_ms, seq, step_base, bytes, order,
                                    norder, forced, &ran);
    GLUCX_TP(coll_end, comm->trace_id, comm->rank, seq, (int)args->coll, (uint64_t)bytes,
             (int)args->dtype, (int)args->op, tp_root(args), glucx_coll_tp_alg(args->coll, ran),
             st);
    return st;
}

/* The dispatch loop of execute(): order[0..norder) is the choice, then (unless forced) the
 * others by cost when it declines. *ran_p: the last algorithm tried (-1: none). */
static glucx_status_t execute_run(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                  const char *algorithm, int64_t timeout_ms, uint32_t seq,
                                  unsigned step_base, size_t bytes, int *order, int norder,
                                  int forced, int *ran_p)
{
    glucx_status_t st = GLUCX_ERR_UNSUPPORTED;
    int expanded = forced;                               /* a forced choice has no fallback */
    char why[sizeof(((glucx_coll_ctx_t *)0)->why)] = ""; /* why the first choice declined */
    for (int i = 0; st == GLUCX_ERR_UNSUPPORTED; i++) {
        if (i == norder) {
            /* The chosen algorithm declined (before any traffic, alike on every rank): the
             * others, cheapest first. Computed only then, to keep the common path short. */
            if (expanded)
                break;
            expanded = 1;
            int by_cost[64];
            int n = glucx_select_by_cost(comm->topo, args->coll, bytes, by_cost, NULL, 64);
            for (int k = 0; k < n; k++)
                if (norder == 0 || by_cost[k] != order[0])
                    order[norder++] = by_cost[k];
            if (i == norder)
                break;
        }
        if (i > 0 && GLUCX_TP_ON(sched_decision)) {
            char reason[64];
            snprintf(reason, sizeof(reason), "fallback: %s unsupported",
                     glucx_coll_tables[args->coll]->algs[order[i - 1]].name);
            tp_decision(comm, args, bytes, seq, GLUCX_TP_DECISION_FALLBACK, order[i], reason);
        }
        glucx_coll_ctx_t ctx;
        *ran_p = order[i];
        st = glucx_coll_ctx_init(&ctx, comm->tx, comm->topo, args, seq, order[i], timeout_ms);
        if (st != GLUCX_OK)
            return st;
        ctx.trace_comm = comm->trace_id;
        ctx.step_base = step_base;
        st = glucx_coll_ctx_run(&ctx);
        if (st == GLUCX_ERR_UNSUPPORTED && i == 0)
            memcpy(why, ctx.why, sizeof(why));
        glucx_coll_ctx_fini(&ctx);
    }
    if (st == GLUCX_ERR_UNSUPPORTED && forced)
        return glucx_error(
            GLUCX_ERR_UNSUPPORTED,
            "%s: algorithm '%s' (requested%s) does not apply to %zu bytes of %s on "
            "%d ranks%s%s",
            glucx_coll_name(args->coll), glucx_coll_tables[args->coll]->algs[order[0]].name,
            algorithm != NULL ? " by the call" : " by GLUCX_TUNE", bytes,
            glucx_dtype_name(args->dtype), comm->size, why[0] ? ": " : "",
            why[0] ? why : " (glucx-info --algorithms describes each algorithm's limits)");
    if (st == GLUCX_ERR_UNSUPPORTED)
        return glucx_error(
            GLUCX_ERR_UNSUPPORTED, "%s: no algorithm applies to %zu bytes of %s on %d ranks",
            glucx_coll_name(args->coll), bytes, glucx_dtype_name(args->dtype), comm->size);
    return st;
}

static int64_t effective_timeout(const glucx_comm_t *comm, const glucx_coll_opts_t *opts)
{
    if (opts != NULL && (opts->field_mask & GLUCX_COLL_OPT_TIMEOUT))
        return opts->timeout_ms;
    return comm->timeout_ms;
}

static const char *requested_alg(const glucx_coll_opts_t *opts)
{
    if (opts != NULL && (opts->field_mask & GLUCX_COLL_OPT_ALGORITHM))
        return opts->algorithm;
    return NULL;
}

glucx_status_t glucx_coll(glucx_comm_t *comm, const glucx_coll_args_t *args,
                          const glucx_coll_opts_t *opts)
{
    glucx_status_t st = precheck(comm, args, opts);
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    uint32_t seq = atomic_fetch_add(&comm->coll_seq, 1);
    st = execute(comm, args, requested_alg(opts), effective_timeout(comm, opts), seq, 0);
    return glucx_comm_record_error(comm, st);
}

/* ---- the collective thread ---- */

static void request_complete(glucx_request_t *req, glucx_status_t st)
{
    pthread_mutex_lock(&req->lock);
    req->coll_status = st;
    if (st != GLUCX_OK)
        snprintf(req->error, sizeof(req->error), "%s", glucx_error_text());
    req->coll_done = 1;
    pthread_cond_broadcast(&req->cond);
    pthread_mutex_unlock(&req->lock);
}

/* Report a job's end to its request or its callback (exactly once), on the calling thread. */
static void job_complete(glucx_coll_job_t *job, glucx_status_t st)
{
    if (job->cb != NULL)
        job->cb(job->cb_arg, st, st == GLUCX_OK ? "" : glucx_error_text());
    else
        request_complete(job->req, st);
}

/*
 * GLUCX_COLL_NICE: give the collective thread a better (lower) nice value than the thread that
 * started it, so that when a collective has work (progress, copies, reductions) the scheduler
 * runs it ahead of compute threads at the default priority instead of time-slicing it with them
 * (DDP's allreduces during backward; docs/perf.md). Linux keeps a nice value per thread. Without
 * CAP_SYS_NICE (and beyond RLIMIT_NICE) the kernel refuses a lower value: the thread then keeps
 * its priority and an info line says so (once per process), since nothing else changes.
 */
static void coll_thread_priority(const glucx_comm_t *comm)
{
    const int delta = (int)comm->context->config.coll_nice;
    if (delta == 0)
        return;
    const pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    const int before = getpriority(PRIO_PROCESS, (id_t)tid);
    if (before == -1 && errno != 0)
        return;
    int want = before + delta;
    want = want < -20 ? -20 : want > 19 ? 19 : want;
    if (setpriority(PRIO_PROCESS, (id_t)tid, want) == 0) {
        glucx_debug("communicator '%s' rank %d: collective thread %d at nice %d (was %d)",
                    comm->name, comm->rank, (int)tid, want, before);
        return;
    }
    static atomic_int told;
    if (atomic_exchange(&told, 1) == 0)
        glucx_info("communicator '%s' rank %d: GLUCX_COLL_NICE=%d: cannot set the collective "
                   "thread's nice value %d -> %d (%s; needs CAP_SYS_NICE or RLIMIT_NICE): it "
                   "keeps the priority of the thread that started it",
                   comm->name, comm->rank, delta, before, want, strerror(errno));
}

/* ---- scheduled collectives (GLUCX_COLL_OPT_PRIORITY) ----
 *
 * Every scheduled job takes 1 + nchunks sequence numbers when it is started: first one for the
 * agreements taken while it is the oldest unfinished job (the queue's head), whose steps are told
 * apart by step_base = decisions * SCHED_STEP_SPAN, then one per chunk. The agreement's comes
 * first so that it does not depend on the chunk count: ranks that disagree on the chunk size, or
 * on whether the job is scheduled at all (an unscheduled one runs on that same number), meet on
 * it and find the mismatch (length or signature) instead of waiting on different numbers. Before
 * each chunk every rank contributes, for each of the first SCHED_WINDOW unfinished jobs in start
 * order, its priority (SCHED_FENCE for an unscheduled job, SCHED_NOT when it has not started it)
 * and its negation; an allreduce MAX gives every rank the same maximum and minimum per slot. The
 * candidates are the slots before the first one some rank has not started or that is a fence; the
 * highest priority wins, ties by start order. Jobs leave the queue only when they end, on every
 * rank alike, so slot i names the same job everywhere. Since each chunk is followed by an agreement
 * no rank can be more than one chunk or agreement ahead of another, and the sequence numbers in
 * flight stay within the window's (far below the 16-bit wrap of the tags). */
#define SCHED_WINDOW 16
#define SCHED_STEP_SPAN 32   /* recursive doubling uses log2(n) + 2 <= 16 steps */
#define SCHED_PASSED_MAX 256 /* starvation guard; 256 * 32 steps stay below the confirm range */
#define SCHED_NOT INT64_MAX  /* slot not started on this rank */
#define SCHED_FENCE (INT64_MAX - 1)
#define SCHED_DONE (INT64_MIN + 1) /* never sent: jobs leave the queue when they end */

/* Free a job that was queued, returning its sequence numbers. */
static void job_free(glucx_comm_t *comm, glucx_coll_job_t *job)
{
    atomic_fetch_sub(&comm->seqs_outstanding, job->nseq);
    free(job);
}

static int chunkable(glucx_coll_t coll)
{
    return coll == GLUCX_COLL_ALLREDUCE || coll == GLUCX_COLL_BROADCAST ||
           coll == GLUCX_COLL_REDUCE;
}

/* Chunk count and size of a scheduled job (equal on every rank for equal arguments). */
static void sched_plan(glucx_coll_job_t *job)
{
    const size_t es = glucx_dtype_size(job->args.dtype), count = job->args.count;
    size_t chunk = GLUCX_COLL_CHUNK_DEFAULT;
    if (job->opts.field_mask & GLUCX_COLL_OPT_CHUNK)
        chunk = job->opts.chunk_bytes;
    size_t elems = es > 0 ? chunk / es : count;
    if (elems == 0)
        elems = 1;
    /* an input overlapping the output other than exactly in place would be overwritten by
     * one chunk's output before a later chunk reads it: such calls run as one chunk */
    const char *in = job->args.sendbuf == GLUCX_IN_PLACE ? NULL : job->args.sendbuf;
    const char *out = job->args.recvbuf;
    const int overlap =
        in != NULL && out != NULL && in != out && in < out + count * es && out < in + count * es;
    if (!chunkable(job->args.coll) || count <= elems || overlap) {
        job->nchunks = 1;
        job->chunk_elems = count;
        return;
    }
    if ((count + elems - 1) / elems > GLUCX_COLL_SCHED_CHUNKS_MAX)
        elems = (count + GLUCX_COLL_SCHED_CHUNKS_MAX - 1) / GLUCX_COLL_SCHED_CHUNKS_MAX;
    job->nchunks = (uint32_t)((count + elems - 1) / elems);
    job->chunk_elems = elems;
}

/* Arguments of chunk c of a scheduled job. */
static void chunk_args(const glucx_coll_job_t *job, uint32_t c, glucx_coll_args_t *a)
{
    *a = job->args;
    if (job->nchunks == 1)
        return;
    const size_t es = glucx_dtype_size(a->dtype), off = (size_t)c * job->chunk_elems;
    a->count = off + job->chunk_elems <= job->args.count ? job->chunk_elems : job->args.count - off;
    if (a->sendbuf != NULL && a->sendbuf != GLUCX_IN_PLACE)
        a->sendbuf = (const char *)a->sendbuf + off * es;
    if (a->recvbuf != NULL)
        a->recvbuf = (char *)a->recvbuf + off * es;
}

/* Remove job from the queue (lock held). */
static void queue_remove(glucx_comm_t *comm, glucx_coll_job_t *job)
{
    glucx_coll_job_t **pp = &comm->queue_head, *prev = NULL;
    while (*pp != NULL && *pp != job) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == NULL)
        return;
    *pp = job->next;
    if (comm->queue_tail == job)
        comm->queue_tail = prev;
    job->next = NULL;
}

/* Put job back at its place in the start order (lock held). */
static void queue_insert(glucx_comm_t *comm, glucx_coll_job_t *job)
{
    glucx_coll_job_t **pp = &comm->queue_head, *prev = NULL;
    while (*pp != NULL && (*pp)->order < job->order) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    job->next = *pp;
    *pp = job;
    if (job->next == NULL)
        comm->queue_tail = job;
    (void)prev;
}

static void job_complete(glucx_coll_job_t *job, glucx_status_t st);

/* The agreement of one decision: vec[0..2W) in, reduced (MAX) in place. */
static glucx_status_t sched_agree(glucx_comm_t *comm, uint32_t seq, unsigned step_base,
                                  int64_t timeout_ms, int64_t *vec)
{
    static const char alg[] = "recursive_doubling";
    const glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                                 .sendbuf = GLUCX_IN_PLACE,
                                 .recvbuf = vec,
                                 .count = 2 * SCHED_WINDOW,
                                 .dtype = GLUCX_DTYPE_I64,
                                 .op = GLUCX_OP_MAX};
    return execute(comm, &a, alg, timeout_ms, seq, step_base);
}

/* sched_decision of kind priority: the candidates' next chunks, the chosen one first. */
static void sched_trace(const glucx_comm_t *comm, glucx_coll_job_t *const *cand, int ncand,
                        int chosen, const char *reason)
{
    int32_t ids[SCHED_WINDOW];
    uint64_t costs[SCHED_WINDOW];
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < ncand; i++) {
            if ((pass == 0) != (i == chosen))
                continue;
            const glucx_coll_job_t *j = cand[i];
            glucx_coll_args_t a;
            chunk_args(j, j->next_chunk, &a);
            int alg;
            double cost = 0;
            if (glucx_select_by_cost(comm->topo, a.coll, glucx_coll_bytes(&a, comm->size), &alg,
                                     &cost, 1) < 1)
                cost = 0;
            ids[n] = (int32_t)(j->seq + 1 + j->next_chunk);
            costs[n++] = cost <= 0 ? 0 : (uint64_t)llround(cost);
        }
    GLUCX_TP(sched_decision, comm->trace_id, comm->rank, (uint32_t)ids[0],
             GLUCX_TP_DECISION_PRIORITY, ids[0], (uint32_t)n, ids, costs, reason);
}

/*
 * One decision and the chunk it chooses (lock held on entry and exit; the head is scheduled).
 * Jobs stay in the queue until they end; the one running a chunk is taken out meanwhile so that
 * glucx_comm_stop_thread(), which completes whatever is queued, never frees it under us.
 */
static void sched_step(glucx_comm_t *comm)
{
    glucx_coll_job_t *head = comm->queue_head;
    glucx_coll_job_t *win[SCHED_WINDOW];
    int64_t vec[2 * SCHED_WINDOW];
    int n = 0;
    for (glucx_coll_job_t *j = head; j != NULL && n < SCHED_WINDOW; j = j->next)
        win[n++] = j;
    for (int i = 0; i < SCHED_WINDOW; i++) {
        const int64_t v = i >= n              ? SCHED_NOT
                          : win[i]->scheduled ? win[i]->opts.priority
                                              : SCHED_FENCE;
        vec[i] = v;
        vec[SCHED_WINDOW + i] = -v;
    }
    const uint32_t agree_seq = head->seq;
    const unsigned step_base = head->decisions * SCHED_STEP_SPAN;
    const int64_t timeout_ms = effective_timeout(comm, &head->opts);
    const int guard = head->passed_over >= SCHED_PASSED_MAX;
    comm->thread_busy = 1;
    pthread_mutex_unlock(&comm->lock);

    glucx_status_t st = glucx_tx_failure(comm->tx);
    if (st != GLUCX_OK)
        glucx_error(st, "%s (seq %u): communicator '%s' failed earlier: %s",
                    glucx_coll_name(head->args.coll), head->seq, comm->name, comm->tx->failure);
    else if (!guard)
        st = sched_agree(comm, agree_seq, step_base, timeout_ms, vec);

    pthread_mutex_lock(&comm->lock);
    if (comm->thread_stop) { /* every queued job was completed by glucx_comm_stop_thread() */
        comm->thread_busy = 0;
        return;
    }
    glucx_coll_job_t *cand[SCHED_WINDOW];
    int ncand = 0, best = 0;
    if (st == GLUCX_OK && guard) {
        cand[ncand++] = head;
    } else if (st == GLUCX_OK) {
        head->decisions++;
        for (int i = 0; i < n; i++) {
            const int64_t hi = vec[i], lo = -vec[SCHED_WINDOW + i];
            if (hi == SCHED_NOT || (hi == SCHED_FENCE && lo == SCHED_FENCE))
                break;
            if (hi != lo) {
                st = glucx_error(GLUCX_ERR_MISMATCH,
                                 "%s (seq %u) started with priority scheduling: ranks differ "
                                 "(priorities from %" PRId64 " to %" PRId64 "%s)",
                                 glucx_coll_name(win[i]->args.coll), win[i]->seq,
                                 lo == SCHED_FENCE ? INT64_MIN : lo, hi,
                                 hi == SCHED_FENCE ? ", or started without a priority" : "");
                comm->tx->ops->fail(comm->tx, st, glucx_error_text());
                break;
            }
            cand[ncand] = win[i];
            if (win[i]->opts.priority > cand[best]->opts.priority)
                best = ncand;
            ncand++;
        }
        if (st == GLUCX_OK && ncand == 0) { /* the head is scheduled here and on every rank
                                                that agreed, unless the ranks' calls differ */
            st = glucx_error(GLUCX_ERR_MISMATCH,
                             "%s (seq %u) started with priority scheduling: another rank started "
                             "a different collective",
                             glucx_coll_name(head->args.coll), head->seq);
            comm->tx->ops->fail(comm->tx, st, glucx_error_text());
        }
    }
    if (st != GLUCX_OK) {
        /* the communicator is failed: this job ends with the error, the next ones in turn */
        comm->thread_busy = 0;
        queue_remove(comm, head);
        pthread_mutex_unlock(&comm->lock);
        glucx_comm_record_error(comm, st);
        job_complete(head, st);
        job_free(comm, head);
        pthread_mutex_lock(&comm->lock);
        return;
    }
    glucx_coll_job_t *job = cand[best];
    if (job != head)
        head->passed_over++;
    if (GLUCX_TP_ON(sched_decision)) { /* under the lock: cand[] stay queued meanwhile */
        char reason[64];
        if (guard)
            snprintf(reason, sizeof(reason), "starvation guard");
        else
            snprintf(reason, sizeof(reason), "priority %d, %d ready", job->opts.priority, ncand);
        sched_trace(comm, cand, ncand, best, reason);
    }
    queue_remove(comm, job);
    pthread_mutex_unlock(&comm->lock);
    glucx_coll_args_t a;
    chunk_args(job, job->next_chunk, &a);
    st = execute(comm, &a, job->algorithm[0] ? job->algorithm : NULL,
                 effective_timeout(comm, &job->opts), job->seq + 1 + job->next_chunk, 0);
    if (st != GLUCX_OK && job->nchunks > 1)
        glucx_error(st, "%s of %zu %s elements (chunk %u of %u, seq %u): %s",
                    glucx_coll_name(job->args.coll), job->args.count,
                    glucx_dtype_name(job->args.dtype), job->next_chunk + 1, job->nchunks,
                    job->seq + 1 + job->next_chunk, glucx_error_text());
    glucx_comm_record_error(comm, st);
    job->next_chunk++;

    pthread_mutex_lock(&comm->lock);
    comm->thread_busy = 0;
    if (st == GLUCX_OK && job->next_chunk < job->nchunks && !comm->thread_stop) {
        queue_insert(comm, job);
        return;
    }
    if (st == GLUCX_OK && job->next_chunk < job->nchunks)
        st =
            glucx_error(GLUCX_ERR_ABORTED,
                        "%s: communicator '%s' destroyed before the collective ended (%u of %u "
                        "chunks done)",
                        glucx_coll_name(job->args.coll), comm->name, job->next_chunk, job->nchunks);
    pthread_mutex_unlock(&comm->lock);
    job_complete(job, st);
    job_free(comm, job);
    pthread_mutex_lock(&comm->lock);
}

static void *coll_thread(void *arg)
{
    glucx_comm_t *comm = arg;
    coll_thread_priority(comm);
    pthread_mutex_lock(&comm->lock);
    for (;;) {
        while (comm->queue_head == NULL && !comm->thread_stop)
            pthread_cond_wait(&comm->queue_cond, &comm->lock);
        glucx_coll_job_t *job = comm->queue_head;
        if (job == NULL)
            break; /* stop requested and queue drained */
        if (job->scheduled) {
            sched_step(comm);
            continue;
        }
        comm->queue_head = job->next;
        if (comm->queue_head == NULL)
            comm->queue_tail = NULL;
        comm->thread_busy = 1;
        pthread_mutex_unlock(&comm->lock);

        glucx_status_t st = execute(comm, &job->args, job->algorithm[0] ? job->algorithm : NULL,
                                    effective_timeout(comm, &job->opts), job->seq, 0);
        glucx_comm_record_error(comm, st);
        /* The collective is over on this rank before anyone learns it: a destroy that follows
         * the caller's wait must not find the thread busy and fail the peers (issue 13). */
        pthread_mutex_lock(&comm->lock);
        comm->thread_busy = 0;
        pthread_mutex_unlock(&comm->lock);
        job_complete(job, st);
        job_free(comm, job);
        pthread_mutex_lock(&comm->lock);
    }
    pthread_mutex_unlock(&comm->lock);
    return NULL;
}

void glucx_comm_stop_thread(glucx_comm_t *comm, glucx_status_t status)
{
    pthread_mutex_lock(&comm->lock);
    int started = comm->thread_started;
    int busy = comm->thread_busy;
    comm->thread_stop = 1;
    /* queued jobs that have not started fail now; the running one ends with the transport */
    glucx_coll_job_t *job = comm->queue_head;
    comm->queue_head = comm->queue_tail = NULL;
    pthread_cond_broadcast(&comm->queue_cond);
    pthread_mutex_unlock(&comm->lock);
    while (job != NULL) {
        glucx_coll_job_t *next = job->next;
        glucx_error(status, "%s: communicator '%s' destroyed before the collective ran",
                    glucx_coll_name(job->args.coll), comm->name);
        job_complete(job, status);
        job_free(comm, job);
        job = next;
    }
    if (started) {
        /* a running collective ends when the transport fails */
        if (busy)
            comm->tx->ops->fail(comm->tx, status,
                                "communicator destroyed while a started collective was running");
        pthread_join(comm->thread, NULL);
        comm->thread_started = 0;
    }
}

/* Queue a validated job on the collective thread (started on first use); takes the job. */
static glucx_status_t enqueue(glucx_comm_t *comm, glucx_coll_job_t *job)
{
    pthread_mutex_lock(&comm->lock);
    if (!comm->thread_started && !comm->thread_stop) {
        if (pthread_create(&comm->thread, NULL, coll_thread, comm) != 0) {
            pthread_mutex_unlock(&comm->lock);
            return glucx_error(GLUCX_ERR_NO_MEMORY, "%s: cannot start the collective thread",
                               glucx_coll_name(job->args.coll));
        }
        comm->thread_started = 1;
    }
    if (comm->thread_stop) {
        pthread_mutex_unlock(&comm->lock);
        return glucx_error(GLUCX_ERR_ABORTED, "%s: communicator '%s' is being destroyed",
                           glucx_coll_name(job->args.coll), comm->name);
    }
    /* sequence numbers are taken in call order, like glucx_coll(); a scheduled job takes one
     * for its agreements and one per chunk. Tags carry 16 bits of them: with more reserved by
     * unfinished started collectives than GLUCX_COLL_SEQS_OUTSTANDING_MAX, a collective still
     * queued and one called now (glucx_coll() on another thread) could share tags. */
    job->nseq = job->scheduled ? job->nchunks + 1 : 1;
    if (atomic_load(&comm->seqs_outstanding) + job->nseq > GLUCX_COLL_SEQS_OUTSTANDING_MAX) {
        const unsigned held = atomic_load(&comm->seqs_outstanding);
        pthread_mutex_unlock(&comm->lock);
        return glucx_error(GLUCX_ERR_UNSUPPORTED,
                           "%s of %zu %s elements: too many started collectives outstanding on "
                           "communicator '%s' (rank %d): they hold %u sequence numbers, this one "
                           "needs %u, the limit is %u; wait for some first",
                           glucx_coll_name(job->args.coll), job->args.count,
                           glucx_dtype_name(job->args.dtype), comm->name, comm->rank, held,
                           job->nseq, (unsigned)GLUCX_COLL_SEQS_OUTSTANDING_MAX);
    }
    atomic_fetch_add(&comm->seqs_outstanding, job->nseq);
    job->seq = atomic_fetch_add(&comm->coll_seq, job->nseq);
    job->order = comm->job_order++;
    if (job->req != NULL)
        job->req->trace_seq = job->scheduled ? job->seq + 1 : job->seq;
    if (comm->queue_tail != NULL)
        comm->queue_tail->next = job;
    else
        comm->queue_head = job;
    comm->queue_tail = job;
    pthread_cond_signal(&comm->queue_cond);
    pthread_mutex_unlock(&comm->lock);
    return GLUCX_OK;
}

/* A job for a validated call: arguments and options copied (borrowed strings dropped). */
static glucx_coll_job_t *job_new(const glucx_coll_args_t *args, const glucx_coll_opts_t *opts)
{
    glucx_coll_job_t *job = calloc(1, sizeof(*job));
    if (job == NULL)
        return NULL;
    job->args = *args;
    if (opts != NULL)
        job->opts = *opts;
    const char *alg = requested_alg(opts);
    if (alg != NULL)
        snprintf(job->algorithm, sizeof(job->algorithm), "%s", alg);
    job->opts.algorithm = NULL;
    job->opts.label = NULL; /* borrowed only for the call */
    if (opts != NULL && (opts->field_mask & GLUCX_COLL_OPT_PRIORITY)) {
        job->scheduled = 1;
        sched_plan(job);
    }
    return job;
}

glucx_status_t glucx_coll_start(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                const glucx_coll_opts_t *opts, glucx_request_t **request_p)
{
    if (request_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "coll_start: NULL request_p");
    glucx_status_t st = precheck(comm, args, opts);
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    glucx_coll_job_t *job = job_new(args, opts);
    glucx_request_t *req = glucx_request_alloc(comm, GLUCX_REQ_COLL);
    if (job == NULL || req == NULL) {
        free(job);
        glucx_request_free(req);
        return glucx_error(GLUCX_ERR_NO_MEMORY, "%s: cannot queue the collective",
                           glucx_coll_name(args->coll));
    }
    job->req = req;
    st = enqueue(comm, job);
    if (st != GLUCX_OK) {
        free(job);
        /* never queued: complete it so that glucx_request_free() does not wait for it */
        request_complete(req, st);
        glucx_request_free(req);
        return st;
    }
    *request_p = req;
    return GLUCX_OK;
}

glucx_status_t glucx_coll_start_cb(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                   const glucx_coll_opts_t *opts, glucx_coll_callback_t callback,
                                   void *arg)
{
    if (callback == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "coll_start_cb: NULL callback");
    glucx_status_t st = precheck(comm, args, opts);
    if (st != GLUCX_OK)
        return glucx_comm_record_error(comm, st);
    glucx_coll_job_t *job = job_new(args, opts);
    if (job == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "%s: cannot queue the collective",
                           glucx_coll_name(args->coll));
    job->cb = callback;
    job->cb_arg = arg;
    st = enqueue(comm, job);
    if (st != GLUCX_OK)
        free(job);
    return st;
}

/* ---- convenience forms ---- */

#define RUN_COLL(...)                                                                              \
    do {                                                                                           \
        glucx_coll_args_t a_ = {__VA_ARGS__};                                                      \
        return glucx_coll(comm, &a_, opts);                                                        \
    } while (0)

glucx_status_t glucx_allreduce(glucx_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               glucx_dtype_t dtype, glucx_op_t op, const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
             .dtype = dtype, .op = op);
}

glucx_status_t glucx_allgather(glucx_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               glucx_dtype_t dtype, const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_ALLGATHER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
             .dtype = dtype);
}

glucx_status_t glucx_allgatherv(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                const size_t *counts, const size_t *displs, glucx_dtype_t dtype,
                                const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_ALLGATHERV, .sendbuf = sendbuf, .recvbuf = recvbuf,
             .counts = counts, .displs = displs, .dtype = dtype);
}

glucx_status_t glucx_reduce_scatter(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                    size_t count, glucx_dtype_t dtype, glucx_op_t op,
                                    const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_REDUCE_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf,
             .count = count, .dtype = dtype, .op = op);
}

glucx_status_t glucx_alltoall(glucx_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                              glucx_dtype_t dtype, const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_ALLTOALL, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
             .dtype = dtype);
}

glucx_status_t glucx_alltoallv(glucx_comm_t *comm, const void *sendbuf, const size_t *send_counts,
                               const size_t *send_displs, void *recvbuf, const size_t *recv_counts,
                               const size_t *recv_displs, glucx_dtype_t dtype,
                               const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_ALLTOALLV, .sendbuf = sendbuf, .recvbuf = recvbuf,
             .counts = recv_counts, .displs = recv_displs, .send_counts = send_counts,
             .send_displs = send_displs, .dtype = dtype);
}

glucx_status_t glucx_broadcast(glucx_comm_t *comm, void *buf, size_t count, glucx_dtype_t dtype,
                               int root, const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_BROADCAST, .recvbuf = buf, .count = count, .dtype = dtype,
             .root = root);
}

glucx_status_t glucx_reduce(glucx_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                            glucx_dtype_t dtype, glucx_op_t op, int root,
                            const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
             .dtype = dtype, .op = op, .root = root);
}

glucx_status_t glucx_gather(glucx_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                            glucx_dtype_t dtype, int root, const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_GATHER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
             .dtype = dtype, .root = root);
}

glucx_status_t glucx_scatter(glucx_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             glucx_dtype_t dtype, int root, const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
             .dtype = dtype, .root = root);
}

glucx_status_t glucx_barrier(glucx_comm_t *comm, const glucx_coll_opts_t *opts)
{
    RUN_COLL(.coll = GLUCX_COLL_BARRIER);
}
