/*
 * UCX transport lifecycle: context + transport + connect + one message + destroy, many times in
 * two forked processes; the number of open file descriptors must not grow (and the ASan build
 * checks memory). Default transports (shared memory) and UCX_TLS=tcp.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ucx_test_common.h"

#define ITERATIONS 200

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static int one_round(ucx_test_t *t, int rank, int size, int i)
{
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    int peer = 1 - rank, src[1] = {peer};
    int out = i * 2 + rank, in = -1;
    glucx_tx_req_t r = {0}, s = {0};
    glucx_tx_req_t *all[2] = {&r, &s};
    CHECK_OK(tx->ops->irecv(tx, src, 1, ucx_tag(1, 0), 0, &in, sizeof(in), &r));
    CHECK_OK(tx->ops->isend(tx, peer, ucx_tag(1, 0), &out, sizeof(out), &s));
    CHECK_OK(tx->ops->wait(tx, all, 2, glucx_deadline_ns(glucx_test_ms(20000))));
    CHECK(in == i * 2 + peer, "round %d: got %d", i, in);
    /* both sides are done with the transport before either closes it */
    CHECK(ucx_barrier(t, size, NULL) == 0, "barrier");
    ucx_rank_down(&e);
    return 0;
}

static int lifecycle_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    int before = count_fds();
    double t0 = ucx_now_s();
    for (int i = 1; i <= ITERATIONS; i++)
        if (one_round(t, rank, size, i) != 0)
            return 1;
    int after = count_fds();
    if (rank == 0)
        fprintf(stderr, "%s: %d rounds in %.1f s, %d descriptors before, %d after\n",
                ucx_mode_name(t->mode), ITERATIONS, ucx_now_s() - t0, before, after);
    CHECK(before > 0 && after == before, "descriptors: %d before, %d after %d rounds", before,
          after, ITERATIONS);
    return 0;
}

static void test_create_destroy_loop(void **state)
{
    (void)state;
    for (int mode = UCX_TEST_DEFAULT; mode <= UCX_TEST_TCP; mode++) {
        ucx_test_t *t = ucx_test_new(mode, 0);
        assert_non_null(t);
        int rc = glucx_test_procs_run(2, lifecycle_child, t, 280);
        if (rc != 0)
            fprintf(stderr, "failed in %s mode\n", ucx_mode_name(mode));
        assert_int_equal(rc, 0);
    }
}

/* Descriptors before the first UCX use at all and after one full create/destroy. */
static int first_use_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    int before = count_fds();
    if (one_round(t, rank, size, 0) != 0)
        return 1;
    int after = count_fds();
    if (rank == 0)
        fprintf(stderr, "%s: %d descriptors before the first UCX use, %d after destroy\n",
                ucx_mode_name(t->mode), before, after);
    CHECK(after == before, "first use left %d descriptors open", after - before);
    return 0;
}

static void test_first_use(void **state)
{
    (void)state;
    ucx_test_t *t = ucx_test_new(UCX_TEST_DEFAULT, 0);
    assert_non_null(t);
    assert_int_equal(glucx_test_procs_run(2, first_use_child, t, 60), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_use),
        cmocka_unit_test(test_create_destroy_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
