/*
 * Unit tests: the collective signature. Ranks that disagree on the dtype or the op are caught
 * for every count (they travel exactly in the tag, not as a hash: with an 8-bit hash one count in
 * 256 slipped through), and the message names what differs.
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

typedef struct job {
    size_t count;
    glucx_dtype_t dtype[2];
    glucx_op_t op[2];
    glucx_status_t st[2];
    char text[2][600];
} job_t;

static int rank_fn(glucx_fake_world_t *w, int r, void *arg)
{
    job_t *j = arg;
    double in[1024] = {0}, out[1024];
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = in,
                           .recvbuf = out,
                           .count = j->count,
                           .dtype = j->dtype[r],
                           .op = j->op[r]};
    j->st[r] = glucx_test_coll(glucx_fake_tx(w, r), NULL, &a, 0, 1, 10000);
    snprintf(j->text[r], sizeof(j->text[r]), "%s", glucx_last_error());
    return 0;
}

static void run(job_t *j)
{
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(2, &w), GLUCX_OK);
    assert_int_equal(glucx_fake_run(w, rank_fn, j), 0);
    glucx_fake_world_destroy(w);
}

static void test_op_mismatch_every_count(void **state)
{
    (void)state;
    for (size_t count = 1; count <= 600; count++) {
        job_t j = {.count = count,
                   .dtype = {GLUCX_DTYPE_F32, GLUCX_DTYPE_F32},
                   .op = {GLUCX_OP_SUM, GLUCX_OP_MAX}};
        run(&j);
        for (int r = 0; r < 2; r++) {
            if (j.st[r] != GLUCX_ERR_MISMATCH)
                fail_msg("count %zu: rank %d returned %s", count, r, glucx_status_string(j.st[r]));
            if (strstr(j.text[r], "op") == NULL)
                fail_msg("count %zu: rank %d's message does not name the op: %s", count, r,
                         j.text[r]);
        }
    }
}

static void test_dtype_mismatch_every_count(void **state)
{
    (void)state;
    for (size_t count = 1; count <= 600; count++) {
        job_t j = {.count = count,
                   .dtype = {GLUCX_DTYPE_F32, GLUCX_DTYPE_I32}, /* same element size */
                   .op = {GLUCX_OP_SUM, GLUCX_OP_SUM}};
        run(&j);
        for (int r = 0; r < 2; r++) {
            if (j.st[r] != GLUCX_ERR_MISMATCH)
                fail_msg("count %zu: rank %d returned %s", count, r, glucx_status_string(j.st[r]));
            if (strstr(j.text[r], "dtype") == NULL)
                fail_msg("count %zu: rank %d's message does not name the dtype: %s", count, r,
                         j.text[r]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_mismatch_every_count),
        cmocka_unit_test(test_dtype_mismatch_every_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
