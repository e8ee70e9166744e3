/* The probe library libglucx-trace-provider.so: the `glucx` LTTng-UST tracepoint provider
 * (events in include/glucx_tp/provider.h, documented in EVENTS.md). It links liblttng-ust and is
 * loaded only when tracing is requested: LD_PRELOAD (glucx-trace record) or dlopen
 * (GLUCX_TRACE=1, see plugin/util/tracepoint.h). Never dlclose it while tracing.
 *
 * Fork safety. Loading liblttng-ust starts its listener threads ("<name>-ust"), which take
 * LTTng-UST's internal mutexes (its command lock, RCU registry, fd tracker) at any time. A
 * process that forks without exec at such a moment hands the child a locked mutex and no thread
 * to unlock it: the child blocks forever the next time LTTng-UST takes it, at the latest when it
 * exits, in this library's destructor (probe unregistration). LTTng's fork helper
 * liblttng-ust-fork.so, which glucx-trace record preloads, prevents this by wrapping fork() with
 * lttng_ust_before_fork() (takes those locks, blocks signals), lttng_ust_after_fork_parent()
 * (releases them) and lttng_ust_after_fork_child() (releases them and restarts LTTng-UST in the
 * child). With GLUCX_TRACE=1 nothing preloads the helper, yet glucx-bench ranks, PyTorch
 * DataLoader workers and fork-started ranks fork; so the constructor below registers the same
 * three calls with pthread_atfork(), unless the helper is already in the process: its fork() makes
 * these calls itself, and a second lttng_ust_before_fork() in the same fork would deadlock the
 * forking thread on LTTng-UST's non-recursive fork mutex.
 *
 * - Order. liblttng-ust is a dependency of this library, so its constructor (which initialises
 *   the state the handlers lock and starts the listener threads) has run before ours registers
 *   them. The helper runs before every fork handler; ours runs before the prepare handlers
 *   registered earlier (they run last-registered first) and after those registered later, and
 *   the reverse after the fork; the prepare handler may wait for a listener thread to leave an
 *   LTTng-UST lock (listener threads never fork). lttng_ust_after_fork_child() re-runs
 *   LTTng-UST's constructor inside the child handler (new listener threads; registration with a
 *   session daemon if one runs, bounded by LTTNG_UST_REGISTER_TIMEOUT, as with the helper). That
 *   constructor forks once more if its wait shared memory (/dev/shm/lttng-ust-wait-*) has
 *   vanished since the parent created it; LTTng-UST skips its fork handling for that fork, and
 *   glibc 2.36 and later allow a fork inside a fork handler (they release their handler-list
 *   lock while a handler runs; with an older glibc that rare child could hang).
 * - Detection happens once, in the constructor: glucx-trace preloads the helper, so it is mapped
 *   before any constructor runs. A helper dlopened later does not interpose fork(), so the
 *   handlers stay right.
 * - vfork() and posix_spawn() run no fork handlers; their child shares the parent's memory until
 *   it execs and takes no LTTng-UST lock, so it needs none. A raw clone() without CLONE_VM runs
 *   none either and is guarded only by the helper (glucx-trace record). The helper's resetting of
 *   cached credentials and namespace contexts after setuid()/setns()/unshare() is not replicated.
 *
 * Process list. LTTng-UST records every traced process of the user in every session, so a trace
 * made while another job records holds that job's events too. glucx-trace record sets
 * GLUCX_TRACE_PIDS to the absolute path of DIR/glucx-pids (created empty) for its command; every
 * process that loads this library appends "<pid>\n" to that file, in the constructor below and in
 * a pthread_atfork() child handler registered always (whether or not the fork helper is loaded),
 * so ranks and workers started by fork() without exec are listed as well; processes that exec
 * inherit the variable and the preloaded provider and list themselves. glucx-analyze leaves out
 * the events of the processes a trace's file does not list. Each line is one write() on a
 * descriptor opened with O_APPEND (never O_CREAT: a missing file is not recreated), so
 * concurrent writers never interleave. The child handler only calls async-signal-safe functions
 * (open, write, close, getpid) on a path copied in the constructor. Failures never affect the
 * process: the constructor prints one warning, the child handler stays silent. A process that
 * clears its environment before exec, or a pid reused by another job while both recorded, is the
 * file's limit (EVENTS.md, "Process list").
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "glucx_tp/provider.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lttng/ust-fork.h>

/* Marker looked up with dlsym() by libglucx (glucx_tp_provider_loaded()) so it never loads the
 * probes twice. Its value is the version of the event set: bump it with any change of
 * EVENTS.md. */
__attribute__((visibility("default"))) const int glucx_tp_provider_abi = 2;

/* How fork() is guarded (see "Fork safety" above), set by the constructor: 1 = this library's
 * pthread_atfork() handlers, 0 = LTTng's fork helper is in the process (left to it), -1 =
 * pthread_atfork() failed (forked children may deadlock; a warning was printed). Read by the
 * tests (tests/trace/emit.c, forklock); not part of any public interface. */
__attribute__((visibility("default"))) int glucx_tp_provider_fork_guard = -1;

#define LTTNG_FORK_HELPER_SONAME "liblttng-ust-fork.so.1"

/* The forking thread's signal mask, saved by lttng_ust_before_fork() in the prepare handler and
 * restored in the parent or child handler (the same thread continues in both). */
static _Thread_local sigset_t fork_saved_sigmask;

static void fork_prepare(void)
{
    lttng_ust_before_fork(&fork_saved_sigmask);
}

static void fork_parent(void)
{
    lttng_ust_after_fork_parent(&fork_saved_sigmask);
}

static void fork_child(void)
{
    lttng_ust_after_fork_child(&fork_saved_sigmask);
}

/* ---- process list (GLUCX_TRACE_PIDS, see "Process list" above) ---------------------------- */

#define PIDS_ENV "GLUCX_TRACE_PIDS"

/* The file's path, copied by the constructor ("" = no list): the child handler must not call
 * getenv() (not async-signal-safe; the environment may be mid-update in another thread). */
static char pids_path[4096];

/* Append "<pid>\n" to pids_path with one write(). Async-signal-safe. Returns 0, or an errno
 * value (the caller decides whether to say anything). */
static int pids_append(void)
{
    if (pids_path[0] == '\0')
        return 0;
    char line[24];
    char digits[20];
    int nd = 0;
    long pid = (long)getpid();
    do {
        digits[nd++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid > 0 && nd < (int)sizeof(digits));
    int n = 0;
    while (nd > 0)
        line[n++] = digits[--nd];
    line[n++] = '\n';
    const int saved_errno = errno;
    int rc = 0;
    int fd;
    do {
        fd = open(pids_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        rc = errno;
    } else {
        ssize_t w;
        do {
            w = write(fd, line, (size_t)n);
        } while (w < 0 && errno == EINTR);
        if (w != (ssize_t)n)
            rc = w < 0 ? errno : EIO;
        close(fd);
    }
    errno = saved_errno;
    return rc;
}

static void pids_fork_child(void)
{
    (void)pids_append(); /* silently skipped on failure: the child must not be disturbed */
}

/* Independent of the fork guard below: the two may run in either order. */
__attribute__((constructor)) static void glucx_tp_provider_list_pid(void)
{
    const char *path = getenv(PIDS_ENV);
    if (path == NULL || path[0] == '\0')
        return;
    size_t len = strlen(path);
    if (len >= sizeof(pids_path)) {
        fprintf(stderr,
                "glucx trace provider: warning: %s is %zu bytes long (at most %zu): process %ld "
                "is not listed, glucx-analyze will leave its events out\n",
                PIDS_ENV, len, sizeof(pids_path) - 1, (long)getpid());
        return;
    }
    memcpy(pids_path, path, len + 1);
    /* registered whatever guards fork(): a forked child lists itself */
    int err = pthread_atfork(NULL, NULL, pids_fork_child);
    if (err != 0) /* one warning at most per process */
        fprintf(stderr,
                "glucx trace provider: warning: cannot register a fork handler with "
                "pthread_atfork: %s; processes forked by process %ld are not listed in %s, "
                "glucx-analyze will leave their events out\n",
                strerror(err), (long)getpid(), pids_path);
    const int append_err = pids_append();
    if (append_err != 0 && err == 0)
        fprintf(stderr,
                "glucx trace provider: warning: cannot append process %ld to %s (%s=%s): %s; "
                "glucx-analyze will leave its events out\n",
                (long)getpid(), pids_path, PIDS_ENV, pids_path, strerror(append_err));
}

/* ---- fork guard --------------------------------------------------------------------------- */

__attribute__((constructor)) static void glucx_tp_provider_guard_fork(void)
{
    void *helper = dlopen(LTTNG_FORK_HELPER_SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (helper != NULL) {
        dlclose(helper); /* only drops the reference RTLD_NOLOAD took */
        glucx_tp_provider_fork_guard = 0;
        return;
    }
    const int err = pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (err != 0) {
        fprintf(stderr,
                "glucx trace provider: cannot register fork handlers with pthread_atfork: %s; a "
                "process that forks while LTTng-UST holds a lock may hang in the child (preload "
                "%s, as glucx-trace record does, to avoid this)\n",
                strerror(err), LTTNG_FORK_HELPER_SONAME);
        return;
    }
    glucx_tp_provider_fork_guard = 1;
}
