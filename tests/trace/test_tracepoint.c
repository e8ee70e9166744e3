/* Unit tests of the trace macro layer's helpers (plugin/util/tracepoint.c): algorithm ids cover
 * every algorithm row, communicator ids follow EVENTS.md, sites are off without a session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "coll/coll.h"
#include "util/tracepoint.h"

/* Every row of every collective table has a trace id, and a name maps to one id only. */
static void test_alg_ids_cover_tables(void **state)
{
    (void)state;
    int rows = 0;
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        const glucx_coll_table_t *t = glucx_coll_tables[c];
        for (int i = 0; i < t->count; i++, rows++) {
            int id = glucx_tp_alg_id(t->algs[i].name);
            if (id == GLUCX_TP_ALG_NONE)
                fail_msg("algorithm %s of %s has no trace id: append it to GLUCX_TP_ALG_MAP "
                         "(trace/include/glucx_tp/ids.h) and EVENTS.md",
                         t->algs[i].name, glucx_coll_name((glucx_coll_t)c));
            assert_true(id >= 0 && id < 127); /* stored as i8 */
        }
    }
    assert_true(rows > 0);
    /* distinct names, distinct ids */
    static const char *const names[] = {
#define NAME_(uname, lname, value) #lname,
        GLUCX_TP_ALG_MAP(NAME_)
#undef NAME_
    };
    const int n = (int)(sizeof(names) / sizeof(names[0]));
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            assert_int_not_equal(glucx_tp_alg_id(names[i]), glucx_tp_alg_id(names[j]));
    assert_int_equal(glucx_tp_alg_id(NULL), GLUCX_TP_ALG_NONE);
    assert_int_equal(glucx_tp_alg_id("no_such_algorithm"), GLUCX_TP_ALG_NONE);
    assert_int_equal(glucx_tp_alg_id("ring"), GLUCX_TP_ALG_RING);
}

/* Reference: FNV-1a 64 + splitmix64 written out independently from EVENTS.md. */
static uint64_t ref_comm_id(const char *name, int size, const char *const *recs)
{
    unsigned char buf[4096];
    size_t n = 0;
    memcpy(buf + n, name, strlen(name));
    n += strlen(name);
    buf[n++] = 0;
    for (int b = 0; b < 4; b++)
        buf[n++] = (unsigned char)((uint32_t)size >> (8 * b));
    for (int r = 0; r < size; r++) {
        uint32_t len = (uint32_t)strlen(recs[r]);
        for (int b = 0; b < 4; b++)
            buf[n++] = (unsigned char)(len >> (8 * b));
        memcpy(buf + n, recs[r], len);
        n += len;
    }
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++)
        h = (h ^ buf[i]) * UINT64_C(1099511628211);
    h ^= h >> 30;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h ? h : 1;
}

static uint64_t comm_id(const char *name, int size, const char *const *recs)
{
    const void *p[8];
    size_t lens[8];
    for (int r = 0; r < size; r++) {
        p[r] = recs[r];
        lens[r] = strlen(recs[r]);
    }
    return glucx_tp_comm_id(name, size, p, lens);
}

static void test_comm_id(void **state)
{
    (void)state;
    const char *a[3] = {"addr-a", "addr-b", "addr-c"};
    const char *b[3] = {"addr-b", "addr-a", "addr-c"}; /* same records, other order */
    const char *c[3] = {"addr-a", "addr-b", "addr-d"};
    uint64_t id = comm_id("gloo", 3, a);
    assert_true(id == ref_comm_id("gloo", 3, a));
    assert_true(id != 0);
    assert_true(id == comm_id("gloo", 3, a)); /* deterministic */
    assert_true(id != comm_id("gloo", 3, b));
    assert_true(id != comm_id("gloo", 3, c));
    assert_true(id != comm_id("world", 3, a));
    assert_true(id != comm_id("gloo", 2, a));
    /* record boundaries count: ("ab","c") differs from ("a","bc") */
    const char *d[2] = {"ab", "c"}, *e[2] = {"a", "bc"};
    assert_true(comm_id("x", 2, d) != comm_id("x", 2, e));
    /* NULL name is the empty name */
    const void *p[1] = {"r"};
    size_t l[1] = {1};
    const char *f[1] = {"r"};
    assert_true(glucx_tp_comm_id(NULL, 1, p, l) == ref_comm_id("", 1, f));
}

/* No provider, no session: every site is off. */
static void test_sites_off(void **state)
{
    (void)state;
    assert_int_equal(glucx_tp_provider_loaded(), 0);
    assert_false(GLUCX_TP_ON(send_begin));
    assert_false(GLUCX_TP_ON(coll_begin));
    int evaluated = 0;
    /* arguments are not evaluated when the event is off */
    GLUCX_TP(bucket_ready, 1, 0, (uint64_t)(evaluated = 1), 64);
    assert_int_equal(evaluated, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alg_ids_cover_tables),
        cmocka_unit_test(test_comm_id),
        cmocka_unit_test(test_sites_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
