/*
 * Case "sync_send": glucx_isend_flags(GLUCX_SEND_SYNC) between real processes.
 *
 * - order: a synchronous send never completes before its receiver posted the matching receive.
 *   The receiver raises a flag in memory shared by the ranks just before it posts the receive
 *   (some time after the message was sent); the sender polls its request and reads the flag
 *   when it sees the completion: it must be raised. Sizes 0, 8, 4 KiB (sent eagerly by UCX,
 *   where a plain send completes at once) and 1 MiB (rendezvous); the bytes received are
 *   checked against the sender's pattern.
 * - self: a synchronous send to this rank stays pending until this rank posts the receive.
 * - any_source (3+ ranks): the receive that matches is one from a set of ranks (a subset, which
 *   glucx serves by probing, and every rank, a wildcard receive).
 * - timeout: a synchronous send whose receiver stays alive but never receives times out at its
 *   wait's limit with GLUCX_ERR_TIMEOUT and Gloo's wording ("Timed out"), naming the peer.
 * - departed: a synchronous send whose receiver destroys its communicator without receiving
 *   fails with GLUCX_ERR_ABORTED long before the timeout, naming that rank (8 B and 1 MiB).
 * - an unknown flag is GLUCX_ERR_INVALID_ARG and leaves the communicator usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "support/util.h"

#define WAIT_MS glucx_test_ms(30000)
/* How long a receiver waits before posting: what is tested (the sender must still be pending
 * then), not a deadline, so not scaled. */
#define HOLD_MS 150

/* shared counter slots (itest_shared_t.counter) */
enum {
    SLOT_POSTED = 0, /* + case index: the receiver is about to post its receive */
    SLOT_SENT = 64,  /* + case index: the sender posted its send */
    SLOT_DONE = 128, /* + case index: the case is over (ranks that only wait for it) */
    SLOT_CASES = 64,
};

static void raise_flag(itest_shared_t *sh, int slot)
{
    __atomic_store_n(&sh->counter[slot], 1, __ATOMIC_SEQ_CST);
}

static int flag_raised(itest_shared_t *sh, int slot)
{
    return __atomic_load_n(&sh->counter[slot], __ATOMIC_SEQ_CST) != 0;
}

/* Wait (sleeping) until the flag is raised; 0 if it was within the scaled limit. */
static int await_flag(itest_shared_t *sh, int slot, const char *what)
{
    int64_t end = itest_now_ns() + (int64_t)WAIT_MS * 1000000;
    while (!flag_raised(sh, slot)) {
        if (itest_now_ns() > end) {
            ITEST_FAIL("%s never happened", what);
            return -1;
        }
        itest_sleep_ms(2);
    }
    return 0;
}

static uint64_t seed_of(int src, uint64_t tag)
{
    return ((uint64_t)(unsigned)src << 40) ^ (tag << 8) ^ 0x5eed;
}

static int check_bytes(const char *what, const unsigned char *got, size_t bytes, int src,
                       uint64_t tag)
{
    if (bytes == 0)
        return 0;
    unsigned char *want = malloc(bytes);
    if (want == NULL) {
        ITEST_FAIL("out of memory");
        return -1;
    }
    glucx_test_fill_bytes(want, bytes, seed_of(src, tag));
    int rc = 0;
    for (size_t i = 0; i < bytes && rc == 0; i++) {
        if (got[i] != want[i]) {
            ITEST_FAIL("%s: byte %zu of %zu from rank %d: expected 0x%02x, got 0x%02x", what, i,
                       bytes, src, want[i], got[i]);
            rc = -1;
        }
    }
    free(want);
    return rc;
}

/*
 * Poll @p req (glucx_request_test, which drives progress) until it completes; the flag @p slot
 * must be raised by then. @return 0 when it completed with GLUCX_OK after the flag.
 */
static int complete_after_flag(glucx_request_t *req, itest_shared_t *sh, int slot, const char *what)
{
    int64_t end = itest_now_ns() + (int64_t)WAIT_MS * 1000000;
    for (;;) {
        glucx_status_t st = glucx_request_test(req);
        if (st != GLUCX_INPROGRESS) {
            /* read after the completion was observed: the receive's post came before it */
            int raised = flag_raised(sh, slot);
            if (ITEST_STATUS(st, GLUCX_OK, "%s", what))
                return -1;
            if (!raised) {
                ITEST_FAIL("%s completed before the receiver posted its receive", what);
                return -1;
            }
            return 0;
        }
        if (itest_now_ns() > end) {
            ITEST_FAIL("%s did not complete within %lld ms", what, (long long)WAIT_MS);
            return -1;
        }
    }
}

/* A synchronous send of @p bytes from @p src to @p dst, received after HOLD_MS. */
static int order(const itest_env_t *env, glucx_comm_t *comm, int src, int dst, size_t bytes, int k)
{
    itest_shared_t *sh = env->shared;
    const int rank = glucx_comm_rank(comm);
    const uint64_t tag = 100 + (uint64_t)k;
    char what[128];
    snprintf(what, sizeof(what), "synchronous send of %zu bytes from rank %d to rank %d", bytes,
             src, dst);
    unsigned char *buf = malloc(bytes > 0 ? bytes : 1);
    if (buf == NULL) {
        ITEST_FAIL("out of memory");
        return -1;
    }
    int rc = 0;
    glucx_request_t *req = NULL;
    if (rank == src) {
        glucx_test_fill_bytes(buf, bytes, seed_of(src, tag));
        rc = ITEST_STATUS(
            glucx_isend_flags(comm, bytes > 0 ? buf : NULL, bytes, dst, tag, GLUCX_SEND_SYNC, &req),
            GLUCX_OK, "post the %s", what);
        raise_flag(sh, SLOT_SENT + k);
        if (rc == 0)
            rc = complete_after_flag(req, sh, SLOT_POSTED + k, what);
    } else if (rank == dst) {
        memset(buf, 0, bytes > 0 ? bytes : 1);
        rc = await_flag(sh, SLOT_SENT + k, what);
        itest_sleep_ms(HOLD_MS);
        raise_flag(sh, SLOT_POSTED + k);
        if (rc == 0)
            rc = ITEST_STATUS(glucx_irecv(comm, bytes > 0 ? buf : NULL, bytes, src, tag, &req),
                              GLUCX_OK, "irecv for the %s", what);
        if (rc == 0)
            rc =
                ITEST_STATUS(glucx_request_wait(req, WAIT_MS), GLUCX_OK, "receive of the %s", what);
        if (rc == 0)
            rc = check_bytes(what, buf, bytes, src, tag);
    }
    glucx_request_free(req);
    free(buf);
    return rc;
}

/* A synchronous send to this rank itself, received after HOLD_MS of polling. */
static int self(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm);
    const uint64_t tag = 300;
    unsigned char out[64], in[64];
    glucx_test_fill_bytes(out, sizeof(out), seed_of(rank, tag));
    memset(in, 0, sizeof(in));
    glucx_request_t *s = NULL, *r = NULL;
    int rc = ITEST_STATUS(glucx_isend_flags(comm, out, sizeof(out), rank, tag, GLUCX_SEND_SYNC, &s),
                          GLUCX_OK, "synchronous send to this rank");
    if (rc == 0) {
        int64_t end = itest_now_ns() + (int64_t)HOLD_MS * 1000000;
        while (itest_now_ns() < end && glucx_request_test(s) == GLUCX_INPROGRESS)
            itest_sleep_ms(1);
        ITEST_CHECK(glucx_request_test(s) == GLUCX_INPROGRESS,
                    "a synchronous send to this rank completed before its receive was posted");
        rc = ITEST_STATUS(glucx_irecv(comm, in, sizeof(in), rank, tag, &r), GLUCX_OK,
                          "receive from this rank");
    }
    if (rc == 0)
        rc = ITEST_STATUS(glucx_request_wait(s, WAIT_MS), GLUCX_OK, "synchronous send to self");
    if (rc == 0)
        rc = ITEST_STATUS(glucx_request_wait(r, WAIT_MS), GLUCX_OK, "receive from self");
    if (rc == 0)
        rc = check_bytes("synchronous send to self", in, sizeof(in), rank, tag);
    glucx_request_free(s);
    glucx_request_free(r);
    return rc;
}

/* The last rank sends synchronously to rank 0, which receives from a set of ranks: a subset
 * (ranks 1..size-1) when @p subset, else every rank (this one included). */
static int any_source(const itest_env_t *env, glucx_comm_t *comm, int subset, int k)
{
    itest_shared_t *sh = env->shared;
    const int rank = glucx_comm_rank(comm), size = glucx_comm_size(comm), src = size - 1;
    const uint64_t tag = 400 + (uint64_t)k;
    unsigned char buf[32];
    int rc = 0;
    glucx_request_t *req = NULL;
    const char *what = subset ? "synchronous send received from a subset of ranks"
                              : "synchronous send received from any rank";
    if (rank == src) {
        glucx_test_fill_bytes(buf, sizeof(buf), seed_of(src, tag));
        rc = ITEST_STATUS(glucx_isend_flags(comm, buf, sizeof(buf), 0, tag, GLUCX_SEND_SYNC, &req),
                          GLUCX_OK, "post the %s", what);
        raise_flag(sh, SLOT_SENT + k);
        if (rc == 0)
            rc = complete_after_flag(req, sh, SLOT_POSTED + k, what);
    } else if (rank == 0) {
        int peers[ITEST_MAX_RANKS];
        int np = 0;
        for (int r = subset ? 1 : 0; r < size; r++)
            peers[np++] = r;
        memset(buf, 0, sizeof(buf));
        rc = await_flag(sh, SLOT_SENT + k, what);
        itest_sleep_ms(HOLD_MS);
        raise_flag(sh, SLOT_POSTED + k);
        if (rc == 0)
            rc = ITEST_STATUS(glucx_irecv_any(comm, buf, sizeof(buf), peers, np, tag, &req),
                              GLUCX_OK, "irecv_any for the %s", what);
        if (rc == 0)
            rc = ITEST_STATUS(glucx_request_wait(req, WAIT_MS), GLUCX_OK, "%s", what);
        int from = -1;
        size_t got = 0;
        if (rc == 0 && glucx_request_info(req, &from, &got) == GLUCX_OK)
            ITEST_CHECK(from == src && got == sizeof(buf), "%s: from rank %d, %zu bytes", what,
                        from, got);
        if (rc == 0)
            rc = check_bytes(what, buf, sizeof(buf), src, tag);
    }
    glucx_request_free(req);
    return rc;
}

/* Rank 0's synchronous send to rank 1, which never receives (alive), times out. */
static int timeout(const itest_env_t *env, glucx_comm_t *comm, int k)
{
    itest_shared_t *sh = env->shared;
    const int rank = glucx_comm_rank(comm);
    const int64_t limit_ms = 400; /* what is tested: not scaled */
    int rc = 0;
    if (rank == 0) {
        char buf[8] = {0};
        glucx_request_t *req = NULL;
        rc = ITEST_STATUS(glucx_isend_flags(comm, buf, sizeof(buf), 1, 500, GLUCX_SEND_SYNC, &req),
                          GLUCX_OK, "synchronous send to a rank that never receives");
        if (rc == 0) {
            int64_t t0 = itest_now_ns();
            glucx_status_t st = glucx_request_wait(req, limit_ms);
            int64_t ms = (itest_now_ns() - t0) / 1000000;
            char text[512];
            snprintf(text, sizeof(text), "%s", glucx_last_error());
            rc = ITEST_STATUS(st, GLUCX_ERR_TIMEOUT,
                              "wait(%lld ms) for a synchronous send rank 1 never receives",
                              (long long)limit_ms);
            ITEST_CHECK(ms >= limit_ms * 4 / 5 && ms < glucx_test_ms(10 * limit_ms),
                        "the wait returned after %lld ms", (long long)ms);
            ITEST_CHECK(strstr(text, "Timed out waiting 400ms for send operation to complete") !=
                            NULL,
                        "the text lacks Gloo's sentence: \"%s\"", text);
            ITEST_CHECK(strstr(text, "rank 1") != NULL, "the text does not name rank 1: \"%s\"",
                        text);
            /* the communicator failed with it */
            glucx_request_t *again = NULL;
            ITEST_STATUS(glucx_isend(comm, buf, sizeof(buf), 1, 501, &again), GLUCX_ERR_TIMEOUT,
                         "a send after the timeout");
            glucx_request_free(again);
            glucx_request_free(req);
        }
        raise_flag(sh, SLOT_DONE + k);
    } else {
        rc = await_flag(sh, SLOT_DONE + k, "rank 0's timeout");
    }
    return rc;
}

/* Rank 0 sends synchronously to rank 1, which then destroys its communicator unreceived. */
static int departed(const itest_env_t *env, glucx_comm_t **comm_p, size_t bytes, int k)
{
    itest_shared_t *sh = env->shared;
    glucx_comm_t *comm = *comm_p;
    const int rank = glucx_comm_rank(comm);
    int rc = 0;
    if (rank == 0) {
        unsigned char *buf = calloc(1, bytes);
        glucx_request_t *req = NULL;
        if (buf == NULL) {
            ITEST_FAIL("out of memory");
            rc = -1;
        } else {
            rc = ITEST_STATUS(glucx_isend_flags(comm, buf, bytes, 1, 600, GLUCX_SEND_SYNC, &req),
                              GLUCX_OK, "synchronous send of %zu bytes to rank 1", bytes);
        }
        raise_flag(sh, SLOT_SENT + k);
        if (rc == 0) {
            int64_t t0 = itest_now_ns();
            glucx_status_t st = glucx_request_wait(req, -1); /* the communicator's 30 s (scaled) */
            int64_t ms = (itest_now_ns() - t0) / 1000000;
            const char *text = glucx_last_error();
            rc = ITEST_STATUS(st, GLUCX_ERR_ABORTED,
                              "synchronous send of %zu bytes whose receiver destroyed its "
                              "communicator",
                              bytes);
            ITEST_CHECK(ms < glucx_test_ms(5000), "the send failed only after %lld ms",
                        (long long)ms);
            ITEST_CHECK(strstr(text, "rank 1") != NULL, "the text does not name rank 1: \"%s\"",
                        text);
        }
        glucx_request_free(req);
        free(buf);
        raise_flag(sh, SLOT_DONE + k);
    } else if (rank == 1) {
        rc = await_flag(sh, SLOT_SENT + k, "rank 0's send");
        itest_sleep_ms(HOLD_MS); /* let the message arrive unreceived */
        glucx_comm_destroy(comm);
        *comm_p = NULL;
        rc |= await_flag(sh, SLOT_DONE + k, "rank 0's failed send");
    } else {
        rc = await_flag(sh, SLOT_DONE + k, "rank 0's failed send");
    }
    return rc;
}

int itest_case_sync_send(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "sync", glucx_test_ms(60000), &ctx, &store, &comm) != GLUCX_OK)
        return -1;
    itest_check_transport(env, comm);
    int rc = 0, k = 0;
    static const size_t sizes[] = {0, 8, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        rc |= order(env, comm, 0, 1, sizes[i], k++);
    rc |= order(env, comm, 1, 0, 8, k++);
    rc |= self(comm);
    if (size >= 3) {
        rc |= any_source(env, comm, 1, k++);
        rc |= any_source(env, comm, 0, k++);
    }
    /* an unknown flag: refused locally, the communicator stays usable */
    if (rank == 0) {
        char b = 0;
        glucx_request_t *req = NULL;
        ITEST_STATUS(glucx_isend_flags(comm, &b, 1, 1, 700, 1u << 7, &req), GLUCX_ERR_INVALID_ARG,
                     "isend_flags with an unknown flag");
        ITEST_CHECK(strstr(glucx_last_error(), "flag") != NULL,
                    "the text does not mention the flag: \"%s\"", glucx_last_error());
    }
    rc |= order(env, comm, 0, 1, 8, k++);
    rc |= ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier after the orderings");
    glucx_comm_destroy(comm);
    comm = NULL;

    /* one communicator per failing case */
    if (itest_comm(ctx, store, rank, size, "sync-timeout", glucx_test_ms(30000), &comm) == GLUCX_OK)
        rc |= timeout(env, comm, k++);
    else
        rc = -1;
    glucx_comm_destroy(comm);
    comm = NULL;
    static const size_t dsizes[] = {8, 1 << 20};
    for (size_t i = 0; i < sizeof(dsizes) / sizeof(dsizes[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "sync-departed-%zu", i);
        if (itest_comm(ctx, store, rank, size, name, glucx_test_ms(30000), &comm) != GLUCX_OK) {
            rc = -1;
            break;
        }
        rc |= departed(env, &comm, dsizes[i], k++);
        glucx_comm_destroy(comm);
        comm = NULL;
    }
    ITEST_CHECK(k <= SLOT_CASES, "too many cases for the shared slots (%d)", k);
    itest_close(ctx, store, comm);
    return rc;
}
