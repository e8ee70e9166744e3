#include "common/local_ranks.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void kill_all(const pid_t *pids, int n)
{
    for (int r = 0; r < n; r++)
        if (pids[r] > 0)
            kill(pids[r], SIGKILL);
}

int glucx_tool_run_local(int n, glucx_tool_rank_fn fn, void *arg, int timeout_s)
{
    if (n < 1 || n > 256) {
        fprintf(stderr, "glucx: --ranks %d out of range 1..256\n", n);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/glucx-store-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "glucx: cannot create a store directory %s: %s\n", dir, strerror(errno));
        return 1;
    }
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    if (pids == NULL)
        return 1;
    fflush(stdout);
    fflush(stderr);
    int failed = 0;
    for (int r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "glucx: cannot fork rank %d: %s\n", r, strerror(errno));
            failed = 1;
            break;
        }
        if (pid == 0) {
            int rc = fn(r, n, dir, arg);
            fflush(stdout);
            fflush(stderr);
            _exit(rc & 0xff);
        }
        pids[r] = pid;
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int running = 0;
    for (int r = 0; r < n; r++)
        running += pids[r] > 0;
    if (failed)
        kill_all(pids, n);
    while (running > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            int r = 0;
            while (r < n && pids[r] != pid)
                r++;
            if (r == n)
                continue;
            pids[r] = 0;
            running--;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                continue;
            if (WIFSIGNALED(status) && failed)
                continue; /* killed by us after an earlier failure */
            if (WIFEXITED(status))
                fprintf(stderr, "glucx: rank %d exited with status %d\n", r, WEXITSTATUS(status));
            else
                fprintf(stderr, "glucx: rank %d died of signal %d\n", r, WTERMSIG(status));
            if (!failed)
                kill_all(pids, n);
            failed = 1;
            continue;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= timeout_s && !failed) {
            fprintf(stderr, "glucx: ranks still running after %d s, killing them\n", timeout_s);
            kill_all(pids, n);
            failed = 1;
        }
        usleep(2000);
    }
    free(pids);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed;
}
