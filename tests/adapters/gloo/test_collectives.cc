/*
 * Gloo's function-style collectives (gloo/allreduce.h ... gloo/barrier.h) run over the glucx
 * device: every collective, its variants (in place or not, several roots, several inputs and
 * outputs, small segments), dtypes int/float/double and element counts 1, odd and large, on
 * 2, 3 and 4 ranks, as processes and as threads. Results are checked exactly against values
 * computed independently from the data generator (values.h).
 */
#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include "harness.h"
#include "values.h"

namespace glucx_test
{
namespace
{

/* State shared by the collectives of one rank: the context and the tag/seed sequences (every
 * rank runs the same sequence of collectives, so they agree on both). */
struct Run {
    RankEnv &env;
    std::shared_ptr<::gloo::Context> ctx;
    bool quick; /* only the first variant of each collective */
    uint32_t calls = 0;

    int rank() const
    {
        return ctx->rank;
    }
    int size() const
    {
        return ctx->size;
    }
    /* Distinct 32-bit tags spread over the whole range (exercises the slot-to-tag mapping). */
    uint32_t NextTag()
    {
        return static_cast<uint32_t>(Mix64(++calls) >> 32);
    }
    uint64_t NextSeed()
    {
        return Mix64(0x5eed0000ULL + calls);
    }
    std::vector<int> Roots() const
    {
        std::vector<int> roots{0, size() - 1, 1 % size()};
        std::sort(roots.begin(), roots.end());
        roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
        return roots;
    }
};

template <typename T> std::string What(const char *op, const char *variant, size_t n)
{
    return Str(op, "(", variant, ") ", Dtype<T>::kName, " x ", n);
}

/* Sum over all ranks of the integers behind element i for the given seeds. */
int64_t SumOverRanks(int size, int bits, std::initializer_list<uint64_t> seeds, uint64_t i)
{
    int64_t s = 0;
    for (int r = 0; r < size; r++)
        for (uint64_t seed : seeds)
            s += Gen(bits, seed, r, i);
    return s;
}

// ---- allreduce ---------------------------------------------------------------------------------

template <typename T>
void Allreduce(Run &run, size_t n, ::gloo::AllreduceOptions::Algorithm algo, const char *name)
{
    const int size = run.size(), rank = run.rank();
    constexpr int bits = Dtype<T>::kBits;

    { /* in place */
        uint32_t tag = run.NextTag();
        uint64_t seed = run.NextSeed();
        std::vector<T> out = Values<T>(seed, rank, n);
        ::gloo::AllreduceOptions opts(run.ctx);
        opts.setAlgorithm(algo);
        opts.setOutput(out.data(), n);
        opts.setReduceFunction(Sum<T>);
        opts.setTag(tag);
        ::gloo::allreduce(opts);
        CheckArray(
            out.data(), n,
            [&](size_t i) { return FromInt<T>(SumOverRanks(size, bits, {seed}, i)); },
            What<T>(name, "in place", n));
    }
    if (run.quick)
        return;
    { /* separate input and output; the input stays unchanged */
        uint32_t tag = run.NextTag();
        uint64_t seed = run.NextSeed();
        std::vector<T> in = Values<T>(seed, rank, n);
        std::vector<T> out(n, Poison<T>());
        ::gloo::AllreduceOptions opts(run.ctx);
        opts.setAlgorithm(algo);
        opts.setInput(in.data(), n);
        opts.setOutput(out.data(), n);
        opts.setReduceFunction(Sum<T>);
        opts.setTag(tag);
        ::gloo::allreduce(opts);
        CheckArray(
            out.data(), n,
            [&](size_t i) { return FromInt<T>(SumOverRanks(size, bits, {seed}, i)); },
            What<T>(name, "separate output", n));
        CheckArray(
            in.data(), n, [&](size_t i) { return Value<T>(seed, rank, i); },
            What<T>(name, "input left unchanged", n));
    }
    { /* two inputs and two outputs per rank */
        uint32_t tag = run.NextTag();
        uint64_t seed0 = run.NextSeed(), seed1 = seed0 ^ 0xabcdef;
        std::vector<T> in0 = Values<T>(seed0, rank, n), in1 = Values<T>(seed1, rank, n);
        std::vector<T> out0(n, Poison<T>()), out1(n, Poison<T>());
        ::gloo::AllreduceOptions opts(run.ctx);
        opts.setAlgorithm(algo);
        opts.setInputs(std::vector<T *>{in0.data(), in1.data()}, n);
        opts.setOutputs(std::vector<T *>{out0.data(), out1.data()}, n);
        opts.setReduceFunction(Sum<T>);
        opts.setTag(tag);
        ::gloo::allreduce(opts);
        auto expect = [&](size_t i) {
            return FromInt<T>(SumOverRanks(size, bits, {seed0, seed1}, i));
        };
        CheckArray(out0.data(), n, expect, What<T>(name, "2 inputs, output 0", n));
        CheckArray(out1.data(), n, expect, What<T>(name, "2 inputs, output 1", n));
    }
    if (n > 1) { /* 64-byte segments: many messages per chunk in flight on one buffer */
        uint32_t tag = run.NextTag();
        uint64_t seed = run.NextSeed();
        std::vector<T> out = Values<T>(seed, rank, n);
        ::gloo::AllreduceOptions opts(run.ctx);
        opts.setAlgorithm(algo);
        opts.setOutput(out.data(), n);
        opts.setReduceFunction(Sum<T>);
        opts.setTag(tag);
        opts.setMaxSegmentSize(64);
        ::gloo::allreduce(opts);
        CheckArray(
            out.data(), n,
            [&](size_t i) { return FromInt<T>(SumOverRanks(size, bits, {seed}, i)); },
            What<T>(name, "64-byte segments", n));
    }
}

// ---- allgather, allgatherv ------------------------------------------------------------------

template <typename T> void Allgather(Run &run, size_t n)
{
    const int size = run.size(), rank = run.rank();
    for (int inplace = 0; inplace < (run.quick ? 1 : 2); inplace++) {
        uint32_t tag = run.NextTag();
        uint64_t seed = run.NextSeed();
        std::vector<T> in = Values<T>(seed, rank, n);
        std::vector<T> out(n * size, Poison<T>());
        ::gloo::AllgatherOptions opts(run.ctx);
        if (inplace)
            std::copy(in.begin(), in.end(), out.begin() + rank * n);
        else
            opts.setInput(in.data(), n);
        opts.setOutput(out.data(), n * size);
        opts.setTag(tag);
        ::gloo::allgather(opts);
        CheckArray(
            out.data(), n * size, [&](size_t j) { return Value<T>(seed, j / n, j % n); },
            What<T>("allgather", inplace ? "in place" : "separate input", n));
    }
}

template <typename T> void Allgatherv(Run &run, size_t n)
{
    const int size = run.size(), rank = run.rank();
    for (int variant = 0; variant < (run.quick ? 1 : 2); variant++) {
        /* variant 0: n + r elements from rank r; variant 1: odd ranks contribute nothing */
        std::vector<size_t> counts(size);
        for (int r = 0; r < size; r++)
            counts[r] = variant == 0 ? n + r : (r % 2 ? 0 : n);
        std::vector<size_t> offsets(size, 0);
        for (int r = 1; r < size; r++)
            offsets[r] = offsets[r - 1] + counts[r - 1];
        const size_t total = offsets[size - 1] + counts[size - 1];
        uint32_t tag = run.NextTag();
        uint64_t seed = run.NextSeed();
        std::vector<T> in = Values<T>(seed, rank, counts[rank]);
        std::vector<T> out(total, Poison<T>());
        ::gloo::AllgathervOptions opts(run.ctx);
        opts.setInput(in.data(), counts[rank]);
        opts.setOutput(out.data(), counts);
        opts.setTag(tag);
        ::gloo::allgatherv(opts);
        for (int r = 0; r < size; r++)
            CheckArray(
                out.data() + offsets[r], counts[r], [&](size_t i) { return Value<T>(seed, r, i); },
                What<T>("allgatherv", variant == 0 ? "n+r from rank r" : "odd ranks send none", n) +
                    Str(", block of rank ", r));
    }
}

// ---- alltoall, alltoallv --------------------------------------------------------------------

/* Element i of the block rank s sends to rank d. */
template <typename T> T PairValue(uint64_t seed, int s, int d, size_t i)
{
    return Value<T>(seed ^ (static_cast<uint64_t>(d + 1) * 0x100000001b3ULL), s, i);
}

template <typename T> void Alltoall(Run &run, size_t n)
{
    const int size = run.size(), rank = run.rank();
    uint32_t tag = run.NextTag();
    uint64_t seed = run.NextSeed();
    std::vector<T> in(n * size), out(n * size, Poison<T>());
    for (int d = 0; d < size; d++)
        for (size_t i = 0; i < n; i++)
            in[d * n + i] = PairValue<T>(seed, rank, d, i);
    ::gloo::AlltoallOptions opts(run.ctx);
    opts.setInput(in.data(), n * size);
    opts.setOutput(out.data(), n * size);
    opts.setTag(tag);
    ::gloo::alltoall(opts);
    CheckArray(
        out.data(), n * size, [&](size_t j) { return PairValue<T>(seed, j / n, rank, j % n); },
        What<T>("alltoall", "", n));
}

/* Elements rank s sends to rank d in alltoallv: some pairs send none. */
size_t PairCount(int s, int d, size_t n)
{
    return (s + 2 * d + n) % 4 == 1 ? 0 : n + (s + 3 * d) % 3;
}

template <typename T> void Alltoallv(Run &run, size_t n)
{
    const int size = run.size(), rank = run.rank();
    uint32_t tag = run.NextTag();
    uint64_t seed = run.NextSeed();
    std::vector<int64_t> in_counts(size), out_counts(size);
    std::vector<T> in;
    size_t out_total = 0;
    for (int d = 0; d < size; d++) {
        in_counts[d] = PairCount(rank, d, n);
        for (int64_t i = 0; i < in_counts[d]; i++)
            in.push_back(PairValue<T>(seed, rank, d, i));
    }
    for (int s = 0; s < size; s++) {
        out_counts[s] = PairCount(s, rank, n);
        out_total += out_counts[s];
    }
    std::vector<T> out(out_total, Poison<T>());
    ::gloo::AlltoallvOptions opts(run.ctx);
    opts.setInput(in.data(), in_counts);
    opts.setOutput(out.data(), out_counts);
    opts.setTag(tag);
    ::gloo::alltoallv(opts);
    size_t off = 0;
    for (int s = 0; s < size; s++) {
        CheckArray(
            out.data() + off, out_counts[s],
            [&](size_t i) { return PairValue<T>(seed, s, rank, i); },
            What<T>("alltoallv", "", n) + Str(", block from rank ", s));
        off += out_counts[s];
    }
}

// ---- broadcast, reduce, gather, scatter -----------------------------------------------------

template <typename T> void Broadcast(Run &run, size_t n)
{
    const int rank = run.rank();
    for (int root : run.Roots()) {
        for (int separate = 0; separate < (run.quick ? 1 : 2); separate++) {
            uint32_t tag = run.NextTag();
            uint64_t seed = run.NextSeed();
            std::vector<T> in = Values<T>(seed, root, n);
            std::vector<T> out(n, Poison<T>());
            ::gloo::BroadcastOptions opts(run.ctx);
            opts.setRoot(root);
            if (rank == root) {
                if (separate)
                    opts.setInput(in.data(), n);
                else
                    out = in;
            }
            opts.setOutput(out.data(), n);
            opts.setTag(tag);
            ::gloo::broadcast(opts);
            CheckArray(
                out.data(), n, [&](size_t i) { return Value<T>(seed, root, i); },
                What<T>("broadcast", separate ? "root has a separate input" : "in place", n) +
                    Str(", root ", root));
        }
    }
}

template <typename T> void Reduce(Run &run, size_t n)
{
    const int size = run.size(), rank = run.rank();
    for (int root : run.Roots()) {
        for (int variant = 0; variant < (run.quick ? 1 : 3); variant++) {
            if (variant == 2 && n == 1)
                continue;
            uint32_t tag = run.NextTag();
            uint64_t seed = run.NextSeed();
            std::vector<T> in = Values<T>(seed, rank, n);
            std::vector<T> out = variant == 1 ? in : std::vector<T>(n, Poison<T>());
            ::gloo::ReduceOptions opts(run.ctx);
            opts.setRoot(root);
            if (variant != 1)
                opts.setInput(in.data(), n);
            opts.setOutput(out.data(), n);
            opts.setReduceFunction(Sum<T>);
            opts.setTag(tag);
            if (variant == 2)
                opts.setMaxSegmentSize(64);
            ::gloo::reduce(opts);
            if (rank == root)
                CheckArray(
                    out.data(), n,
                    [&](size_t i) {
                        return FromInt<T>(SumOverRanks(size, Dtype<T>::kBits, {seed}, i));
                    },
                    What<T>("reduce",
                            variant == 0   ? "separate input"
                            : variant == 1 ? "in place"
                                           : "64-byte segments",
                            n) +
                        Str(", root ", root));
            if (variant == 0)
                CheckArray(
                    in.data(), n, [&](size_t i) { return Value<T>(seed, rank, i); },
                    What<T>("reduce", "input left unchanged", n));
        }
    }
}

template <typename T> void Gather(Run &run, size_t n)
{
    const int size = run.size(), rank = run.rank();
    for (int root : run.Roots()) {
        uint32_t tag = run.NextTag();
        uint64_t seed = run.NextSeed();
        std::vector<T> in = Values<T>(seed, rank, n);
        std::vector<T> out(rank == root ? n * size : 0, Poison<T>());
        ::gloo::GatherOptions opts(run.ctx);
        opts.setRoot(root);
        opts.setInput(in.data(), n);
        if (rank == root)
            opts.setOutput(out.data(), n * size);
        opts.setTag(tag);
        ::gloo::gather(opts);
        if (rank == root)
            CheckArray(
                out.data(), n * size, [&](size_t j) { return Value<T>(seed, j / n, j % n); },
                What<T>("gather", "", n) + Str(", root ", root));
    }
}

template <typename T> void Scatter(Run &run, size_t n)
{
    const int size = run.size(), rank = run.rank();
    for (int root : run.Roots()) {
        uint32_t tag = run.NextTag();
        uint64_t seed = run.NextSeed();
        std::vector<std::vector<T>> in;
        std::vector<T *> in_ptrs;
        if (rank == root) {
            for (int d = 0; d < size; d++)
                in.push_back(Values<T>(seed, d, n));
            for (auto &v : in)
                in_ptrs.push_back(v.data());
        }
        std::vector<T> out(n, Poison<T>());
        ::gloo::ScatterOptions opts(run.ctx);
        opts.setRoot(root);
        if (rank == root)
            opts.setInputs(in_ptrs, n);
        opts.setOutput(out.data(), n);
        opts.setTag(tag);
        ::gloo::scatter(opts);
        CheckArray(
            out.data(), n, [&](size_t i) { return Value<T>(seed, rank, i); },
            What<T>("scatter", "", n) + Str(", root ", root));
    }
}

// ---- barrier --------------------------------------------------------------------------------

/* No rank leaves a barrier before every rank entered it: ranks enter at staggered times and
 * mark their arrival out of band; after the barrier every mark must be there. */
void Barrier(Run &run)
{
    const int size = run.size(), rank = run.rank();
    for (int round = 0; round < 4; round++) {
        std::this_thread::sleep_for(Ms(15 * ((rank + round) % size)));
        run.env.Signal(Str("barrier.", round, ".", rank));
        ::gloo::BarrierOptions opts(run.ctx);
        opts.setTag(run.NextTag());
        ::gloo::barrier(opts);
        for (int r = 0; r < size; r++)
            RANK_CHECK(run.env.IsSignalled(Str("barrier.", round, ".", r)), "barrier round ", round,
                       " returned before rank ", r, " entered it");
    }
}

// ---- dispatch -------------------------------------------------------------------------------

template <typename T> void RunOp(Run &run, const std::string &op, size_t n)
{
    using Algo = ::gloo::AllreduceOptions::Algorithm;
    if (op == "allreduce_ring")
        Allreduce<T>(run, n, Algo::RING, "allreduce/ring");
    else if (op == "allreduce_bcube")
        Allreduce<T>(run, n, Algo::BCUBE, "allreduce/bcube");
    else if (op == "allgather")
        Allgather<T>(run, n);
    else if (op == "allgatherv")
        Allgatherv<T>(run, n);
    else if (op == "alltoall")
        Alltoall<T>(run, n);
    else if (op == "alltoallv")
        Alltoallv<T>(run, n);
    else if (op == "broadcast")
        Broadcast<T>(run, n);
    else if (op == "reduce")
        Reduce<T>(run, n);
    else if (op == "gather")
        Gather<T>(run, n);
    else if (op == "scatter")
        Scatter<T>(run, n);
    else
        RANK_CHECK(false, "unknown collective ", op);
}

/* params: op=<collective> [dtypes=int,float,double] [counts=1,1023,12345] [quick=1] */
GLUCX_RANK_BODY(collective)
{
    Run run{env, env.Connect(Scaled(Ms(env.params.GetInt("timeout_ms", 30000)))),
            env.params.Has("quick")};
    const std::string op = env.params.Get("op");
    if (op == "barrier") {
        Barrier(run);
        return;
    }
    for (const std::string &count : SplitList(env.params.Get("counts", "1,1023,12345"))) {
        const size_t n = std::stoull(count);
        for (const std::string &dtype : SplitList(env.params.Get("dtypes", "int,float,double"))) {
            if (dtype == "int")
                RunOp<int32_t>(run, op, n);
            else if (dtype == "float")
                RunOp<float>(run, op, n);
            else if (dtype == "double")
                RunOp<double>(run, op, n);
            else
                RANK_CHECK(false, "unknown dtype ", dtype);
        }
    }
}

// ---- GoogleTest cases -----------------------------------------------------------------------

struct CollCase {
    std::string op;
    int size;
    std::string params;
    Ms deadline;
};

void PrintTo(const CollCase &c, std::ostream *os)
{
    *os << c.op << " n=" << c.size << (c.params.empty() ? "" : " ") << c.params;
}

std::string CaseName(const ::testing::TestParamInfo<CollCase> &info)
{
    std::string name = Str(info.param.op, "_n", info.param.size);
    for (char &c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)))
            c = '_';
    return name;
}

const char *const kOps[] = {"allreduce_ring", "allreduce_bcube", "allgather", "allgatherv",
                            "alltoall",       "alltoallv",       "broadcast", "reduce",
                            "gather",         "scatter",         "barrier"};

std::vector<CollCase> AllOps()
{
    std::vector<CollCase> cases;
    for (const char *op : kOps)
        for (int n = 2; n <= 4; n++)
            cases.push_back({op, n, "", Ms(60000)});
    return cases;
}

class CollectiveProcesses : public ::testing::TestWithParam<CollCase>
{
};
class CollectiveThreads : public ::testing::TestWithParam<CollCase>
{
};
class CollectiveLarge : public ::testing::TestWithParam<CollCase>
{
};

void RunCase(const CollCase &c, Mode mode)
{
    Job job;
    job.body = "collective";
    job.size = c.size;
    job.mode = mode;
    job.params = "op=" + c.op + (c.params.empty() ? "" : " " + c.params);
    job.deadline = c.deadline;
    ExpectJobOk(job);
}

TEST_P(CollectiveProcesses, MatchesReference)
{
    RunCase(GetParam(), Mode::kProcesses);
}

TEST_P(CollectiveThreads, MatchesReference)
{
    RunCase(GetParam(), Mode::kThreads);
}

INSTANTIATE_TEST_SUITE_P(, CollectiveProcesses, ::testing::ValuesIn(AllOps()), CaseName);
INSTANTIATE_TEST_SUITE_P(, CollectiveThreads, ::testing::ValuesIn(AllOps()), CaseName);

/* 4 Mi floats (16 MiB per buffer): a few cases, the first variant of each only. */
const char kLarge[] = "dtypes=float counts=4194304 quick=1";

TEST_P(CollectiveLarge, MatchesReference)
{
    RunCase(GetParam(), Mode::kProcesses);
}

INSTANTIATE_TEST_SUITE_P(
    , CollectiveLarge,
    ::testing::Values(CollCase{"allreduce_ring", 2, kLarge, Ms(90000)},
                      CollCase{"allreduce_bcube", 4, kLarge, Ms(90000)},
                      CollCase{"allgather", 4, "dtypes=float counts=1048576 quick=1", Ms(90000)}),
    CaseName);

TEST(CollectiveLargeThreads, AllreduceRingN3)
{
    RunCase(CollCase{"allreduce_ring", 3, kLarge, Ms(90000)}, Mode::kThreads);
}

} // namespace
} // namespace glucx_test
