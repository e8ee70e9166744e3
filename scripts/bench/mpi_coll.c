/*
 * mpi_coll: the Open MPI side of scripts/compare.sh. Times float32 allreduce (sum), allgather
 * or alltoall with the same rules as glucx-bench, so the rows line up:
 *   - size in bytes as nccl-tests counts it (allreduce: the vector; allgather: total output;
 *     alltoall: total input), sizes from MIN to MAX multiplied by 2;
 *   - iterations 64 MiB / size clamped to 20..1000, warmup max(5, iters/10), out of place;
 *   - time: average per call on each rank, then the maximum over ranks, in microseconds.
 * Before timing, one call on known inputs is checked (so a broken setup cannot look fast).
 *
 * usage: mpirun -np N mpi_coll allreduce|allgather|alltoall MIN_BYTES MAX_BYTES
 * output (rank 0): one line per size, "size time_us", after a '#' comment line.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long iters_for(size_t bytes)
{
    size_t it = (64u << 20) / (bytes > 0 ? bytes : 1);
    return it < 20 ? 20 : it > 1000 ? 1000 : (long)it;
}

static int run(const char *coll, float *send, float *recv, size_t count, int n)
{
    if (strcmp(coll, "allreduce") == 0)
        return MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    size_t block = count / (size_t)n;
    if (strcmp(coll, "allgather") == 0)
        return MPI_Allgather(send, (int)block, MPI_FLOAT, recv, (int)block, MPI_FLOAT,
                             MPI_COMM_WORLD);
    return MPI_Alltoall(send, (int)block, MPI_FLOAT, recv, (int)block, MPI_FLOAT,
                        MPI_COMM_WORLD);
}

/* Inputs: element i of rank r is (r + 1) * 1000 + i % 1000 (exact in float); checks the
 * output against that rule. @return the number of wrong elements. */
static long check(const char *coll, const float *recv, size_t count, int me, int n)
{
    long wrong = 0;
    size_t block = count / (size_t)n;
    for (size_t i = 0; i < count; i++) {
        float want;
        if (strcmp(coll, "allreduce") == 0) {
            want = 0;
            for (int r = 0; r < n; r++)
                want += (float)((r + 1) * 1000 + (int)(i % 1000));
        } else if (strcmp(coll, "allgather") == 0) {
            if (i >= block * (size_t)n)
                break;
            size_t r = i / block, k = i % block;
            want = (float)((r + 1) * 1000 + k % 1000);
        } else {
            if (i >= block * (size_t)n)
                break;
            /* block r came from rank r, which put at index me*block + k its element */
            size_t r = i / block, k = i % block, src_index = (size_t)me * block + k;
            want = (float)((r + 1) * 1000 + src_index % 1000);
        }
        if (recv[i] != want)
            wrong++;
    }
    return wrong;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 4 || (strcmp(argv[1], "allreduce") != 0 && strcmp(argv[1], "allgather") != 0 &&
                      strcmp(argv[1], "alltoall") != 0)) {
        if (me == 0)
            fprintf(stderr, "usage: mpi_coll allreduce|allgather|alltoall MIN_BYTES MAX_BYTES\n");
        MPI_Finalize();
        return 2;
    }
    const char *coll = argv[1];
    size_t min = strtoull(argv[2], NULL, 10), max = strtoull(argv[3], NULL, 10);
    size_t cap = max / sizeof(float) + (size_t)n;
    float *send = malloc(cap * sizeof(float)), *recv = malloc(cap * sizeof(float));
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "mpi_coll: cannot allocate %zu bytes\n", 2 * cap * sizeof(float));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(recv, 0, cap * sizeof(float));
    if (me == 0) {
        int len;
        char ver[MPI_MAX_LIBRARY_VERSION_STRING];
        MPI_Get_library_version(ver, &len);
        ver[strcspn(ver, "\n,")] = '\0';
        printf("# mpi_coll %s, %d ranks, f32, %s\n", coll, n, ver);
    }
    int rc = 0;
    for (size_t s = min; s <= max; s *= 2) {
        size_t count = s / sizeof(float);
        if (strcmp(coll, "allreduce") != 0)
            count = count / (size_t)n * (size_t)n;
        size_t bytes = count * sizeof(float);
        if (strcmp(coll, "alltoall") == 0) {
            for (size_t i = 0; i < count; i++)
                send[i] = (float)((me + 1) * 1000 + (int)(i % 1000));
        } else {
            size_t in = strcmp(coll, "allreduce") == 0 ? count : count / (size_t)n;
            for (size_t i = 0; i < in; i++)
                send[i] = (float)((me + 1) * 1000 + (int)(i % 1000));
        }
        run(coll, send, recv, count, n);
        long wrong = check(coll, recv, count, me, n), wrong_all = 0;
        MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (wrong_all != 0) {
            if (me == 0)
                fprintf(stderr, "mpi_coll: %s of %zu bytes: %ld wrong elements\n", coll, bytes,
                        wrong_all);
            rc = 1;
            break;
        }
        long iters = iters_for(bytes), warmup = iters / 10 > 5 ? iters / 10 : 5;
        for (long w = 0; w < warmup; w++)
            run(coll, send, recv, count, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long it = 0; it < iters; it++)
            run(coll, send, recv, count, n);
        double t_us = (MPI_Wtime() - t0) * 1e6 / (double)iters, t_max = 0;
        MPI_Reduce(&t_us, &t_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0) {
            printf("%zu %.3f\n", bytes, t_max);
            fflush(stdout);
        }
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return rc;
}
