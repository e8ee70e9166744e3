/*
 * UCX transport, point to point over real UCX between forked processes. Every multi-rank test
 * runs twice: with UCX's default transports (shared memory between processes of this host) and
 * with UCX_TLS=tcp over loopback.
 */
#include <sched.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ucx_test_common.h"

static const size_t sizes[] = {0, 1, 8192, 1 << 20, 16 << 20};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))
#define GUARD 64
#define GUARD_BYTE 0xAB

static void run_modes(int n, int (*fn)(int, int, void *), size_t shared, int timeout_s)
{
    for (int mode = UCX_TEST_DEFAULT; mode <= UCX_TEST_TCP; mode++) {
        ucx_test_t *t = ucx_test_new(mode, shared);
        assert_non_null(t);
        int rc = glucx_test_procs_run(n, fn, t, timeout_s);
        if (rc != 0)
            fprintf(stderr, "failed in %s mode\n", ucx_mode_name(mode));
        assert_int_equal(rc, 0);
    }
}

static int check_guard(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != GUARD_BYTE)
            return 0;
    return 1;
}

static uint64_t seed_of(int src, int dst, int i)
{
    return (uint64_t)src * 1000003u + (uint64_t)dst * 1009u + (uint64_t)i;
}

/* Sizes 0 B .. 16 MiB to the peer and to self; receives posted before (even i) or after (odd i)
 * the message arrived; data, lengths, sources, tags and guard bytes checked. */
static int p2p_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    for (int p = 0; p < size; p++)
        if (ucx_check_transport(t, &e, p) != 0)
            return 1;
    glucx_tx_t *tx = e.tx;
    int peer = 1 - rank;
    for (int i = 0; i < NSIZES; i++) {
        size_t s = sizes[i];
        unsigned char *out = malloc(s + 1), *self_out = malloc(s + 1);
        unsigned char *in = malloc(s + GUARD), *self_in = malloc(s + GUARD);
        unsigned char *want = malloc(s + 1), *self_want = malloc(s + 1);
        CHECK(out && self_out && in && self_in && want && self_want, "malloc");
        glucx_test_fill_bytes(out, s, seed_of(rank, peer, i));
        glucx_test_fill_bytes(self_out, s, seed_of(rank, rank, i));
        glucx_test_fill_bytes(want, s, seed_of(peer, rank, i));
        glucx_test_fill_bytes(self_want, s, seed_of(rank, rank, i));
        memset(in, GUARD_BYTE, s + GUARD);
        memset(self_in, GUARD_BYTE, s + GUARD);
        uint64_t tag = ucx_tag((uint64_t)i + 1, 0), self_tag = ucx_tag((uint64_t)i + 1, 1);
        glucx_tx_req_t rr = {0}, rs = {0}, sr = {0}, ss = {0};
        int one[1] = {peer}, me[1] = {rank};
        if (i % 2 == 0) {
            CHECK_OK(tx->ops->irecv(tx, one, 1, tag, 0, in, s, &rr));
            CHECK_OK(tx->ops->irecv(tx, me, 1, self_tag, 0, self_in, s, &rs));
            CHECK(rr.posted == s && rr.is_recv, "posted set at post time");
            CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
            CHECK_OK(tx->ops->isend(tx, peer, tag, out, s, &sr));
            CHECK_OK(tx->ops->isend(tx, rank, self_tag, self_out, s, &ss));
        } else {
            CHECK_OK(tx->ops->isend(tx, peer, tag, out, s, &sr));
            CHECK_OK(tx->ops->isend(tx, rank, self_tag, self_out, s, &ss));
            CHECK(sr.posted == s, "posted set at post time");
            CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
            CHECK_OK(tx->ops->irecv(tx, one, 1, tag, 0, in, s, &rr));
            CHECK_OK(tx->ops->irecv(tx, me, 1, self_tag, 0, self_in, s, &rs));
        }
        glucx_tx_req_t *all[4] = {&rr, &rs, &sr, &ss};
        CHECK_OK(tx->ops->wait(tx, all, 4, glucx_deadline_ns(glucx_test_ms(30000))));
        for (int k = 0; k < 4; k++)
            CHECK(all[k]->status == GLUCX_OK, "size %zu req %d: %s", s, k,
                  glucx_status_string(all[k]->status));
        CHECK(rr.bytes == s && rs.bytes == s && sr.bytes == s && ss.bytes == s,
              "bytes %zu %zu %zu %zu for size %zu", rr.bytes, rs.bytes, sr.bytes, ss.bytes, s);
        CHECK(rr.peer == peer && rs.peer == rank, "sources %d %d", rr.peer, rs.peer);
        CHECK(rr.tag == (tag | ((uint64_t)peer << GLUCX_TX_TAG_SRC_SHIFT)), "wire tag 0x%llx",
              (unsigned long long)rr.tag);
        CHECK(rs.tag == (self_tag | ((uint64_t)rank << GLUCX_TX_TAG_SRC_SHIFT)),
              "self wire tag 0x%llx", (unsigned long long)rs.tag);
        CHECK(memcmp(in, want, s) == 0, "data from peer, size %zu", s);
        CHECK(memcmp(self_in, self_want, s) == 0, "data from self, size %zu", s);
        CHECK(check_guard(in + s, GUARD) && check_guard(self_in + s, GUARD), "guard bytes");
        free(out);
        free(self_out);
        free(in);
        free(self_in);
        free(want);
        free(self_want);
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_p2p_sizes(void **state)
{
    (void)state;
    run_modes(2, p2p_child, 0, 120);
}

/* 64 messages on one tag, sizes alternating eager and rendezvous, half matched by receives posted
 * early and half arriving unexpected: received in the order sent. */
#define FIFO_N 64
static int fifo_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    uint64_t tag = ucx_tag(42, 0);
    size_t big = 64 << 10;
    if (rank == 0) {
        static glucx_tx_req_t reqs[FIFO_N];
        glucx_tx_req_t *ptrs[FIFO_N];
        unsigned char *bufs = malloc(FIFO_N * big);
        CHECK(bufs != NULL, "malloc");
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        for (int i = 0; i < FIFO_N; i++) {
            unsigned char *b = bufs + (size_t)i * big;
            size_t n = i % 2 ? big : 16;
            glucx_test_fill_bytes(b, n, seed_of(0, 1, i));
            memcpy(b, &i, sizeof(i));
            memset(&reqs[i], 0, sizeof(reqs[i]));
            CHECK_OK(tx->ops->isend(tx, 1, tag, b, n, &reqs[i]));
            ptrs[i] = &reqs[i];
        }
        CHECK_OK(tx->ops->wait(tx, ptrs, FIFO_N, glucx_deadline_ns(glucx_test_ms(30000))));
        free(bufs);
    } else {
        static glucx_tx_req_t reqs[FIFO_N];
        unsigned char *bufs = malloc(FIFO_N * big);
        CHECK(bufs != NULL, "malloc");
        int src[1] = {0};
        for (int i = 0; i < FIFO_N / 2; i++) {
            memset(&reqs[i], 0, sizeof(reqs[i]));
            CHECK_OK(tx->ops->irecv(tx, src, 1, tag, 0, bufs + (size_t)i * big, big, &reqs[i]));
        }
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        for (int i = 0; i < FIFO_N / 2; i++)
            CHECK_OK(ucx_wait1(tx, &reqs[i], 30000));
        for (int i = FIFO_N / 2; i < FIFO_N; i++) {
            memset(&reqs[i], 0, sizeof(reqs[i]));
            CHECK_OK(tx->ops->irecv(tx, src, 1, tag, 0, bufs + (size_t)i * big, big, &reqs[i]));
        }
        for (int i = FIFO_N / 2; i < FIFO_N; i++)
            CHECK_OK(ucx_wait1(tx, &reqs[i], 30000));
        unsigned char *want = malloc(big);
        CHECK(want != NULL, "malloc");
        for (int i = 0; i < FIFO_N; i++) {
            size_t n = i % 2 ? big : 16;
            int seq;
            memcpy(&seq, bufs + (size_t)i * big, sizeof(seq));
            CHECK(reqs[i].status == GLUCX_OK && reqs[i].bytes == n, "message %d: %s, %zu bytes", i,
                  glucx_status_string(reqs[i].status), reqs[i].bytes);
            CHECK(seq == i, "message %d carries sequence %d", i, seq);
            glucx_test_fill_bytes(want, n, seed_of(0, 1, i));
            memcpy(want, &i, sizeof(i));
            CHECK(memcmp(want, bufs + (size_t)i * big, n) == 0, "message %d data", i);
        }
        free(want);
        free(bufs);
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_fifo(void **state)
{
    (void)state;
    run_modes(2, fifo_child, 0, 120);
}

/* Messages longer than the posted receive: GLUCX_ERR_TRUNCATED, nothing written past the posted
 * length (eager and rendezvous, from the peer and from self); the transport stays usable. */
static int trunc_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    const size_t send_len[2] = {100, 1 << 20}, post_len[2] = {64, 256 << 10};
    unsigned char *out = malloc(1 << 20);
    CHECK(out != NULL, "malloc");
    glucx_test_fill_bytes(out, 1 << 20, 77);
    for (int k = 0; k < 2; k++) {
        for (int dst_self = 0; dst_self < 2; dst_self++) {
            uint64_t tag = ucx_tag(100 + (uint64_t)k, (uint64_t)dst_self);
            int dst = dst_self ? rank : 1 - rank;
            int src[1] = {dst_self ? rank : 1 - rank};
            unsigned char *in = malloc(post_len[k] + GUARD);
            CHECK(in != NULL, "malloc");
            memset(in, GUARD_BYTE, post_len[k] + GUARD);
            glucx_tx_req_t r = {0}, s = {0};
            CHECK_OK(tx->ops->irecv(tx, src, 1, tag, 0, in, post_len[k], &r));
            CHECK_OK(tx->ops->isend(tx, dst, tag, out, send_len[k], &s));
            CHECK_OK(ucx_wait1(tx, &r, glucx_test_ms(30000)));
            CHECK(r.status == GLUCX_ERR_TRUNCATED, "%zu bytes into %zu: %s", send_len[k],
                  post_len[k], glucx_status_string(r.status));
            CHECK(check_guard(in + post_len[k], GUARD), "guard after a truncated receive (%zu)",
                  send_len[k]);
            /* the transport reports the sender's length, so callers can name it */
            CHECK(r.bytes == send_len[k] && r.peer == src[0], "truncated: bytes=%zu peer=%d",
                  r.bytes, r.peer);
            CHECK(ucx_wait1(tx, &s, glucx_test_ms(30000)) == GLUCX_OK, "sender completes");
            free(in);
        }
    }
    CHECK(glucx_tx_failure(tx) == GLUCX_OK, "transport still healthy");
    /* still usable */
    unsigned char small[8] = {0};
    glucx_tx_req_t r = {0}, s = {0};
    int src[1] = {1 - rank};
    CHECK_OK(tx->ops->irecv(tx, src, 1, ucx_tag(7, 7), 0, small, 8, &r));
    CHECK_OK(tx->ops->isend(tx, 1 - rank, ucx_tag(7, 7), out, 8, &s));
    glucx_tx_req_t *all[2] = {&r, &s};
    CHECK_OK(tx->ops->wait(tx, all, 2, glucx_deadline_ns(glucx_test_ms(30000))));
    CHECK(r.status == GLUCX_OK && memcmp(small, out, 8) == 0, "message after truncation");
    free(out);
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_truncated(void **state)
{
    (void)state;
    run_modes(2, trunc_child, 0, 120);
}

/* Receives from a set of ranks (3 ranks): a message from a rank outside the set is never taken;
 * ignore_mask; a set covering every rank (with duplicates and self); rendezvous and truncation
 * through the probe path; cancel of a probe-path receive. */
static int anysrc_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    char msg[64];
    uint64_t tx_tag = ucx_tag(9, 0);
    glucx_tx_req_t s = {0};

    /* 1: rank 0 has a message from itself; a receive from {1, 2, 1} must not take it. */
    glucx_tx_req_t r1 = {0}, r2 = {0}, self_send = {0};
    char in1[64] = {0}, in2[64] = {0};
    if (rank == 0) {
        snprintf(msg, sizeof(msg), "from self");
        CHECK_OK(tx->ops->isend(tx, 0, tx_tag, msg, strlen(msg) + 1, &self_send));
        int set[3] = {1, 2, 1};
        CHECK_OK(tx->ops->irecv(tx, set, 3, tx_tag, 0, in1, sizeof(in1), &r1));
        for (int i = 0; i < 200; i++)
            tx->ops->progress(tx);
        CHECK(!glucx_tx_req_done(&r1), "receive from {1,2} took a message from rank 0");
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "barrier 1");
    if (rank == 2) {
        snprintf(msg, sizeof(msg), "from two");
        CHECK_OK(tx->ops->isend(tx, 0, tx_tag, msg, strlen(msg) + 1, &s));
        CHECK_OK(ucx_wait1(tx, &s, glucx_test_ms(30000)));
    }
    if (rank == 0) {
        CHECK_OK(ucx_wait1(tx, &r1, glucx_test_ms(30000)));
        CHECK(r1.status == GLUCX_OK && r1.peer == 2 && strcmp(in1, "from two") == 0,
              "set receive got peer %d '%s'", r1.peer, in1);
        CHECK(r1.bytes == 9 && r1.tag == (tx_tag | (UINT64_C(2) << GLUCX_TX_TAG_SRC_SHIFT)),
              "bytes %zu tag 0x%llx", r1.bytes, (unsigned long long)r1.tag);
        int me[1] = {0};
        CHECK_OK(tx->ops->irecv(tx, me, 1, tx_tag, 0, in2, sizeof(in2), &r2));
        CHECK_OK(ucx_wait1(tx, &r2, glucx_test_ms(30000)));
        CHECK(r2.peer == 0 && strcmp(in2, "from self") == 0, "self message kept: '%s'", in2);
        CHECK_OK(ucx_wait1(tx, &self_send, glucx_test_ms(30000)));
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "barrier 2");

    /* 2: ignore_mask hides the low 8 bits; req->tag has the sender's. */
    if (rank == 1) {
        snprintf(msg, sizeof(msg), "low five");
        CHECK_OK(tx->ops->isend(tx, 0, ucx_tag(11, 5), msg, strlen(msg) + 1, &s));
        CHECK_OK(ucx_wait1(tx, &s, glucx_test_ms(30000)));
    }
    if (rank == 0) {
        glucx_tx_req_t r = {0};
        int set[2] = {2, 1};
        memset(in1, 0, sizeof(in1));
        CHECK_OK(tx->ops->irecv(tx, set, 2, ucx_tag(11, 0), 0xff, in1, sizeof(in1), &r));
        CHECK_OK(ucx_wait1(tx, &r, glucx_test_ms(30000)));
        CHECK(r.peer == 1 && (r.tag & 0xff) == 5 &&
                  (r.tag & ~GLUCX_TX_TAG_SRC_MASK) == ucx_tag(11, 5) &&
                  strcmp(in1, "low five") == 0,
              "ignore_mask: peer %d tag 0x%llx '%s'", r.peer, (unsigned long long)r.tag, in1);
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "barrier 3");

    /* 3: a set covering every rank (duplicates, self) takes any source. */
    if (rank == 2) {
        snprintf(msg, sizeof(msg), "cover");
        CHECK_OK(tx->ops->isend(tx, 0, ucx_tag(12, 3), msg, strlen(msg) + 1, &s));
        CHECK_OK(ucx_wait1(tx, &s, glucx_test_ms(30000)));
    }
    if (rank == 0) {
        glucx_tx_req_t r = {0};
        int set[4] = {2, 0, 1, 0};
        memset(in1, 0, sizeof(in1));
        CHECK_OK(tx->ops->irecv(tx, set, 4, ucx_tag(12, 0), 0xff, in1, sizeof(in1), &r));
        CHECK_OK(ucx_wait1(tx, &r, glucx_test_ms(30000)));
        CHECK(r.peer == 2 && (r.tag & 0xff) == 3 && strcmp(in1, "cover") == 0,
              "covering set: peer %d tag 0x%llx", r.peer, (unsigned long long)r.tag);
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "barrier 4");

    /* 4: rendezvous through the probe path, posted before the message; then truncation. */
    size_t big = 1 << 20;
    unsigned char *out = malloc(big), *in = malloc(big + GUARD), *want = malloc(big);
    CHECK(out && in && want, "malloc");
    glucx_tx_req_t rb = {0}, rt = {0}, rte = {0};
    int set01[2] = {0, 1};
    if (rank == 2) {
        int set[2] = {0, 1};
        memset(in, GUARD_BYTE, big + GUARD);
        CHECK_OK(tx->ops->irecv(tx, set, 2, ucx_tag(13, 0), 0, in, big, &rb));
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "barrier 5");
    if (rank == 1) {
        glucx_test_fill_bytes(out, big, 1313);
        CHECK_OK(tx->ops->isend(tx, 2, ucx_tag(13, 0), out, big, &s));
        CHECK_OK(ucx_wait1(tx, &s, glucx_test_ms(30000)));
        glucx_tx_req_t s2 = {0}, s3 = {0};
        CHECK_OK(tx->ops->isend(tx, 2, ucx_tag(14, 0), out, 1000, &s2));
        CHECK_OK(tx->ops->isend(tx, 2, ucx_tag(15, 0), out, big, &s3));
        glucx_tx_req_t *ss[2] = {&s2, &s3};
        CHECK_OK(tx->ops->wait(tx, ss, 2, glucx_deadline_ns(glucx_test_ms(30000))));
    }
    if (rank == 2) {
        CHECK_OK(ucx_wait1(tx, &rb, glucx_test_ms(30000)));
        glucx_test_fill_bytes(want, big, 1313);
        CHECK(rb.status == GLUCX_OK && rb.peer == 1 && rb.bytes == big, "probe rndv: %s peer %d",
              glucx_status_string(rb.status), rb.peer);
        CHECK(memcmp(in, want, big) == 0 && check_guard(in + big, GUARD), "probe rndv data");
        memset(in, GUARD_BYTE, big + GUARD);
        CHECK_OK(tx->ops->irecv(tx, set01, 2, ucx_tag(14, 0), 0, in, 100, &rt));
        CHECK_OK(ucx_wait1(tx, &rt, glucx_test_ms(30000)));
        CHECK(rt.status == GLUCX_ERR_TRUNCATED && check_guard(in + 100, GUARD),
              "probe eager truncation: %s", glucx_status_string(rt.status));
        memset(in, GUARD_BYTE, big + GUARD);
        CHECK_OK(tx->ops->irecv(tx, set01, 2, ucx_tag(15, 0), 0, in, 4096, &rte));
        CHECK_OK(ucx_wait1(tx, &rte, glucx_test_ms(30000)));
        CHECK(rte.status == GLUCX_ERR_TRUNCATED && check_guard(in + 4096, GUARD),
              "probe rndv truncation: %s", glucx_status_string(rte.status));
        /* 5: cancel of a probe-path receive that nothing matches */
        glucx_tx_req_t rc = {0};
        CHECK_OK(tx->ops->irecv(tx, set01, 2, ucx_tag(16, 0), 0, in, 8, &rc));
        tx->ops->progress(tx);
        CHECK(!glucx_tx_req_done(&rc), "nothing sent yet");
        tx->ops->cancel(tx, &rc);
        CHECK(glucx_tx_req_done(&rc) && rc.status == GLUCX_ERR_ABORTED, "cancelled: %s",
              glucx_status_string(rc.status));
    }
    free(out);
    free(in);
    free(want);
    CHECK(glucx_tx_failure(tx) == GLUCX_OK, "healthy");
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_any_source(void **state)
{
    (void)state;
    run_modes(3, anysrc_child, 0, 120);
}

/* cancel(): an unmatched receive completes ABORTED; sends and matched receives go on. */
static int cancel_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    int peer = 1 - rank, src[1] = {peer};
    char buf[16];
    glucx_tx_req_t r = {0};
    CHECK_OK(tx->ops->irecv(tx, src, 1, ucx_tag(1, 0), 0, buf, sizeof(buf), &r));
    tx->ops->cancel(tx, &r);
    CHECK(glucx_tx_req_done(&r) && r.status == GLUCX_ERR_ABORTED, "unmatched receive: %s",
          glucx_status_string(r.status));
    tx->ops->cancel(tx, &r); /* done: no-op */
    CHECK(r.status == GLUCX_ERR_ABORTED, "second cancel");

    size_t big = 16 << 20;
    unsigned char *data = malloc(big), *want = malloc(big);
    CHECK(data && want, "malloc");
    glucx_test_fill_bytes(want, big, 555);
    want[0] = want[big / 2] = want[big - 1] = 0x77; /* the receiver watches these arrive */
    if (rank == 0) {
        /* a send: cancel is a no-op, the receiver gets everything */
        memcpy(data, want, big);
        glucx_tx_req_t s = {0};
        CHECK_OK(tx->ops->isend(tx, 1, ucx_tag(2, 0), data, big, &s));
        tx->ops->cancel(tx, &s);
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        CHECK_OK(ucx_wait1(tx, &s, glucx_test_ms(30000)));
        CHECK(s.status == GLUCX_OK, "cancelled send: %s", glucx_status_string(s.status));
        /* a second 16 MiB send; stop progressing so the peer's receive stays matched but
         * unfinished while it cancels it */
        glucx_tx_req_t s2 = {0};
        CHECK_OK(tx->ops->isend(tx, 1, ucx_tag(3, 0), data, big, &s2));
        usleep(300000);
        CHECK_OK(ucx_wait1(tx, &s2, glucx_test_ms(30000)));
        CHECK(s2.status == GLUCX_OK, "second send: %s", glucx_status_string(s2.status));
    } else {
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        glucx_tx_req_t r2 = {0};
        CHECK_OK(tx->ops->irecv(tx, src, 1, ucx_tag(2, 0), 0, data, big, &r2));
        CHECK_OK(ucx_wait1(tx, &r2, glucx_test_ms(30000)));
        CHECK(r2.status == GLUCX_OK && r2.bytes == big && memcmp(data, want, big) == 0,
              "receive of the cancelled send: %s", glucx_status_string(r2.status));
        memset(data, 0, big);
        glucx_tx_req_t r3 = {0};
        CHECK_OK(tx->ops->irecv(tx, src, 1, ucx_tag(3, 0), 0, data, big, &r3));
        /* once data lands the receive is matched (the sender may still be asleep) */
        double t0 = ucx_now_s();
        while (!glucx_tx_req_done(&r3) && data[0] == 0 && data[big / 2] == 0 &&
               data[big - 1] == 0 && ucx_now_s() - t0 < glucx_test_ms(30000) / 1e3)
            tx->ops->progress(tx);
        tx->ops->cancel(tx, &r3); /* matched: no-op */
        CHECK_OK(ucx_wait1(tx, &r3, glucx_test_ms(30000)));
        CHECK(r3.status == GLUCX_OK && memcmp(data, want, big) == 0,
              "matched receive survives cancel: %s", glucx_status_string(r3.status));
    }
    free(data);
    free(want);
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_cancel(void **state)
{
    (void)state;
    run_modes(2, cancel_child, 0, 120);
}

/* wait() returns TIMEOUT at the deadline and leaves the request posted. */
static int timeout_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    CHECK_OK(tx->ops->wait(tx, NULL, 0, glucx_deadline_ns(0)));
    char buf[16] = {0};
    if (rank == 0) {
        int src[1] = {1};
        glucx_tx_req_t r = {0};
        CHECK_OK(tx->ops->irecv(tx, src, 1, ucx_tag(5, 0), 0, buf, sizeof(buf), &r));
        double t0 = ucx_now_s();
        glucx_status_t st = ucx_wait1(tx, &r, 200);
        double dt = ucx_now_s() - t0;
        CHECK(st == GLUCX_ERR_TIMEOUT, "wait: %s", glucx_status_string(st));
        CHECK(dt >= 0.195 && dt < glucx_test_ms(1500) / 1e3,
              "timed out after %.3f s (deadline 0.2 s)", dt);
        CHECK(!glucx_tx_req_done(&r), "request stays posted");
        CHECK(strstr(glucx_error_text(), "pending") != NULL, "message: %s", glucx_error_text());
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        CHECK_OK(ucx_wait1(tx, &r, glucx_test_ms(30000)));
        CHECK(r.status == GLUCX_OK && strcmp(buf, "late") == 0, "late message '%s'", buf);
    } else {
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        glucx_tx_req_t s = {0};
        CHECK_OK(tx->ops->isend(tx, 0, ucx_tag(5, 0), "late", 5, &s));
        CHECK_OK(ucx_wait1(tx, &s, glucx_test_ms(30000)));
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_wait_timeout(void **state)
{
    (void)state;
    run_modes(2, timeout_child, 0, 60);
}

/* 4 threads per rank, each with its own tag, send/receive loops; rank 1 naps now and then so the
 * other side's waiters go to sleep (event descriptor / condition variable) concurrently. */
#define NTHREADS 4
#define NITER 300
typedef struct thr_arg {
    glucx_tx_t *tx;
    int rank, t;
    int failed;
    char why[160];
} thr_arg_t;

static void *thr_main(void *p)
{
    thr_arg_t *a = p;
    glucx_tx_t *tx = a->tx;
    int peer = 1 - a->rank, src[1] = {peer};
    size_t big = 64 << 10;
    unsigned char *out = malloc(big), *in = malloc(big), *want = malloc(big);
    uint64_t tag = ucx_tag(200 + (uint64_t)a->t, 0);
    for (int i = 0; i < NITER && !a->failed; i++) {
        size_t n = i % 3 == 0 ? big : 16;
        glucx_test_fill_bytes(out, n, seed_of(a->rank, a->t, i));
        glucx_test_fill_bytes(want, n, seed_of(peer, a->t, i));
        glucx_tx_req_t r = {0}, s = {0};
        glucx_tx_req_t *all[2] = {&r, &s};
        glucx_status_t st = tx->ops->irecv(tx, src, 1, tag, 0, in, big, &r);
        if (st == GLUCX_OK)
            st = tx->ops->isend(tx, peer, tag, out, n, &s);
        if (a->rank == 1 && i % 7 == 0)
            usleep(200 + (unsigned)(i % 5) * 300);
        if (st == GLUCX_OK)
            st = tx->ops->wait(tx, all, 2, glucx_deadline_ns(glucx_test_ms(30000)));
        if (st != GLUCX_OK || r.status != GLUCX_OK || s.status != GLUCX_OK || r.bytes != n ||
            memcmp(in, want, n) != 0) {
            a->failed = 1;
            snprintf(a->why, sizeof(a->why), "thread %d iter %d: %s/%s/%s, %zu bytes", a->t, i,
                     glucx_status_string(st), glucx_status_string(r.status),
                     glucx_status_string(s.status), r.bytes);
        }
    }
    free(out);
    free(in);
    free(want);
    return NULL;
}

static int threads_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    pthread_t th[NTHREADS];
    thr_arg_t args[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (thr_arg_t){.tx = e.tx, .rank = rank, .t = i};
        CHECK(pthread_create(&th[i], NULL, thr_main, &args[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        CHECK(!args[i].failed, "%s", args[i].why);
    CHECK(ucx_barrier(t, size, e.tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_threads(void **state)
{
    (void)state;
    run_modes(2, threads_child, 0, 180);
}

/* The other ranks wait 3 s for a late last rank; each uses < 10% of a core. With 4 ranks on 2
 * cores waits yield (GLUCX_UCX_YIELD_ALWAYS); with 2 ranks on 2 or more cores they yield only
 * while it is cheap (CHEAP): both must still end in a sleep. */
static int idle_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
    const int late = size - 1;
    if (rank == late) {
        usleep(3000000);
        glucx_tx_req_t s[3] = {{0}};
        glucx_tx_req_t *ps[3] = {&s[0], &s[1], &s[2]};
        for (int p = 0; p < late; p++)
            CHECK_OK(tx->ops->isend(tx, p, ucx_tag(1, 0), "wake", 5, &s[p]));
        CHECK_OK(tx->ops->wait(tx, ps, late, glucx_deadline_ns(glucx_test_ms(30000))));
    } else {
        char buf[8];
        int src[1] = {late};
        glucx_tx_req_t r = {0};
        double c0 = ucx_cpu_s(), t0 = ucx_now_s();
        CHECK_OK(tx->ops->irecv(tx, src, 1, ucx_tag(1, 0), 0, buf, sizeof(buf), &r));
        CHECK_OK(ucx_wait1(tx, &r, glucx_test_ms(30000)));
        double cpu = ucx_cpu_s() - c0, wall = ucx_now_s() - t0;
        fprintf(stderr, "rank %d (%s): waited %.2f s using %.3f s of CPU (%.1f%%)\n", rank,
                ucx_mode_name(t->mode), wall, cpu, 100 * cpu / wall);
        CHECK(wall > 2.5, "waited only %.2f s", wall);
        CHECK(cpu < 0.1 * wall, "used %.3f s CPU in %.2f s", cpu, wall);
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_idle_cpu(void **state)
{
    (void)state;
    run_modes(4, idle_child, 0, 120);
    run_modes(2, idle_child, 0, 120);
}

/* The yield policy a connect resolves (glucx_ucx_yield_t): from the job's ranks on this host and
 * the CPUs the process may use. t->shared: int case (0: the rank's current CPUs, 1: one CPU,
 * 2: GLUCX_YIELD never). */
static int yield_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    const int which = *(const int *)t->shared;
    cpu_set_t set;
    CPU_ZERO(&set);
    CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity");
    if (which == 1) {
        int first = -1;
        for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
            if (CPU_ISSET(c, &set))
                first = c;
        CHECK(first >= 0, "no CPU in the affinity mask");
        CPU_ZERO(&set);
        CPU_SET(first, &set);
        CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "sched_setaffinity");
    }
    const int cpus = CPU_COUNT(&set);
    ucx_test_rank_ = rank;
    if (t->mode == UCX_TEST_TCP)
        setenv("UCX_TLS", "tcp", 1);
    else
        unsetenv("UCX_TLS");
    ucx_rank_t e = {.rank = rank, .size = size};
    const void *addr;
    size_t len;
    CHECK_OK(glucx_tx_ucx_context_create("lo", t->keepalive_ms, &e.uctx));
    if (which == 2)
        glucx_tx_ucx_context_set_yield(e.uctx, GLUCX_UCX_YIELD_NEVER);
    CHECK_OK(glucx_tx_ucx_create(e.uctx, rank, size, &e.tx, &addr, &len));
    /* before connect nothing is resolved */
    CHECK(glucx_tx_ucx_yield(e.tx) == GLUCX_UCX_YIELD_AUTO, "policy %d before connect",
          (int)glucx_tx_ucx_yield(e.tx));
    const void *addrs[16];
    size_t lens[16];
    CHECK(glucx_test_exchange(t->x, rank, size, addr, len, addrs, lens, 60000) == 0,
          "address exchange");
    CHECK_OK(glucx_tx_ucx_connect(e.tx, addrs, lens, glucx_deadline_ns(glucx_test_ms(20000))));
    /* every rank of this job runs on this host: `size` of them against `cpus` CPUs */
    glucx_ucx_yield_t want = which == 2    ? GLUCX_UCX_YIELD_NEVER
                             : size > cpus ? GLUCX_UCX_YIELD_ALWAYS
                                           : GLUCX_UCX_YIELD_CHEAP;
    CHECK(glucx_tx_ucx_yield(e.tx) == want, "case %d, %d ranks, %d CPUs: policy %d, expected %d",
          which, size, cpus, (int)glucx_tx_ucx_yield(e.tx), (int)want);
    /* and waits work under it */
    CHECK(ucx_barrier(t, size, e.tx) == 0, "barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_yield_policy(void **state)
{
    (void)state;
    for (int which = 0; which <= 2; which++) {
        for (int mode = UCX_TEST_DEFAULT; mode <= UCX_TEST_TCP; mode++) {
            ucx_test_t *t = ucx_test_new(mode, sizeof(int));
            assert_non_null(t);
            *(int *)t->shared = which;
            int rc = glucx_test_procs_run(2, yield_child, t, 120);
            if (rc != 0)
                fprintf(stderr, "failed in case %d, %s mode\n", which, ucx_mode_name(mode));
            assert_int_equal(rc, 0);
        }
    }
}

/* A single rank: self traffic, argument checks, describe_peer. */
static int single_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    char d[64];
    tx->ops->describe_peer(tx, 0, d, sizeof(d));
    CHECK(strchr(d, '/') != NULL && strcmp(d, "unknown") != 0, "self described as '%s'", d);
    tx->ops->describe_peer(tx, 5, d, sizeof(d));
    CHECK(strstr(d, "invalid") != NULL, "out-of-range peer described as '%s'", d);
    glucx_tx_req_t r = {0};
    int bad[1] = {1};
    char buf[8];
    CHECK(tx->ops->isend(tx, 1, 0, buf, 1, &r) == GLUCX_ERR_INVALID_ARG, "peer out of range");
    CHECK(strstr(glucx_error_text(), "isend") != NULL, "message '%s'", glucx_error_text());
    CHECK(glucx_tx_req_done(&r), "failed post completes the request");
    memset(&r, 0, sizeof(r));
    CHECK(tx->ops->isend(tx, 0, GLUCX_TX_TAG_CTRL, buf, 1, &r) == GLUCX_ERR_INVALID_ARG,
          "control bit");
    memset(&r, 0, sizeof(r));
    CHECK(tx->ops->irecv(tx, bad, 1, 0, 0, buf, 1, &r) == GLUCX_ERR_INVALID_ARG, "bad source");
    memset(&r, 0, sizeof(r));
    CHECK(tx->ops->irecv(tx, bad, 0, 0, 0, buf, 1, &r) == GLUCX_ERR_INVALID_ARG, "no sources");
    /* self traffic */
    glucx_tx_req_t s = {0};
    memset(&r, 0, sizeof(r));
    int me[1] = {0};
    CHECK_OK(tx->ops->irecv(tx, me, 1, ucx_tag(3, 0), 0, buf, sizeof(buf), &r));
    CHECK_OK(tx->ops->isend(tx, 0, ucx_tag(3, 0), "abc", 4, &s));
    glucx_tx_req_t *all[2] = {&r, &s};
    CHECK_OK(tx->ops->wait(tx, all, 2, glucx_deadline_ns(glucx_test_ms(10000))));
    CHECK(strcmp(buf, "abc") == 0 && r.peer == 0 && r.bytes == 4, "self message");
    CHECK(tx->ops->wait(tx, all, 1, glucx_deadline_ns(glucx_test_ms(10000))) == GLUCX_OK,
          "wait on done");
    ucx_rank_down(&e);
    return 0;
}

static void test_single_rank(void **state)
{
    (void)state;
    ucx_test_t *t = ucx_test_new(UCX_TEST_DEFAULT, 0);
    assert_non_null(t);
    assert_int_equal(glucx_test_procs_run(1, single_child, t, 60), 0);
}

/* Plain sends to a local peer go eager below UCX_RNDV_SEND_NBR_THRESH (256 KiB by default; ucx.h,
 * "Eager sizes"): they complete while the receiver has posted nothing. A 1 MiB send is a
 * rendezvous and cannot complete before its receive is posted (the receiver must read it). Data
 * checked either way. Default (shared-memory) mode only. */
static const size_t eager_sizes[] = {16384, 65536, 200000, 1 << 20};
#define NEAGER ((int)(sizeof(eager_sizes) / sizeof(eager_sizes[0])))
static int eager_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    unsetenv("UCX_RNDV_THRESH");
    unsetenv("UCX_RNDV_SEND_NBR_THRESH");
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    CHECK(ucx_check_transport(t, &e, 1 - rank) == 0, "transport");
    glucx_tx_t *tx = e.tx;
    for (int i = 0; i < NEAGER; i++) {
        const size_t s = eager_sizes[i];
        const int eager = s < 256 * 1024;
        unsigned char *buf = malloc(s), *want = malloc(s);
        CHECK(buf != NULL && want != NULL, "malloc");
        glucx_test_fill_bytes(want, s, seed_of(0, 1, i));
        const uint64_t tag = ucx_tag((uint64_t)i + 1, 7);
        glucx_tx_req_t req = {0};
        if (rank == 0) {
            memcpy(buf, want, s);
            CHECK_OK(tx->ops->isend(tx, 1, tag, buf, s, &req));
            if (eager) /* no receive is posted until the barrier below */
                CHECK(ucx_wait1(tx, &req, glucx_test_ms(20000)) == GLUCX_OK,
                      "eager send of %zu bytes did not complete before its receive: %s", s,
                      glucx_status_string(req.status));
            CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
            if (!eager) {
                /* the receiver progressed through the barrier, but has posted nothing yet */
                tx->ops->progress(tx);
                CHECK(!glucx_tx_req_done(&req),
                      "rendezvous send of %zu bytes completed before its receive was posted", s);
            }
            CHECK(ucx_barrier(t, size, tx) == 0, "barrier 2");
            CHECK(ucx_wait1(tx, &req, glucx_test_ms(20000)) == GLUCX_OK, "send of %zu: %s", s,
                  glucx_status_string(req.status));
        } else {
            int from[1] = {0};
            memset(buf, 0, s);
            CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
            CHECK(ucx_barrier(t, size, tx) == 0, "barrier 2");
            CHECK_OK(tx->ops->irecv(tx, from, 1, tag, 0, buf, s, &req));
            CHECK(ucx_wait1(tx, &req, glucx_test_ms(20000)) == GLUCX_OK, "receive of %zu: %s", s,
                  glucx_status_string(req.status));
            CHECK(req.bytes == s && memcmp(buf, want, s) == 0, "data of %zu bytes", s);
        }
        free(buf);
        free(want);
    }
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_eager_local(void **state)
{
    (void)state;
    ucx_test_t *t = ucx_test_new(UCX_TEST_DEFAULT, 0);
    assert_non_null(t);
    assert_int_equal(glucx_test_procs_run(2, eager_child, t, 120), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_rank),  cmocka_unit_test(test_p2p_sizes),
        cmocka_unit_test(test_fifo),         cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_any_source),   cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_wait_timeout), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_idle_cpu),     cmocka_unit_test(test_yield_policy),
        cmocka_unit_test(test_eager_local),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
