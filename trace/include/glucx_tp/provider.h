/*
 * The LTTng-UST 2.13 tracepoint provider `glucx`: every event of the catalog (trace/EVENTS.md is
 * the contract; keep the two in step). Plugin code never includes this header directly: it uses
 * the macros of plugin/util/tracepoint.h. trace/provider.c compiles it into the probe library
 * libglucx-trace-provider.so; plugin/util/tracepoint.c compiles the call-site definitions into
 * libglucx (dynamic linkage: libglucx never links liblttng-ust).
 *
 * Argument order of every event = the order of its fields below, and GLUCX_TP(event, ...) takes
 * exactly these arguments. Every event starts with (comm_id, rank).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER glucx

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "glucx_tp/provider.h"

#if !defined(GLUCX_TP_PROVIDER_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define GLUCX_TP_PROVIDER_H

#include <stdint.h>

#include <lttng/tracepoint.h>

#include <glucx/glucx.h>

#include "glucx_tp/ids.h"

/* clang-format off */
/* ---- enumerations (from the public X-macro lists and glucx_tp/ids.h) ---------------------- */

#define GLUCX_TP_ENUM_COLL_(name, lname) lttng_ust_field_enum_value(#lname, GLUCX_COLL_##name)
#define GLUCX_TP_ENUM_DTYPE_(name, lname, bytes, is_float) \
    lttng_ust_field_enum_value(#lname, GLUCX_DTYPE_##name)
#define GLUCX_TP_ENUM_OP_(name, lname) lttng_ust_field_enum_value(#lname, GLUCX_OP_##name)
#define GLUCX_TP_ENUM_STATUS_(name, value, text) lttng_ust_field_enum_value(#name, value)
#define GLUCX_TP_ENUM_ID_(name, lname, value) lttng_ust_field_enum_value(#lname, value)

LTTNG_UST_TRACEPOINT_ENUM(glucx, coll_enum,
    LTTNG_UST_TP_ENUM_VALUES(GLUCX_COLL_MAP(GLUCX_TP_ENUM_COLL_)))
LTTNG_UST_TRACEPOINT_ENUM(glucx, dtype_enum,
    LTTNG_UST_TP_ENUM_VALUES(GLUCX_DTYPE_MAP(GLUCX_TP_ENUM_DTYPE_)))
LTTNG_UST_TRACEPOINT_ENUM(glucx, op_enum,
    LTTNG_UST_TP_ENUM_VALUES(GLUCX_OP_MAP(GLUCX_TP_ENUM_OP_)))
LTTNG_UST_TRACEPOINT_ENUM(glucx, status_enum,
    LTTNG_UST_TP_ENUM_VALUES(GLUCX_STATUS_MAP(GLUCX_TP_ENUM_STATUS_)))
LTTNG_UST_TRACEPOINT_ENUM(glucx, alg_enum,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("none", GLUCX_TP_ALG_NONE)
        GLUCX_TP_ALG_MAP(GLUCX_TP_ENUM_ID_)))
LTTNG_UST_TRACEPOINT_ENUM(glucx, decision_enum,
    LTTNG_UST_TP_ENUM_VALUES(GLUCX_TP_DECISION_MAP(GLUCX_TP_ENUM_ID_)))
LTTNG_UST_TRACEPOINT_ENUM(glucx, wait_enum,
    LTTNG_UST_TP_ENUM_VALUES(GLUCX_TP_WAIT_MAP(GLUCX_TP_ENUM_ID_)))
LTTNG_UST_TRACEPOINT_ENUM(glucx, node_enum,
    LTTNG_UST_TP_ENUM_VALUES(GLUCX_TP_NODE_MAP(GLUCX_TP_ENUM_ID_)))

/* ---- communicator creation ---------------------------------------------------------------- */

LTTNG_UST_TRACEPOINT_EVENT(glucx, comm_init,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, int32_t, size, int32_t, package,
                      int32_t, npackages, const char *, name, const char *, host,
                      uint64_t, topo_digest),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(int32_t, size, size)
        lttng_ust_field_integer(int32_t, package, package)
        lttng_ust_field_integer(int32_t, npackages, npackages)
        lttng_ust_field_string(name, name)
        lttng_ust_field_string(host, host)
        lttng_ust_field_integer_hex(uint64_t, topo_digest, topo_digest)))

LTTNG_UST_TRACEPOINT_EVENT(glucx, link,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, int32_t, link_id, int32_t, src,
                      int32_t, dst, int32_t, dim, double, bandwidth_Bps, double, latency_ns,
                      const char *, transport),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(int32_t, link_id, link_id)
        lttng_ust_field_integer(int32_t, src, src)
        lttng_ust_field_integer(int32_t, dst, dst)
        lttng_ust_field_integer(int32_t, dim, dim)
        lttng_ust_field_float(double, bandwidth_Bps, bandwidth_Bps)
        lttng_ust_field_float(double, latency_ns, latency_ns)
        lttng_ust_field_string(transport, transport)))

LTTNG_UST_TRACEPOINT_EVENT(glucx, phys_link,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, int32_t, phys_id, int32_t, dim,
                      int, a_kind, int32_t, a, int, b_kind, int32_t, b, double, bandwidth_Bps,
                      double, latency_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(int32_t, phys_id, phys_id)
        lttng_ust_field_integer(int32_t, dim, dim)
        lttng_ust_field_enum(glucx, node_enum, uint8_t, a_kind, a_kind)
        lttng_ust_field_integer(int32_t, a, a)
        lttng_ust_field_enum(glucx, node_enum, uint8_t, b_kind, b_kind)
        lttng_ust_field_integer(int32_t, b, b)
        lttng_ust_field_float(double, bandwidth_Bps, bandwidth_Bps)
        lttng_ust_field_float(double, latency_ns, latency_ns)))

LTTNG_UST_TRACEPOINT_EVENT(glucx, route,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, int32_t, link, int32_t, dst,
                      uint32_t, n_hops, const int32_t *, phys_ids, const uint8_t *, dirs),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(int32_t, link, link)
        lttng_ust_field_integer(int32_t, dst, dst)
        lttng_ust_field_sequence(int32_t, phys_ids, phys_ids, uint32_t, n_hops)
        lttng_ust_field_sequence(uint8_t, dirs, dirs, uint32_t, n_hops)))

LTTNG_UST_TRACEPOINT_EVENT(glucx, select_map,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, int, coll, uint32_t, n_ranges,
                      const uint64_t *, lo, const uint64_t *, hi, const int32_t *, alg,
                      const uint8_t *, forced),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_enum(glucx, coll_enum, uint8_t, coll, coll)
        lttng_ust_field_sequence(uint64_t, lo, lo, uint32_t, n_ranges)
        lttng_ust_field_sequence(uint64_t, hi, hi, uint32_t, n_ranges)
        lttng_ust_field_sequence(int32_t, alg, alg, uint32_t, n_ranges)
        lttng_ust_field_sequence(uint8_t, forced, forced, uint32_t, n_ranges)))

/* ---- collectives and decisions ------------------------------------------------------------ */

#define GLUCX_TP_COLL_ARGS_                                                                    \
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, uint32_t, seq, int, coll,              \
                      uint64_t, bytes, int, dtype, int, op, int32_t, root, int, alg, int, status)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(glucx, coll_class, GLUCX_TP_COLL_ARGS_,
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(uint32_t, seq, seq)
        lttng_ust_field_enum(glucx, coll_enum, uint8_t, coll, coll)
        lttng_ust_field_integer(uint64_t, bytes, bytes)
        lttng_ust_field_enum(glucx, dtype_enum, uint8_t, dtype, dtype)
        lttng_ust_field_enum(glucx, op_enum, uint8_t, op, op)
        lttng_ust_field_integer(int32_t, root, root)
        lttng_ust_field_enum(glucx, alg_enum, int8_t, alg, alg)
        lttng_ust_field_enum(glucx, status_enum, int8_t, status, status)))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, coll_class, glucx, coll_begin, GLUCX_TP_COLL_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, coll_class, glucx, coll_end, GLUCX_TP_COLL_ARGS_)

LTTNG_UST_TRACEPOINT_EVENT(glucx, sched_decision,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, uint32_t, seq, int, kind,
                      int32_t, chosen, uint32_t, n_alt, const int32_t *, alt_ids,
                      const uint64_t *, alt_cost_ns, const char *, reason),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(uint32_t, seq, seq)
        lttng_ust_field_enum(glucx, decision_enum, uint8_t, kind, kind)
        lttng_ust_field_integer(int32_t, chosen, chosen)
        lttng_ust_field_sequence(int32_t, alt_ids, alt_ids, uint32_t, n_alt)
        lttng_ust_field_sequence(uint64_t, alt_cost_ns, alt_cost_ns, uint32_t, n_alt)
        lttng_ust_field_string(reason, reason)))

/* ---- point-to-point transfers ------------------------------------------------------------- */

#define GLUCX_TP_XFER_ARGS_                                                                    \
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, uint32_t, seq, uint32_t, step,         \
                      int32_t, peer, int32_t, link, uint64_t, tag, uint64_t, bytes)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(glucx, xfer_class, GLUCX_TP_XFER_ARGS_,
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(uint32_t, seq, seq)
        lttng_ust_field_integer(uint32_t, step, step)
        lttng_ust_field_integer(int32_t, peer, peer)
        lttng_ust_field_integer(int32_t, link, link)
        lttng_ust_field_integer_hex(uint64_t, tag, tag)
        lttng_ust_field_integer(uint64_t, bytes, bytes)))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, xfer_class, glucx, send_begin, GLUCX_TP_XFER_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, xfer_class, glucx, send_end, GLUCX_TP_XFER_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, xfer_class, glucx, recv_begin, GLUCX_TP_XFER_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, xfer_class, glucx, recv_end, GLUCX_TP_XFER_ARGS_)

/* ---- reductions and waits ----------------------------------------------------------------- */

#define GLUCX_TP_REDUCE_ARGS_                                                                  \
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, uint32_t, seq, uint64_t, bytes,        \
                      int, dtype, int, op)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(glucx, reduce_class, GLUCX_TP_REDUCE_ARGS_,
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(uint32_t, seq, seq)
        lttng_ust_field_integer(uint64_t, bytes, bytes)
        lttng_ust_field_enum(glucx, dtype_enum, uint8_t, dtype, dtype)
        lttng_ust_field_enum(glucx, op_enum, uint8_t, op, op)))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, reduce_class, glucx, reduce_begin, GLUCX_TP_REDUCE_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, reduce_class, glucx, reduce_end, GLUCX_TP_REDUCE_ARGS_)

#define GLUCX_TP_WAIT_ARGS_                                                                    \
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, int, site, uint32_t, seq,              \
                      uint64_t, req, uint32_t, nreqs, int, status)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(glucx, wait_class, GLUCX_TP_WAIT_ARGS_,
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_enum(glucx, wait_enum, uint8_t, site, site)
        lttng_ust_field_integer(uint32_t, seq, seq)
        lttng_ust_field_integer_hex(uint64_t, req, req)
        lttng_ust_field_integer(uint32_t, nreqs, nreqs)
        lttng_ust_field_enum(glucx, status_enum, int8_t, status, status)))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, wait_class, glucx, wait_begin, GLUCX_TP_WAIT_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, wait_class, glucx, wait_end, GLUCX_TP_WAIT_ARGS_)

/* ---- framework events (glucx/trace.h) ----------------------------------------------------- */

#define GLUCX_TP_COMPUTE_ARGS_                                                                 \
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, const char *, phase, uint64_t, id)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(glucx, compute_class, GLUCX_TP_COMPUTE_ARGS_,
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_string(phase, phase)
        lttng_ust_field_integer(uint64_t, id, id)))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, compute_class, glucx, compute_begin,
                                    GLUCX_TP_COMPUTE_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, compute_class, glucx, compute_end,
                                    GLUCX_TP_COMPUTE_ARGS_)

#define GLUCX_TP_ITERATION_ARGS_                                                               \
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, uint64_t, iteration)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(glucx, iteration_class, GLUCX_TP_ITERATION_ARGS_,
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(uint64_t, iteration, iteration)))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, iteration_class, glucx, iteration_begin,
                                    GLUCX_TP_ITERATION_ARGS_)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(glucx, iteration_class, glucx, iteration_end,
                                    GLUCX_TP_ITERATION_ARGS_)

LTTNG_UST_TRACEPOINT_EVENT(glucx, bucket_ready,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, uint64_t, bucket, uint64_t, bytes),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_integer(uint64_t, bucket, bucket)
        lttng_ust_field_integer(uint64_t, bytes, bytes)))

/* ---- errors ------------------------------------------------------------------------------- */

LTTNG_UST_TRACEPOINT_EVENT(glucx, error,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, rank, int, status, const char *, text),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_integer(int32_t, rank, rank)
        lttng_ust_field_enum(glucx, status_enum, int8_t, status, status)
        lttng_ust_field_string(text, text)))

/* ---- trace format version (EVENTS.md, "Format version") ----------------------------------- */
/* Every event class carries the version in the trace's metadata (its model.emf.uri attribute),
 * so a trace says what its events mean whichever of them were recorded (late start, --events,
 * snapshots, rotation chunks) at no cost per event. Every event above must be listed here
 * (tests/trace checks that every recorded class has it). */
#define GLUCX_TP_STR2_(x) #x
#define GLUCX_TP_STR_(x) GLUCX_TP_STR2_(x)
#define GLUCX_TP_FORMAT_URI GLUCX_TP_FORMAT_URI_PREFIX GLUCX_TP_STR_(GLUCX_TP_FORMAT_VERSION)
#define GLUCX_TP_FORMAT_(event) \
    LTTNG_UST_TRACEPOINT_MODEL_EMF_URI(glucx, event, GLUCX_TP_FORMAT_URI)
GLUCX_TP_FORMAT_(comm_init)
GLUCX_TP_FORMAT_(link)
GLUCX_TP_FORMAT_(phys_link)
GLUCX_TP_FORMAT_(route)
GLUCX_TP_FORMAT_(select_map)
GLUCX_TP_FORMAT_(coll_begin)
GLUCX_TP_FORMAT_(coll_end)
GLUCX_TP_FORMAT_(sched_decision)
GLUCX_TP_FORMAT_(send_begin)
GLUCX_TP_FORMAT_(send_end)
GLUCX_TP_FORMAT_(recv_begin)
GLUCX_TP_FORMAT_(recv_end)
GLUCX_TP_FORMAT_(reduce_begin)
GLUCX_TP_FORMAT_(reduce_end)
GLUCX_TP_FORMAT_(wait_begin)
GLUCX_TP_FORMAT_(wait_end)
GLUCX_TP_FORMAT_(compute_begin)
GLUCX_TP_FORMAT_(compute_end)
GLUCX_TP_FORMAT_(iteration_begin)
GLUCX_TP_FORMAT_(iteration_end)
GLUCX_TP_FORMAT_(bucket_ready)
GLUCX_TP_FORMAT_(error)
/* clang-format on */

#endif /* GLUCX_TP_PROVIDER_H */

#include <lttng/tracepoint-event.h>
