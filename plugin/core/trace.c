/* glucx/trace.h: framework events. The tracing provider arrives with the tracing work; until
 * then no session can record glucx events, so these report "disabled" and record nothing. */
#include <glucx/trace.h>

int glucx_trace_enabled(void)
{
    return 0;
}

void glucx_trace_iteration_begin(glucx_comm_t *comm, uint64_t iteration)
{
    (void)comm;
    (void)iteration;
}

void glucx_trace_iteration_end(glucx_comm_t *comm, uint64_t iteration)
{
    (void)comm;
    (void)iteration;
}

void glucx_trace_compute_begin(glucx_comm_t *comm, const char *phase, uint64_t id)
{
    (void)comm;
    (void)phase;
    (void)id;
}

void glucx_trace_compute_end(glucx_comm_t *comm, const char *phase, uint64_t id)
{
    (void)comm;
    (void)phase;
    (void)id;
}

void glucx_trace_bucket_ready(glucx_comm_t *comm, uint64_t bucket, uint64_t bytes)
{
    (void)comm;
    (void)bucket;
    (void)bytes;
}
