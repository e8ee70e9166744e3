/*
 * Gloo's class-template algorithms (gloo/allreduce_ring.h ... gloo/reduce_scatter.h), which run
 * on the bound-buffer API (Pair::createSendBuffer / createRecvBuffer, Buffer::send / waitSend /
 * waitRecv), over the glucx device and, in the same ranks, over Gloo's own TCP device as the
 * reference. Each algorithm object runs several times with new inputs; after every run each
 * device's result must equal the values computed independently from the data generator (exact
 * integer sums) and the two devices' buffers must be equal bit for bit. Where Gloo's algorithm
 * refuses a configuration (its constructor throws, e.g. AllgatherRing on one rank), both devices
 * must refuse it with the same exception type.
 *
 * One job sweeps the group sizes: ranks 0..k-1 of the job form the k-rank contexts (one per
 * device), run every case, and signal that they are done; a rank joins the next group only once
 * every member of the previous one is done, so one group runs at a time. The full sweep 1..11
 * runs as threads; a representative subset runs as processes, with a message size above UCX's
 * rendezvous threshold.
 */
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include <gloo/algorithm.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/pairwise_exchange.h>
#include <gloo/reduce_scatter.h>

#include "harness.h"
#include "values.h"

namespace glucx_test
{
namespace
{

/* Elements are integers below 2^14 in magnitude (floats: scaled by 2^-3), so the sum of the
 * 22 contributions of 11 ranks x 2 pointers is exact in any order. */
constexpr int kBits = 14;

template <typename T> T Scale(int64_t k)
{
    if constexpr (std::is_integral_v<T>)
        return static_cast<T>(k);
    else
        return static_cast<T>(std::ldexp(static_cast<double>(k), -3));
}

/* Element i of contributor c's input for seed. */
template <typename T> T Elem(uint64_t seed, int c, size_t i)
{
    return Scale<T>(Gen(kBits, seed, c, i));
}

/* The exact sum over contributors 0..n-1 of element i. */
template <typename T> T SumOf(uint64_t seed, int n, size_t i)
{
    int64_t s = 0;
    for (int c = 0; c < n; c++)
        s += Gen(kBits, seed, c, i);
    return Scale<T>(s);
}

struct Device {
    std::string name;
    std::shared_ptr<::gloo::Context> ctx;
};

/* One group: ranks 0..k-1 with a context per device. Every member runs the same sequence of
 * cases, so the seed and tag counters agree across ranks. */
struct Group {
    RankEnv &env;
    int k;
    std::vector<Device> devs;
    int runs;
    /* a barrier after every run, not only after the last (see EndRun) */
    bool settle_each_run = false;
    uint64_t calls = 0;

    int rank() const
    {
        return env.rank;
    }
    uint64_t Next()
    {
        return Mix64((uint64_t(k) << 40) + ++calls);
    }
};

/* Compare device d's bytes with device 0's (the glucx device when both run). */
void CheckSameBytes(const Group &g, size_t d, const void *a, const void *b, size_t bytes,
                    const std::string &what)
{
    if (bytes == 0 || std::memcmp(a, b, bytes) == 0)
        return;
    size_t at = 0;
    while (static_cast<const char *>(a)[at] == static_cast<const char *>(b)[at])
        at++;
    RANK_CHECK(false, what, ": the ", g.devs[0].name, " and ", g.devs[d].name,
               " devices' results differ (first at byte ", at, " of ", bytes, ")");
}

using AlgoPtr = std::unique_ptr<::gloo::Algorithm>;

/* Every device's context runs a barrier (Gloo's function-style one, on unbound buffers). */
void Settle(Group &g, const std::string &why)
{
    const uint32_t tag = static_cast<uint32_t>(g.Next());
    for (const Device &d : g.devs) {
        ::gloo::BarrierOptions opts(d.ctx);
        opts.setTag(tag);
        Caught c = CatchFrom([&] { ::gloo::barrier(opts); });
        RANK_CHECK(!c.threw, "the barrier ", why, " on the ", d.name, " device threw ",
                   c.description);
    }
}

/*
 * After a run of the algorithm objects: a barrier after the last run, and after every run when
 * g.settle_each_run. Gloo's algorithms do not wait for all their sends (e.g. the data sends of
 * AllreduceHalvingDoubling, the larger-block sends of ReduceScatterHalvingDoubling), so a rank
 * may return from run() while its messages are still on the way: destroying the objects (or
 * the context), or refilling the inputs, would then cut them off or change them in flight, on
 * any transport.
 */
void EndRun(Group &g, int run)
{
    if (run + 1 < g.runs && !g.settle_each_run)
        return;
    Settle(g, Str("after run ", run));
}

/*
 * Construct the algorithm on every device. If Gloo refuses the configuration (the constructor
 * throws), every device must refuse it with the same exception type, and refusal must be
 * expected; then the result is empty.
 */
std::vector<AlgoPtr> Construct(Group &g, const std::string &what, bool expect_refusal,
                               const std::function<AlgoPtr(size_t d)> &make)
{
    std::vector<AlgoPtr> algos(g.devs.size());
    std::vector<Caught> caught;
    for (size_t d = 0; d < g.devs.size(); d++)
        caught.push_back(CatchFrom([&] { algos[d] = make(d); }));
    for (size_t d = 0; d < g.devs.size(); d++) {
        RANK_CHECK(caught[d].threw == caught[0].threw, what, ": the ", g.devs[0].name,
                   " device's constructor ", caught[0].threw ? "threw " : "did not throw",
                   caught[0].description, " but the ", g.devs[d].name, " device's ",
                   caught[d].threw ? "threw " : "did not throw", caught[d].description);
        if (caught[d].threw) {
            auto type = [](const std::string &desc) { return desc.substr(0, desc.find(':')); };
            RANK_CHECK(type(caught[d].description) == type(caught[0].description), what,
                       ": the devices refuse differently: ", caught[0].description, " vs ",
                       caught[d].description);
        }
    }
    if (caught.empty() || !caught[0].threw) {
        RANK_CHECK(!expect_refusal, what, ": constructed although Gloo refuses it");
        return algos;
    }
    RANK_CHECK(expect_refusal, what, ": the constructor threw ", caught[0].description);
    RANK_CHECK(caught[0].description.rfind("gloo::EnforceNotMet", 0) == 0, what, ": refused with ",
               caught[0].description, ", not gloo::EnforceNotMet");
    return {};
}

/* Run device d's algorithm object; an exception is reported with what failed where. */
void RunOne(const Group &g, std::vector<AlgoPtr> &algos, size_t d, const std::string &what, int run)
{
    Caught c = CatchFrom([&] { algos[d]->run(); });
    RANK_CHECK(!c.threw, what, ", run ", run, ", ", g.devs[d].name, " device: run() threw ",
               c.description);
}

void RunAll(const Group &g, std::vector<AlgoPtr> &algos, const std::string &what, int run)
{
    for (size_t d = 0; d < algos.size(); d++)
        RunOne(g, algos, d, what, run);
}

template <typename T> const char *TypeName()
{
    return Dtype<T>::kName;
}

// ---- allreduce: ring, ring chunked, halving-doubling, bcube --------------------------------

/* mem[d][p]: device d's p-th buffer of a case (at least one element: never a null pointer) */
template <typename T> using Mem = std::vector<std::vector<std::vector<T>>>;

/*
 * The cases whose data are nptrs buffers of n elements per rank (allreduce, broadcast,
 * reduce-scatter): construct the algorithm on every device over its buffers; each run fills
 * every buffer with this rank's inputs (Elem of contributor rank * nptrs + p), runs, and calls
 * check(mem, d, seed, at) for each device d.
 */
template <typename T>
void PointerCase(Group &g, const std::string &what, size_t n, int nptrs,
                 const std::function<AlgoPtr(const std::shared_ptr<::gloo::Context> &,
                                             const std::vector<T *> &)> &make,
                 const std::function<void(Mem<T> &, size_t, uint64_t, const std::string &)> &check)
{
    const size_t nd = g.devs.size();
    Mem<T> mem(nd, std::vector<std::vector<T>>(nptrs, std::vector<T>(std::max<size_t>(n, 1))));
    auto algos = Construct(g, what, false, [&](size_t d) {
        std::vector<T *> ptrs;
        for (auto &v : mem[d])
            ptrs.push_back(v.data());
        return make(g.devs[d].ctx, ptrs);
    });
    for (int run = 0; run < g.runs; run++) {
        const uint64_t seed = g.Next();
        for (size_t d = 0; d < nd; d++)
            for (int p = 0; p < nptrs; p++)
                for (size_t i = 0; i < n; i++)
                    mem[d][p][i] = Elem<T>(seed, g.rank() * nptrs + p, i);
        RunAll(g, algos, what, run);
        EndRun(g, run);
        for (size_t d = 0; d < nd; d++)
            check(mem, d, seed, Str(what, ", run ", run, ", ", g.devs[d].name, " device"));
    }
}

/* Every pointer of device d holds expect(i) and device 0's bytes. */
template <typename T, typename F>
void CheckAllPointers(const Group &g, Mem<T> &mem, size_t d, size_t n, F expect,
                      const std::string &at)
{
    for (size_t p = 0; p < mem[d].size(); p++) {
        const std::string where = Str(at, ", pointer ", p);
        CheckArray(mem[d][p].data(), n, expect, where);
        CheckSameBytes(g, d, mem[0][p].data(), mem[d][p].data(), n * sizeof(T), where);
    }
}

template <typename T>
using MakeAllreduce =
    std::function<AlgoPtr(const std::shared_ptr<::gloo::Context> &, const std::vector<T *> &, int)>;

template <typename T>
void Allreduce(Group &g, const char *name, size_t n, int nptrs, const MakeAllreduce<T> &make)
{
    PointerCase<T>(
        g, Str(name, "<", TypeName<T>(), "> k=", g.k, " count=", n, " pointers=", nptrs), n, nptrs,
        [&](auto &ctx, auto &ptrs) { return make(ctx, ptrs, static_cast<int>(n)); },
        [&](Mem<T> &mem, size_t d, uint64_t seed, const std::string &at) {
            CheckAllPointers<T>(
                g, mem, d, n, [&](size_t i) { return SumOf<T>(seed, g.k * nptrs, i); }, at);
        });
}

/* AllreduceBcube needs the group size to be a power of the context's base. */
int BcubeBase(int k)
{
    for (int base : {2, 3})
        for (int p = 1; p <= k; p *= base)
            if (p == k)
                return base;
    return k; /* one group of k nodes: a single step */
}

// ---- allgather ring -------------------------------------------------------------------------

template <typename T> void Allgather(Group &g, size_t n, int nptrs)
{
    const std::string what =
        Str("AllgatherRing<", TypeName<T>(), "> k=", g.k, " count=", n, " inputs=", nptrs);
    const size_t nd = g.devs.size(), total = static_cast<size_t>(g.k) * nptrs * n;
    std::vector<std::vector<std::vector<T>>> in(
        nd, std::vector<std::vector<T>>(nptrs, std::vector<T>(std::max<size_t>(n, 1))));
    std::vector<std::vector<T>> out(nd, std::vector<T>(std::max<size_t>(total, 1)));
    /* Gloo's ring needs a left and a right neighbour: one rank is refused */
    auto algos = Construct(g, what, g.k == 1, [&](size_t d) {
        std::vector<const T *> ptrs;
        for (auto &v : in[d])
            ptrs.push_back(v.data());
        return std::make_unique<::gloo::AllgatherRing<T>>(g.devs[d].ctx, ptrs, out[d].data(),
                                                          static_cast<int>(n));
    });
    if (algos.empty())
        return;
    for (int run = 0; run < g.runs; run++) {
        const uint64_t seed = g.Next();
        for (size_t d = 0; d < nd; d++) {
            for (int p = 0; p < nptrs; p++)
                for (size_t i = 0; i < n; i++)
                    in[d][p][i] = Elem<T>(seed, g.rank() * nptrs + p, i);
            std::fill(out[d].begin(), out[d].end(), Poison<T>());
        }
        /* the output is the receive buffer, which a peer's run writes as soon as it starts:
         * every rank poisons its own before any rank runs */
        Settle(g, Str("before run ", run));
        RunAll(g, algos, what, run);
        EndRun(g, run);
        for (size_t d = 0; d < nd; d++) {
            const std::string at = Str(what, ", run ", run, ", ", g.devs[d].name, " device");
            /* rank r's input p lands at (r * nptrs + p) * n */
            CheckArray(
                out[d].data(), total,
                [&](size_t j) { return Elem<T>(seed, static_cast<int>(j / n), j % n); }, at);
            CheckSameBytes(g, d, out[0].data(), out[d].data(), total * sizeof(T), at);
        }
    }
}

// ---- broadcast one to all -------------------------------------------------------------------

template <typename T> void Broadcast(Group &g, size_t n, int nptrs, int root, int root_ptr)
{
    /* every rank fills every pointer, so a value not overwritten is seen */
    PointerCase<T>(
        g,
        Str("BroadcastOneToAll<", TypeName<T>(), "> k=", g.k, " count=", n, " pointers=", nptrs,
            " root=", root, " root pointer=", root_ptr),
        n, nptrs,
        [&](auto &ctx, auto &ptrs) {
            return std::make_unique<::gloo::BroadcastOneToAll<T>>(ctx, ptrs, n, root, root_ptr);
        },
        [&](Mem<T> &mem, size_t d, uint64_t seed, const std::string &at) {
            CheckAllPointers<T>(
                g, mem, d, n, [&](size_t i) { return Elem<T>(seed, root * nptrs + root_ptr, i); },
                at);
        });
}

// ---- barriers -------------------------------------------------------------------------------

/* No rank leaves a barrier before every rank entered it: ranks enter at staggered times and
 * mark their arrival out of band; after the barrier every mark must be there. */
void Barrier(Group &g, bool to_one, int root)
{
    const std::string what =
        to_one ? Str("BarrierAllToOne k=", g.k, " root=", root) : Str("BarrierAllToAll k=", g.k);
    auto algos = Construct(g, what, false, [&](size_t d) -> AlgoPtr {
        if (to_one)
            return std::make_unique<::gloo::BarrierAllToOne>(g.devs[d].ctx, root);
        return std::make_unique<::gloo::BarrierAllToAll>(g.devs[d].ctx);
    });
    for (int run = 0; run < g.runs; run++) {
        for (size_t d = 0; d < g.devs.size(); d++) {
            const std::string mark = Str("barrier.", g.k, ".", g.Next(), ".");
            std::this_thread::sleep_for(Ms(5 * ((g.rank() + run) % g.k)));
            g.env.Signal(mark + std::to_string(g.rank()));
            RunOne(g, algos, d, what, run);
            for (int r = 0; r < g.k; r++)
                RANK_CHECK(g.env.IsSignalled(mark + std::to_string(r)), what, ", run ", run, ", ",
                           g.devs[d].name, " device: returned before rank ", r, " entered it");
        }
        EndRun(g, run);
    }
}

// ---- pairwise exchange ----------------------------------------------------------------------

/* Gloo's PairwiseExchange with its buffers reachable, so the test fills and checks them. */
class Pairwise : public ::gloo::PairwiseExchange
{
  public:
    using PairwiseExchange::PairwiseExchange;
    ~Pairwise() override
    {
        /* allocated with new[] but held by std::unique_ptr<char>: free them the right way */
        delete[] sendBufferData_.release();
        delete[] recvBufferData_.release();
    }
    char *Send()
    {
        return sendBufferData_.get();
    }
    char *Recv()
    {
        return recvBufferData_.get();
    }
    size_t BytesPerMsg() const
    {
        return static_cast<size_t>(bytesPerMsg_);
    }
};

/* Largest number of destinations Gloo's exchange can take on k ranks (rank ^ 2^i < k). */
int PairwiseMaxDestinations(int k)
{
    int d = 0;
    while ((2 << d) <= k) {
        bool ok = true;
        for (int r = 0; r < k; r++)
            ok = ok && (r ^ (1 << d)) < k;
        if (!ok)
            break;
        d++;
    }
    return d;
}

uint8_t ByteOf(uint64_t seed, int rank, size_t j)
{
    return static_cast<uint8_t>(Mix64(seed ^ Mix64(static_cast<uint64_t>(rank) << 32 | j)));
}

void Exchange(Group &g, size_t bytes, int dests)
{
    const std::string what =
        Str("PairwiseExchange k=", g.k, " bytes=", bytes, " destinations=", dests);
    /* Gloo refuses an odd group and empty messages before it calls the transport, and its
     * refusal frees a new[] array with delete (a sanitized build stops there): not tried */
    if (g.k % 2 != 0 || bytes / dests == 0)
        return;
    auto algos = Construct(g, what, false, [&](size_t d) -> AlgoPtr {
        return std::make_unique<Pairwise>(g.devs[d].ctx, static_cast<int>(bytes), dests);
    });
    for (int run = 0; run < g.runs; run++) {
        const uint64_t seed = g.Next();
        for (auto &a : algos) {
            auto *x = static_cast<Pairwise *>(a.get());
            for (size_t j = 0; j < bytes; j++)
                x->Send()[j] = static_cast<char>(ByteOf(seed, g.rank(), j));
            std::memset(x->Recv(), 0xee, bytes);
        }
        /* as for AllgatherRing: the peers write into Recv() as soon as they run */
        Settle(g, Str("before run ", run));
        RunAll(g, algos, what, run);
        EndRun(g, run);
        for (size_t d = 0; d < algos.size(); d++) {
            auto *x = static_cast<Pairwise *>(algos[d].get());
            const size_t per = x->BytesPerMsg();
            for (int i = 0; i < dests; i++) {
                const int peer = g.rank() ^ (1 << i);
                for (size_t b = 0; b < per; b++) {
                    const size_t j = i * per + b;
                    RANK_CHECK(static_cast<uint8_t>(x->Recv()[j]) == ByteOf(seed, peer, j), what,
                               ", run ", run, ", ", g.devs[d].name, " device: byte ", b,
                               " of the message from rank ", peer, " is wrong");
                }
            }
            CheckSameBytes(g, d, static_cast<Pairwise *>(algos[0].get())->Recv(), x->Recv(),
                           per * dests, Str(what, ", run ", run));
        }
    }
}

// ---- reduce-scatter halving-doubling --------------------------------------------------------

template <typename T>
void ReduceScatter(Group &g, size_t n, int nptrs, const std::vector<int> &counts, const char *dist)
{
    size_t offset = 0;
    for (int r = 0; r < g.rank(); r++)
        offset += static_cast<size_t>(counts[r]);
    const size_t mine = static_cast<size_t>(counts[g.rank()]);
    PointerCase<T>(
        g,
        Str("ReduceScatterHalvingDoubling<", TypeName<T>(), "> k=", g.k, " count=", n,
            " pointers=", nptrs, " distribution=", dist),
        n, nptrs,
        [&](auto &ctx, auto &ptrs) {
            return std::make_unique<::gloo::ReduceScatterHalvingDoubling<T>>(
                ctx, ptrs, static_cast<int>(n), counts);
        },
        [&](Mem<T> &mem, size_t d, uint64_t seed, const std::string &at) {
            /* this rank's block of the reduced vector, at the start of the first pointer */
            CheckArray(
                mem[d][0].data(), mine,
                [&](size_t i) { return SumOf<T>(seed, g.k * nptrs, offset + i); }, at);
            /* the other pointers are copies of the first (whole buffers) */
            for (int p = 1; p < nptrs; p++)
                RANK_CHECK(n == 0 ||
                               std::memcmp(mem[d][p].data(), mem[d][0].data(), n * sizeof(T)) == 0,
                           at, ": pointer ", p, " is not a copy of pointer 0");
            CheckSameBytes(g, d, mem[0][0].data(), mem[d][0].data(), mine * sizeof(T), at);
        });
}

/* Gloo's own distribution: blocks of ceil(n / k), the last ones short or empty. */
std::vector<int> ChunkedCounts(size_t n, int k)
{
    std::vector<int> c;
    size_t chunk = (n + k - 1) / k, left = n;
    for (int r = 0; r < k; r++) {
        c.push_back(static_cast<int>(std::min(chunk, left)));
        left -= std::min(chunk, left);
    }
    return c;
}

/* An uneven distribution: rank r gets about (r + 1) / (1 + ... + k) of the elements. */
std::vector<int> UnevenCounts(size_t n, int k)
{
    std::vector<int> c;
    size_t given = 0, weights = static_cast<size_t>(k) * (k + 1) / 2, acc = 0;
    for (int r = 0; r < k; r++) {
        acc += static_cast<size_t>(r + 1);
        size_t upto = n * acc / weights;
        c.push_back(static_cast<int>(upto - given));
        given = upto;
    }
    return c;
}

// ---- dispatch -------------------------------------------------------------------------------

template <typename T> void RunCases(Group &g, const std::string &algo, size_t n, size_t index)
{
    const int nptrs = static_cast<int>(index % 2) + 1; /* alternate one and two pointers */
    if (algo == "ring")
        Allreduce<T>(g, "AllreduceRing", n, nptrs, [](auto &ctx, auto &ptrs, int count) {
            return std::make_unique<::gloo::AllreduceRing<T>>(ctx, ptrs, count);
        });
    else if (algo == "ring_chunked")
        Allreduce<T>(g, "AllreduceRingChunked", n, nptrs, [](auto &ctx, auto &ptrs, int count) {
            return std::make_unique<::gloo::AllreduceRingChunked<T>>(ctx, ptrs, count);
        });
    else if (algo == "halving_doubling")
        Allreduce<T>(g, "AllreduceHalvingDoubling", n, nptrs, [](auto &ctx, auto &ptrs, int count) {
            return std::make_unique<::gloo::AllreduceHalvingDoubling<T>>(ctx, ptrs, count);
        });
    else if (algo == "bcube")
        Allreduce<T>(g, "AllreduceBcube", n, nptrs, [](auto &ctx, auto &ptrs, int count) {
            return std::make_unique<::gloo::AllreduceBcube<T>>(ctx, ptrs, count);
        });
    else if (algo == "allgather_ring")
        Allgather<T>(g, n, nptrs);
    else if (algo == "broadcast") {
        const int roots[] = {0, g.k - 1, g.k / 2};
        Broadcast<T>(g, n, nptrs, roots[index % 3], nptrs - 1);
    } else if (algo == "reduce_scatter") {
        ReduceScatter<T>(g, n, nptrs, ChunkedCounts(n, g.k), "chunked");
        if (n >= static_cast<size_t>(g.k) * (g.k + 1) / 2)
            ReduceScatter<T>(g, n, nptrs, UnevenCounts(n, g.k), "uneven");
    } else
        RANK_CHECK(false, "unknown algorithm ", algo);
}

void RunGroup(Group &g, const std::string &algo, const std::vector<std::string> &dtypes,
              const std::vector<size_t> &counts)
{
    if (algo == "barrier_all_to_all") {
        Barrier(g, false, 0);
        return;
    }
    if (algo == "barrier_all_to_one") {
        Barrier(g, true, 0);
        if (g.k > 1)
            Barrier(g, true, g.k - 1);
        return;
    }
    if (algo == "pairwise_exchange") {
        const int most = std::max(PairwiseMaxDestinations(g.k), 1);
        for (size_t i = 0; i < counts.size(); i++)
            Exchange(g, counts[i] * sizeof(float), static_cast<int>(1 + i % most));
        return;
    }
    for (size_t i = 0; i < counts.size(); i++)
        for (const std::string &dtype : dtypes) {
            if (dtype == "float")
                RunCases<float>(g, algo, counts[i], i);
            else if (dtype == "int")
                RunCases<int32_t>(g, algo, counts[i], i);
            else if (dtype == "double")
                RunCases<double>(g, algo, counts[i], i);
            else
                RANK_CHECK(false, "unknown dtype ", dtype);
        }
}

/* Wait until every rank in 0..k-1 signalled name.<rank>; a rank that failed ends the wait. */
void AwaitGroup(RankEnv &env, const std::string &name, int k, Ms limit)
{
    const auto end = Clock::now() + limit;
    for (int r = 0; r < k; r++)
        while (!env.IsSignalled(Str(name, ".", r))) {
            for (int f = 0; f < env.size; f++)
                RANK_CHECK(!env.IsSignalled(Str("failed.", f)), "rank ", f,
                           " failed before this rank could join (see its report)");
            RANK_CHECK(Clock::now() < end, "rank ", r, " did not finish ", name, " within ",
                       limit.count(), " ms");
            std::this_thread::sleep_for(Ms(2));
        }
}

/*
 * params: algo=<ring|ring_chunked|halving_doubling|bcube|allgather_ring|broadcast|
 *               barrier_all_to_all|barrier_all_to_one|pairwise_exchange|reduce_scatter>
 *         sizes=1,2,... (group sizes, ascending, at most the job's size)
 *         counts=0,1,... (elements; bytes / 4 for pairwise_exchange) [dtypes=float,int,double]
 *         [devices=glucx,tcp] [runs=3] [timeout_ms=30000]
 */
GLUCX_RANK_BODY(algorithm)
{
    try {
        const std::string algo = env.params.Get("algo");
        const Ms timeout = Scaled(Ms(env.params.GetInt("timeout_ms", 30000)));
        std::vector<size_t> counts;
        for (const std::string &c : SplitList(env.params.Get("counts", "0,1,3,257,12345")))
            counts.push_back(std::stoull(c));
        const auto dtypes = SplitList(env.params.Get("dtypes", "float"));
        const auto devices = SplitList(env.params.Get("devices", "glucx,tcp"));
        int prev = 0;
        for (const std::string &size : SplitList(env.params.Get("sizes", "1,2,3"))) {
            const int k = std::stoi(size);
            RANK_CHECK(k > prev && k <= env.size, "bad group size ", k);
            if (env.rank < k) {
                if (prev > 0)
                    AwaitGroup(env, Str("group", prev, ".done"), prev, timeout * 8);
                Group g{env, k, {}, static_cast<int>(env.params.GetInt("runs", 3))};
                /* Two of Gloo's algorithms are not safe back to back, on any transport (seen
                 * on Gloo's TCP): AllreduceBcube with two or more steps (a rank's next run may
                 * write into a peer's receive buffer of a later step before the peer read it)
                 * and ReduceScatterHalvingDoubling on non-powers of two (a rank returns before
                 * its sends to the larger block are out; its next inputs would replace them) */
                g.settle_each_run = algo == "bcube" || algo == "reduce_scatter" ||
                                    env.params.GetInt("settle", 0) != 0;
                const int base = algo == "bcube" ? BcubeBase(k) : 2;
                for (const std::string &dev : devices) {
                    auto device = dev == "tcp" ? env.TcpDevice() : env.Device();
                    RANK_CHECK(dev == "tcp" || dev == "glucx", "unknown device ", dev);
                    g.devs.push_back(
                        {dev, env.ConnectGroup(Str(k, ".", dev), k, timeout, device, base)});
                }
                RunGroup(g, algo, dtypes, counts);
                env.Signal(Str("group", k, ".done.", env.rank));
            }
            prev = k;
        }
    } catch (...) {
        env.Signal(Str("failed.", env.rank));
        throw;
    }
}

// ---- GoogleTest cases -----------------------------------------------------------------------

struct AlgoCase {
    std::string algo;
    /* group sizes of the full sweep (threads) and of the process subset */
    std::string thread_sizes;
    std::string process_sizes;
    std::string params;
};

void PrintTo(const AlgoCase &c, std::ostream *os)
{
    *os << c.algo;
}

std::string AlgoName(const ::testing::TestParamInfo<AlgoCase> &info)
{
    return info.param.algo;
}

const char kAllSizes[] = "1,2,3,4,5,6,7,8,9,10,11";

std::vector<AlgoCase> AlgoCases()
{
    return {
        {"ring", kAllSizes, "1,2,3,5", ""},
        {"ring_chunked", kAllSizes, "1,2,3,5", ""},
        {"halving_doubling", kAllSizes, "1,2,3,5", ""},
        {"bcube", kAllSizes, "1,2,3,4", ""},
        {"allgather_ring", kAllSizes, "1,2,3,5", ""},
        {"broadcast", kAllSizes, "1,2,3,5", ""},
        {"barrier_all_to_all", kAllSizes, "1,2,3,5", ""},
        {"barrier_all_to_one", kAllSizes, "1,2,3,5", ""},
        {"pairwise_exchange", "2,4,6,8,10", "2,4", ""}, /* Gloo: even groups only */
        {"reduce_scatter", kAllSizes, "1,2,3,5", ""},
    };
}

int LargestSize(const std::string &sizes)
{
    int most = 1;
    for (const std::string &s : SplitList(sizes))
        most = std::max(most, std::stoi(s));
    return most;
}

void RunAlgoCase(const AlgoCase &c, Mode mode, const std::string &extra)
{
#if defined(__SANITIZE_ADDRESS__)
    /* Gloo's ReduceScatterHalvingDoubling<T>::run() (libgloo 5b14351's header) memcpy()s between
     * overlapping ranges and its constructor takes &v[0] of an empty vector: AddressSanitizer
     * stops it on Gloo's own code, on the TCP reference device as on glucx. The optimized build
     * runs it (CI runs both). */
    if (c.algo == "reduce_scatter")
        GTEST_SKIP() << "Gloo's ReduceScatterHalvingDoubling is undefined behaviour under "
                        "AddressSanitizer (overlapping memcpy in Gloo's run()); checked in the "
                        "optimized build";
#endif
    Job job;
    job.body = "algorithm";
    const std::string &sizes = mode == Mode::kThreads ? c.thread_sizes : c.process_sizes;
    job.size = LargestSize(sizes);
    job.mode = mode;
    job.params = Str("algo=", c.algo, " sizes=", sizes, c.params.empty() ? "" : " ", c.params,
                     extra.empty() ? "" : " ", extra);
    /* GLOO_TEST_ALGO_PARAMS overrides parameters, e.g. "devices=tcp" runs the reference device
     * alone (a check of the test itself) */
    if (const char *more = std::getenv("GLOO_TEST_ALGO_PARAMS"))
        job.params += Str(" ", more);
    job.deadline = Ms(120000);
    ExpectJobOk(job);
}

class BoundAlgorithmThreads : public ::testing::TestWithParam<AlgoCase>
{
};
class BoundAlgorithmProcesses : public ::testing::TestWithParam<AlgoCase>
{
};

/* Group sizes 1..11 as threads: counts 0, 1, fewer than the ranks, odd, several chunks. */
TEST_P(BoundAlgorithmThreads, MatchesTcpAndExpected)
{
    RunAlgoCase(GetParam(), Mode::kThreads, "");
}

/* A subset as processes, with float and int data and a message above the rendezvous threshold
 * (262147 floats, about 1 MiB). */
TEST_P(BoundAlgorithmProcesses, MatchesTcpAndExpected)
{
    RunAlgoCase(GetParam(), Mode::kProcesses, "dtypes=float,int counts=0,7,1029,262147");
}

INSTANTIATE_TEST_SUITE_P(, BoundAlgorithmThreads, ::testing::ValuesIn(AlgoCases()), AlgoName);
INSTANTIATE_TEST_SUITE_P(, BoundAlgorithmProcesses, ::testing::ValuesIn(AlgoCases()), AlgoName);

} // namespace
} // namespace glucx_test
