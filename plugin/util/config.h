/**
 * Internal: the GLUCX_* environment variables, read once per context (glucx_config_*).
 * glucx-info lists this same table, so the documentation cannot drift from what is read.
 */
#ifndef GLUCX_UTIL_CONFIG_H
#define GLUCX_UTIL_CONFIG_H

/** The longest GLUCX_HOSTID, in characters (glucx_config_read refuses longer ones). */
#define GLUCX_HOSTID_MAX 255

#include <stddef.h>
#include <stdint.h>

#include <glucx/status.h>

/* X(NAME, default, description) */
#define GLUCX_CONFIG_MAP(X)                                                                        \
    X(GLUCX_LOG_LEVEL, "warn", "log level: error, warn, info, debug, trace")                       \
    X(GLUCX_TIMEOUT_MS, "300000",                                                                  \
      "default timeout of communicator creation and of every operation, milliseconds")             \
    X(GLUCX_KEEPALIVE_MS, "1000",                                                                  \
      "UCX keepalive interval used to detect dead peers, milliseconds")                            \
    X(GLUCX_SPIN_US, "200",                                                                        \
      "how long a waiting thread polls before it sleeps on the transport's event descriptor, "     \
      "microseconds; 0 sleeps at once")                                                            \
    X(GLUCX_YIELD, "auto",                                                                         \
      "whether a polling wait yields its core (sched_yield) when it finds nothing to do: "         \
      "always, never, or auto: always when this host has more of the job's ranks than the "        \
      "process has CPUs, else only while yields return quickly (one that lost a time slice to "    \
      "a CPU-bound thread stops them for 100 ms, and the spin then adapts)")                       \
    X(GLUCX_WINDOW_HOLD, "256M",                                                                   \
      "bytes of puts (glucx_iput) a communicator holds while no window takes them (eager "         \
      "payload plus 256 per message; K/M/G suffixes); past it the communicator fails with "        \
      "GLUCX_ERR_NO_MEMORY")                                                                       \
    X(GLUCX_NET_SEG, "auto",                                                                       \
      "collective messages of at least this many bytes to or from a rank on another host go as "   \
      "segments of this size (K/M suffixes; 4K to 1G; at most 1024 per message), so that UCX's "   \
      "TCP transport sends them eagerly and two hosts' traffic each way does not take turns; 0: "  \
      "whole messages; auto: "                                                                     \
      "256K when glucx sets UCX's TCP segment size (UCX_TLS allows tcp and neither "               \
      "UCX_TCP_TX_SEG_SIZE nor UCX_TCP_RX_SEG_SIZE is set), else 0. Ranks whose settings differ "  \
      "send each other whole messages")                                                            \
    X(GLUCX_COLL_NICE, "0",                                                                        \
      "nice increment of each communicator's collective thread over the thread that starts it "    \
      "(-20..19; negative: it wins the core from compute threads when it has work; needs "         \
      "CAP_SYS_NICE or RLIMIT_NICE, else it keeps the same priority); 0 leaves it alone")          \
    X(GLUCX_TRACE, "0",                                                                            \
      "1: load the LTTng trace provider when libglucx loads, for sessions made with lttng by "     \
      "hand (glucx-trace record does this itself)")                                                \
    X(GLUCX_TRACE_PROVIDER, "",                                                                    \
      "path of the trace provider to load instead of the default search")                          \
    X(GLUCX_TRACE_PIDS, "",                                                                        \
      "set by glucx-trace record: the file where each traced process lists its pid (read by "      \
      "the trace provider, not by libglucx)")                                                      \
    X(GLUCX_TUNE, "",                                                                              \
      "algorithm selection overrides: COLL[,COLL]:[LO-HI:]ALG entries joined by '#', "             \
      "e.g. allreduce:0-4K:recursive_doubling#allreduce:4K-inf:ring")                              \
    X(GLUCX_STORE, "", "rendezvous store for standalone programs: file:DIR or redis://HOST:PORT")  \
    X(GLUCX_CALIBRATION, "", "link-cost calibration file written by glucx-bench --calibrate")      \
    X(GLUCX_TOPOLOGY, "",                                                                          \
      "topology file (YAML, ASTRA-sim's network keys; docs/topology.md): rank coordinates, "       \
      "physical links and routes; host identities must fit its packages")                          \
    X(GLUCX_HOSTID, "",                                                                            \
      "host identity used to group ranks into packages (default: hostname + boot id)")             \
    X(GLUCX_SYNC_SEND, "1",                                                                        \
      "read by the Gloo shim and the torch backend (not by libglucx): 1: their point-to-point "    \
      "sends complete once the receiver matched them (GLUCX_SEND_SYNC), as Gloo's TCP "            \
      "transport's do, so a sender whose peer never receives times out; 0: as soon as the "        \
      "buffer may be reused")

typedef struct glucx_config {
    int64_t timeout_ms;
    int64_t keepalive_ms;
    int64_t spin_us;
    int yield;          /**< GLUCX_YIELD: 0 auto, 1 always, 2 never (glucx_ucx_yield_t's values) */
    int64_t coll_nice;  /**< GLUCX_COLL_NICE: nice increment of the collective thread */
    size_t window_hold; /**< GLUCX_WINDOW_HOLD: bytes of early puts held per communicator */
    size_t net_seg;     /**< GLUCX_NET_SEG in bytes; SIZE_MAX: auto (the transport's default) */
    char tune[1024];
    char calibration[512];
    char topology[512];
} glucx_config_t;

/** One documented variable. */
typedef struct glucx_config_var {
    const char *name;
    const char *default_value;
    const char *description;
} glucx_config_var_t;

/** The table of every GLUCX_* variable; *count_p receives its length. */
const glucx_config_var_t *glucx_config_vars(int *count_p);

/**
 * Read the environment into @p config and warn (once per call) about GLUCX_* variables that are
 * not in the table. @return GLUCX_OK or GLUCX_ERR_INVALID_ARG naming a malformed variable.
 */
glucx_status_t glucx_config_read(glucx_config_t *config);

/** Parse a size such as "4096", "4K", "16M", "1G" (binary units) or "inf" (SIZE_MAX). */
glucx_status_t glucx_config_parse_size(const char *text, size_t *bytes_p);

#endif
