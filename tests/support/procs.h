/*
 * Multi-process test runner: fork n ranks, run a function in each, collect their exit codes with
 * a wall-clock bound. Also shared memory and a barrier for exchanging addresses between ranks.
 */
#ifndef GLUCX_TEST_PROCS_H
#define GLUCX_TEST_PROCS_H

#include <stdatomic.h>
#include <stddef.h>

/**
 * Fork n processes; child r runs fn(r, n, arg) and exits with its return value (0 = success;
 * other values are reported, clamped to 1..255). The parent waits up to timeout_s seconds in
 * total, then SIGKILLs (by PID) the children still running. Returns 0 if every child exited 0;
 * otherwise prints which rank failed, timed out or crashed to stderr and returns non-zero.
 * Children leave through exit() so AddressSanitizer's leak check runs in each of them.
 * Call before any UCX initialisation in the parent (the children inherit the parent's memory).
 * timeout_s is a base value: the wait is glucx_test_ms(timeout_s * 1000) (support/timescale.h).
 */
int glucx_test_procs_run(int n, int (*fn)(int rank, int size, void *arg), void *arg, int timeout_s);

/**
 * As glucx_test_procs_run, but a rank r with bit r set in may_be_killed (r < 64) may also end by
 * SIGKILL without counting as a failure (failure tests kill a rank on purpose).
 */
int glucx_test_procs_run_ex(int n, int (*fn)(int rank, int size, void *arg), void *arg,
                            int timeout_s, unsigned long long may_be_killed);

/**
 * Shared memory visible to all children (MAP_SHARED|MAP_ANONYMOUS, created before fork), zeroed.
 * Never freed (the test process is short-lived). Returns NULL on failure.
 */
void *glucx_test_shared_alloc(size_t bytes);

/** A reusable barrier for n processes in shared memory (zero-initialised = ready). */
typedef struct glucx_test_barrier {
    atomic_int arrived;
    atomic_int generation;
} glucx_test_barrier_t;

/**
 * Wait until all n processes arrived. Spins briefly, then sleeps in short naps; calls
 * poll_fn(poll_arg) (when not NULL) while waiting, e.g. to keep a transport progressing.
 * @return 0, or -1 after glucx_test_ms(timeout_ms) (the barrier is then unusable).
 */
int glucx_test_barrier_wait(glucx_test_barrier_t *b, int n, int timeout_ms, void (*poll_fn)(void *),
                            void *poll_arg);

/** Bytes of one address slot in glucx_test_exchange_t. */
#define GLUCX_TEST_ADDR_MAX 4096

/**
 * Address exchange for up to max_ranks ranks: each rank publishes its bytes, then reads all.
 * Allocate with glucx_test_exchange_alloc before forking.
 */
typedef struct glucx_test_exchange {
    glucx_test_barrier_t barrier;
    int max_ranks;
    size_t *lens;
    unsigned char *slots; /* max_ranks * GLUCX_TEST_ADDR_MAX */
} glucx_test_exchange_t;

glucx_test_exchange_t *glucx_test_exchange_alloc(int max_ranks);

/**
 * Publish addr (len <= GLUCX_TEST_ADDR_MAX) for rank and, once every one of the n ranks has,
 * fill addrs[r]/lens[r] with pointers into shared memory (valid until the next exchange on x).
 * Reusable: each call starts with a barrier so nobody overwrites a slot still being read.
 * @return 0, or -1 on timeout (glucx_test_ms(timeout_ms) per barrier) or bad arguments.
 */
int glucx_test_exchange(glucx_test_exchange_t *x, int rank, int n, const void *addr, size_t len,
                        const void **addrs, size_t *lens, int timeout_ms);

#endif
