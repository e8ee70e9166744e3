/*
 * Unit tests: buffers that alias without GLUCX_IN_PLACE. Passing sendbuf == recvbuf must act
 * as IN_PLACE, and any other overlap must still give the right answer (the core works from a
 * copy of the input). Expected values are computed here from the inputs' formula.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/coll_harness.h"
#include "support/fake_tx.h"
#include "topo/topo.h"

enum { MAXN = 8, COUNT = 1001 };

typedef struct job {
    glucx_coll_t coll;
    int alg;
    int n;
    size_t shift; /* recvbuf = buffer + shift elements; sendbuf = buffer (shift 0: same pointer) */
    int32_t *buf[MAXN];
    int32_t *want[MAXN];
    glucx_topo_t *topo; /* two packages for an even n (the hierarchical rows then run their
                           phases), else one */
} job_t;

static int32_t value(int rank, size_t i)
{
    return (int32_t)(rank * 100003 + (int)(i % 9973) - 5000);
}

/* The input this rank reads, its expected output, and the number of input/output elements. */
static void prepare(job_t *j, int r)
{
    const int n = j->n;
    size_t in = 0, out = 0;
    switch (j->coll) {
    case GLUCX_COLL_ALLREDUCE:
        in = out = COUNT;
        break;
    case GLUCX_COLL_ALLTOALL:
        in = out = COUNT * (size_t)n;
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
        in = COUNT * (size_t)n;
        out = COUNT;
        break;
    case GLUCX_COLL_ALLGATHER:
        in = COUNT;
        out = COUNT * (size_t)n;
        break;
    default:
        fail();
    }
    size_t total = (in > out ? in : out) + j->shift + 16;
    j->buf[r] = calloc(total, sizeof(int32_t));
    j->want[r] = calloc(out, sizeof(int32_t));
    assert_non_null(j->buf[r]);
    assert_non_null(j->want[r]);
    for (size_t i = 0; i < in; i++)
        j->buf[r][i] = value(r, i);
    for (size_t i = 0; i < out; i++) {
        int64_t w = 0;
        switch (j->coll) {
        case GLUCX_COLL_ALLREDUCE:
            for (int q = 0; q < n; q++)
                w += value(q, i);
            break;
        case GLUCX_COLL_ALLTOALL: /* block q of the output came from rank q's block r */
            w = value((int)(i / COUNT), (size_t)r * COUNT + i % COUNT);
            break;
        case GLUCX_COLL_REDUCE_SCATTER:
            for (int q = 0; q < n; q++)
                w += value(q, (size_t)r * COUNT + i);
            break;
        case GLUCX_COLL_ALLGATHER:
            w = value((int)(i / COUNT), i % COUNT);
            break;
        default:
            break;
        }
        j->want[r][i] = (int32_t)w;
    }
}

static int rank_fn(glucx_fake_world_t *w, int r, void *arg)
{
    job_t *j = arg;
    glucx_coll_args_t a = {.coll = j->coll,
                           .sendbuf = j->buf[r],
                           .recvbuf = j->buf[r] + j->shift,
                           .count = COUNT,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    glucx_status_t st = glucx_test_coll(glucx_fake_tx(w, r), j->topo, &a, j->alg, 1, 20000);
    GLUCX_TEST_CHECK(st == GLUCX_OK, "%s: %s", glucx_status_string(st), glucx_last_error());
    size_t out = j->coll == GLUCX_COLL_ALLTOALL || j->coll == GLUCX_COLL_ALLGATHER
                     ? COUNT * (size_t)j->n
                     : COUNT;
    for (size_t i = 0; i < out; i++)
        GLUCX_TEST_CHECK(j->buf[r][j->shift + i] == j->want[r][i],
                         "%s/%s n=%d shift=%zu rank %d element %zu: got %d, want %d",
                         glucx_coll_name(j->coll), glucx_coll_tables[j->coll]->algs[j->alg].name,
                         j->n, j->shift, r, i, j->buf[r][j->shift + i], j->want[r][i]);
    return 0;
}

static void run_all(glucx_coll_t coll, size_t shift)
{
    const glucx_coll_table_t *t = glucx_coll_tables[coll];
    for (int alg = 0; alg < t->count; alg++) {
        for (int n = 2; n <= 5; n++) {
            if (coll == GLUCX_COLL_ALLGATHER &&
                strcmp(t->algs[alg].name, "recursive_doubling") == 0 && (n & (n - 1)) != 0)
                continue; /* powers of two only */
            job_t j = {.coll = coll, .alg = alg, .n = n, .shift = shift};
            for (int r = 0; r < n; r++)
                prepare(&j, r);
            assert_int_equal(glucx_topo_create_uniform(n, n % 2 ? 1 : 2, &j.topo), GLUCX_OK);
            glucx_fake_world_t *w;
            assert_int_equal(glucx_fake_world_create(n, &w), GLUCX_OK);
            int rc = glucx_fake_run(w, rank_fn, &j);
            glucx_fake_world_destroy(w);
            glucx_topo_destroy(j.topo);
            for (int r = 0; r < n; r++) {
                free(j.buf[r]);
                free(j.want[r]);
            }
            if (rc != 0)
                fail_msg("%s/%s on %d ranks with shift %zu failed", glucx_coll_name(coll),
                         t->algs[alg].name, n, shift);
        }
    }
}

static void test_same_pointer(void **state)
{
    (void)state;
    run_all(GLUCX_COLL_ALLREDUCE, 0);
    run_all(GLUCX_COLL_ALLTOALL, 0);
    run_all(GLUCX_COLL_REDUCE_SCATTER, 0);
}

static void test_partial_overlap(void **state)
{
    (void)state;
    run_all(GLUCX_COLL_ALLREDUCE, 3);
    run_all(GLUCX_COLL_ALLTOALL, 5);
    run_all(GLUCX_COLL_REDUCE_SCATTER, 1);
    run_all(GLUCX_COLL_ALLGATHER, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_pointer),
        cmocka_unit_test(test_partial_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
