/**
 * Test harness for collective algorithms: run one algorithm on one rank of a fake world
 * (support/fake_tx.h), and reference computations written independently of plugin/kernel
 * (plain C per dtype, own f16/bf16 conversions) to check results against.
 *
 * Rank functions run on threads (glucx_fake_run): cmocka's assert_* must not be called there.
 * Use GLUCX_TEST_CHECK, which prints the failure and makes the rank function return 1.
 */
#ifndef GLUCX_TEST_COLL_HARNESS_H
#define GLUCX_TEST_COLL_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coll/coll.h"
#include "support/util.h" /* glucx_test_ms(): deadlines of the rank threads */

/** In a rank function: when @p cond is false, print file:line and the message, return 1. */
#define GLUCX_TEST_CHECK(cond, ...)                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/**
 * Run one collective on this rank with algorithm @p alg_index of glucx_coll_tables[args->coll]:
 * glucx_coll_args_check + glucx_coll_ctx_init + glucx_coll_ctx_run + glucx_coll_ctx_fini.
 * @param tx this rank's transport (borrowed); @param topo topology (may be NULL for algorithms
 * that do not read it); @param seq collective sequence number, equal on all ranks;
 * @param timeout_ms deadline of the collective (< 0: none).
 * @return the status of the first failing stage (message in glucx_last_error()).
 */
glucx_status_t glucx_test_coll(glucx_tx_t *tx, const glucx_topo_t *topo,
                               const glucx_coll_args_t *args, int alg_index, uint32_t seq,
                               int64_t timeout_ms);

/** Index of algorithm @p name in the table of @p coll, -1 if absent. */
int glucx_test_alg_index(glucx_coll_t coll, const char *name);

/* ---- reference computations (independent of plugin/kernel) ---- */

/** IEEE binary16 / bfloat16 <-> binary32, round to nearest even (test-side implementation). */
float glucx_test_f16_to_f32(uint16_t h);
uint16_t glucx_test_f32_to_f16(float f);
float glucx_test_bf16_to_f32(uint16_t h);
uint16_t glucx_test_f32_to_bf16(float f);

/** Element @p i of @p buf (dtype @p dt) as a double / store @p v (converted as C does). */
double glucx_test_get(glucx_dtype_t dt, const void *buf, size_t i);
void glucx_test_set(glucx_dtype_t dt, void *buf, size_t i, double v);

/**
 * out = inputs[0] op inputs[1] op ... op inputs[nranks-1], combined left to right in rank order,
 * pairwise rounded to the dtype as the kernels document (f16/bf16 through f32); AVG divides the
 * sum by nranks at the end (f16/bf16 through f32, rounded once). Integer SUM/PROD wrap.
 * @p out may not alias the inputs.
 */
void glucx_test_ref_reduce(glucx_dtype_t dt, glucx_op_t op, int nranks, const void *const *inputs,
                           size_t count, void *out);

/**
 * Fill @p count elements with values for which every operand order of @p op gives the same
 * exact result (small integers; for PROD mostly 1 with a few -1 and 2; BOOL 0/1; for the
 * bitwise ops on integers random bit patterns). Deterministic in @p seed.
 */
void glucx_test_fill_exact(glucx_dtype_t dt, glucx_op_t op, void *buf, size_t count, uint64_t seed);

/** Fill a float dtype with random values in [-1, 1) (integers: random bits). */
void glucx_test_fill_random(glucx_dtype_t dt, void *buf, size_t count, uint64_t seed);

/**
 * Compare @p count elements of @p got against @p want. Integer and BOOL dtypes: exactly.
 * Floats: |got - want| <= tol * max(1, |want|) (tol = 0: equal values).
 * @return the index of the first difference, or (size_t)-1 when equal.
 */
size_t glucx_test_compare(glucx_dtype_t dt, const void *got, const void *want, size_t count,
                          double tol);

/** A tolerance suited to a reduction over @p nranks of values in [-1, 1) in dtype @p dt. */
double glucx_test_float_tol(glucx_dtype_t dt, int nranks);

/** 1 if @p dt is a floating-point dtype. */
int glucx_test_dtype_is_float(glucx_dtype_t dt);

/* ---- a whole collective on a fake world, checked against the reference ---- */

/**
 * One test case of allreduce, reduce_scatter, allgather or allgatherv: every rank's input is
 * generated from (seed, rank); the expected output is computed with glucx_test_ref_reduce or by
 * concatenation.
 */
typedef struct glucx_test_case {
    glucx_coll_t coll;
    const char *alg;      /**< algorithm name in the collective's table */
    int size;             /**< ranks */
    size_t count;         /**< as glucx_coll_args_t (allgatherv: unused) */
    const size_t *counts; /**< allgatherv: [size] */
    const size_t *displs; /**< allgatherv: [size]; NULL: packed in rank order */
    glucx_dtype_t dtype;
    glucx_op_t op;
    int in_place;
    int random; /**< random floats: compare within tolerance, and (allreduce) check
                     every rank's bytes equal rank 0's */
    uint64_t seed;
    int64_t timeout_ms; /**< default (0): glucx_test_ms(20000) */
    /** The topology every rank runs on (borrowed; its size must be c->size); NULL: one package
     *  of c->size ranks (glucx_topo_create_uniform). */
    const glucx_topo_t *topo;
    /* faults: bad_rank >= 0 runs with bad_count / bad_dtype / bad_counts instead */
    int bad_rank; /**< -1 (set by glucx_test_case_init) for none */
    size_t bad_count;
    glucx_dtype_t bad_dtype;
    const size_t *bad_counts;
    int kill_rank; /**< -1 for none: this rank kills itself after 50 ms instead of running */
    glucx_status_t expect;     /**< status every (surviving) rank must return (default GLUCX_OK) */
    glucx_status_t expect_alt; /**< also accepted (default: same as expect) */
    /* outputs */
    uint64_t bytes_sent[64];     /**< per rank: bytes sent in the (first) run */
    uint64_t msgs_sent[64];      /**< per rank: messages sent in the (first) run */
    uint64_t pair_bytes[64][64]; /**< [src][dst]: bytes src sent to dst in the (first) run */
    glucx_status_t status;       /**< the status all ranks agreed on */
    int n_expect;                /**< how many ranks returned exactly c->expect */
} glucx_test_case_t;

/** Defaults: no fault, OK expected, seed 1. */
void glucx_test_case_init(glucx_test_case_t *c, glucx_coll_t coll, const char *alg, int size,
                          size_t count, glucx_dtype_t dtype, glucx_op_t op);

/**
 * Run @p c twice on one fresh fake world (sequence numbers 7 and 8), check every rank's status
 * against c->expect, every output against the reference, that nothing was written outside the
 * output, and that no message was left unmatched; fill c->bytes_sent / msgs_sent / status.
 * When every rank returns GLUCX_ERR_UNSUPPORTED and c->expect is GLUCX_OK, returns 0 with
 * c->status = GLUCX_ERR_UNSUPPORTED (nothing checked).
 * @return 0 when all checks pass (details of a failure are printed to stderr).
 */
int glucx_test_run_case(glucx_test_case_t *c);

/**
 * Sweep of glucx_test_run_case over sizes 1..max_size, counts {0, 1, n-1, 17, 1000} (and
 * 100003 for n in {2, 3, 5, 8} and 700001 for n in {2, 3} when @p large), in place and out of
 * place, f32 SUM (i32 for allgather(v)) with exact inputs. allgatherv gets uneven counts (some
 * zero), packed and (every other case) scattered in reverse rank order with gaps.
 * @param pow2_only the algorithm must return GLUCX_ERR_UNSUPPORTED for other sizes.
 * @return 0 when every case passes.
 */
int glucx_test_sweep_sizes(glucx_coll_t coll, const char *alg, int max_size, int large,
                           int pow2_only);

/** Every dtype, and for reducing collectives every op the dtype supports (AVG included), on
 *  @p size ranks with @p count elements, in place for every other case. */
int glucx_test_sweep_dtypes(glucx_coll_t coll, const char *alg, int size, size_t count);

/** Random floats (f16, bf16, f32, f64, SUM and AVG) on @p size ranks, @p count elements:
 *  within tolerance of the reference and bitwise identical on every rank (allreduce). */
int glucx_test_sweep_random(glucx_coll_t coll, const char *alg, int size, size_t count);

/** allgatherv counts for a sweep: uneven, some zero, deterministic in (size, base). */
void glucx_test_v_counts(int size, size_t base, size_t *counts);

/** Reversed-order, gapped displacements for @p counts (a layout the packed fast paths skip). */
void glucx_test_v_displs_scattered(int size, const size_t *counts, size_t *displs);

#endif
