/*
 * glucx-p2p-bench: point-to-point latency and bandwidth between rank pairs, plain sends
 * (glucx_isend) against synchronous ones (glucx_isend_flags(GLUCX_SEND_SYNC)) in the same run.
 *
 * Ranks pair up as (0,1), (2,3), ...; every pair runs at the same time (an odd last rank only
 * joins the barriers). For each size and each of R rounds, both modes run back to back (their
 * order alternates between rounds), so slow phases of a shared machine hit both alike; the row
 * gives each mode's median over the rounds and the ratio sync/plain.
 *
 * latency: ping-pong as Gloo's algorithms post their operations: each side posts its receive
 *          first, then (when its turn comes) sends; the initiator waits for its send and then its
 *          receive, the responder waits for its receive, sends and waits for that send.
 *          Reported: half the round trip in microseconds, maximum over the pairs.
 * bandwidth: the even rank of a pair streams WINDOW messages to the odd one, which has a receive
 *          posted for each (its own buffer); after each window the receiver answers with an empty
 *          message. Reported: bytes / time in GB/s (1e9 B/s), minimum over the pairs.
 * Every received byte is checked against the sender's pattern after each timed phase.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glucx/glucx.h>

#include "common/bench_util.h"
#include "common/local_ranks.h"

#define WINDOW 4
#define MAX_SIZES 32

typedef struct opts {
    int ranks;
    size_t sizes[MAX_SIZES];
    int nsizes;
    int rounds;
    double seconds; /**< target time of one timed phase */
    int64_t timeout_ms;
} opts_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: glucx-p2p-bench --ranks N [--sizes LIST] [--rounds R] [--seconds S]\n"
               "\n"
               "  -N, --ranks N      fork N local ranks (pairs (0,1), (2,3), ... run at once)\n"
               "  -s, --sizes LIST   comma-separated message sizes in bytes, K/M suffixes\n"
               "                     (default 8,4K,1M,16M): sizes below 64 KiB are timed as\n"
               "                     latency, the others as bandwidth\n"
               "  -r, --rounds R     rounds per size, each timing plain then sync or sync then\n"
               "                     plain (default 5); rows show medians\n"
               "  -t, --seconds S    approximate length of one timed phase (default 0.2)\n"
               "  -T, --timeout-ms MS  communicator timeout (default 60000)\n"
               "  -h, --help         this text\n");
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    static const struct option longopts[] = {
        {"ranks", required_argument, NULL, 'N'},
        {"sizes", required_argument, NULL, 's'},
        {"rounds", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 't'},
        {"timeout-ms", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (opts_t){.ranks = 2,
                  .sizes = {8, 4096, 1u << 20, 16u << 20},
                  .nsizes = 4,
                  .rounds = 5,
                  .seconds = 0.2,
                  .timeout_ms = 60000};
    int c;
    while ((c = getopt_long(argc, argv, "N:s:r:t:T:h", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'N':
            o->ranks = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || o->ranks < 2 || o->ranks > GLUCX_TOOL_MAX_LOCAL_RANKS)
                goto bad;
            break;
        case 's': {
            o->nsizes = 0;
            char *copy = strdup(optarg), *save = NULL;
            if (copy == NULL)
                goto bad;
            for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save))
                if (o->nsizes == MAX_SIZES ||
                    glucx_tool_parse_size(t, &o->sizes[o->nsizes++]) != 0) {
                    free(copy);
                    goto bad;
                }
            free(copy);
            if (o->nsizes == 0)
                goto bad;
            break;
        }
        case 'r':
            o->rounds = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || o->rounds < 1 || o->rounds > 1000)
                goto bad;
            break;
        case 't':
            o->seconds = strtod(optarg, &end);
            if (*end != '\0' || !(o->seconds > 0 && o->seconds <= 60))
                goto bad;
            break;
        case 'T':
            o->timeout_ms = strtoll(optarg, &end, 10);
            if (*end != '\0' || o->timeout_ms < 1)
                goto bad;
            break;
        case 'h':
            usage(stdout);
            return -1;
        default:
            goto bad;
        }
    }
    if (optind == argc)
        return 0;
bad:
    fprintf(stderr, "glucx-p2p-bench: invalid arguments\n\n");
    usage(stderr);
    return 2;
}

/* Tell the launcher this rank is alive (it stops ranks that show no progress). */
static int progress_fd = -1;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(int rank, const char *what, glucx_status_t st)
{
    fprintf(stderr, "glucx-p2p-bench: rank %d: %s: %s: %s\n", rank, what, glucx_status_string(st),
            glucx_last_error());
    return 1;
}

/* Byte i of the pattern the sender of a pair writes for message k. */
static unsigned char pattern(size_t i, int k)
{
    return (unsigned char)((i * 131u + (size_t)k * 7u + 1u) & 0xff);
}

typedef struct pair {
    glucx_comm_t *comm;
    int me, peer, sender; /**< sender: the even rank of the pair */
    int64_t timeout_ms;
    unsigned flags;      /**< flags of this phase's sends */
    unsigned char *sbuf; /**< the sender's pattern (message 0) */
    unsigned char *rbuf; /**< WINDOW receive buffers */
    size_t cap;
} pair_t;

static glucx_status_t send_one(pair_t *p, const void *buf, size_t bytes, uint64_t tag,
                               glucx_request_t **req_p)
{
    return glucx_isend_flags(p->comm, buf, bytes, p->peer, tag, p->flags, req_p);
}

static glucx_status_t wait_free(glucx_request_t *req, int64_t timeout_ms)
{
    glucx_status_t st = glucx_request_wait(req, timeout_ms);
    glucx_request_free(req);
    return st;
}

/* @p iters round trips of @p bytes; @return the status, *t_p the time in seconds. */
static glucx_status_t pingpong(pair_t *p, size_t bytes, long iters, double *t_p)
{
    glucx_status_t st = GLUCX_OK;
    const uint64_t tag = 11;
    double t0 = now_s();
    for (long k = 0; k < iters && st == GLUCX_OK; k++) {
        glucx_request_t *r = NULL, *s = NULL;
        st = glucx_irecv(p->comm, p->rbuf, bytes, p->peer, tag, &r);
        if (st != GLUCX_OK)
            break;
        if (p->sender) {
            st = send_one(p, p->sbuf, bytes, tag, &s);
            if (st == GLUCX_OK)
                st = wait_free(s, p->timeout_ms);
            glucx_status_t rst = wait_free(r, p->timeout_ms);
            st = st != GLUCX_OK ? st : rst;
        } else {
            st = wait_free(r, p->timeout_ms);
            if (st == GLUCX_OK)
                st = send_one(p, p->sbuf, bytes, tag, &s);
            if (st == GLUCX_OK)
                st = wait_free(s, p->timeout_ms);
        }
    }
    *t_p = now_s() - t0;
    return st;
}

/* @p iters windows of WINDOW messages from the sender, each answered by an empty message. */
static glucx_status_t stream(pair_t *p, size_t bytes, long iters, double *t_p)
{
    glucx_status_t st = GLUCX_OK;
    const uint64_t tag = 12, ack_tag = 13;
    double t0 = now_s();
    for (long k = 0; k < iters && st == GLUCX_OK; k++) {
        glucx_request_t *reqs[WINDOW + 1] = {NULL};
        int n = 0;
        if (p->sender) {
            st = glucx_irecv(p->comm, NULL, 0, p->peer, ack_tag, &reqs[n]);
            n += st == GLUCX_OK;
            for (int w = 0; w < WINDOW && st == GLUCX_OK; w++) {
                st = send_one(p, p->sbuf, bytes, tag, &reqs[n]);
                n += st == GLUCX_OK;
            }
        } else {
            for (int w = 0; w < WINDOW && st == GLUCX_OK; w++) {
                st = glucx_irecv(p->comm, p->rbuf + (size_t)w * p->cap, bytes, p->peer, tag,
                                 &reqs[n]);
                n += st == GLUCX_OK;
            }
        }
        /* the receiver answers once its window arrived (waits 0..n-1, then the answer) */
        for (int i = p->sender ? 1 : 0; i < n; i++) {
            glucx_status_t w = wait_free(reqs[i], p->timeout_ms);
            st = st != GLUCX_OK ? st : w;
        }
        if (p->sender && n > 0) {
            glucx_status_t w = wait_free(reqs[0], p->timeout_ms);
            st = st != GLUCX_OK ? st : w;
        } else if (!p->sender && st == GLUCX_OK) {
            glucx_request_t *a = NULL;
            st = send_one(p, NULL, 0, ack_tag, &a);
            if (st == GLUCX_OK)
                st = wait_free(a, p->timeout_ms);
        }
    }
    *t_p = now_s() - t0;
    return st;
}

/* Check what the last timed phase left in this rank's receive buffers (both sides receive in
 * a ping-pong, the odd rank in a stream). @return wrong bytes. */
static size_t check(const pair_t *p, size_t bytes, int lat)
{
    size_t wrong = 0;
    const int windows = lat ? 1 : p->sender ? 0 : WINDOW;
    for (int w = 0; w < windows; w++)
        for (size_t i = 0; i < bytes; i++)
            wrong += p->rbuf[(size_t)w * p->cap + i] != pattern(i, 0);
    return wrong;
}

#define LAT_LIMIT (64u << 10)

static int bench(glucx_comm_t *comm, const opts_t *o)
{
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int paired = (me ^ 1) < n;
    const glucx_coll_opts_t aux = {.field_mask = GLUCX_COLL_OPT_TIMEOUT,
                                   .timeout_ms = o->timeout_ms};
    size_t cap = 0;
    for (int i = 0; i < o->nsizes; i++)
        cap = o->sizes[i] > cap ? o->sizes[i] : cap;
    pair_t p = {.comm = comm,
                .me = me,
                .peer = me ^ 1,
                .sender = (me & 1) == 0,
                .timeout_ms = o->timeout_ms,
                .cap = cap};
    p.sbuf = malloc(cap > 0 ? cap : 1);
    p.rbuf = malloc(WINDOW * (cap > 0 ? cap : 1));
    double *t[2] = {calloc((size_t)o->rounds, sizeof(double)),
                    calloc((size_t)o->rounds, sizeof(double))};
    int rc = 1;
    if (p.sbuf == NULL || p.rbuf == NULL || t[0] == NULL || t[1] == NULL) {
        fprintf(stderr, "glucx-p2p-bench: rank %d: out of memory\n", me);
        goto out;
    }
    for (size_t i = 0; i < cap; i++)
        p.sbuf[i] = pattern(i, 0);
    if (me == 0) {
        char tr[128] = "?";
        glucx_comm_peer_transport(comm, 1, tr, sizeof(tr));
        printf("# glucx-p2p-bench: glucx %s, %d ranks (pairs run at once), %d rounds per size, "
               "medians\n# rank 0 -> rank 1: %s\n",
               glucx_version(), n, o->rounds, tr);
        printf("# latency (size < %u): half round trip in us, max over pairs; bandwidth: GB/s "
               "(1e9 B/s) of a stream of %d-message windows, min over pairs\n",
               LAT_LIMIT, WINDOW);
        printf("#%11s %-9s %12s %12s %10s %8s\n", "size", "metric", "plain", "sync", "sync/plain",
               "#wrong");
        fflush(stdout);
    }
    for (int si = 0; si < o->nsizes; si++) {
        const size_t bytes = o->sizes[si];
        const int lat = bytes < LAT_LIMIT;
        /* iterations for about o->seconds, from one untimed calibration phase */
        long iters = 1;
        size_t wrong = 0;
        for (int round = 0; round < o->rounds; round++) {
            for (int m = 0; m < 2; m++) {
                const int mode = (m + round) % 2; /* 0: plain, 1: sync; order alternates */
                p.flags = mode ? GLUCX_SEND_SYNC : 0;
                memset(p.rbuf, 0, WINDOW * cap);
                glucx_status_t st = glucx_barrier(comm, &aux);
                if (st != GLUCX_OK) {
                    fail(me, "barrier", st);
                    goto out;
                }
                double dt = 0;
                if (round == 0 && m == 0) {
                    /* warm up, and size the phases to about o->seconds (every rank takes the
                     * smallest count, so the pairs run equally long) */
                    double probe = 0, want = 1e300, agreed = 0;
                    if (paired) {
                        st = lat ? pingpong(&p, bytes, 50, &probe) : stream(&p, bytes, 2, &probe);
                        double per = probe / (lat ? 50 : 2);
                        want = o->seconds / (per > 0 ? per : 1e-6);
                    }
                    if (st == GLUCX_OK)
                        st = glucx_allreduce(comm, &want, &agreed, 1, GLUCX_DTYPE_F64, GLUCX_OP_MIN,
                                             &aux);
                    iters = agreed < 5 ? 5 : agreed > 1e6 ? 1000000 : (long)agreed;
                }
                if (st == GLUCX_OK && paired)
                    st = lat ? pingpong(&p, bytes, iters, &dt) : stream(&p, bytes, iters, &dt);
                if (st != GLUCX_OK) {
                    fail(me, lat ? "ping-pong" : "stream", st);
                    goto out;
                }
                if (progress_fd >= 0 && write(progress_fd, "", 1) < 0) {
                    /* a full pipe already tells the launcher this rank is alive */
                }
                wrong += paired ? check(&p, bytes, lat) : 0;
                double v = lat ? dt / (double)iters / 2 * 1e6
                               : (double)bytes * WINDOW * (double)iters / dt / 1e9;
                if (!paired)
                    v = lat ? 0 : 1e300;
                double all = 0;
                st = glucx_allreduce(comm, &v, &all, 1, GLUCX_DTYPE_F64,
                                     lat ? GLUCX_OP_MAX : GLUCX_OP_MIN, &aux);
                if (st != GLUCX_OK) {
                    fail(me, "allreduce of the results", st);
                    goto out;
                }
                t[mode][round] = all;
            }
        }
        uint64_t w = wrong, wall = 0;
        glucx_status_t st =
            glucx_allreduce(comm, &w, &wall, 1, GLUCX_DTYPE_U64, GLUCX_OP_SUM, &aux);
        if (st != GLUCX_OK) {
            fail(me, "allreduce of the error counts", st);
            goto out;
        }
        if (me == 0) {
            double plain = glucx_tool_median(t[0], o->rounds),
                   sync = glucx_tool_median(t[1], o->rounds);
            printf("%12zu %-9s %12.3f %12.3f %10.3f %8" PRIu64 "\n", bytes,
                   lat ? "lat_us" : "bw_GBps", plain, sync, plain > 0 ? sync / plain : 0.0, wall);
            fflush(stdout);
        }
        if (wall != 0)
            goto out;
    }
    rc = 0;
out:
    free(p.sbuf);
    free(p.rbuf);
    free(t[0]);
    free(t[1]);
    return rc;
}

static int local_rank(int rank, int size, const char *store_dir, int progress, void *arg)
{
    progress_fd = progress;
    const opts_t *o = arg;
    glucx_store_t *store = NULL;
    glucx_context_t *ctx = NULL;
    glucx_comm_t *comm = NULL;
    int rc = 1;
    glucx_status_t st = glucx_store_file_create(store_dir, &store);
    if (st != GLUCX_OK) {
        fail(rank, "file store creation", st);
        goto out;
    }
    if ((st = glucx_context_create(NULL, &ctx)) != GLUCX_OK) {
        fail(rank, "context creation", st);
        goto out;
    }
    glucx_comm_params_t params = {
        .field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
        .rank = rank,
        .size = size,
        .store = store,
        .name = "glucx-p2p-bench",
        .timeout_ms = o->timeout_ms,
    };
    if ((st = glucx_comm_create(ctx, &params, &comm)) != GLUCX_OK) {
        fail(rank, "communicator creation", st);
        goto out;
    }
    rc = bench(comm, o);
out:
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);
    glucx_store_destroy(store);
    return rc;
}

int main(int argc, char **argv)
{
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    /* a rank reports progress after every timed phase; glucx's timeouts fire well before this */
    const double stall_s = 2.0 * (double)o.timeout_ms / 1e3 + 30.0 + o.seconds * 4;
    return glucx_tool_run_local(o.ranks, local_rank, &o, stall_s, "glucx-p2p-bench");
}
