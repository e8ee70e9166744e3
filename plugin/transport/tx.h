/**
 * Internal transport interface (glucx_tx_*): what the collective and point-to-point layers see
 * of a transport. Two implementations: UCX (plugin/transport/ucx.c) and an in-process fake for
 * unit tests (tests/support/fake_tx.c). Nothing above this header names UCX.
 *
 * Wire tags. A transport tag is 64 bits; the transport itself writes the source rank into
 * bits [GLUCX_TX_TAG_SRC_SHIFT, +GLUCX_TX_TAG_SRC_BITS) of every message it sends, and matches
 * receives on (source, the other bits not in ignore_mask). Callers build the remaining bits
 * (see plugin/core/tag.h) and leave the source bits zero.
 *
 * Failure. A transport fails as a whole (Gloo semantics): once glucx_tx_fail() ran locally, a
 * peer's failure notice arrived, or a peer was found dead, every outstanding request completes
 * with the failure status and every new post returns it; glucx_tx_failure() gives the text.
 */
#ifndef GLUCX_TX_H
#define GLUCX_TX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <glucx/status.h>

#define GLUCX_TX_TAG_SRC_SHIFT 48
#define GLUCX_TX_TAG_SRC_BITS 14
#define GLUCX_TX_TAG_SRC_MASK                                                                      \
    (((UINT64_C(1) << GLUCX_TX_TAG_SRC_BITS) - 1) << GLUCX_TX_TAG_SRC_SHIFT)
/** Reserved for the transport's own failure notices; callers never set this bit. */
#define GLUCX_TX_TAG_CTRL (UINT64_C(1) << 62)
/**
 * Exact-length messages (the collectives' tag space): the caller promises that every message
 * with this bit set is received by a receive from exactly one source whose length equals the
 * sent length, posted in the order the sender sent messages of that tag. The transport may then
 * carry such a message as several (the UCX transport cuts large ones to ranks on other hosts
 * into segments, see glucx_tx_ucx_context_set_net_seg); a receive whose length still differs
 * from the sender's completes with the bytes it got (fewer than posted) or GLUCX_ERR_TRUNCATED,
 * as for any message, but the sender's length it reports may be that of one segment.
 */
#define GLUCX_TX_TAG_EXACT (UINT64_C(1) << 63)

typedef struct glucx_tx glucx_tx_t;

/** glucx_tx_req_t.flags: a send posted with isend_sync (completes once its receiver matched). */
#define GLUCX_TX_SEND_SYNC 1u

/**
 * A request, in storage owned by the caller (stack or heap) that must stay valid until the
 * request is complete. Zero it (or call glucx_tx_req_init) before posting.
 */
typedef struct glucx_tx_req {
    atomic_int done;       /**< 0 while pending, 1 once complete (release-store by the transport) */
    glucx_status_t status; /**< final status once done */
    int peer;              /**< send: destination; receive: actual source once done */
    size_t posted;         /**< bytes posted (set by the transport at post time) */
    size_t bytes;          /**< send: bytes sent; receive: bytes received once done (with
                                GLUCX_ERR_TRUNCATED: the sender's full length, > posted; only
                                `posted` bytes were written) */
    uint64_t tag;          /**< receive: the sender's full wire tag once done */
    int is_recv;
    unsigned flags;         /**< GLUCX_TX_* bits, set by the transport at post */
    int traced;             /**< caller-private: its end event was emitted (coll/common.c) */
    void *impl;             /**< transport-private */
    uintptr_t impl_data[8]; /**< transport-private (a put keeps its wire header here) */
} glucx_tx_req_t;

/** glucx_tx_ops_t.put flag: complete only once the data is in the peer's window. */
#define GLUCX_TX_PUT_SYNC 1u

/** A window (placed receives; transport-private), see glucx_tx_ops_t.win_open. */
typedef struct glucx_tx_win glucx_tx_win_t;

typedef struct glucx_tx_ops {
    /** Post a send of bytes at buf to peer (may be this rank). */
    glucx_status_t (*isend)(glucx_tx_t *tx, int peer, uint64_t tag, const void *buf, size_t bytes,
                            glucx_tx_req_t *req);
    /**
     * As isend, but the request completes only once a receive posted on peer has matched the
     * message (and, for a message sent as a rendezvous, received it), as Gloo's TCP transport
     * completes a send only after its peer announced the matching receive. A send no receive
     * ever matches stays pending until the wait's deadline or the transport's failure; a peer
     * that leaves (destroys its transport) without matching it fails the transport. May be
     * NULL (the transport cannot).
     */
    glucx_status_t (*isend_sync)(glucx_tx_t *tx, int peer, uint64_t tag, const void *buf,
                                 size_t bytes, glucx_tx_req_t *req);
    /**
     * Post a receive of at most bytes into buf from the first of peers[0..npeers) whose message
     * matches tag on the bits outside ignore_mask (and outside the source bits). npeers == 1 is a
     * plain receive. A longer message completes the request with GLUCX_ERR_TRUNCATED.
     */
    glucx_status_t (*irecv)(glucx_tx_t *tx, const int *peers, int npeers, uint64_t tag,
                            uint64_t ignore_mask, void *buf, size_t bytes, glucx_tx_req_t *req);
    /** Drive progress once without blocking; @return number of events processed (>= 0). */
    int (*progress)(glucx_tx_t *tx);
    /**
     * Wait until every one of reqs[0..n) is done, the transport fails, or deadline_ns
     * (CLOCK_MONOTONIC; INT64_MAX for none) passes. Spins briefly, then sleeps on the event
     * descriptor. @return GLUCX_OK when all are done (their own statuses are in each req),
     * the failure status, or GLUCX_ERR_TIMEOUT (requests stay posted).
     * Several threads may wait at once on different requests.
     */
    glucx_status_t (*wait)(glucx_tx_t *tx, glucx_tx_req_t *const *reqs, int n, int64_t deadline_ns);
    /**
     * As wait, but return GLUCX_OK as soon as one of reqs[0..n) is done, and GLUCX_INPROGRESS
     * when wake() was called after the caller read wake_gen (the value of wake_gen passed in).
     * May be NULL (the transport does not support it).
     */
    glucx_status_t (*wait_any)(glucx_tx_t *tx, glucx_tx_req_t *const *reqs, int n,
                               int64_t deadline_ns, unsigned wake_gen);
    /** Wake every wait_any caller (they return GLUCX_INPROGRESS). May be NULL. */
    void (*wake)(glucx_tx_t *tx);
    /** Cancel an unmatched receive (it completes with GLUCX_ERR_ABORTED); no-op otherwise. */
    void (*cancel)(glucx_tx_t *tx, glucx_tx_req_t *req);
    /**
     * Look, without taking it, for a message from peer that arrived and matches no posted
     * receive and whose tag matches tag on the bits outside ignore_mask (and outside the source
     * bits). @return 1 and its full wire tag in *tag_p (may be NULL) if there is one, else 0.
     * Used to find a peer that runs another collective under the same sequence number. Never
     * blocks; thread-safe. May be NULL (the transport cannot look).
     */
    int (*probe)(glucx_tx_t *tx, int peer, uint64_t tag, uint64_t ignore_mask, uint64_t *tag_p);
    /**
     * Fail the transport with status and text: send the text as a failure notice to every peer
     * (best effort, bounded time), then complete every outstanding request with status. After
     * it returns no request buffer is touched again. Idempotent: the first failure wins.
     */
    void (*fail)(glucx_tx_t *tx, glucx_status_t status, const char *text);
    /**
     * Windows (placed receives, the model of Gloo's bound buffers). All four may be NULL (the
     * transport has no windows).
     *
     * put: post a put of bytes at buf into peer's window for (this rank, slot) at byte offset.
     * The request completes as a send does (buf reusable), or with GLUCX_TX_PUT_SYNC once the
     * data is in the peer's window. Puts of one rank to one (peer, slot) are placed in posting
     * order. A put that does not fit the window fails the transport on the receiving side
     * (GLUCX_ERR_TRUNCATED, via the failure notices). Returns as isend.
     */
    glucx_status_t (*put)(glucx_tx_t *tx, int peer, uint64_t slot, size_t offset, const void *buf,
                          size_t bytes, unsigned flags, glucx_tx_req_t *req);
    /**
     * Open a window of bytes at buf (borrowed until win_close returns) for the puts peer makes
     * with slot; puts held for (peer, slot) since the last window are placed now, in order.
     * @return GLUCX_OK and *win_p; GLUCX_ERR_INVALID_ARG (a window for (peer, slot) is open);
     * the failure status; GLUCX_ERR_NO_MEMORY. Thread-safe.
     */
    glucx_status_t (*win_open)(glucx_tx_t *tx, int peer, uint64_t slot, void *buf, size_t bytes,
                               glucx_tx_win_t **win_p);
    /**
     * Take the oldest put placed in win (its bytes are all in the window), waiting for one
     * until deadline_ns; drives progress like wait_any (wake() after the caller read wake_gen
     * interrupts). @return GLUCX_OK with *offset_p and *bytes_p; GLUCX_INPROGRESS (woken);
     * GLUCX_ERR_TIMEOUT (nothing taken; the transport does not fail by itself); the failure
     * status (the transport failed, also by a wait whose only peer left in order with nothing
     * more for it: GLUCX_ERR_ABORTED). Thread-safe.
     */
    glucx_status_t (*win_wait)(glucx_tx_t *tx, glucx_tx_win_t *win, int64_t deadline_ns,
                               unsigned wake_gen, size_t *offset_p, size_t *bytes_p);
    /**
     * Close and free win: waits until no transfer into it is under way (failing the transport
     * with GLUCX_ERR_TIMEOUT at deadline_ns), so buf is never written after it returns. Puts
     * that arrived for (peer, slot) but were not placed are held for the next window.
     * @return GLUCX_OK, or the failure status. Not concurrently with win_wait on win.
     */
    glucx_status_t (*win_close)(glucx_tx_t *tx, glucx_tx_win_t *win, int64_t deadline_ns);
    /** Describe how this rank reaches peer (e.g. "posix/memory", "tcp/lo") into buf. */
    void (*describe_peer)(glucx_tx_t *tx, int peer, char *buf, size_t len);
    /** Destroy: fail (if not failed) with GLUCX_ERR_ABORTED quietly, release everything. */
    void (*destroy)(glucx_tx_t *tx);
} glucx_tx_ops_t;

struct glucx_tx {
    const glucx_tx_ops_t *ops;
    int rank;
    int size;
    /** 0 while healthy, else the failure status (set once, atomically). */
    atomic_int failed;
    /** Incremented by wake(); read before wait_any(). */
    atomic_uint wake_gen;
    /** The failure text once failed; written before `failed` is set. */
    char failure[512];
};

static inline void glucx_tx_req_init(glucx_tx_req_t *req)
{
    atomic_store_explicit(&req->done, 0, memory_order_relaxed);
    req->status = GLUCX_INPROGRESS;
    req->peer = -1;
    req->posted = 0;
    req->bytes = 0;
    req->tag = 0;
    req->is_recv = 0;
    req->flags = 0;
    req->traced = 0;
    req->impl = NULL;
}

static inline int glucx_tx_req_done(const glucx_tx_req_t *req)
{
    return atomic_load_explicit(&((glucx_tx_req_t *)req)->done, memory_order_acquire);
}

/**
 * Whether a wait for reqs[0..n) would block; what decides if the wait is traced (EVENTS.md,
 * wait_begin). Complete requests do not block. A wait for sends only first gets one
 * non-blocking progress pass, which the wait would make first anyway: it mostly delivers the
 * acknowledgements that arrived since the last progress (a ring's last sends, done long ago). A
 * wait with a receive gets none, so the progress that moves its data stays inside the wait.
 * Call it from a thread that may drive tx's progress (any waiting thread may).
 */
static inline int glucx_tx_would_block(glucx_tx_t *tx, const glucx_tx_req_t *reqs, int n)
{
    int pending = 0, recvs = 0;
    for (int i = 0; i < n; i++) {
        pending += !glucx_tx_req_done(&reqs[i]);
        recvs += reqs[i].is_recv;
    }
    if (pending == 0 || recvs > 0)
        return pending > 0;
    tx->ops->progress(tx);
    for (int i = 0; i < n; i++)
        if (!glucx_tx_req_done(&reqs[i]))
            return 1;
    return 0;
}

/** Failure status of tx, GLUCX_OK while healthy. */
static inline glucx_status_t glucx_tx_failure(const glucx_tx_t *tx)
{
    return (glucx_status_t)atomic_load_explicit(&((glucx_tx_t *)tx)->failed, memory_order_acquire);
}

#endif
