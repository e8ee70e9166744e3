/* glucx/trace.h: framework events (iterations, compute phases, gradient buckets, schedule
 * decisions) emitted by the adapters, recorded through the macro layer (util/tracepoint.h) as
 * the iteration_*, compute_*, bucket_ready and sched_decision events of trace/EVENTS.md. */
#include <glucx/trace.h>

#include "core/core.h"
#include "util/tracepoint.h"

/* The communicator's trace id (same on every rank; see glucx_tp_comm_id()). Communicator
 * creation stores it in the comm once the core has the field (GLUCX_COMM_HAS_TRACE_ID);
 * until then the framework events of a comm carry comm id 0 and only the rank. */
static inline uint64_t comm_trace_id(const glucx_comm_t *comm)
{
    if (comm == NULL)
        return 0;
#ifdef GLUCX_COMM_HAS_TRACE_ID
    return comm->trace_id;
#else
    return 0;
#endif
}

static inline int32_t comm_rank(const glucx_comm_t *comm)
{
    return comm != NULL ? (int32_t)comm->rank : -1;
}

int glucx_trace_enabled(void)
{
#if GLUCX_TP_COMPILED
    /* any glucx event: a session that records only some still wants them */
    return GLUCX_TP_ON(comm_init) || GLUCX_TP_ON(link) || GLUCX_TP_ON(select_map) ||
           GLUCX_TP_ON(coll_begin) || GLUCX_TP_ON(coll_end) || GLUCX_TP_ON(sched_decision) ||
           GLUCX_TP_ON(send_begin) || GLUCX_TP_ON(send_end) || GLUCX_TP_ON(recv_begin) ||
           GLUCX_TP_ON(recv_end) || GLUCX_TP_ON(reduce_begin) || GLUCX_TP_ON(reduce_end) ||
           GLUCX_TP_ON(wait_begin) || GLUCX_TP_ON(wait_end) || GLUCX_TP_ON(compute_begin) ||
           GLUCX_TP_ON(compute_end) || GLUCX_TP_ON(iteration_begin) || GLUCX_TP_ON(iteration_end) ||
           GLUCX_TP_ON(bucket_ready) || GLUCX_TP_ON(error);
#else
    return 0;
#endif
}

void glucx_trace_iteration_begin(glucx_comm_t *comm, uint64_t iteration)
{
    GLUCX_TP(iteration_begin, comm_trace_id(comm), comm_rank(comm), iteration);
}

void glucx_trace_iteration_end(glucx_comm_t *comm, uint64_t iteration)
{
    GLUCX_TP(iteration_end, comm_trace_id(comm), comm_rank(comm), iteration);
}

void glucx_trace_compute_begin(glucx_comm_t *comm, const char *phase, uint64_t id)
{
    GLUCX_TP(compute_begin, comm_trace_id(comm), comm_rank(comm), phase, id);
}

void glucx_trace_compute_end(glucx_comm_t *comm, const char *phase, uint64_t id)
{
    GLUCX_TP(compute_end, comm_trace_id(comm), comm_rank(comm), phase, id);
}

void glucx_trace_bucket_ready(glucx_comm_t *comm, uint64_t bucket, uint64_t bytes)
{
    GLUCX_TP(bucket_ready, comm_trace_id(comm), comm_rank(comm), bucket, bytes);
}

void glucx_trace_sched_decision(glucx_comm_t *comm, int kind, int32_t chosen, uint32_t n_alt,
                                const int32_t *alt_ids, const uint64_t *alt_cost_ns,
                                const char *reason)
{
    if (comm == NULL || !GLUCX_TP_ON(sched_decision))
        return;
    if (alt_ids == NULL || alt_cost_ns == NULL)
        n_alt = 0;
    if (n_alt > 1024)
        n_alt = 1024;
    GLUCX_TP(sched_decision, comm_trace_id(comm), comm_rank(comm),
             (uint32_t)atomic_load(&comm->coll_seq), kind, chosen, n_alt, alt_ids, alt_cost_ns,
             reason != NULL ? reason : "");
}
