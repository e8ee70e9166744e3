/*
 * Integration cases about fork() without exec (issue 14; docs/architecture.md, "Fork").
 *
 * In both, a second thread of the forking rank maps and unmaps memory in a loop while the rank
 * forks, so forks land while that thread is inside mmap (and holds UCX's memory-hook lock,
 * which libucs installs when it is loaded). Every child is bounded by a deadline and killed by
 * PID if it does not finish (glucx_test_procs_run), which counts as a failure.
 *
 * "fork_inherited" (2 ranks): rank 0 has a context, a communicator with rank 1, a pending
 *   receive and a finished started collective; it forks FORKS children one after another. Each
 *   child calls every kind of public entry point on the inherited objects and to make new ones:
 *   each must return GLUCX_ERR_UNSUPPORTED at once with a text that names the operation, the
 *   fork (both pids) and the spawn/forkserver start methods; the read-only calls must still
 *   answer; abort, wake, request_free, comm_destroy and context_destroy must return without
 *   contacting rank 1. The first child also forks a grandchild, which must be refused too.
 *   Then rank 0's objects must still work (an allreduce with rank 1, values checked; the pending
 *   receive completes with rank 1's data), and rank 1 must have seen nothing of the children: a
 *   receive it posted before the forks completes with rank 0's message sent after them (a
 *   child's orderly leave would have failed it, a child's abort would have failed rank 1's
 *   communicator), and nothing was published in the store under the children's names.
 * "fork_new" (1 rank): rank 0 creates and destroys a context and a communicator (libucs is
 *   loaded and has hooked mmap; no glucx context is left), then forks FORKS/2 pairs of children:
 *   each pair creates its own context and a 2-rank communicator through the file store, runs an
 *   allreduce and a rendezvous-sized send (values checked) over the variant's transport, and
 *   destroys them. Before glucx created its UCX context without UCX's registration cache, a
 *   child's ucp_init() blocked for ever on the memory-hook lock in most of these forks. Rank 0
 *   then creates a new context and communicator and runs an allreduce.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "itest.h"
#include "support/procs.h"

#define FORKS 100
#define COUNT 16           /* elements of the allreduces */
#define BIG (256 * 1024)   /* bytes of the pair's send: above UCX's rendezvous threshold */
#define CHILD_TIMEOUT_S 30 /* base deadline of one child (or pair), scaled by procs_run */
#define COMM_TIMEOUT_MS 180000

/* ---- a thread that is (almost) always inside mmap or munmap ---- */

typedef struct churn {
    pthread_t thread;
    atomic_int stop;
    atomic_long rounds;
} churn_t;

static void *churn_main(void *arg)
{
    churn_t *c = arg;
    const size_t bytes = 64 * 1024;
    while (!atomic_load(&c->stop)) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            ((volatile char *)p)[0] = 1;
            munmap(p, bytes);
        }
        atomic_fetch_add(&c->rounds, 1);
    }
    return NULL;
}

static int churn_start(churn_t *c)
{
    atomic_init(&c->stop, 0);
    atomic_init(&c->rounds, 0);
    int err = pthread_create(&c->thread, NULL, churn_main, c);
    if (err != 0) {
        ITEST_FAIL("cannot start the mmap thread: %s", strerror(err));
        return err;
    }
    /* Fork only once the thread runs its loop, which allocates nothing: while a thread starts,
     * its C library and AddressSanitizer set-up allocates, and a fork then would hand the child
     * an allocator lock held by a thread it does not have (glibc's malloc guards fork; the
     * sanitizer's allocator of this GCC does not). */
    const int64_t deadline = itest_now_ns() + glucx_test_ms(30000) * 1000000;
    while (atomic_load(&c->rounds) == 0 && itest_now_ns() < deadline)
        itest_sleep_ms(1);
    if (atomic_load(&c->rounds) == 0) {
        ITEST_FAIL("the mmap thread did not start its loop");
        atomic_store(&c->stop, 1);
        pthread_join(c->thread, NULL);
        return -1;
    }
    return 0;
}

/* Stop the thread; fail unless it kept mapping while the @p forks forks ran. */
static void churn_stop(churn_t *c, int forks)
{
    atomic_store(&c->stop, 1);
    pthread_join(c->thread, NULL);
    long rounds = atomic_load(&c->rounds);
    ITEST_CHECK(rounds >= forks, "the mmap thread ran %ld rounds during %d forks", rounds, forks);
}

/* ---- checks ---- */

static double value_of(int rank, size_t i)
{
    return (double)((rank + 1) * 100 + (int)i);
}

/* Allreduce (sum) of COUNT floats over @p comm, checked against the formula. */
static void check_allreduce(glucx_comm_t *comm, int salt, const char *what)
{
    int rank = glucx_comm_rank(comm), size = glucx_comm_size(comm);
    float in[COUNT], out[COUNT];
    for (size_t i = 0; i < COUNT; i++)
        in[i] = (float)(value_of(rank, i) + salt);
    if (ITEST_STATUS(glucx_allreduce(comm, in, out, COUNT, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL),
                     GLUCX_OK, "%s: allreduce", what) != 0)
        return;
    for (size_t i = 0; i < COUNT; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += value_of(r, i) + salt;
        if ((double)out[i] != want) {
            ITEST_FAIL("%s: allreduce element %zu: expected %.1f, got %.1f", what, i, want,
                       (double)out[i]);
            return;
        }
    }
}

/*
 * @p st must be GLUCX_ERR_UNSUPPORTED with a text that names @p op, the fork (this pid and the
 * parent's) and the exec-based start methods.
 */
static void expect_refused(glucx_status_t st, const char *op, const char *call)
{
    if (st != GLUCX_ERR_UNSUPPORTED) {
        ITEST_FAIL("%s in a forked child: expected %s, got %s: %s", call,
                   glucx_status_string(GLUCX_ERR_UNSUPPORTED), glucx_status_string(st),
                   st == GLUCX_OK ? "(none)" : glucx_last_error());
        return;
    }
    const char *text = glucx_last_error();
    char self[32], parent[32];
    snprintf(self, sizeof(self), "process %d ", (int)getpid());
    snprintf(parent, sizeof(parent), "by process %d ", (int)getppid());
    const char *need[] = {op, "forked", self, parent, "'spawn'", "'forkserver'"};
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
        if (strstr(text, need[i]) == NULL) {
            ITEST_FAIL("%s in a forked child: the text lacks \"%s\": %s", call, need[i], text);
            return;
        }
}

/* ---- fork_inherited ---- */

typedef struct inherited {
    const itest_env_t *env;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    glucx_request_t *pending;  /* receive from rank 1, tag 5, unmatched at the forks */
    glucx_request_t *finished; /* a started allreduce, complete at the forks */
    glucx_window_t *window;    /* rank 1's puts, slot WINDOW_SLOT: empty at the forks */
    int grandchild;            /* this child forks a grandchild */
    int parent;                /* pid of the rank that forks */
} inherited_t;

static atomic_int callback_calls;

#define WINDOW_SLOT 77

static void count_callback(void *arg, glucx_status_t status, const char *error)
{
    (void)arg;
    (void)status;
    (void)error;
    atomic_fetch_add(&callback_calls, 1);
}

/* A child dies with the rank that forked it (the runner kills ranks, not their children). */
static void die_with_parent(int parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
}

/*
 * End a child of a process with glucx objects: by _exit, so that no leak checker runs. The UCX
 * state the child inherited is reachable in the parent only through threads (UCX's progress
 * thread, the collective threads) that fork did not copy, so a leak checker in the child
 * reports it, although nothing was allocated by the child.
 */
static void child_exit(int failures_before)
{
    fflush(stdout);
    fflush(stderr);
    _exit(itest_failures() != failures_before ? 1 : 0);
}

static int grandchild_main(int r, int n, void *arg)
{
    (void)r;
    (void)n;
    die_with_parent(*(const int *)arg);
    const int before = itest_failures();
    itest_set_rank(2000);
    expect_refused(glucx_fork_check(), "fork_check", "glucx_fork_check (grandchild)");
    glucx_context_t *ctx = NULL;
    expect_refused(glucx_context_create(NULL, &ctx), "context_create",
                   "glucx_context_create (grandchild)");
    child_exit(before);
    return 1;
}

static int inherited_child(int r, int n, void *arg)
{
    (void)r;
    (void)n;
    const inherited_t *in = arg;
    glucx_comm_t *comm = in->comm;
    die_with_parent(in->parent);
    const int before = itest_failures(); /* the parent's count, inherited */
    itest_set_rank(1000);
    char buf[64] = {0};

    expect_refused(glucx_fork_check(), "fork_check", "glucx_fork_check");

    /* creating: a context, and communicators on the inherited context */
    glucx_context_t *ctx = NULL;
    expect_refused(glucx_context_create(NULL, &ctx), "context_create", "glucx_context_create");
    ITEST_CHECK(ctx == NULL, "context_create wrote its output (%p)", (void *)ctx);
    glucx_comm_params_t params = {.field_mask = GLUCX_COMM_PARAM_NAME,
                                  .rank = 0,
                                  .size = 2,
                                  .store = in->store,
                                  .name = "fork_child"};
    glucx_comm_t *made = NULL;
    expect_refused(glucx_comm_create(in->ctx, &params, &made), "comm_create 'fork_child'",
                   "glucx_comm_create");
    expect_refused(glucx_comm_prepare(in->ctx, &params, &made), "comm_create 'fork_child'",
                   "glucx_comm_prepare");
    ITEST_CHECK(made == NULL, "a communicator was made (%p)", (void *)made);

    /* the inherited communicator */
    const void *rec = NULL;
    size_t rec_len = 0;
    expect_refused(glucx_comm_address(comm, &rec, &rec_len), "comm_address", "glucx_comm_address");
    const void *recs[2] = {buf, buf};
    size_t lens[2] = {sizeof(buf), sizeof(buf)};
    expect_refused(glucx_comm_connect(comm, recs, lens), "comm_connect", "glucx_comm_connect");
    char desc[128];
    expect_refused(glucx_comm_peer_transport(comm, 1, desc, sizeof(desc)), "comm_peer_transport",
                   "glucx_comm_peer_transport");
    glucx_request_t *req = NULL;
    expect_refused(glucx_isend(comm, buf, sizeof(buf), 1, 7, &req), "isend of 64 bytes",
                   "glucx_isend");
    expect_refused(glucx_irecv(comm, buf, sizeof(buf), 1, 7, &req), "irecv of 64 bytes",
                   "glucx_irecv");
    const int peers[] = {1, 0};
    expect_refused(glucx_irecv_any(comm, buf, sizeof(buf), peers, 2, 7, &req),
                   "irecv_any of 64 bytes", "glucx_irecv_any");
    ITEST_CHECK(req == NULL, "a point-to-point request was made (%p)", (void *)req);
    float v[COUNT] = {0}, w[COUNT];
    expect_refused(glucx_allreduce(comm, v, w, COUNT, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL),
                   "allreduce of 16 f32 elements", "glucx_allreduce");
    expect_refused(glucx_barrier(comm, NULL), "barrier", "glucx_barrier");
    glucx_coll_args_t bcast = {.coll = GLUCX_COLL_BROADCAST,
                               .recvbuf = v,
                               .count = COUNT,
                               .dtype = GLUCX_DTYPE_F32,
                               .root = 1};
    expect_refused(glucx_coll(comm, &bcast, NULL), "broadcast of 16 f32 elements (root 1)",
                   "glucx_coll");
    expect_refused(glucx_coll_start(comm, &bcast, NULL, &req), "broadcast", "glucx_coll_start");
    ITEST_CHECK(req == NULL, "coll_start made a request (%p)", (void *)req);
    expect_refused(glucx_coll_start_cb(comm, &bcast, NULL, count_callback, NULL), "broadcast",
                   "glucx_coll_start_cb");
    /* windows: a new one, a put, the inherited one, and a compact address */
    glucx_window_t *win = NULL;
    expect_refused(glucx_window_create(comm, 1, WINDOW_SLOT + 1, buf, sizeof(buf), &win),
                   "window_create of 64 bytes", "glucx_window_create");
    ITEST_CHECK(win == NULL, "window_create made a window (%p)", (void *)win);
    expect_refused(glucx_iput(comm, buf, sizeof(buf), 1, WINDOW_SLOT, 0, 0, &req),
                   "iput of 64 bytes", "glucx_iput");
    ITEST_CHECK(req == NULL, "iput made a request (%p)", (void *)req);
    expect_refused(glucx_window_wait(in->window, 100, NULL, NULL, NULL),
                   "window_wait for rank 1's puts (slot 77, 64 bytes)", "glucx_window_wait");
    char compact[GLUCX_COMPACT_ADDRESS_BYTES];
    expect_refused(glucx_comm_compact_address(comm, "127.0.0.1", compact, sizeof(compact)),
                   "comm_compact_address", "glucx_comm_compact_address");

    char last[1500];
    glucx_comm_last_error(comm, last, sizeof(last));
    ITEST_CHECK(strstr(last, "forked") != NULL, "glucx_comm_last_error: %s", last);

    /* the inherited requests */
    expect_refused(glucx_request_test(in->pending),
                   "request_test of a receive of 64 bytes from "
                   "rank 1",
                   "glucx_request_test (pending receive)");
    expect_refused(glucx_request_wait(in->pending, 100), "request_wait of a receive",
                   "glucx_request_wait (pending receive)");
    expect_refused(glucx_request_cancel(in->pending), "request_cancel", "glucx_request_cancel");
    int peer = -7;
    size_t got = 7;
    expect_refused(glucx_request_info(in->pending, &peer, &got), "request_info",
                   "glucx_request_info");
    ITEST_CHECK(peer == -7 && got == 7, "request_info wrote peer %d, bytes %zu", peer, got);
    glucx_request_t *one[] = {in->pending};
    size_t index = 99;
    expect_refused(glucx_request_wait_any(one, 1, 100, NULL, &index), "request_wait_any of 1",
                   "glucx_request_wait_any");
    expect_refused(glucx_request_test(in->finished), "request_test of a started collective",
                   "glucx_request_test (started collective)");
    expect_refused(glucx_request_wait(in->finished, 100), "request_wait of a started collective",
                   "glucx_request_wait (started collective)");

    /* reading still works */
    ITEST_CHECK(glucx_comm_rank(comm) == 0 && glucx_comm_size(comm) == 2, "rank %d, size %d",
                glucx_comm_rank(comm), glucx_comm_size(comm));
    ITEST_CHECK(glucx_comm_algorithm(comm, GLUCX_COLL_ALLREDUCE, 64) != NULL,
                "no allreduce algorithm named");
    (void)glucx_comm_wake_count(comm);
    ITEST_CHECK(strcmp(glucx_version(), GLUCX_VERSION_STRING) == 0, "version %s", glucx_version());

    if (in->grandchild) {
        int self = (int)getpid();
        ITEST_CHECK(glucx_test_procs_run(1, grandchild_main, &self, CHILD_TIMEOUT_S) == 0,
                    "the grandchild failed");
    }

    /* ending: must neither block nor reach rank 1 */
    glucx_comm_abort(comm, "abort from a forked child");
    glucx_comm_wake(comm);
    glucx_request_free(in->pending);
    glucx_request_free(in->finished);
    glucx_window_destroy(in->window);
    glucx_comm_destroy(comm);
    glucx_context_destroy(in->ctx);
    glucx_store_destroy(in->store); /* a file store: plain memory */
    expect_refused(glucx_context_create(NULL, &ctx), "context_create",
                   "glucx_context_create after the destroys");
    ITEST_CHECK(atomic_load(&callback_calls) == 0, "the refused collective's callback ran");
    child_exit(before);
    return 1;
}

int itest_case_fork_inherited(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "fork_inherited", glucx_test_ms(COMM_TIMEOUT_MS), &ctx, &store,
                   &comm) != GLUCX_OK)
        return 1;
    const int peer = 1 - rank;
    unsigned char pending_buf[64], late_buf[64], msg[64];
    glucx_request_t *pending = NULL, *late = NULL, *finished = NULL;
    /* rank 0's receive stays unmatched until after the forks; rank 1's too (a leave from a
     * child would cancel it and fail rank 1's communicator) */
    ITEST_STATUS(glucx_irecv(comm, rank == 0 ? pending_buf : late_buf, 64, peer, rank == 0 ? 5 : 6,
                             rank == 0 ? &pending : &late),
                 GLUCX_OK, "irecv before the forks");
    float v[COUNT], w[COUNT];
    for (size_t i = 0; i < COUNT; i++)
        v[i] = (float)value_of(rank, i);
    glucx_coll_args_t ar = {.coll = GLUCX_COLL_ALLREDUCE,
                            .sendbuf = v,
                            .recvbuf = w,
                            .count = COUNT,
                            .dtype = GLUCX_DTYPE_F32,
                            .op = GLUCX_OP_SUM};
    ITEST_STATUS(glucx_coll_start(comm, &ar, NULL, &finished), GLUCX_OK, "coll_start");
    if (finished != NULL)
        ITEST_STATUS(glucx_request_wait(finished, -1), GLUCX_OK, "started allreduce");
    check_allreduce(comm, 0, "before the forks");
    if (itest_failures() != 0)
        return 1;

    glucx_window_t *window = NULL;
    unsigned char window_buf[64];
    memset(window_buf, 0, sizeof(window_buf));
    if (rank == 0)
        ITEST_STATUS(
            glucx_window_create(comm, 1, WINDOW_SLOT, window_buf, sizeof(window_buf), &window),
            GLUCX_OK, "window before the forks");

    if (rank == 0) {
        churn_t churn;
        if (churn_start(&churn) != 0)
            return 1;
        int failed = 0;
        for (int i = 0; i < FORKS; i++) {
            inherited_t arg = {env,      ctx,    store,  comm,         pending,
                               finished, window, i == 0, (int)getpid()};
            if (glucx_test_procs_run(1, inherited_child, &arg, CHILD_TIMEOUT_S) != 0 &&
                failed++ < 3)
                ITEST_FAIL("forked child %d of %d failed (its lines are above)", i, FORKS);
        }
        churn_stop(&churn, FORKS);
        ITEST_CHECK(failed == 0, "%d of %d forked children failed", failed, FORKS);
        void *value = NULL;
        size_t bytes = 0;
        glucx_status_t st = glucx_store_get(store, "fork_child/rank/0", 0, &value, &bytes);
        ITEST_CHECK(st == GLUCX_ERR_TIMEOUT, "a child published 'fork_child/rank/0' (%s)",
                    glucx_status_string(st));
        free(value);
    }

    /* after the forks: the parent's objects work, and rank 1 saw nothing */
    check_allreduce(comm, 1, "after the forks");
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (unsigned char)(rank * 31 + i);
    glucx_request_t *send = NULL;
    ITEST_STATUS(glucx_isend(comm, msg, sizeof(msg), peer, rank == 0 ? 6 : 5, &send), GLUCX_OK,
                 "isend after the forks");
    glucx_request_t *mine = rank == 0 ? pending : late;
    unsigned char *into = rank == 0 ? pending_buf : late_buf;
    ITEST_STATUS(glucx_request_wait(mine, -1), GLUCX_OK,
                 "the receive posted before the forks, from rank %d", peer);
    for (size_t i = 0; i < sizeof(msg); i++)
        if (into[i] != (unsigned char)(peer * 31 + i)) {
            ITEST_FAIL("byte %zu from rank %d: expected %u, got %u", i, peer,
                       (unsigned)(unsigned char)(peer * 31 + i), (unsigned)into[i]);
            break;
        }
    if (send != NULL)
        ITEST_STATUS(glucx_request_wait(send, -1), GLUCX_OK, "isend after the forks");
    /* the window made before the forks takes rank 1's put */
    if (rank == 1) {
        glucx_request_t *put = NULL;
        ITEST_STATUS(glucx_iput(comm, msg, sizeof(msg), 0, WINDOW_SLOT, 0, 0, &put), GLUCX_OK,
                     "iput after the forks");
        if (put != NULL)
            ITEST_STATUS(glucx_request_wait(put, -1), GLUCX_OK, "iput after the forks");
        glucx_request_free(put);
    } else if (window != NULL) {
        size_t got = 0;
        ITEST_STATUS(glucx_window_wait(window, -1, NULL, &got, NULL), GLUCX_OK,
                     "the window made before the forks");
        ITEST_CHECK(got == sizeof(msg), "the window took %zu bytes (expected %zu)", got,
                    sizeof(msg));
        for (size_t i = 0; i < sizeof(msg); i++)
            if (window_buf[i] != (unsigned char)(peer * 31 + i)) {
                ITEST_FAIL("window byte %zu from rank %d: expected %u, got %u", i, peer,
                           (unsigned)(unsigned char)(peer * 31 + i), (unsigned)window_buf[i]);
                break;
            }
    }
    glucx_window_destroy(window);
    glucx_request_free(send);
    glucx_request_free(mine);
    glucx_request_free(finished);
    char last[1024];
    glucx_comm_last_error(comm, last, sizeof(last));
    ITEST_CHECK(last[0] == '\0', "communicator error: %s", last);
    ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "final barrier");
    itest_close(ctx, store, comm);
    return itest_failures() != 0;
}

/* ---- fork_new ---- */

typedef struct pair_arg {
    const itest_env_t *env;
    int round;
    int parent; /* pid of the rank that forks */
} pair_arg_t;

static int pair_child(int r, int n, void *arg)
{
    const pair_arg_t *pa = arg;
    die_with_parent(pa->parent);
    const int before = itest_failures(); /* the parent's count, inherited */
    itest_set_rank(100 + 2 * pa->round + r);
    char name[64];
    snprintf(name, sizeof(name), "fork_new_%d", pa->round);
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(pa->env, r, n, name, glucx_test_ms(COMM_TIMEOUT_MS), &ctx, &store, &comm) !=
        GLUCX_OK)
        return 1;
    itest_check_transport(pa->env, comm);
    check_allreduce(comm, pa->round, name);
    unsigned char *big = malloc(BIG);
    if (big == NULL) {
        ITEST_FAIL("out of memory");
    } else if (r == 0) {
        for (size_t i = 0; i < BIG; i++)
            big[i] = (unsigned char)(i * 7 + (size_t)pa->round);
        glucx_request_t *req = NULL;
        if (ITEST_STATUS(glucx_isend(comm, big, BIG, 1, 3, &req), GLUCX_OK, "isend %d", BIG) == 0)
            ITEST_STATUS(glucx_request_wait(req, -1), GLUCX_OK, "isend wait");
        glucx_request_free(req);
    } else {
        memset(big, 0, BIG);
        glucx_request_t *req = NULL;
        if (ITEST_STATUS(glucx_irecv(comm, big, BIG, 0, 3, &req), GLUCX_OK, "irecv %d", BIG) == 0 &&
            ITEST_STATUS(glucx_request_wait(req, -1), GLUCX_OK, "irecv wait") == 0) {
            for (size_t i = 0; i < BIG; i++)
                if (big[i] != (unsigned char)(i * 7 + (size_t)pa->round)) {
                    ITEST_FAIL("byte %zu of %d: expected %u, got %u", i, BIG,
                               (unsigned)(unsigned char)(i * 7 + (size_t)pa->round),
                               (unsigned)big[i]);
                    break;
                }
        }
        glucx_request_free(req);
    }
    free(big);
    ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier");
    itest_close(ctx, store, comm);
    return itest_failures() != before; /* exit(): a leak check runs in these children */
}

int itest_case_fork_new(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    /* libglucx loaded and used, nothing left alive */
    if (itest_open(env, rank, size, "fork_new_before", 0, &ctx, &store, &comm) != GLUCX_OK)
        return 1;
    check_allreduce(comm, 0, "before the forks");
    itest_close(ctx, store, comm);

    churn_t churn;
    if (churn_start(&churn) != 0)
        return 1;
    int failed = 0;
    for (int round = 0; round < FORKS / 2; round++) {
        pair_arg_t arg = {env, round, (int)getpid()};
        if (glucx_test_procs_run(2, pair_child, &arg, CHILD_TIMEOUT_S) != 0 && failed++ < 3)
            ITEST_FAIL("pair %d of forked children failed (their lines are above)", round);
    }
    churn_stop(&churn, FORKS);
    ITEST_CHECK(failed == 0, "%d of %d pairs of forked children failed", failed, FORKS / 2);

    if (itest_open(env, rank, size, "fork_new_after", 0, &ctx, &store, &comm) != GLUCX_OK)
        return 1;
    check_allreduce(comm, 1, "after the forks");
    itest_close(ctx, store, comm);
    return itest_failures() != 0;
}
