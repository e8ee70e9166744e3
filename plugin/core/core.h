/** Internal: the context, communicator and request objects behind the public handles. */
#ifndef GLUCX_CORE_H
#define GLUCX_CORE_H

#include <pthread.h>
#include <stdatomic.h>

#include <glucx/glucx.h>

#include "core/select.h"
#include "topo/topo.h"
#include "transport/tx.h"
#include "transport/ucx.h"
#include "util/config.h"

struct glucx_context {
    glucx_config_t config;
    glucx_tune_t tune;
    glucx_topo_t *costs; /**< link-class costs (defaults or GLUCX_CALIBRATION), read once */
    glucx_net_t *net;    /**< GLUCX_TOPOLOGY's network, read once, or NULL */
    glucx_ucx_context_t *ucx;
};

typedef struct glucx_coll_job glucx_coll_job_t;

/** A window (plugin/core/window.c): the public handle over the transport's window. */
struct glucx_window {
    glucx_comm_t *comm; /**< NULL once the communicator was destroyed (the handle stays valid
                             for glucx_window_destroy only) */
    glucx_tx_win_t *tw; /**< the transport's window, NULL once detached */
    int peer;
    uint64_t slot;
    size_t bytes;
    struct glucx_window *next, *prev; /**< comm->windows */
};

struct glucx_comm {
    glucx_context_t *context;
    int rank;
    int size;
    int64_t timeout_ms;
    glucx_tx_t *tx;
    glucx_topo_t *topo;
    glucx_select_t select;
    atomic_uint coll_seq; /**< next collective sequence number */
    char name[128];
    int connected;     /**< set once glucx_comm_connect() succeeded */
    uint64_t trace_id; /**< comm id in trace events, equal on every rank (EVENTS.md) */
    void *record;      /**< prepared: this rank's address record (freed at connect) */
    size_t record_len;
    char digest[1300]; /**< settings digest, compared with every peer's */
    int listening;     /**< glucx_comm_compact_address() opened the listener (until connect) */
    unsigned char compact[GLUCX_COMPACT_ADDRESS_BYTES]; /**< this rank's compact address */

    pthread_mutex_t lock; /**< guards last_error, the collective thread's queue and windows */
    char last_error[1024];
    glucx_window_t *windows; /**< open windows (detached at glucx_comm_destroy) */

    /* collective thread for glucx_coll_start(), started on first use */
    pthread_cond_t queue_cond;
    glucx_coll_job_t *queue_head, *queue_tail; /**< unfinished jobs in start order */
    uint64_t job_order;                        /**< start counter of jobs (lock) */
    atomic_uint seqs_outstanding; /**< sequence numbers reserved by unfinished started jobs */
    int thread_started;
    int thread_stop;
    int thread_busy; /**< the collective thread is running a job */
    pthread_t thread;
};

/** The comm struct carries the trace comm id (plugin/core/trace.c uses it). */
#define GLUCX_COMM_HAS_TRACE_ID 1

typedef enum { GLUCX_REQ_P2P, GLUCX_REQ_COLL } glucx_req_kind_t;

struct glucx_request {
    glucx_req_kind_t kind;
    glucx_comm_t *comm;
    glucx_tx_req_t tx; /**< P2P: the transport request */
    uint64_t user_tag; /**< P2P: the tag the caller posted, for messages */
    int counted;       /**< P2P receive: already added to the statistics */
    int is_put;        /**< P2P: a glucx_iput (user_tag holds the slot) */
    /* COLL: completion signalled by the collective thread */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int coll_done;
    glucx_status_t coll_status;
    char error[512];
    /* tracing (only written while the events are enabled) */
    uint32_t trace_seq;  /**< COLL: the collective's seq; P2P: seq of the message's events */
    uint32_t trace_step; /**< P2P: FIFO position of the message in its (sender, receiver, tag) */
    int trace_open;      /**< P2P: a send_begin/recv_begin was recorded, its _end is not yet */
};

/** Record @p status with the thread's current last-error text as @p comm's last error. */
glucx_status_t glucx_comm_record_error(glucx_comm_t *comm, glucx_status_t status);

/** A new request of @p kind on @p comm (NULL when out of memory); plugin/core/p2p.c. */
glucx_request_t *glucx_request_alloc(glucx_comm_t *comm, glucx_req_kind_t kind);

/** Trace algorithm id (GLUCX_TP_ALG_*) of row @p index of @p coll's table; plugin/core/coll.c. */
int glucx_coll_tp_alg(glucx_coll_t coll, int index);

/** Drop the trace FIFO counters of communicator @p comm_id (at destruction); plugin/core/p2p.c. */
void glucx_p2p_trace_forget(uint64_t comm_id);

/** Trace FIFO directions (glucx_p2p_trace_step): sends and receives, puts and placements. */
enum { GLUCX_P2P_FIFO_SEND, GLUCX_P2P_FIFO_RECV, GLUCX_P2P_FIFO_PUT, GLUCX_P2P_FIFO_PLACED };
/** Trace seq of a point-to-point tag or window slot (EVENTS.md, send_begin); plugin/core/p2p.c. */
uint32_t glucx_p2p_trace_seq(uint64_t tag);
/** Next FIFO position of (comm, peer, direction, tag) for trace events; plugin/core/p2p.c. */
uint32_t glucx_p2p_trace_step(uint64_t comm_id, int peer, int dir, uint64_t tag);
/** The checks every point-to-point post makes (arguments, @p tag <= GLUCX_TAG_MAX, connected,
 *  not failed); plugin/core/p2p.c. */
glucx_status_t glucx_p2p_check(glucx_comm_t *comm, const void *buf, size_t bytes, uint64_t tag,
                               glucx_request_t **request_p, const char *op);
/** Detach every window of @p comm before its transport goes (glucx_comm_destroy). */
void glucx_window_detach_all(glucx_comm_t *comm);

/** Process-wide counters (plugin/core/stats.c). */
void glucx_stats_add_send(size_t bytes);
void glucx_stats_add_recv(size_t bytes);
void glucx_stats_add_coll(void);
void glucx_stats_add_comm(void);

/** Stop and join the collective thread, failing queued jobs with @p status. */
void glucx_comm_stop_thread(glucx_comm_t *comm, glucx_status_t status);

#endif
