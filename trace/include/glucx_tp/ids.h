/**
 * @file glucx_tp/ids.h
 * @brief Integer codes of the glucx trace events that have no public glucx enum: algorithms,
 *        decision kinds and wait sites. Plain C, no LTTng: included by the provider header
 *        (which turns each list into an LTTng enumeration) and by plugin/util/tracepoint.h.
 *
 * The values are part of the trace format (trace/EVENTS.md): never renumber, only append.
 * Collectives, dtypes, ops and statuses use the public enums (GLUCX_COLL_MAP, GLUCX_DTYPE_MAP,
 * GLUCX_OP_MAP, GLUCX_STATUS_MAP) directly.
 */
#ifndef GLUCX_TP_IDS_H
#define GLUCX_TP_IDS_H

#include <stdint.h>

/**
 * Algorithms, by the name their rows carry in the collective tables (plugin/coll/<kind>/).
 * One id per name across collectives ("ring" is the same id for allreduce and allgather): the
 * collective field of the event says which ring. X(NAME, name, value).
 */
#define GLUCX_TP_ALG_MAP(X)                                                                        \
    X(RING, ring, 0)                                                                               \
    X(RECURSIVE_DOUBLING, recursive_doubling, 1)                                                   \
    X(RABENSEIFNER, rabenseifner, 2)                                                               \
    X(BRUCK, bruck, 3)                                                                             \
    X(PAIRWISE, pairwise, 4)                                                                       \
    X(LINEAR, linear, 5)                                                                           \
    X(DISSEMINATION, dissemination, 6)                                                             \
    X(BINOMIAL, binomial, 7)                                                                       \
    X(SCATTER_ALLGATHER, scatter_allgather, 8)                                                     \
    X(REDUCE_SCATTER_GATHER, reduce_scatter_gather, 9)                                             \
    X(HALVING, halving, 10)                                                                        \
    X(HIERARCHICAL, hierarchical, 11)                                                              \
    X(TORUS, torus, 12)                                                                            \
    X(TORUS_ROTATED, torus_rotated, 13)

/** Algorithm id of an event that has none (unknown name, no algorithm chosen yet). */
#define GLUCX_TP_ALG_NONE (-1)

enum {
#define GLUCX_TP_ALG_ENUM_(name, lname, value) GLUCX_TP_ALG_##name = (value),
    GLUCX_TP_ALG_MAP(GLUCX_TP_ALG_ENUM_)
#undef GLUCX_TP_ALG_ENUM_
};

/**
 * What a sched_decision event decides. X(NAME, name, value).
 * - ALGORITHM: the algorithm of one collective (selection map, GLUCX_TUNE or the per-call
 *   override); options are algorithm ids.
 * - FALLBACK: the algorithm chosen before answered "unsupported"; the next one by predicted
 *   cost was taken; options are algorithm ids.
 * - ORDER: which gradient partition a training scheduler issues next (glucx.torch's
 *   ScheduledDataParallel, through glucx_trace_sched_decision()); options are partition
 *   indices, costs the predicted exposed communication of the next forward with that option.
 * - PARTITION: how a training scheduler partitions the gradients (ScheduledDataParallel's
 *   partition_bytes="auto"); options are candidate partitionings (uniform cap c KiB: c;
 *   growing from s KiB: -s; one partition: 0), costs the predicted unhidden communication.
 * - PRIORITY: which started collective libglucx's collective thread runs a chunk of next, among
 *   collectives started with a priority (GLUCX_COLL_OPT_PRIORITY, cut into chunks that each run
 *   as a collective with its own seq); options are the seqs of the candidates' next chunks, costs
 *   the predicted time of each of those chunks.
 */
#define GLUCX_TP_DECISION_MAP(X)                                                                   \
    X(ALGORITHM, algorithm, 0)                                                                     \
    X(FALLBACK, fallback, 1)                                                                       \
    X(ORDER, order, 2)                                                                             \
    X(PARTITION, partition, 3)                                                                     \
    X(PRIORITY, priority, 4)

enum {
#define GLUCX_TP_DECISION_ENUM_(name, lname, value) GLUCX_TP_DECISION_##name = (value),
    GLUCX_TP_DECISION_MAP(GLUCX_TP_DECISION_ENUM_)
#undef GLUCX_TP_DECISION_ENUM_
};

/**
 * Where a caller blocks (wait_begin/wait_end). X(NAME, name, value).
 * - REQUEST: glucx_request_wait() on one request.
 * - WAIT_ANY: glucx_request_wait_any() on a set of requests.
 * - COLL: inside a collective algorithm, waiting for its outstanding messages.
 * - WINDOW: glucx_window_wait(), waiting for a put to be placed in a window.
 */
#define GLUCX_TP_WAIT_MAP(X)                                                                       \
    X(REQUEST, request, 0)                                                                         \
    X(WAIT_ANY, wait_any, 1)                                                                       \
    X(COLL, coll, 2)                                                                               \
    X(WINDOW, window, 3)

enum {
#define GLUCX_TP_WAIT_ENUM_(name, lname, value) GLUCX_TP_WAIT_##name = (value),
    GLUCX_TP_WAIT_MAP(GLUCX_TP_WAIT_ENUM_)
#undef GLUCX_TP_WAIT_ENUM_
};

/**
 * What an endpoint of a physical link is (phys_link events). X(NAME, name, value).
 * - RANK: a rank (dimension 0, inside a package).
 * - PACKAGE: a package, i.e. a host (outer dimensions).
 * - SWITCH: a switch (a Switch dimension, or the switch between hosts glucx assumes without a
 *   topology file).
 * Same values as glucx_node_kind_t (plugin/topo/topo.h).
 */
#define GLUCX_TP_NODE_MAP(X)                                                                       \
    X(RANK, rank, 0)                                                                               \
    X(PACKAGE, package, 1)                                                                         \
    X(SWITCH, switch, 2)

enum {
#define GLUCX_TP_NODE_ENUM_(name, lname, value) GLUCX_TP_NODE_##name = (value),
    GLUCX_TP_NODE_MAP(GLUCX_TP_NODE_ENUM_)
#undef GLUCX_TP_NODE_ENUM_
};

/** seq of an event that belongs to no collective (e.g. a wait on plain point-to-point). */
#define GLUCX_TP_SEQ_NONE UINT32_C(0xffffffff)

/**
 * Trace format version (trace/EVENTS.md, "Format version"): what the recorded glucx events mean
 * (their fields, when each is emitted, their order). Bumped with any change of meaning; readers
 * refuse a version newer than the one they know. The provider writes it into the trace's
 * metadata as the model.emf.uri attribute of every glucx event class:
 * GLUCX_TP_FORMAT_URI_PREFIX followed by the version in decimal ("glucx-trace-format:3").
 */
#define GLUCX_TP_FORMAT_VERSION 3
#define GLUCX_TP_FORMAT_URI_PREFIX "glucx-trace-format:"

#endif
