/*
 * One rank of the workload of the cluster diff test (test_cluster.py, case diff), started by
 * `glucx-cluster run` (RANK, WORLD_SIZE and GLUCX_STORE from the launcher):
 *
 *   diff_job ITERS BYTES COMPUTE_US
 *
 * ITERS iterations, each marked with glucx_trace_iteration_begin/end (so the analysis sees
 * exactly these iterations), of a busy loop of COMPUTE_US microseconds traced as a compute phase
 * and one f32 sum allreduce of BYTES bytes. One untimed allreduce first (connections, warm-up).
 * Exit 0 when every allreduce returned GLUCX_OK with the right sum, 1 otherwise (the message names
 * the rank, the call and the status), 2 on bad arguments or launcher variables.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <glucx/glucx.h>
#include <glucx/store.h>
#include <glucx/trace.h>

#define COMM_TIMEOUT_MS 60000

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int env_int(const char *name, long *v_p)
{
    const char *s = getenv(name);
    char *end = NULL;
    if (!s)
        return -1;
    *v_p = strtol(s, &end, 10);
    return *end || *v_p < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    long rank, size;
    if (argc != 4 || env_int("RANK", &rank) != 0 || env_int("WORLD_SIZE", &size) != 0 || size < 1) {
        fprintf(stderr, "usage: diff_job ITERS BYTES COMPUTE_US, with RANK, WORLD_SIZE and "
                        "GLUCX_STORE set (glucx-cluster run sets them)\n");
        return 2;
    }
    const long iters = atol(argv[1]), compute_us = atol(argv[3]);
    const size_t count = (size_t)atol(argv[2]) / sizeof(float);
    int rc = 1;
    glucx_context_t *ctx = NULL;
    glucx_store_t *store = NULL;
    glucx_comm_t *comm = NULL;
    float *buf = malloc((count ? count : 1) * sizeof(float));
    glucx_status_t st = glucx_store_from_env(&store);
    if (st != GLUCX_OK || !buf) {
        fprintf(stderr, "diff_job: rank %ld: cannot open the store: %s: %s\n", rank,
                glucx_status_string(st), glucx_last_error());
        goto out;
    }
    if ((st = glucx_context_create(NULL, &ctx)) != GLUCX_OK) {
        fprintf(stderr, "diff_job: rank %ld: context: %s\n", rank, glucx_status_string(st));
        goto out;
    }
    glucx_comm_params_t p = {.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
                             .rank = (int)rank,
                             .size = (int)size,
                             .store = store,
                             .name = "diff_job",
                             .timeout_ms = COMM_TIMEOUT_MS};
    if ((st = glucx_comm_create(ctx, &p, &comm)) != GLUCX_OK) {
        fprintf(stderr, "diff_job: rank %ld: communicator: %s: %s\n", rank, glucx_status_string(st),
                glucx_last_error());
        goto out;
    }
    for (long k = -1; k < iters; k++) {
        for (size_t i = 0; i < count; i++)
            buf[i] = (float)(rank + 1);
        if (k >= 0) {
            glucx_trace_iteration_begin(comm, (uint64_t)k);
            glucx_trace_compute_begin(comm, "busy", (uint64_t)k);
            volatile uint64_t spin = 0;
            for (int64_t end = now_ns() + compute_us * 1000; now_ns() < end;)
                spin++;
            glucx_trace_compute_end(comm, "busy", (uint64_t)k);
        }
        st = glucx_allreduce(comm, buf, buf, count, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL);
        if (k >= 0)
            glucx_trace_iteration_end(comm, (uint64_t)k);
        const float want = (float)(size * (size + 1) / 2);
        if (st != GLUCX_OK || (count > 0 && (buf[0] != want || buf[count - 1] != want))) {
            fprintf(stderr, "diff_job: rank %ld: allreduce %ld: %s (element 0: %g, want %g)\n",
                    rank, k, glucx_status_string(st), count ? buf[0] : 0.0, want);
            goto out;
        }
    }
    rc = 0;
out:
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);
    glucx_store_destroy(store);
    free(buf);
    return rc;
}
