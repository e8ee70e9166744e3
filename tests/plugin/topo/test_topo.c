/* Unit tests: packages from host identity, link classes, calibration files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "topo/topo.h"

static void test_packages_from_hosts(void **state)
{
    (void)state;
    const char *hosts[] = {"b", "a", "b", "c", "a"};
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create(5, hosts, NULL, &t), GLUCX_OK);
    assert_int_equal(t->npackages, 3);
    /* numbered by first appearance */
    int expect[] = {0, 1, 0, 2, 1};
    for (int r = 0; r < 5; r++)
        assert_int_equal(t->package_of[r], expect[r]);
    assert_int_equal(glucx_topo_link_class(t, 0, 2), GLUCX_LINK_INTRA);
    assert_int_equal(glucx_topo_link_class(t, 0, 1), GLUCX_LINK_INTER);
    assert_int_equal(glucx_topo_link_class(t, 3, 3), GLUCX_LINK_SELF);
    assert_int_equal(glucx_topo_link_id(t, 2, 4), 2 * 5 + 4);
    /* several packages: the bottleneck is the inter-package class */
    glucx_link_cost_t b = glucx_topo_bottleneck(t);
    assert_true(b.alpha_ns == t->cost[GLUCX_LINK_INTER].alpha_ns);
    glucx_topo_destroy(t);

    const char *one[] = {"h", "h", "h"};
    assert_int_equal(glucx_topo_create(3, one, NULL, &t), GLUCX_OK);
    assert_int_equal(t->npackages, 1);
    b = glucx_topo_bottleneck(t);
    assert_true(b.beta_ns_per_byte == t->cost[GLUCX_LINK_INTRA].beta_ns_per_byte);
    glucx_topo_destroy(t);
    glucx_topo_destroy(NULL);
}

static void test_uniform(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 2, &t), GLUCX_OK);
    for (int r = 0; r < 8; r++)
        assert_int_equal(t->package_of[r], r / 4);
    glucx_topo_destroy(t);
    assert_int_equal(glucx_topo_create_uniform(2, 3, &t), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_topo_create_uniform(0, 1, &t), GLUCX_ERR_INVALID_ARG);
}

static void test_calibration_round_trip(void **state)
{
    (void)state;
    char path[] = "/tmp/glucx-cal-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(4, 2, &t), GLUCX_OK);
    t->cost[GLUCX_LINK_INTRA].alpha_ns = 1234.5;
    t->cost[GLUCX_LINK_INTER].beta_ns_per_byte = 0.125;
    t->gamma_ns_per_byte = 0.0625;
    assert_int_equal(glucx_topo_calibration_save(t, path), GLUCX_OK);
    uint64_t d1 = glucx_topo_digest(t);
    glucx_topo_destroy(t);

    const char *hosts[] = {"x", "x", "y", "y"};
    glucx_topo_t *costs;
    assert_int_equal(glucx_topo_create_uniform(1, 1, &costs), GLUCX_OK);
    assert_int_equal(glucx_topo_calibration_load(costs, path), GLUCX_OK);
    assert_int_equal(glucx_topo_create(4, hosts, costs, &t), GLUCX_OK);
    glucx_topo_destroy(costs);
    assert_true(t->cost[GLUCX_LINK_INTRA].alpha_ns == 1234.5);
    assert_true(t->cost[GLUCX_LINK_INTER].beta_ns_per_byte == 0.125);
    assert_true(t->gamma_ns_per_byte == 0.0625);
    assert_true(glucx_topo_digest(t) == d1); /* same packages, same costs */
    t->cost[GLUCX_LINK_INTER].alpha_ns += 1;
    assert_true(glucx_topo_digest(t) != d1);
    glucx_topo_destroy(t);

    /* malformed files name the file and line */
    FILE *f = fopen(path, "w");
    fprintf(f, "# comment\nintra.alpha_ns 10\nbogus.key 3\n");
    fclose(f);
    assert_int_equal(glucx_topo_create_uniform(2, 1, &t), GLUCX_OK);
    assert_int_equal(glucx_topo_calibration_load(t, path), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "line 3"));
    f = fopen(path, "w");
    fprintf(f, "intra.alpha_ns -4\n");
    fclose(f);
    assert_int_equal(glucx_topo_calibration_load(t, path), GLUCX_ERR_INVALID_ARG);
    unlink(path);
    assert_int_equal(glucx_topo_calibration_load(t, path), GLUCX_ERR_INVALID_ARG);
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packages_from_hosts),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_calibration_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
