/*
 * Tools' shared launcher for `--ranks N`: fork N local ranks before anything touches UCX, give
 * them a file store in a fresh temporary directory (removed afterwards), and watch them: a rank
 * that fails, a signal to the launcher, or no progress for a while stops them all (SIGTERM, then
 * SIGKILL, by PID). Children die with the launcher (PR_SET_PDEATHSIG). The launcher sleeps in
 * ppoll() until a child exits or reports progress, so it does not disturb benchmarks.
 */
#include "common/local_ranks.h"

#include <glucx/glucx.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_signal = 0;
static void on_signal(int sig)
{
    if (sig != SIGCHLD)
        got_signal = sig;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0)
        fprintf(stderr, "glucx: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reap finished children. @return the first failure's rank, or -1. Prints the reason. */
static int reap(const char *tool, pid_t *pids, int n, int *alive, int *failed_rank)
{
    for (int r = 0; r < n; r++) {
        if (pids[r] <= 0)
            continue;
        int status;
        pid_t p = waitpid(pids[r], &status, WNOHANG);
        if (p != pids[r])
            continue;
        pids[r] = 0;
        (*alive)--;
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && *failed_rank < 0) {
            *failed_rank = r;
            if (WIFEXITED(status))
                fprintf(stderr, "%s: rank %d (pid %d) failed with exit status %d\n", tool, r,
                        (int)p, WEXITSTATUS(status));
            else if (WIFSIGNALED(status))
                fprintf(stderr, "%s: rank %d (pid %d) was killed by signal %d (%s)\n", tool, r,
                        (int)p, WTERMSIG(status), strsignal(WTERMSIG(status)));
        }
    }
    return *failed_rank;
}

/* Reap the ranks that exit within ticks x 10 ms; @return how many are still running. */
static int reap_for(pid_t *pids, int n, int ticks)
{
    int alive = 0;
    for (int r = 0; r < n; r++)
        alive += pids[r] > 0;
    for (int k = 0; k < ticks && alive > 0; k++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        for (int r = 0; r < n; r++) {
            int status;
            if (pids[r] > 0 && waitpid(pids[r], &status, WNOHANG) == pids[r]) {
                pids[r] = 0;
                alive--;
            }
        }
    }
    return alive;
}

/* Stop the remaining ranks: after a rank failed, first grace_ticks x 10 ms for the others to
 * notice (glucx fails their operations with the peer named) and exit by themselves, so their
 * own messages and trace events are complete; then SIGTERM, up to 2 s, then SIGKILL. */
static void kill_children(pid_t *pids, int n, int grace_ticks)
{
    if (reap_for(pids, n, grace_ticks) == 0)
        return;
    for (int r = 0; r < n; r++)
        if (pids[r] > 0) {
            kill(pids[r], SIGTERM);
            kill(pids[r], SIGCONT); /* a stopped rank acts on SIGTERM only once continued */
        }
    reap_for(pids, n, 200);
    for (int r = 0; r < n; r++) {
        if (pids[r] <= 0)
            continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], NULL, 0);
        pids[r] = 0;
    }
}

int glucx_tool_run_local(int n, glucx_tool_rank_fn fn, void *arg, double stall_s, const char *tool)
{
    if (n < 1 || n > GLUCX_TOOL_MAX_LOCAL_RANKS) {
        fprintf(stderr, "%s: --ranks %d out of range 1..%d\n", tool, n, GLUCX_TOOL_MAX_LOCAL_RANKS);
        return 1;
    }
    int rc = 1;
    char dir[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/glucx-store.XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "%s: cannot create a store directory %s: %s\n", tool, dir, strerror(errno));
        return 1;
    }
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    int pfd[2] = {-1, -1};
    if (pids == NULL || pipe2(pfd, O_CLOEXEC) != 0) {
        fprintf(stderr, "%s: cannot set up %d ranks: %s\n", tool, n, strerror(errno));
        free(pids);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 1;
    }
    fcntl(pfd[1], F_SETFL, O_NONBLOCK);

    /* SIGCHLD and termination signals are only delivered inside ppoll() below */
    sigset_t block, old;
    sigemptyset(&block);
    const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_signal}, old_sa[4];
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < 4; k++) {
        sigaddset(&block, sigs[k]);
        sigaction(sigs[k], &sa, &old_sa[k]);
    }
    sigprocmask(SIG_BLOCK, &block, &old);
    fflush(stdout);
    fflush(stderr);

    const pid_t parent = getpid();
    int alive = 0, failed_rank = -1;
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "%s: cannot fork rank %d: %s\n", tool, r, strerror(errno));
            failed_rank = r;
            break;
        }
        if (p == 0) {
            for (int k = 0; k < 4; k++)
                sigaction(sigs[k], &old_sa[k], NULL);
            sigprocmask(SIG_SETMASK, &old, NULL);
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the launcher */
            if (getppid() != parent)
                _exit(1);
            close(pfd[0]);
            int crc = fn(r, n, dir, pfd[1], arg);
            fflush(stdout);
            fflush(stderr);
            exit(crc);
        }
        pids[r] = p;
        alive++;
    }
    close(pfd[1]);

    /* Watch: a failed rank or a signal ends the run; so do stall_s seconds without progress. */
    double last_progress = mono_s();
    struct pollfd pfdw = {.fd = pfd[0], .events = POLLIN};
    sigset_t waitmask = old;
    for (int k = 0; k < 4; k++)
        sigdelset(&waitmask, sigs[k]);
    while (alive > 0 && failed_rank < 0) {
        if (reap(tool, pids, n, &alive, &failed_rank) >= 0 || alive == 0)
            break;
        if (got_signal) {
            fprintf(stderr, "%s: interrupted by signal %d, stopping the ranks\n", tool,
                    (int)got_signal);
            failed_rank = n;
            break;
        }
        double left = last_progress + stall_s - mono_s();
        if (left <= 0) {
            fprintf(stderr, "%s: no rank made progress for %.0f s, stopping them\n", tool, stall_s);
            failed_rank = n;
            break;
        }
        struct timespec ts = {.tv_sec = (time_t)left,
                              .tv_nsec = (long)((left - (double)(time_t)left) * 1e9)};
        int pr = ppoll(&pfdw, 1, &ts, &waitmask);
        if (pr > 0 && (pfdw.revents & POLLIN)) {
            char b[256];
            if (read(pfd[0], b, sizeof(b)) > 0)
                last_progress = mono_s();
        } else if (pr > 0 && (pfdw.revents & (POLLHUP | POLLERR))) {
            pfdw.fd = -1; /* every rank closed its end: they are exiting; SIGCHLD follows */
        }
    }
    if (failed_rank >= 0)
        kill_children(pids, n, failed_rank < n ? 200 : 0); /* 2 s grace after a rank failed */
    else
        rc = 0;
    close(pfd[0]);
    sigprocmask(SIG_SETMASK, &old, NULL);
    for (int k = 0; k < 4; k++)
        sigaction(sigs[k], &old_sa[k], NULL);
    free(pids);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}

static int parse_count(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int glucx_tool_launcher_rank_size(const char *tool, int *rank_p, int *size_p)
{
    static const char *const vars[][2] = {
        {"RANK", "WORLD_SIZE"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_SIZE"},
    };
    for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
        const char *rs = getenv(vars[k][0]);
        if (rs == NULL)
            continue;
        const char *ss = getenv(vars[k][1]);
        long r, s;
        if (ss == NULL) {
            fprintf(stderr, "%s: %s is set but %s is not\n", tool, vars[k][0], vars[k][1]);
            return 2;
        }
        if (parse_count(ss, 1, GLUCX_COMM_SIZE_MAX, &s) != 0 ||
            parse_count(rs, 0, s - 1, &r) != 0) {
            fprintf(stderr, "%s: invalid %s=%s / %s=%s\n", tool, vars[k][0], rs, vars[k][1], ss);
            return 2;
        }
        *rank_p = (int)r;
        *size_p = (int)s;
        return 0;
    }
    return 1;
}
