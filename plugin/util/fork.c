/* Fork detection: which processes may use UCX (util/fork.h, docs/architecture.md "Fork"). */
#include "util/fork.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glucx/glucx.h>

#include "util/error.h"

atomic_int glucx_fork_tainted_flag;

/* Contexts alive or being created/destroyed in this process (a tainted process never creates
 * one and never counts an inherited one down, so its count stays what it inherited). */
static atomic_int live_contexts;
static atomic_int forked;
/* Recorded by the child handler (single-threaded then), read afterwards. */
static int fork_parent_pid;
static int fork_contexts;
static int atfork_err;

/* Inherited objects kept on purpose (glucx_fork_retain), reachable from here. */
typedef struct retained {
    void *object;
    struct retained *next;
} retained_t;
static _Atomic(retained_t *) retained_head;

static void fork_child(void)
{
    int n = atomic_load(&live_contexts);
    if (n > 0 || atomic_load(&glucx_fork_tainted_flag)) {
        /* a tainted ancestor's count is inherited unchanged, so n > 0 then too */
        fork_contexts = n;
        atomic_store(&glucx_fork_tainted_flag, 1);
    }
    fork_parent_pid = (int)getppid();
    atomic_store(&forked, 1);
}

/* At load, so that a fork before the first context is seen too (forked children then force
 * the fork-safe UCX settings, ucx.c). */
__attribute__((constructor)) static void fork_register(void)
{
    atfork_err = pthread_atfork(NULL, NULL, fork_child);
}

int glucx_fork_forked(void)
{
    return atomic_load(&forked);
}

void glucx_fork_context_enter(void)
{
    if (atfork_err != 0) {
        static atomic_int warned;
        if (atomic_exchange(&warned, 1) == 0)
            glucx_warn("pthread_atfork failed (%s): a process forked from this one cannot tell "
                       "that it must not use glucx, and may hang in UCX if it does",
                       strerror(atfork_err));
    }
    atomic_fetch_add(&live_contexts, 1);
}

void glucx_fork_context_leave(void)
{
    atomic_fetch_sub(&live_contexts, 1);
}

glucx_status_t glucx_fork_refuse(const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return glucx_error(
        GLUCX_ERR_UNSUPPORTED,
        "%s: process %d was forked (without exec) by process %d while that process had %d "
        "glucx context(s); UCX state does not survive fork, so this process can use neither "
        "the glucx objects it inherited nor new ones: start processes that use glucx with "
        "exec (Python multiprocessing's 'spawn' or 'forkserver' start method, e.g. "
        "DataLoader(multiprocessing_context='forkserver')), or fork before creating any glucx "
        "context",
        what, (int)getpid(), fork_parent_pid, fork_contexts);
}

void glucx_fork_retain(void *object)
{
    if (object == NULL)
        return;
    retained_t *node = malloc(sizeof(*node));
    if (node == NULL)
        return; /* still never freed; only a leak checker may notice */
    node->object = object;
    node->next = atomic_load(&retained_head);
    while (!atomic_compare_exchange_weak(&retained_head, &node->next, node))
        ;
}

glucx_status_t glucx_fork_check(void)
{
    if (glucx_fork_tainted())
        return glucx_fork_refuse("fork_check");
    return GLUCX_OK;
}
