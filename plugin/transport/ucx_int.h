/**
 * Private to the UCX transport (plugin/transport/ucx*.c): shared state and helpers.
 *
 * Locking. One mutex (tx->lock) serialises every UCP call on the worker (the worker runs in
 * UCS_THREAD_MODE_SERIALIZED) and all request bookkeeping; UCX invokes request callbacks only
 * inside UCP calls, so callbacks always run with tx->lock held and never take it. Failure
 * recording has its own small lock (tx->fail_lock) because UCX may report an endpoint error from
 * its asynchronous thread.
 *
 * Requests. A posted glucx_tx_req_t is linked into tx's list of outstanding requests through its
 * impl_data words (no allocation): impl = the UCX request (NULL while none), impl_data[0..1] =
 * next/prev, impl_data[2] = the transport, impl_data[3] = kind | pointer to the probe-receive
 * record (8-byte aligned) for receives from a subset of ranks.
 */
#ifndef GLUCX_TRANSPORT_UCX_INT_H
#define GLUCX_TRANSPORT_UCX_INT_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include <ucp/api/ucp.h>

#include "transport/tx.h"
#include "transport/ucx.h"

/** Low tag bits of control messages (GLUCX_TX_TAG_CTRL set) say what they are. */
#define GLUCX_UCX_CTRL_KIND_MASK UINT64_C(0xff)
#define GLUCX_UCX_CTRL_NOTICE UINT64_C(0) /**< failure notice (glucx_ucx_notice_t) */
#define GLUCX_UCX_CTRL_HELLO UINT64_C(1)  /**< connect handshake (glucx_ucx_hello_t) */
/** Orderly leave: the sender destroyed its healthy transport (glucx_ucx_notice_t, status 0, no
 * text). Taken by the same posted receive as notices (its kind differs only in this bit). */
#define GLUCX_UCX_CTRL_LEAVE UINT64_C(2)
/** A rank's address record, served by its listener to a peer that fetches it (compact
 * addresses, ucx_boot.c). Neither the notice receive (kinds 0 and 2) nor a hello receive (exact
 * tag) matches it. */
#define GLUCX_UCX_CTRL_RECORD UINT64_C(4)

/** Poll this long (progressing) before sleeping on the worker's event descriptor (default of
 * GLUCX_SPIN_US). */
#define GLUCX_UCX_SPIN_NS 200000
/** The first part of the polling phase never yields the core (the peer is often this close). */
#define GLUCX_UCX_SPIN_HOT_NS 2000
/** Longest wait for failure notices to leave (fail()). */
#define GLUCX_UCX_NOTICE_WAIT_NS 200000000LL
/** Longest wait for force-closed endpoints and their requests to finish (fail()). */
#define GLUCX_UCX_CLOSE_WAIT_NS 5000000000LL
/** Longest wait, after a force close, for requests on endpoints without error handling (UCX may
 * never complete them: see teardown in ucx_wait.c). */
#define GLUCX_UCX_ORPHAN_WAIT_NS 100000000LL
/** Longest wait for flushing endpoints on a healthy destroy. */
#define GLUCX_UCX_FLUSH_WAIT_NS 1000000000LL
/** Longest wait, when a communicator that failed to connect is destroyed, for the peers that
 *  still connect to its listener (ucx_boot.c: UCX 1.13.1 must not get a connection request for a
 *  destroyed listener). */
#define GLUCX_UCX_LISTEN_DRAIN_NS 1000000000LL
/** A peer failure seen locally waits this long for a failure notice that explains it (the notice
 * of the rank that failed first may still be on its way), then becomes the failure. */
#define GLUCX_UCX_SUSPECT_GRACE_NS 100000000LL
/** Length of a cached describe_peer text. */
#define GLUCX_UCX_DESC_LEN 96
/** Same-host peers' liveness is checked at least this often by progress() callers that never
 * sleep in wait() (a sleeping waiter polls their pidfds). */
#define GLUCX_UCX_PEER_CHECK_NS 20000000LL

enum glucx_ucx_req_kind {
    GLUCX_UCX_REQ_SEND = 1,       /**< tag send */
    GLUCX_UCX_REQ_RECV = 2,       /**< tag receive posted to UCX (one source or every source) */
    GLUCX_UCX_REQ_PROBE_WAIT = 3, /**< receive from a subset, not yet matched by a probe */
    GLUCX_UCX_REQ_PROBE_RECV = 4, /**< receive from a subset, probed and being received */
    GLUCX_UCX_REQ_CANCELING = 5,  /**< GLUCX_UCX_REQ_RECV the caller asked to cancel */
    GLUCX_UCX_REQ_PARKED = 6,     /**< UCX ended it with a peer error: completes at the failure */
    GLUCX_UCX_REQ_DEPARTED = 7,   /**< GLUCX_UCX_REQ_RECV from a peer that left: being cancelled
                                       (a cancellation means it can never match: the failure) */
    GLUCX_UCX_REQ_PUT = 0,        /**< a put (active message); otherwise handled as a send */
};

/* Segmented exact-length messages (ucx_req.c, "segments"). The caller's request is the parent:
 * never in the outstanding list, flag GLUCX_UCX_FLAG_SEGMENTED, impl_data[2] the transport,
 * impl_data[4] its glucx_ucx_segs_t. Each segment is a child request, an ordinary send or
 * receive of the outstanding list (cancel, failure and teardown treat it as any other) with flag
 * GLUCX_UCX_FLAG_SEGMENT and impl_data[4] the same block. The block is freed once every child
 * is done (a child is done only when UCX no longer touches it: its callback ran or it was
 * detached). */
#define GLUCX_UCX_FLAG_SEGMENTED 0x100u
#define GLUCX_UCX_FLAG_SEGMENT 0x200u
/** The most segments one message is cut into (ucx.h: glucx_tx_ucx_context_set_net_seg). */
#define GLUCX_UCX_SEG_COUNT_MAX 1024
/** net_seg bit: segments to ranks of this host too (tests and measurements). */
#define GLUCX_UCX_SEG_LOCAL 0x80000000u

typedef struct glucx_ucx_segs {
    glucx_tx_req_t *parent; /**< NULL once the parent completed */
    int n;                  /**< children */
    int left;               /**< children not done, + 1 while posting */
    int ended;              /**< receive: a segment shorter than posted (or truncated) ended the
                                 sender's message: the parent completes at once */
    glucx_status_t status;  /**< first failure of a child */
    size_t bytes;           /**< sent / received so far (receive: until the message ended) */
    uint64_t tag;           /**< receive: the first segment's sender tag */
    int peer;
    glucx_tx_req_t child[]; /**< [n] */
} glucx_ucx_segs_t;
#define GLUCX_UCX_KIND_BITS UINT64_C(7)

/**
 * What glucx keeps in every UCX request (ucp_params_t request_size: the bytes at the request
 * handle). request_init zeroes them when UCX's pool creates the request; only a detached one
 * changes, and its callback zeroes it again before freeing it, so a reused request starts clean.
 *
 * detached: set when glucx completed the glucx request a UCX request belongs to while UCX still
 * holds that UCX request (teardown: UCX 1.13 keeps a rendezvous send to a dead same-host peer,
 * or a send queued behind its full FIFO, for good). Its caller may then free the glucx request,
 * yet UCX can still call back: ucp_worker_destroy completes the requests queued on an
 * endpoint's lanes with UCS_ERR_CANCELED (ucp_worker_destroy_eps -> ucp_ep_purge_lanes with
 * ucp_ep_err_pending_purge) before it destroys the endpoint. The callback of a detached request
 * only frees the UCX request and never reads its user data.
 */
typedef struct glucx_ucx_req_area {
    int detached;
} glucx_ucx_req_area_t;

static inline glucx_ucx_req_area_t *glucx_ucx_req_area(void *ucx_request)
{
    return (glucx_ucx_req_area_t *)ucx_request;
}

struct glucx_ucx_context {
    ucp_context_h ucp;
    size_t hold_max;         /**< bytes of early puts a transport holds before failing */
    int64_t keepalive_ns;    /**< keepalive interval in force (UCX default when not configured) */
    int64_t spin_ns;         /**< how long waits poll before sleeping */
    glucx_ucx_yield_t yield; /**< GLUCX_YIELD: AUTO, ALWAYS or NEVER */
    int shm;                 /**< UCX_TLS lets a shared-memory transport in (mm or cma) */
    int net;                 /**< UCX_TLS lets a network transport in (tcp, InfiniBand): needed
                                  by client-server endpoints (compact addresses, ucx_boot.c) */
    uint32_t net_seg;        /**< segment bytes of exact-length messages (GLUCX_TX_TAG_EXACT) to
                                  ranks on other hosts; 0: whole messages; bit
                                  GLUCX_UCX_SEG_LOCAL: also to ranks on this host (tests) */
};

/**
 * Who a worker address belongs to: the prefix of the address blob glucx_tx_ucx_create returns
 * (the UCX worker address follows it). Peers whose boot id, PID namespace and host name equal
 * ours are "local": their endpoints run without UCX error handling (so UCX may use cma) and
 * their death is watched through their pid (see ucx.h). Fixed-width fields, host byte order
 * (only compared between processes of one host; elsewhere only the magic and length are read).
 */
typedef struct glucx_ucx_ident {
    uint32_t magic;     /**< GLUCX_UCX_IDENT_MAGIC */
    uint32_t head_len;  /**< sizeof(glucx_ucx_ident_t): where the UCX address starts */
    int32_t pid;        /**< getpid() */
    uint32_t net_seg;   /**< the context's net_seg: peers cut exact-length messages into
                             segments only when both sides have the same value */
    uint64_t pidns_ino; /**< inode of /proc/self/ns/pid (0: unknown) */
    uint64_t pidns_dev; /**< its device */
    char boot_id[40];   /**< /proc/sys/kernel/random/boot_id, NUL-terminated ("" unknown) */
    char host[72];      /**< gethostname(), NUL-terminated, truncated */
} glucx_ucx_ident_t;
#define GLUCX_UCX_IDENT_MAGIC 0x67754931u

/** Failure notice payload (tag GLUCX_TX_TAG_CTRL | src | GLUCX_UCX_CTRL_NOTICE). */
typedef struct glucx_ucx_notice {
    int32_t status;
    int32_t rank;
    char text[512]; /* = sizeof(glucx_tx_t.failure) */
} glucx_ucx_notice_t;

/** Handshake payload. */
typedef struct glucx_ucx_hello {
    uint32_t magic;
    int32_t rank;
    int32_t size;
} glucx_ucx_hello_t;
#define GLUCX_UCX_HELLO_MAGIC 0x676c7578u

/** A receive from a subset of ranks, matched by probing each source (FIFO list in tx). */
typedef struct glucx_ucx_probe {
    struct glucx_ucx_probe *next, *prev;
    glucx_tx_req_t *req;
    void *buf;
    uint64_t tag;  /**< tag to match, source bits zero */
    uint64_t mask; /**< bits compared, source bits included */
    int start;     /**< rotating first source, so no source starves */
    int npeers;    /**< distinct sources */
    int peers[];
} glucx_ucx_probe_t;

/** Active message id of puts. */
#define GLUCX_UCX_AM_PUT 0
/** Active message id of the connect handshake's readiness message (its arrival completes the
 * receiver's glucx_ucx_expect_ready request for the sender). */
#define GLUCX_UCX_AM_READY 1
/** Its payload (zeros): more than a shared-memory FIFO element holds inline. */
#define GLUCX_UCX_READY_BYTES 512
#define GLUCX_UCX_PUT_MAGIC 0x67707574u
/** Hold cost of a message besides its payload (a rendezvous descriptor, our record). */
#define GLUCX_UCX_HOLD_OVERHEAD 256

/** User header of a put (32 bytes, host byte order: peers of one job share one ABI). */
typedef struct glucx_ucx_put_hdr {
    uint64_t slot;
    uint64_t offset; /**< byte offset in the receiver's window */
    uint32_t seq;    /**< puts from this sender to this receiver before this one (mod 2^32) */
    int32_t src;     /**< sender's rank */
    uint32_t flags;  /**< GLUCX_TX_PUT_SYNC */
    uint32_t magic;  /**< GLUCX_UCX_PUT_MAGIC */
} glucx_ucx_put_hdr_t;

typedef struct glucx_ucx_chan glucx_ucx_chan_t;

/** A put that arrived and is not yet taken by a window wait. */
typedef struct glucx_ucx_msg {
    struct glucx_ucx_msg *next;
    glucx_ucx_chan_t *chan;
    size_t offset, bytes;
    int kind;    /**< GLUCX_UCX_MSG_DESC, _COPY or _RNDV: what data is */
    int state;   /**< GLUCX_UCX_MSG_HELD, _FETCHING, _PLACED, _BROKEN */
    void *data;  /**< UCX data descriptor (DESC, RNDV), malloc'd copy (COPY), or NULL */
    size_t cost; /**< counted in tx->held_bytes while held */
} glucx_ucx_msg_t;
enum { GLUCX_UCX_MSG_DESC = 1, GLUCX_UCX_MSG_COPY = 2, GLUCX_UCX_MSG_RNDV = 3 };
enum {
    GLUCX_UCX_MSG_HELD = 1,     /**< not placed: no window, or waits for an overlapping put */
    GLUCX_UCX_MSG_FETCHING = 2, /**< rendezvous data being received into the window */
    GLUCX_UCX_MSG_PLACED = 3,   /**< in the window, not yet taken */
    GLUCX_UCX_MSG_BROKEN = 4,   /**< the fetch failed (the transport fails) */
    GLUCX_UCX_MSG_BOUNCING = 5, /**< early rendezvous data being received into a copy (kind
                                     COPY), so a put that is not synchronous completes */
};

/** Messages of one (sender, slot), in arrival order, and the window open for them if any. It
 * exists while a window is open or a message is queued. */
struct glucx_ucx_chan {
    glucx_ucx_chan_t *hnext; /**< hash chain */
    struct glucx_ucx_tx *tx;
    int src;
    uint64_t slot;
    struct glucx_tx_win *win;
    glucx_ucx_msg_t *head, *tail;
};

struct glucx_tx_win {
    struct glucx_tx_win *next, *prev; /**< tx->wins */
    glucx_ucx_chan_t *chan;
    char *buf;
    size_t bytes;
    atomic_int ready;    /**< placed messages at the head of the channel (takeable in order) */
    atomic_int fetching; /**< rendezvous fetches into buf under way */
    int waiters;         /**< threads in win_wait */
    int closing;         /**< win_close started: nothing new is placed */
};

#define GLUCX_UCX_CHAN_BUCKETS 256
/** A client-server endpoint of the compact-address rendezvous (ucx_boot.c). */
typedef struct glucx_ucx_boot_ep {
    struct glucx_ucx_tx *tx;
    struct glucx_ucx_boot *boot; /**< the rendezvous it belongs to */
    ucp_ep_h ep;                 /**< NULL once closed */
    int rank;         /**< fetching: the rank whose listener it connects to; serving: -1 */
    atomic_int error; /**< ucs_status_t UCX reported for the endpoint (0: none); set from
                           any thread */
    void *flush_req;  /**< serving: the flush that completes the wireup, until its
                           callback ran */
    int flushed;      /**< serving: wireup complete, the record not sent yet */
    void *send_req;   /**< serving: the record's send, until its callback ran */
    struct sockaddr_storage addr; /**< fetching: the listener's socket address */
} glucx_ucx_boot_ep_t;

/** The compact-address rendezvous of one transport: its listener and endpoints (ucx_boot.c). */
typedef struct glucx_ucx_boot {
    ucp_listener_h listener; /**< NULL: not listening */
    void *record;            /**< copy of what the listener serves */
    size_t record_len;
    ucp_conn_request_h *queued; /**< connection requests not yet accepted */
    int nqueued, queued_cap;
    int work;     /**< requests queued or endpoints flushed since the last
                       glucx_ucx_boot_progress */
    int open;     /**< serving; once closed, connection requests are rejected */
    int requests; /**< connection requests the listener delivered */
    int expect;   /**< requests expected: one per peer (each fetches once) */
    struct glucx_ucx_tx *tx;
    glucx_ucx_boot_ep_t **eps; /**< every endpoint opened, fetching and serving */
    int neps, eps_cap;
    struct glucx_ucx_boot *next; /**< closed ones, kept until the worker is destroyed */
} glucx_ucx_boot_t;

/** Error-callback argument per endpoint. */
typedef struct glucx_ucx_peer {
    struct glucx_ucx_tx *tx;
    int rank;
} glucx_ucx_peer_t;

typedef struct glucx_ucx_tx {
    glucx_tx_t base; /* first: glucx_tx_t * <-> glucx_ucx_tx_t * */
    glucx_ucx_context_t *uctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len;
    int efd;

    ucp_ep_h *eps;            /**< [size], NULL before connect and after teardown */
    glucx_ucx_peer_t *peers;  /**< [size] */
    unsigned char *ep_failed; /**< [size] 1: UCX reported the endpoint dead; 2: the (local)
                                   peer's process exited */
    unsigned char *departed;  /**< [size] 1: the peer left in order (GLUCX_UCX_CTRL_LEAVE): it
                                   sends nothing more; its endpoint closing is no failure */
    int leave_arrived;        /**< the control receive took a leave: progress posts it again
                                   and checks the receives from departed peers */
    char (*desc)[GLUCX_UCX_DESC_LEN];
    int connected;
    int ever_connected; /**< glucx_tx_ucx_connect created endpoints (it stays 1 after teardown) */

    /* Liveness of local peers (endpoints without UCX error handling). */
    void *blob; /**< identity + worker address, as returned by create */
    size_t blob_len;
    glucx_ucx_ident_t ident; /**< this process */
    unsigned char *local;    /**< [size] endpoint created with UCP_ERR_HANDLING_MODE_NONE */
    uint32_t *seg;           /**< [size] segment bytes of exact-length messages to and from the
                                  peer (both sides agreed at connect), 0: whole messages */
    int *pid;                /**< [size] peer's pid (local peers), else 0 */
    int *pidfd;              /**< [size] pidfd of a local peer, -1 when none */
    struct pollfd *pfds;     /**< [1 + size]: [0] = worker efd, then the watched pidfds (the
                                  efd owner's ppoll; only its fd fields change, lock held) */
    struct pollfd *chk;      /**< [size]: the watched pidfds, for glucx_ucx_check_peers */
    int *pfd_rank;           /**< [size] rank of pfds[1 + i] */
    int npidfds;             /**< watched pidfds (pfds[1..npidfds]) */
    int nkill;               /**< local peers watched with kill(pid, 0) (no pidfd) */
    int64_t next_check_ns;   /**< next liveness check from the progress path */

    pthread_mutex_t lock;
    pthread_cond_t cond; /**< waiters that do not own the event descriptor */
    int efd_owner;       /**< a waiter is (about to be) asleep on efd */
    int efd_sleeping;    /**< ... and has released the lock */
    int cond_waiters;

    glucx_tx_req_t *outstanding; /**< doubly linked through impl_data[0..1] */
    glucx_ucx_probe_t *probe_head, *probe_tail;

    void *ctrl_req; /**< the posted notice receive (UCX request) or NULL */
    glucx_ucx_notice_t ctrl_buf;

    pthread_mutex_t fail_lock; /**< guards the fields below up to fail_pending */
    int fail_notify;           /**< send notices to peers on teardown */
    int fail_quiet;            /**< destroy of a healthy transport: flush, no warning */
    int notice_origin;         /**< rank the failure started at (forwarded in notices) */
    char notice_text[512];     /**< text sent in notices: the origin's own words */
    /** A peer failure seen locally, not yet the failure (0: none); see glucx_ucx_suspect. */
    _Atomic int64_t suspect_at_ns;
    glucx_status_t suspect_status;
    int suspect_rank; /**< the peer whose endpoint error or exit is suspected (-1: a request
                           failed): an orderly leave of that peer withdraws the suspicion */
    char suspect_text[512];
    atomic_int fail_pending; /**< failure recorded, teardown not run yet */
    int in_teardown;
    atomic_int torn_down;
    int notices_pending;
    glucx_ucx_notice_t notice_buf; /**< outgoing notice (must outlive its sends) */

    /* Windows (ucx_win.c). */
    glucx_ucx_chan_t *chans[GLUCX_UCX_CHAN_BUCKETS];
    struct glucx_tx_win *wins;     /**< open windows */
    uint32_t *put_seq_out;         /**< [size] puts sent to each rank (mod 2^32) */
    uint32_t *put_seq_in;          /**< [size] puts arrived from each rank (mod 2^32) */
    size_t held_bytes;             /**< cost of the messages held (limit: uctx->hold_max) */
    glucx_ucx_msg_t *orphans;      /**< messages whose fetch UCX may still call back (even inside
                                        ucp_worker_destroy): freed after the worker */
    int win_pending;               /**< progress must place held messages (outside callbacks) */
    uint8_t *ready_in;             /**< [size] the peer's readiness message arrived */
    glucx_tx_req_t **ready_wait;   /**< [size] connect's request completed by that arrival */
    glucx_ucx_boot_t *boot;        /**< compact-address rendezvous (listener, client-server
                                        endpoints) until glucx_tx_ucx_unlisten; NULL: none */
    glucx_ucx_boot_t *boot_closed; /**< closed rendezvous records: UCX may still call their
                                        endpoints' error callbacks (from its asynchronous
                                        thread) until the worker is destroyed */

    int64_t tick_ns;         /**< longest sleep before progressing again (keepalive) */
    int64_t spin_ns;         /**< how long waits poll before sleeping (from the context) */
    glucx_ucx_yield_t yield; /**< resolved at connect (ALWAYS, NEVER, CHEAP); AUTO before */
} glucx_ucx_tx_t;

static inline glucx_ucx_tx_t *glucx_ucx_tx(glucx_tx_t *tx)
{
    return (glucx_ucx_tx_t *)tx;
}

/* ucx_req.c */
glucx_status_t glucx_ucx_status(ucs_status_t status);
glucx_status_t glucx_ucx_isend(glucx_tx_t *tx, int peer, uint64_t tag, const void *buf,
                               size_t bytes, glucx_tx_req_t *req);
glucx_status_t glucx_ucx_isend_sync(glucx_tx_t *tx, int peer, uint64_t tag, const void *buf,
                                    size_t bytes, glucx_tx_req_t *req);
glucx_status_t glucx_ucx_irecv(glucx_tx_t *tx, const int *peers, int npeers, uint64_t tag,
                               uint64_t ignore_mask, void *buf, size_t bytes, glucx_tx_req_t *req);
void glucx_ucx_cancel(glucx_tx_t *tx, glucx_tx_req_t *req);
/** Post without the user-tag checks (control traffic). Lock not held. */
glucx_status_t glucx_ucx_send_raw(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, const void *buf,
                                  size_t bytes, glucx_tx_req_t *req);
glucx_status_t glucx_ucx_recv_raw(glucx_ucx_tx_t *tx, int peer, uint64_t wire_tag, uint64_t mask,
                                  void *buf, size_t bytes, glucx_tx_req_t *req);
/** Post a put (tx.h put op; an active message with a glucx_ucx_put_hdr_t). */
glucx_status_t glucx_ucx_put(glucx_tx_t *tx, int peer, uint64_t slot, size_t offset,
                             const void *buf, size_t bytes, unsigned flags, glucx_tx_req_t *req);
/** Send the connect handshake's active message to peer, shaped like a small put. UCX's
 *  shared-memory transports set up the first such message to a peer lazily: it completed only
 *  after 0.1-50 ms of the sender's progress (measured here, UCX 1.13.1, sysv and posix), so a
 *  first put posted by a rank that then sleeps (polling nothing) did not leave until it
 *  progressed again. Sent during the handshake, where both ranks progress. Lock not held. */
glucx_status_t glucx_ucx_send_ready(glucx_ucx_tx_t *tx, int peer, glucx_tx_req_t *req);
/** Probe for an unexpected message (tx.h probe op). */
int glucx_ucx_probe(glucx_tx_t *tx, int peer, uint64_t tag, uint64_t ignore_mask, uint64_t *tag_p);
/** Match pending subset receives against unexpected messages. Lock held. */
int glucx_ucx_probe_all(glucx_ucx_tx_t *tx);
/** (Re)post the failure-notice receive. Lock held. */
glucx_status_t glucx_ucx_post_ctrl(glucx_ucx_tx_t *tx);
/** Cancel the unmatched segment receives of segmented request @p req (a parent). Lock held,
 *  outside callbacks. */
void glucx_ucx_segs_cancel(glucx_ucx_tx_t *tx, glucx_tx_req_t *req);
/** Complete a request: fill it, unlink it, release-store done, wake waiters. Lock held. */
void glucx_ucx_complete(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, glucx_status_t status, int peer,
                        size_t bytes, uint64_t tag);
void glucx_ucx_list_add(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, int kind);
/** Teardown: @p req is completed by glucx while UCX still holds its UCX request (req->impl):
 *  mark that one detached (see glucx_ucx_req_area_t) and forget it. Lock held. */
void glucx_ucx_detach(glucx_tx_req_t *req);
/** ucp_params_t request_init: a new UCX request's area is zero. */
void glucx_ucx_req_init(void *ucx_request);
static inline int glucx_ucx_req_kind(const glucx_tx_req_t *req)
{
    return (int)(req->impl_data[3] & GLUCX_UCX_KIND_BITS);
}
static inline glucx_ucx_probe_t *glucx_ucx_req_probe(const glucx_tx_req_t *req)
{
    return (glucx_ucx_probe_t *)(req->impl_data[3] & ~(uintptr_t)GLUCX_UCX_KIND_BITS);
}

/* ucx_win.c */
/** Register the put handler and allocate the per-peer counters. Lock not needed (creation). */
glucx_status_t glucx_ucx_win_init(glucx_ucx_tx_t *tx);
/** Connect: @p req (caller's storage) completes when @p peer's readiness message has arrived
 * (at once if it has). Takes the lock. */
void glucx_ucx_expect_ready(glucx_ucx_tx_t *tx, int peer, glucx_tx_req_t *req);
/** Connect is over: no arrival completes a request of glucx_ucx_expect_ready any more. */
void glucx_ucx_unexpect_ready(glucx_ucx_tx_t *tx);
glucx_status_t glucx_ucx_win_open(glucx_tx_t *tx, int peer, uint64_t slot, void *buf, size_t bytes,
                                  glucx_tx_win_t **win_p);
glucx_status_t glucx_ucx_win_wait(glucx_tx_t *tx, glucx_tx_win_t *win, int64_t deadline_ns,
                                  unsigned wake_gen, size_t *offset_p, size_t *bytes_p);
glucx_status_t glucx_ucx_win_close(glucx_tx_t *tx, glucx_tx_win_t *win, int64_t deadline_ns);
/** Place what waits for it (tx->win_pending). Lock held, outside callbacks. */
void glucx_ucx_win_progress(glucx_ucx_tx_t *tx);
/** After a leave: fail a blocked window wait whose peer left with nothing queued for it, and a
 *  put to a peer that left before placing it. Lock held, outside callbacks. */
void glucx_ucx_win_departed(glucx_ucx_tx_t *tx);
/** Teardown: release held eager data (rendezvous descriptors stay with UCX: releasing one would
 *  complete the sender's put as if placed). Lock held, outside callbacks. */
void glucx_ucx_win_teardown(glucx_ucx_tx_t *tx);
/** Free every channel, message and window (destroy; the worker is no longer progressed); a
 *  message with a fetch under way becomes an orphan. */
void glucx_ucx_win_free(glucx_ucx_tx_t *tx);
/** Free the orphans (after ucp_worker_destroy, which may still call their callbacks). */
void glucx_ucx_win_free_orphans(glucx_ucx_tx_t *tx);

/* ucx_wait.c */
/** Wake every thread waiting on tx (a completion or placement happened). Lock held. */
void glucx_ucx_wake_waiters(glucx_ucx_tx_t *tx);
/** Wait until win has a placed message (drain = 0) or no fetch into it (drain = 1), the
 *  transport failed, wake_gen moved (drain = 0) or deadline_ns. @return GLUCX_OK when the
 *  condition holds or held (drain = 0: another waiter may have taken the message since, so the
 *  caller looks again), GLUCX_INPROGRESS when woken (wake_gen moved, nothing placed),
 *  GLUCX_ERR_TIMEOUT, or the failure status. */
glucx_status_t glucx_ucx_wait_win(glucx_ucx_tx_t *tx, struct glucx_tx_win *win, int drain,
                                  int64_t deadline_ns, unsigned wake_gen);
int glucx_ucx_progress(glucx_tx_t *tx);
glucx_status_t glucx_ucx_wait_any(glucx_tx_t *tx, glucx_tx_req_t *const *reqs, int n,
                                  int64_t deadline_ns, unsigned wake_gen);
void glucx_ucx_wake(glucx_tx_t *tx);
glucx_status_t glucx_ucx_wait(glucx_tx_t *tx, glucx_tx_req_t *const *reqs, int n,
                              int64_t deadline_ns);
void glucx_ucx_fail(glucx_tx_t *tx, glucx_status_t status, const char *text);
#define GLUCX_UCX_FAIL_NOTIFY 1 /**< tell the peers (failure notices) at teardown */
#define GLUCX_UCX_FAIL_QUIET 2  /**< no warning; flush before closing (healthy destroy) */
/**
 * Record a failure (first one wins): write the text, then publish the status. Safe from any
 * thread and from UCX callbacks; the teardown runs later, after the current progress call.
 * @param flags  GLUCX_UCX_FAIL_* bits.
 * @param origin rank where the failure started (a received notice's), -1 for this rank.
 * @param notice text the notices carry (the origin's words); NULL: the failure text.
 * @return 1 if this call recorded the failure.
 */
int glucx_ucx_record_failure(glucx_ucx_tx_t *tx, glucx_status_t status, int flags, int origin,
                             const char *notice, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/**
 * A peer failure seen locally (endpoint error, request error): it becomes the transport's
 * failure after GLUCX_UCX_SUSPECT_GRACE_NS unless a failure notice arrives first. Safe from any
 * thread and from UCX callbacks. The first suspicion is kept.
 * @param rank the peer whose endpoint error or exit is suspected (glucx_ucx_unsuspect() withdraws
 *             it when that peer's orderly leave arrives within the grace period: its endpoint
 *             closing is then expected); -1 for a failed request, which nothing withdraws.
 */
void glucx_ucx_suspect(glucx_ucx_tx_t *tx, int rank, glucx_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** Withdraw the pending suspicion about @p rank, if that is the one pending. As safe as
 *  glucx_ucx_suspect. */
void glucx_ucx_unsuspect(glucx_ucx_tx_t *tx, int rank);
/** Run the pending teardown if any (lock held, not inside a UCX callback). */
void glucx_ucx_teardown_if_pending(glucx_ucx_tx_t *tx);
/** One non-blocking progress round with the lock held; returns events. */
int glucx_ucx_progress_locked(glucx_ucx_tx_t *tx);
/** UCX endpoint error callback. */
void glucx_ucx_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status);
/** Progress until every UCX request in reqs[0..n) (NULL entries skipped, no callback of ours)
 *  completed or @p wait_ns passed; then release them all (ucp_request_free; UCX frees an
 *  unfinished one when it completes) and set them to NULL. Lock held, outside callbacks.
 *  @return the number left unfinished. */
int glucx_ucx_finish_requests(glucx_ucx_tx_t *tx, void **reqs, int n, int64_t wait_ns);

/* ucx_boot.c */
/** Accept the queued connection requests of the listener (an endpoint each, flushed), and send
 *  the record on each endpoint whose flush completed. Lock held, outside callbacks.
 *  @return the number of requests accepted and records sent. */
int glucx_ucx_boot_progress(glucx_ucx_tx_t *tx);
/** Close the listener and every rendezvous endpoint (forcibly), wait (bounded) for their
 *  requests; tx->boot moves to tx->boot_closed. Lock held, outside callbacks. */
void glucx_ucx_boot_close(glucx_ucx_tx_t *tx);
/** Destroy the listeners of closed rendezvous still waiting for their peers' connections (see
 *  ucx_boot.c), before the worker is destroyed. Lock not held. */
void glucx_ucx_boot_drain(glucx_ucx_tx_t *tx);
/** Free tx->boot_closed, once the worker is destroyed. */
void glucx_ucx_boot_free(glucx_ucx_tx_t *tx);
/**
 * Check whether local peers exited (readable pidfd, or kill(pid, 0) fails with ESRCH, or the
 * process is a zombie); an exited peer's messages already queued are progressed, then it is
 * suspected ("rank N (pid P) exited", GLUCX_ERR_PEER_FAILED) like an endpoint error. Lock held,
 * outside callbacks.
 */
void glucx_ucx_check_peers(glucx_ucx_tx_t *tx);

#endif
