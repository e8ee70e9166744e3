/**
 * Internal: the trace macro layer. Plugin code emits trace events only through these macros and
 * never names lttng_*; the events, their arguments and their units are in trace/EVENTS.md (the
 * provider header trace/include/glucx_tp/provider.h declares them).
 *
 *     GLUCX_TP(send_begin, comm_id, rank, seq, step, peer, link, tag, bytes);
 *
 *     if (GLUCX_TP_ON(select_map)) {          // anything computed only for the trace
 *         ... fill arrays ...
 *         GLUCX_TP(select_map, comm_id, rank, coll, n, lo, hi, alg, forced);
 *     }
 *
 * - GLUCX_TP(event, args...): record @p event when a trace session enables it. Costs one load
 *   and one predictable branch when it does not (the arguments are then not evaluated: keep
 *   them free of side effects). Thread-safe, async-signal-unsafe.
 * - GLUCX_TP_ON(event): non-zero while @p event is enabled. Use it to guard work done only for
 *   the trace; GLUCX_TP inside the guarded block checks again, so an event disabled in between
 *   is simply not recorded.
 *
 * Build: with GLUCX_TRACING=1 (CMake option GLUCX_TRACING, the default when liblttng-ust-dev is
 * found) the call sites are LTTng-UST tracepoints with dynamic provider linkage: libglucx does
 * not link liblttng-ust; at load time LTTng's own constructor looks for the small
 * liblttng-ust-tracepoint.so.1 (tracing stays off without it) and the probe library
 * libglucx-trace-provider.so is loaded only when tracing is requested (LD_PRELOAD by
 * glucx-trace, or GLUCX_TRACE=1, see below). With GLUCX_TRACING=0 every site compiles to
 * nothing (its arguments are still type-checked for existence, never evaluated).
 *
 * Environment (read once, when libglucx is loaded):
 * - GLUCX_TRACE=1: dlopen the provider unless it is already loaded, so a session created by hand
 *   (`lttng enable-event -u 'glucx:*'`) records glucx events without LD_PRELOAD.
 * - GLUCX_TRACE_PROVIDER=PATH: the provider to load instead of the default search (next to
 *   libglucx, the install libdir, the build tree, then the dynamic loader's search path).
 */
#ifndef GLUCX_UTIL_TRACEPOINT_H
#define GLUCX_UTIL_TRACEPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "glucx_tp/ids.h"

#if defined(GLUCX_TRACING) && GLUCX_TRACING

/* The call sites stay private to the object that holds them (libglucx, or a test program). */
#ifndef LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
#define LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
#endif
#include "glucx_tp/provider.h"

#define GLUCX_TP_COMPILED 1
#define GLUCX_TP(event, ...) lttng_ust_tracepoint(glucx, event, __VA_ARGS__)
#define GLUCX_TP_ON(event) lttng_ust_tracepoint_enabled(glucx, event)

#else /* tracing compiled out */

#define GLUCX_TP_COMPILED 0
static inline void glucx_tp_discard_(int unused, ...)
{
    (void)unused;
}
/* `if (0)` keeps the arguments "used" (no unused-variable warnings) and generates no code. */
#define GLUCX_TP(event, ...)                                                                       \
    do {                                                                                           \
        if (0)                                                                                     \
            glucx_tp_discard_(0, __VA_ARGS__);                                                     \
    } while (0)
#define GLUCX_TP_ON(event) 0

#endif

/**
 * The trace id of a communicator: a 64-bit value that every rank of the group computes
 * identically and that differs between communicators (also between two creations with the same
 * name, since UCX worker addresses differ). 0 is never returned (0 means "no communicator").
 *
 * Definition (trace/EVENTS.md, "Communicator id"): FNV-1a 64 over
 *   name bytes (no terminator), 0x00, size as 4 bytes little-endian, then for r = 0..size-1:
 *   len(record[r]) as 4 bytes little-endian, the record bytes;
 * followed by the splitmix64 finaliser; a result of 0 becomes 1.
 *
 * @param name        communicator name as passed to creation (NULL is taken as "").
 * @param size        number of ranks (>= 1).
 * @param records     [size] every rank's rendezvous record, in rank order, exactly the bytes
 *                    every rank received (the record a rank published for itself included).
 * @param record_lens [size] their lengths in bytes.
 * @return the id. Pure; thread-safe. Available whether or not tracing is compiled in.
 */
uint64_t glucx_tp_comm_id(const char *name, int size, const void *const *records,
                          const size_t *record_lens);

/**
 * Trace algorithm id (GLUCX_TP_ALG_*) of an algorithm row name ("ring", ...).
 * @return the id, or GLUCX_TP_ALG_NONE for NULL or a name missing from GLUCX_TP_ALG_MAP.
 * Thread-safe. Meant to be called once per table row, not per collective.
 */
int glucx_tp_alg_id(const char *name);

/**
 * Whether the probe library is loaded in this process (by LD_PRELOAD, GLUCX_TRACE=1 or
 * dlopen). Without it no glucx event is ever recorded. Thread-safe.
 */
int glucx_tp_provider_loaded(void);

#endif
