/*
 * Checks that GCC vectorizes every reduction kernel loop of plugin/kernel/reduce.c.
 *
 * Compiles reduce.c with the project's compiler at -O3 with -fopt-info-vec-optimized, finds each
 * kernel's line by its GLUCX_KERNEL(<name>, ...) row in the source, and requires a "loop
 * vectorized using N byte vectors" report on that line:
 * - built for the default target with -DGLUCX_KERNEL_NO_CLONES (x86-64: the SSE2 baseline),
 *   N >= 16 for every kernel;
 * - where reduce.c builds AVX2 clones (x86-64 ELF), also N >= 32 for every kernel.
 * The compiler, source path and include directories come from tests/CMakeLists.txt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#if defined(GLUCX_TEST_VECTORIZE_SKIP)
/* -fopt-info-vec is a GCC option: with another compiler there is nothing to check. */
static void test_not_gcc(void **state)
{
    (void)state;
    print_message("vectorization check needs GCC; the compiler is %s\n", GLUCX_TEST_VECTORIZE_SKIP);
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_not_gcc)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#elif !defined(GLUCX_TEST_CC) || !defined(GLUCX_TEST_KERNEL_SRC) ||                                \
    !defined(GLUCX_TEST_KERNEL_INCLUDES)
/* Set by the plugin/kernel block of tests/CMakeLists.txt. */
static void test_not_configured(void **state)
{
    (void)state;
    fail_msg("GLUCX_TEST_CC, GLUCX_TEST_KERNEL_SRC and GLUCX_TEST_KERNEL_INCLUDES are not defined: "
             "see the plugin/kernel block at the end of tests/CMakeLists.txt");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_not_configured)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else

#define MAX_KERNELS 128
#define MAX_LINES 4096

typedef struct {
    char name[64];
    int line;
} kernel_row_t;

/* Kernel rows of the source: lines that start with "GLUCX_KERNEL(". */
static int find_kernel_rows(const char *path, kernel_row_t *rows)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    char buf[512];
    int line = 0, n = 0;
    static const char prefix[] = "GLUCX_KERNEL(";
    while (fgets(buf, sizeof(buf), f) != NULL) {
        line++;
        if (strncmp(buf, prefix, sizeof(prefix) - 1) != 0)
            continue;
        const char *name = buf + sizeof(prefix) - 1;
        const size_t len = strcspn(name, ", )");
        assert_true(n < MAX_KERNELS && len > 0 && len < sizeof(rows[n].name));
        memcpy(rows[n].name, name, len);
        rows[n].name[len] = '\0';
        rows[n].line = line;
        n++;
    }
    fclose(f);
    return n;
}

/* Append s to cmd in single quotes, for /bin/sh. */
static void append_quoted(char *cmd, size_t size, const char *s)
{
    size_t len = strlen(cmd);
    assert_true(len + 3 < size);
    cmd[len++] = ' ';
    cmd[len++] = '\'';
    for (; *s != '\0'; s++) {
        if (*s == '\'') {
            assert_true(len + 5 < size);
            memcpy(cmd + len, "'\\''", 4);
            len += 4;
        } else {
            assert_true(len + 2 < size);
            cmd[len++] = *s;
        }
    }
    cmd[len++] = '\'';
    cmd[len] = '\0';
}

/*
 * Compile the kernels with the extra flag (may be NULL) and record, per source line of the
 * kernel file, the widest vector size GCC reports for a vectorized loop there.
 */
static void compile_and_collect(const char *extra_flag, int *widest)
{
    char cmd[8192] = "";
    append_quoted(cmd, sizeof(cmd), GLUCX_TEST_CC);
    static const char *const flags[] = {"-std=c11",
                                        "-D_GNU_SOURCE",
                                        "-O3",
                                        "-fopt-info-vec-optimized",
                                        "-ftrack-macro-expansion=0",
                                        "-c",
                                        "-o",
                                        "/dev/null"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        append_quoted(cmd, sizeof(cmd), flags[i]);
    if (extra_flag != NULL)
        append_quoted(cmd, sizeof(cmd), extra_flag);
    /* include directories, separated by '|' */
    char incs[4096];
    snprintf(incs, sizeof(incs), "%s", GLUCX_TEST_KERNEL_INCLUDES);
    for (char *save = NULL, *dir = strtok_r(incs, "|", &save); dir != NULL;
         dir = strtok_r(NULL, "|", &save)) {
        char opt[1100];
        snprintf(opt, sizeof(opt), "-I%s", dir);
        append_quoted(cmd, sizeof(cmd), opt);
    }
    append_quoted(cmd, sizeof(cmd), GLUCX_TEST_KERNEL_SRC);
    strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);

    FILE *p = popen(cmd, "r");
    if (p == NULL)
        fail_msg("cannot run: %s", cmd);
    memset(widest, 0, MAX_LINES * sizeof(*widest));
    /* GCC prints "<path>:<line>:<col>: optimized: loop vectorized using <N> byte vectors" */
    const char *base = strrchr(GLUCX_TEST_KERNEL_SRC, '/');
    base = base != NULL ? base + 1 : GLUCX_TEST_KERNEL_SRC;
    char base_colon[256];
    snprintf(base_colon, sizeof(base_colon), "%s:", base);
    char buf[1024];
    int reports = 0;
    while (fgets(buf, sizeof(buf), p) != NULL) {
        const char *at = strstr(buf, base_colon);
        const char *what = strstr(buf, "loop vectorized using ");
        if (at == NULL || what == NULL)
            continue;
        const int line = atoi(at + strlen(base_colon));
        const int bytes = atoi(what + strlen("loop vectorized using "));
        if (line > 0 && line < MAX_LINES && bytes > widest[line])
            widest[line] = bytes;
        reports++;
    }
    const int status = pclose(p);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("compiler failed (status %d): %s", status, cmd);
    if (reports == 0)
        fail_msg("no vectorization reports from: %s", cmd);
}

static void check_rows(const kernel_row_t *rows, int n, const int *widest, int min_bytes,
                       const char *what)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (widest[rows[i].line] < min_bytes) {
            print_error("kernel %s (%s line %d) not vectorized with >= %d-byte vectors in the %s "
                        "build (widest: %d)\n",
                        rows[i].name, GLUCX_TEST_KERNEL_SRC, rows[i].line, min_bytes, what,
                        widest[rows[i].line]);
            bad++;
        }
    }
    if (bad)
        fail_msg("%d of %d kernel loops not vectorized in the %s build", bad, n, what);
}

static kernel_row_t rows[MAX_KERNELS];
static int nrows;

static void test_kernel_rows_found(void **state)
{
    (void)state;
    nrows = find_kernel_rows(GLUCX_TEST_KERNEL_SRC, rows);
    /* The loops the brief requires, so that a renamed row cannot silently drop out. */
    static const char *const required[] = {
        "f32_sum",  "f32_prod", "f32_min",  "f32_max",  "f64_sum", "f64_prod", "f64_min",
        "f64_max",  "u32_sum",  "u32_prod", "i32_min",  "i32_max", "u64_sum",  "u64_prod",
        "i64_min",  "i64_max",  "u64_min",  "u64_max",  "u8_band", "u8_bor",   "u8_bxor",
        "u32_band", "u32_bor",  "u32_bxor", "u64_band", "u64_bor", "u64_bxor", "bool_or",
        "bool_and", "bool_xor", "f16_sum",  "bf16_sum"};
    for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++) {
        int found = 0;
        for (int i = 0; i < nrows; i++)
            found |= strcmp(rows[i].name, required[r]) == 0;
        if (!found)
            fail_msg("no GLUCX_KERNEL(%s, ...) row in %s", required[r], GLUCX_TEST_KERNEL_SRC);
    }
}

static void test_baseline_vectorized(void **state)
{
    (void)state;
    static int widest[MAX_LINES];
    assert_true(nrows > 0);
    compile_and_collect("-DGLUCX_KERNEL_NO_CLONES", widest);
    check_rows(rows, nrows, widest, 16, "baseline");
}

static void test_clones_vectorized(void **state)
{
    (void)state;
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute)
#if __has_attribute(target_clones)
    static int widest[MAX_LINES];
    assert_true(nrows > 0);
    compile_and_collect(NULL, widest);
    check_rows(rows, nrows, widest, 32, "avx2 clone");
    return;
#endif
#endif
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_rows_found),
        cmocka_unit_test(test_baseline_vectorized),
        cmocka_unit_test(test_clones_vectorized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
