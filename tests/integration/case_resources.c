/*
 * Cases about resources:
 * - "waitcpu": waiting is cheap. The last rank sleeps 5 s before a barrier; every other rank
 *   measures its own process CPU time across the barrier, which must stay under 10% of the wall
 *   time it waited (the machines have 2 cores: busy polling ranks would starve the others).
 *   Likewise for a p2p wait on a message sent 2 s late.
 * - "leaks": 200 communicators created and destroyed in one pair of processes, each running one
 *   small allreduce: the open file descriptors after the loop equal those after the first
 *   iteration, and VmRSS after iteration 200 is within 8 MiB of after iteration 20 (not checked
 *   under AddressSanitizer, whose quarantine holds freed memory; LeakSanitizer checks there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

/* ---- waitcpu ---- */

static int check_cpu(const char *what, int64_t wall_ns, int64_t cpu_ns, int64_t min_wall_ms)
{
    double share = wall_ns > 0 ? (double)cpu_ns / (double)wall_ns : 1.0;
    itest_note("%s: waited %.2f s using %.3f s of CPU (%.1f%%)", what, (double)wall_ns / 1e9,
               (double)cpu_ns / 1e9, share * 100);
    int rc = 0;
    if (wall_ns / 1000000 < min_wall_ms) {
        ITEST_FAIL("%s returned after %.2f s although the late rank arrives after %.2f s", what,
                   (double)wall_ns / 1e9, (double)min_wall_ms / 1e3);
        rc = -1;
    }
    if (share >= 0.10) {
        ITEST_FAIL("%s: this rank used %.3f s of CPU while waiting %.3f s (%.1f%%, limit 10%%)",
                   what, (double)cpu_ns / 1e9, (double)wall_ns / 1e9, share * 100);
        rc = -1;
    }
    return rc;
}

int itest_case_waitcpu(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "waitcpu", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    const int late = size - 1;
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "warm-up barrier %d", i);
    if (rc == 0) {
        if (rank == late) {
            itest_sleep_ms(5000);
            rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "late barrier");
        } else {
            int64_t w0 = itest_now_ns(), c0 = itest_cpu_ns();
            glucx_status_t st = glucx_barrier(comm, NULL);
            int64_t wall = itest_now_ns() - w0, cpu = itest_cpu_ns() - c0;
            rc = ITEST_STATUS(st, GLUCX_OK, "barrier waiting for the late rank");
            if (rc == 0)
                rc = check_cpu("barrier", wall, cpu, 4000);
        }
    }
    /* p2p: rank 0 sends to rank 1 after 2 s */
    if (rc == 0 && (rank == 0 || rank == 1)) {
        glucx_request_t *req = NULL;
        int v = 42, got = 0;
        if (rank == 0) {
            itest_sleep_ms(2000);
            rc = ITEST_STATUS(glucx_isend(comm, &v, sizeof(v), 1, 3, &req), GLUCX_OK, "isend");
            if (rc == 0)
                rc = ITEST_STATUS(glucx_request_wait(req, glucx_test_ms(30000)), GLUCX_OK,
                                  "wait isend");
        } else {
            rc = ITEST_STATUS(glucx_irecv(comm, &got, sizeof(got), 0, 3, &req), GLUCX_OK, "irecv");
            int64_t w0 = itest_now_ns(), c0 = itest_cpu_ns();
            if (rc == 0)
                rc = ITEST_STATUS(glucx_request_wait(req, glucx_test_ms(30000)), GLUCX_OK,
                                  "wait irecv");
            int64_t wall = itest_now_ns() - w0, cpu = itest_cpu_ns() - c0;
            if (rc == 0) {
                rc = check_cpu("p2p receive", wall, cpu, 1500);
                ITEST_CHECK(got == 42, "received %d", got);
            }
        }
        glucx_request_free(req);
    }
    if (rc == 0)
        rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "final barrier");
    itest_close(ctx, store, comm);
    return rc;
}

/* ---- leaks ---- */

int itest_case_leaks(const itest_env_t *env, int rank, int size)
{
    enum { ITERS = 200, RSS_FROM = 20, COUNT = 64 };
    const long rss_slack_kib = 8 * 1024;
    itest_apply_variant(env);
    glucx_context_t *ctx = NULL;
    glucx_store_t *store = NULL;
    if (ITEST_STATUS(glucx_context_create(NULL, &ctx), GLUCX_OK, "context_create") ||
        ITEST_STATUS(glucx_store_file_create(env->store_dir, &store), GLUCX_OK, "store")) {
        glucx_context_destroy(ctx);
        return -1;
    }
    int rc = 0;
    int fds_first = -1, fds_last = -1;
    long rss_from = -1, rss_last = -1;
    int64_t t0 = itest_now_ns();
    for (int it = 0; it < ITERS && rc == 0; it++) {
        char name[32];
        snprintf(name, sizeof(name), "leak-%d", it);
        glucx_comm_t *comm;
        if (itest_comm(ctx, store, rank, size, name, glucx_test_ms(30000), &comm) != GLUCX_OK) {
            rc = -1;
            break;
        }
        int32_t in[COUNT], out[COUNT];
        for (int i = 0; i < COUNT; i++)
            in[i] = rank + i * it;
        glucx_status_t st =
            glucx_allreduce(comm, in, out, COUNT, GLUCX_DTYPE_I32, GLUCX_OP_SUM, NULL);
        if (ITEST_STATUS(st, GLUCX_OK, "allreduce on communicator %d", it) != 0) {
            rc = -1;
        } else {
            for (int i = 0; i < COUNT; i++) {
                int32_t want = size * (size - 1) / 2 + size * i * it;
                if (out[i] != want) {
                    ITEST_FAIL("communicator %d: allreduce index %d: expected %d, got %d", it, i,
                               want, out[i]);
                    rc = -1;
                    break;
                }
            }
        }
        glucx_comm_destroy(comm);
        if (it == 0)
            fds_first = itest_open_fds();
        if (it == RSS_FROM - 1)
            rss_from = itest_rss_kib();
        if (it == ITERS - 1) {
            fds_last = itest_open_fds();
            rss_last = itest_rss_kib();
        }
    }
    if (rc == 0) {
        itest_note("%d communicators in %.1f s: fds %d -> %d, VmRSS %ld KiB (after %d) -> %ld "
                   "KiB",
                   ITERS, (double)(itest_now_ns() - t0) / 1e9, fds_first, fds_last, rss_from,
                   RSS_FROM, rss_last);
        ITEST_CHECK(fds_first >= 0 && fds_last == fds_first,
                    "open file descriptors grew from %d after the first communicator to %d after "
                    "%d",
                    fds_first, fds_last, ITERS);
        if (itest_asan())
            itest_note("AddressSanitizer build: VmRSS bound not checked (quarantine)");
        else
            ITEST_CHECK(rss_from > 0 && rss_last - rss_from <= rss_slack_kib,
                        "VmRSS grew by %ld KiB from communicator %d to %d (limit %ld KiB)",
                        rss_last - rss_from, RSS_FROM, ITERS, rss_slack_kib);
    }
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}
