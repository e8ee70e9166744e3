/**
 * Tools' helper: start N ranks of this program on the local machine (as `--ranks N` does in
 * glucx-bench and glucx-info --probe), rendezvousing through a file store in a fresh temporary
 * directory that is removed afterwards.
 */
#ifndef GLUCX_TOOLS_LOCAL_RANKS_H
#define GLUCX_TOOLS_LOCAL_RANKS_H

#include <glucx/glucx.h>

/**
 * Rank body: runs in a forked child; @p store_dir is the rendezvous directory (create the store
 * with glucx_store_file_create). Return 0 on success; the value becomes the child's exit status.
 */
typedef int (*glucx_tool_rank_fn)(int rank, int size, const char *store_dir, void *arg);

/**
 * Fork @p n children (before any UCX initialisation in this process) running @p fn, wait at most
 * @p timeout_s seconds, SIGKILL (by PID) whatever still runs after that or after a sibling failed.
 * stdout of rank 0 is the tool's; other ranks should stay quiet.
 * @return 0 if every child exited 0, else 1 after printing which rank failed and how to stderr.
 */
int glucx_tool_run_local(int n, glucx_tool_rank_fn fn, void *arg, int timeout_s);

#endif
