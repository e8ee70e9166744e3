/*
 * Process-wide counters (glucx_stats_get): what went through glucx, so a host can check that
 * its traffic really used this transport. Relaxed atomics: one uncontended add per operation.
 */
#include <stdatomic.h>

#include "core/core.h"

static _Atomic uint64_t n_sends, n_send_bytes, n_recvs, n_recv_bytes, n_colls, n_comms;

void glucx_stats_add_send(size_t bytes)
{
    atomic_fetch_add_explicit(&n_sends, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_send_bytes, bytes, memory_order_relaxed);
}

void glucx_stats_add_recv(size_t bytes)
{
    atomic_fetch_add_explicit(&n_recvs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_recv_bytes, bytes, memory_order_relaxed);
}

void glucx_stats_add_coll(void)
{
    atomic_fetch_add_explicit(&n_colls, 1, memory_order_relaxed);
}

void glucx_stats_add_comm(void)
{
    atomic_fetch_add_explicit(&n_comms, 1, memory_order_relaxed);
}

void glucx_stats_get(glucx_stats_t *stats)
{
    if (stats == NULL)
        return;
    stats->sends = atomic_load_explicit(&n_sends, memory_order_relaxed);
    stats->send_bytes = atomic_load_explicit(&n_send_bytes, memory_order_relaxed);
    stats->recvs = atomic_load_explicit(&n_recvs, memory_order_relaxed);
    stats->recv_bytes = atomic_load_explicit(&n_recv_bytes, memory_order_relaxed);
    stats->collectives = atomic_load_explicit(&n_colls, memory_order_relaxed);
    stats->comms = atomic_load_explicit(&n_comms, memory_order_relaxed);
}
