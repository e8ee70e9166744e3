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
};
#define GLUCX_UCX_KIND_BITS UINT64_C(7)

struct glucx_ucx_context {
    ucp_context_h ucp;
    int64_t keepalive_ns; /**< keepalive interval in force (UCX default when not configured) */
    int64_t spin_ns;      /**< how long waits poll before sleeping */
    int shm;              /**< UCX_TLS lets a shared-memory transport in (mm or cma) */
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
    uint32_t reserved;  /**< 0 */
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

    /* Liveness of local peers (endpoints without UCX error handling). */
    void *blob; /**< identity + worker address, as returned by create */
    size_t blob_len;
    glucx_ucx_ident_t ident; /**< this process */
    unsigned char *local;    /**< [size] endpoint created with UCP_ERR_HANDLING_MODE_NONE */
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

    int64_t tick_ns; /**< longest sleep before progressing again (keepalive) */
    int64_t spin_ns; /**< how long waits poll before sleeping (from the context) */
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
/** Probe for an unexpected message (tx.h probe op). */
int glucx_ucx_probe(glucx_tx_t *tx, int peer, uint64_t tag, uint64_t ignore_mask, uint64_t *tag_p);
/** Match pending subset receives against unexpected messages. Lock held. */
int glucx_ucx_probe_all(glucx_ucx_tx_t *tx);
/** (Re)post the failure-notice receive. Lock held. */
glucx_status_t glucx_ucx_post_ctrl(glucx_ucx_tx_t *tx);
/** Complete a request: fill it, unlink it, release-store done, wake waiters. Lock held. */
void glucx_ucx_complete(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, glucx_status_t status, int peer,
                        size_t bytes, uint64_t tag);
void glucx_ucx_list_add(glucx_ucx_tx_t *tx, glucx_tx_req_t *req, int kind);
static inline int glucx_ucx_req_kind(const glucx_tx_req_t *req)
{
    return (int)(req->impl_data[3] & GLUCX_UCX_KIND_BITS);
}
static inline glucx_ucx_probe_t *glucx_ucx_req_probe(const glucx_tx_req_t *req)
{
    return (glucx_ucx_probe_t *)(req->impl_data[3] & ~(uintptr_t)GLUCX_UCX_KIND_BITS);
}

/* ucx_wait.c */
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
/**
 * Check whether local peers exited (readable pidfd, or kill(pid, 0) fails with ESRCH, or the
 * process is a zombie); an exited peer's messages already queued are progressed, then it is
 * suspected ("rank N (pid P) exited", GLUCX_ERR_PEER_FAILED) like an endpoint error. Lock held,
 * outside callbacks.
 */
void glucx_ucx_check_peers(glucx_ucx_tx_t *tx);

#endif
