/**
 * An in-process transport (transport/tx.h) for unit tests: a "world" of N ranks that run as
 * threads of one process and exchange messages through shared queues.
 *
 * Semantics follow tx.h exactly:
 * - the transport writes the source rank into bits 48-61 of every wire tag;
 * - a receive matches the first queued message (in arrival order) whose source is in its peer
 *   set and whose tag agrees outside ignore_mask and the source bits; a send matches the first
 *   posted receive (in post order) that accepts it: FIFO per (source, tag);
 * - sends copy the payload at post time and complete at once (eager);
 * - a message longer than the posted receive completes it with GLUCX_ERR_TRUNCATED, writing at
 *   most the posted bytes;
 * - cancel of an unmatched receive completes it with GLUCX_ERR_ABORTED;
 * - wait() sleeps on a condition variable until done, failure or the deadline;
 *   GLUCX_ERR_TIMEOUT leaves the requests posted;
 * - fail(): the first failure wins; it completes every outstanding request of the rank with the
 *   status and delivers a notice to every other live rank, whose transport then fails with the
 *   same status and the text "rank R reported: <text>".
 *
 * Thread-safety: every function may be called from any thread (one mutex per world).
 */
#ifndef GLUCX_TEST_FAKE_TX_H
#define GLUCX_TEST_FAKE_TX_H

#include <stdint.h>

#include "transport/tx.h"

typedef struct glucx_fake_world glucx_fake_world_t;

/**
 * Create a world of @p size ranks (1 <= size <= 16384), each with its own transport.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (bad size or NULL w_p); GLUCX_ERR_NO_MEMORY.
 */
glucx_status_t glucx_fake_world_create(int size, glucx_fake_world_t **w_p);

/** Destroy the world and every rank's transport. No thread may still use it. NULL accepted. */
void glucx_fake_world_destroy(glucx_fake_world_t *w);

/** The transport of @p rank (borrowed: owned by the world; do not call its destroy()). */
glucx_tx_t *glucx_fake_tx(glucx_fake_world_t *w, int rank);

/**
 * Simulate a crash of @p rank: its transport stops (its outstanding requests complete with
 * GLUCX_ERR_ABORTED, new posts fail, messages to it are dropped) and every other live rank
 * detects it at once: their transports fail with GLUCX_ERR_PEER_FAILED and the text
 * "rank N failed" (unless they had failed already), completing their outstanding requests.
 */
void glucx_fake_kill(glucx_fake_world_t *w, int rank);

/** Rank function of glucx_fake_run(): return 0 on success. */
typedef int (*glucx_fake_rank_fn_t)(glucx_fake_world_t *w, int rank, void *arg);

/**
 * Run fn(w, rank, arg) on one thread per rank and join them all.
 * @return 0 when every call returned 0; otherwise the first non-zero value in rank order
 *         (-1 if a thread could not be created).
 */
int glucx_fake_run(glucx_fake_world_t *w, glucx_fake_rank_fn_t fn, void *arg);

/**
 * Messages and bytes sent by @p rank to each peer since the world was created (or the last
 * glucx_fake_stats_reset()); self-sends included; the core's confirmation round after rooted
 * collectives (steps >= GLUCX_COLL_STEP_CONFIRM) left out. Either output may be NULL.
 * @param msgs_to  [size] receives the message counts.
 * @param bytes_to [size] receives the byte counts.
 */
void glucx_fake_stats(glucx_fake_world_t *w, int rank, uint64_t *msgs_to, uint64_t *bytes_to);

/** Zero every rank's statistics. */
void glucx_fake_stats_reset(glucx_fake_world_t *w);

/**
 * Number of messages queued at @p rank that no receive has matched yet (for tests that check an
 * algorithm leaves nothing behind).
 */
size_t glucx_fake_unexpected(glucx_fake_world_t *w, int rank);

#endif
