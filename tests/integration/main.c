/*
 * Entry point of every integration test: "<case> <ranks> <shm|tcp> [runner timeout s]".
 * Makes the store directory and the shared area, forks the ranks, removes the directory.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "support/procs.h"

typedef struct case_entry {
    const char *name;
    itest_rank_fn_t fn;
    int (*verdict)(const itest_env_t *env, int run_result); /* NULL: the runner's result */
} case_entry_t;

static const case_entry_t cases[] = {
    {"coll", itest_case_coll, NULL},
    {"p2p", itest_case_p2p, NULL},
    {"mismatch", itest_case_mismatch, NULL},
    {"killed", itest_case_killed, itest_verdict_killed},
    {"exited", itest_case_exited, itest_verdict_killed},
    {"killed_inflight", itest_case_killed_inflight, itest_verdict_killed},
    {"timeout", itest_case_timeout, NULL},
    {"invalid", itest_case_invalid, NULL},
    {"waitcpu", itest_case_waitcpu, NULL},
    {"leaks", itest_case_leaks, NULL},
    {"create", itest_case_create, NULL},
    {"twostep", itest_case_twostep, NULL},
    {"twostep_waitany", itest_case_twostep_waitany, NULL},
    {"twostep_wake", itest_case_twostep_wake, NULL},
    {"twostep_stats", itest_case_twostep_stats, NULL},
    {"twostep_compact", itest_case_twostep_compact, NULL},
    {"callback", itest_case_callback, NULL},
    {"destroy_after", itest_case_destroy_after, NULL},
    {"early_destroy", itest_case_early_destroy, NULL},
    {"kind_mismatch", itest_case_kind_mismatch, NULL},
    {"window", itest_case_window, NULL},
    {"window_threads", itest_case_window_threads, NULL},
    {"window_sync", itest_case_window_sync, NULL},
    {"window_truncated", itest_case_window_truncated, NULL},
    {"window_timeout", itest_case_window_timeout, NULL},
    {"window_left", itest_case_window_left, NULL},
    {"window_hold", itest_case_window_hold, NULL},
    {"window_killed", itest_case_window_killed, itest_verdict_killed},
    {"window_destroy", itest_case_window_destroy, NULL},
    {"fork_inherited", itest_case_fork_inherited, NULL},
    {"fork_new", itest_case_fork_new, NULL},
    {"sync_send", itest_case_sync_send, NULL},
    {"topology", itest_case_topology, NULL},
    {"topology_rooted", itest_case_topology_rooted, NULL},
    {"priority", itest_case_priority, NULL},
    {"priority_kinds", itest_case_priority_kinds, NULL},
    {"priority_overlap", itest_case_priority_overlap, NULL},
    {"priority_chunk_mismatch", itest_case_priority_chunk_mismatch, NULL},
    {"priority_head_mismatch", itest_case_priority_head_mismatch, NULL},
    {"priority_wrap", itest_case_priority_wrap, NULL},
    {"priority_bitwise", itest_case_priority_bitwise, NULL},
    {"priority_killed", itest_case_priority_killed, itest_verdict_priority_killed},
};

typedef struct run_arg {
    const itest_env_t *env;
    itest_rank_fn_t fn;
} run_arg_t;

static int run_rank(int rank, int size, void *arg)
{
    const run_arg_t *ra = arg;
    itest_set_rank(rank);
    int rc = ra->fn(ra->env, rank, size);
    return (rc != 0 || itest_failures() != 0) ? 1 : 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s CASE RANKS shm|tcp [TIMEOUT_S]\n", argv[0]);
        return 2;
    }
    const case_entry_t *c = NULL;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(cases[i].name, argv[1]) == 0)
            c = &cases[i];
    int n = atoi(argv[2]);
    if (c == NULL || n < 1 || n > ITEST_MAX_RANKS ||
        (strcmp(argv[3], "shm") != 0 && strcmp(argv[3], "tcp") != 0)) {
        fprintf(stderr, "%s: bad arguments '%s %s %s'\n", argv[0], argv[1], argv[2], argv[3]);
        return 2;
    }
    int timeout_s = argc > 4 ? atoi(argv[4]) : 120;

    static itest_env_t env;
    char name[64];
    snprintf(name, sizeof(name), "%s/n%d/%s", c->name, n, argv[3]);
    env.case_name = name;
    env.variant = argv[3];
    env.nranks = n;
    const char *tmp = getenv("TMPDIR");
    snprintf(env.store_dir, sizeof(env.store_dir), "%s/glucx-itest-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(env.store_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    env.shared = glucx_test_shared_alloc(sizeof(itest_shared_t));
    if (env.shared == NULL) {
        fprintf(stderr, "%s: cannot map the shared area\n", name);
        nftw(env.store_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 1;
    }
    for (int r = 0; r < ITEST_MAX_RANKS; r++)
        env.shared->status[r] = 1;
    fflush(NULL); /* nothing buffered may be written twice by the children */

    run_arg_t ra = {&env, c->fn};
    int rc = glucx_test_procs_run(n, run_rank, &ra, timeout_s);
    if (c->verdict != NULL)
        rc = c->verdict(&env, rc);
    nftw(env.store_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    fprintf(stderr, "[%s] %s\n", name, rc == 0 ? "passed" : "FAILED");
    return rc == 0 ? 0 : 1;
}
