/**
 * @file glucx/trace.h
 * @brief Framework-level trace events (iterations, compute phases, gradient buckets) that the
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

#ifdef __cplusplus
}
#endif
#endif
