/*
 * Cases about windows (glucx_window_create / glucx_iput / glucx_window_wait /
 * glucx_window_destroy), the model of Gloo's bound buffers:
 * - "window": values placed at offsets (0, 1, 3, 4093 bytes, 64 KiB, 4 MiB, zero bytes; nonzero
 *   and odd offsets) into a window from the previous rank and into one from this rank itself,
 *   nothing written outside the messages; puts that arrive before their window (eager and
 *   rendezvous sizes); FIFO order of many overlapping puts with the window open and with it
 *   opened late (contents checked against a replay of the puts in posting order); both ranks
 *   put 4 MiB and wait for their put before they wait on their window (plain and
 *   GLUCX_PUT_SYNC: no deadlock); a duplicate window is GLUCX_ERR_INVALID_ARG and does not fail
 *   the communicator; statistics count puts and placements; glucx_comm_wake (and a wake after
 *   `since`) interrupts a blocked window wait without failing anything.
 * - "window_threads": several threads per rank post puts and wait on windows at once; two
 *   threads waiting on one window take every put exactly once, each in posting order.
 * - "window_sync": a GLUCX_PUT_SYNC put does not complete before the receiver opened its window
 *   (a flag in shared memory set just before the window opens), a plain one does.
 * - "window_truncated": a put that does not fit the window fails every rank with
 *   GLUCX_ERR_TRUNCATED and a text naming slot, offset, length, window size and sender, for a
 *   window open at arrival and for one opened after a held rendezvous arrival; nothing is
 *   written into the window.
 * - "window_timeout": a window wait past its timeout fails the communicator with
 *   GLUCX_ERR_TIMEOUT ("Timed out", peer and slot named); every other rank fails with it too.
 * - "window_left": a window wait whose peer destroys its communicator without putting fails
 *   with GLUCX_ERR_ABORTED at once; a synchronous put whose receiver destroys its communicator
 *   with the put held fails the same way; glucx_comm_destroy with windows open and puts held
 *   (eager, bounced and held rendezvous, self puts copied) leaks nothing (ASan build), and a
 *   detached window is only freed.
 * - "window_hold": with GLUCX_WINDOW_HOLD=16K, a plain rendezvous put that arrives early past
 *   the budget keeps its descriptor (it completes only once the window opened), and eager puts
 *   piling up past it fail every rank with GLUCX_ERR_NO_MEMORY naming the limit.
 * - "window_killed": a SIGKILLed peer fails a blocked window wait with GLUCX_ERR_PEER_FAILED
 *   well before the communicator timeout.
 * - "window_destroy": glucx_window_destroy while a rendezvous put is being received into the
 *   window (its sender stopped with SIGSTOP) waits for it; past the communicator timeout it
 *   fails the communicator and nothing writes the buffer afterwards (tcp variant, where the
 *   transfer needs the stopped sender).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "support/util.h"

#define WAIT_MS glucx_test_ms(60000)
#define MIB ((size_t)1 << 20)

static uint64_t seed_of(int src, uint64_t slot, int k)
{
    return ((uint64_t)(unsigned)src << 44) ^ (slot << 12) ^ (uint64_t)(unsigned)k ^ 0x5eed;
}

static void *filled(size_t bytes, int src, uint64_t slot, int k)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL)
        ITEST_FAIL("out of memory (%zu bytes)", bytes);
    else
        glucx_test_fill_bytes(p, bytes, seed_of(src, slot, k));
    return p;
}

/* Whether bytes [at, at + bytes) of buf hold the pattern of (src, slot, k). */
static int check_msg(const char *what, const unsigned char *buf, size_t at, size_t bytes, int src,
                     uint64_t slot, int k)
{
    if (bytes == 0)
        return 0;
    unsigned char *want = malloc(bytes);
    if (want == NULL) {
        ITEST_FAIL("out of memory");
        return -1;
    }
    glucx_test_fill_bytes(want, bytes, seed_of(src, slot, k));
    int rc = 0;
    for (size_t i = 0; i < bytes; i++) {
        if (buf[at + i] != want[i]) {
            ITEST_FAIL("%s: byte %zu of put %d (%zu bytes at offset %zu from rank %d): expected "
                       "0x%02x, got 0x%02x",
                       what, i, k, bytes, at, src, want[i], buf[at + i]);
            rc = -1;
            break;
        }
    }
    free(want);
    return rc;
}

static int check_fill(const char *what, const unsigned char *buf, size_t from, size_t to,
                      unsigned char fill)
{
    for (size_t i = from; i < to; i++) {
        if (buf[i] != fill) {
            ITEST_FAIL("%s: byte %zu outside every put was written (0x%02x, fill 0x%02x)", what, i,
                       buf[i], fill);
            return -1;
        }
    }
    return 0;
}

/* Whether buf[0, bytes) is the pattern of (src, slot, k) (no report). */
static int same_as_put(const unsigned char *buf, size_t bytes, int src, uint64_t slot, int k)
{
    unsigned char *want = malloc(bytes);
    if (want == NULL)
        return 0;
    glucx_test_fill_bytes(want, bytes, seed_of(src, slot, k));
    int same = memcmp(buf, want, bytes) == 0;
    free(want);
    return same;
}

static int check_fill_quiet(const unsigned char *buf, size_t bytes, unsigned char fill)
{
    for (size_t i = 0; i < bytes; i++)
        if (buf[i] != fill)
            return 0;
    return 1;
}

/* Take the next message of win and check that it is (offset, bytes). */
static int take(glucx_window_t *win, const char *what, size_t offset, size_t bytes)
{
    size_t got_off = (size_t)-1, got_bytes = (size_t)-1;
    if (ITEST_STATUS(glucx_window_wait(win, WAIT_MS, NULL, &got_bytes, &got_off), GLUCX_OK,
                     "%s: window wait for the put of %zu bytes at offset %zu", what, bytes, offset))
        return -1;
    if (got_off != offset || got_bytes != bytes) {
        ITEST_FAIL("%s: window wait reported %zu bytes at offset %zu; expected %zu bytes at %zu "
                   "(posting order)",
                   what, got_bytes, got_off, bytes, offset);
        return -1;
    }
    return 0;
}

static int wait_free(glucx_request_t *req, const char *what)
{
    int rc = ITEST_STATUS(glucx_request_wait(req, WAIT_MS), GLUCX_OK, "wait for %s", what);
    glucx_request_free(req);
    return rc;
}

/* ---- case "window" ---- */

/* The placement test: sizes and offsets of the puts into one window, disjoint. */
static const struct {
    size_t bytes, offset;
} shapes[] = {
    {0, 0}, {1, 0}, {3, 5}, {4093, 11}, {65536, 4111}, {4 * MIB, 69651}, {0, 9}, {17, 4264339},
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))
#define SHAPE_WIN (4 * MIB + 69651 + 4096)

static int put_shapes(glucx_comm_t *comm, int dst, uint64_t slot, void **bufs,
                      glucx_request_t **reqs)
{
    const int rank = glucx_comm_rank(comm);
    for (size_t i = 0; i < NSHAPES; i++) {
        bufs[i] = filled(shapes[i].bytes, rank, slot, (int)i);
        if (bufs[i] == NULL ||
            ITEST_STATUS(glucx_iput(comm, shapes[i].bytes > 0 ? bufs[i] : NULL, shapes[i].bytes,
                                    dst, slot, shapes[i].offset, 0, &reqs[i]),
                         GLUCX_OK, "iput %zu of %zu bytes at %zu to rank %d", i, shapes[i].bytes,
                         shapes[i].offset, dst))
            return -1;
    }
    return 0;
}

static int check_shapes(const char *what, glucx_window_t *win, const unsigned char *buf, int src,
                        uint64_t slot)
{
    int rc = 0;
    for (size_t i = 0; i < NSHAPES && rc == 0; i++)
        rc = take(win, what, shapes[i].offset, shapes[i].bytes);
    for (size_t i = 0; i < NSHAPES && rc == 0; i++)
        rc = check_msg(what, buf, shapes[i].offset, shapes[i].bytes, src, slot, (int)i);
    /* every byte outside the puts still holds the fill */
    size_t pos = 0;
    for (size_t i = 0; i < NSHAPES && rc == 0; i++) {
        /* shapes are sorted by offset, apart from the zero-byte ones */
        if (shapes[i].bytes == 0)
            continue;
        rc = check_fill(what, buf, pos, shapes[i].offset, ITEST_FILL_BYTE);
        pos = shapes[i].offset + shapes[i].bytes;
    }
    if (rc == 0)
        rc = check_fill(what, buf, pos, SHAPE_WIN, ITEST_FILL_BYTE);
    if (rc == 0 && itest_guard_ok(buf, SHAPE_WIN, what) != 0)
        rc = -1;
    return rc;
}

/* Values at offsets, from the previous rank and from this rank itself. */
static int part_values(glucx_comm_t *comm, int early)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    const uint64_t slot = early ? 0x8000000000000011ull : 7, self_slot = slot + 1;
    const char *what = early ? "early values" : "values";
    unsigned char *wbuf = itest_alloc(SHAPE_WIN), *sbuf = itest_alloc(SHAPE_WIN);
    void *bufs[NSHAPES] = {0}, *self_bufs[NSHAPES] = {0};
    glucx_request_t *reqs[NSHAPES] = {0}, *self_reqs[NSHAPES] = {0};
    glucx_window_t *win = NULL, *self_win = NULL;
    int rc = wbuf == NULL || sbuf == NULL ? -1 : 0;
    if (rc == 0 && !early)
        rc = ITEST_STATUS(glucx_window_create(comm, prev, slot, wbuf, SHAPE_WIN, &win), GLUCX_OK,
                          "window from rank %d", prev) ||
             ITEST_STATUS(glucx_window_create(comm, rank, self_slot, sbuf, SHAPE_WIN, &self_win),
                          GLUCX_OK, "window from this rank");
    /* windows open everywhere (or, early: nowhere) before the puts */
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before the puts");
    if (rc == 0)
        rc = put_shapes(comm, next, slot, bufs, reqs) ||
             put_shapes(comm, rank, self_slot, self_bufs, self_reqs);
    if (early) {
        /* Plain puts complete without the receiver's window, even at rendezvous sizes. */
        for (size_t i = 0; i < NSHAPES && rc == 0; i++)
            rc = wait_free(reqs[i], "early put") || wait_free(self_reqs[i], "early self put");
        if (rc == 0)
            memset(reqs, 0, sizeof(reqs)), memset(self_reqs, 0, sizeof(self_reqs));
        if (rc == 0)
            rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier after the puts");
        if (rc == 0)
            rc =
                ITEST_STATUS(glucx_window_create(comm, prev, slot, wbuf, SHAPE_WIN, &win), GLUCX_OK,
                             "late window from rank %d", prev) ||
                ITEST_STATUS(glucx_window_create(comm, rank, self_slot, sbuf, SHAPE_WIN, &self_win),
                             GLUCX_OK, "late window from this rank");
    }
    if (rc == 0)
        rc = check_shapes(what, win, wbuf, prev, slot) ||
             check_shapes(what, self_win, sbuf, rank, self_slot);
    for (size_t i = 0; i < NSHAPES; i++) {
        if (reqs[i] != NULL && rc == 0)
            rc = wait_free(reqs[i], "put");
        else
            glucx_request_free(reqs[i]);
        if (self_reqs[i] != NULL && rc == 0)
            rc = wait_free(self_reqs[i], "self put");
        else
            glucx_request_free(self_reqs[i]);
        free(bufs[i]);
        free(self_bufs[i]);
    }
    /* nothing more came */
    if (rc == 0 && win != NULL)
        rc = ITEST_STATUS(glucx_window_wait(win, 0, NULL, NULL, NULL), GLUCX_INPROGRESS,
                          "%s: window wait with timeout 0 after the last put", what);
    glucx_window_destroy(win);
    glucx_window_destroy(self_win);
    free(wbuf);
    free(sbuf);
    return rc;
}

/* FIFO: many overlapping puts, eager and rendezvous; the final contents are the puts applied in
 * posting order (replayed here), every wait reports them in that order. */
#define FIFO_PUTS 120
#define FIFO_WIN (300 * 1024)

static void fifo_shape(int k, size_t *offset, size_t *bytes)
{
    if (k % 17 == 5) { /* rendezvous sizes, overlapping many small ones */
        *offset = (size_t)(k * 911) % 4096;
        *bytes = 100 * 1024 + (size_t)k;
    } else {
        *offset = (size_t)(k % 12) * 24 + (size_t)(k % 5);
        *bytes = 16 + (size_t)(k % 7) * 9;
    }
}

static int part_fifo(glucx_comm_t *comm, int early)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    const uint64_t slot = early ? 31 : 30;
    const char *what = early ? "fifo, window opened late" : "fifo, window open";
    unsigned char *wbuf = itest_alloc(FIFO_WIN), *model = malloc(FIFO_WIN);
    void *bufs[FIFO_PUTS] = {0};
    glucx_request_t *reqs[FIFO_PUTS] = {0};
    glucx_window_t *win = NULL;
    int rc = wbuf == NULL || model == NULL ? -1 : 0;
    if (rc == 0 && !early)
        rc = ITEST_STATUS(glucx_window_create(comm, prev, slot, wbuf, FIFO_WIN, &win), GLUCX_OK,
                          "%s: window", what);
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before the puts");
    for (int k = 0; k < FIFO_PUTS && rc == 0; k++) {
        size_t off, bytes;
        fifo_shape(k, &off, &bytes);
        bufs[k] = filled(bytes, rank, slot, k);
        rc = bufs[k] == NULL ||
             ITEST_STATUS(glucx_iput(comm, bufs[k], bytes, next, slot, off, 0, &reqs[k]), GLUCX_OK,
                          "%s: iput %d", what, k);
    }
    if (rc == 0 && early) {
        /* every put held at the receiver (plain ones complete), then the window opens */
        for (int k = 0; k < FIFO_PUTS && rc == 0; k++) {
            rc = wait_free(reqs[k], "fifo put");
            reqs[k] = NULL;
        }
        if (rc == 0)
            rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier after the puts");
        if (rc == 0)
            rc = ITEST_STATUS(glucx_window_create(comm, prev, slot, wbuf, FIFO_WIN, &win), GLUCX_OK,
                              "%s: window", what);
    }
    /* the model: the fill, then each put in order */
    memset(model, ITEST_FILL_BYTE, FIFO_WIN);
    for (int k = 0; k < FIFO_PUTS && rc == 0; k++) {
        size_t off, bytes;
        fifo_shape(k, &off, &bytes);
        glucx_test_fill_bytes(model + off, bytes, seed_of(prev, slot, k));
        rc = take(win, what, off, bytes);
    }
    for (size_t i = 0; i < FIFO_WIN && rc == 0; i++) {
        if (wbuf[i] != model[i]) {
            ITEST_FAIL("%s: byte %zu: expected 0x%02x (puts applied in posting order), got "
                       "0x%02x",
                       what, i, model[i], wbuf[i]);
            rc = -1;
        }
    }
    if (rc == 0 && itest_guard_ok(wbuf, FIFO_WIN, what) != 0)
        rc = -1;
    for (int k = 0; k < FIFO_PUTS; k++) {
        if (reqs[k] != NULL && rc == 0)
            rc = wait_free(reqs[k], "fifo put");
        else
            glucx_request_free(reqs[k]);
        free(bufs[k]);
    }
    glucx_window_destroy(win);
    free(wbuf);
    free(model);
    return rc;
}

/* Both ranks put 4 MiB and wait for their own put before they wait on their window: the data
 * must be placed by the put waits' progress (GLUCX_PUT_SYNC: a put completes only once placed). */
static int part_exchange(glucx_comm_t *comm, unsigned flags)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    const uint64_t slot = 40 + flags;
    const size_t bytes = 4 * MIB;
    unsigned char *wbuf = itest_alloc(bytes);
    void *sbuf = filled(bytes, rank, slot, 0);
    glucx_window_t *win = NULL;
    glucx_request_t *req = NULL;
    int rc = wbuf == NULL || sbuf == NULL ? -1 : 0;
    if (rc == 0)
        rc = ITEST_STATUS(glucx_window_create(comm, prev, slot, wbuf, bytes, &win), GLUCX_OK,
                          "exchange window");
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before the exchange");
    if (rc == 0)
        rc = ITEST_STATUS(glucx_iput(comm, sbuf, bytes, next, slot, 0, flags, &req), GLUCX_OK,
                          "exchange put (flags 0x%x)", flags);
    if (rc == 0) {
        rc = wait_free(req, flags ? "synchronous exchange put" : "exchange put");
        req = NULL;
    }
    if (rc == 0)
        rc =
            take(win, "exchange", 0, bytes) || check_msg("exchange", wbuf, 0, bytes, prev, slot, 0);
    glucx_request_free(req);
    glucx_window_destroy(win);
    free(wbuf);
    free(sbuf);
    return rc;
}

static int part_duplicate(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int prev = (rank + n - 1) % n;
    char a[8], b[8];
    glucx_window_t *w1 = NULL, *w2 = NULL;
    int rc = ITEST_STATUS(glucx_window_create(comm, prev, 55, a, sizeof(a), &w1), GLUCX_OK,
                          "first window for slot 55");
    if (rc == 0) {
        rc = ITEST_STATUS(glucx_window_create(comm, prev, 55, b, sizeof(b), &w2),
                          GLUCX_ERR_INVALID_ARG, "second window for (rank %d, slot 55)", prev);
        if (w2 != NULL) {
            ITEST_FAIL("the duplicate window was returned");
            glucx_window_destroy(w2);
        }
    }
    ITEST_STATUS(glucx_window_create(comm, n, 56, b, sizeof(b), &w2), GLUCX_ERR_INVALID_ARG,
                 "window for peer %d (out of range)", n);
    ITEST_STATUS(glucx_window_create(comm, prev, 57, NULL, 8, &w2), GLUCX_ERR_INVALID_ARG,
                 "window with a NULL buffer of 8 bytes");
    glucx_request_t *req = NULL;
    ITEST_STATUS(glucx_iput(comm, a, 8, rank, 58, SIZE_MAX - 4, 0, &req), GLUCX_ERR_INVALID_ARG,
                 "iput whose offset + bytes overflows");
    ITEST_STATUS(glucx_iput(comm, a, 8, rank, 58, 0, 0x80, &req), GLUCX_ERR_INVALID_ARG,
                 "iput with an unknown flag");
    glucx_window_destroy(w1);
    /* none of that failed the communicator: a window for the same slot opens again */
    if (rc == 0)
        rc = ITEST_STATUS(glucx_window_create(comm, prev, 55, a, sizeof(a), &w1), GLUCX_OK,
                          "window for slot 55 after the first was destroyed");
    glucx_window_destroy(w1);
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier after the invalid calls");
    return rc;
}

/* glucx_comm_wake interrupts a blocked window wait (GLUCX_INPROGRESS, nothing consumed, the
 * communicator healthy); a wake after the caller read the count (since) interrupts at once. */
typedef struct waker_arg {
    glucx_comm_t *comm;
    int64_t delay_ms;
} waker_arg_t;

static void *waker(void *p)
{
    waker_arg_t *wa = p;
    itest_sleep_ms(wa->delay_ms);
    glucx_comm_wake(wa->comm);
    return NULL;
}

static int part_wake(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    char buf[8], out[8] = "wakeup!";
    glucx_window_t *win = NULL;
    int rc = ITEST_STATUS(glucx_window_create(comm, prev, 60, buf, sizeof(buf), &win), GLUCX_OK,
                          "wake window");
    waker_arg_t wa = {comm, 200};
    pthread_t th;
    /* read before the waker starts: its wake cannot be missed however late this thread runs */
    unsigned since0 = glucx_comm_wake_count(comm);
    if (rc == 0 && pthread_create(&th, NULL, waker, &wa) != 0) {
        ITEST_FAIL("cannot start the waking thread");
        rc = -1;
    } else if (rc == 0) {
        int64_t t0 = itest_now_ns();
        glucx_status_t st = glucx_window_wait(win, WAIT_MS, &since0, NULL, NULL);
        int64_t ms = (itest_now_ns() - t0) / 1000000;
        pthread_join(th, NULL);
        rc = ITEST_STATUS(st, GLUCX_INPROGRESS, "window wait woken by glucx_comm_wake");
        ITEST_CHECK(ms < glucx_test_ms(20000), "the woken wait returned after %lld ms",
                    (long long)ms);
    }
    if (rc == 0) {
        unsigned since = glucx_comm_wake_count(comm);
        glucx_comm_wake(comm);
        rc = ITEST_STATUS(glucx_window_wait(win, WAIT_MS, &since, NULL, NULL), GLUCX_INPROGRESS,
                          "window wait with a wake after 'since'");
    }
    /* still healthy: a put arrives and is taken */
    glucx_request_t *req = NULL;
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier after the wakes") ||
             ITEST_STATUS(glucx_iput(comm, out, sizeof(out), next, 60, 0, 0, &req), GLUCX_OK,
                          "put after the wakes") ||
             take(win, "after the wakes", 0, sizeof(out)) || wait_free(req, "put after wakes");
    if (rc == 0)
        ITEST_CHECK(memcmp(buf, "wakeup!", 8) == 0, "got '%.7s'", buf);
    glucx_window_destroy(win);
    return rc;
}

int itest_case_window(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "window", glucx_test_ms(120000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    itest_check_transport(env, comm);
    glucx_stats_t s0, s1;
    glucx_stats_get(&s0);
    int rc = part_values(comm, 0);
    glucx_stats_get(&s1);
    /* every rank put NSHAPES to the next rank and NSHAPES to itself, and took as many */
    if (rc == 0) {
        uint64_t bytes = 0;
        for (size_t i = 0; i < NSHAPES; i++)
            bytes += shapes[i].bytes;
        ITEST_CHECK(s1.sends - s0.sends >= 2 * NSHAPES && s1.recvs - s0.recvs >= 2 * NSHAPES &&
                        s1.send_bytes - s0.send_bytes >= 2 * bytes &&
                        s1.recv_bytes - s0.recv_bytes >= 2 * bytes,
                    "statistics: %llu sends (%llu bytes), %llu receives (%llu bytes); expected "
                    "at least %zu of each (%llu bytes)",
                    (unsigned long long)(s1.sends - s0.sends),
                    (unsigned long long)(s1.send_bytes - s0.send_bytes),
                    (unsigned long long)(s1.recvs - s0.recvs),
                    (unsigned long long)(s1.recv_bytes - s0.recv_bytes), 2 * NSHAPES,
                    (unsigned long long)(2 * bytes));
    }
    if (rc == 0)
        rc = part_values(comm, 1);
    if (rc == 0)
        rc = part_fifo(comm, 0);
    if (rc == 0)
        rc = part_fifo(comm, 1);
    if (rc == 0)
        rc = part_exchange(comm, 0);
    if (rc == 0)
        rc = part_exchange(comm, GLUCX_PUT_SYNC);
    if (rc == 0)
        rc = part_duplicate(comm);
    if (rc == 0)
        rc = part_wake(comm);
    itest_close(ctx, store, comm);
    return rc;
}

/* ---- case "window_threads" ---- */

#define THREADS 4
#define THREAD_PUTS 40

typedef struct thread_arg {
    glucx_comm_t *comm;
    int index;
    int rc;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *ta = p;
    glucx_comm_t *comm = ta->comm;
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    const uint64_t slot = 1000 + (uint64_t)ta->index;
    const size_t stride = 70000, win_bytes = stride * THREAD_PUTS;
    unsigned char *wbuf = itest_alloc(win_bytes);
    void *bufs[THREAD_PUTS] = {0};
    glucx_request_t *reqs[THREAD_PUTS] = {0};
    glucx_window_t *win = NULL;
    ta->rc = -1;
    if (wbuf == NULL || ITEST_STATUS(glucx_window_create(comm, prev, slot, wbuf, win_bytes, &win),
                                     GLUCX_OK, "thread %d: window", ta->index))
        goto out;
    int rc = 0;
    /* puts to the next rank, interleaved with waits on this rank's window; some land before
     * the peer's thread opened its window */
    for (int k = 0; k < THREAD_PUTS && rc == 0; k++) {
        size_t bytes = (k % 4 == 3) ? stride : (size_t)(k * 37 % 1000);
        bufs[k] = filled(bytes, rank, slot, k);
        rc = bufs[k] == NULL ||
             ITEST_STATUS(glucx_iput(comm, bufs[k], bytes, next, slot, (size_t)k * stride,
                                     (k % 3 == 0) ? GLUCX_PUT_SYNC : 0, &reqs[k]),
                          GLUCX_OK, "thread %d: iput %d", ta->index, k);
        if (rc == 0 && k % 2 == 1) {
            int j = k / 2;
            size_t jb = (j % 4 == 3) ? stride : (size_t)(j * 37 % 1000);
            rc = take(win, "threads", (size_t)j * stride, jb);
        }
    }
    for (int j = THREAD_PUTS / 2; j < THREAD_PUTS && rc == 0; j++) {
        size_t jb = (j % 4 == 3) ? stride : (size_t)(j * 37 % 1000);
        rc = take(win, "threads", (size_t)j * stride, jb);
    }
    for (int j = 0; j < THREAD_PUTS && rc == 0; j++) {
        size_t jb = (j % 4 == 3) ? stride : (size_t)(j * 37 % 1000);
        rc = check_msg("threads", wbuf, (size_t)j * stride, jb, prev, slot, j);
    }
    for (int k = 0; k < THREAD_PUTS; k++) {
        if (reqs[k] != NULL && rc == 0)
            rc = wait_free(reqs[k], "thread put");
        else
            glucx_request_free(reqs[k]);
        free(bufs[k]);
    }
    ta->rc = rc;
out:
    glucx_window_destroy(win);
    free(wbuf);
    return NULL;
}

/* Several threads wait on one window: together they take every put once, each in posting
 * order, and none returns anything but a message (a message another waiter took first is no
 * wake-up: that race once returned GLUCX_INPROGRESS under ASan in CI). */
#define SHARED_PUTS 4000
#define SHARED_WAITERS 4
#define SHARED_ROUNDS 8

typedef struct shared_waiter {
    glucx_window_t *win;
    size_t offsets[SHARED_PUTS];
    int taken;
    int rc;
} shared_waiter_t;

static void *shared_wait_main(void *p)
{
    shared_waiter_t *sw = p;
    sw->rc = 0;
    for (int k = 0; k < SHARED_PUTS / SHARED_WAITERS && sw->rc == 0; k++) {
        size_t off = 0, bytes = 0;
        sw->rc = ITEST_STATUS(glucx_window_wait(sw->win, WAIT_MS, NULL, &bytes, &off), GLUCX_OK,
                              "shared window wait %d", k);
        if (sw->rc == 0)
            sw->offsets[sw->taken++] = off;
    }
    return NULL;
}

static int part_shared_window(glucx_comm_t *comm, int round)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    const uint64_t slot = 2000 + (uint64_t)round;
    const size_t stride = 16;
    unsigned char *wbuf = itest_alloc(stride * SHARED_PUTS);
    void *bufs[SHARED_PUTS] = {0};
    glucx_request_t *reqs[SHARED_PUTS] = {0};
    shared_waiter_t sw[SHARED_WAITERS];
    pthread_t th[SHARED_WAITERS];
    int started = 0, rc = wbuf == NULL ? -1 : 0;
    memset(sw, 0, sizeof(sw));
    if (rc == 0)
        rc = ITEST_STATUS(
            glucx_window_create(comm, prev, slot, wbuf, stride * SHARED_PUTS, &sw[0].win), GLUCX_OK,
            "shared window");
    for (int i = 1; i < SHARED_WAITERS; i++)
        sw[i].win = sw[0].win;
    for (int i = 0; i < SHARED_WAITERS && rc == 0; i++) {
        if (pthread_create(&th[i], NULL, shared_wait_main, &sw[i]) != 0) {
            ITEST_FAIL("cannot start waiter %d", i);
            rc = -1;
        } else {
            started++;
        }
    }
    for (int k = 0; k < SHARED_PUTS && rc == 0; k++) {
        bufs[k] = filled(stride, rank, slot, k);
        rc = bufs[k] == NULL || ITEST_STATUS(glucx_iput(comm, bufs[k], stride, next, slot,
                                                        (size_t)k * stride, 0, &reqs[k]),
                                             GLUCX_OK, "shared put %d", k);
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    int seen[SHARED_PUTS] = {0};
    for (int i = 0; i < started && rc == 0; i++) {
        rc = sw[i].rc;
        for (int j = 0; j < sw[i].taken; j++) {
            size_t k = sw[i].offsets[j] / stride;
            ITEST_CHECK(k < SHARED_PUTS && !seen[k] &&
                            (j == 0 || sw[i].offsets[j - 1] < sw[i].offsets[j]),
                        "waiter %d took offset %zu (its %d-th), out of order or twice", i,
                        sw[i].offsets[j], j);
            if (k < SHARED_PUTS)
                seen[k] = 1;
        }
    }
    for (int k = 0; k < SHARED_PUTS && rc == 0; k++)
        rc = check_msg("shared window", wbuf, (size_t)k * stride, stride, prev, slot, k);
    for (int k = 0; k < SHARED_PUTS; k++) {
        if (reqs[k] != NULL && rc == 0)
            rc = wait_free(reqs[k], "shared put");
        else
            glucx_request_free(reqs[k]);
        free(bufs[k]);
    }
    glucx_window_destroy(sw[0].win);
    free(wbuf);
    return rc;
}

int itest_case_window_threads(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "window-threads", glucx_test_ms(120000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    thread_arg_t ta[THREADS];
    pthread_t th[THREADS];
    int started = 0, rc = 0;
    for (int i = 0; i < THREADS; i++) {
        ta[i] = (thread_arg_t){comm, i, -1};
        if (pthread_create(&th[i], NULL, thread_main, &ta[i]) != 0) {
            ITEST_FAIL("cannot start thread %d", i);
            rc = -1;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        rc |= ta[i].rc;
    }
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier after the threads");
    for (int round = 0; round < SHARED_ROUNDS && rc == 0; round++)
        rc = part_shared_window(comm, round);
    itest_close(ctx, store, comm);
    return rc;
}

/* ---- case "window_sync" ---- */

int itest_case_window_sync(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    (void)size;
    if (itest_open(env, rank, size, "window-sync", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    static const size_t sizes[] = {8, MIB, 0};
    const int nsizes = 3;
    const uint64_t slot = 77;
    int rc = 0;
    if (rank == 0) {
        /* sync puts of each size, then a plain one: the sync ones complete only after the flag */
        void *bufs[3];
        glucx_request_t *reqs[4] = {0};
        for (int i = 0; i < nsizes && rc == 0; i++) {
            bufs[i] = filled(sizes[i], 0, slot, i);
            rc = bufs[i] == NULL ||
                 ITEST_STATUS(
                     glucx_iput(comm, bufs[i], sizes[i], 1, slot, i * 16, GLUCX_PUT_SYNC, &reqs[i]),
                     GLUCX_OK, "synchronous iput of %zu bytes", sizes[i]);
        }
        char plain[8] = "plain!!";
        if (rc == 0)
            rc = ITEST_STATUS(glucx_iput(comm, plain, sizeof(plain), 1, slot + 1, 0, 0, &reqs[3]),
                              GLUCX_OK, "plain iput");
        __atomic_store_n(&sh->counter[0], 1, __ATOMIC_RELEASE); /* posted */
        int plain_before_flag = 0;
        int64_t end = itest_now_ns() + WAIT_MS * 1000000;
        /* the plain put first: it must not need rank 1's window */
        static const int order[4] = {3, 0, 1, 2};
        for (int o = 0; o < 4 && rc == 0; o++) {
            const int i = order[o];
            glucx_status_t st;
            while ((st = glucx_request_test(reqs[i])) == GLUCX_INPROGRESS && itest_now_ns() < end)
                ;
            int flag = __atomic_load_n(&sh->flag, __ATOMIC_ACQUIRE);
            rc = ITEST_STATUS(st, GLUCX_OK, "put %d", i);
            if (i < nsizes)
                ITEST_CHECK(flag == 1,
                            "the synchronous put of %zu bytes completed before rank 1 opened "
                            "its window",
                            sizes[i]);
            else
                plain_before_flag = flag == 0;
        }
        for (int i = 0; i < 4; i++)
            glucx_request_free(reqs[i]);
        for (int i = 0; i < nsizes; i++)
            free(bufs[i]);
        /* the plain put completed on its own (rank 1 opens no window for slot + 1 until the
         * flag is up, and waits for it only after that) */
        ITEST_CHECK(plain_before_flag || rc != 0,
                    "the plain put completed only after rank 1 opened its windows");
    } else if (rank == 1) {
        /* keep progressing (so the puts arrive and are held) for a while, then open */
        int64_t end = itest_now_ns() + WAIT_MS * 1000000;
        while (__atomic_load_n(&sh->counter[0], __ATOMIC_ACQUIRE) == 0 && itest_now_ns() < end)
            itest_sleep_ms(1);
        char other[8];
        glucx_window_t *idle = NULL, *win = NULL, *pwin = NULL;
        rc = ITEST_STATUS(glucx_window_create(comm, 0, 99, other, sizeof(other), &idle), GLUCX_OK,
                          "idle window");
        int64_t until = itest_now_ns() + 700 * 1000000LL;
        while (rc == 0 && itest_now_ns() < until)
            rc = ITEST_STATUS(glucx_window_wait(idle, 0, NULL, NULL, NULL), GLUCX_INPROGRESS,
                              "polling an idle window");
        unsigned char *wbuf = itest_alloc(MIB + 64);
        char plain[8];
        __atomic_store_n(&sh->flag, 1, __ATOMIC_RELEASE);
        if (rc == 0 && wbuf != NULL)
            rc = ITEST_STATUS(glucx_window_create(comm, 0, slot, wbuf, MIB + 64, &win), GLUCX_OK,
                              "window") ||
                 ITEST_STATUS(glucx_window_create(comm, 0, slot + 1, plain, sizeof(plain), &pwin),
                              GLUCX_OK, "plain window");
        for (int i = 0; i < nsizes && rc == 0; i++)
            rc = take(win, "sync", (size_t)i * 16, sizes[i]);
        for (int i = 0; i < nsizes && rc == 0; i++)
            rc = check_msg("sync", wbuf, (size_t)i * 16, sizes[i], 0, slot, i);
        if (rc == 0)
            rc = take(pwin, "sync plain", 0, sizeof(plain));
        if (rc == 0)
            ITEST_CHECK(memcmp(plain, "plain!!", 8) == 0, "plain put: got '%.7s'", plain);
        glucx_window_destroy(win);
        glucx_window_destroy(pwin);
        glucx_window_destroy(idle);
        free(wbuf);
    }
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "final barrier");
    itest_close(ctx, store, comm);
    return rc;
}

/* ---- case "window_truncated" ---- */

static int expect_truncated(glucx_comm_t *comm, glucx_status_t st, const char *what, int sender,
                            uint64_t slot, size_t offset, size_t length, size_t win_bytes)
{
    if (ITEST_STATUS(st, GLUCX_ERR_TRUNCATED, "%s", what))
        return -1;
    char text[1024], want[5][64];
    glucx_comm_last_error(comm, text, sizeof(text));
    snprintf(want[0], sizeof(want[0]), "slot %llu", (unsigned long long)slot);
    snprintf(want[1], sizeof(want[1]), "offset %zu", offset);
    snprintf(want[2], sizeof(want[2]), "length %zu", length);
    snprintf(want[3], sizeof(want[3]), "window size %zu", win_bytes);
    snprintf(want[4], sizeof(want[4]), "from rank %d", sender);
    for (int i = 0; i < 5; i++)
        if (strstr(text, want[i]) == NULL) {
            ITEST_FAIL("%s: the error text does not say '%s': \"%s\"", what, want[i], text);
            return -1;
        }
    return 0;
}

static int truncated_round(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store,
                           int rank, int size, int late)
{
    glucx_comm_t *comm;
    if (itest_comm(ctx, store, rank, size, late ? "window-trunc-late" : "window-trunc",
                   glucx_test_ms(60000), &comm) != GLUCX_OK)
        return -1;
    (void)env;
    /* Everyone has finished connecting before the failure: a rank still inside
     * glucx_comm_create when the failure notice comes fails its create instead. */
    if (ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before the put") != 0) {
        glucx_comm_destroy(comm);
        return -1;
    }
    const uint64_t slot = late ? 901 : 900;
    const size_t win_bytes = 100, offset = late ? 0 : 50, length = late ? 2 * MIB : 64;
    int rc = 0;
    if (rank == 0) {
        void *buf = filled(length, 0, slot, 0);
        glucx_request_t *req = NULL;
        rc = buf == NULL || ITEST_STATUS(glucx_iput(comm, buf, length, 1, slot, offset,
                                                    late ? GLUCX_PUT_SYNC : 0, &req),
                                         GLUCX_OK, "the put that does not fit");
        /* rank 0 learns through the failure notice; its own window wait fails with it */
        char other[4];
        glucx_window_t *w = NULL;
        if (rc == 0)
            rc = ITEST_STATUS(glucx_window_create(comm, 1, slot + 10, other, 4, &w), GLUCX_OK,
                              "window that waits");
        if (rc == 0)
            rc = expect_truncated(comm, glucx_window_wait(w, WAIT_MS, NULL, NULL, NULL),
                                  "rank 0's window wait", 0, slot, offset, length, win_bytes);
        if (req != NULL) {
            glucx_status_t st = glucx_request_wait(req, WAIT_MS);
            ITEST_CHECK(st != GLUCX_OK || !late,
                        "the synchronous put that did not fit completed with GLUCX_OK");
            glucx_request_free(req);
        }
        glucx_window_destroy(w);
        free(buf);
    } else if (rank == 1) {
        unsigned char *wbuf = itest_alloc(win_bytes);
        glucx_window_t *w = NULL;
        if (late) { /* the put arrives and is held first */
            glucx_window_t *idle = NULL;
            char x[4];
            rc = ITEST_STATUS(glucx_window_create(comm, 0, 7777, x, 4, &idle), GLUCX_OK, "idle");
            int64_t until = itest_now_ns() + 500 * 1000000LL;
            while (rc == 0 && itest_now_ns() < until)
                glucx_window_wait(idle, 0, NULL, NULL, NULL);
            glucx_window_destroy(idle);
        }
        glucx_status_t st = wbuf == NULL ? GLUCX_ERR_NO_MEMORY
                                         : glucx_window_create(comm, 0, slot, wbuf, win_bytes, &w);
        if (st == GLUCX_OK)
            st = glucx_window_wait(w, WAIT_MS, NULL, NULL, NULL);
        rc |=
            expect_truncated(comm, st, "the receiver's window", 0, slot, offset, length, win_bytes);
        if (wbuf != NULL)
            rc |= check_fill("truncated window", wbuf, 0, win_bytes, ITEST_FILL_BYTE) ||
                  itest_guard_ok(wbuf, win_bytes, "truncated window") != 0;
        glucx_window_destroy(w);
        free(wbuf);
    } else {
        rc = expect_truncated(comm, glucx_barrier(comm, NULL), "a bystander's barrier", 0, slot,
                              offset, length, win_bytes);
    }
    glucx_comm_destroy(comm);
    return rc;
}

int itest_case_window_truncated(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "window-trunc-warmup", glucx_test_ms(60000), &ctx, &store,
                   &comm) != GLUCX_OK)
        return -1;
    glucx_comm_destroy(comm);
    int rc = truncated_round(env, ctx, store, rank, size, 0);
    rc |= truncated_round(env, ctx, store, rank, size, 1);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}

/* ---- case "window_timeout" ---- */

int itest_case_window_timeout(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "window-timeout", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    const int64_t op_ms = 300;
    const uint64_t slot = 4242;
    int rc = 0;
    if (rank == 0) {
        char buf[16];
        glucx_window_t *w = NULL;
        rc = ITEST_STATUS(glucx_window_create(comm, size - 1, slot, buf, sizeof(buf), &w), GLUCX_OK,
                          "window");
        if (rc == 0) {
            int64_t t0 = itest_now_ns();
            glucx_status_t st = glucx_window_wait(w, op_ms, NULL, NULL, NULL);
            int64_t ms = (itest_now_ns() - t0) / 1000000;
            rc = ITEST_STATUS(st, GLUCX_ERR_TIMEOUT, "window wait of %lld ms nobody puts into",
                              (long long)op_ms);
            ITEST_CHECK(ms >= op_ms * 8 / 10 && ms < glucx_test_ms(10 * op_ms),
                        "the window wait returned after %lld ms (timeout %lld ms)", (long long)ms,
                        (long long)op_ms);
            const char *text = glucx_last_error();
            char peer[32], sl[32];
            snprintf(peer, sizeof(peer), "rank %d", size - 1);
            snprintf(sl, sizeof(sl), "slot %llu", (unsigned long long)slot);
            ITEST_CHECK(strstr(text, "Timed out") != NULL && strstr(text, peer) != NULL &&
                            strstr(text, sl) != NULL,
                        "the timeout text does not say 'Timed out', '%s' and '%s': \"%s\"", peer,
                        sl, text);
            /* the communicator failed: later waits and puts fail at once */
            glucx_request_t *req = NULL;
            ITEST_STATUS(glucx_window_wait(w, WAIT_MS, NULL, NULL, NULL), GLUCX_ERR_TIMEOUT,
                         "window wait after the timeout");
            ITEST_STATUS(glucx_iput(comm, buf, 4, size - 1, slot, 0, 0, &req), GLUCX_ERR_TIMEOUT,
                         "iput after the timeout");
        }
        glucx_window_destroy(w);
    } else {
        /* the others learn of it from the failure notice, long before their own timeout */
        int64_t t0 = itest_now_ns();
        glucx_status_t st = glucx_barrier(comm, NULL);
        int64_t ms = (itest_now_ns() - t0) / 1000000;
        rc = ITEST_STATUS(st, GLUCX_ERR_TIMEOUT, "barrier while rank 0's window wait times out");
        ITEST_CHECK(ms < glucx_test_ms(20000),
                    "the barrier failed %lld ms after it started (communicator timeout %lld ms): "
                    "rank 0's failure did not end it",
                    (long long)ms, (long long)glucx_test_ms(60000));
        if (st == GLUCX_ERR_TIMEOUT)
            ITEST_CHECK(strstr(glucx_last_error(), "Timed out") != NULL,
                        "the text does not carry rank 0's: \"%s\"", glucx_last_error());
    }
    itest_close(ctx, store, comm);
    return rc;
}

/* ---- case "window_left" ---- */

int itest_case_window_left(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    (void)size;
    if (itest_open(env, rank, size, "window-left", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    int rc = 0;
    /* 1: rank 0 waits on a window rank 1 never puts into; rank 1 destroys its communicator */
    if (rank == 0) {
        char buf[8];
        glucx_window_t *w = NULL;
        rc =
            ITEST_STATUS(glucx_window_create(comm, 1, 5, buf, sizeof(buf), &w), GLUCX_OK, "window");
        if (rc == 0) {
            int64_t t0 = itest_now_ns();
            glucx_status_t st = glucx_window_wait(w, WAIT_MS, NULL, NULL, NULL);
            int64_t ms = (itest_now_ns() - t0) / 1000000;
            rc = ITEST_STATUS(st, GLUCX_ERR_ABORTED, "window wait whose peer left");
            ITEST_CHECK(ms < glucx_test_ms(10000), "the wait ended %lld ms later", (long long)ms);
            ITEST_CHECK(strstr(glucx_last_error(), "rank 1 destroyed its communicator") != NULL &&
                            strstr(glucx_last_error(), "slot 5") != NULL,
                        "text: \"%s\"", glucx_last_error());
        }
        glucx_window_destroy(w);
    } else {
        itest_sleep_ms(200);
    }
    glucx_comm_destroy(comm);
    comm = NULL;

    /* 2: rank 0's synchronous put is held at rank 1 (no window); rank 1 destroys its
     * communicator with it, with puts held of every kind and windows still open */
    if (itest_comm(ctx, store, rank, size, "window-left-2", glucx_test_ms(60000), &comm) !=
        GLUCX_OK)
        return -1;
    const size_t big = MIB;
    void *a = filled(big, rank, 1, 0), *b = filled(100, rank, 2, 0), *c = filled(big, rank, 3, 0);
    glucx_request_t *rs[6] = {0};
    if (a == NULL || b == NULL || c == NULL)
        rc = -1;
    if (rc == 0 && rank == 0) {
        rc = ITEST_STATUS(glucx_iput(comm, a, big, 1, 1, 0, GLUCX_PUT_SYNC, &rs[0]), GLUCX_OK,
                          "sync put") ||
             ITEST_STATUS(glucx_iput(comm, b, 100, 1, 2, 0, 0, &rs[1]), GLUCX_OK, "eager put") ||
             ITEST_STATUS(glucx_iput(comm, c, big, 1, 3, 0, 0, &rs[2]), GLUCX_OK, "bounced put");
        for (int i = 1; i < 3 && rc == 0; i++)
            rc = ITEST_STATUS(glucx_request_wait(rs[i], WAIT_MS), GLUCX_OK, "plain put %d", i);
        __atomic_store_n(&sh->counter[1], 1, __ATOMIC_RELEASE);
        glucx_status_t st = glucx_request_wait(rs[0], WAIT_MS);
        rc |= ITEST_STATUS(st, GLUCX_ERR_ABORTED,
                           "synchronous put held by a rank that destroyed its communicator");
        if (st == GLUCX_ERR_ABORTED)
            ITEST_CHECK(strstr(glucx_last_error(), "before placing") != NULL, "text: \"%s\"",
                        glucx_last_error());
    } else if (rc == 0 && rank == 1) {
        /* self puts (held as copies), a window left open, one with a placed message */
        char w1[16], w2[16];
        glucx_window_t *open1 = NULL, *open2 = NULL;
        rc = ITEST_STATUS(glucx_iput(comm, b, 100, 1, 8, 0, 0, &rs[3]), GLUCX_OK, "self put") ||
             ITEST_STATUS(glucx_iput(comm, c, big, 1, 9, 0, 0, &rs[4]), GLUCX_OK, "big self put") ||
             ITEST_STATUS(glucx_iput(comm, b, 16, 1, 10, 0, 0, &rs[5]), GLUCX_OK, "placed put");
        if (rc == 0)
            rc = ITEST_STATUS(glucx_window_create(comm, 0, 77, w1, sizeof(w1), &open1), GLUCX_OK,
                              "window left open") ||
                 ITEST_STATUS(glucx_window_create(comm, 1, 10, w2, sizeof(w2), &open2), GLUCX_OK,
                              "window with a message");
        for (int i = 3; i < 6 && rc == 0; i++)
            rc = ITEST_STATUS(glucx_request_wait(rs[i], WAIT_MS), GLUCX_OK, "self put %d", i);
        int64_t end = itest_now_ns() + WAIT_MS * 1000000;
        while (rc == 0 && __atomic_load_n(&sh->counter[1], __ATOMIC_ACQUIRE) == 0 &&
               itest_now_ns() < end)
            glucx_window_wait(open1, 0, NULL, NULL, NULL);
        /* progress a little more, so rank 0's three puts have arrived and are held */
        int64_t until = itest_now_ns() + 300 * 1000000LL;
        while (rc == 0 && itest_now_ns() < until)
            glucx_window_wait(open1, 0, NULL, NULL, NULL);
        glucx_comm_destroy(comm);
        comm = NULL;
        /* detached windows: waits refuse, destroy frees */
        ITEST_STATUS(glucx_window_wait(open1, 0, NULL, NULL, NULL), GLUCX_ERR_INVALID_ARG,
                     "window wait after glucx_comm_destroy");
        glucx_window_destroy(open1);
        glucx_window_destroy(open2);
    }
    for (int i = 0; i < 6; i++)
        glucx_request_free(rs[i]);
    glucx_comm_destroy(comm);
    free(a);
    free(b);
    free(c);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}

/* ---- case "window_killed" ---- */

#define KILL_TIMEOUT_MS 20000

int itest_case_window_killed(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open_killed(env, rank, size, "window-killed", glucx_test_ms(KILL_TIMEOUT_MS), &ctx,
                          &store, &comm) != GLUCX_OK)
        return -1;
    int rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "warm-up barrier");
    if (rank == 1) {
        itest_sleep_ms(300);
        __atomic_store_n(&sh->t_ns, itest_now_ns(), __ATOMIC_SEQ_CST);
        raise(SIGKILL);
    }
    char buf[64];
    glucx_window_t *w = NULL;
    if (rc == 0)
        rc =
            ITEST_STATUS(glucx_window_create(comm, 1, 3, buf, sizeof(buf), &w), GLUCX_OK, "window");
    glucx_status_t st = rc == 0 ? glucx_window_wait(w, -1, NULL, NULL, NULL) : GLUCX_ERR_ABORTED;
    int64_t t_err = itest_now_ns(), t_death = __atomic_load_n(&sh->t_ns, __ATOMIC_SEQ_CST);
    int64_t ms = t_death != 0 ? (t_err - t_death) / 1000000 : -1;
    sh->status[rank] = st;
    sh->elapsed_ms[rank] = ms;
    snprintf(sh->text[rank], sizeof(sh->text[rank]), "%s", glucx_last_error());
    if (rc == 0) {
        rc = ITEST_STATUS(st, GLUCX_ERR_PEER_FAILED, "window wait while rank 1 is killed");
        /* well before the communicator timeout */
        ITEST_CHECK(t_death != 0 && ms < glucx_test_ms(KILL_TIMEOUT_MS) / 4,
                    "the window wait failed %lld ms after the kill (timeout %lld ms)",
                    (long long)ms, (long long)glucx_test_ms(KILL_TIMEOUT_MS));
        itest_note("window wait: %s %lld ms after the kill: %s", glucx_status_string(st),
                   (long long)ms, sh->text[rank]);
    }
    glucx_window_destroy(w);
    itest_close(ctx, store, comm);
    __atomic_store_n(&sh->done[rank], rc == 0 && itest_failures() == 0 ? 1 : 2, __ATOMIC_SEQ_CST);
    return rc;
}

/* ---- case "window_destroy" ---- */

typedef struct resume_arg {
    itest_shared_t *sh;
    pid_t pid;
    int64_t after_ms;
} resume_arg_t;

static void *resume_later(void *p)
{
    resume_arg_t *ra = p;
    itest_sleep_ms(ra->after_ms);
    __atomic_store_n(&ra->sh->counter[5], 1, __ATOMIC_RELEASE); /* resumed */
    kill(ra->pid, SIGCONT);
    return NULL;
}

/* Rank 0 puts @p bytes into rank 1's window and stops itself (SIGSTOP) once the put is posted;
 * rank 1 lets the transfer start, then destroys the window while it is under way. */
static int destroy_round(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store,
                         int rank, int size, int past_timeout)
{
    itest_shared_t *sh = env->shared;
    const int tcp = strcmp(env->variant, "tcp") == 0;
    const int64_t comm_ms = glucx_test_ms(past_timeout ? 3000 : 60000);
    glucx_comm_t *comm;
    /* both ranks start creating the communicator together (its timeout is short) */
    __atomic_fetch_add(&sh->counter[6], 1, __ATOMIC_ACQ_REL);
    int64_t start_end = itest_now_ns() + WAIT_MS * 1000000;
    while (__atomic_load_n(&sh->counter[6], __ATOMIC_ACQUIRE) < 2 * (1 + past_timeout) &&
           itest_now_ns() < start_end)
        itest_sleep_ms(1);
    if (itest_comm(ctx, store, rank, size, past_timeout ? "window-destroy-2" : "window-destroy",
                   comm_ms, &comm) != GLUCX_OK)
        return -1;
    const size_t bytes = 64 * MIB;
    const uint64_t slot = 12;
    /* A first rendezvous put lets UCX resolve the endpoints (its announcement then leaves
     * without the receiver's help) */
    int rc = part_exchange(comm, GLUCX_PUT_SYNC);
    __atomic_store_n(&sh->counter[4], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sh->counter[5], 0, __ATOMIC_RELEASE);
    if (rank == 0) {
        sh->hash[0][0] = (uint64_t)getpid();
        void *buf = filled(bytes, 0, slot, 0);
        glucx_request_t *req = NULL;
        int64_t end = itest_now_ns() + WAIT_MS * 1000000;
        while (__atomic_load_n(&sh->counter[3], __ATOMIC_ACQUIRE) != 1 + past_timeout &&
               itest_now_ns() < end)
            itest_sleep_ms(1);
        rc = buf == NULL ||
             ITEST_STATUS(glucx_iput(comm, buf, bytes, 1, slot, 0, 0, &req), GLUCX_OK, "the put");
        /* the announcement goes out (the put cannot complete: rank 1 does not progress) */
        int64_t until = itest_now_ns() + 200 * 1000000LL;
        while (rc == 0 && itest_now_ns() < until)
            glucx_request_test(req);
        __atomic_store_n(&sh->counter[4], 1, __ATOMIC_RELEASE);
        raise(SIGSTOP); /* rank 1 resumes us */
        glucx_status_t st = req != NULL ? glucx_request_wait(req, WAIT_MS) : GLUCX_ERR_ABORTED;
        if (!past_timeout)
            rc |= ITEST_STATUS(st, GLUCX_OK, "the put whose window was destroyed meanwhile");
        else
            ITEST_CHECK(st != GLUCX_OK || !tcp,
                        "the put completed although rank 1's destroy gave up on it");
        glucx_request_free(req);
        free(buf);
    } else if (rank == 1) {
        unsigned char *wbuf = itest_alloc(bytes);
        glucx_window_t *w = NULL;
        rc = wbuf == NULL ||
             ITEST_STATUS(glucx_window_create(comm, 0, slot, wbuf, bytes, &w), GLUCX_OK, "window");
        __atomic_store_n(&sh->counter[3], 1 + past_timeout, __ATOMIC_RELEASE);
        int64_t end = itest_now_ns() + WAIT_MS * 1000000;
        while (rc == 0 && __atomic_load_n(&sh->counter[4], __ATOMIC_ACQUIRE) == 0 &&
               itest_now_ns() < end)
            itest_sleep_ms(1);
        /* progress: the announcement arrives and the transfer starts (it then needs the
         * stopped sender over tcp; cma reads a stopped process's memory and may finish) */
        int placed = 0;
        int64_t until = itest_now_ns() + 300 * 1000000LL;
        while (rc == 0 && !placed && itest_now_ns() < until) {
            size_t got = 0;
            glucx_status_t st = glucx_window_wait(w, 0, NULL, &got, NULL);
            placed = st == GLUCX_OK;
            if (st != GLUCX_OK && st != GLUCX_INPROGRESS)
                rc = ITEST_STATUS(st, GLUCX_INPROGRESS, "polling the window");
        }
        resume_arg_t ra = {sh, (pid_t)sh->hash[0][0], past_timeout ? 5 * comm_ms / 2 : 500};
        pthread_t th;
        int resumer = pthread_create(&th, NULL, resume_later, &ra) == 0;
        if (!resumer) {
            kill(ra.pid, SIGCONT);
            ITEST_FAIL("cannot start the resuming thread");
            rc = -1;
        }
        glucx_window_destroy(w);
        int resumed = __atomic_load_n(&sh->counter[5], __ATOMIC_ACQUIRE);
        /* The destroy returned: the put is all in the buffer (received before or while the
         * destroy waited) or not at all (not started: held for the next window); never part. */
        const int whole = placed || same_as_put(wbuf, bytes, 0, slot, 0);
        const int untouched = !whole && check_fill_quiet(wbuf, bytes, ITEST_FILL_BYTE);
        itest_note("%s: destroy returned %s the sender was resumed; the put was %s", env->variant,
                   resumed ? "after" : "before",
                   placed  ? "placed before the destroy"
                   : whole ? "received by then"
                           : "not in the buffer (not started, or cut off)");
        if (rc == 0 && !whole && !untouched) {
            ITEST_FAIL("after the window destroy the buffer holds part of the put");
            rc = -1;
        }
        glucx_window_t *w2 = NULL;
        unsigned char *wbuf2 = NULL;
        if (rc == 0 && !past_timeout) {
            ITEST_CHECK(!tcp || placed || (resumed && whole),
                        "tcp: the window destroy returned while the transfer into it needed the "
                        "stopped sender");
            if (untouched) {
                /* held again: the next window for (rank 0, slot) gets it */
                wbuf2 = itest_alloc(bytes);
                rc = wbuf2 == NULL ||
                     ITEST_STATUS(glucx_window_create(comm, 0, slot, wbuf2, bytes, &w2), GLUCX_OK,
                                  "second window") ||
                     take(w2, "held for the second window", 0, bytes) ||
                     check_msg("second window", wbuf2, 0, bytes, 0, slot, 0);
            }
        } else if (rc == 0 && tcp) {
            char text[1024];
            glucx_comm_last_error(comm, text, sizeof(text));
            ITEST_CHECK(!placed && !resumed && strstr(text, "window_destroy") != NULL,
                        "destroy past the timeout: placed %d, resumed %d, text \"%s\"", placed,
                        resumed, text);
            ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_ERR_TIMEOUT,
                         "barrier after the destroy gave up");
        }
        /* nothing writes the buffer once the destroy returned, resumed sender or not */
        memset(wbuf, 0x3c, bytes);
        if (resumer)
            pthread_join(th, NULL);
        /* keep progressing (a receive from this rank itself never fails for a peer's leave) */
        char self_buf[4];
        glucx_request_t *self_req = NULL;
        if (glucx_irecv(comm, self_buf, 4, 1, 4444, &self_req) == GLUCX_OK) {
            int64_t until = itest_now_ns() + 300 * 1000000LL;
            while (itest_now_ns() < until)
                glucx_request_test(self_req);
            glucx_request_cancel(self_req);
        } else {
            itest_sleep_ms(300);
        }
        glucx_request_free(self_req);
        if (rc == 0)
            rc = check_fill("buffer after the destroy", wbuf, 0, bytes, 0x3c);
        glucx_window_destroy(w2);
        free(wbuf2);
        free(wbuf);
    }
    glucx_comm_destroy(comm);
    return rc;
}

int itest_case_window_destroy(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "window-destroy-warmup", glucx_test_ms(60000), &ctx, &store,
                   &comm) != GLUCX_OK)
        return -1;
    glucx_comm_destroy(comm);
    int rc = destroy_round(env, ctx, store, rank, size, 0);
    if (rc == 0)
        rc = destroy_round(env, ctx, store, rank, size, 1);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}

/* ---- case "window_hold" ---- */

/* Progress this rank's communicator for @p ms (a receive from itself never fails). */
static void progress_for(glucx_comm_t *comm, int64_t ms)
{
    char b[4];
    glucx_request_t *r = NULL;
    if (glucx_irecv(comm, b, sizeof(b), glucx_comm_rank(comm), 4444, &r) != GLUCX_OK) {
        itest_sleep_ms(ms);
        return;
    }
    int64_t until = itest_now_ns() + ms * 1000000;
    while (itest_now_ns() < until && glucx_request_test(r) == GLUCX_INPROGRESS)
        ;
    glucx_request_cancel(r);
    glucx_request_free(r);
}

int itest_case_window_hold(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    setenv("GLUCX_WINDOW_HOLD", "16K", 1);
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "window-hold", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    int rc = 0;
    /* 1: a plain 256 KiB put (rendezvous) cannot be bounced within 16 KiB: it is held by its
     * descriptor, so it completes only after rank 1 opened the window */
    const size_t big = 256 * 1024;
    if (rank == 0) {
        void *buf = filled(big, 0, 1, 0);
        glucx_request_t *req = NULL;
        rc = buf == NULL ||
             ITEST_STATUS(glucx_iput(comm, buf, big, 1, 1, 0, 0, &req), GLUCX_OK, "big put");
        glucx_status_t st = GLUCX_INPROGRESS;
        int64_t end = itest_now_ns() + WAIT_MS * 1000000;
        while (rc == 0 && (st = glucx_request_test(req)) == GLUCX_INPROGRESS &&
               itest_now_ns() < end)
            ;
        int flag = __atomic_load_n(&sh->flag, __ATOMIC_ACQUIRE);
        if (rc == 0)
            rc = ITEST_STATUS(st, GLUCX_OK, "the held put");
        ITEST_CHECK(flag == 1, "the put past the hold budget completed before the window opened");
        glucx_request_free(req);
        free(buf);
    } else if (rank == 1) {
        progress_for(comm, 500); /* it arrives and is held */
        unsigned char *wbuf = itest_alloc(big);
        glucx_window_t *w = NULL;
        __atomic_store_n(&sh->flag, 1, __ATOMIC_RELEASE);
        rc = wbuf == NULL ||
             ITEST_STATUS(glucx_window_create(comm, 0, 1, wbuf, big, &w), GLUCX_OK, "window") ||
             take(w, "held past the budget", 0, big) || check_msg("held", wbuf, 0, big, 0, 1, 0);
        glucx_window_destroy(w);
        free(wbuf);
    }
    /* 2: eager puts that no window takes, past 16 KiB: every rank fails with NO_MEMORY (each
     * waits on a window nothing comes to, opened before the puts start; rank 0 learns through
     * the failure notice) */
    char idle[4];
    glucx_window_t *w = NULL;
    if (rc == 0)
        rc = ITEST_STATUS(glucx_window_create(comm, (rank + 1) % size, 3, idle, 4, &w), GLUCX_OK,
                          "idle window");
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier");
    if (rc == 0 && rank == 0) {
        enum { N = 40 };
        char bufs[N][1024];
        glucx_request_t *reqs[N] = {0};
        glucx_status_t st = GLUCX_OK;
        for (int k = 0; k < N && st == GLUCX_OK; k++) {
            memset(bufs[k], k, sizeof(bufs[k]));
            st = glucx_iput(comm, bufs[k], sizeof(bufs[k]), 1, 2, 0, 0, &reqs[k]);
            if (st == GLUCX_OK)
                st = glucx_request_wait(reqs[k], WAIT_MS);
        }
        if (st == GLUCX_OK) /* all sent: the failure comes back as a notice */
            st = glucx_window_wait(w, WAIT_MS, NULL, NULL, NULL);
        rc = ITEST_STATUS(st, GLUCX_ERR_NO_MEMORY, "puts past the hold budget");
        for (int k = 0; k < N; k++)
            glucx_request_free(reqs[k]);
    } else if (rc == 0) {
        rc = ITEST_STATUS(glucx_window_wait(w, WAIT_MS, NULL, NULL, NULL), GLUCX_ERR_NO_MEMORY,
                          "window wait while rank 0's puts pile up");
    }
    if (rc == 0) {
        const char *text = glucx_last_error();
        ITEST_CHECK(strstr(text, "GLUCX_WINDOW_HOLD") != NULL &&
                        strstr(text, "limit of 16384 bytes") != NULL &&
                        strstr(text, "from rank 0 (slot 2") != NULL,
                    "text: \"%s\"", text);
    }
    glucx_window_destroy(w);
    itest_close(ctx, store, comm);
    return rc;
}
