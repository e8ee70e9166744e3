#include "support/procs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/timescale.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_us(long us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

int glucx_test_procs_run(int n, int (*fn)(int rank, int size, void *arg), void *arg, int timeout_s)
{
    return glucx_test_procs_run_ex(n, fn, arg, timeout_s, 0);
}

int glucx_test_procs_run_ex(int n, int (*fn)(int rank, int size, void *arg), void *arg,
                            int timeout_s, unsigned long long may_be_killed)
{
    if (n < 1 || fn == NULL) {
        fprintf(stderr, "procs: invalid arguments (n=%d)\n", n);
        return -1;
    }
    pid_t *pids = calloc((size_t)n, sizeof(*pids));
    int *state = calloc((size_t)n, sizeof(*state)); /* 0 running, 1 exited, 2 killed */
    int *status = calloc((size_t)n, sizeof(*status));
    if (pids == NULL || state == NULL || status == NULL) {
        free(pids);
        free(state);
        free(status);
        fprintf(stderr, "procs: out of memory\n");
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    int started = 0;
    for (int r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* the parent's bookkeeping is not the child's: free it so leak checks stay exact */
            free(pids);
            free(state);
            free(status);
            int rc = fn(r, n, arg);
            fflush(stdout);
            fflush(stderr);
            exit(rc == 0 ? 0 : (rc & 0xff) != 0 ? rc & 0xff : 1);
        }
        if (pid < 0) {
            fprintf(stderr, "procs: fork of rank %d failed: %s\n", r, strerror(errno));
            break;
        }
        pids[r] = pid;
        started++;
    }
    int failures = started < n ? 1 : 0;
    long long timeout_ms = glucx_test_ms((int64_t)timeout_s * 1000);
    long long deadline = now_ms() + timeout_ms;
    int running = started;
    while (running > 0) {
        for (int r = 0; r < started; r++) {
            if (state[r] != 0)
                continue;
            pid_t w = waitpid(pids[r], &status[r], WNOHANG);
            if (w == pids[r] || (w < 0 && errno == ECHILD)) {
                state[r] = 1;
                running--;
            }
        }
        if (running == 0)
            break;
        if (now_ms() >= deadline) {
            for (int r = 0; r < started; r++) {
                if (state[r] != 0)
                    continue;
                kill(pids[r], SIGKILL);
                waitpid(pids[r], &status[r], 0);
                state[r] = 2;
                running--;
            }
            break;
        }
        nap_us(2000);
    }
    for (int r = 0; r < started; r++) {
        if (state[r] == 2) {
            fprintf(stderr, "procs: rank %d (pid %d) timed out after %.1f s and was killed\n", r,
                    (int)pids[r], (double)timeout_ms / 1000);
            failures++;
        } else if (WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL && r < 64 &&
                   (may_be_killed >> r) & 1) {
            /* killed on purpose */
        } else if (WIFSIGNALED(status[r])) {
            fprintf(stderr, "procs: rank %d (pid %d) crashed with signal %d (%s)\n", r,
                    (int)pids[r], WTERMSIG(status[r]), strsignal(WTERMSIG(status[r])));
            failures++;
        } else if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) != 0) {
            fprintf(stderr, "procs: rank %d (pid %d) failed with exit code %d\n", r, (int)pids[r],
                    WEXITSTATUS(status[r]));
            failures++;
        }
    }
    free(pids);
    free(state);
    free(status);
    return failures;
}

void *glucx_test_shared_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p; /* anonymous mappings are zero-filled */
}

int glucx_test_barrier_wait(glucx_test_barrier_t *b, int n, int timeout_ms, void (*poll_fn)(void *),
                            void *poll_arg)
{
    int gen = atomic_load(&b->generation);
    if (atomic_fetch_add(&b->arrived, 1) + 1 == n) {
        atomic_store(&b->arrived, 0);
        atomic_fetch_add(&b->generation, 1);
        return 0;
    }
    long long deadline = now_ms() + glucx_test_ms(timeout_ms);
    for (long spins = 0; atomic_load(&b->generation) == gen; spins++) {
        if (poll_fn != NULL)
            poll_fn(poll_arg);
        if (spins > 100)
            nap_us(poll_fn != NULL ? 50 : 500);
        if ((spins & 63) == 0 && now_ms() >= deadline)
            return -1;
    }
    return 0;
}

glucx_test_exchange_t *glucx_test_exchange_alloc(int max_ranks)
{
    size_t bytes = sizeof(glucx_test_exchange_t) + sizeof(size_t) * (size_t)max_ranks +
                   (size_t)max_ranks * GLUCX_TEST_ADDR_MAX;
    unsigned char *mem = glucx_test_shared_alloc(bytes);
    if (mem == NULL)
        return NULL;
    glucx_test_exchange_t *x = (glucx_test_exchange_t *)mem;
    x->max_ranks = max_ranks;
    x->lens = (size_t *)(mem + sizeof(*x));
    x->slots = mem + sizeof(*x) + sizeof(size_t) * (size_t)max_ranks;
    return x;
}

int glucx_test_exchange(glucx_test_exchange_t *x, int rank, int n, const void *addr, size_t len,
                        const void **addrs, size_t *lens, int timeout_ms)
{
    if (n > x->max_ranks || rank < 0 || rank >= n || len > GLUCX_TEST_ADDR_MAX)
        return -1;
    if (glucx_test_barrier_wait(&x->barrier, n, timeout_ms, NULL, NULL) != 0)
        return -1;
    memcpy(x->slots + (size_t)rank * GLUCX_TEST_ADDR_MAX, addr, len);
    x->lens[rank] = len;
    if (glucx_test_barrier_wait(&x->barrier, n, timeout_ms, NULL, NULL) != 0)
        return -1;
    for (int r = 0; r < n; r++) {
        addrs[r] = x->slots + (size_t)r * GLUCX_TEST_ADDR_MAX;
        lens[r] = x->lens[r];
    }
    return 0;
}
