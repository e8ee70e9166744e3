/**
 * Internal: what a process forked without exec may do with glucx (docs/architecture.md, "Fork").
 *
 * UCX keeps process-wide state that fork() copies only in part: its progress thread (which
 * accepts TCP connections and wakes idle interfaces) is not copied, but the bookkeeping that
 * says it runs is, and the epoll set it waits on is shared with the parent. A process forked
 * while glucx contexts existed ("tainted") therefore cannot use UCX at all: every glucx
 * operation in it fails at once with GLUCX_ERR_UNSUPPORTED (glucx_fork_refuse), and destroying
 * an inherited object releases nothing and sends nothing (glucx_fork_retain). A process forked
 * while none existed may create its own.
 *
 * A pthread_atfork() child handler (registered when libglucx is loaded) records the fork; the
 * state is inherited by further forks, so a grandchild of a tainted process is tainted too.
 */
#ifndef GLUCX_UTIL_FORK_H
#define GLUCX_UTIL_FORK_H

#include <stdatomic.h>

#include <glucx/status.h>

/** Set in the child of a fork that happened while glucx contexts existed; never cleared. */
extern atomic_int glucx_fork_tainted_flag;

/** Whether this process must not use UCX (see above). One relaxed load: cheap on every call. */
static inline int glucx_fork_tainted(void)
{
    return atomic_load_explicit(&glucx_fork_tainted_flag, memory_order_relaxed);
}

/** Whether this process is a fork (without exec) of a process that had libglucx loaded,
 *  tainted or not. */
int glucx_fork_forked(void);

/**
 * Count a glucx context from before its UCX context is created until after it is gone (or its
 * creation failed): a fork while the count is not zero taints the child. Thread-safe.
 */
void glucx_fork_context_enter(void);
void glucx_fork_context_leave(void);

/**
 * Refuse an operation in a tainted process: records "<what>: <why, and what to do instead>"
 * as the thread's last error (glucx_last_error) and returns GLUCX_ERR_UNSUPPORTED. @p fmt
 * names the operation, its sizes and the communicator. Takes no lock the parent may have held.
 */
glucx_status_t glucx_fork_refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * Keep @p object, inherited from the parent by a tainted process, allocated and reachable for
 * the rest of the process instead of destroying it: its UCX handles belong to the parent's
 * UCX state, and its locks may have been held by parent threads that fork did not copy. The
 * memory is the child's copy-on-write view of the parent's and goes when the child exits.
 * NULL is ignored. Thread-safe.
 */
void glucx_fork_retain(void *object);

#endif
