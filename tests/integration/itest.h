/*
 * Multi-process integration tests of libglucx over real UCX: the shared harness.
 *
 * One executable per ctest entry ("integration/<case>/n<ranks>/<variant>"), all built from the
 * same sources: main.c parses "<case> <ranks> <variant>", forks the ranks with
 * glucx_test_procs_run() (tests/support/procs.h) and each rank runs the case's function.
 * Variants: "shm" leaves UCX's transport choice alone (shared memory between processes of one
 * host), "tcp" sets UCX_TLS=tcp and UCX_NET_DEVICES=lo in every rank before its context exists.
 * Rendezvous goes through a file store in a fresh temporary directory made before the fork.
 *
 * Only the public API (glucx/glucx.h) is used. Every expected value is computed here from a
 * formula of (rank, index); nothing the library produced is used as a reference.
 */
#ifndef GLUCX_ITEST_H
#define GLUCX_ITEST_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <glucx/glucx.h>

#include "support/util.h" /* glucx_test_ms(): every deadline for another rank is scaled */

/** What the parent prepares before forking; each rank gets a copy (the shared area is shared). */
typedef struct itest_env {
    const char *case_name;
    const char *variant; /**< "shm" or "tcp" */
    int nranks;
    char store_dir[256]; /**< fresh temporary directory of the file store */
    struct itest_shared *shared;
} itest_env_t;

#define ITEST_MAX_RANKS 8
#define ITEST_SLOTS 256

/** Memory shared by the parent and every rank (MAP_SHARED, made before the fork). */
typedef struct itest_shared {
    /* per-rank outcome of cases whose verdict the parent gives (killed, ...) */
    int status[ITEST_MAX_RANKS]; /**< a glucx_status_t, or 1 = not reported */
    int64_t elapsed_ms[ITEST_MAX_RANKS];
    int done[ITEST_MAX_RANKS];       /**< rank finished its part */
    char text[ITEST_MAX_RANKS][512]; /**< last error text or note */
    int64_t t_ns;                    /**< a time stamp one rank publishes (e.g. its death) */
    int flag;                        /**< a one-shot signal between ranks */
    /* scratch slots for cross-rank checks (bitwise-equal hashes, barrier entry counters) */
    uint64_t hash[ITEST_SLOTS][ITEST_MAX_RANKS];
    int counter[ITEST_SLOTS];
} itest_shared_t;

/** A case: runs in every rank; returns 0 when this rank saw no failure. */
typedef int (*itest_rank_fn_t)(const itest_env_t *env, int rank, int size);

/* ---- reporting (in the rank processes) ---- */

/** Set the rank that prefixes every message of this process (-1: the parent). */
void itest_set_rank(int rank);
/** This process's failure count so far. */
int itest_failures(void);
/** Print "[<case> rank R] file:line: message" to stderr and count a failure. */
void itest_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Print "[<case> rank R] message" to stderr (no failure). */
void itest_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ITEST_FAIL(...) itest_fail_at(__FILE__, __LINE__, __VA_ARGS__)
/** Report a failure unless @p cond holds; @p fmt (a string literal) says what was seen. */
#define ITEST_CHECK(cond, fmt, ...)                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            itest_fail_at(__FILE__, __LINE__, "'%s' does not hold: " fmt, #cond, ##__VA_ARGS__);   \
    } while (0)
/** Check that @p expr returns @p want; on a difference print both and glucx_last_error(). */
#define ITEST_STATUS(expr, want, what, ...)                                                        \
    itest_status_at(__FILE__, __LINE__, (expr), (want), what, ##__VA_ARGS__)
int itest_status_at(const char *file, int line, glucx_status_t got, glucx_status_t want,
                    const char *what, ...) __attribute__((format(printf, 5, 6)));

/* ---- setting up a rank ---- */

/** Apply the variant's UCX environment (call before glucx_context_create). */
void itest_apply_variant(const itest_env_t *env);

/**
 * Context + file store + communicator for this rank. @p name is the communicator name (unique
 * per creation within a case), @p timeout_ms the communicator timeout (<= 0: default).
 * @return GLUCX_OK, or the failing status (already reported). Outputs are NULL on failure.
 */
glucx_status_t itest_open(const itest_env_t *env, int rank, int size, const char *name,
                          int64_t timeout_ms, glucx_context_t **ctx_p, glucx_store_t **store_p,
                          glucx_comm_t **comm_p);
/**
 * itest_open() for a case in which a rank dies: sets GLUCX_KEEPALIVE_MS=500 first (UCX's
 * keepalive finds the dead peer of an endpoint with error handling while someone progresses);
 * on failure it marks this rank done with a failure (done[rank] = 2, for the verdict).
 */
glucx_status_t itest_open_killed(const itest_env_t *env, int rank, int size, const char *name,
                                 int64_t timeout_ms, glucx_context_t **ctx_p,
                                 glucx_store_t **store_p, glucx_comm_t **comm_p);
/** A further communicator on an existing context and store. */
glucx_status_t itest_comm(glucx_context_t *ctx, glucx_store_t *store, int rank, int size,
                          const char *name, int64_t timeout_ms, glucx_comm_t **comm_p);
void itest_close(glucx_context_t *ctx, glucx_store_t *store, glucx_comm_t *comm);

/** Check that every peer is reached over the variant's transport ("tcp" in its description for
 *  the tcp variant; not tcp for the shared-memory variant). */
void itest_check_transport(const itest_env_t *env, glucx_comm_t *comm);

/* ---- elements ---- */

/** Store @p v (exactly representable in @p dt) as element @p i of @p buf. */
void itest_put(glucx_dtype_t dt, void *buf, size_t i, double v);
/** Element @p i of @p buf as a double. */
double itest_get(glucx_dtype_t dt, const void *buf, size_t i);
/** IEEE binary16 <-> float (round to nearest even on the way down). */
uint16_t itest_f32_to_f16(float f);
float itest_f16_to_f32(uint16_t h);

/** A deterministic, data-movement test value for element @p j of rank @p r's block @p b,
 *  exactly representable in @p dt. */
double itest_value(glucx_dtype_t dt, int r, int b, size_t j);

/** 64-bit FNV-1a of @p bytes bytes. */
uint64_t itest_hash(const void *buf, size_t bytes);

/* ---- buffers with guards ---- */

#define ITEST_GUARD 64
#define ITEST_GUARD_BYTE 0xa5
#define ITEST_FILL_BYTE 0xcd

/** Allocate @p bytes filled with ITEST_FILL_BYTE followed by ITEST_GUARD guard bytes. */
void *itest_alloc(size_t bytes);
/** Check the guard after @p bytes; report @p what on damage. @return 0 if intact. */
int itest_guard_ok(const void *buf, size_t bytes, const char *what);

/**
 * Compare @p count elements of @p got against @p want (both of @p dt) by value; report up to a
 * few differences as "<what>: rank R, index I: expected X, got Y". @return 0 if equal.
 */
int itest_compare(const char *what, glucx_dtype_t dt, const void *got, const void *want,
                  size_t count);

/* ---- time and process state ---- */

int64_t itest_now_ns(void);
int64_t itest_cpu_ns(void);
/** Sleep @p ms milliseconds. */
void itest_sleep_ms(int64_t ms);
/** Number of open file descriptors of this process. */
int itest_open_fds(void);
/** VmRSS of this process in KiB (-1 if unknown). */
long itest_rss_kib(void);
/** Whether this build runs under AddressSanitizer. */
int itest_asan(void);
/** Whether @p text contains "rank <digit>" or "peer <digit>". */
int itest_names_rank(const char *text);

/**
 * The algorithm names of @p coll's table as the test knows them (NULL-terminated), kept in sync
 * with plugin/coll/<kind>/<kind>.c by hand; case "coll" fails when they drift apart.
 */
const char *const *itest_algs(glucx_coll_t coll);

/* ---- completion callbacks (glucx_coll_start_cb) ---- */

/** What one collective's completion callback saw. Zero it before use. */
typedef struct itest_slot {
    atomic_int calls;
    atomic_int order; /**< position among the completions since itest_slots_reset() (1-based) */
    glucx_status_t status;
    char text[512];
    pthread_t thread; /**< the thread the callback ran on */
} itest_slot_t;

/** Options scheduling a collective by @p priority (GLUCX_COLL_OPT_PRIORITY), with chunks of
 *  @p chunk_bytes (GLUCX_COLL_OPT_CHUNK) unless it is 0. */
glucx_coll_opts_t itest_prio_opts(int priority, size_t chunk_bytes);

/** Restart the completion positions at 1. */
void itest_slots_reset(void);
/** A glucx_coll_callback_t: @p arg is an itest_slot_t. */
void itest_slot_done(void *arg, glucx_status_t status, const char *error);
/** Wait (at most @p wait_ms) until each of s[0..n) was called. @return 0 when all were. */
int itest_wait_slots(itest_slot_t *s, int n, int64_t wait_ms, const char *what);

/**
 * On a new communicator @p name: rank 0 starts two 4096-element allreduces with callbacks
 * (options opts[k], may be NULL) that the others never join and destroys the communicator;
 * both callbacks must have run, with errors and a text, when the destroy returns. The others
 * destroy theirs once rank 0 is done (bounded wait).
 */
void itest_destroy_outstanding(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store,
                               int rank, int size, const char *name,
                               const glucx_coll_opts_t *const opts[2]);

/* ---- the cases ---- */

int itest_case_coll(const itest_env_t *env, int rank, int size);
int itest_case_callback(const itest_env_t *env, int rank, int size);
int itest_case_destroy_after(const itest_env_t *env, int rank, int size);
int itest_case_early_destroy(const itest_env_t *env, int rank, int size);
int itest_case_kind_mismatch(const itest_env_t *env, int rank, int size);
int itest_case_p2p(const itest_env_t *env, int rank, int size);
int itest_case_sync_send(const itest_env_t *env, int rank, int size);
int itest_case_mismatch(const itest_env_t *env, int rank, int size);
int itest_case_killed(const itest_env_t *env, int rank, int size);
int itest_case_exited(const itest_env_t *env, int rank, int size);
int itest_case_killed_inflight(const itest_env_t *env, int rank, int size);
int itest_case_timeout(const itest_env_t *env, int rank, int size);
int itest_case_invalid(const itest_env_t *env, int rank, int size);
int itest_case_waitcpu(const itest_env_t *env, int rank, int size);
int itest_case_leaks(const itest_env_t *env, int rank, int size);
int itest_case_create(const itest_env_t *env, int rank, int size);
int itest_case_twostep(const itest_env_t *env, int rank, int size);
int itest_case_twostep_waitany(const itest_env_t *env, int rank, int size);
int itest_case_twostep_wake(const itest_env_t *env, int rank, int size);
int itest_case_twostep_stats(const itest_env_t *env, int rank, int size);
int itest_case_window(const itest_env_t *env, int rank, int size);
int itest_case_window_threads(const itest_env_t *env, int rank, int size);
int itest_case_window_sync(const itest_env_t *env, int rank, int size);
int itest_case_window_truncated(const itest_env_t *env, int rank, int size);
int itest_case_window_timeout(const itest_env_t *env, int rank, int size);
int itest_case_window_left(const itest_env_t *env, int rank, int size);
int itest_case_window_hold(const itest_env_t *env, int rank, int size);
int itest_case_window_killed(const itest_env_t *env, int rank, int size);
int itest_case_window_destroy(const itest_env_t *env, int rank, int size);
int itest_case_twostep_compact(const itest_env_t *env, int rank, int size);
int itest_case_fork_inherited(const itest_env_t *env, int rank, int size);
int itest_case_fork_new(const itest_env_t *env, int rank, int size);
int itest_case_topology(const itest_env_t *env, int rank, int size);
int itest_case_topology_rooted(const itest_env_t *env, int rank, int size);
int itest_case_priority(const itest_env_t *env, int rank, int size);
int itest_case_priority_kinds(const itest_env_t *env, int rank, int size);
int itest_case_priority_overlap(const itest_env_t *env, int rank, int size);
int itest_case_priority_chunk_mismatch(const itest_env_t *env, int rank, int size);
int itest_case_priority_head_mismatch(const itest_env_t *env, int rank, int size);
int itest_case_priority_wrap(const itest_env_t *env, int rank, int size);
int itest_case_priority_bitwise(const itest_env_t *env, int rank, int size);
int itest_case_priority_killed(const itest_env_t *env, int rank, int size);

/** Parent-side verdicts for cases whose ranks cannot all exit cleanly; 0 when passed. */
int itest_verdict_killed(const itest_env_t *env, int run_result);
int itest_verdict_priority_killed(const itest_env_t *env, int run_result);

#endif
