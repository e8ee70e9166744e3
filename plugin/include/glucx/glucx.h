/**
 * @file glucx/glucx.h
 * @brief libglucx public C ABI: context, communicator, point-to-point, collectives, requests.
 *
 * Ownership: a context outlives its communicators, a communicator outlives its requests.
 * User buffers are borrowed from the call that posts them until the operation completes.
 * Threads: every function may be called from several threads at once unless its comment says
 * otherwise. Collectives on one communicator must be called in the same order on every rank
 * (as in MPI); calls from different threads on one communicator are ordered by the caller.
 *
 * Fork: UCX state does not survive fork(). A process forked (without exec) while this process had
 * glucx contexts cannot use glucx at all, neither the objects it inherited nor new ones: creating
 * a context or communicator, every point-to-point, window, collective and request call, and
 * glucx_comm_address/compact_address/connect/peer_transport return GLUCX_ERR_UNSUPPORTED at once
 * (before any lock or UCX call), with a glucx_last_error() text that names the operation, the fork
 * and the exec-based start methods to use instead (glucx_fork_check() tells in advance; the
 * rendezvous stores are not UCX and are not refused). In such a child, glucx_comm_destroy(),
 * glucx_context_destroy(), glucx_window_destroy() and glucx_request_free() of inherited objects
 * release nothing and contact no peer (the parent's peers see nothing of the child);
 * glucx_comm_abort() and glucx_comm_wake() do nothing. Functions that only read
 * (glucx_comm_rank/size, glucx_comm_algorithm, glucx_comm_wake_count, glucx_version,
 * glucx_stats_get, the trace functions) keep working. The parent's objects are not affected. A
 * process forked while no glucx context existed (none created yet, or all destroyed) may create
 * and use its own, also while another thread of the parent was inside mmap at the fork.
 */
#ifndef GLUCX_GLUCX_H
#define GLUCX_GLUCX_H

#include <stddef.h>
#include <stdint.h>

#include <glucx/export.h>
#include <glucx/status.h>
#include <glucx/store.h>
#include <glucx/types.h>
#include <glucx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque per-process context: UCX context, configuration, trace state. */
typedef struct glucx_context glucx_context_t;
/** Opaque communicator: a group of ranks with their endpoints and topology. */
typedef struct glucx_comm glucx_comm_t;
/** Opaque non-blocking operation. */
typedef struct glucx_request glucx_request_t;

/**
 * Version of the library that is running, "MAJOR.MINOR.PATCH".
 * @return a static string. Thread-safe.
 */
GLUCX_API const char *glucx_version(void);

/* ------------------------------------------------------------------------------------------ */
/* Context                                                                                    */

/** Which fields of glucx_context_params_t are set; the others take their defaults. */
enum {
    GLUCX_CONTEXT_PARAM_NET_DEVICES = 1u << 0,
};

typedef struct glucx_context_params {
    uint64_t field_mask;     /**< GLUCX_CONTEXT_PARAM_* bits */
    const char *net_devices; /**< UCX network devices for traffic between hosts, as
                                  UCX_NET_DEVICES takes them: "eth0", "mlx5_0:1", "all" (default:
                                  UCX_NET_DEVICES from the environment, else all) */
} glucx_context_params_t;

/**
 * Create a context: one UCX context with its configuration. Reads the GLUCX_* environment (see
 * glucx-info) once and logs a warning for each unknown GLUCX_* variable. One context per
 * process is enough; several are allowed.
 * @param params    parameters (borrowed for the call), or NULL for defaults.
 * @param context_p receives the context on success.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL context_p, or a malformed GLUCX_* value: the
 *         message names the variable); GLUCX_ERR_TRANSPORT (UCX could not be initialised);
 *         GLUCX_ERR_NO_MEMORY; GLUCX_ERR_UNSUPPORTED (a forked child: see Fork above).
 */
GLUCX_API glucx_status_t glucx_context_create(const glucx_context_params_t *params,
                                              glucx_context_t **context_p);

/** Destroy a context; all its communicators must be destroyed first. NULL is accepted. In a
 *  forked child (see Fork above) it releases nothing and only forgets the context. */
GLUCX_API void glucx_context_destroy(glucx_context_t *context);

/**
 * Whether this process may use glucx: GLUCX_OK, or GLUCX_ERR_UNSUPPORTED when it was forked
 * (without exec, from this process or an ancestor) while glucx contexts existed, with the
 * reason in glucx_last_error() (it names the fork, the parent's pid and the exec-based start
 * methods to use instead). Adapters call it before touching anything they inherited (stores,
 * their own threads and locks). Thread-safe; one atomic load.
 */
GLUCX_API glucx_status_t glucx_fork_check(void);

/* ------------------------------------------------------------------------------------------ */
/* Communicator                                                                               */

/** Which fields of glucx_comm_params_t are set; the others take their defaults. */
enum {
    GLUCX_COMM_PARAM_NAME = 1u << 0,
    GLUCX_COMM_PARAM_TIMEOUT = 1u << 1,
};

/** Largest communicator size (the tag layout reserves 14 bits for the source rank). */
#define GLUCX_COMM_SIZE_MAX 16384

typedef struct glucx_comm_params {
    uint64_t field_mask;  /**< GLUCX_COMM_PARAM_* bits of the optional fields below */
    int rank;             /**< required: this process's rank, 0 <= rank < size */
    int size;             /**< required: number of ranks, 1 <= size <= GLUCX_COMM_SIZE_MAX */
    glucx_store_t *store; /**< required: rendezvous store, borrowed for the create call only */
    const char *name;     /**< key prefix in the store, the same on every rank and unique per
                               communicator creation in that store (default "glucx"): records
                               of an earlier job left under the same name would be read as
                               this job's, so use a fresh store directory or a new name */
    int64_t timeout_ms;   /**< default per-operation timeout (default GLUCX_TIMEOUT_MS, 300000) */
} glucx_comm_params_t;

/**
 * Create a communicator: collective over all @p params->size ranks, which must call it with the
 * same name. Publishes this rank's worker address and settings digest in the store, reads every
 * peer's, creates the endpoints and checks that all ranks run the same glucx version with the
 * same selection settings (GLUCX_TUNE, overrides).
 * @param context parent context (borrowed; must outlive the communicator).
 * @param params  parameters (borrowed for the call).
 * @param comm_p  receives the communicator on success.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG; GLUCX_ERR_TIMEOUT (a peer did not publish in time:
 *         the message names it); GLUCX_ERR_MISMATCH (a peer's version or settings differ: the
 *         message names the rank and both values); GLUCX_ERR_STORE; GLUCX_ERR_TRANSPORT;
 *         GLUCX_ERR_NO_MEMORY; GLUCX_ERR_UNSUPPORTED (a forked child, before the store is
 *         touched: see Fork above).
 */
GLUCX_API glucx_status_t glucx_comm_create(glucx_context_t *context,
                                           const glucx_comm_params_t *params,
                                           glucx_comm_t **comm_p);

/**
 * Destroy a communicator. Outstanding requests are cancelled or failed, and their buffers are
 * no longer touched once this returns; the requests themselves must still be freed. NULL is
 * accepted. Not thread-safe with other calls on the same communicator. Windows still open are
 * detached: nothing writes into them afterwards, and glucx_window_destroy() only frees them. A
 * healthy communicator tells each peer it leaves (docs/architecture.md, "Orderly leave"): a peer
 * still waiting for a message from this rank then fails with GLUCX_ERR_ABORTED instead of at its
 * timeout — end a job with a barrier before destroying. In a forked child (see Fork above) it
 * tells no one and releases nothing.
 */
GLUCX_API void glucx_comm_destroy(glucx_comm_t *comm);

/**
 * Create a communicator in two steps, for hosts that carry the addresses themselves (Gloo's
 * rendezvous hands one address per pair to its transport). glucx_comm_prepare() creates this
 * rank's UCX worker and its address record; the host delivers that record to every peer;
 * glucx_comm_connect() takes every rank's record, checks versions and settings as
 * glucx_comm_create() does, and connects. glucx_comm_create() is exactly prepare, an exchange
 * through its store, and connect.
 * @param context parent context (borrowed; must outlive the communicator).
 * @param params  as for glucx_comm_create(), but params->store is not used (may be NULL); the
 *                timeout bounds glucx_comm_connect().
 * @param comm_p  receives a communicator that is not connected yet: only glucx_comm_address(),
 *                glucx_comm_connect(), glucx_comm_rank()/size() and glucx_comm_destroy() may be
 *                called on it; other operations return GLUCX_ERR_INVALID_ARG.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG; GLUCX_ERR_TRANSPORT; GLUCX_ERR_NO_MEMORY;
 *         GLUCX_ERR_UNSUPPORTED (a forked child).
 */
GLUCX_API glucx_status_t glucx_comm_prepare(glucx_context_t *context,
                                            const glucx_comm_params_t *params,
                                            glucx_comm_t **comm_p);

/**
 * This rank's address record (opaque bytes: version digest, host identity, worker address), as
 * glucx_comm_connect() on every peer expects it.
 * @param record_p receives a pointer owned by @p comm, valid until it is connected or destroyed.
 * @param bytes_p  receives the record's length (a few hundred bytes; it varies with the
 *                 transports UCX found).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL argument, or @p comm is already connected).
 */
GLUCX_API glucx_status_t glucx_comm_address(const glucx_comm_t *comm, const void **record_p,
                                            size_t *bytes_p);

/** Length of every compact address (glucx_comm_compact_address()), whatever the host's network
 *  interfaces and UCX transports. */
#define GLUCX_COMPACT_ADDRESS_BYTES 52

/**
 * A fixed-size stand-in for this rank's address record (glucx_comm_address()), for hosts whose
 * exchange caps an address's size (Gloo's ContextFactory sends at most 192 bytes per pair; the
 * record is a few hundred bytes and grows with every network interface UCX uses).
 *
 * The first call opens a UCX listener of this communicator on @p listen_host (port chosen by
 * the system); it serves the record to every peer that connects, until the communicator is
 * connected, fails or is destroyed. The compact address holds its format, this rank and the
 * size, the record's length and a 64-bit digest of it, and the listener's socket address. A peer
 * that gets it in glucx_comm_connect() connects to the listener, receives the record and checks
 * that it is the one the compact address describes. So the rendezvous still goes through the
 * host's own exchange; only the record travels over UCX's own client-server connection.
 *
 * @param comm        prepared communicator, not connected.
 * @param listen_host numeric IPv4 or IPv6 address of this host that every peer can reach (an
 *                    IPv6 link-local one as "fe80::1%eth0"); borrowed for the call. Ignored after
 *                    the first call.
 * @param buf         receives GLUCX_COMPACT_ADDRESS_BYTES bytes (the same on every call).
 * @param bytes       size of @p buf, >= GLUCX_COMPACT_ADDRESS_BYTES.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL argument, @p bytes too small, @p listen_host not
 *         a numeric address, @p comm connected); GLUCX_ERR_UNSUPPORTED (UCX_TLS lets no network
 *         transport in, e.g. "shm,self": UCX wires client-server connections up only over one, so
 *         use the full record); GLUCX_ERR_TRANSPORT (UCX cannot listen on @p listen_host: the
 *         message names it and UCX's status); GLUCX_ERR_NO_MEMORY. Not thread-safe with other
 *         calls on @p comm.
 */
GLUCX_API glucx_status_t glucx_comm_compact_address(glucx_comm_t *comm, const char *listen_host,
                                                    void *buf, size_t bytes);

/**
 * Connect a prepared communicator to its peers.
 * @param records array of size() entries indexed by rank (borrowed for the call): rank r's
 *                address record (glucx_comm_address()) or its compact address
 *                (glucx_comm_compact_address()), in any mix; the entry of this rank may be NULL
 *                (its own record is used). For a compact address, the record is received from
 *                the listener it names and must have the length and digest it announces.
 * @param bytes   their lengths.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL arrays, a NULL peer record, already connected);
 *         GLUCX_ERR_MISMATCH (a record that is not a glucx record of this version, or whose
 *         settings differ: the message names the rank and both values; a compact address of
 *         another rank or size, or whose listener served a record it does not describe: the
 *         message names this rank and the rank concerned); GLUCX_ERR_PEER_FAILED (a compact
 *         address's listener cannot be reached: names the rank and the socket address);
 *         GLUCX_ERR_UNSUPPORTED (compact addresses, but UCX_TLS lets no network transport in);
 *         GLUCX_ERR_TRANSPORT; GLUCX_ERR_TIMEOUT (the communicator's timeout bounds the whole
 *         call, fetching included); GLUCX_ERR_NO_MEMORY. On failure the communicator can only
 *         be destroyed. A rank given compact addresses serves its own record meanwhile (if it
 *         published a compact address), so every rank must call this; its listener closes when
 *         it returns.
 */
GLUCX_API glucx_status_t glucx_comm_connect(glucx_comm_t *comm, const void *const *records,
                                            const size_t *bytes);

/** This process's rank in @p comm. */
GLUCX_API int glucx_comm_rank(const glucx_comm_t *comm);
/** Number of ranks in @p comm. */
GLUCX_API int glucx_comm_size(const glucx_comm_t *comm);

/**
 * Copy the last error text of @p comm (the failure that made it unusable, or the last failing
 * operation) into @p buf, truncated to @p len bytes including the NUL.
 * @return the full length of the text (as snprintf). Thread-safe.
 */
GLUCX_API size_t glucx_comm_last_error(glucx_comm_t *comm, char *buf, size_t len);

/**
 * Describe how this rank reaches @p peer, e.g. "posix/memory" or "tcp/lo", copied into @p buf.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (peer out of range or NULL buf). Thread-safe.
 */
GLUCX_API glucx_status_t glucx_comm_peer_transport(glucx_comm_t *comm, int peer, char *buf,
                                                   size_t len);

/**
 * Fail the communicator from outside: every outstanding and later operation on it returns
 * GLUCX_ERR_ABORTED, and peers learn of it as far as the network allows. Thread-safe; may be
 * called from a signal-free watchdog thread.
 */
GLUCX_API void glucx_comm_abort(glucx_comm_t *comm, const char *reason);

/* ------------------------------------------------------------------------------------------ */
/* Point-to-point                                                                             */

/** Largest user tag of glucx_isend()/glucx_irecv() (48 bits). */
#define GLUCX_TAG_MAX ((UINT64_C(1) << 48) - 1)

/**
 * Post a send of @p bytes bytes at @p buf (borrowed until completion) to @p peer with @p tag.
 * Messages between two ranks with one tag are matched in the order they were posted.
 * Zero-byte messages are allowed (buf may then be NULL).
 * @param request_p receives the request; release it with glucx_request_free().
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (peer out of range, tag > GLUCX_TAG_MAX, NULL buf with
 *         bytes > 0); the communicator's failure status if it has failed; GLUCX_ERR_NO_MEMORY;
 *         GLUCX_ERR_UNSUPPORTED (a forked child: see Fork above).
 */
GLUCX_API glucx_status_t glucx_isend(glucx_comm_t *comm, const void *buf, size_t bytes, int peer,
                                     uint64_t tag, glucx_request_t **request_p);

/** glucx_isend_flags() flags. */
enum {
    /**
     * Synchronous send (MPI's Issend): the request completes only once a receive posted on
     * @p peer has matched the message, not as soon as @p buf may be reused. This is when
     * Gloo's TCP transport completes a send (it transmits only after the peer announced the
     * matching receive), so a sender whose peer never posts one times out instead of
     * succeeding. Costs an acknowledgement from the receiver for messages UCX sends eagerly
     * (small ones); large ones are sent as a rendezvous either way. A send pending when its
     * peer destroys its communicator fails the communicator (GLUCX_ERR_ABORTED).
     */
    GLUCX_SEND_SYNC = 1u << 0,
};

/**
 * glucx_isend() with options.
 * @param flags 0 (exactly glucx_isend()) or GLUCX_SEND_SYNC.
 * @return as glucx_isend(); GLUCX_ERR_INVALID_ARG also for an unknown flag bit.
 */
GLUCX_API glucx_status_t glucx_isend_flags(glucx_comm_t *comm, const void *buf, size_t bytes,
                                           int peer, uint64_t tag, unsigned flags,
                                           glucx_request_t **request_p);

/**
 * Post a receive of at most @p bytes bytes into @p buf from @p peer with @p tag. A longer message
 * completes the request with GLUCX_ERR_TRUNCATED and never writes past @p bytes.
 * @return as glucx_isend().
 */
GLUCX_API glucx_status_t glucx_irecv(glucx_comm_t *comm, void *buf, size_t bytes, int peer,
                                     uint64_t tag, glucx_request_t **request_p);

/**
 * Post a receive from whichever of @p peers (an array of @p npeers ranks, borrowed for the
 * call; duplicates and this rank are allowed) sends first with @p tag.
 * glucx_request_info() then tells which peer it was.
 * @return as glucx_isend().
 */
GLUCX_API glucx_status_t glucx_irecv_any(glucx_comm_t *comm, void *buf, size_t bytes,
                                         const int *peers, int npeers, uint64_t tag,
                                         glucx_request_t **request_p);

/* ------------------------------------------------------------------------------------------ */
/* Windows: placed (bound) receives                                                           */
/*                                                                                            */
/* A window is a region of this rank's memory that one peer writes into with glucx_iput(),   */
/* naming a slot and an offset in it: the model of Gloo's bound buffers (Pair::createRecvBuffer */
/* / createSendBuffer, Buffer::send(offset, length, roffset)). Data is placed by whichever   */
/* thread drives the communicator's progress (any wait on it), not only by glucx_window_wait(), */
/* so a rank blocked in another wait on the communicator still receives.                     */
/*                                                                                            */
/* Puts that arrive for (peer, slot) while no window is open are held, in arrival order, and  */
/* placed when one opens. Holding costs memory here (the payload of small puts, a fixed 256   */
/* bytes per put) up to GLUCX_WINDOW_HOLD per communicator (default 256 MiB), past which the  */
/* communicator fails with GLUCX_ERR_NO_MEMORY; a large put held keeps only a descriptor here */
/* and its sender's request incomplete until the window opens.                                */

/** Largest slot of glucx_window_create() / glucx_iput(). */
#define GLUCX_SLOT_MAX UINT64_MAX

/** glucx_iput() flags. */
enum {
    /** Complete only once the data is in the peer's window, instead of once @p buf may be
     *  reused (the receiver acknowledges the placement: one more message per put). Gloo's TCP
     *  transport completes a bound-buffer send locally (once written into its socket), so the
     *  Gloo shim does not use it; it is for callers that must know the data arrived. */
    GLUCX_PUT_SYNC = 1u << 0,
};

/** Opaque window (one peer, one slot). */
typedef struct glucx_window glucx_window_t;

/**
 * Open a window of @p bytes bytes at @p buf for the messages @p peer puts with @p slot.
 * Messages that arrived for (peer, slot) before the window existed were held (in arrival order)
 * and are placed now. @p buf is borrowed until glucx_window_destroy() returns (or
 * glucx_comm_destroy(), which detaches every window still open).
 * @param peer   the one rank whose glucx_iput()s land here (may be this rank).
 * @param slot   any 64-bit value, matched exactly with the sender's.
 * @param window_p receives the window.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (peer out of range, NULL buf with bytes > 0, a window
 *         for (peer, slot) already open, communicator not connected); the communicator's failure
 *         status; GLUCX_ERR_NO_MEMORY. Thread-safe.
 */
GLUCX_API glucx_status_t glucx_window_create(glucx_comm_t *comm, int peer, uint64_t slot, void *buf,
                                             size_t bytes, glucx_window_t **window_p);

/**
 * Put @p bytes bytes at @p buf (borrowed until the request completes) into @p peer's window for
 * (this rank, @p slot) at byte @p offset. Puts of one rank to one window are placed in the order
 * they were posted (where they overlap; disjoint ones may land in any order, and
 * glucx_window_wait() reports them in posting order). If the message does not fit the window
 * (offset + bytes > its size), the receiving rank fails the communicator with
 * GLUCX_ERR_TRUNCATED, naming slot, offset, sizes and sender; nothing is written outside the
 * window. Zero-byte puts are allowed (buf may then be NULL); @p peer may be this rank.
 * @param flags 0 or GLUCX_PUT_SYNC.
 * @param request_p receives the request; wait on it and release it with glucx_request_free()
 *        (glucx_request_wait_any() accepts it among sends and receives).
 * @return as glucx_isend(); GLUCX_ERR_INVALID_ARG also for unknown flags or an offset + bytes
 *         that overflows. A put to a rank that destroyed its communicator, or one not yet placed
 *         when its receiver destroys its communicator, fails the communicator
 *         (GLUCX_ERR_ABORTED). Thread-safe.
 */
GLUCX_API glucx_status_t glucx_iput(glucx_comm_t *comm, const void *buf, size_t bytes, int peer,
                                    uint64_t slot, size_t offset, unsigned flags,
                                    glucx_request_t **request_p);

/**
 * Consume one message placed in @p window (a put whose bytes are all in the window), waiting
 * for one for at most @p timeout_ms (< 0: the communicator's timeout; 0: do not wait).
 * Messages are consumed in the order they were posted.
 * @param since as glucx_request_wait_any(): glucx_comm_wake() after that count interrupts.
 * @param bytes_p receives the message's length (may be NULL); @param offset_p its offset.
 * @return GLUCX_OK; GLUCX_INPROGRESS (woken, or timeout_ms == 0 and none placed);
 *         GLUCX_ERR_TIMEOUT (fails the communicator; the text says "Timed out waiting <T>ms"
 *         and names the window's peer and slot); GLUCX_ERR_ABORTED when the peer destroyed its
 *         communicator and nothing more of it is held for the window; the communicator's failure
 *         status (a dead peer: GLUCX_ERR_PEER_FAILED); GLUCX_ERR_INVALID_ARG (NULL window, or its
 *         communicator was destroyed). Thread-safe (several threads may wait on one window).
 */
GLUCX_API glucx_status_t glucx_window_wait(glucx_window_t *window, int64_t timeout_ms,
                                           const unsigned *since, size_t *bytes_p,
                                           size_t *offset_p);

/**
 * Close a window and free it. A message being placed into it is waited for (up to the
 * communicator's timeout, after which the communicator fails with GLUCX_ERR_TIMEOUT), so the
 * buffer is never written after this returns; messages that arrived but were not placed yet, and
 * later ones, for (peer, slot) are held as before the window existed. Placed messages not
 * consumed are dropped. A window detached by glucx_comm_destroy() is only freed. NULL is
 * accepted. Not concurrently with glucx_window_wait() on the same window, nor with
 * glucx_comm_destroy().
 */
GLUCX_API void glucx_window_destroy(glucx_window_t *window);

/* ------------------------------------------------------------------------------------------ */
/* Collectives                                                                                */

/** Collective kinds. */
#define GLUCX_COLL_MAP(X)                                                                          \
    X(ALLREDUCE, allreduce)                                                                        \
    X(ALLGATHER, allgather)                                                                        \
    X(ALLGATHERV, allgatherv)                                                                      \
    X(REDUCE_SCATTER, reduce_scatter)                                                              \
    X(ALLTOALL, alltoall)                                                                          \
    X(ALLTOALLV, alltoallv)                                                                        \
    X(BROADCAST, broadcast)                                                                        \
    X(REDUCE, reduce)                                                                              \
    X(GATHER, gather)                                                                              \
    X(SCATTER, scatter)                                                                            \
    X(BARRIER, barrier)

typedef enum glucx_coll {
#define GLUCX_COLL_ENUM_(name, lname) GLUCX_COLL_##name,
    GLUCX_COLL_MAP(GLUCX_COLL_ENUM_)
#undef GLUCX_COLL_ENUM_
        GLUCX_COLL_COUNT
} glucx_coll_t;

/** Name of a collective ("allreduce", ...); "invalid" when out of range. Thread-safe. */
GLUCX_API const char *glucx_coll_name(glucx_coll_t coll);

/** Pass as sendbuf to take the input from recvbuf (see each collective). */
#define GLUCX_IN_PLACE ((const void *)1)

/**
 * Arguments of one collective. Counts and displacements are in elements of @c dtype.
 *
 * | coll           | sendbuf (input)                  | recvbuf (output)                      |
 * |----------------|----------------------------------|---------------------------------------|
 * | allreduce      | count                            | count (IN_PLACE: input in recvbuf)    |
 * | allgather      | count                            | size*count, rank r's block at r*count |
 * | allgatherv     | counts[rank]                     | counts[r] at displs[r] for each r     |
 * | reduce_scatter | size*count, block r goes to r    | count (IN_PLACE: input in recvbuf,    |
 * |                |                                  | result at its start, as MPI)          |
 * | alltoall       | size*count, block r goes to r    | size*count, block r came from r       |
 * | alltoallv      | send_counts[r] at send_displs[r] | counts[r] at displs[r]                |
 * | broadcast      | unused                           | count on every rank; root's is input  |
 * | reduce         | count                            | count, significant at root only       |
 * | gather         | count                            | size*count at root only               |
 * | scatter        | size*count at root only          | count (no IN_PLACE; the root may point|
 * |                |                                  | recvbuf at its own block of sendbuf)  |
 * | barrier        | unused                           | unused                                |
 *
 * IN_PLACE for allgather(v) and gather means this rank's block is already in recvbuf.
 * Arrays of size entries (counts, displs, send_counts, send_displs) are borrowed for the call.
 */
typedef struct glucx_coll_args {
    glucx_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    const size_t *counts;
    const size_t *displs;
    const size_t *send_counts;
    const size_t *send_displs;
    glucx_dtype_t dtype;
    glucx_op_t op;
    int root;
} glucx_coll_args_t;

/** Which fields of glucx_coll_opts_t are set. */
enum {
    GLUCX_COLL_OPT_ALGORITHM = 1u << 0,
    GLUCX_COLL_OPT_TIMEOUT = 1u << 1,
    GLUCX_COLL_OPT_PRIORITY = 1u << 2,
    GLUCX_COLL_OPT_LABEL = 1u << 3,
    GLUCX_COLL_OPT_CHUNK = 1u << 4,
};

/** Default chunk of a scheduled collective (GLUCX_COLL_OPT_PRIORITY without GLUCX_COLL_OPT_CHUNK).
 */
#define GLUCX_COLL_CHUNK_DEFAULT ((size_t)1 << 20)
/** Sequence numbers that unfinished started collectives may hold on one communicator (each holds
 *  one; a scheduled one one per chunk plus one): beyond, glucx_coll_start() refuses. */
#define GLUCX_COLL_SEQS_OUTSTANDING_MAX 16384u
/** A scheduled collective is cut into at most this many chunks (larger chunks beyond). */
#define GLUCX_COLL_SCHED_CHUNKS_MAX 64

/** Per-call options; pass NULL for all defaults. */
typedef struct glucx_coll_opts {
    uint64_t field_mask;   /**< GLUCX_COLL_OPT_* bits */
    const char *algorithm; /**< algorithm name (see glucx-info), overriding selection; it must
                                be the same on every rank */
    int64_t timeout_ms;    /**< this call's timeout (default: the communicator's) */
    int priority;          /**< glucx_coll_start()/glucx_coll_start_cb(): schedule this
                                collective by priority, higher first (see glucx_coll_start());
                                ignored by glucx_coll() */
    const char *label;     /**< trace label, e.g. "bucket3" (borrowed for the call) */
    size_t chunk_bytes;    /**< with GLUCX_COLL_OPT_PRIORITY: bytes per chunk (> 0; default
                                GLUCX_COLL_CHUNK_DEFAULT); equal on every rank */
} glucx_coll_opts_t;

/**
 * Run a collective and wait for it.
 * Every algorithm gives bitwise-identical results on all ranks. Counts of 0 are allowed.
 * @param comm communicator; @param args arguments (see glucx_coll_args_t); @param opts or NULL.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL buffers with non-zero counts, dtype/op not
 *         supported, root out of range, unknown algorithm, count overflow): found locally
 *         before any traffic, the communicator stays usable, and peers that made a valid call
 *         wait for this rank until their timeout (as in MPI);
 *         GLUCX_ERR_MISMATCH: ranks passed different counts, dtypes or ops (always detected:
 *         lengths are checked exactly and dtype/op travel in every message's tag) or roots
 *         (detected when the roots differ modulo 32, else GLUCX_ERR_TIMEOUT); returned on every
 *         rank, the message names the collective, sizes and peer;
 *         GLUCX_ERR_UNSUPPORTED (a requested algorithm does not apply, e.g. a power-of-two-only
 *         algorithm on 3 ranks; no traffic; or a forked child: see Fork above);
 *         GLUCX_ERR_TIMEOUT; GLUCX_ERR_PEER_FAILED;
 *         GLUCX_ERR_ABORTED. Every error except GLUCX_ERR_INVALID_ARG and GLUCX_ERR_UNSUPPORTED
 *         fails the communicator: later calls return the same status at once. After an
 *         error the contents of recvbuf are unspecified.
 *
 * Buffers may alias as glucx_coll_args_t documents for IN_PLACE (passing the same pointer
 * instead of GLUCX_IN_PLACE is equivalent); any other overlap of input and output is handled by
 * working from a copy of the input. Rooted collectives and alltoallv end with a zero-byte
 * confirmation round (ceil(log2 n) latencies) so that every rank sees a mismatch another found.
 */
GLUCX_API glucx_status_t glucx_coll(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                    const glucx_coll_opts_t *opts);

/**
 * Start a collective without waiting (same arguments and errors as glucx_coll()); it runs on the
 * communicator's collective thread. Buffers and count arrays are borrowed until the request
 * completes.
 *
 * Order. Collectives started without GLUCX_COLL_OPT_PRIORITY run one after the other in the
 * order started. Collectives started with it are scheduled: an allreduce, broadcast or reduce
 * is cut into chunks of opts->chunk_bytes (element-aligned; at most GLUCX_COLL_SCHED_CHUNKS_MAX
 * chunks, larger ones beyond), other kinds are one chunk, and each chunk runs as a collective of
 * its own (its own seq, algorithm chosen for its size). Before each chunk the ranks agree, with a
 * small allreduce, which of the scheduled collectives started on every rank goes next: the highest
 * priority, ties by start order (priority-based preemption at chunk boundaries, as in
 * ByteScheduler, SOSP'19, and P3, MLSys'19). Only what every rank has started counts, so a
 * rank that starts a collective late delays the others but never makes them order differently;
 * each chunk is an ordinary collective of its size, so results are bitwise equal across ranks;
 * a floating-point sum may differ in the last bits from one unscheduled call on the whole
 * vector, where that call picks another algorithm than the chunks do. An input overlapping the
 * output other than exactly in place runs as one chunk. Up to 16 started collectives are
 * considered at a time; a collective started without a priority is a fence (scheduled ones
 * started before it finish first, later ones wait for it). A collective passed over 256 times
 * in a row at the head of the queue runs to its end (starvation guard). Priorities and chunk
 * sizes must be equal on every rank: different priorities fail every rank with
 * GLUCX_ERR_MISMATCH at the next decision, different chunk sizes as different counts do.
 * Completions (requests, callbacks) come in the order the collectives end.
 * Started collectives (scheduled or not) that have not ended may hold at most
 * GLUCX_COLL_SEQS_OUTSTANDING_MAX sequence numbers (a scheduled one holds its chunks + 1):
 * beyond, the start returns GLUCX_ERR_UNSUPPORTED (locally, no traffic; peers that started it
 * wait for this rank until their timeout), since a 16-bit tag could otherwise be shared. Each
 * decision is a trace event `sched_decision` of kind `priority` (trace/EVENTS.md).
 *
 * @param request_p receives the request; wait on it and release it with glucx_request_free().
 * @return as glucx_coll(); also GLUCX_ERR_INVALID_ARG for chunk_bytes == 0 with
 *         GLUCX_COLL_OPT_CHUNK.
 */
GLUCX_API glucx_status_t glucx_coll_start(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                          const glucx_coll_opts_t *opts,
                                          glucx_request_t **request_p);

/** Convenience forms of glucx_coll(); arguments as in glucx_coll_args_t. */
GLUCX_API glucx_status_t glucx_allreduce(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                         size_t count, glucx_dtype_t dtype, glucx_op_t op,
                                         const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_allgather(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                         size_t count, glucx_dtype_t dtype,
                                         const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_allgatherv(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                          const size_t *counts, const size_t *displs,
                                          glucx_dtype_t dtype, const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_reduce_scatter(glucx_comm_t *comm, const void *sendbuf,
                                              void *recvbuf, size_t count, glucx_dtype_t dtype,
                                              glucx_op_t op, const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_alltoall(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                        size_t count, glucx_dtype_t dtype,
                                        const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_alltoallv(glucx_comm_t *comm, const void *sendbuf,
                                         const size_t *send_counts, const size_t *send_displs,
                                         void *recvbuf, const size_t *recv_counts,
                                         const size_t *recv_displs, glucx_dtype_t dtype,
                                         const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_broadcast(glucx_comm_t *comm, void *buf, size_t count,
                                         glucx_dtype_t dtype, int root,
                                         const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_reduce(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, glucx_dtype_t dtype, glucx_op_t op, int root,
                                      const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_gather(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, glucx_dtype_t dtype, int root,
                                      const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_scatter(glucx_comm_t *comm, const void *sendbuf, void *recvbuf,
                                       size_t count, glucx_dtype_t dtype, int root,
                                       const glucx_coll_opts_t *opts);
GLUCX_API glucx_status_t glucx_barrier(glucx_comm_t *comm, const glucx_coll_opts_t *opts);

/**
 * Name of the algorithm glucx would select for @p coll at @p bytes total message bytes on
 * @p comm (after GLUCX_TUNE overrides). @return a static string, or NULL for invalid input.
 */
GLUCX_API const char *glucx_comm_algorithm(glucx_comm_t *comm, glucx_coll_t coll, size_t bytes);

/* ------------------------------------------------------------------------------------------ */
/* Requests                                                                                   */

/**
 * Check a request without blocking (also drives progress).
 * @return GLUCX_INPROGRESS, GLUCX_OK, or the operation's error. Thread-safe.
 */
GLUCX_API glucx_status_t glucx_request_test(glucx_request_t *request);

/**
 * Wait for a request, blocking the thread (spinning briefly, then sleeping on the transport's
 * event descriptor) for at most @p timeout_ms (< 0: the communicator's timeout).
 * @return GLUCX_OK or the operation's error; GLUCX_ERR_TIMEOUT if it did not finish in time
 *         (a timed-out wait fails the communicator, as a timed-out operation does in Gloo: to
 *         poll without that consequence, use glucx_request_test()).
 */
GLUCX_API glucx_status_t glucx_request_wait(glucx_request_t *request, int64_t timeout_ms);

/**
 * Wait until at least one of @p requests[0..n) (point-to-point requests of one communicator)
 * is complete, glucx_comm_wake() is called on that communicator, or @p timeout_ms passes.
 * Several threads may wait at once, on the same or different requests.
 * @param requests  array of @p n requests (borrowed for the call).
 * @param timeout_ms as glucx_request_wait(): < 0 means the communicator's timeout.
 * @param since     a value of glucx_comm_wake_count() read earlier: any wake after that read
 *                  interrupts this wait, even one that came before this call (so a caller that
 *                  checks its own "aborted" flag, then waits, cannot miss a wake in between).
 *                  NULL: only wakes during the call count.
 * @param index_p   receives the lowest index of a complete request when GLUCX_OK is returned
 *                  (its own status is then given by glucx_request_test()).
 * @return GLUCX_OK; GLUCX_INPROGRESS (woken by glucx_comm_wake(), none complete);
 *         GLUCX_ERR_TIMEOUT (none complete in time: this fails the communicator, as a timed-out
 *         glucx_request_wait() does, and the message names the pending peers);
 *         GLUCX_ERR_INVALID_ARG (n == 0, NULL entries, started collectives, or requests of
 *         different communicators).
 */
GLUCX_API glucx_status_t glucx_request_wait_any(glucx_request_t *const *requests, size_t n,
                                                int64_t timeout_ms, const unsigned *since,
                                                size_t *index_p);

/**
 * Wake every thread blocked in glucx_request_wait_any() on @p comm: each returns
 * GLUCX_INPROGRESS unless one of its requests completed. Other waits are not affected (they
 * go back to sleep). Used to interrupt a waiter without cancelling its operations (Gloo's
 * abortWaitRecv). Thread-safe; NULL is accepted.
 */
GLUCX_API void glucx_comm_wake(glucx_comm_t *comm);

/**
 * Number of glucx_comm_wake() calls on @p comm so far (wrapping), to pass to
 * glucx_request_wait_any() as @p since. Thread-safe; 0 for NULL.
 */
GLUCX_API unsigned glucx_comm_wake_count(const glucx_comm_t *comm);

/**
 * Cancel a receive that has not matched yet; it then completes with GLUCX_ERR_ABORTED. A send
 * or a matched receive is not cancellable and completes normally. @return GLUCX_OK (cancel
 * requested or nothing to do) or GLUCX_ERR_INVALID_ARG.
 */
GLUCX_API glucx_status_t glucx_request_cancel(glucx_request_t *request);

/**
 * After completion: the peer rank and the number of bytes transferred. Either output may be NULL.
 * @return GLUCX_OK, or GLUCX_INPROGRESS if not complete.
 */
GLUCX_API glucx_status_t glucx_request_info(glucx_request_t *request, int *peer_p, size_t *bytes_p);

/**
 * Release a request. An incomplete receive is cancelled (and, if it had matched, waited for) so
 * its buffer is never written after this returns. An incomplete send cannot be cancelled (UCX
 * reads the buffer until the peer has it), so this waits for it, up to the communicator's
 * timeout, after which the communicator fails (GLUCX_ERR_TIMEOUT) to release the buffer. A
 * started collective is waited for. NULL is accepted.
 */
GLUCX_API void glucx_request_free(glucx_request_t *request);

/* ------------------------------------------------------------------------------------------ */
/* Statistics                                                                                 */

/** Process-wide counters since the library was loaded (all contexts and communicators). */
typedef struct glucx_stats {
    uint64_t sends;       /**< point-to-point sends posted (glucx_isend) */
    uint64_t send_bytes;  /**< bytes of those sends */
    uint64_t recvs;       /**< point-to-point receives completed successfully */
    uint64_t recv_bytes;  /**< bytes those receives delivered */
    uint64_t collectives; /**< collectives started (glucx_coll / glucx_coll_start) */
    uint64_t comms;       /**< communicators connected */
} glucx_stats_t;

/**
 * Read the process-wide counters into @p stats (NULL is ignored). Counters are updated with
 * relaxed atomics: a snapshot taken while other threads communicate is not a consistent cut.
 * Thread-safe.
 */
GLUCX_API void glucx_stats_get(glucx_stats_t *stats);

/* ------------------------------------------------------------------------------------------ */
/* Completion callbacks                                                                       */

/**
 * Called once when a collective started with glucx_coll_start_cb() has finished.
 * @param arg    the pointer passed to glucx_coll_start_cb().
 * @param status GLUCX_OK, or the collective's error (as glucx_coll() would return it).
 * @param error  "" on success, else the error text naming the collective, sizes and peer (what
 *               glucx_last_error() gives after a failed glucx_coll()); borrowed for the call.
 *
 * It runs on the communicator's collective thread right after the collective (or, for a
 * collective that was still queued when glucx_comm_destroy() was called, on the destroying
 * thread, with the destroy's status). Once it is called glucx no longer touches the buffers.
 * It may start further collectives on the same communicator (they queue behind the ones
 * already started) and may use any other communicator, but must not destroy this
 * communicator, and must not wait for a collective started after this one on it (that one
 * cannot run until the callback has returned). It should be short: the next queued
 * collective waits for it.
 */
typedef void (*glucx_coll_callback_t)(void *arg, glucx_status_t status, const char *error);

/**
 * Start a collective as glucx_coll_start() does, but report its end through @p callback
 * instead of a request: a host that completes its own future objects (PyTorch's c10 Future)
 * needs no thread of its own to wait for the collective.
 * @param callback required; called exactly once if, and only if, this returns GLUCX_OK.
 * @param arg      passed to @p callback (owned by the caller).
 * @return GLUCX_OK (queued); the errors of glucx_coll() found before any traffic
 *         (GLUCX_ERR_INVALID_ARG, the communicator's failure status if it has failed);
 *         GLUCX_ERR_INVALID_ARG for a NULL callback; GLUCX_ERR_ABORTED if the communicator is
 *         being destroyed; GLUCX_ERR_NO_MEMORY. Thread-safe (collectives are ordered by the
 *         callers, as for glucx_coll_start()).
 */
GLUCX_API glucx_status_t glucx_coll_start_cb(glucx_comm_t *comm, const glucx_coll_args_t *args,
                                             const glucx_coll_opts_t *opts,
                                             glucx_coll_callback_t callback, void *arg);

#ifdef __cplusplus
}
#endif
#endif
