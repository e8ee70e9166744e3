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
    uint32_t seq;
    glucx_request_t *req;     /**< glucx_coll_start(): the request to complete */
    glucx_coll_callback_t cb; /**< glucx_coll_start_cb(): the callback to call instead */
    void *cb_arg;
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
                                  size_t bytes, int *order, int norder, int forced, int *ran_p);

/* Run a validated collective with sequence number seq. */
static glucx_status_t execute(glucx_comm_t *comm, const glucx_coll_args_t *args,
                              const char *algorithm, int64_t timeout_ms, uint32_t seq)
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
    glucx_status_t st =
        execute_run(comm, args, algorithm, timeout_ms, seq, bytes, order, norder, forced, &ran);
    GLUCX_TP(coll_end, comm->trace_id, comm->rank, seq, (int)args->coll, (uint64_t)bytes,
             (int)args->dtype, (int)args->op, tp_root(args), glucx_coll_tp_alg(args->coll, ran),
             st);
    return st;
}

/* The dispatch loop of execute(): order[0..norder) is the choice, then (unless forced) the
 * others by cost when it declines. *ran_p: the last algorithm tried (-1: none). */
static glucx_status_t execute_run(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                  const char *algorithm, int64_t timeout_ms, uint32_t seq,
                                  size_t bytes, int *order, int norder, int forced, int *ran_p)
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
    st = execute(comm, args, requested_alg(opts), effective_timeout(comm, opts), seq);
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
        comm->queue_head = job->next;
        if (comm->queue_head == NULL)
            comm->queue_tail = NULL;
        comm->thread_busy = 1;
        pthread_mutex_unlock(&comm->lock);

        glucx_status_t st = execute(comm, &job->args, job->algorithm[0] ? job->algorithm : NULL,
                                    effective_timeout(comm, &job->opts), job->seq);
        glucx_comm_record_error(comm, st);
        /* The collective is over on this rank before anyone learns it: a destroy that follows
         * the caller's wait must not find the thread busy and fail the peers (issue 13). */
        pthread_mutex_lock(&comm->lock);
        comm->thread_busy = 0;
        pthread_mutex_unlock(&comm->lock);
        job_complete(job, st);
        free(job);
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
        free(job);
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
    /* sequence numbers are taken in call order, like glucx_coll() */
    job->seq = atomic_fetch_add(&comm->coll_seq, 1);
    if (job->req != NULL)
        job->req->trace_seq = job->seq;
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
