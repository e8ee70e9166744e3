/*
 * glucx-bench: collective benchmark in the style of nccl-tests, and link calibration.
 *
 *   glucx-bench --ranks 2 --coll allreduce -b 1K -e 16M -f 2 [--algo NAME] [--dtype f32]
 *               [--op sum] [--iters N] [--warmup N] [--check 0|1] [--root R] [--timeout-ms T]
 *   glucx-bench --ranks 2 --calibrate FILE
 *   glucx-bench --ranks 2 --put -b 8 -e 16M [--iters N]
 *   glucx-bench --ranks 4 --validate [--coll C] [-b MIN] [-e MAX] [-f F] [--json FILE]
 *
 * With --ranks N the tool forks N local ranks before anything touches UCX and gives them a file
 * store in a temporary directory (removed afterwards). Without it, rank and size come from the
 * launcher's variables (torchrun, mpirun, PMI) and the store from GLUCX_STORE.
 *
 * Rank 0 prints one row per message size: size (bytes, as nccl-tests counts them), count,
 * type, redop, algorithm, time (us), algbw and busbw (GB/s) and the number of wrong elements.
 * The result check compares against values each rank computes itself from the same generator
 * (never from the library's output), in double precision with naive rank-order folds.
 *
 * --validate runs every algorithm of the collective's table at every size (forced as --algo
 * forces one) and prints, per algorithm and size, the measured time next to the time the
 * algorithm's cost function predicts on the communicator's topology, and their error.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <glucx/glucx.h>

#include "coll/coll.h"     /* the algorithm tables, to check --algo before starting ranks */
#include "core/core.h"     /* comm->topo: the package map, for --calibrate */
#include "kernel/reduce.h" /* the f32 sum kernel, timed by --calibrate */
#include "topo/topo.h"

#include "common/bench_util.h"
#include "common/local_ranks.h"

/* ------------------------------------------------------------------------------------------ */
/* Options                                                                                    */

typedef struct bench_opts {
    int ranks; /**< > 0: fork this many local ranks; 0: take rank/size from launcher */
    glucx_coll_t coll;
    const char *algo; /**< NULL: let glucx select */
    glucx_dtype_t dtype;
    glucx_op_t op;
    size_t min_bytes;
    size_t max_bytes;
    size_t factor;
    long iters;  /**< <= 0: by size (see iters_for) */
    long warmup; /**< < 0: by iters */
    int check;
    int root;
    int64_t timeout_ms;
    const char *calibrate; /**< output file of --calibrate, or NULL */
    int put;               /**< --put: window put ping-pong, plain against GLUCX_PUT_SYNC */
    int validate;          /**< --validate: every algorithm, measured against predicted */
    const char *json;      /**< --json FILE of --validate, or NULL */
    const char *name;      /**< communicator name (store key prefix) */
} bench_opts_t;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: glucx-bench [--ranks N] [--coll C] [-b MIN] [-e MAX] [-f FACTOR] [--algo NAME]\n"
        "                   [--dtype T] [--op O] [--iters N] [--warmup N] [--check 0|1]\n"
        "                   [--root R] [--timeout-ms MS] [--name NAME]\n"
        "       glucx-bench [--ranks N] --calibrate FILE\n"
        "       glucx-bench [--ranks N] --put [-b MIN] [-e MAX] [-f FACTOR] [--iters N]\n"
        "       glucx-bench [--ranks N] --validate [--coll C] [-b MIN] [-e MAX] [-f FACTOR]\n"
        "                   [--algo NAME] [--iters N] [--warmup N] [--check 0|1] [--json FILE]\n"
        "\n"
        "  -N, --ranks N        fork N local ranks (file store in a temporary directory);\n"
        "                       without it: RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/SIZE or\n"
        "                       PMI_RANK/PMI_SIZE, and the store from GLUCX_STORE\n"
        "  -C, --coll C         allreduce (default), allgather, allgatherv, reduce_scatter,\n"
        "                       alltoall, alltoallv, broadcast, reduce, gather, scatter, barrier\n"
        "  -b, --minbytes SIZE  smallest message size in bytes, K/M/G suffixes (default 1K)\n"
        "  -e, --maxbytes SIZE  largest message size (default 16M)\n"
        "  -f, --stepfactor F   multiply the size by F each step, F >= 2 (default 2)\n"
        "  -a, --algo NAME      force an algorithm (glucx-info lists them)\n"
        "  -d, --dtype T        bool i8 u8 i32 i64 u64 f16 bf16 f32 f64 (default f32)\n"
        "  -o, --op O           sum prod min max avg band bor bxor (default sum)\n"
        "  -n, --iters N        timed iterations per size (default: 64 MiB / size, clamped to\n"
        "                       20..1000)\n"
        "  -w, --warmup N       untimed iterations first (default max(5, iters/10))\n"
        "  -c, --check 0|1      verify results after timing (default 1)\n"
        "  -r, --root R         root of broadcast, reduce, gather, scatter (default 0)\n"
        "  -T, --timeout-ms MS  per-operation timeout (default 60000)\n"
        "      --name NAME      communicator name, the key prefix in the store (default\n"
        "                       glucx-bench); use a fresh store or a new name per run\n"
        "      --calibrate FILE measure alpha/beta per link class, gamma (f32 sum) and copy\n"
        "                       cost, and write them as a GLUCX_CALIBRATION file; with\n"
        "                       GLUCX_TOPOLOGY, alpha/beta of each dimension (between rank 0\n"
        "                       and its neighbour along it), the classes following from them\n"
        "      --put            window puts between ranks 0 and 1 (glucx_iput into a window,\n"
        "                       the way Gloo's bound buffers send): a ping-pong per size, each\n"
        "                       side putting, waiting for its put, then for its window; plain\n"
        "                       puts and GLUCX_PUT_SYNC puts alternate in one run\n"
        "      --validate       the cost model against measurements: at each size, every\n"
        "                       algorithm of the collective's table in turn (forced as --algo\n"
        "                       forces one; --algo NAME: that one only), its measured time (the\n"
        "                       median of the timed iterations on each rank, the maximum over\n"
        "                       ranks), the time its cost function predicts on this\n"
        "                       communicator's topology (GLUCX_CALIBRATION, GLUCX_TOPOLOGY) and\n"
        "                       the error predicted/measured - 1; algorithms that decline a size\n"
        "                       (GLUCX_ERR_UNSUPPORTED) are reported and skipped; per algorithm\n"
        "                       the largest |error| at sizes >= 256K\n"
        "      --json FILE      with --validate: also write the results to FILE as JSON\n"
        "  -h, --help           this text\n"
        "\n"
        "size is in bytes as nccl-tests counts it: allreduce, broadcast, reduce: the vector;\n"
        "allgather(v), gather: the total output; reduce_scatter, alltoall(v), scatter: the\n"
        "total input. busbw = algbw x 2(n-1)/n for allreduce, (n-1)/n for allgather(v),\n"
        "reduce_scatter, alltoall(v), gather, scatter, and 1 for broadcast and reduce.\n");
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_coll(const char *s, glucx_coll_t *out)
{
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        if (strcmp(s, glucx_coll_name((glucx_coll_t)c)) == 0) {
            *out = (glucx_coll_t)c;
            return 0;
        }
    }
    return -1;
}

static int parse_dtype(const char *s, glucx_dtype_t *out)
{
    for (int d = 0; d < GLUCX_DTYPE_COUNT; d++) {
        if (strcmp(s, glucx_dtype_name((glucx_dtype_t)d)) == 0) {
            *out = (glucx_dtype_t)d;
            return 0;
        }
    }
    return -1;
}

static int parse_op(const char *s, glucx_op_t *out)
{
    for (int o = 0; o < GLUCX_OP_COUNT; o++) {
        if (strcmp(s, glucx_op_name((glucx_op_t)o)) == 0) {
            *out = (glucx_op_t)o;
            return 0;
        }
    }
    return -1;
}

static int bad_arg(const char *what, const char *value)
{
    fprintf(stderr, "glucx-bench: invalid %s '%s'\n\n", what, value);
    usage(stderr);
    return 2;
}

/* @return 0, 2 on a bad argument (usage printed), or -1 after --help. */
static int parse_args(int argc, char **argv, bench_opts_t *o)
{
    enum { OPT_NAME = 256, OPT_CALIBRATE, OPT_PUT, OPT_VALIDATE, OPT_JSON };
    static const struct option longopts[] = {
        {"ranks", required_argument, NULL, 'N'},
        {"coll", required_argument, NULL, 'C'},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"algo", required_argument, NULL, 'a'},
        {"dtype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"root", required_argument, NULL, 'r'},
        {"timeout-ms", required_argument, NULL, 'T'},
        {"name", required_argument, NULL, OPT_NAME},
        {"calibrate", required_argument, NULL, OPT_CALIBRATE},
        {"put", no_argument, NULL, OPT_PUT},
        {"validate", no_argument, NULL, OPT_VALIDATE},
        {"json", required_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (bench_opts_t){
        .ranks = 0,
        .coll = GLUCX_COLL_ALLREDUCE,
        .dtype = GLUCX_DTYPE_F32,
        .op = GLUCX_OP_SUM,
        .min_bytes = 1024,
        .max_bytes = 16u << 20,
        .factor = 2,
        .iters = 0,
        .warmup = -1,
        .check = 1,
        .root = 0,
        .timeout_ms = 60000,
        .name = "glucx-bench",
    };
    int op_given = 0;
    int c;
    long v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":N:C:b:e:f:a:d:o:n:w:c:r:T:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'N':
            if (parse_long(optarg, 1, GLUCX_COMM_SIZE_MAX, &v) != 0)
                return bad_arg("--ranks", optarg);
            o->ranks = (int)v;
            break;
        case 'C':
            if (parse_coll(optarg, &o->coll) != 0)
                return bad_arg("--coll", optarg);
            break;
        case 'b':
            if (glucx_tool_parse_size(optarg, &o->min_bytes) != 0)
                return bad_arg("-b size", optarg);
            break;
        case 'e':
            if (glucx_tool_parse_size(optarg, &o->max_bytes) != 0)
                return bad_arg("-e size", optarg);
            break;
        case 'f':
            if (parse_long(optarg, 2, 1 << 20, &v) != 0)
                return bad_arg("-f factor (an integer >= 2)", optarg);
            o->factor = (size_t)v;
            break;
        case 'a':
            if (optarg[0] == '\0')
                return bad_arg("--algo", optarg);
            o->algo = optarg;
            break;
        case 'd':
            if (parse_dtype(optarg, &o->dtype) != 0)
                return bad_arg("--dtype", optarg);
            break;
        case 'o':
            if (parse_op(optarg, &o->op) != 0)
                return bad_arg("--op", optarg);
            op_given = 1;
            break;
        case 'n':
            if (parse_long(optarg, 1, 100000000, &o->iters) != 0)
                return bad_arg("--iters", optarg);
            break;
        case 'w':
            if (parse_long(optarg, 0, 100000000, &o->warmup) != 0)
                return bad_arg("--warmup", optarg);
            break;
        case 'c':
            if (parse_long(optarg, 0, 1, &v) != 0)
                return bad_arg("--check (0 or 1)", optarg);
            o->check = (int)v;
            break;
        case 'r':
            if (parse_long(optarg, 0, GLUCX_COMM_SIZE_MAX - 1, &v) != 0)
                return bad_arg("--root", optarg);
            o->root = (int)v;
            break;
        case 'T':
            if (parse_long(optarg, 1, 86400000, &v) != 0)
                return bad_arg("--timeout-ms", optarg);
            o->timeout_ms = v;
            break;
        case OPT_NAME:
            if (optarg[0] == '\0' || strchr(optarg, '/') != NULL)
                return bad_arg("--name", optarg);
            o->name = optarg;
            break;
        case OPT_CALIBRATE:
            if (optarg[0] == '\0')
                return bad_arg("--calibrate file", optarg);
            o->calibrate = optarg;
            break;
        case OPT_PUT:
            o->put = 1;
            break;
        case OPT_VALIDATE:
            o->validate = 1;
            break;
        case OPT_JSON:
            if (optarg[0] == '\0')
                return bad_arg("--json file", optarg);
            o->json = optarg;
            break;
        case 'h':
            usage(stdout);
            return -1;
        case ':':
            fprintf(stderr, "glucx-bench: option '%s' needs a value\n\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        default:
            fprintf(stderr, "glucx-bench: unknown option '%s'\n\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc)
        return bad_arg("argument", argv[optind]);
    if (o->validate + o->put + (o->calibrate != NULL) > 1) {
        fprintf(stderr, "glucx-bench: --validate, --put and --calibrate are separate modes; "
                        "choose one\n\n");
        usage(stderr);
        return 2;
    }
    if (o->json != NULL && !o->validate)
        return bad_arg("--json without --validate: file", o->json);
    if (o->algo != NULL) {
        /* catch a misspelt name here, before any rank starts */
        const glucx_coll_table_t *t = glucx_coll_tables[o->coll];
        int found = 0;
        for (int i = 0; i < t->count && !found; i++)
            found = strcmp(t->algs[i].name, o->algo) == 0;
        if (!found) {
            fprintf(stderr,
                    "glucx-bench: %s has no algorithm '%s'; it has:", glucx_coll_name(o->coll),
                    o->algo);
            for (int i = 0; i < t->count; i++)
                fprintf(stderr, " %s", t->algs[i].name);
            fprintf(stderr, "\n\n");
            usage(stderr);
            return 2;
        }
    }
    if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, "glucx-bench: -b %zu is larger than -e %zu\n\n", o->min_bytes,
                o->max_bytes);
        usage(stderr);
        return 2;
    }
    int reduces = o->coll == GLUCX_COLL_ALLREDUCE || o->coll == GLUCX_COLL_REDUCE ||
                  o->coll == GLUCX_COLL_REDUCE_SCATTER;
    if (reduces && !glucx_op_supported(o->op, o->dtype)) {
        fprintf(stderr, "glucx-bench: op %s is not defined on dtype %s\n\n", glucx_op_name(o->op),
                glucx_dtype_name(o->dtype));
        usage(stderr);
        return 2;
    }
    if (!reduces && op_given)
        fprintf(stderr, "glucx-bench: note: --op is ignored by %s\n", glucx_coll_name(o->coll));
    if (o->ranks > 0 && o->root >= o->ranks) {
        fprintf(stderr, "glucx-bench: --root %d is not below --ranks %d\n\n", o->root, o->ranks);
        usage(stderr);
        return 2;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Element values: generators, encoders, and the independent reference                        */

static int is_reduction(glucx_coll_t c)
{
    return c == GLUCX_COLL_ALLREDUCE || c == GLUCX_COLL_REDUCE || c == GLUCX_COLL_REDUCE_SCATTER;
}

static int dtype_signed(glucx_dtype_t d)
{
    return d != GLUCX_DTYPE_BOOL && d != GLUCX_DTYPE_U8 && d != GLUCX_DTYPE_U64;
}

static uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a * UINT64_C(0x9e3779b97f4a7c15) ^
                 (b + UINT64_C(0x632be59bd9b4e019)) * UINT64_C(0xbf58476d1ce4e5b9);
    h ^= c * UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    h *= UINT64_C(0xd6e8feb86969d8a5);
    h ^= h >> 29;
    return h;
}

/* Values of data-movement collectives are < modulus, exactly representable in the dtype. */
static uint64_t move_modulus(glucx_dtype_t d)
{
    switch (d) {
    case GLUCX_DTYPE_BOOL:
        return 2;
    case GLUCX_DTYPE_I8:
        return 100;
    case GLUCX_DTYPE_U8:
    case GLUCX_DTYPE_BF16:
        return 256;
    case GLUCX_DTYPE_F16:
        return 2048;
    default:
        return 1000003;
    }
}

/* Element @p i of the block that rank @p src sends to @p dst (dst = size for "to everyone"). */
static double move_value(glucx_dtype_t d, int src, int dst, size_t i)
{
    return (double)(mix3((uint64_t)src, (uint64_t)dst, i) % move_modulus(d));
}

/* Rank @p r's contribution to element @p i of a reduction: small integers, so that every fold
 * of up to a few dozen ranks is exact in every dtype (sums <= 3n, products 2, or bit ops). */
static double red_value(glucx_op_t op, glucx_dtype_t d, int r, size_t i, int n)
{
    uint64_t h = mix3((uint64_t)r, UINT64_C(0x5eed), i);
    int b = d == GLUCX_DTYPE_BOOL;
    switch (op) {
    case GLUCX_OP_SUM:
    case GLUCX_OP_AVG:
        return b ? (double)(h % 4 == 0) : (double)(h % 4);
    case GLUCX_OP_PROD:
        if (b)
            return (double)(h % 8 != 0);
        return (size_t)r == i % (size_t)n ? 2.0 : 1.0;
    case GLUCX_OP_MIN:
    case GLUCX_OP_MAX:
        if (b)
            return (double)(h % 2);
        return (double)(int64_t)(h % 11) - (dtype_signed(d) ? 5.0 : 0.0);
    default: /* BAND, BOR, BXOR */
        return b ? (double)(h % 2) : (double)(h % 128);
    }
}

static double fold(glucx_op_t op, glucx_dtype_t d, double a, double b)
{
    int is_bool = d == GLUCX_DTYPE_BOOL;
    switch (op) {
    case GLUCX_OP_SUM:
        return is_bool ? (double)(a != 0 || b != 0) : a + b;
    case GLUCX_OP_AVG:
        return a + b;
    case GLUCX_OP_PROD:
        return is_bool ? (double)(a != 0 && b != 0) : a * b;
    case GLUCX_OP_MIN:
        return a < b ? a : b;
    case GLUCX_OP_MAX:
        return a > b ? a : b;
    case GLUCX_OP_BAND:
        return (double)((int64_t)a & (int64_t)b);
    case GLUCX_OP_BOR:
        return (double)((int64_t)a | (int64_t)b);
    default:
        return (double)((int64_t)a ^ (int64_t)b);
    }
}

/* The reference result of element i: a naive fold in rank order, in double precision. */
static double red_expected(glucx_op_t op, glucx_dtype_t d, size_t i, int n)
{
    double acc = red_value(op, d, 0, i, n);
    for (int r = 1; r < n; r++)
        acc = fold(op, d, acc, red_value(op, d, r, i, n));
    if (op == GLUCX_OP_AVG)
        acc /= n;
    return acc;
}

/* Encoders for the integer values above (exact for |v| < 2048 in f16, |v| <= 256 in bf16),
 * written here rather than taken from the library so the check stays independent. */
static uint16_t f16_from_int(double v)
{
    uint16_t sign = v < 0 ? 0x8000 : 0;
    uint32_t m = (uint32_t)fabs(v);
    if (m == 0)
        return sign;
    int e = 0;
    while ((m >> (e + 1)) != 0)
        e++;
    uint32_t mant = ((m << 10) >> e) & 0x3ff;
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | mant);
}

static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    int m = h & 0x3ff;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0)
        return s * ldexp(m, -24);
    if (e == 31)
        return m ? NAN : s * INFINITY;
    return s * ldexp(m | 0x400, e - 25);
}

static uint16_t bf16_from_int(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return (uint16_t)(u >> 16);
}

static double bf16_to_double(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static void put_elem(glucx_dtype_t d, void *buf, size_t i, double v)
{
    char *p = (char *)buf;
    switch (d) {
    case GLUCX_DTYPE_BOOL:
    case GLUCX_DTYPE_U8: {
        uint8_t x = (uint8_t)v;
        memcpy(p + i, &x, 1);
        break;
    }
    case GLUCX_DTYPE_I8: {
        int8_t x = (int8_t)v;
        memcpy(p + i, &x, 1);
        break;
    }
    case GLUCX_DTYPE_I32: {
        int32_t x = (int32_t)v;
        memcpy(p + 4 * i, &x, 4);
        break;
    }
    case GLUCX_DTYPE_I64: {
        int64_t x = (int64_t)v;
        memcpy(p + 8 * i, &x, 8);
        break;
    }
    case GLUCX_DTYPE_U64: {
        uint64_t x = (uint64_t)v;
        memcpy(p + 8 * i, &x, 8);
        break;
    }
    case GLUCX_DTYPE_F16: {
        uint16_t x = f16_from_int(v);
        memcpy(p + 2 * i, &x, 2);
        break;
    }
    case GLUCX_DTYPE_BF16: {
        uint16_t x = bf16_from_int(v);
        memcpy(p + 2 * i, &x, 2);
        break;
    }
    case GLUCX_DTYPE_F32: {
        float x = (float)v;
        memcpy(p + 4 * i, &x, 4);
        break;
    }
    default: {
        double x = v;
        memcpy(p + 8 * i, &x, 8);
        break;
    }
    }
}

static double get_elem(glucx_dtype_t d, const void *buf, size_t i)
{
    const char *p = (const char *)buf;
    switch (d) {
    case GLUCX_DTYPE_BOOL:
    case GLUCX_DTYPE_U8: {
        uint8_t x;
        memcpy(&x, p + i, 1);
        return x;
    }
    case GLUCX_DTYPE_I8: {
        int8_t x;
        memcpy(&x, p + i, 1);
        return x;
    }
    case GLUCX_DTYPE_I32: {
        int32_t x;
        memcpy(&x, p + 4 * i, 4);
        return x;
    }
    case GLUCX_DTYPE_I64: {
        int64_t x;
        memcpy(&x, p + 8 * i, 8);
        return (double)x;
    }
    case GLUCX_DTYPE_U64: {
        uint64_t x;
        memcpy(&x, p + 8 * i, 8);
        return (double)x;
    }
    case GLUCX_DTYPE_F16: {
        uint16_t x;
        memcpy(&x, p + 2 * i, 2);
        return f16_to_double(x);
    }
    case GLUCX_DTYPE_BF16: {
        uint16_t x;
        memcpy(&x, p + 2 * i, 2);
        return bf16_to_double(x);
    }
    case GLUCX_DTYPE_F32: {
        float x;
        memcpy(&x, p + 4 * i, 4);
        return x;
    }
    default: {
        double x;
        memcpy(&x, p + 8 * i, 8);
        return x;
    }
    }
}

/* Exact except for AVG, whose division rounds in the dtype (twice for f16/bf16: via f32). */
static int same(glucx_dtype_t d, glucx_op_t op, double got, double want, int reduction)
{
    if (!reduction || op != GLUCX_OP_AVG)
        return got == want;
    double tol = d == GLUCX_DTYPE_BF16 ? 1e-2 : d == GLUCX_DTYPE_F16 ? 2e-3 : 1e-6;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* ------------------------------------------------------------------------------------------ */
/* One benchmark size: arguments, inputs, verification                                        */

typedef struct layout {
    glucx_coll_args_t args;
    size_t bytes;                                /**< reported size */
    size_t *counts, *displs, *scounts, *sdispls; /**< [n] for the v variants */
} layout_t;

/* Uneven but balanced blocks for the v variants: c +- c/4 alternating, when n is even (the
 * total stays n*c); equal blocks when n is odd. Symmetric in (i, j). */
static size_t vcount(size_t c, int n, int i, int j)
{
    if (n % 2 != 0)
        return c;
    size_t q = c / 4;
    return ((i + j) % 2 == 0) ? c + q : c - q;
}

static void layout_make(const bench_opts_t *o, int me, int n, size_t size, void *send, void *recv,
                        layout_t *l)
{
    size_t es = glucx_dtype_size(o->dtype);
    size_t elems = size / es;
    glucx_coll_args_t *a = &l->args;
    *a = (glucx_coll_args_t){.coll = o->coll,
                             .sendbuf = send,
                             .recvbuf = recv,
                             .dtype = o->dtype,
                             .op = o->op,
                             .root = o->root};
    switch (o->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_BROADCAST:
    case GLUCX_COLL_REDUCE:
        a->count = elems;
        l->bytes = elems * es;
        if (o->coll == GLUCX_COLL_BROADCAST)
            a->sendbuf = NULL;
        break;
    case GLUCX_COLL_BARRIER:
        l->bytes = 0;
        a->sendbuf = NULL;
        a->recvbuf = NULL;
        break;
    case GLUCX_COLL_ALLGATHERV: {
        size_t c = elems / (size_t)n, off = 0;
        for (int r = 0; r < n; r++) {
            l->counts[r] = vcount(c, n, r, 0);
            l->displs[r] = off;
            off += l->counts[r];
        }
        a->counts = l->counts;
        a->displs = l->displs;
        l->bytes = off * es;
        break;
    }
    case GLUCX_COLL_ALLTOALLV: {
        size_t c = elems / (size_t)n, soff = 0, roff = 0;
        for (int r = 0; r < n; r++) {
            l->scounts[r] = vcount(c, n, me, r);
            l->sdispls[r] = soff;
            soff += l->scounts[r];
            l->counts[r] = vcount(c, n, r, me);
            l->displs[r] = roff;
            roff += l->counts[r];
        }
        a->send_counts = l->scounts;
        a->send_displs = l->sdispls;
        a->counts = l->counts;
        a->displs = l->displs;
        l->bytes = roff * es;
        break;
    }
    default: /* allgather, reduce_scatter, alltoall, gather, scatter: equal blocks */
        a->count = elems / (size_t)n;
        l->bytes = a->count * (size_t)n * es;
        break;
    }
}

/* Bytes of the output this rank must see written (poisoned before the checked run). */
static size_t output_elems(const layout_t *l, int me, int n)
{
    const glucx_coll_args_t *a = &l->args;
    switch (a->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_BROADCAST:
        return a->count;
    case GLUCX_COLL_REDUCE:
        return me == a->root ? a->count : 0;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_ALLTOALL:
        return a->count * (size_t)n;
    case GLUCX_COLL_GATHER:
        return me == a->root ? a->count * (size_t)n : 0;
    case GLUCX_COLL_REDUCE_SCATTER:
    case GLUCX_COLL_SCATTER:
        return a->count;
    case GLUCX_COLL_ALLGATHERV:
    case GLUCX_COLL_ALLTOALLV:
        return n > 0 ? a->displs[n - 1] + a->counts[n - 1] : 0;
    default:
        return 0;
    }
}

static void fill_inputs(const layout_t *l, int me, int n, void *send, void *recv)
{
    const glucx_coll_args_t *a = &l->args;
    glucx_dtype_t d = a->dtype;
    size_t c = a->count;
    switch (a->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_REDUCE:
        for (size_t i = 0; i < c; i++)
            put_elem(d, send, i, red_value(a->op, d, me, i, n));
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
        for (size_t i = 0; i < c * (size_t)n; i++)
            put_elem(d, send, i, red_value(a->op, d, me, i, n));
        break;
    case GLUCX_COLL_BROADCAST:
        if (me == a->root)
            for (size_t i = 0; i < c; i++)
                put_elem(d, recv, i, move_value(d, a->root, n, i));
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_GATHER:
        for (size_t i = 0; i < c; i++)
            put_elem(d, send, i, move_value(d, me, n, i));
        break;
    case GLUCX_COLL_ALLGATHERV:
        for (size_t i = 0; i < a->counts[me]; i++)
            put_elem(d, send, i, move_value(d, me, n, i));
        break;
    case GLUCX_COLL_SCATTER:
        if (me == a->root)
            for (int r = 0; r < n; r++)
                for (size_t i = 0; i < c; i++)
                    put_elem(d, send, (size_t)r * c + i, move_value(d, me, r, i));
        break;
    case GLUCX_COLL_ALLTOALL:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < c; i++)
                put_elem(d, send, (size_t)r * c + i, move_value(d, me, r, i));
        break;
    case GLUCX_COLL_ALLTOALLV:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < a->send_counts[r]; i++)
                put_elem(d, send, a->send_displs[r] + i, move_value(d, me, r, i));
        break;
    default:
        break;
    }
}

/* Overwrite the output with a pattern no expected value has (0xa5 bytes). */
static void poison_outputs(const layout_t *l, int me, int n, void *recv)
{
    if (l->args.coll == GLUCX_COLL_BROADCAST && me == l->args.root)
        return; /* the root's buffer is the input */
    memset(recv, 0xa5, output_elems(l, me, n) * glucx_dtype_size(l->args.dtype));
}

/* Number of output elements of this rank that differ from the reference. */
static size_t verify(const layout_t *l, int me, int n, const void *recv)
{
    const glucx_coll_args_t *a = &l->args;
    glucx_dtype_t d = a->dtype;
    glucx_op_t op = a->op;
    size_t c = a->count, wrong = 0;
    int red = is_reduction(a->coll);
#define CHECK_(idx, want)                                                                          \
    do {                                                                                           \
        if (!same(d, op, get_elem(d, recv, (idx)), (want), red))                                   \
            wrong++;                                                                               \
    } while (0)
    switch (a->coll) {
    case GLUCX_COLL_ALLREDUCE:
        for (size_t i = 0; i < c; i++)
            CHECK_(i, red_expected(op, d, i, n));
        break;
    case GLUCX_COLL_REDUCE:
        if (me == a->root)
            for (size_t i = 0; i < c; i++)
                CHECK_(i, red_expected(op, d, i, n));
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
        for (size_t i = 0; i < c; i++)
            CHECK_(i, red_expected(op, d, (size_t)me * c + i, n));
        break;
    case GLUCX_COLL_BROADCAST:
        for (size_t i = 0; i < c; i++)
            CHECK_(i, move_value(d, a->root, n, i));
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_GATHER:
        if (a->coll == GLUCX_COLL_ALLGATHER || me == a->root)
            for (int r = 0; r < n; r++)
                for (size_t i = 0; i < c; i++)
                    CHECK_((size_t)r * c + i, move_value(d, r, n, i));
        break;
    case GLUCX_COLL_ALLGATHERV:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < a->counts[r]; i++)
                CHECK_(a->displs[r] + i, move_value(d, r, n, i));
        break;
    case GLUCX_COLL_SCATTER:
        for (size_t i = 0; i < c; i++)
            CHECK_(i, move_value(d, a->root, me, i));
        break;
    case GLUCX_COLL_ALLTOALL:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < c; i++)
                CHECK_((size_t)r * c + i, move_value(d, r, me, i));
        break;
    case GLUCX_COLL_ALLTOALLV:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < a->counts[r]; i++)
                CHECK_(a->displs[r] + i, move_value(d, r, me, i));
        break;
    default:
        break;
    }
#undef CHECK_
    return wrong;
}

static double bus_factor(glucx_coll_t c, int n)
{
    switch (c) {
    case GLUCX_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case GLUCX_COLL_BROADCAST:
    case GLUCX_COLL_REDUCE:
        return 1.0;
    case GLUCX_COLL_BARRIER:
        return 0.0;
    default:
        return (double)(n - 1) / n;
    }
}

static const char *bus_factor_text(glucx_coll_t c)
{
    switch (c) {
    case GLUCX_COLL_ALLREDUCE:
        return "2(n-1)/n";
    case GLUCX_COLL_BROADCAST:
    case GLUCX_COLL_REDUCE:
        return "1";
    case GLUCX_COLL_BARRIER:
        return "none (no data)";
    default:
        return "(n-1)/n";
    }
}

/* Default iteration count: about 64 MiB of traffic per size, between 20 and 1000 calls.
 * scripts/bench/mpi_coll.c and torch_gloo.py use the same rule. */
static long iters_for(const bench_opts_t *o, size_t bytes)
{
    if (o->iters > 0)
        return o->iters;
    size_t it = (64u << 20) / (bytes > 0 ? bytes : 1);
    return it < 20 ? 20 : it > 1000 ? 1000 : (long)it;
}

static long warmup_for(const bench_opts_t *o, long iters)
{
    if (o->warmup >= 0)
        return o->warmup;
    return iters / 10 > 5 ? iters / 10 : 5;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Tell the --ranks parent that this rank is alive (it kills ranks that stop progressing). */
static int progress_fd = -1;
static void note_progress(void)
{
    if (progress_fd >= 0) {
        char b = 0;
        ssize_t rc = write(progress_fd, &b, 1);
        (void)rc; /* a full pipe already tells the parent we are alive */
    }
}

static int rank_fail(int rank, const char *what, glucx_status_t st)
{
    fprintf(stderr, "glucx-bench: rank %d: %s failed: %s: %s\n", rank, what,
            glucx_status_string(st), glucx_last_error());
    return 1;
}

static void print_header(const bench_opts_t *o, glucx_comm_t *comm)
{
    int n = glucx_comm_size(comm);
    printf("# glucx-bench: glucx %s, %s, %d ranks, dtype %s", glucx_version(),
           glucx_coll_name(o->coll), n, glucx_dtype_name(o->dtype));
    if (is_reduction(o->coll))
        printf(", op %s", glucx_op_name(o->op));
    if (o->coll == GLUCX_COLL_BROADCAST || o->coll == GLUCX_COLL_REDUCE ||
        o->coll == GLUCX_COLL_GATHER || o->coll == GLUCX_COLL_SCATTER)
        printf(", root %d", o->root);
    printf(", check %d, timeout %" PRId64 " ms\n", o->check, o->timeout_ms);
    if (o->iters > 0)
        printf("# iterations: %ld timed", o->iters);
    else
        printf("# iterations: 64 MiB/size timed (20..1000)");
    if (o->warmup >= 0)
        printf(", %ld warmup\n", o->warmup);
    else
        printf(", max(5, iters/10) warmup\n");
    for (int p = 1; p < n && p <= 4; p++) {
        char tr[128] = "?";
        if (glucx_comm_peer_transport(comm, p, tr, sizeof(tr)) == GLUCX_OK)
            printf("# rank 0 -> rank %d: %s\n", p, tr);
    }
    printf("# size: bytes as nccl-tests counts them; count: elements in size\n");
    printf("# time: microseconds per call, averaged over the timed iterations on each rank, then "
           "the maximum over ranks\n");
    printf("# algbw = size/time, busbw = algbw x %s, in GB/s (1e9 B/s)\n",
           bus_factor_text(o->coll));
    printf("# #wrong: output elements that differ from the reference, summed over ranks "
           "(N/A without --check 1)\n");
    printf("#%11s %12s %6s %6s %-22s %11s %8s %8s %7s\n", "size", "count", "type", "redop", "algo",
           "time", "algbw", "busbw", "#wrong");
    fflush(stdout);
}

/**
 * With --check 1, run the collective of @p l once more on poisoned outputs and count the output
 * elements that differ from the reference on every rank (*wrong_all_p, the sum over ranks; 0
 * without --check). @p what names the operation in messages. @return 0, or 1 after printing the
 * failure.
 */
static int check_size(glucx_comm_t *comm, const bench_opts_t *o, const glucx_coll_opts_t *copts,
                      layout_t *l, void *recv, const char *what, int64_t *wrong_all_p)
{
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const glucx_coll_opts_t aux = {.field_mask = GLUCX_COLL_OPT_TIMEOUT,
                                   .timeout_ms = o->timeout_ms};
    *wrong_all_p = 0;
    if (!o->check)
        return 0;
    poison_outputs(l, me, n, recv);
    glucx_status_t st = glucx_coll(comm, &l->args, copts);
    if (st != GLUCX_OK)
        return rank_fail(me, what, st);
    int64_t wrong = (int64_t)verify(l, me, n, recv);
    if (wrong > 0)
        fprintf(stderr, "glucx-bench: rank %d: %s: %" PRId64 " wrong elements\n", me, what, wrong);
    st = glucx_allreduce(comm, &wrong, wrong_all_p, 1, GLUCX_DTYPE_I64, GLUCX_OP_SUM, &aux);
    if (st != GLUCX_OK)
        return rank_fail(me, "allreduce of the error counts", st);
    return 0;
}

/* Time and check one size. On success *t_max_p is the row's time (us) and *wrong_all_p the
 * wrong elements of all ranks. @return 0, or 1 after printing the failure. */
static int bench_size(glucx_comm_t *comm, const bench_opts_t *o, const glucx_coll_opts_t *copts,
                      layout_t *l, void *send, void *recv, double *t_max_p, int64_t *wrong_all_p)
{
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    /* the barrier and the reductions of timings and error counts use glucx's own choice */
    const glucx_coll_opts_t aux = {.field_mask = GLUCX_COLL_OPT_TIMEOUT,
                                   .timeout_ms = o->timeout_ms};
    long iters = iters_for(o, l->bytes), warmup = warmup_for(o, iters);
    char what[96];
    snprintf(what, sizeof(what), "%s of %zu bytes", glucx_coll_name(o->coll), l->bytes);
    fill_inputs(l, me, n, send, recv);
    glucx_status_t st = GLUCX_OK;
    for (long w = 0; w < warmup && st == GLUCX_OK; w++)
        st = glucx_coll(comm, &l->args, copts);
    if (st != GLUCX_OK)
        return rank_fail(me, what, st);
    if ((st = glucx_barrier(comm, &aux)) != GLUCX_OK)
        return rank_fail(me, "barrier before timing", st);
    double t0 = now_us();
    for (long it = 0; it < iters && st == GLUCX_OK; it++)
        st = glucx_coll(comm, &l->args, copts);
    double t_us = (now_us() - t0) / (double)iters;
    if (st != GLUCX_OK)
        return rank_fail(me, what, st);
    st = glucx_allreduce(comm, &t_us, t_max_p, 1, GLUCX_DTYPE_F64, GLUCX_OP_MAX, &aux);
    if (st != GLUCX_OK)
        return rank_fail(me, "allreduce of the timings", st);
    return check_size(comm, o, copts, l, recv, what, wrong_all_p);
}

static void print_row(glucx_comm_t *comm, const bench_opts_t *o, const layout_t *l, double t_us,
                      int64_t wrong)
{
    const char *alg = o->algo;
    if (alg == NULL)
        alg = glucx_comm_algorithm(comm, o->coll, l->bytes);
    char wbuf[24];
    if (o->check)
        snprintf(wbuf, sizeof(wbuf), "%" PRId64, wrong);
    else
        snprintf(wbuf, sizeof(wbuf), "N/A");
    double algbw = t_us > 0 ? (double)l->bytes / (t_us * 1e3) : 0.0;
    printf("%12zu %12zu %6s %6s %-22s %11.2f", l->bytes, l->bytes / glucx_dtype_size(o->dtype),
           glucx_dtype_name(o->dtype), is_reduction(o->coll) ? glucx_op_name(o->op) : "none",
           alg != NULL ? alg : "?", t_us);
    if (o->coll == GLUCX_COLL_BARRIER)
        printf(" %8s %8s", "N/A", "N/A");
    else
        printf(" %8.3f %8.3f", algbw, algbw * bus_factor(o->coll, glucx_comm_size(comm)));
    printf(" %7s\n", wbuf);
    fflush(stdout);
}

static int bench(glucx_comm_t *comm, const bench_opts_t *o)
{
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    int rc = 1;
    glucx_coll_opts_t copts = {.field_mask = GLUCX_COLL_OPT_TIMEOUT, .timeout_ms = o->timeout_ms};
    if (o->algo != NULL) {
        copts.field_mask |= GLUCX_COLL_OPT_ALGORITHM;
        copts.algorithm = o->algo;
    }
    /* every input and output fits in max_bytes: sizes round down to whole blocks, and the
     * uneven v blocks of one rank never exceed the total */
    size_t cap = o->max_bytes + 4096;
    void *send = NULL, *recv = NULL;
    layout_t l = {0};
    l.counts = calloc((size_t)n, sizeof(size_t));
    l.displs = calloc((size_t)n, sizeof(size_t));
    l.scounts = calloc((size_t)n, sizeof(size_t));
    l.sdispls = calloc((size_t)n, sizeof(size_t));
    if (posix_memalign(&send, 4096, cap) != 0 || posix_memalign(&recv, 4096, cap) != 0 ||
        l.counts == NULL || l.displs == NULL || l.scounts == NULL || l.sdispls == NULL) {
        fprintf(stderr, "glucx-bench: rank %d: cannot allocate 2 x %zu bytes\n", me, cap);
        goto out;
    }
    memset(send, 0, cap); /* fault the pages in before timing */
    memset(recv, 0, cap);

    if (me == 0)
        print_header(o, comm);
    int64_t total_wrong = 0;
    size_t prev_bytes = SIZE_MAX;
    for (size_t s = o->min_bytes; s <= o->max_bytes;) {
        layout_make(o, me, n, s, send, recv, &l);
        size_t next = s == 0 ? 1 : (s > SIZE_MAX / o->factor ? SIZE_MAX : s * o->factor);
        int last = o->coll == GLUCX_COLL_BARRIER || next <= s || next > o->max_bytes;
        if (l.bytes != prev_bytes) { /* small sizes may round to the same row */
            prev_bytes = l.bytes;
            double t_us = 0;
            int64_t wrong = 0;
            if (bench_size(comm, o, &copts, &l, send, recv, &t_us, &wrong) != 0)
                goto out;
            total_wrong += wrong;
            if (me == 0)
                print_row(comm, o, &l, t_us, wrong);
            note_progress();
        }
        if (last)
            break;
        s = next;
    }
    if (me == 0 && o->check) {
        printf("# wrong elements in total: %" PRId64 " (%s)\n", total_wrong,
               total_wrong == 0 ? "OK" : "FAILED");
        fflush(stdout);
    }
    if (total_wrong != 0) {
        if (me == 0)
            fprintf(stderr, "glucx-bench: %" PRId64 " wrong elements\n", total_wrong);
        goto out;
    }
    rc = 0;
out:
    free(send);
    free(recv);
    free(l.counts);
    free(l.displs);
    free(l.scounts);
    free(l.sdispls);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* --calibrate                                                                                */

static glucx_status_t wait_free(glucx_request_t *req, int64_t timeout_ms)
{
    glucx_status_t st = glucx_request_wait(req, timeout_ms);
    glucx_request_free(req);
    return st;
}

/* @p iters round trips of @p bytes between @p me and @p peer; the initiator sends first.
 * *half_ns_p receives the one-way time (half the round trip), in ns, averaged. */
static glucx_status_t pingpong(glucx_comm_t *comm, int peer, int initiator, void *buf, size_t bytes,
                               int iters, int64_t timeout_ms, double *half_ns_p)
{
    const uint64_t tag = 0xca11b;
    glucx_request_t *req = NULL;
    glucx_status_t st = GLUCX_OK;
    double t0 = now_us();
    for (int k = 0; k < iters && st == GLUCX_OK; k++) {
        for (int phase = 0; phase < 2 && st == GLUCX_OK; phase++) {
            int sending = (phase == 0) == (initiator != 0);
            st = sending ? glucx_isend(comm, buf, bytes, peer, tag, &req)
                         : glucx_irecv(comm, buf, bytes, peer, tag, &req);
            if (st == GLUCX_OK)
                st = wait_free(req, timeout_ms);
        }
    }
    *half_ns_p = (now_us() - t0) * 1e3 / iters / 2;
    return st;
}

/* alpha (8-byte one-way time) and beta ((one-way time of 4 MiB - alpha) / 4 MiB) between me and
 * peer; the results are valid on the initiator. */
static glucx_status_t measure_link(glucx_comm_t *comm, int peer, int initiator, void *buf,
                                   int64_t timeout_ms, glucx_link_cost_t *cost_p)
{
    enum { REPS = 5 };
    const size_t big = 4u << 20;
    double small[REPS], large[REPS], dummy;
    glucx_status_t st = pingpong(comm, peer, initiator, buf, 8, 200, timeout_ms, &dummy);
    for (int r = 0; r < REPS && st == GLUCX_OK; r++)
        st = pingpong(comm, peer, initiator, buf, 8, 500, timeout_ms, &small[r]);
    if (st == GLUCX_OK)
        st = pingpong(comm, peer, initiator, buf, big, 2, timeout_ms, &dummy);
    for (int r = 0; r < REPS && st == GLUCX_OK; r++)
        st = pingpong(comm, peer, initiator, buf, big, 8, timeout_ms, &large[r]);
    if (st != GLUCX_OK)
        return st;
    double alpha = glucx_tool_median(small, REPS), t_big = glucx_tool_median(large, REPS);
    cost_p->alpha_ns = alpha;
    cost_p->beta_ns_per_byte = t_big > alpha ? (t_big - alpha) / (double)big : 0.0;
    note_progress();
    return GLUCX_OK;
}

/* ns per byte of one operand of the f32 sum kernel (dst = dst + src, 4 MiB operands), and of
 * memcpy (16 MiB): the best of 15 runs each. These are properties of the machine, so the best
 * run is taken: single runs vary by 3x here when other tenants share the cores. */
static int measure_local(double *gamma_p, double *copy_p)
{
    enum { REPS = 15 };
    const size_t rbytes = 4u << 20, cbytes = 16u << 20;
    float *a = NULL, *b = NULL;
    char *src = NULL, *dst = NULL;
    glucx_reduce_fn_t fn = glucx_kernel_reduce_fn(GLUCX_DTYPE_F32, GLUCX_OP_SUM);
    if (fn == NULL)
        return -1;
    if (posix_memalign((void **)&a, 64, rbytes) != 0 || posix_memalign((void **)&b, 64, rbytes) ||
        posix_memalign((void **)&src, 64, cbytes) || posix_memalign((void **)&dst, 64, cbytes)) {
        free(a);
        free(b);
        free(src);
        free(dst);
        return -1;
    }
    size_t nf = rbytes / sizeof(float);
    for (size_t i = 0; i < nf; i++) {
        a[i] = 0.0f;
        b[i] = (float)(i % 7);
    }
    memset(src, 1, cbytes);
    memset(dst, 0, cbytes);
    double t[REPS];
    fn(a, a, b, nf);
    for (int r = 0; r < REPS; r++) {
        double t0 = now_us();
        fn(a, a, b, nf);
        t[r] = (now_us() - t0) * 1e3 / (double)rbytes;
    }
    glucx_tool_sort(t, REPS);
    *gamma_p = t[0];
    memcpy(dst, src, cbytes);
    for (int r = 0; r < REPS; r++) {
        src[r] = (char)r; /* a different source each time, so no copy can be elided */
        double t0 = now_us();
        memcpy(dst, src, cbytes);
        t[r] = (now_us() - t0) * 1e3 / (double)cbytes;
        if (dst[r] != (char)r)
            t[r] = INFINITY;
    }
    glucx_tool_sort(t, REPS);
    *copy_p = t[0];
    free(a);
    free(b);
    free(src);
    free(dst);
    return 0;
}

/* The comm rank next to rank 0 along dimension @p d of the topology file (one hop: the
 * dimension-0 link for d = 0, a package's link of dimension d otherwise), or -1 when that rank is
 * not in the communicator or the dimension has one member. */
static int dim_partner(const glucx_topo_t *topo, int d)
{
    const glucx_net_t *net = topo->net;
    if (net->dim[d].size < 2)
        return -1;
    int c[GLUCX_NET_MAX_DIMS];
    glucx_net_coords(net, topo->net_rank[0], c);
    /* file rank of the neighbour: coordinate d one up (mod n), the others equal */
    long stride = 1;
    for (int k = 0; k < d; k++)
        stride *= net->dim[k].size;
    int next = (c[d] + 1) % net->dim[d].size;
    long target = topo->net_rank[0] + (long)(next - c[d]) * stride;
    for (int r = 1; r < topo->size; r++)
        if (topo->net_rank[r] == target)
            return r;
    return -1;
}

/* Measure between rank 0 and every partner[k] >= 0 in turn (a barrier after each), the results
 * in costs[k] on rank 0. @return 0, or a rank_fail status. */
static int measure_partners(glucx_comm_t *comm, const bench_opts_t *o, const int *partner,
                            int count, void *buf, glucx_link_cost_t *costs)
{
    const int me = glucx_comm_rank(comm);
    glucx_coll_opts_t copts = {.field_mask = GLUCX_COLL_OPT_TIMEOUT, .timeout_ms = o->timeout_ms};
    for (int k = 0; k < count; k++) {
        if (partner[k] < 0)
            continue;
        if (me == 0 || me == partner[k]) {
            glucx_status_t st = measure_link(comm, me == 0 ? partner[k] : 0, me == 0, buf,
                                             o->timeout_ms, &costs[k]);
            if (st != GLUCX_OK)
                return rank_fail(me, "calibration ping-pong", st);
        }
        glucx_status_t st = glucx_barrier(comm, &copts);
        if (st != GLUCX_OK)
            return rank_fail(me, "barrier", st);
    }
    return 0;
}

static int calibrate(glucx_comm_t *comm, const bench_opts_t *o)
{
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const glucx_topo_t *topo = comm->topo;
    const glucx_net_t *net = topo->net;
    glucx_topo_t out = *topo; /* saves the costs; unmeasured classes keep their current values */
    glucx_coll_opts_t copts = {.field_mask = GLUCX_COLL_OPT_TIMEOUT, .timeout_ms = o->timeout_ms};
    int measured[GLUCX_LINK_CLASS_COUNT] = {0};
    int partner[GLUCX_LINK_CLASS_COUNT] = {-1, -1, -1};
    int dpartner[GLUCX_NET_MAX_DIMS];
    for (int r = 1; r < n; r++) {
        glucx_link_class_t c = glucx_topo_link_class(topo, 0, r);
        if (partner[c] < 0)
            partner[c] = r;
    }
    for (int d = 0; d < GLUCX_NET_MAX_DIMS; d++)
        dpartner[d] = net != NULL && d < net->ndims ? dim_partner(topo, d) : -1;
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, 4u << 20) != 0) {
        fprintf(stderr, "glucx-bench: rank %d: cannot allocate 4 MiB\n", me);
        return 1;
    }
    memset(buf, 0, 4u << 20);
    /* local costs first, while the other ranks wait in a barrier and leave the cores alone */
    int local_rc = me == 0 ? measure_local(&out.gamma_ns_per_byte, &out.copy_ns_per_byte) : 0;
    glucx_status_t st = glucx_barrier(comm, &copts);
    if (st != GLUCX_OK) {
        free(buf);
        return rank_fail(me, "barrier", st);
    }
    note_progress();
    int rc;
    if (net != NULL) {
        /* per dimension, between neighbours along it; the classes follow from the dimensions */
        rc = measure_partners(comm, o, dpartner, net->ndims, buf, out.dim_cost);
        glucx_link_cost_t worst = {-1, -1};
        for (int d = 0; d < net->ndims; d++) {
            if (dpartner[d] < 0)
                continue;
            /* what the file said it was when measured, so the calibration carries to other rates */
            out.dim_nominal[d] =
                (glucx_link_cost_t){net->dim[d].latency_ns, 1.0 / net->dim[d].bandwidth_GBps};
            if (d == 0) {
                out.cost[GLUCX_LINK_INTRA] = out.dim_cost[0];
                measured[GLUCX_LINK_INTRA] = 1;
                continue;
            }
            if (out.dim_cost[d].alpha_ns > worst.alpha_ns)
                worst.alpha_ns = out.dim_cost[d].alpha_ns;
            if (out.dim_cost[d].beta_ns_per_byte > worst.beta_ns_per_byte)
                worst.beta_ns_per_byte = out.dim_cost[d].beta_ns_per_byte;
        }
        if (worst.alpha_ns >= 0) {
            out.cost[GLUCX_LINK_INTER] = worst;
            measured[GLUCX_LINK_INTER] = 1;
        }
    } else {
        glucx_link_cost_t costs[GLUCX_LINK_CLASS_COUNT];
        memcpy(costs, out.cost, sizeof(costs));
        partner[GLUCX_LINK_SELF] = -1;
        rc = measure_partners(comm, o, partner, GLUCX_LINK_CLASS_COUNT, buf, costs);
        for (int c = GLUCX_LINK_INTRA; c < GLUCX_LINK_CLASS_COUNT; c++)
            if (partner[c] >= 0) {
                out.cost[c] = costs[c];
                measured[c] = 1;
            }
    }
    if (rc != 0) {
        free(buf);
        return rc;
    }
    free(buf);
    if (me != 0)
        return 0;
    if (local_rc != 0) {
        fprintf(stderr, "glucx-bench: cannot allocate the local calibration buffers\n");
        return 1;
    }
    /* a message to oneself is a local copy */
    out.cost[GLUCX_LINK_SELF].beta_ns_per_byte = out.copy_ns_per_byte;
    measured[GLUCX_LINK_SELF] = 1;
    if ((st = glucx_topo_calibration_save(&out, o->calibrate)) != GLUCX_OK) {
        fprintf(stderr, "glucx-bench: %s\n", glucx_last_error());
        return 1;
    }
    static const char *const names[] = {"self", "intra", "inter"};
    printf("# glucx-bench --calibrate: %d ranks in %d package(s), written to %s\n", n,
           topo->npackages, o->calibrate);
    for (int c = 0; c < GLUCX_LINK_CLASS_COUNT; c++) {
        const glucx_link_cost_t *k = &out.cost[c];
        printf("%-6s alpha %9.1f ns  beta %.4f ns/B (%6.2f GB/s)  ", names[c], k->alpha_ns,
               k->beta_ns_per_byte, k->beta_ns_per_byte > 0 ? 1.0 / k->beta_ns_per_byte : 0.0);
        if (c == GLUCX_LINK_SELF)
            printf("beta = copy, alpha unchanged\n");
        else if (measured[c] && net != NULL)
            printf("from the measured dimensions (%s)\n",
                   c == GLUCX_LINK_INTRA ? "dimension 0" : "the slowest outer one");
        else if (measured[c])
            printf("measured between rank 0 and rank %d\n", partner[c]);
        else
            printf("no such link here, unchanged\n");
    }
    for (int d = 0; net != NULL && d < net->ndims; d++) {
        const glucx_link_cost_t *k = &out.dim_cost[d];
        printf("dim %d  %-14s ", d, glucx_dim_kind_name(net->dim[d].kind));
        if (dpartner[d] < 0) {
            printf("not measured (no neighbour of rank 0 along it in this job)\n");
            continue;
        }
        printf("alpha %9.1f ns  beta %.4f ns/B (%6.2f GB/s, nominal %g GB/s)  measured between "
               "rank 0 and rank %d\n",
               k->alpha_ns, k->beta_ns_per_byte,
               k->beta_ns_per_byte > 0 ? 1.0 / k->beta_ns_per_byte : 0.0,
               net->dim[d].bandwidth_GBps, dpartner[d]);
    }
    printf("gamma  %.4f ns/B (f32 sum, %.2f GB/s)\ncopy   %.4f ns/B (memcpy, %.2f GB/s)\n",
           out.gamma_ns_per_byte, 1.0 / out.gamma_ns_per_byte, out.copy_ns_per_byte,
           1.0 / out.copy_ns_per_byte);
    fflush(stdout);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* --put                                                                                      */

/* @p iters round trips of @p bytes put between ranks 0 and 1 into each other's window: put,
 * wait for the put, wait for the window (rank 1 in the other order). @return the one-way time
 * in us (half the round trip, averaged) on rank 0, or a negative value after printing the
 * failure. */
static double put_pingpong(glucx_comm_t *comm, glucx_window_t *win, void *sbuf, size_t bytes,
                           unsigned flags, long iters, int64_t timeout_ms)
{
    const int me = glucx_comm_rank(comm), peer = 1 - me;
    const uint64_t slot = 0x9075 + flags;
    glucx_request_t *req = NULL;
    glucx_status_t st = GLUCX_OK;
    double t0 = now_us();
    for (long k = 0; k < iters && st == GLUCX_OK; k++) {
        for (int phase = 0; phase < 2 && st == GLUCX_OK; phase++) {
            if ((phase == 0) == (me == 0)) {
                st = glucx_iput(comm, sbuf, bytes, peer, slot, 0, flags, &req);
                if (st == GLUCX_OK)
                    st = wait_free(req, timeout_ms);
            } else {
                st = glucx_window_wait(win, timeout_ms, NULL, NULL, NULL);
            }
        }
    }
    double t = (now_us() - t0) / (double)iters / 2;
    if (st != GLUCX_OK) {
        rank_fail(me, flags ? "synchronous put ping-pong" : "put ping-pong", st);
        return -1;
    }
    return t;
}

static int bench_put(glucx_comm_t *comm, const bench_opts_t *o)
{
    enum { REPS = 5 };
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const glucx_coll_opts_t aux = {.field_mask = GLUCX_COLL_OPT_TIMEOUT,
                                   .timeout_ms = o->timeout_ms};
    if (n < 2) {
        fprintf(stderr, "glucx-bench: --put needs 2 ranks\n");
        return 2;
    }
    size_t cap = o->max_bytes > 0 ? o->max_bytes : 1;
    void *sbuf = NULL, *wbuf = NULL;
    glucx_window_t *win[2] = {NULL, NULL};
    int rc = 1;
    if (posix_memalign(&sbuf, 4096, cap) != 0 || posix_memalign(&wbuf, 4096, 2 * cap) != 0) {
        fprintf(stderr, "glucx-bench: rank %d: cannot allocate 3 x %zu bytes\n", me, cap);
        goto out;
    }
    memset(sbuf, me + 1, cap);
    memset(wbuf, 0, 2 * cap);
    glucx_status_t st = GLUCX_OK;
    /* one window per mode (slot 0x9075 + flags), from the other rank */
    for (unsigned f = 0; f < 2 && me < 2 && st == GLUCX_OK; f++)
        st = glucx_window_create(comm, 1 - me, 0x9075 + f, (char *)wbuf + f * cap, cap, &win[f]);
    if (st != GLUCX_OK) {
        rank_fail(me, "window creation", st);
        goto out;
    }
    if (me == 0) {
        char tr[128] = "?";
        glucx_comm_peer_transport(comm, 1, tr, sizeof(tr));
        printf("# glucx-bench --put: glucx %s, ranks 0 and 1 (%s)\n", glucx_version(), tr);
        printf("# one-way time: half a put round trip (put, wait for it, wait for the window), "
               "median of %d runs, us; bw = size/time in GB/s\n",
               REPS);
        printf("#%11s %10s %10s %8s %10s %8s %7s\n", "size", "plain_us", "sync_us", "plain_bw",
               "sync_bw", "iters", "sync/plain");
        fflush(stdout);
    }
    for (size_t s = o->min_bytes; s <= o->max_bytes;) {
        long iters = iters_for(o, s), warmup = warmup_for(o, iters);
        double t[2][REPS];
        if ((st = glucx_barrier(comm, &aux)) != GLUCX_OK) {
            rank_fail(me, "barrier", st);
            goto out;
        }
        /* the two modes alternate, so both see the same machine load */
        for (int r = 0; r < REPS; r++) {
            for (unsigned f = 0; f < 2; f++) {
                unsigned flags = f ? GLUCX_PUT_SYNC : 0;
                if (me < 2 && r == 0 &&
                    put_pingpong(comm, win[f], sbuf, s, flags, warmup, o->timeout_ms) < 0)
                    goto out;
                t[f][r] =
                    me < 2 ? put_pingpong(comm, win[f], sbuf, s, flags, iters, o->timeout_ms) : 0;
                if (t[f][r] < 0)
                    goto out;
            }
        }
        if (me == 0) {
            double plain = glucx_tool_median(t[0], REPS), sync = glucx_tool_median(t[1], REPS);
            printf("%12zu %10.2f %10.2f %8.3f %10.3f %8ld %7.2f\n", s, plain, sync,
                   (double)s / plain / 1e3, (double)s / sync / 1e3, iters, sync / plain);
            fflush(stdout);
        }
        note_progress();
        size_t next = s == 0 ? 1 : (s > SIZE_MAX / o->factor ? SIZE_MAX : s * o->factor);
        if (next <= s || next > o->max_bytes)
            break;
        s = next;
    }
    rc = glucx_barrier(comm, &aux) == GLUCX_OK ? 0 : 1;
out:
    glucx_window_destroy(win[0]);
    glucx_window_destroy(win[1]);
    free(sbuf);
    free(wbuf);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* --validate                                                                                 */

/** The summary's error is over sizes from this many bytes (where the bandwidth terms rule). */
#define VALIDATE_SUMMARY_FROM ((size_t)256 << 10)
/** The most sizes of one sweep (a factor >= 2 from 1 byte reaches SIZE_MAX in 64 steps). */
#define VALIDATE_MAX_SIZES 66

/** One algorithm at one size, as --validate reports it. */
typedef struct vresult {
    int done;            /**< 0: not reached (the run stopped before it) */
    int supported;       /**< 0: the algorithm answered GLUCX_ERR_UNSUPPORTED */
    size_t cost_bytes;   /**< the size the cost function takes (glucx_coll_bytes) */
    long iters;          /**< timed iterations */
    double measured_us;  /**< median over iterations on each rank, maximum over ranks */
    double predicted_us; /**< the cost function's value; INFINITY: does not apply */
    int64_t wrong;       /**< wrong output elements, all ranks (0 without --check) */
    char note[320];      /**< why it was declined */
} vresult_t;

/** predicted/measured - 1 in %, NAN where either is missing. */
static double vresult_error_pct(const vresult_t *r)
{
    if (!r->done || !r->supported || !isfinite(r->predicted_us) || !(r->measured_us > 0))
        return NAN;
    return (r->predicted_us / r->measured_us - 1.0) * 100.0;
}

/**
 * Time @p iters calls of the collective of @p l, each on its own, after @p warmup untimed ones
 * and a barrier. *t_us_p receives the median of this rank's per-call times, then the maximum of
 * that over ranks (us). @p times has room for @p iters values. @return 0, or 1 after printing
 * the failure (naming @p what).
 */
static int validate_time(glucx_comm_t *comm, const bench_opts_t *o, const glucx_coll_opts_t *copts,
                         layout_t *l, long iters, long warmup, double *times, const char *what,
                         double *t_us_p)
{
    const int me = glucx_comm_rank(comm);
    const glucx_coll_opts_t aux = {.field_mask = GLUCX_COLL_OPT_TIMEOUT,
                                   .timeout_ms = o->timeout_ms};
    glucx_status_t st = GLUCX_OK;
    for (long w = 0; w < warmup && st == GLUCX_OK; w++)
        st = glucx_coll(comm, &l->args, copts);
    if (st != GLUCX_OK)
        return rank_fail(me, what, st);
    if ((st = glucx_barrier(comm, &aux)) != GLUCX_OK)
        return rank_fail(me, "barrier before timing", st);
    double prev = now_us();
    for (long it = 0; it < iters && st == GLUCX_OK; it++) {
        st = glucx_coll(comm, &l->args, copts);
        double t = now_us();
        times[it] = t - prev;
        prev = t;
    }
    if (st != GLUCX_OK)
        return rank_fail(me, what, st);
    double med = glucx_tool_median(times, (int)iters);
    st = glucx_allreduce(comm, &med, t_us_p, 1, GLUCX_DTYPE_F64, GLUCX_OP_MAX, &aux);
    if (st != GLUCX_OK)
        return rank_fail(me, "allreduce of the timings", st);
    return 0;
}

/**
 * Run algorithm @p alg of the collective at the size of @p l (inputs filled): one call to learn
 * whether it applies (every rank decides alike, before any traffic), then the timing and the
 * check; fills @p r (on every rank). @return 0 (also when it declined), or 1 after printing the
 * failure.
 */
static int validate_one(glucx_comm_t *comm, const bench_opts_t *o, int alg, layout_t *l, void *send,
                        void *recv, double *times, vresult_t *r)
{
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const glucx_coll_alg_t *row = &glucx_coll_tables[o->coll]->algs[alg];
    glucx_coll_opts_t copts = {.field_mask = GLUCX_COLL_OPT_TIMEOUT | GLUCX_COLL_OPT_ALGORITHM,
                               .timeout_ms = o->timeout_ms,
                               .algorithm = row->name};
    char what[128];
    snprintf(what, sizeof(what), "%s of %zu bytes with algorithm %s", glucx_coll_name(o->coll),
             l->bytes, row->name);
    memset(r, 0, sizeof(*r));
    r->cost_bytes = glucx_coll_bytes(&l->args, n);
    r->predicted_us = row->cost(comm->topo, r->cost_bytes) / 1e3;
    r->iters = iters_for(o, l->bytes);
    fill_inputs(l, me, n, send, recv);
    glucx_status_t st = glucx_coll(comm, &l->args, &copts);
    if (st == GLUCX_ERR_UNSUPPORTED) {
        snprintf(r->note, sizeof(r->note), "%s", glucx_last_error());
        r->done = 1;
        return 0;
    }
    if (st != GLUCX_OK)
        return rank_fail(me, what, st);
    r->supported = 1;
    long warmup = warmup_for(o, r->iters);
    if (validate_time(comm, o, &copts, l, r->iters, warmup > 0 ? warmup - 1 : 0, times, what,
                      &r->measured_us) != 0)
        return 1;
    if (check_size(comm, o, &copts, l, recv, what, &r->wrong) != 0)
        return 1;
    r->done = 1;
    return 0;
}

static const char *const vclass_names[GLUCX_LINK_CLASS_COUNT] = {"self", "intra", "inter"};

/** The link class glucx_topo_bottleneck takes its costs from. */
static glucx_link_class_t vbottleneck(const glucx_topo_t *t)
{
    return t->npackages > 1 ? GLUCX_LINK_INTER : t->size > 1 ? GLUCX_LINK_INTRA : GLUCX_LINK_SELF;
}

/** Rank 0's header of --validate: the run, the costs the predictions use, the columns. */
static void validate_header(const bench_opts_t *o, glucx_comm_t *comm)
{
    const glucx_topo_t *t = comm->topo;
    const glucx_config_t *cfg = &comm->context->config;
    printf("# glucx-bench --validate: glucx %s, %s, %d ranks in %d package(s), dtype %s",
           glucx_version(), glucx_coll_name(o->coll), t->size, t->npackages,
           glucx_dtype_name(o->dtype));
    if (is_reduction(o->coll))
        printf(", op %s", glucx_op_name(o->op));
    printf(", check %d, timeout %" PRId64 " ms\n", o->check, o->timeout_ms);
    if (o->iters > 0)
        printf("# iterations: %ld timed", o->iters);
    else
        printf("# iterations: 64 MiB/size timed (20..1000)");
    if (o->warmup >= 0)
        printf(", %ld warmup\n", o->warmup);
    else
        printf(", max(5, iters/10) warmup\n");
    if (cfg->calibration[0] == '\0' && cfg->topology[0] == '\0')
        printf("# costs: defaults (no GLUCX_CALIBRATION, no GLUCX_TOPOLOGY)\n");
    else if (cfg->calibration[0] == '\0')
        printf("# costs: nominal, GLUCX_TOPOLOGY=%s\n", cfg->topology);
    else
        printf("# costs: GLUCX_CALIBRATION=%s%s%s\n", cfg->calibration,
               cfg->topology[0] ? ", GLUCX_TOPOLOGY=" : "", cfg->topology);
    for (int c = GLUCX_LINK_SELF; c < GLUCX_LINK_CLASS_COUNT; c++)
        printf("#   %-5s alpha %.6g ns, beta %.6g ns/B\n", vclass_names[c], t->cost[c].alpha_ns,
               t->cost[c].beta_ns_per_byte);
    for (int d = 0; t->net != NULL && d < t->net->ndims; d++) {
        glucx_link_cost_t k = glucx_topo_dim_cost(t, d);
        printf("#   dim %d alpha %.6g ns, beta %.6g ns/B (%s)\n", d, k.alpha_ns, k.beta_ns_per_byte,
               glucx_topo_dim_cost_source(t, d));
    }
    printf("#   gamma %.6g ns/B, copy %.6g ns/B; topology-oblivious algorithms pay the %s class\n",
           t->gamma_ns_per_byte, t->copy_ns_per_byte, vclass_names[vbottleneck(t)]);
    printf("# size: bytes as nccl-tests counts them; count: elements in size\n");
    printf("# time: microseconds per call: each rank's median over the timed iterations, then the "
           "maximum over ranks\n");
    printf("# predicted: the algorithm's cost function on this communicator's topology (the costs "
           "above), us; n/a: it does not apply\n");
    printf("# error: predicted/time - 1; unsupported: the algorithm declined the size "
           "(GLUCX_ERR_UNSUPPORTED)\n");
    printf("# #wrong: output elements that differ from the reference, summed over ranks "
           "(N/A without --check 1)\n");
    printf("#%11s %12s %6s %6s %-22s %11s %11s %9s %7s\n", "size", "count", "type", "redop", "algo",
           "time", "predicted", "error", "#wrong");
    fflush(stdout);
}

/** One row of --validate (algorithm @p alg at @p bytes), and the reason when it declined. */
static void validate_row(const bench_opts_t *o, const char *alg, size_t bytes, const vresult_t *r)
{
    char pred[32], err[32], wrong[32], time[32];
    if (isfinite(r->predicted_us))
        snprintf(pred, sizeof(pred), "%.2f", r->predicted_us);
    else
        snprintf(pred, sizeof(pred), "n/a");
    double e = vresult_error_pct(r);
    if (isfinite(e))
        snprintf(err, sizeof(err), "%+.1f%%", e);
    else
        snprintf(err, sizeof(err), "N/A");
    if (r->supported)
        snprintf(time, sizeof(time), "%.2f", r->measured_us);
    else
        snprintf(time, sizeof(time), "unsupported");
    if (r->supported && o->check)
        snprintf(wrong, sizeof(wrong), "%" PRId64, r->wrong);
    else
        snprintf(wrong, sizeof(wrong), "N/A");
    printf("%12zu %12zu %6s %6s %-22s %11s %11s %9s %7s\n", bytes,
           bytes / glucx_dtype_size(o->dtype), glucx_dtype_name(o->dtype),
           is_reduction(o->coll) ? glucx_op_name(o->op) : "none", alg, time, pred, err, wrong);
    if (!r->supported)
        printf("# %s at %zu bytes: unsupported: %s\n", alg, bytes, r->note);
    fflush(stdout);
}

/** Largest |error| of algorithm column @p a at sizes >= VALIDATE_SUMMARY_FROM; *n_p: how many
 *  sizes it covers. NAN when none. */
static double validate_summary(const vresult_t *res, const size_t *sizes, int nsizes, int nalgs,
                               int a, int *n_p)
{
    double worst = NAN;
    int n = 0;
    for (int k = 0; k < nsizes; k++) {
        double e = vresult_error_pct(&res[k * nalgs + a]);
        if (sizes[k] < VALIDATE_SUMMARY_FROM || !isfinite(e))
            continue;
        n++;
        if (!(fabs(e) <= worst))
            worst = fabs(e);
    }
    *n_p = n;
    return worst;
}

/** A JSON number, or null for a missing (NAN) or infinite value. */
static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/** The --json FILE document (format 1; README, "Tools"). */
static json_t *validate_json(const bench_opts_t *o, glucx_comm_t *comm, const int *algs, int nalgs,
                             const size_t *sizes, int nsizes, const vresult_t *res,
                             int64_t wrong_total)
{
    const glucx_topo_t *t = comm->topo;
    const glucx_config_t *cfg = &comm->context->config;
    const glucx_coll_table_t *tab = glucx_coll_tables[o->coll];
    json_t *root = json_object(), *costs = json_object(), *dims = json_array(),
           *jalgs = json_array();
    json_object_set_new(root, "format", json_integer(1));
    json_object_set_new(root, "tool", json_string("glucx-bench --validate"));
    json_object_set_new(root, "glucx", json_string(glucx_version()));
    json_object_set_new(root, "coll", json_string(glucx_coll_name(o->coll)));
    json_object_set_new(root, "ranks", json_integer(t->size));
    json_object_set_new(root, "packages", json_integer(t->npackages));
    json_object_set_new(root, "dtype", json_string(glucx_dtype_name(o->dtype)));
    json_object_set_new(root, "op",
                        is_reduction(o->coll) ? json_string(glucx_op_name(o->op)) : json_null());
    json_object_set_new(root, "check", json_boolean(o->check));
    for (int c = GLUCX_LINK_SELF; c < GLUCX_LINK_CLASS_COUNT; c++)
        json_object_set_new(costs, vclass_names[c],
                            json_pack("{s:f, s:f}", "alpha_ns", t->cost[c].alpha_ns,
                                      "beta_ns_per_byte", t->cost[c].beta_ns_per_byte));
    json_object_set_new(costs, "gamma_ns_per_byte", json_real(t->gamma_ns_per_byte));
    json_object_set_new(costs, "copy_ns_per_byte", json_real(t->copy_ns_per_byte));
    json_object_set_new(costs, "bottleneck", json_string(vclass_names[vbottleneck(t)]));
    json_object_set_new(costs, "calibration",
                        cfg->calibration[0] ? json_string(cfg->calibration) : json_null());
    json_object_set_new(costs, "topology",
                        cfg->topology[0] ? json_string(cfg->topology) : json_null());
    for (int d = 0; t->net != NULL && d < t->net->ndims; d++) {
        glucx_link_cost_t k = glucx_topo_dim_cost(t, d);
        json_array_append_new(dims,
                              json_pack("{s:i, s:f, s:f, s:b, s:s}", "dimension", d, "alpha_ns",
                                        k.alpha_ns, "beta_ns_per_byte", k.beta_ns_per_byte,
                                        "calibrated", t->dim_cost[d].alpha_ns >= 0, "source",
                                        glucx_topo_dim_cost_source(t, d)));
    }
    json_object_set_new(costs, "dimensions", dims);
    json_object_set_new(root, "costs", costs);
    json_object_set_new(root, "time",
                        json_string("us per call: each rank's median over the timed iterations, "
                                    "then the maximum over ranks"));
    json_object_set_new(root, "summary_from_bytes",
                        json_integer((json_int_t)VALIDATE_SUMMARY_FROM));
    for (int a = 0; a < nalgs; a++) {
        json_t *rows = json_array();
        for (int k = 0; k < nsizes; k++) {
            const vresult_t *r = &res[k * nalgs + a];
            if (!r->done)
                continue;
            json_t *row = json_pack("{s:I, s:I, s:I, s:s}", "size", (json_int_t)sizes[k],
                                    "cost_bytes", (json_int_t)r->cost_bytes, "count",
                                    (json_int_t)(sizes[k] / glucx_dtype_size(o->dtype)), "status",
                                    r->supported ? "ok" : "unsupported");
            json_object_set_new(row, "predicted_us", num_or_null(r->predicted_us));
            if (r->supported) {
                json_object_set_new(row, "iters", json_integer(r->iters));
                json_object_set_new(row, "measured_us", json_real(r->measured_us));
                json_object_set_new(row, "error_pct", num_or_null(vresult_error_pct(r)));
                json_object_set_new(row, "wrong",
                                    o->check ? json_integer((json_int_t)r->wrong) : json_null());
            } else {
                json_object_set_new(row, "note", json_string(r->note));
            }
            json_array_append_new(rows, row);
        }
        int ns;
        double worst = validate_summary(res, sizes, nsizes, nalgs, a, &ns);
        json_array_append_new(
            jalgs, json_pack("{s:s, s:o, s:o, s:i}", "name", tab->algs[algs[a]].name, "results",
                             rows, "max_abs_error_pct", num_or_null(worst), "summary_sizes", ns));
    }
    json_object_set_new(root, "algorithms", jalgs);
    json_object_set_new(root, "wrong_total", json_integer((json_int_t)wrong_total));
    return root;
}

/**
 * --validate: for each size of the sweep, every algorithm of the collective's table (or --algo's)
 * forced in turn: measured time, predicted time, error; then the summary per algorithm and, with
 * --json, the JSON file (rank 0). @return 0; 1 on a failure or wrong results; 2 when the JSON
 * file cannot be written (every rank returns it).
 */
static int validate(glucx_comm_t *comm, const bench_opts_t *o)
{
    const int me = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const glucx_coll_opts_t aux = {.field_mask = GLUCX_COLL_OPT_TIMEOUT,
                                   .timeout_ms = o->timeout_ms};
    const glucx_coll_table_t *tab = glucx_coll_tables[o->coll];
    int rc = 1;
    FILE *jf = NULL;
    /* rank 0 opens the JSON file first: when it cannot, every rank stops alike */
    int32_t ok = 1, all_ok = 0;
    if (me == 0 && o->json != NULL && (jf = fopen(o->json, "w")) == NULL) {
        fprintf(stderr, "glucx-bench: --json '%s': cannot write: %s\n", o->json, strerror(errno));
        ok = 0;
    }
    glucx_status_t st = glucx_allreduce(comm, &ok, &all_ok, 1, GLUCX_DTYPE_I32, GLUCX_OP_MIN, &aux);
    if (st != GLUCX_OK) {
        if (jf != NULL)
            fclose(jf);
        return rank_fail(me, "allreduce of the --json check", st);
    }
    if (!all_ok)
        return 2;

    int algs[64], nalgs = 0;
    for (int a = 0; a < tab->count && nalgs < 64; a++)
        if (o->algo == NULL || strcmp(o->algo, tab->algs[a].name) == 0)
            algs[nalgs++] = a;
    size_t sizes[VALIDATE_MAX_SIZES];
    int nsizes = 0;
    size_t cap = o->max_bytes + 4096;
    long max_iters = o->iters > 0 ? o->iters : 1000;
    void *send = NULL, *recv = NULL;
    layout_t l = {0};
    l.counts = calloc((size_t)n, sizeof(size_t));
    l.displs = calloc((size_t)n, sizeof(size_t));
    l.scounts = calloc((size_t)n, sizeof(size_t));
    l.sdispls = calloc((size_t)n, sizeof(size_t));
    double *times = malloc(sizeof(double) * (size_t)max_iters);
    vresult_t *res = calloc((size_t)VALIDATE_MAX_SIZES * (size_t)nalgs, sizeof(*res));
    if (posix_memalign(&send, 4096, cap) != 0 || posix_memalign(&recv, 4096, cap) != 0 ||
        l.counts == NULL || l.displs == NULL || l.scounts == NULL || l.sdispls == NULL ||
        times == NULL || res == NULL) {
        fprintf(stderr,
                "glucx-bench: rank %d: cannot allocate 2 x %zu bytes and %ld timings for "
                "--validate\n",
                me, cap, max_iters);
        goto out;
    }
    memset(send, 0, cap); /* fault the pages in before timing */
    memset(recv, 0, cap);
    if (me == 0)
        validate_header(o, comm);
    int64_t total_wrong = 0;
    size_t prev_bytes = SIZE_MAX;
    for (size_t s = o->min_bytes; s <= o->max_bytes && nsizes < VALIDATE_MAX_SIZES;) {
        layout_make(o, me, n, s, send, recv, &l);
        size_t next = s == 0 ? 1 : (s > SIZE_MAX / o->factor ? SIZE_MAX : s * o->factor);
        int last = o->coll == GLUCX_COLL_BARRIER || next <= s || next > o->max_bytes;
        if (l.bytes != prev_bytes) { /* small sizes may round to the same row */
            prev_bytes = l.bytes;
            sizes[nsizes] = l.bytes;
            /* every algorithm at this size before the next size: they see the same load */
            for (int a = 0; a < nalgs; a++) {
                vresult_t *r = &res[nsizes * nalgs + a];
                if (validate_one(comm, o, algs[a], &l, send, recv, times, r) != 0)
                    goto out;
                total_wrong += r->wrong;
                if (me == 0)
                    validate_row(o, tab->algs[algs[a]].name, l.bytes, r);
                note_progress();
            }
            nsizes++;
        }
        if (last)
            break;
        s = next;
    }
    if (me == 0) {
        for (int a = 0; a < nalgs; a++) {
            int ns;
            double worst = validate_summary(res, sizes, nsizes, nalgs, a, &ns);
            if (ns > 0)
                printf("# summary: %s: max |error| at sizes >= 256K: %.1f%% over %d size(s)\n",
                       tab->algs[algs[a]].name, worst, ns);
            else
                printf("# summary: %s: max |error| at sizes >= 256K: n/a (no size >= 256K "
                       "measured with a prediction)\n",
                       tab->algs[algs[a]].name);
        }
        if (o->check)
            printf("# wrong elements in total: %" PRId64 " (%s)\n", total_wrong,
                   total_wrong == 0 ? "OK" : "FAILED");
        fflush(stdout);
        if (jf != NULL) {
            json_t *j = validate_json(o, comm, algs, nalgs, sizes, nsizes, res, total_wrong);
            int bad = j == NULL || json_dumpf(j, jf, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 ||
                      fputc('\n', jf) == EOF;
            json_decref(j);
            bad |= fclose(jf) != 0;
            jf = NULL;
            if (bad) {
                fprintf(stderr, "glucx-bench: --json '%s': cannot write the results\n", o->json);
                goto out;
            }
        }
    }
    if (total_wrong != 0) {
        if (me == 0)
            fprintf(stderr, "glucx-bench: %" PRId64 " wrong elements\n", total_wrong);
        goto out;
    }
    rc = 0;
out:
    if (jf != NULL)
        fclose(jf);
    free(send);
    free(recv);
    free(times);
    free(res);
    free(l.counts);
    free(l.displs);
    free(l.scounts);
    free(l.sdispls);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* One rank                                                                                   */

static int run_rank(const bench_opts_t *o, int rank, int size, glucx_store_t *store)
{
    glucx_context_t *ctx = NULL;
    glucx_comm_t *comm = NULL;
    int rc = 1;
    if (o->root >= size) {
        fprintf(stderr, "glucx-bench: --root %d is not below the number of ranks %d\n", o->root,
                size);
        return 2;
    }
    glucx_status_t st = glucx_context_create(NULL, &ctx);
    if (st != GLUCX_OK) {
        rank_fail(rank, "context creation", st);
        goto out;
    }
    glucx_comm_params_t params = {
        .field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
        .rank = rank,
        .size = size,
        .store = store,
        .name = o->name,
        .timeout_ms = o->timeout_ms,
    };
    st = glucx_comm_create(ctx, &params, &comm);
    if (st != GLUCX_OK) {
        rank_fail(rank, "communicator creation", st);
        goto out;
    }
    note_progress();
    rc = o->calibrate != NULL ? calibrate(comm, o)
         : o->put             ? bench_put(comm, o)
         : o->validate        ? validate(comm, o)
                              : bench(comm, o);
out:
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);
    return rc;
}

static int run_from_launcher(const bench_opts_t *o)
{
    int rank, size;
    int rc = glucx_tool_launcher_rank_size("glucx-bench", &rank, &size);
    if (rc == 1)
        fprintf(stderr, "glucx-bench: no --ranks and no launcher variables: run with --ranks N, or "
                        "under torchrun (RANK, WORLD_SIZE), mpirun (OMPI_COMM_WORLD_RANK, "
                        "OMPI_COMM_WORLD_SIZE) or a PMI launcher (PMI_RANK, PMI_SIZE), with "
                        "GLUCX_STORE=file:DIR or redis://HOST:PORT naming the rendezvous store\n");
    if (rc != 0)
        return 2;
    glucx_store_t *store = NULL;
    glucx_status_t st = glucx_store_from_env(&store);
    if (st != GLUCX_OK) {
        fprintf(stderr, "glucx-bench: rank %d: cannot open the store: %s: %s\n", rank,
                glucx_status_string(st), glucx_last_error());
        return 2;
    }
    rc = run_rank(o, rank, size, store);
    glucx_store_destroy(store);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* --ranks N: fork local ranks (tools/common/local_ranks.c)                                    */

static int local_rank(int rank, int size, const char *store_dir, int progress, void *arg)
{
    const bench_opts_t *o = arg;
    progress_fd = progress;
    glucx_store_t *store = NULL;
    int crc;
    glucx_status_t st = glucx_store_file_create(store_dir, &store);
    if (st != GLUCX_OK)
        crc = rank_fail(rank, "file store creation", st);
    else
        crc = run_rank(o, rank, size, store);
    glucx_store_destroy(store);
    return crc;
}

static int launch_local(const bench_opts_t *o)
{
    /* a rank that shows no progress for twice the operation timeout plus 30 s is stuck
     * (glucx's own timeouts should have fired by then) */
    const double stall_s = 2.0 * (double)o->timeout_ms / 1e3 + 30.0;
    return glucx_tool_run_local(o->ranks, local_rank, (void *)o, stall_s, "glucx-bench");
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    return o.ranks > 0 ? launch_local(&o) : run_from_launcher(&o);
}
