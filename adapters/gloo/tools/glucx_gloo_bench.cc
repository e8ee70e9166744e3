/*
 * glucx-gloo-bench: one rank of a Gloo job that times Gloo's own allreduce algorithms
 * (class templates over bound buffers, and the function-style gloo::allreduce over unbound
 * buffers) on Gloo's TCP transport or on glucx (the Gloo device "UCX"). Start one process per
 * rank (scripts/bench/gloo_algos.sh does, for both devices in one run); rank 0 prints the table.
 * See --help (usage() below) for the options and the output columns.
 */
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/algorithm.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <glucx/gloo.h>

#include "common/bench_util.h"

namespace
{

using Clock = std::chrono::steady_clock;

const char *const kAlgos[] = {"ring", "ring_chunked", "halving_doubling", "bcube", "allreduce"};

void usage(FILE *f)
{
    std::fputs(
        "usage: glucx-gloo-bench --device tcp|ucx [options]\n"
        "One rank of a Gloo job timing Gloo's allreduce algorithms (float32 sum, in place) on\n"
        "Gloo's TCP transport (gloo::transport::tcp::CreateDevice) or on glucx\n"
        "(glucx::gloo::CreateDevice, the Gloo device \"UCX\"). Start one process per rank with\n"
        "the same options; rank 0 prints the table. scripts/bench/gloo_algos.sh starts the\n"
        "ranks for both devices and compares them.\n"
        "\n"
        "  --device tcp|ucx      the Gloo transport (required)\n"
        "  -a, --algo LIST       comma-separated, run in this order (default ring):\n"
        "                          ring              gloo::AllreduceRing<float>       (bound "
        "buffers)\n"
        "                          ring_chunked      gloo::AllreduceRingChunked<float> (bound)\n"
        "                          halving_doubling  gloo::AllreduceHalvingDoubling<float> "
        "(bound)\n"
        "                          bcube             gloo::AllreduceBcube<float>       (bound)\n"
        "                          allreduce         gloo::allreduce(), function style (unbound\n"
        "                                            buffers, ring; GLUCX_SYNC_SEND applies)\n"
        "                        or 'all'\n"
        "  -b, --min BYTES       smallest size (default 1K; K, M, G suffixes; a multiple of 4)\n"
        "  -e, --max BYTES       largest size (default 16M)\n"
        "  -f, --factor F        size multiplier (default 2)\n"
        "  -n, --iters N         runs per timed sample (default: 32 MiB / size, clamped to\n"
        "                        10..500)\n"
        "  -w, --warmup N        untimed runs per size after the check (default max(2, iters/10))\n"
        "  -s, --samples S       timed samples per size (default 3)\n"
        "  --rank R, --size N    this rank and the job size (default: RANK, WORLD_SIZE)\n"
        "  --store DIR           a directory for gloo::rendezvous::FileStore, empty or new for\n"
        "                        each job (default: GLUCX_STORE=file:DIR)\n"
        "  --host NAME           tcp: the address to listen on (default 127.0.0.1)\n"
        "  --iface IF            the interface (tcp: instead of --host; ucx: glucx's attr.iface)\n"
        "  --base B              the context's base, which only AllreduceBcube uses (default: the\n"
        "                        job size, so Bcube runs in one step; with two or more steps a\n"
        "                        rank's next run may overwrite a peer's buffer before it was "
        "read)\n"
        "  --timeout-ms MS       the Gloo context's timeout (default 60000)\n"
        "  -h, --help            this text\n"
        "\n"
        "Per algorithm and size: one run on inputs x_r[i] = ((7 i + 13 r) mod 31) + 1 (integers,\n"
        "so float sums are exact), checked element by element against the sum computed here in\n"
        "integers; the job stops with exit status 1 and prints the first wrong element on any "
        "rank\n"
        "if one is wrong (no number is reported for a wrong result). Then the buffer is zeroed\n"
        "(so the timed runs stay finite), WARMUP runs, and SAMPLES samples of ITERS back-to-back\n"
        "runs each. A sample's time is its mean per run on each rank, maximum over ranks; the\n"
        "reported time is the median over the samples.\n"
        "\n"
        "Output (rank 0, stdout): '#' lines (device, job, rules), then one row per algorithm and\n"
        "size with the columns\n"
        "  device    tcp or ucx\n"
        "  algo      as --algo\n"
        "  bytes     the vector's size in bytes\n"
        "  count     float32 elements\n"
        "  iters     runs per sample\n"
        "  time_us   the median sample time per run, microseconds\n"
        "  algbw     bytes / time_us, GB/s (1e9 bytes per second)\n"
        "  busbw     algbw * 2(n-1)/n, GB/s: the bus bandwidth of an allreduce as nccl-tests\n"
        "            defines it (nccl-tests doc/PERFORMANCE.md), comparable across job sizes\n"
        "  check     'ok' (the checked run matched; rows are printed only then)\n"
        "Errors: exit status 1, with a message naming the operation, size, device and rank.\n",
        f);
}

[[noreturn]] void die(const std::string &msg)
{
    std::fprintf(stderr, "glucx-gloo-bench: %s\n", msg.c_str());
    std::exit(1);
}

[[noreturn]] void badArg(const std::string &msg)
{
    std::fprintf(stderr, "glucx-gloo-bench: %s (--help for usage)\n", msg.c_str());
    std::exit(2);
}

long parseLong(const std::string &opt, const char *s, long lo, long hi)
{
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        badArg(opt + ": '" + s + "' is not an integer in " + std::to_string(lo) + ".." +
               std::to_string(hi));
    return v;
}

size_t parseSize(const std::string &opt, const char *s)
{
    size_t v = 0;
    if (glucx_tool_parse_size(s, &v) != 0)
        badArg(opt + ": '" + s + "' is not a byte count");
    return v;
}

struct Options {
    std::string device;
    std::vector<std::string> algos{"ring"};
    size_t minBytes = 1024;
    size_t maxBytes = 16u << 20;
    long factor = 2;
    long iters = 0;   /* 0: automatic */
    long warmup = -1; /* -1: automatic */
    long samples = 3;
    int rank = -1;
    int size = -1;
    std::string store;
    std::string host = "127.0.0.1";
    std::string iface;
    int base = 0; /* 0: the job size */
    long timeoutMs = 60000;
};

std::vector<std::string> splitAlgos(const std::string &list)
{
    std::vector<std::string> out;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty())
            continue;
        if (item == "all") {
            out.insert(out.end(), std::begin(kAlgos), std::end(kAlgos));
            continue;
        }
        if (std::find(std::begin(kAlgos), std::end(kAlgos), item) == std::end(kAlgos))
            badArg("--algo: unknown algorithm '" + item + "'");
        out.push_back(item);
    }
    if (out.empty())
        badArg("--algo: empty list");
    return out;
}

int envInt(const char *name)
{
    const char *v = std::getenv(name);
    if (!v || !*v)
        badArg(std::string("no --") + (std::strcmp(name, "RANK") == 0 ? "rank" : "size") +
               " and no " + name + " in the environment");
    return static_cast<int>(parseLong(name, v, 0, 1 << 20));
}

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage(stdout);
            std::exit(0);
        }
        if (i + 1 >= argc)
            badArg("unknown option or missing value: '" + a + "'");
        const char *v = argv[++i];
        if (a == "--device")
            o.device = v;
        else if (a == "-a" || a == "--algo")
            o.algos = splitAlgos(v);
        else if (a == "-b" || a == "--min")
            o.minBytes = parseSize(a, v);
        else if (a == "-e" || a == "--max")
            o.maxBytes = parseSize(a, v);
        else if (a == "-f" || a == "--factor")
            o.factor = parseLong(a, v, 2, 1024);
        else if (a == "-n" || a == "--iters")
            o.iters = parseLong(a, v, 1, 1000000);
        else if (a == "-w" || a == "--warmup")
            o.warmup = parseLong(a, v, 0, 1000000);
        else if (a == "-s" || a == "--samples")
            o.samples = parseLong(a, v, 1, 1000);
        else if (a == "--rank")
            o.rank = static_cast<int>(parseLong(a, v, 0, 1 << 20));
        else if (a == "--size")
            o.size = static_cast<int>(parseLong(a, v, 1, 1 << 20));
        else if (a == "--store")
            o.store = v;
        else if (a == "--host")
            o.host = v;
        else if (a == "--iface")
            o.iface = v;
        else if (a == "--base")
            o.base = static_cast<int>(parseLong(a, v, 2, 1 << 20));
        else if (a == "--timeout-ms")
            o.timeoutMs = parseLong(a, v, 1, 24L * 3600 * 1000);
        else
            badArg("unknown option '" + a + "'");
    }
    if (o.device != "tcp" && o.device != "ucx")
        badArg("--device must be tcp or ucx");
    if (o.rank < 0)
        o.rank = envInt("RANK");
    if (o.size < 0)
        o.size = envInt("WORLD_SIZE");
    if (o.size < 1 || o.rank >= o.size)
        badArg("rank " + std::to_string(o.rank) + " is not in a job of " + std::to_string(o.size) +
               " ranks");
    if (o.store.empty()) {
        const char *s = std::getenv("GLUCX_STORE");
        if (!s || std::strncmp(s, "file:", 5) != 0 || !s[5])
            badArg("no --store and no GLUCX_STORE=file:DIR in the environment");
        o.store = s + 5;
    }
    if (o.minBytes < 4 || o.minBytes % 4 != 0 || o.maxBytes < o.minBytes || o.maxBytes % 4 != 0 ||
        o.maxBytes / 4 > static_cast<size_t>(INT32_MAX))
        badArg("sizes must be multiples of 4 bytes with 4 <= --min <= --max < 8 GiB");
    if (o.base == 0)
        o.base = std::max(2, o.size);
    return o;
}

/* What a run does: one call of the algorithm on the buffer. */
using Run = std::function<void()>;

struct Job {
    const Options &opt;
    std::shared_ptr<gloo::Context> ctx;
    std::string what = "connecting"; /* the operation under way, for error messages */
};

/* Elementwise reductions over doubles for the bookkeeping collectives (not timed). */
void maxDoubles(void *c, const void *a, const void *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        static_cast<double *>(c)[i] =
            std::max(static_cast<const double *>(a)[i], static_cast<const double *>(b)[i]);
}

void sumDoubles(void *c, const void *a, const void *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        static_cast<double *>(c)[i] =
            static_cast<const double *>(a)[i] + static_cast<const double *>(b)[i];
}

/* One value reduced over the ranks with the function-style gloo::allreduce (untimed). */
double reduceAll(Job &job, double v, void (*fn)(void *, const void *, const void *, size_t))
{
    gloo::AllreduceOptions o(job.ctx);
    o.setOutput(&v, 1);
    o.setReduceFunction(fn);
    o.setTag(0x7e57);
    gloo::allreduce(o);
    return v;
}

void barrier(Job &job)
{
    gloo::BarrierOptions o(job.ctx);
    o.setTag(0x7e58);
    gloo::barrier(o);
}

float inputValue(size_t i, int rank)
{
    return static_cast<float>((7 * (i % 31) + 13 * static_cast<size_t>(rank)) % 31 + 1);
}

Run makeRun(Job &job, const std::string &algo, float *buf, int count,
            std::unique_ptr<gloo::Algorithm> &holder)
{
    const std::vector<float *> ptrs{buf};
    if (algo == "ring")
        holder = std::make_unique<gloo::AllreduceRing<float>>(job.ctx, ptrs, count);
    else if (algo == "ring_chunked")
        holder = std::make_unique<gloo::AllreduceRingChunked<float>>(job.ctx, ptrs, count);
    else if (algo == "halving_doubling")
        holder = std::make_unique<gloo::AllreduceHalvingDoubling<float>>(job.ctx, ptrs, count);
    else if (algo == "bcube")
        holder = std::make_unique<gloo::AllreduceBcube<float>>(job.ctx, ptrs, count);
    if (holder) {
        gloo::Algorithm *a = holder.get();
        return [a] { a->run(); };
    }
    /* "allreduce": options are built per call, as a caller of gloo::allreduce does */
    std::shared_ptr<gloo::Context> ctx = job.ctx;
    return [ctx, buf, count] {
        gloo::AllreduceOptions o(ctx);
        o.setOutput(buf, static_cast<size_t>(count));
        o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        o.setReduceFunction(
            [](void *c, const void *a, const void *b, size_t n) { gloo::sum<float>(c, a, b, n); });
        o.setTag(1);
        gloo::allreduce(o);
    };
}

/* Fill, run once, compare with the integer sums; every rank learns the total. Returns the
 * number of wrong elements over all ranks (and prints this rank's first one). */
double checkOnce(Job &job, const std::string &algo, const Run &run, float *buf, size_t count)
{
    const int n = job.opt.size;
    for (size_t i = 0; i < count; i++)
        buf[i] = inputValue(i, job.opt.rank);
    run();
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        long expect = 0;
        for (int r = 0; r < n; r++)
            expect += static_cast<long>(inputValue(i, r));
        if (buf[i] != static_cast<float>(expect)) {
            if (wrong == 0)
                std::fprintf(stderr,
                             "glucx-gloo-bench: rank %d of %d, device %s, %s, %zu bytes: "
                             "element %zu is %.9g, expected %ld\n",
                             job.opt.rank, n, job.opt.device.c_str(), algo.c_str(), count * 4, i,
                             static_cast<double>(buf[i]), expect);
            wrong++;
        }
    }
    return reduceAll(job, static_cast<double>(wrong), sumDoubles);
}

void benchSize(Job &job, const std::string &algo, size_t bytes)
{
    const Options &o = job.opt;
    const size_t count = bytes / 4;
    std::vector<float> buf(count);
    std::unique_ptr<gloo::Algorithm> holder;
    std::ostringstream w;
    w << algo << ", " << bytes << " bytes";
    const std::string where = w.str();

    job.what = "creating " + where;
    Run run = makeRun(job, algo, buf.data(), static_cast<int>(count), holder);

    job.what = "the checked run of " + where;
    const double wrong = checkOnce(job, algo, run, buf.data(), count);
    if (wrong > 0) {
        std::ostringstream s;
        s << where << ", device " << o.device << ", " << o.size << " ranks: " << wrong
          << " wrong element(s) in the checked run (rank " << o.rank
          << "; each rank with a wrong one printed its first): no time reported";
        die(s.str());
    }

    long iters = o.iters;
    if (iters == 0)
        iters = std::clamp<long>(static_cast<long>((32u << 20) / bytes), 10, 500);
    const long warmup = o.warmup >= 0 ? o.warmup : std::max<long>(2, iters / 10);
    std::fill(buf.begin(), buf.end(), 0.0f);

    job.what = "the warmup runs of " + where;
    for (long i = 0; i < warmup; i++)
        run();

    std::vector<double> samples;
    for (long s = 0; s < o.samples; s++) {
        job.what = "a timed sample of " + where;
        barrier(job);
        const auto t0 = Clock::now();
        for (long i = 0; i < iters; i++)
            run();
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                          static_cast<double>(iters);
        samples.push_back(reduceAll(job, us, maxDoubles));
    }
    /* Gloo's algorithms may return with sends undelivered: nobody destroys its buffers before
     * every rank finished (docs/architecture.md, "Bound buffers") */
    job.what = "the barrier after " + where;
    barrier(job);
    holder.reset();

    const double us = glucx_tool_median(samples.data(), static_cast<int>(samples.size()));
    const double algbw = static_cast<double>(bytes) / us / 1e3; /* bytes/us = MB/s; GB/s */
    const double busbw = algbw * 2.0 * (o.size - 1) / o.size;
    if (o.rank == 0) {
        std::printf("%-6s %-16s %10zu %9zu %6ld %12.2f %9.3f %9.3f %5s\n", o.device.c_str(),
                    algo.c_str(), bytes, count, iters, us, algbw, busbw, "ok");
        std::fflush(stdout);
    }
}

std::shared_ptr<gloo::transport::Device> makeDevice(const Options &o)
{
    if (o.device == "tcp") {
        gloo::transport::tcp::attr a;
        if (!o.iface.empty())
            a.iface = o.iface;
        else
            a.hostname = o.host;
        return gloo::transport::tcp::CreateDevice(a);
    }
    glucx::gloo::attr a;
    a.iface = o.iface;
    a.source = "--iface";
    return glucx::gloo::CreateDevice(a);
}

} // namespace

int main(int argc, char **argv)
{
    const Options o = parse(argc, argv);
    Job job{o, nullptr};
    try {
        job.what = "creating the " + o.device + " device";
        auto dev = makeDevice(o);
        job.what = "connecting through the FileStore at " + o.store;
        std::error_code ec;
        std::filesystem::create_directories(o.store, ec); /* the ranks may race to create it */
        gloo::rendezvous::FileStore store(o.store);
        auto ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size, o.base);
        ctx->setTimeout(std::chrono::milliseconds(o.timeoutMs));
        ctx->connectFullMesh(store, dev);
        job.ctx = ctx;
        if (o.rank == 0) {
            std::printf("# glucx-gloo-bench: device %s (%s), %d ranks, base %d, float32 sum in "
                        "place, sizes %zu..%zu x%ld\n",
                        o.device.c_str(), dev->str().c_str(), o.size, o.base, o.minBytes,
                        o.maxBytes, o.factor);
            std::printf("# time: per-run mean of ITERS back-to-back runs, maximum over ranks, "
                        "median of %ld samples; busbw = algbw * 2(n-1)/n (nccl-tests); one run "
                        "per size checked exactly first\n",
                        o.samples);
            std::printf("# device algo bytes count iters time_us algbw busbw check\n");
            std::fflush(stdout);
        }
        for (const std::string &algo : o.algos)
            for (size_t b = o.minBytes; b <= o.maxBytes; b *= static_cast<size_t>(o.factor)) {
                benchSize(job, algo, b);
                if (b > SIZE_MAX / static_cast<size_t>(o.factor))
                    break;
            }
    } catch (const std::exception &e) {
        die("rank " + std::to_string(o.rank) + " of " + std::to_string(o.size) + ", device " +
            o.device + ": " + job.what + ": " + e.what());
    }
    return 0;
}
