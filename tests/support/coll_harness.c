/* Collective test harness and reference computations: see coll_harness.h. */
#include "support/coll_harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/fake_tx.h"
#include "support/util.h"
#include "topo/topo.h"
#include "util/error.h"

glucx_status_t glucx_test_coll(glucx_tx_t *tx, const glucx_topo_t *topo,
                               const glucx_coll_args_t *args, int alg_index, uint32_t seq,
                               int64_t timeout_ms)
{
    glucx_status_t st = glucx_coll_args_check(args, tx->rank, tx->size);
    if (st != GLUCX_OK)
        return st;
    glucx_coll_ctx_t ctx;
    st = glucx_coll_ctx_init(&ctx, tx, topo, args, seq, alg_index, timeout_ms);
    if (st != GLUCX_OK)
        return st;
    st = glucx_coll_ctx_run(&ctx);
    glucx_coll_ctx_fini(&ctx);
    return st;
}

int glucx_test_alg_index(glucx_coll_t coll, const char *name)
{
    if ((unsigned)coll >= GLUCX_COLL_COUNT || name == NULL)
        return -1;
    const glucx_coll_table_t *t = glucx_coll_tables[coll];
    for (int i = 0; i < t->count; i++)
        if (strcmp(t->algs[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- f16 / bf16 ---- */

static uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

static float bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

float glucx_test_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        return bits_f32(sign | 0x7f800000u | (mant << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t glucx_test_f32_to_f16(float f)
{
    const uint32_t x = f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf, NaN (kept quiet) */
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0));
    if (a >= 0x477ff000u) /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: subnormal, multiple of 2^-24, exact scaling */
        long m = lrintf(fabsf(f) * 16777216.0f);
        return (uint16_t)(sign | (uint16_t)m);
    }
    uint32_t h = (((a >> 23) - 127 + 15) << 10) | ((a & 0x7fffffu) >> 13);
    const uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

float glucx_test_bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

uint16_t glucx_test_f32_to_bf16(float f)
{
    const uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ---- element access ---- */

int glucx_test_dtype_is_float(glucx_dtype_t dt)
{
    return dt == GLUCX_DTYPE_F16 || dt == GLUCX_DTYPE_BF16 || dt == GLUCX_DTYPE_F32 ||
           dt == GLUCX_DTYPE_F64;
}

double glucx_test_get(glucx_dtype_t dt, const void *buf, size_t i)
{
    const unsigned char *p = (const unsigned char *)buf + i * glucx_dtype_size(dt);
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
    case GLUCX_DTYPE_U8:
        return *p;
    case GLUCX_DTYPE_I8:
        return (int8_t)*p;
    case GLUCX_DTYPE_I32: {
        int32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case GLUCX_DTYPE_I64: {
        int64_t v;
        memcpy(&v, p, sizeof(v));
        return (double)v;
    }
    case GLUCX_DTYPE_U64: {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        return (double)v;
    }
    case GLUCX_DTYPE_F16:
    case GLUCX_DTYPE_BF16: {
        uint16_t v;
        memcpy(&v, p, sizeof(v));
        return dt == GLUCX_DTYPE_F16 ? glucx_test_f16_to_f32(v) : glucx_test_bf16_to_f32(v);
    }
    case GLUCX_DTYPE_F32: {
        float v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case GLUCX_DTYPE_F64: {
        double v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    default:
        return 0;
    }
}

void glucx_test_set(glucx_dtype_t dt, void *buf, size_t i, double v)
{
    unsigned char *p = (unsigned char *)buf + i * glucx_dtype_size(dt);
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
        *p = v != 0;
        break;
    case GLUCX_DTYPE_U8:
        *p = (uint8_t)(int64_t)v;
        break;
    case GLUCX_DTYPE_I8:
        *p = (uint8_t)(int8_t)(int64_t)v;
        break;
    case GLUCX_DTYPE_I32: {
        int32_t x = (int32_t)(int64_t)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case GLUCX_DTYPE_I64: {
        int64_t x = (int64_t)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case GLUCX_DTYPE_U64: {
        uint64_t x = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case GLUCX_DTYPE_F16:
    case GLUCX_DTYPE_BF16: {
        uint16_t x = dt == GLUCX_DTYPE_F16 ? glucx_test_f32_to_f16((float)v)
                                           : glucx_test_f32_to_bf16((float)v);
        memcpy(p, &x, sizeof(x));
        break;
    }
    case GLUCX_DTYPE_F32: {
        float x = (float)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case GLUCX_DTYPE_F64:
        memcpy(p, &v, sizeof(v));
        break;
    default:
        break;
    }
}

/* ---- reference reduction ---- */

/* Integers as raw 64-bit patterns: arithmetic wraps as the element width does after the store. */
static uint64_t get_bits(glucx_dtype_t dt, const unsigned char *p)
{
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
    case GLUCX_DTYPE_U8:
        return *p;
    case GLUCX_DTYPE_I8:
        return (uint64_t)(int64_t)(int8_t)*p;
    case GLUCX_DTYPE_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return (uint64_t)(int64_t)v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static void put_bits(glucx_dtype_t dt, unsigned char *p, uint64_t v)
{
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
    case GLUCX_DTYPE_U8:
    case GLUCX_DTYPE_I8:
        *p = (unsigned char)v;
        break;
    case GLUCX_DTYPE_I32: {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    default:
        memcpy(p, &v, 8);
    }
}

static int int_less(glucx_dtype_t dt, uint64_t a, uint64_t b)
{
    if (dt == GLUCX_DTYPE_I8 || dt == GLUCX_DTYPE_I32 || dt == GLUCX_DTYPE_I64)
        return (int64_t)a < (int64_t)b;
    return a < b;
}

static uint64_t int_op(glucx_dtype_t dt, glucx_op_t op, uint64_t a, uint64_t b)
{
    if (dt == GLUCX_DTYPE_BOOL) {
        a = a != 0;
        b = b != 0;
        switch (op) {
        case GLUCX_OP_SUM:
        case GLUCX_OP_MAX:
        case GLUCX_OP_BOR:
            return a | b;
        case GLUCX_OP_PROD:
        case GLUCX_OP_MIN:
        case GLUCX_OP_BAND:
            return a & b;
        case GLUCX_OP_BXOR:
            return a ^ b;
        default:
            return 0;
        }
    }
    switch (op) {
    case GLUCX_OP_SUM:
        return a + b;
    case GLUCX_OP_PROD:
        return a * b;
    case GLUCX_OP_MIN:
        return int_less(dt, b, a) ? b : a;
    case GLUCX_OP_MAX:
        return int_less(dt, a, b) ? b : a;
    case GLUCX_OP_BAND:
        return a & b;
    case GLUCX_OP_BOR:
        return a | b;
    case GLUCX_OP_BXOR:
        return a ^ b;
    default:
        return 0;
    }
}

static double float_op(glucx_op_t op, double a, double b)
{
    switch (op) {
    case GLUCX_OP_SUM:
    case GLUCX_OP_AVG:
        return a + b;
    case GLUCX_OP_PROD:
        return a * b;
    case GLUCX_OP_MIN:
        return b < a ? b : a;
    case GLUCX_OP_MAX:
        return a < b ? b : a;
    default:
        return 0;
    }
}

/* Store the f16/bf16 nearest to @p q (ties to even), rounding once from double: search the
 * neighbours of the value reached through f32. */
static void set_nearest16(glucx_dtype_t dt, void *out, size_t i, double q)
{
    uint16_t h =
        dt == GLUCX_DTYPE_F16 ? glucx_test_f32_to_f16((float)q) : glucx_test_f32_to_bf16((float)q);
    uint16_t best = h;
    double best_err = -1;
    for (int d = -1; d <= 1; d++) {
        uint16_t c = (uint16_t)(h + d);
        if ((c & 0x7fff) == 0x7fff || ((c ^ h) & 0x8000)) /* stay on one side of zero */
            continue;
        double v = dt == GLUCX_DTYPE_F16 ? glucx_test_f16_to_f32(c) : glucx_test_bf16_to_f32(c);
        if (isnan(v))
            continue;
        double err = fabs(v - q);
        if (best_err < 0 || err < best_err || (err == best_err && (c & 1) == 0)) {
            best = c;
            best_err = err;
        }
    }
    memcpy((unsigned char *)out + i * 2, &best, 2);
}

void glucx_test_ref_reduce(glucx_dtype_t dt, glucx_op_t op, int nranks, const void *const *inputs,
                           size_t count, void *out)
{
    const size_t es = glucx_dtype_size(dt);
    unsigned char *o = out;
    for (size_t i = 0; i < count; i++) {
        const size_t at = i * es;
        if (!glucx_test_dtype_is_float(dt)) {
            uint64_t acc = get_bits(dt, (const unsigned char *)inputs[0] + at);
            for (int r = 1; r < nranks; r++)
                acc = int_op(dt, op, acc, get_bits(dt, (const unsigned char *)inputs[r] + at));
            put_bits(dt, o + at, acc);
            continue;
        }
        if (dt == GLUCX_DTYPE_F64) {
            double acc = glucx_test_get(dt, inputs[0], i);
            for (int r = 1; r < nranks; r++)
                acc = float_op(op, acc, glucx_test_get(dt, inputs[r], i));
            if (op == GLUCX_OP_AVG)
                acc /= nranks;
            glucx_test_set(dt, out, i, acc);
            continue;
        }
        /* f32, f16, bf16: each pairwise step rounded to the dtype (through f32) */
        float acc = (float)glucx_test_get(dt, inputs[0], i);
        for (int r = 1; r < nranks; r++) {
            float v = (float)float_op(op, acc, (float)glucx_test_get(dt, inputs[r], i));
            glucx_test_set(dt, out, i, v); /* round to the dtype */
            acc = (float)glucx_test_get(dt, out, i);
        }
        if (op == GLUCX_OP_AVG && dt != GLUCX_DTYPE_F32) {
            set_nearest16(dt, out, i, (double)acc / nranks);
            continue;
        }
        if (op == GLUCX_OP_AVG)
            acc = acc / (float)nranks; /* correctly rounded: nranks is exact in f32 */
        glucx_test_set(dt, out, i, acc);
    }
}

/* ---- inputs ---- */

void glucx_test_fill_exact(glucx_dtype_t dt, glucx_op_t op, void *buf, size_t count, uint64_t seed)
{
    uint64_t s = seed * UINT64_C(0x9e3779b97f4a7c15) + 12345;
    const int is_signed = dt == GLUCX_DTYPE_I8 || dt == GLUCX_DTYPE_I32 || dt == GLUCX_DTYPE_I64 ||
                          glucx_test_dtype_is_float(dt);
    const int bitwise = op == GLUCX_OP_BAND || op == GLUCX_OP_BOR || op == GLUCX_OP_BXOR;
    for (size_t i = 0; i < count; i++) {
        uint64_t r = glucx_test_rand(&s);
        if (dt == GLUCX_DTYPE_BOOL) {
            /* PROD/MIN/BAND would be all zero with fair coins over 8 ranks */
            int ones = op == GLUCX_OP_PROD || op == GLUCX_OP_MIN || op == GLUCX_OP_BAND;
            glucx_test_set(dt, buf, i, ones ? (r % 8 != 0) : (r & 1));
            continue;
        }
        if (bitwise) {
            put_bits(dt, (unsigned char *)buf + i * glucx_dtype_size(dt), r);
            continue;
        }
        double v;
        if (op == GLUCX_OP_PROD) {
            static const double signed_vals[8] = {1, 1, 1, 1, 1, -1, 2, 1};
            static const double unsigned_vals[8] = {1, 1, 1, 1, 1, 3, 2, 1};
            v = is_signed ? signed_vals[r % 8] : unsigned_vals[r % 8];
        } else {
            v = is_signed ? (double)((int)(r % 7) - 3) : (double)(r % 7);
        }
        glucx_test_set(dt, buf, i, v);
    }
}

void glucx_test_fill_random(glucx_dtype_t dt, void *buf, size_t count, uint64_t seed)
{
    if (!glucx_test_dtype_is_float(dt)) {
        glucx_test_fill_bytes(buf, count * glucx_dtype_size(dt), seed);
        if (dt == GLUCX_DTYPE_BOOL)
            for (size_t i = 0; i < count; i++)
                ((unsigned char *)buf)[i] &= 1;
        return;
    }
    uint64_t s = seed * UINT64_C(0xd1b54a32d192ed03) + 777;
    for (size_t i = 0; i < count; i++) {
        double u = (double)(glucx_test_rand(&s) >> 11) * 0x1.0p-53; /* [0, 1) */
        glucx_test_set(dt, buf, i, 2 * u - 1);
    }
}

size_t glucx_test_compare(glucx_dtype_t dt, const void *got, const void *want, size_t count,
                          double tol)
{
    const size_t es = glucx_dtype_size(dt);
    if (!glucx_test_dtype_is_float(dt)) {
        for (size_t i = 0; i < count; i++)
            if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0)
                return i;
        return (size_t)-1;
    }
    for (size_t i = 0; i < count; i++) {
        double g = glucx_test_get(dt, got, i), w = glucx_test_get(dt, want, i);
        double lim = tol * (fabs(w) > 1 ? fabs(w) : 1);
        if (!(fabs(g - w) <= lim))
            return i;
    }
    return (size_t)-1;
}

double glucx_test_float_tol(glucx_dtype_t dt, int nranks)
{
    /* a few rounding steps per rank, each at most half an ulp of values up to nranks */
    switch (dt) {
    case GLUCX_DTYPE_F16:
        return 4e-3 * nranks;
    case GLUCX_DTYPE_BF16:
        return 3e-2 * nranks;
    case GLUCX_DTYPE_F32:
        return 1e-6 * nranks;
    case GLUCX_DTYPE_F64:
        return 1e-14 * nranks;
    default:
        return 0;
    }
}

/* ---- whole-case runner ---- */

#define GUARD_BYTES 64
#define GUARD_BYTE 0xA5
#define UNTOUCHED_BYTE 0x5A

void glucx_test_case_init(glucx_test_case_t *c, glucx_coll_t coll, const char *alg, int size,
                          size_t count, glucx_dtype_t dtype, glucx_op_t op)
{
    memset(c, 0, sizeof(*c));
    c->coll = coll;
    c->alg = alg;
    c->size = size;
    c->count = count;
    c->dtype = dtype;
    c->op = op;
    c->seed = 1;
    c->bad_rank = -1;
    c->bad_dtype = GLUCX_DTYPE_COUNT; /* same as dtype */
    c->kill_rank = -1;
    c->expect = GLUCX_OK;
    c->expect_alt = GLUCX_OK;
}

typedef struct case_rank {
    glucx_coll_args_t args;
    size_t *displs; /* allgatherv: the displacements this rank passes */
    void *in;       /* generated input (in_elems) */
    size_t in_elems;
    void *send; /* sendbuf (NULL when in place) */
    unsigned char *out;
    size_t out_bytes; /* without the guard */
    glucx_status_t status;
} case_rank_t;

typedef struct case_run {
    glucx_test_case_t *c;
    glucx_topo_t *topo;
    case_rank_t *rk;
    uint32_t seq;
    int alg_index;
} case_run_t;

static int case_rank_fn(glucx_fake_world_t *w, int rank, void *arg)
{
    case_run_t *run = arg;
    case_rank_t *rk = &run->rk[rank];
    if (rank == run->c->kill_rank) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        glucx_fake_kill(w, rank);
        rk->status = GLUCX_OK;
        return 0;
    }
    int64_t timeout = run->c->timeout_ms > 0 ? run->c->timeout_ms : glucx_test_ms(20000);
    rk->status = glucx_test_coll(glucx_fake_tx(w, rank), run->topo, &rk->args, run->alg_index,
                                 run->seq, timeout);
    return 0;
}

/* Elements of this rank's input and output given its own view of the arguments. */
static void case_sizes(const glucx_test_case_t *c, const glucx_coll_args_t *a, int rank,
                       size_t *in_elems, size_t *out_elems)
{
    const size_t n = (size_t)c->size;
    switch (c->coll) {
    case GLUCX_COLL_ALLREDUCE:
        *in_elems = *out_elems = a->count;
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
        *in_elems = n * a->count;
        *out_elems = c->in_place ? n * a->count : a->count;
        break;
    case GLUCX_COLL_ALLGATHER:
        *in_elems = a->count;
        *out_elems = n * a->count;
        break;
    case GLUCX_COLL_ALLGATHERV: {
        *in_elems = a->counts[rank];
        size_t end = 0;
        for (size_t r = 0; r < n; r++)
            if (a->displs[r] + a->counts[r] > end)
                end = a->displs[r] + a->counts[r];
        *out_elems = end;
        break;
    }
    default:
        *in_elems = *out_elems = 0;
    }
}

static void case_free(case_run_t *run, int n)
{
    if (run->rk != NULL)
        for (int r = 0; r < n; r++) {
            free(run->rk[r].in);
            free(run->rk[r].send);
            free(run->rk[r].out);
            free(run->rk[r].displs);
        }
    free(run->rk);
    if (run->c->topo == NULL)
        glucx_topo_destroy(run->topo);
}

/* Fill inputs and outputs of every rank for one run. */
static int case_prepare(case_run_t *run)
{
    glucx_test_case_t *c = run->c;
    const int n = c->size;
    for (int r = 0; r < n; r++) {
        case_rank_t *rk = &run->rk[r];
        const int bad = r == c->bad_rank;
        glucx_coll_args_t *a = &rk->args;
        memset(a, 0, sizeof(*a));
        a->coll = c->coll;
        a->count = bad && c->bad_count != 0 ? c->bad_count : c->count;
        a->dtype = bad && c->bad_dtype != GLUCX_DTYPE_COUNT ? c->bad_dtype : c->dtype;
        a->op = c->op;
        if (c->coll == GLUCX_COLL_ALLGATHERV) {
            a->counts = bad && c->bad_counts != NULL ? c->bad_counts : c->counts;
            if (rk->displs == NULL)
                rk->displs = calloc((size_t)n, sizeof(size_t));
            if (rk->displs == NULL)
                return 1;
            size_t at = 0;
            for (int b = 0; b < n; b++) {
                rk->displs[b] = c->displs != NULL ? c->displs[b] : at;
                at += a->counts[b];
            }
            a->displs = rk->displs;
        }
        size_t in_elems, out_elems;
        case_sizes(c, a, r, &in_elems, &out_elems);
        const size_t es = glucx_dtype_size(a->dtype);
        if (rk->in == NULL) {
            rk->in = malloc(in_elems * es + 1);
            rk->send = malloc(in_elems * es + 1);
            rk->out = malloc(out_elems * es + GUARD_BYTES);
            if (rk->in == NULL || rk->send == NULL || rk->out == NULL)
                return 1;
            rk->in_elems = in_elems;
            rk->out_bytes = out_elems * es;
            const uint64_t seed = c->seed * 1000003 + (uint64_t)r;
            if (c->random)
                glucx_test_fill_random(a->dtype, rk->in, in_elems, seed);
            else
                glucx_test_fill_exact(a->dtype, c->op, rk->in, in_elems, seed);
        }
        memset(rk->out, UNTOUCHED_BYTE, rk->out_bytes);
        memset(rk->out + rk->out_bytes, GUARD_BYTE, GUARD_BYTES);
        const size_t in_bytes = in_elems * es;
        if (!c->in_place) {
            memcpy(rk->send, rk->in, in_bytes);
            a->sendbuf = rk->send;
        } else {
            a->sendbuf = GLUCX_IN_PLACE;
            size_t at = 0;
            if (c->coll == GLUCX_COLL_ALLGATHER)
                at = (size_t)r * a->count * es;
            else if (c->coll == GLUCX_COLL_ALLGATHERV)
                at = a->displs[r] * es;
            memcpy(rk->out + at, rk->in, in_bytes);
        }
        a->recvbuf = rk->out;
    }
    return 0;
}

/* Check every rank's output against the reference. */
static int case_check(case_run_t *run)
{
    glucx_test_case_t *c = run->c;
    const int n = c->size;
    const size_t es = glucx_dtype_size(c->dtype);
    const double tol = c->random ? glucx_test_float_tol(c->dtype, n) : 0;
    const char *name = glucx_coll_name(c->coll);
    int bad = 0;
    const void **ins = calloc((size_t)n, sizeof(void *));
    unsigned char *want = NULL;
    if (ins == NULL)
        return 1;
    for (int r = 0; r < n; r++)
        ins[r] = run->rk[r].in;

    for (int r = 0; r < n && !bad; r++) {
        const case_rank_t *rk = &run->rk[r];
        for (size_t i = 0; i < GUARD_BYTES; i++)
            if (rk->out[rk->out_bytes + i] != GUARD_BYTE) {
                fprintf(stderr, "%s/%s n=%d count=%zu: rank %d wrote past its output\n", name,
                        c->alg, n, c->count, r);
                bad = 1;
                break;
            }
    }
    /* out of place, the input is read-only (several algorithms send straight from it) */
    for (int r = 0; r < n && !bad && !c->in_place; r++) {
        const case_rank_t *rk = &run->rk[r];
        if (memcmp(rk->send, rk->in, rk->in_elems * es) != 0) {
            fprintf(stderr, "%s/%s n=%d count=%zu: rank %d's sendbuf changed\n", name, c->alg, n,
                    c->count, r);
            bad = 1;
        }
    }
    if (!bad && (c->coll == GLUCX_COLL_ALLREDUCE || c->coll == GLUCX_COLL_REDUCE_SCATTER)) {
        const size_t total = run->rk[0].in_elems;
        want = malloc(total * es + 1);
        if (want == NULL) {
            free(ins);
            return 1;
        }
        glucx_test_ref_reduce(c->dtype, c->op, n, ins, total, want);
        for (int r = 0; r < n && !bad; r++) {
            const size_t off = c->coll == GLUCX_COLL_REDUCE_SCATTER ? (size_t)r * c->count : 0;
            size_t i = glucx_test_compare(c->dtype, run->rk[r].out, want + off * es, c->count, tol);
            if (i != (size_t)-1) {
                fprintf(stderr,
                        "%s/%s n=%d count=%zu %s %s%s: rank %d element %zu is %g, want %g\n", name,
                        c->alg, n, c->count, glucx_dtype_name(c->dtype), glucx_op_name(c->op),
                        c->in_place ? " in place" : "", r, i,
                        glucx_test_get(c->dtype, run->rk[r].out, i),
                        glucx_test_get(c->dtype, want + off * es, i));
                bad = 1;
            }
            if (!bad && c->coll == GLUCX_COLL_ALLREDUCE &&
                memcmp(run->rk[r].out, run->rk[0].out, c->count * es) != 0) {
                fprintf(stderr, "%s/%s n=%d count=%zu: rank %d's bytes differ from rank 0's\n",
                        name, c->alg, n, c->count, r);
                bad = 1;
            }
            /* in place, reduce_scatter may use the rest of recvbuf: no untouched check */
        }
    } else if (!bad) {
        /* allgather(v): blocks are copies; gaps of allgatherv stay untouched */
        for (int r = 0; r < n && !bad; r++) {
            const case_rank_t *rk = &run->rk[r];
            unsigned char *shadow = malloc(rk->out_bytes + 1);
            if (shadow == NULL) {
                bad = 1;
                break;
            }
            memset(shadow, UNTOUCHED_BYTE, rk->out_bytes);
            for (int b = 0; b < n; b++) {
                const size_t at =
                    c->coll == GLUCX_COLL_ALLGATHER ? (size_t)b * c->count : rk->args.displs[b];
                memcpy(shadow + at * es, run->rk[b].in, run->rk[b].in_elems * es);
            }
            for (size_t i = 0; i < rk->out_bytes; i++)
                if (rk->out[i] != shadow[i]) {
                    fprintf(stderr, "%s/%s n=%d: rank %d output byte %zu is %02x, want %02x\n",
                            name, c->alg, n, r, i, rk->out[i], shadow[i]);
                    bad = 1;
                    break;
                }
            free(shadow);
        }
    }
    free(want);
    free(ins);
    return bad;
}

int glucx_test_run_case(glucx_test_case_t *c)
{
    const int n = c->size;
    if (n < 1 || n > 64)
        return 1;
    case_run_t run = {.c = c};
    glucx_fake_world_t *w = NULL;
    int rc = 1;
    run.alg_index = glucx_test_alg_index(c->coll, c->alg);
    if (run.alg_index < 0) {
        fprintf(stderr, "no algorithm %s for %s\n", c->alg, glucx_coll_name(c->coll));
        return 1;
    }
    run.rk = calloc((size_t)n, sizeof(*run.rk));
    if (c->topo != NULL && c->topo->size != n) {
        fprintf(stderr, "test case: topology of %d ranks for %d\n", c->topo->size, n);
        free(run.rk);
        return 1;
    }
    if (c->topo != NULL)
        run.topo = (glucx_topo_t *)c->topo; /* borrowed: not destroyed below */
    if (run.rk == NULL ||
        (c->topo == NULL && glucx_topo_create_uniform(n, 1, &run.topo) != GLUCX_OK) ||
        glucx_fake_world_create(n, &w) != GLUCX_OK)
        goto out;
    const int runs = c->expect == GLUCX_OK && c->kill_rank < 0 ? 2 : 1;
    for (int it = 0; it < runs; it++) {
        if (case_prepare(&run) != 0)
            goto out;
        run.seq = 7 + (uint32_t)it;
        if (glucx_fake_run(w, case_rank_fn, &run) != 0)
            goto out;
        if (it == 0)
            for (int r = 0; r < n; r++) {
                uint64_t msgs[64], bytes[64];
                glucx_fake_stats(w, r, msgs, bytes);
                c->msgs_sent[r] = c->bytes_sent[r] = 0;
                for (int q = 0; q < n; q++) {
                    c->msgs_sent[r] += msgs[q];
                    c->bytes_sent[r] += bytes[q];
                    c->pair_bytes[r][q] = bytes[q];
                }
            }
        /* statuses: all equal to expect (or all UNSUPPORTED) */
        int unsupported = 0;
        for (int r = 0; r < n; r++)
            unsupported += run.rk[r].status == GLUCX_ERR_UNSUPPORTED;
        if (unsupported == n && c->expect == GLUCX_OK) {
            c->status = GLUCX_ERR_UNSUPPORTED;
            for (int r = 0; r < n; r++)
                if (c->bytes_sent[r] != 0) {
                    fprintf(stderr, "%s/%s: rank %d sent data before UNSUPPORTED\n",
                            glucx_coll_name(c->coll), c->alg, r);
                    goto out;
                }
            rc = 0;
            goto out;
        }
        c->n_expect = 0;
        for (int r = 0; r < n; r++) {
            if (r == c->kill_rank)
                continue;
            const glucx_status_t st = run.rk[r].status;
            c->n_expect += st == c->expect;
            if (st != c->expect && st != c->expect_alt) {
                fprintf(stderr, "%s/%s n=%d count=%zu: rank %d returned %s, want %s: %s\n",
                        glucx_coll_name(c->coll), c->alg, n, c->count, r, glucx_status_string(st),
                        glucx_status_string(c->expect), glucx_fake_tx(w, r)->failure);
                goto out;
            }
        }
        c->status = run.rk[c->kill_rank == 0 ? (n > 1 ? 1 : 0) : 0].status;
        if (c->expect != GLUCX_OK) {
            rc = 0;
            goto out;
        }
        if (case_check(&run) != 0)
            goto out;
        for (int r = 0; r < n; r++)
            if (glucx_fake_unexpected(w, r) != 0) {
                fprintf(stderr, "%s/%s n=%d count=%zu: %zu messages left unmatched at rank %d\n",
                        glucx_coll_name(c->coll), c->alg, n, c->count, glucx_fake_unexpected(w, r),
                        r);
                goto out;
            }
    }
    rc = 0;
out:
    glucx_fake_world_destroy(w);
    case_free(&run, n);
    return rc;
}

/* ---- sweeps ---- */

static int is_pow2(int n)
{
    return (n & (n - 1)) == 0;
}

void glucx_test_v_counts(int size, size_t base, size_t *counts)
{
    for (int r = 0; r < size; r++)
        counts[r] = (r % 4 == 2) ? 0 : base + (size_t)((r * 5) % 3);
}

void glucx_test_v_displs_scattered(int size, const size_t *counts, size_t *displs)
{
    size_t at = 3; /* leading gap */
    for (int r = size - 1; r >= 0; r--) {
        displs[r] = at;
        at += counts[r] + 2; /* gap after every block */
    }
}

static int run_expecting(glucx_test_case_t *c, int pow2_only)
{
    if (glucx_test_run_case(c) != 0)
        return 1;
    const glucx_status_t want = pow2_only && !is_pow2(c->size) ? GLUCX_ERR_UNSUPPORTED : GLUCX_OK;
    if (c->status != want) {
        fprintf(stderr, "%s/%s n=%d: status %s, want %s\n", glucx_coll_name(c->coll), c->alg,
                c->size, glucx_status_string(c->status), glucx_status_string(want));
        return 1;
    }
    return 0;
}

int glucx_test_sweep_sizes(glucx_coll_t coll, const char *alg, int max_size, int large,
                           int pow2_only)
{
    const int reducing = coll == GLUCX_COLL_ALLREDUCE || coll == GLUCX_COLL_REDUCE_SCATTER;
    int fails = 0;
    for (int n = 1; n <= max_size; n++) {
        /* 700001 f32 makes blocks of several ring segments (GLUCX_COLL_RING_SEG_BYTES) */
        size_t counts[7] = {0, 1, (size_t)n - 1, 17, 1000, 100003, 700001};
        int ncounts = 5;
        if (large && (n == 2 || n == 3 || n == 5 || n == 8))
            ncounts = n <= 3 ? 7 : 6;
        for (int ci = 0; ci < ncounts; ci++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                glucx_test_case_t c;
                glucx_test_case_init(&c, coll, alg, n, counts[ci],
                                     reducing ? GLUCX_DTYPE_F32 : GLUCX_DTYPE_I32, GLUCX_OP_SUM);
                c.in_place = in_place;
                c.seed = (uint64_t)(n * 100 + ci * 2 + in_place);
                size_t vc[64], vd[64];
                if (coll == GLUCX_COLL_ALLGATHERV) {
                    glucx_test_v_counts(n, counts[ci], vc);
                    c.counts = vc;
                    if ((ci + in_place) % 2) {
                        glucx_test_v_displs_scattered(n, vc, vd);
                        c.displs = vd;
                    }
                }
                if (run_expecting(&c, pow2_only) != 0) {
                    fprintf(stderr, "  (case n=%d count=%zu in_place=%d)\n", n, counts[ci],
                            in_place);
                    fails++;
                }
            }
        }
    }
    return fails;
}

int glucx_test_sweep_dtypes(glucx_coll_t coll, const char *alg, int size, size_t count)
{
    const int reducing = coll == GLUCX_COLL_ALLREDUCE || coll == GLUCX_COLL_REDUCE_SCATTER;
    int fails = 0, k = 0;
    for (int dt = 0; dt < GLUCX_DTYPE_COUNT; dt++) {
        for (int op = 0; op < GLUCX_OP_COUNT; op++) {
            if (!reducing && op != GLUCX_OP_SUM)
                continue;
            if (reducing && !glucx_op_supported((glucx_op_t)op, (glucx_dtype_t)dt))
                continue;
            glucx_test_case_t c;
            glucx_test_case_init(&c, coll, alg, size, count, (glucx_dtype_t)dt, (glucx_op_t)op);
            c.in_place = k++ % 2;
            c.seed = (uint64_t)(dt * 31 + op);
            size_t vc[64];
            if (coll == GLUCX_COLL_ALLGATHERV) {
                glucx_test_v_counts(size, count, vc);
                c.counts = vc;
            }
            if (glucx_test_run_case(&c) != 0 || c.status != GLUCX_OK) {
                fprintf(stderr, "  (case %s %s n=%d count=%zu in_place=%d: %s)\n",
                        glucx_dtype_name(c.dtype), glucx_op_name(c.op), size, count, c.in_place,
                        glucx_status_string(c.status));
                fails++;
            }
        }
    }
    return fails;
}

int glucx_test_sweep_random(glucx_coll_t coll, const char *alg, int size, size_t count)
{
    static const glucx_dtype_t dts[] = {GLUCX_DTYPE_F16, GLUCX_DTYPE_BF16, GLUCX_DTYPE_F32,
                                        GLUCX_DTYPE_F64};
    static const glucx_op_t ops[] = {GLUCX_OP_SUM, GLUCX_OP_AVG};
    int fails = 0;
    for (size_t i = 0; i < sizeof(dts) / sizeof(dts[0]); i++)
        for (size_t j = 0; j < sizeof(ops) / sizeof(ops[0]); j++) {
            glucx_test_case_t c;
            glucx_test_case_init(&c, coll, alg, size, count, dts[i], ops[j]);
            c.random = 1;
            c.in_place = (int)((i + j) % 2);
            c.seed = 99 + i * 7 + j;
            size_t vc[64];
            if (coll == GLUCX_COLL_ALLGATHERV) {
                glucx_test_v_counts(size, count, vc);
                c.counts = vc;
            }
            if (glucx_test_run_case(&c) != 0 || c.status != GLUCX_OK) {
                fprintf(stderr, "  (random case %s %s n=%d count=%zu)\n", glucx_dtype_name(dts[i]),
                        glucx_op_name(ops[j]), size, count);
                fails++;
            }
        }
    return fails;
}
