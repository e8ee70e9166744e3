/* Unit tests: GLUCX_* environment parsing and size strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/config.h"

static void test_parse_size(void **state)
{
    (void)state;
    size_t v;
    assert_int_equal(glucx_config_parse_size("0", &v), GLUCX_OK);
    assert_int_equal(v, 0);
    assert_int_equal(glucx_config_parse_size("4096", &v), GLUCX_OK);
    assert_int_equal(v, 4096);
    assert_int_equal(glucx_config_parse_size("4K", &v), GLUCX_OK);
    assert_int_equal(v, 4096);
    assert_int_equal(glucx_config_parse_size("16m", &v), GLUCX_OK);
    assert_int_equal(v, 16u << 20);
    assert_int_equal(glucx_config_parse_size("2G", &v), GLUCX_OK);
    assert_int_equal(v, (size_t)2 << 30);
    assert_int_equal(glucx_config_parse_size("1KiB", &v), GLUCX_OK);
    assert_int_equal(v, 1024);
    assert_int_equal(glucx_config_parse_size("inf", &v), GLUCX_OK);
    assert_true(v == SIZE_MAX);
    const char *bad[] = {"", "-1", "K", "4X", "4KK", "1.5M", " 4", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(glucx_config_parse_size(bad[i], &v), GLUCX_ERR_INVALID_ARG);
}

static void test_defaults_and_values(void **state)
{
    (void)state;
    unsetenv("GLUCX_TIMEOUT_MS");
    unsetenv("GLUCX_KEEPALIVE_MS");
    unsetenv("GLUCX_TUNE");
    glucx_config_t c;
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    assert_int_equal(c.timeout_ms, 300000);
    assert_int_equal(c.keepalive_ms, 1000);
    assert_string_equal(c.tune, "");

    setenv("GLUCX_TIMEOUT_MS", "1234", 1);
    setenv("GLUCX_TUNE", "allreduce:ring", 1);
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    assert_int_equal(c.timeout_ms, 1234);
    assert_string_equal(c.tune, "allreduce:ring");

    const char *bad[] = {"abc", "0", "-5", "12ms", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("GLUCX_TIMEOUT_MS", bad[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_ERR_INVALID_ARG);
        assert_non_null(strstr(glucx_last_error(), "GLUCX_TIMEOUT_MS"));
    }
    unsetenv("GLUCX_TIMEOUT_MS");
    unsetenv("GLUCX_TUNE");
    setenv("GLUCX_LOG_LEVEL", "loud", 1);
    assert_int_equal(glucx_config_read(&c), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "GLUCX_LOG_LEVEL=loud"));
    setenv("GLUCX_LOG_LEVEL", "INFO", 1);
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    unsetenv("GLUCX_LOG_LEVEL");

    /* GLUCX_HOSTID: 255 characters fit, 256 are refused (they would be cut) */
    char id[300];
    memset(id, 'h', sizeof(id));
    id[255] = '\0';
    setenv("GLUCX_HOSTID", id, 1);
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    id[255] = 'x';
    id[256] = '\0';
    setenv("GLUCX_HOSTID", id, 1);
    assert_int_equal(glucx_config_read(&c), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "GLUCX_HOSTID is 256 characters long"));
    unsetenv("GLUCX_HOSTID");
}

static void test_coll_nice(void **state)
{
    (void)state;
    glucx_config_t c;
    unsetenv("GLUCX_COLL_NICE");
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    int n;
    const glucx_config_var_t *vars = glucx_config_vars(&n);
    const char *def = NULL;
    for (int j = 0; j < n; j++)
        if (strcmp(vars[j].name, "GLUCX_COLL_NICE") == 0)
            def = vars[j].default_value;
    assert_non_null(def);
    assert_int_equal(c.coll_nice, strtol(def, NULL, 10)); /* the documented default is read */
    const char *good[] = {"-20", "0", "19", "-3"};
    const int64_t want[] = {-20, 0, 19, -3};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("GLUCX_COLL_NICE", good[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_OK);
        assert_int_equal(c.coll_nice, want[i]);
    }
    const char *bad[] = {"-21", "20", "high", "", "-5x", "1.5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("GLUCX_COLL_NICE", bad[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_ERR_INVALID_ARG);
        assert_non_null(strstr(glucx_last_error(), "GLUCX_COLL_NICE"));
    }
    unsetenv("GLUCX_COLL_NICE");
}

static void test_yield(void **state)
{
    (void)state;
    glucx_config_t c;
    unsetenv("GLUCX_YIELD");
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    assert_int_equal(c.yield, 0); /* the documented "auto" */
    const char *good[] = {"auto", "always", "never", "ALWAYS", "Never"};
    const int want[] = {0, 1, 2, 1, 2};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("GLUCX_YIELD", good[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_OK);
        assert_int_equal(c.yield, want[i]);
    }
    const char *bad[] = {"", "1", "yes", "sometimes", "auto "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("GLUCX_YIELD", bad[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_ERR_INVALID_ARG);
        assert_non_null(strstr(glucx_last_error(), "GLUCX_YIELD"));
    }
    unsetenv("GLUCX_YIELD");
}

static void test_window_hold(void **state)
{
    (void)state;
    glucx_config_t c;
    unsetenv("GLUCX_WINDOW_HOLD");
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    assert_int_equal(c.window_hold, (size_t)256 << 20); /* the documented 256M */
    const char *good[] = {"4096", "64K", "1G", "0"};
    const size_t want[] = {4096, 65536, (size_t)1 << 30, 0};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("GLUCX_WINDOW_HOLD", good[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_OK);
        assert_int_equal(c.window_hold, want[i]);
    }
    const char *bad[] = {"lots", "-1", "12Q", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("GLUCX_WINDOW_HOLD", bad[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_ERR_INVALID_ARG);
        assert_non_null(strstr(glucx_last_error(), "GLUCX_WINDOW_HOLD"));
    }
    unsetenv("GLUCX_WINDOW_HOLD");
}

/* GLUCX_NET_SEG: auto (the transport decides: SIZE_MAX), sizes up to 1G, else an error naming it */
static void test_net_seg(void **state)
{
    (void)state;
    glucx_config_t c;
    unsetenv("GLUCX_NET_SEG");
    assert_int_equal(glucx_config_read(&c), GLUCX_OK);
    assert_true(c.net_seg == SIZE_MAX);                             /* the documented auto */
    const char *good[] = {"0", "4096", "256K", "1M", "1G", "AUTO"}; /* 4K is the least */
    const size_t want[] = {0, 4096, 256 << 10, 1 << 20, (size_t)1 << 30, SIZE_MAX};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("GLUCX_NET_SEG", good[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_OK);
        assert_true(c.net_seg == want[i]);
    }
    const char *bad[] = {"", "-1", "2G", "inf", "12Q", "1.5M", "1", "4095"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("GLUCX_NET_SEG", bad[i], 1);
        assert_int_equal(glucx_config_read(&c), GLUCX_ERR_INVALID_ARG);
        assert_non_null(strstr(glucx_last_error(), "GLUCX_NET_SEG"));
    }
    unsetenv("GLUCX_NET_SEG");
}

static void test_table_lists_every_read_variable(void **state)
{
    (void)state;
    int n;
    const glucx_config_var_t *vars = glucx_config_vars(&n);
    const char *must[] = {"GLUCX_LOG_LEVEL", "GLUCX_TIMEOUT_MS", "GLUCX_KEEPALIVE_MS",
                          "GLUCX_TUNE",      "GLUCX_STORE",      "GLUCX_CALIBRATION",
                          "GLUCX_HOSTID",    "GLUCX_COLL_NICE",  "GLUCX_WINDOW_HOLD",
                          "GLUCX_YIELD",     "GLUCX_NET_SEG"};
    for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++) {
        int found = 0;
        for (int j = 0; j < n; j++)
            found |= strcmp(vars[j].name, must[i]) == 0 && vars[j].description[0] != '\0';
        assert_true(found);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size), cmocka_unit_test(test_defaults_and_values),
        cmocka_unit_test(test_coll_nice),  cmocka_unit_test(test_window_hold),
        cmocka_unit_test(test_net_seg),    cmocka_unit_test(test_table_lists_every_read_variable),
        cmocka_unit_test(test_yield),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
