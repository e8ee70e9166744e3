/**
 * Tools' helper: start N ranks of this program on the local machine (`--ranks N` of glucx-bench
 * and glucx-info --probe), rendezvousing through a file store in a fresh temporary directory
 * that is removed afterwards.
 */
#ifndef GLUCX_TOOLS_LOCAL_RANKS_H
#define GLUCX_TOOLS_LOCAL_RANKS_H

#define GLUCX_TOOL_MAX_LOCAL_RANKS 256

/**
 * Rank body: runs in a forked child. @p store_dir is the rendezvous directory (create the store
 * with glucx_store_file_create); writing a byte to @p progress_fd (non-blocking) tells the
 * launcher the rank is alive. Return 0 on success; the value becomes the child's exit status.
 */
typedef int (*glucx_tool_rank_fn)(int rank, int size, const char *store_dir, int progress_fd,
                                  void *arg);

/**
 * Fork @p n (1..GLUCX_TOOL_MAX_LOCAL_RANKS) children running @p fn, before any UCX
 * initialisation in this process, and wait for them. Stops them all (SIGTERM, then SIGKILL, by
 * PID) when one fails, when the launcher gets SIGINT/SIGTERM/SIGHUP, or after @p stall_s
 * seconds without progress from any rank. Messages are prefixed with @p tool.
 * @return 0 if every child exited 0, else 1 after printing which rank failed and how.
 */
int glucx_tool_run_local(int n, glucx_tool_rank_fn fn, void *arg, double stall_s,
                         const char *tool);

/**
 * This process's rank and the job's size from a launcher's variables: torchrun and glucx-cluster
 * (RANK, WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK/SIZE) or PMI (PMI_RANK/PMI_SIZE), first
 * found wins. @return 0; 1 when no launcher set them (nothing printed); 2 after printing (prefixed
 * with @p tool) which variable is malformed or missing its pair.
 */
int glucx_tool_launcher_rank_size(const char *tool, int *rank_p, int *size_p);

#endif
