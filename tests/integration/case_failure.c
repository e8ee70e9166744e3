/*
 * Cases about failures that are not the caller's fault:
 * - "killed" / "exited": rank 1 dies (SIGKILL / _exit) from a second thread while every rank is
 *   in a loop of allreduces. Every survivor must return GLUCX_ERR_PEER_FAILED or
 *   GLUCX_ERR_TIMEOUT within the communicator timeout (10 s; GLUCX_KEEPALIVE_MS=500) after the
 *   death, and must then tear down without hanging. The parent gives the verdict (the runner
 *   counts the dead rank as failed).
 * - "timeout": a barrier with opts.timeout_ms = 500 where one rank never comes returns
 *   GLUCX_ERR_TIMEOUT in well under 10x the timeout; a p2p wait with a 300 ms limit likewise.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

#define KILL_COMM_TIMEOUT_MS 10000
#define VICTIM 1

typedef struct victim_arg {
    itest_shared_t *shared;
    int use_exit;
} victim_arg_t;

static void *victim_thread(void *p)
{
    victim_arg_t *va = p;
    itest_sleep_ms(300);
    __atomic_store_n(&va->shared->t_ns, itest_now_ns(), __ATOMIC_SEQ_CST);
    if (va->use_exit)
        _exit(3); /* no cleanup at all, mid-collective */
    raise(SIGKILL);
    return NULL;
}

static int death_case(const itest_env_t *env, int rank, int size, int use_exit)
{
    itest_shared_t *sh = env->shared;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open_killed(env, rank, size, use_exit ? "exited" : "killed",
                          glucx_test_ms(KILL_COMM_TIMEOUT_MS), &ctx, &store, &comm) != GLUCX_OK)
        return -1;
    const size_t count = 16384;
    float *buf = calloc(count, sizeof(float));
    int rc = buf == NULL ? -1 : 0;
    glucx_status_t st = GLUCX_OK;
    if (rc == 0)
        st = glucx_allreduce(comm, GLUCX_IN_PLACE, buf, count, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL);
    if (rc != 0 || ITEST_STATUS(st, GLUCX_OK, "warm-up allreduce")) {
        free(buf);
        itest_close(ctx, store, comm);
        __atomic_store_n(&sh->done[rank], 2, __ATOMIC_SEQ_CST);
        return -1;
    }
    victim_arg_t va = {sh, use_exit};
    pthread_t th;
    if (rank == VICTIM && pthread_create(&th, NULL, victim_thread, &va) != 0) {
        ITEST_FAIL("cannot start the victim thread");
        rc = -1;
    }
    /* allreduce until it fails (the victim dies in here, too) */
    int64_t start = itest_now_ns(), end = start + glucx_test_ms(40000) * 1000000;
    long iters = 0;
    while (st == GLUCX_OK && itest_now_ns() < end) {
        st = glucx_allreduce(comm, GLUCX_IN_PLACE, buf, count, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL);
        iters++;
    }
    int64_t t_err = itest_now_ns();
    if (rank == VICTIM) {
        /* only reached if the thread could not be started, or the loop ended first */
        ITEST_FAIL("the victim survived its own death (status %s)", glucx_status_string(st));
        rc = -1;
    }
    int64_t t_death = __atomic_load_n(&sh->t_ns, __ATOMIC_SEQ_CST);
    int64_t ms = t_death != 0 ? (t_err - t_death) / 1000000 : -1;
    sh->status[rank] = st;
    sh->elapsed_ms[rank] = ms;
    snprintf(sh->text[rank], sizeof(sh->text[rank]), "%s",
             st != GLUCX_OK ? glucx_last_error() : "");
    if (st != GLUCX_ERR_PEER_FAILED && st != GLUCX_ERR_TIMEOUT) {
        ITEST_FAIL("after %ld allreduces: expected GLUCX_ERR_PEER_FAILED or GLUCX_ERR_TIMEOUT, "
                   "got %s: %s",
                   iters, glucx_status_string(st), sh->text[rank]);
        rc = -1;
    } else if (t_death == 0 || ms > glucx_test_ms(KILL_COMM_TIMEOUT_MS + 2000)) {
        ITEST_FAIL("%s noticed %lld ms after rank %d died (communicator timeout %lld ms)",
                   glucx_status_string(st), (long long)ms, VICTIM,
                   (long long)glucx_test_ms(KILL_COMM_TIMEOUT_MS));
        rc = -1;
    } else {
        itest_note("%s after %lld ms (%ld allreduces): %s", glucx_status_string(st), (long long)ms,
                   iters, sh->text[rank]);
    }
    /* the failure is permanent and tearing down must not hang */
    ITEST_CHECK(glucx_barrier(comm, NULL) != GLUCX_OK, "a barrier after the failure returned OK");
    int64_t t0 = itest_now_ns();
    free(buf);
    itest_close(ctx, store, comm);
    int64_t close_ms = (itest_now_ns() - t0) / 1000000;
    ITEST_CHECK(close_ms < glucx_test_ms(10000),
                "tearing down the failed communicator took %lld ms", (long long)close_ms);
    __atomic_store_n(&sh->done[rank], rc == 0 && itest_failures() == 0 ? 1 : 2, __ATOMIC_SEQ_CST);
    return rc;
}

int itest_case_killed(const itest_env_t *env, int rank, int size)
{
    return death_case(env, rank, size, 0);
}

int itest_case_exited(const itest_env_t *env, int rank, int size)
{
    return death_case(env, rank, size, 1);
}

int itest_verdict_killed(const itest_env_t *env, int run_result)
{
    (void)run_result; /* nonzero: the victim died, as intended */
    itest_shared_t *sh = env->shared;
    int rc = 0;
    if (sh->t_ns == 0) {
        itest_note("FAIL: rank %d never reached its death", VICTIM);
        rc = -1;
    }
    if (sh->done[VICTIM] != 0) {
        itest_note("FAIL: rank %d finished although it should have died", VICTIM);
        rc = -1;
    }
    for (int r = 0; r < env->nranks; r++) {
        if (r == VICTIM)
            continue;
        if (sh->done[r] != 1) {
            itest_note("FAIL: survivor rank %d %s (status %s after %lld ms: %s)", r,
                       sh->done[r] == 0 ? "never finished (hung or killed by the runner)"
                                        : "reported a failure",
                       sh->status[r] == 1 ? "none" : glucx_status_string(sh->status[r]),
                       (long long)sh->elapsed_ms[r], sh->text[r]);
            rc = -1;
        }
    }
    return rc;
}

/* ---- timeout ---- */

int itest_case_timeout(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    const int absent = size - 1;
    const int64_t op_timeout_ms = 500;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "timeout", glucx_test_ms(30000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    int rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "warm-up barrier");
    if (rank == absent) {
        /* never comes: wait until the others are done with their barrier */
        int64_t end = itest_now_ns() + glucx_test_ms(30000) * 1000000;
        while (__atomic_load_n(&sh->counter[0], __ATOMIC_ACQUIRE) < size - 1 &&
               itest_now_ns() < end)
            itest_sleep_ms(10);
    } else if (rc != 0) {
        __atomic_fetch_add(&sh->counter[0], 1, __ATOMIC_ACQ_REL); /* release the absent rank */
    } else {
        glucx_coll_opts_t opts = {.field_mask = GLUCX_COLL_OPT_TIMEOUT,
                                  .timeout_ms = op_timeout_ms};
        int64_t t0 = itest_now_ns();
        glucx_status_t st = glucx_barrier(comm, &opts);
        int64_t ms = (itest_now_ns() - t0) / 1000000;
        __atomic_fetch_add(&sh->counter[0], 1, __ATOMIC_ACQ_REL);
        rc |= ITEST_STATUS(st, GLUCX_ERR_TIMEOUT,
                           "barrier with timeout_ms=%lld while rank %d "
                           "never comes",
                           (long long)op_timeout_ms, absent);
        ITEST_CHECK(ms < glucx_test_ms(10 * op_timeout_ms), "the barrier returned after %lld ms",
                    (long long)ms);
        ITEST_CHECK(ms >= op_timeout_ms / 2,
                    "the barrier gave up after %lld ms, before its %lld ms timeout", (long long)ms,
                    (long long)op_timeout_ms);
        if (st == GLUCX_ERR_TIMEOUT) {
            const char *text = glucx_last_error();
            ITEST_CHECK(strstr(text, "barrier") != NULL,
                        "the error text does not name the "
                        "barrier: \"%s\"",
                        text);
            /* Gloo's wording, which code and people match on */
            ITEST_CHECK(strstr(text, "Timed out waiting 500ms") != NULL,
                        "the error text lacks \"Timed out waiting 500ms\": \"%s\"", text);
        }
        if (rank == 0)
            itest_note("barrier timed out after %lld ms: %s", (long long)ms, glucx_last_error());
    }
    glucx_comm_destroy(comm);
    comm = NULL;

    /* a p2p wait with a limit on rank 0: nobody sends; the others keep the communicator up */
    if (itest_comm(ctx, store, rank, size, "timeout-p2p", glucx_test_ms(30000), &comm) !=
        GLUCX_OK) {
        rc = -1;
        __atomic_store_n(&sh->flag, 1, __ATOMIC_RELEASE);
    } else if (rank != 0) {
        int64_t end = itest_now_ns() + glucx_test_ms(30000) * 1000000;
        while (__atomic_load_n(&sh->flag, __ATOMIC_ACQUIRE) == 0 && itest_now_ns() < end)
            itest_sleep_ms(10);
    } else {
        char buf[16];
        glucx_request_t *req = NULL;
        if (ITEST_STATUS(glucx_irecv(comm, buf, sizeof(buf), size - 1, 77, &req), GLUCX_OK,
                         "irecv") == 0) {
            int64_t t0 = itest_now_ns();
            glucx_status_t st = glucx_request_wait(req, 300);
            int64_t ms = (itest_now_ns() - t0) / 1000000;
            rc |= ITEST_STATUS(st, GLUCX_ERR_TIMEOUT,
                               "glucx_request_wait(300 ms) of an unmatched receive");
            ITEST_CHECK(strstr(glucx_last_error(),
                               "Timed out waiting 300ms for recv operation to complete") != NULL,
                        "the error text lacks Gloo's sentence: \"%s\"", glucx_last_error());
            ITEST_CHECK(ms < glucx_test_ms(3000) && ms >= 250, "the wait returned after %lld ms",
                        (long long)ms);
            t0 = itest_now_ns();
            glucx_request_free(req);
            ms = (itest_now_ns() - t0) / 1000000;
            ITEST_CHECK(ms < glucx_test_ms(5000), "freeing the timed-out receive took %lld ms",
                        (long long)ms);
        } else {
            rc = -1;
        }
        __atomic_store_n(&sh->flag, 1, __ATOMIC_RELEASE);
    }
    itest_close(ctx, store, comm);
    return rc;
}

/* ---- killed_inflight ---- */

#define INFLIGHT_TIMEOUT_MS 20000
#define INFLIGHT_BIG ((size_t)4 << 20)
#define INFLIGHT_SMALL 1024
/* More 1 KiB sends than a shared-memory FIFO holds, and than a loopback socket pair buffers. */
#define INFLIGHT_MAX_SMALL 16384

/* Rank 0 waits for @p req, which is outstanding to the victim: it must fail with
 * GLUCX_ERR_PEER_FAILED naming rank 1, well before the communicator timeout. */
static int inflight_fails(itest_shared_t *sh, glucx_request_t *req, const char *what,
                          int64_t t_death_ns)
{
    glucx_status_t st = glucx_request_wait(req, -1);
    int64_t ms = (itest_now_ns() - t_death_ns) / 1000000;
    if (sh->status[0] == 1) { /* the first one is what the verdict reports */
        sh->status[0] = st;
        sh->elapsed_ms[0] = ms;
        snprintf(sh->text[0], sizeof(sh->text[0]), "%s", glucx_last_error());
    }
    int rc = ITEST_STATUS(st, GLUCX_ERR_PEER_FAILED, "wait for the %s to the killed rank %d", what,
                          VICTIM);
    if (st != GLUCX_OK) {
        char name[16];
        snprintf(name, sizeof(name), "rank %d", VICTIM);
        ITEST_CHECK(strstr(glucx_last_error(), name) != NULL,
                    "the %s's error does not name %s: \"%s\"", what, name, glucx_last_error());
    }
    ITEST_CHECK(ms < glucx_test_ms(INFLIGHT_TIMEOUT_MS) / 4,
                "the %s failed %lld ms after the kill (communicator timeout %lld ms)", what,
                (long long)ms, (long long)glucx_test_ms(INFLIGHT_TIMEOUT_MS));
    return rc;
}

/*
 * "killed_inflight": rank 1 is SIGKILLed while rank 0 has, outstanding to it, a 4 MiB send
 * (rendezvous), a 1 KiB send (eager, queued behind the FIFO or socket that rank 1 stopped
 * draining: rank 0 posts 1 KiB sends until one stays incomplete) and a 4 MiB put. Rank 1 does not
 * enter glucx after the warm-up barrier, so nothing it was sent is read. Rank 0's outstanding
 * operations fail with GLUCX_ERR_PEER_FAILED naming rank 1; it frees them, destroys its
 * communicator and context within their bounds, and exits 0 (once UCX 1.13 aborted it in
 * ucp_worker_destroy, or called back into the freed requests there).
 */
int itest_case_killed_inflight(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open_killed(env, rank, size, "killed-inflight", glucx_test_ms(INFLIGHT_TIMEOUT_MS),
                          &ctx, &store, &comm) != GLUCX_OK) {
        __atomic_store_n(&sh->flag, 1, __ATOMIC_RELEASE); /* the victim need not wait */
        return -1;
    }
    int rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "warm-up barrier");
    if (rank == VICTIM) {
        /* outside glucx from here on: nothing rank 0 sends is read */
        int64_t end = itest_now_ns() + glucx_test_ms(60000) * 1000000;
        while (__atomic_load_n(&sh->flag, __ATOMIC_ACQUIRE) == 0 && itest_now_ns() < end)
            itest_sleep_ms(1);
        __atomic_store_n(&sh->t_ns, itest_now_ns(), __ATOMIC_SEQ_CST);
        raise(SIGKILL);
    }
    char *big = itest_alloc(INFLIGHT_BIG), *put = itest_alloc(INFLIGHT_BIG);
    static char small[INFLIGHT_SMALL];
    glucx_request_t **smalls = calloc(INFLIGHT_MAX_SMALL, sizeof(*smalls));
    glucx_request_t *big_req = NULL, *put_req = NULL;
    int nsmall = 0, queued = 0;
    if (big == NULL || put == NULL || smalls == NULL) {
        ITEST_FAIL("out of memory");
        rc = -1;
    }
    if (rank == 0 && rc == 0) {
        memset(small, 0x3c, sizeof(small));
        rc |= ITEST_STATUS(glucx_isend(comm, big, INFLIGHT_BIG, VICTIM, 11, &big_req), GLUCX_OK,
                           "isend of 4 MiB to rank %d", VICTIM);
        while (rc == 0 && !queued && nsmall < INFLIGHT_MAX_SMALL) {
            rc |= ITEST_STATUS(glucx_isend(comm, small, sizeof(small), VICTIM, 12, &smalls[nsmall]),
                               GLUCX_OK, "isend of 1 KiB number %d to rank %d", nsmall, VICTIM);
            if (rc == 0) {
                glucx_status_t t = glucx_request_test(smalls[nsmall]);
                queued = t == GLUCX_INPROGRESS;
                /* one that left at once was copied out: it succeeded */
                if (!queued)
                    rc |= ITEST_STATUS(t, GLUCX_OK, "1 KiB send number %d to rank %d", nsmall,
                                       VICTIM);
            }
            nsmall++;
        }
        if (rc == 0)
            ITEST_CHECK(queued, "%d sends of 1 KiB to rank %d all completed at once", nsmall,
                        VICTIM);
        if (rc == 0)
            rc |= ITEST_STATUS(glucx_iput(comm, put, INFLIGHT_BIG, VICTIM, 13, 0, 0, &put_req),
                               GLUCX_OK, "iput of 4 MiB to rank %d", VICTIM);
        if (rc == 0) {
            ITEST_CHECK(glucx_request_test(big_req) == GLUCX_INPROGRESS,
                        "the 4 MiB send completed before rank %d was killed", VICTIM);
            ITEST_CHECK(glucx_request_test(put_req) == GLUCX_INPROGRESS,
                        "the 4 MiB put completed before rank %d was killed", VICTIM);
        }
        itest_note("outstanding to rank %d: a 4 MiB send, 1 KiB send number %d (the ones before "
                   "it left at once), a 4 MiB put",
                   VICTIM, nsmall - 1);
    }
    __atomic_store_n(&sh->flag, 1, __ATOMIC_RELEASE); /* kill the victim */
    int64_t end = itest_now_ns() + glucx_test_ms(60000) * 1000000;
    while (__atomic_load_n(&sh->t_ns, __ATOMIC_SEQ_CST) == 0 && itest_now_ns() < end)
        itest_sleep_ms(1);
    int64_t t_death = __atomic_load_n(&sh->t_ns, __ATOMIC_SEQ_CST);
    if (rc == 0 && t_death == 0) {
        ITEST_FAIL("rank %d never reached its death", VICTIM);
        rc = -1;
    } else if (rc == 0) {
        rc |= inflight_fails(sh, big_req, "4 MiB send", t_death);
        rc |= inflight_fails(sh, smalls[nsmall - 1], "1 KiB send", t_death);
        rc |= inflight_fails(sh, put_req, "4 MiB put", t_death);
        /* the failure is permanent */
        glucx_request_t *again = NULL;
        rc |= ITEST_STATUS(glucx_isend(comm, small, sizeof(small), VICTIM, 14, &again),
                           GLUCX_ERR_PEER_FAILED, "a send to rank %d after its death", VICTIM);
        glucx_request_free(again);
    }
    for (int i = 0; i < nsmall; i++)
        glucx_request_free(smalls[i]);
    glucx_request_free(big_req);
    glucx_request_free(put_req);
    /* the requests are gone: UCX must not call back into them, nor abort, while destroying */
    int64_t t0 = itest_now_ns();
    itest_close(ctx, store, comm);
    int64_t close_ms = (itest_now_ns() - t0) / 1000000;
    ITEST_CHECK(close_ms < glucx_test_ms(10000),
                "destroying the communicator and the context took %lld ms", (long long)close_ms);
    if (rank == 0 && rc == 0)
        itest_note("the 4 MiB send failed %lld ms after the kill: %s; destroyed in %lld ms",
                   (long long)sh->elapsed_ms[0], sh->text[0], (long long)close_ms);
    free(smalls);
    free(big);
    free(put);
    __atomic_store_n(&sh->done[rank], rc == 0 && itest_failures() == 0 ? 1 : 2, __ATOMIC_SEQ_CST);
    return rc;
}
