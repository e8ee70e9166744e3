/**
 * @file glucx/trace.h
 * @brief Framework-level trace events (iterations, compute phases, gradient buckets, schedule
 *        decisions) that the
 *        adapters (DDP hooks, ...) emit so the analysis can measure compute/communication overlap.
 *
 * Every function is cheap when no trace session records glucx events (one predictable branch)
 * and is safe to call from any thread. @p comm may be NULL for events not tied to a group;
 * the event then carries rank -1 and comm id 0. Until the tracing provider is loaded these
 * calls record nothing.
 */
#ifndef GLUCX_TRACE_H
#define GLUCX_TRACE_H

#include <stdint.h>

#include <glucx/glucx.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Whether a trace session currently records glucx events (0 or 1). Thread-safe. */
GLUCX_API int glucx_trace_enabled(void);

/** A training iteration @p iteration (0-based, increasing) starts / ends on this rank. */
GLUCX_API void glucx_trace_iteration_begin(glucx_comm_t *comm, uint64_t iteration);
GLUCX_API void glucx_trace_iteration_end(glucx_comm_t *comm, uint64_t iteration);

/**
 * A compute phase starts / ends. @p phase names it ("forward", "backward", "optimizer");
 * @p id distinguishes instances (e.g. the bucket index for backward, else 0). Borrowed strings.
 */
GLUCX_API void glucx_trace_compute_begin(glucx_comm_t *comm, const char *phase, uint64_t id);
GLUCX_API void glucx_trace_compute_end(glucx_comm_t *comm, const char *phase, uint64_t id);

/** Gradient bucket @p bucket of @p bytes bytes is ready for communication. */
GLUCX_API void glucx_trace_bucket_ready(glucx_comm_t *comm, uint64_t bucket, uint64_t bytes);

/**
 * A schedule decision of the framework about the next collective the calling thread starts on
 * @p comm (event sched_decision, trace/EVENTS.md): the event carries that collective's sequence
 * number, read from @p comm now, so call it right before starting the collective, from the
 * thread that starts it (a collective another thread starts in between takes the number).
 * @param comm         the communicator (not NULL: without one there is no collective to
 *                     attach the decision to and nothing is recorded).
 * @param kind         what is decided: a decision kind of trace/EVENTS.md ("kind"), e.g. 2
 *                     (order: the gradient partition issued next); the ones glucx's own
 *                     collectives emit (0, 1) are not for frameworks.
 * @param chosen       the option taken (for order: a partition index).
 * @param n_alt        number of options considered (0..1024; more are cut to 1024).
 * @param alt_ids      n_alt option ids (borrowed for the call; NULL when n_alt is 0).
 * @param alt_cost_ns  n_alt predicted costs in nanoseconds, one per option, in the same order
 *                     (borrowed; NULL when n_alt is 0). Cheapest first, by convention.
 * @param reason       why, a short borrowed NUL-terminated string (NULL: "").
 * Thread-safe; records nothing when no session enables sched_decision.
 */
GLUCX_API void glucx_trace_sched_decision(glucx_comm_t *comm, int kind, int32_t chosen,
                                          uint32_t n_alt, const int32_t *alt_ids,
                                          const uint64_t *alt_cost_ns, const char *reason);

#ifdef __cplusplus
}
#endif
#endif
