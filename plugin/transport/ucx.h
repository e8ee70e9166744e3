/**
 * UCX implementation of the internal transport interface (plugin/transport/tx.h), over UCP's
 * tag-matching API, and its active messages for windows (puts; ucx_win.c). This header names no
 * UCX type: everything UCX stays in plugin/transport/.
 *
 * Lifecycle: glucx_tx_ucx_context_create (one per glucx context) -> glucx_tx_ucx_create (this
 * rank's worker; publish the address it returns) -> glucx_tx_ucx_connect (endpoints to every peer
 * from their published addresses, plus a handshake) -> tx->ops->... -> tx->ops->destroy ->
 * glucx_tx_ucx_context_destroy. A context outlives its transports.
 *
 * Endpoints. Peers on this machine ("local": same /proc/sys/kernel/random/boot_id, same PID
 * namespace (inode of /proc/self/ns/pid) and same host name, and UCX_TLS lets shared memory in)
 * get endpoints with UCP_ERR_HANDLING_MODE_NONE, so UCX uses sysv/posix for eager messages and
 * cma (one copy, process_vm_readv) for rendezvous. Every other peer, and every peer when UCX_TLS
 * leaves shared memory out (e.g. UCX_TLS=tcp), keeps UCP_ERR_HANDLING_MODE_PEER and UCX's own
 * failure detection. The address blob glucx_tx_ucx_create returns is this process's identity
 * (pid, boot id, PID namespace, host name: glucx_ucx_ident_t in ucx_int.h) followed by the UCX
 * worker address; connect reads the peers' identities from their blobs.
 *
 * Eager sizes. Plain (not synchronous) tag sends to a local peer carry
 * UCP_OP_ATTR_FLAG_FAST_CMPL, so UCX sends them eager (copied through the shared-memory FIFO,
 * two copies per byte, complete once copied out) up to UCX_RNDV_SEND_NBR_THRESH (default
 * 256 KiB) and rendezvous (cma, one copy) from there on; without the flag UCX 1.13 switches to
 * rendezvous at the mm segment size (8256 bytes). A rendezvous send completes only after the
 * receiver has seen the announcement, read the data and answered, which costs a round trip and
 * a process_vm_readv per message and, when a core is shared, a wake-up of each rank in turn;
 * docs/perf.md ("Allgather and alltoall") has the measurements. The user's own UCX settings
 * still decide: UCX_RNDV_SEND_NBR_THRESH moves the switch, and UCX_RNDV_THRESH, when set,
 * applies to these sends too. Synchronous sends, sends to other peers and window puts (active
 * messages) are unchanged. To peers on other hosts, UCX's TCP transport sends eagerly up to its
 * segment size, which glucx raises to 256 KiB, and collective messages of at least
 * GLUCX_NET_SEG go as segments of that size (glucx_tx_ucx_context_set_net_seg).
 *
 * Local peer failure detection is ours: connect opens a pidfd (pidfd_open, Linux >= 5.3) per
 * local peer, the sleeping waiter polls the pidfds together with the worker's event descriptor,
 * and every wake-up (and a progress() call at least every 20 ms) checks them; without pidfd_open,
 * kill(pid, 0) == -1 with ESRCH, or a zombie state in /proc/<pid>/stat, is checked instead at
 * every wake-up (at most tx->tick_ns apart). A peer found exited has its already-queued messages
 * progressed, then it is suspected like an endpoint error ("rank N (pid P) exited",
 * GLUCX_ERR_PEER_FAILED): grace for a notice, then notices, endpoint close, every request
 * completed before fail() returns. The MODE_NONE endpoints also get the error callback: UCX 1.13
 * does call it (e.g. "Connection reset by remote peer" when a cma read hits a dead peer).
 *
 * Facts this relies on (Debian UCX 1.13.1, checked on this machine):
 * - Endpoints created with peer error handling drop the shared-memory transports unless the mm
 *   transports expose error handling, and cma (no peer error handling) is never selected, so
 *   rendezvous then runs over the mm active-message pipeline (two copies). In 1.13.1,
 *   ucp_config_modify() applies the base-table name "MM_ERROR_HANDLING" to both posix and sysv;
 *   "POSIX_ERROR_HANDLING" and "SYSV_ERROR_HANDLING" are accepted by ucp_config_modify but never
 *   applied ("invalid configurations" warning). The environment variables
 *   UCX_POSIX_ERROR_HANDLING, UCX_SYSV_ERROR_HANDLING and UCX_MM_ERROR_HANDLING all work.
 *   glucx still sets MM_ERROR_HANDLING (for a same-machine peer in another PID namespace, which
 *   keeps peer error handling); it does not keep cma from MODE_NONE endpoints.
 * - Without error handling, a local peer is described as "sysv/memory, cma/memory".
 * - A SIGKILLed MODE_NONE local peer (2 ranks, keepalive 500 ms; measured by the tests in
 *   tests/plugin/transport/test_ucx_failure.c): UCX itself notices nothing while idle, nor while
 *   this rank sends eager messages or waits for the acknowledgement of a rendezvous send whose
 *   buffer the dead peer was reading (cma); the pidfd finds it at once (failure after the 100 ms
 *   grace, ~0.1-0.2 s). While this rank is reading the dead peer's memory (cma get),
 *   process_vm_readv fails and UCX calls the endpoint's error callback ("Connection reset by
 *   remote peer", ~0.25 s after the kill). Eager messages it sent before dying are delivered.
 *   No abort, hang or UCX error message in any of these cases. Over tcp (peer error handling) a
 *   closed socket is seen at once ("Endpoint timeout").
 * - ucp_ep_close_nbx with UCP_EP_CLOSE_FLAG_FORCE on a MODE_NONE endpoint: UCX 1.13 does not
 *   track its requests, so a rendezvous send waiting for the peer's acknowledgement is never
 *   completed by the close, and a cma get under way stays queued on the destroyed cma endpoint
 *   and makes ucp_worker_destroy abort (assertion in uct_cma_ep_t_delete). Hence teardown closes
 *   healthy MODE_NONE endpoints with a flush (the get finishes, or fails if the peer is gone,
 *   while fail() runs) and force-closes endpoints UCX reported failed, those to a local peer that
 *   exited and those with a synchronous send outstanding (unless a matched receive from that
 *   peer is outstanding): a flush never completes towards an exited peer whose shared-memory
 *   FIFO is full (the sends queued behind it, and the flush after them, wait for good), while a
 *   force close completes the queued sends at once (UCS_ERR_CANCELED). Requests UCX still holds
 *   100 ms after the close are completed by glucx and their UCX requests marked detached
 *   (ucx_int.h, glucx_ucx_req_area_t): the worker is not progressed after the teardown, but
 *   ucp_worker_destroy still completes the requests queued on an endpoint's lanes
 *   (ucp_worker_destroy_eps purges them with UCS_ERR_CANCELED) and their callbacks then only
 *   free them; those it never completes it reports as "not returned to mpool" (a warning only).
 *   Close and flush requests that did not finish in time are released all the same
 *   (ucp_request_free): ucp_worker_destroy completes a close still flushing and aborts unless its
 *   owner released it (ucp_ep.c:382, "req->flags & UCP_REQUEST_FLAG_RELEASED").
 *   UCX_PROTO_INDIRECT_ID=on (which makes UCX track them) is worse: a force close still leaves
 *   them, and ucp_worker_destroy aborts (assertion on the endpoint's proto_reqs list).
 * - Rendezvous over cma uses the get scheme (the receiver reads the sender's memory) under
 *   UCX_RNDV_SCHEME=auto, so no peer ever writes into this rank's buffers; a receive that this
 *   rank is still reading when it fails completes with the failure, and nothing is written after
 *   fail() returns. UCX_RNDV_SCHEME=put_zcopy would let a live peer write into a receive buffer
 *   after this rank failed; do not set it.
 * - ucp_tag_recv_nbx's immediate-completion path was seen to leave recv_info unfilled, so
 *   receives are posted with UCP_OP_ATTR_FLAG_NO_IMM_CMPL and always complete in the callback.
 *
 * Behaviour of the ops beyond tx.h:
 * - Receives from one source or from a set covering every rank are single UCX receives; a set
 *   that leaves some rank out is matched by probing each of its sources from the progress path
 *   (ucp_tag_probe_nb with remove=1, then ucp_tag_msg_recv_nbx), in posting order, rotating the
 *   first source probed. Such a receive is FIFO with respect to the other set receives; a
 *   single-source receive posted later may still match a message first.
 * - On GLUCX_ERR_TRUNCATED, req->bytes is the sender's full length (> posted) and req->peer and
 *   req->tag are the sender's; nothing past the posted length is written.
 * - A post after the failure returns the failure status and completes the request with it.
 * - wait() returns GLUCX_OK when every request is done, except that after a failure it returns
 *   the failure status if any of them did not succeed.
 * - Failure: every rank that fails sends one notice to each peer before force-closing its
 *   endpoints: its own reason, or a received notice forwarded in the origin's words, so a peer
 *   reads the notice before it sees this rank's connection close (each rank fails once: no
 *   loops). Every other rank ends with "rank <origin> reported: <text>" and its status. A
 *   peer failure seen locally (endpoint error, a request ended with an error) waits 100 ms for a
 *   notice that explains it before it becomes the failure ("rank N failed: <UCX status>");
 *   requests UCX ended with an error meanwhile complete with the final status.
 * - destroy() of a healthy transport first sends each peer a leave (GLUCX_UCX_CTRL_LEAVE), then
 *   flushes its endpoints (<= 1 s) so sends already complete locally (and the leaves) reach their
 *   peers, then closes them without notices. A peer that got the leave treats that endpoint's
 *   close and that process's exit as expected, and fails only when it waits (an unmatched
 *   single-source receive) or sends to the departed rank (docs/architecture.md, Orderly leave).
 * - probe() looks for an unexpected message (ucp_tag_probe_nb, not removed), for the collective
 *   layer's check for a peer running another collective.
 *
 * Compact addresses (ucx_boot.c). A host that can carry only a few bytes per rank (Gloo's
 * ContextFactory: 192) gets, instead of the address blob, a listener's socket address: between
 * create and connect, glucx_tx_ucx_listen opens a UCP listener on the worker that sends the
 * caller's record to every peer that connects (UCX client-server endpoint, peer error handling),
 * and glucx_tx_ucx_fetch connects to the peers' listeners and receives their records, before
 * glucx_tx_ucx_connect. glucx_tx_ucx_unlisten (or a failure, or destroy) closes those endpoints
 * and the listener (see there for when). UCX 1.13 needs a network transport for a client-server
 * endpoint, also between processes of one host: with UCX_TLS=shm,self its wireup fails
 * ("Destination is unreachable").
 */
#ifndef GLUCX_TRANSPORT_UCX_H
#define GLUCX_TRANSPORT_UCX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/tx.h"

/** One UCP context per glucx context (opaque). */
typedef struct glucx_ucx_context glucx_ucx_context_t;

/**
 * Create a UCP context with the tag and wakeup features.
 *
 * Configuration: the UCX_* environment as usual, then
 * - UCX_NET_DEVICES := @p net_devices when not NULL;
 * - MM_ERROR_HANDLING := y (shared memory keeps working with peer error handling, for a
 *   same-machine peer in another PID namespace) when UCX_TLS lets posix or sysv in, unless the
 *   user set UCX_MM_ERROR_HANDLING, UCX_POSIX_ERROR_HANDLING or UCX_SYSV_ERROR_HANDLING;
 * - RCACHE_ENABLE := n (no registration cache, whose memory-event handler blocked ucp_init()
 *   in a child forked while another thread was inside mmap: docs/architecture.md, "Fork"),
 *   unless the user set UCX_RCACHE_ENABLE in a process that is not a fork;
 * - TCP's TX_SEG_SIZE and RX_SEG_SIZE := 256K (messages up to that go eagerly; larger
 *   collective messages between hosts as segments of it, GLUCX_NET_SEG) when UCX_TLS lets tcp
 *   in, unless the user set UCX_TCP_TX_SEG_SIZE or UCX_TCP_RX_SEG_SIZE;
 * - ZCOPY_THRESH := inf (eager sends copied: UCX 1.13's TCP zero-copy sends made survivors of a
 *   peer's death on another host abort in UCX) when UCX_TLS lets tcp in, unless the user set
 *   UCX_ZCOPY_THRESH;
 * - UCX_KEEPALIVE_INTERVAL := @p keepalive_ms when > 0 (UCX finds dead peers of MODE_PEER
 *   endpoints by keepalive, only while someone progresses; the wait loop wakes up for it, and
 *   at that interval also checks local peers without a pidfd).
 *
 * @param net_devices  value for UCX_NET_DEVICES (e.g. "lo"), or NULL to keep UCX's default.
 * @param keepalive_ms keepalive interval in milliseconds; <= 0 keeps UCX's (20 s by default).
 * @param uctx_p       [out] the new context, owned by the caller (glucx_tx_ucx_context_destroy).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (uctx_p NULL); GLUCX_ERR_NO_MEMORY;
 *         GLUCX_ERR_TRANSPORT (UCX refused the configuration or failed to initialise).
 * Thread-safe (no shared state).
 */
glucx_status_t glucx_tx_ucx_context_create(const char *net_devices, int64_t keepalive_ms,
                                           glucx_ucx_context_t **uctx_p);

/**
 * Set how long waits poll before they sleep (@p spin_ns >= 0; default GLUCX_UCX_SPIN_NS) for
 * transports created afterwards. Whether a poll that finds nothing to do also yields the core is
 * the yield policy (glucx_tx_ucx_context_set_yield). Not thread-safe with glucx_tx_ucx_create().
 */
void glucx_tx_ucx_context_set_spin(glucx_ucx_context_t *uctx, int64_t spin_ns);

/**
 * Whether a waiting thread calls sched_yield() between polls that found nothing (GLUCX_YIELD).
 *
 * Why it matters. Yielding hands the core to another runnable thread at once: right when that
 * thread is one the wait depends on (another rank of the job on the same core, a framework
 * thread handing work over), and costly when it is a CPU-bound thread of someone else: the
 * kernel's fair scheduler then runs that thread for a whole time slice (0.7-3 ms) and the
 * yielder, still runnable, cannot preempt it when its message arrives (a sleeping thread that
 * is woken can). Measured on 2 cores next to `stress-ng --cpu 2`: yielding made a 1 KiB
 * allreduce 0.6-1.4 ms per call, polling without yielding 2-7 us (docs/perf.md, issue 15).
 * Open MPI has the same switch (`mpi_yield_when_idle`), turned on when a host has more ranks
 * than cores.
 */
typedef enum glucx_ucx_yield {
    /** ALWAYS when this host has more of the job's ranks than the process may use CPUs, else
     * CHEAP. The default. */
    GLUCX_UCX_YIELD_AUTO = 0,
    GLUCX_UCX_YIELD_ALWAYS, /**< yield after every empty poll past the first 2 us */
    GLUCX_UCX_YIELD_NEVER,  /**< poll without yielding, then sleep */
    /** Yield while yielding is cheap: a yield that kept the thread off its core longer than
     * GLUCX_UCX_YIELD_SLOW_NS means a CPU-bound thread took the core, and the thread then polls
     * without yielding for GLUCX_UCX_YIELD_OFF_NS (then tries again). Only a resolved policy. */
    GLUCX_UCX_YIELD_CHEAP,
} glucx_ucx_yield_t;

/** A yield longer than this took a time slice (the kernel's smallest is 0.7 ms): not cheap. */
#define GLUCX_UCX_YIELD_SLOW_NS 200000
/** How long a thread whose yield was slow polls without yielding before it tries again. */
#define GLUCX_UCX_YIELD_OFF_NS 100000000

/** Set the yield policy (AUTO, ALWAYS or NEVER) for transports created afterwards. Not
 * thread-safe with glucx_tx_ucx_create(); other values are ignored. */
void glucx_tx_ucx_context_set_yield(glucx_ucx_context_t *uctx, glucx_ucx_yield_t mode);

/**
 * The policy a transport follows: @p mode (AUTO, ALWAYS, NEVER) resolved for @p host_ranks
 * ranks of the job on this host (this one included) and @p cpus CPUs the process may run on
 * (<= 0: unknown, taken as enough). Returns ALWAYS, NEVER or CHEAP. Pure; thread-safe.
 */
glucx_ucx_yield_t glucx_ucx_yield_resolve(glucx_ucx_yield_t mode, int host_ranks, int cpus);

/** What a thread learned about its yields and spins (one per thread; zero-initialised). */
typedef struct glucx_ucx_yield_state {
    int64_t off_until_ns; /**< CHEAP: no yields before this time (glucx_now_ns clock) */
    int64_t spin_ns;      /**< spin of a wait that may not yield; 0: the full GLUCX_SPIN_US */
    int64_t probe_at_ns;  /**< the next wait from this time on spins in full once (a probe) */
} glucx_ucx_yield_state_t;

/** Shortest spin of a wait that may not yield (glucx_ucx_spin_budget). */
#define GLUCX_UCX_SPIN_MIN_NS 5000
/** How often a wait that may not yield spins in full once, to find out whether it pays. */
#define GLUCX_UCX_SPIN_PROBE_NS 100000000

/**
 * The spin of a wait that may not yield (CHEAP with yields off: a CPU-bound thread competes for
 * the core). Polling without yielding holds the core, so a peer rank queued on it cannot run
 * until the spin ends; sleeping early also keeps the thread's claim on the core, so its wake-up
 * preempts the CPU-bound thread. The spin therefore adapts, as adaptive mutexes do: halved
 * (down to GLUCX_UCX_SPIN_MIN_NS) after each wait that ended in a sleep, widened to twice the
 * time a wait took when it completed while spinning (up to @p spin_max_ns), and once every
 * GLUCX_UCX_SPIN_PROBE_NS a wait spins in full to see whether longer spins now pay.
 * @return the spin in nanoseconds for a wait starting at @p now_ns; *@p probe_p = 1 when this
 * wait is the probe. Pure (reads @p state only); thread-safe per state.
 */
int64_t glucx_ucx_spin_budget(const glucx_ucx_yield_state_t *state, int64_t spin_max_ns,
                              int64_t now_ns, int *probe_p);

/**
 * Record how a wait that may not yield ended: @p caught_ns >= 0: it completed while spinning,
 * that long after it started; < 0: it slept. @p probe: it was the probe (the next probe is then
 * due GLUCX_UCX_SPIN_PROBE_NS after @p now_ns).
 */
void glucx_ucx_spin_learn(glucx_ucx_yield_state_t *state, int64_t spin_max_ns, int64_t now_ns,
                          int64_t caught_ns, int probe);

/** Whether a wait under resolved policy @p policy may yield at @p now_ns. Pure. */
int glucx_ucx_yield_allowed(glucx_ucx_yield_t policy, const glucx_ucx_yield_state_t *state,
                            int64_t now_ns);

/**
 * Record one yield that started at @p before_ns and returned at @p after_ns. Under CHEAP a slow
 * one (longer than GLUCX_UCX_YIELD_SLOW_NS) stops yields until @p after_ns +
 * GLUCX_UCX_YIELD_OFF_NS. @return 1 when this yield turned yields off, else 0.
 */
int glucx_ucx_yield_observe(glucx_ucx_yield_t policy, glucx_ucx_yield_state_t *state,
                            int64_t before_ns, int64_t after_ns);

/** The resolved yield policy of a connected UCX transport @p tx (AUTO before it connected). */
glucx_ucx_yield_t glucx_tx_ucx_yield(glucx_tx_t *tx);

/** Segment size of glucx_tx_ucx_context_set_net_seg's default: the TCP segment size glucx
 *  gives UCX (GLUCX_UCX_TCP_SEG in ucx.c), so every segment goes eagerly. */
#define GLUCX_UCX_NET_SEG_DEFAULT ((size_t)256 << 10)
/** The smallest segment glucx_tx_ucx_context_set_net_seg takes (but 0). */
#define GLUCX_UCX_NET_SEG_MIN ((size_t)4096)

/**
 * Cut exact-length messages (GLUCX_TX_TAG_EXACT: the collectives') of at least @p seg_bytes to
 * and from ranks on other hosts into segments of @p seg_bytes, each its own UCX message, the last
 * one shorter (0 bytes when the length is a multiple). Why: UCX 1.13's TCP transport sends a
 * message larger than its segment by rendezvous, and between two hosts a rendezvous transfer
 * each way at once runs at half the link (the directions take turns; docs/perf.md, "Two hosts
 * sending to each other"); segments of at most the TCP segment size all go eagerly, both ways
 * at once. Both sides must cut alike: a transport uses segments towards a peer only when the
 * peer's context has the same setting (exchanged with the address at connect).
 *
 * A message is cut into at most GLUCX_UCX_SEG_COUNT_MAX (1024) segments: one longer than 1023
 * segments gets segments of bytes / 1023 + 1 bytes (beyond about 256 MiB with the default), which
 * bounds the requests one message holds and the work of cancelling its receives at a failure.
 *
 * Default: GLUCX_UCX_NET_SEG_DEFAULT when glucx set UCX's TCP segment size (UCX_TLS allows tcp
 * and the user set neither UCX_TCP_TX_SEG_SIZE nor UCX_TCP_RX_SEG_SIZE), else 0. @p seg_bytes
 * 0: whole messages, else GLUCX_UCX_NET_SEG_MIN (4 KiB) to 1 GiB. @p local_too: also to ranks on
 * this host (for tests and measurements; shared memory needs no segments). Applies to
 * transports created afterwards; not thread-safe with glucx_tx_ucx_create().
 * @return GLUCX_OK, or GLUCX_ERR_INVALID_ARG (NULL context, seg_bytes out of range).
 */
glucx_status_t glucx_tx_ucx_context_set_net_seg(glucx_ucx_context_t *uctx, size_t seg_bytes,
                                                int local_too);

/** Default of glucx_tx_ucx_context_set_hold (GLUCX_WINDOW_HOLD). */
#define GLUCX_UCX_HOLD_DEFAULT ((size_t)256 << 20)

/**
 * Set how many bytes of puts that arrived before their window a transport of this context holds
 * (eager payload plus a fixed 256 bytes per message) before it fails with GLUCX_ERR_NO_MEMORY.
 * Not thread-safe with glucx_tx_ucx_create().
 */
void glucx_tx_ucx_context_set_hold(glucx_ucx_context_t *uctx, size_t hold_bytes);

/** Destroy a context whose transports are all destroyed. NULL is a no-op. */
void glucx_tx_ucx_context_destroy(glucx_ucx_context_t *uctx);

/**
 * Create this rank's transport: a UCP worker (serialized thread mode behind the transport's own
 * lock, so any number of application threads may call the ops concurrently) and a receive for
 * failure notices that stays posted for the transport's lifetime.
 *
 * @param uctx       context (borrowed; must outlive the transport).
 * @param rank       this rank, 0 <= rank < size.
 * @param size       number of ranks, 1 <= size <= 2^GLUCX_TX_TAG_SRC_BITS.
 * @param tx_p       [out] the transport; destroy with (*tx_p)->ops->destroy.
 * @param addr_p     [out] this rank's address blob (its identity, then the UCX worker address;
 *                   opaque to callers), owned by the transport, valid until destroy.
 * @param addr_len_p [out] length of *addr_p in bytes.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG; GLUCX_ERR_NO_MEMORY; GLUCX_ERR_TRANSPORT.
 * Thread-safe with respect to other transports.
 */
glucx_status_t glucx_tx_ucx_create(glucx_ucx_context_t *uctx, int rank, int size, glucx_tx_t **tx_p,
                                   const void **addr_p, size_t *addr_len_p);

/**
 * Create an endpoint to every rank from its address blob (no UCX error handling and a pidfd for
 * local peers, peer error handling for the others; see above), then handshake: every
 * rank sends a small hello (rank, size) to every other rank and waits for theirs, then flushes its
 * endpoints, so every pair has exchanged a message and wireup is complete. Logs at info level the
 * UCX transports chosen for each peer and caches them for describe_peer.
 *
 * @param tx          transport from glucx_tx_ucx_create, not yet connected.
 * @param addrs       addrs[r] = address blob of rank r from glucx_tx_ucx_create (addrs[rank] is
 *                    our own), borrowed for the call.
 * @param lens        lens[r] = length of addrs[r] in bytes.
 * @param deadline_ns CLOCK_MONOTONIC deadline for the whole handshake (INT64_MAX: none).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (also: a blob that is not a glucx UCX address);
 *         GLUCX_ERR_TIMEOUT (the message names the ranks whose
 *         hello is missing; the transport is failed); GLUCX_ERR_MISMATCH (a peer reports another
 *         size or rank); GLUCX_ERR_PEER_FAILED or another failure status when the transport failed
 *         during the handshake; GLUCX_ERR_TRANSPORT (endpoint creation failed).
 * Call once, before any other op, from one thread.
 */
glucx_status_t glucx_tx_ucx_connect(glucx_tx_t *tx, const void *const *addrs, const size_t *lens,
                                    int64_t deadline_ns);

/**
 * Serve @p record to every peer that connects: open a UCP listener on the worker at @p host
 * (port chosen by the system). Its connection requests are accepted, and the record sent, by
 * whichever thread progresses the worker (any wait, fetch, connect's handshake).
 *
 * @param tx     transport from glucx_tx_ucx_create, not connected, not listening yet.
 * @param host   numeric IPv4 or IPv6 address of this host (IPv6 link-local with "%iface"),
 *               borrowed for the call.
 * @param record the bytes to serve (copied), @p bytes > 0 long.
 * @param addr_p [out] the listener's socket address (@p host, the port UCX bound).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL argument, empty record, @p host not numeric,
 *         already listening, connected or failed); GLUCX_ERR_UNSUPPORTED (UCX_TLS lets no network
 *         transport in: a client-server connection could not be wired up); GLUCX_ERR_TRANSPORT
 *         (UCX cannot listen there: the message names the address and UCX's status);
 *         GLUCX_ERR_NO_MEMORY. Call from one thread, before connect.
 */
glucx_status_t glucx_tx_ucx_listen(glucx_tx_t *tx, const char *host, const void *record,
                                   size_t bytes, struct sockaddr_storage *addr_p);

/**
 * Fetch peers' records from their listeners (glucx_tx_ucx_listen on each): connect to every
 * from[r] whose family is not AF_UNSPEC and receive the record that listener serves; a record
 * is assigned to the rank whose tag it carries (the serving rank).
 *
 * @param tx          transport, not connected (it may be listening itself, and serves its own
 *                    record meanwhile).
 * @param from        [size] listeners; from[r].ss_family == AF_UNSPEC: rank r not fetched (this
 *                    rank's own entry must be AF_UNSPEC). Borrowed for the call.
 * @param bytes       [size] the length each fetched rank announced for its record.
 * @param records_p   [size, out] records_p[r] = rank r's record (malloc'd, bytes[r] long, owned
 *                    by the caller) for the fetched ranks, NULL for the others; all NULL on
 *                    failure.
 * @param deadline_ns CLOCK_MONOTONIC deadline.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG; GLUCX_ERR_UNSUPPORTED (no network transport, see
 *         above); GLUCX_ERR_PEER_FAILED (a listener cannot be reached: names the rank, its socket
 *         address and UCX's status); GLUCX_ERR_MISMATCH (a record from a rank not fetched, one
 *         arriving twice, or of another length than announced: some address names another
 *         rank's listener); GLUCX_ERR_TIMEOUT (names the ranks and listeners missing);
 *         GLUCX_ERR_NO_MEMORY. After a failure once receives were posted, the transport is
 *         failed (only destroy remains). Call from one thread.
 */
glucx_status_t glucx_tx_ucx_fetch(glucx_tx_t *tx, const struct sockaddr_storage *from,
                                  const size_t *bytes, void **records_p, int64_t deadline_ns);

/**
 * End the rendezvous: close every client-server endpoint (forcibly; bounded wait for their
 * requests) and stop serving. Call once connect returned (by then every peer that fetched this
 * rank's record has it: its hello followed its fetch). The listener itself is destroyed once
 * every peer has connected to it (size - 1 requests); until then (a failure before every peer
 * fetched) it rejects them, and destroy waits up to GLUCX_UCX_LISTEN_DRAIN_NS for them first:
 * UCX 1.13.1 crashes when a connection request reaches a destroyed listener. NULL or nothing
 * open: no-op. Failure and destroy end it too. Not concurrently with fetch.
 */
void glucx_tx_ucx_unlisten(glucx_tx_t *tx);

#endif
