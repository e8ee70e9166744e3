/*
 * gloo::rendezvous::ContextFactory (issue 14): a factory takes an existing ("backing") context
 * and makes new contexts on a device, sending each new pair's address (at most
 * gloo::transport::Address::kMaxByteSize bytes) over bound buffers of the backing context's
 * pairs. The same rank bodies run on the glucx device and on Gloo's own TCP device (the
 * reference), as backing and as made device in every combination:
 *
 * - made contexts work: Gloo's function-style allreduce, a bound-buffer algorithm
 *   (AllreduceRing<float>, constructed once per context and run every round) and unbound
 *   point-to-point messages give values checked against independently computed ones (exact
 *   integer sums, byte patterns), over several contexts of one factory used interleaved with the
 *   backing context, and with a context made after the others carried traffic; 2, 3 and 5
 *   ranks, threads and processes;
 * - the same inside a network namespace with lo and 5 veth interfaces, where the glucx record is
 *   larger than kMaxByteSize (checked) and only the compact address fits;
 * - faults: a made context whose peer was SIGKILLed, or that times out, throws
 *   gloo::IoException within its timeout (on glucx naming the peer); the backing context and the
 *   factory still work after a made context timed out; a backing context that failed (a killed
 *   peer, a timeout) makes makeContext throw instead of hanging, from the old factory and from a
 *   new one.
 */
#include <cstdio>
#include <functional>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <gloo/allreduce_ring.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/address.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/unbound_buffer.h>

#include <glucx/glucx.h>

#include "harness.h"
#include "netns.h"
#include "values.h"

namespace glucx_test
{
namespace
{

using Ctx = std::shared_ptr<::gloo::Context>;
using Dev = std::shared_ptr<::gloo::transport::Device>;

constexpr size_t kMax = ::gloo::transport::Address::kMaxByteSize;

/* "glucx": this rank's glucx device; "tcp": Gloo's TCP device (the reference). */
Dev &DeviceNamed(RankEnv &env, const std::string &name)
{
    RANK_CHECK(name == "glucx" || name == "tcp", "no device named '", name, "'");
    return name == "glucx" ? env.Device() : env.TcpDevice();
}

/* Every pair address of a made context fits kMaxByteSize; on glucx it is the compact one. */
void CheckAddresses(const Ctx &ctx, const std::string &dev, const std::string &what)
{
    for (int peer = 0; peer < ctx->size; peer++) {
        if (peer == ctx->rank)
            continue;
        const size_t n = ctx->getPair(peer)->address().bytes().size();
        RANK_CHECK(n <= kMax, what, ": pair ", peer, " has an address of ", n, " bytes");
        RANK_CHECK(dev != "glucx" || n == size_t(GLUCX_COMPACT_ADDRESS_BYTES), what, ": pair ",
                   peer, " has an address of ", n, " bytes, not the compact one");
    }
}

/* A ring of unbound messages on slot: @p bytes of a pattern to the right, from the left. */
void UnboundRing(const Ctx &ctx, uint64_t seed, size_t bytes, uint64_t slot,
                 const std::string &what)
{
    const int right = (ctx->rank + 1) % ctx->size, left = (ctx->rank + ctx->size - 1) % ctx->size;
    std::vector<uint8_t> s(bytes), r(bytes, kPoisonByte);
    FillPattern(s.data(), s.size(), seed, ctx->rank, right);
    auto sb = ctx->createUnboundBuffer(s.data(), s.size());
    auto rb = ctx->createUnboundBuffer(r.data(), r.size());
    rb->recv(left, slot);
    sb->send(right, slot);
    RANK_CHECK(rb->waitRecv(), what, ": receive from rank ", left, " aborted");
    RANK_CHECK(sb->waitSend(), what, ": send to rank ", right, " aborted");
    CheckPattern(r.data(), r.size(), seed, left, ctx->rank, what);
}

/* AllreduceRing<float> over two buffers per rank, constructed once and run every round. */
struct BoundRing {
    std::vector<std::vector<float>> mem;
    std::unique_ptr<::gloo::AllreduceRing<float>> algo;

    BoundRing(const Ctx &ctx, size_t count) : mem(2, std::vector<float>(count))
    {
        algo = std::make_unique<::gloo::AllreduceRing<float>>(
            ctx, std::vector<float *>{mem[0].data(), mem[1].data()}, static_cast<int>(count));
    }

    /* Contributor 2 * rank + p fills buffer p; every buffer must end as the sum of all
     * 2 * size contributors (at most 10: exact in float, see values.h). */
    void Run(const Ctx &ctx, uint64_t seed, const std::string &what)
    {
        for (int p = 0; p < 2; p++)
            for (size_t i = 0; i < mem[p].size(); i++)
                mem[p][i] = Value<float>(seed, 2 * ctx->rank + p, i);
        algo->run();
        for (int p = 0; p < 2; p++)
            CheckArray(
                mem[p].data(), mem[p].size(),
                [&](size_t i) {
                    int64_t s = 0;
                    for (int c = 0; c < 2 * ctx->size; c++)
                        s += GenT<float>(seed, c, i);
                    return FromInt<float>(s);
                },
                Str(what, ", AllreduceRing<float> buffer ", p));
    }
};

void Barrier(const Ctx &ctx, uint32_t tag)
{
    ::gloo::BarrierOptions opts(ctx);
    opts.setTag(tag);
    ::gloo::barrier(opts);
}

/* One context of a factory test: the context, its name and its bound algorithm. */
struct Used {
    std::string name;
    Ctx ctx;
    std::unique_ptr<BoundRing> ring;
};

/* Everything once on u: function-style allreduce, AllreduceRing, an unbound ring. */
void Exercise(Used &u, int index, int round)
{
    const std::string what = Str(u.name, ", round ", round);
    const uint32_t tag = static_cast<uint32_t>(200 + 16 * index + round);
    AllreduceLoop(u.ctx, tag, 1);
    u.ring->Run(u.ctx, Mix64(tag * 7919 + 1), what);
    /* a large message (above UCX's rendezvous threshold) every other round */
    const size_t bytes = (index + round) % 2 == 0 ? 4099 : 300007;
    UnboundRing(u.ctx, Mix64(tag * 7919 + 2), bytes, tag, what + ", unbound ring");
}

/*
 * params: combos=BACKING:MADE,... (devices glucx|tcp), contexts=K, rounds=R, [netns=NAME]
 * [iface=...] [record_over=BYTES]. For each combination: a backing context (connectFullMesh), a
 * factory on it, K contexts made on the made device, all of them and the backing context
 * exercised R rounds in a rotating order; after the first round one more context is made and
 * joins the rotation.
 */
GLUCX_RANK_BODY(factory_works)
{
    EnterNetns(env);
    if (env.params.Has("record_over"))
        CheckRecordOver(env, "factory_works");
    const Ms timeout = Scaled(Ms(env.params.GetInt("timeout_ms", 30000)));
    const int contexts = static_cast<int>(env.params.GetInt("contexts", 3));
    const int rounds = static_cast<int>(env.params.GetInt("rounds", 3));
    for (const std::string &combo : SplitList(env.params.Get("combos", "glucx:glucx"))) {
        const size_t colon = combo.find(':');
        RANK_CHECK(colon != std::string::npos, "combination '", combo, "' is not BACKING:MADE");
        const std::string backing_dev = combo.substr(0, colon), made_dev = combo.substr(colon + 1);
        Dev &made_device = DeviceNamed(env, made_dev);

        std::vector<Used> used;
        used.push_back({Str("backing context (", backing_dev, ")"),
                        env.Connect(timeout, DeviceNamed(env, backing_dev)), nullptr});
        auto factory = std::make_unique<::gloo::rendezvous::ContextFactory>(used[0].ctx);
        auto make = [&](int k) {
            const std::string name =
                Str("made context ", k, " (", made_dev, ", backing ", backing_dev, ")");
            Caught c;
            Ctx ctx;
            c = CatchFrom([&] { ctx = factory->makeContext(made_device); });
            RANK_CHECK(!c.threw && ctx != nullptr, name, ": makeContext threw ", c.description);
            RANK_CHECK(ctx->rank == env.rank && ctx->size == env.size, name, " is rank ", ctx->rank,
                       " of ", ctx->size);
            CheckAddresses(ctx, made_dev, name);
            used.push_back({name, ctx, nullptr});
        };
        for (int k = 0; k < contexts; k++)
            make(k);
        for (size_t i = 0; i < used.size(); i++)
            used[i].ring = std::make_unique<BoundRing>(used[i].ctx, i % 2 == 0 ? 1003 : 70001);
        for (int round = 0; round < rounds; round++) {
            for (size_t j = 0; j < used.size(); j++) {
                const size_t i = (j + round) % used.size();
                Caught c = CatchFrom([&] { Exercise(used[i], static_cast<int>(i), round); });
                RANK_CHECK(!c.threw, used[i].name, ", round ", round, ": threw ", c.description);
            }
            if (round == 0) {
                make(contexts);
                used.back().ring = std::make_unique<BoundRing>(used.back().ctx, 4097);
            }
        }
        /* every rank is done with every context before any is destroyed */
        for (size_t i = 0; i < used.size(); i++)
            Barrier(used[i].ctx, static_cast<uint32_t>(900 + i));
        factory.reset(); /* its bound buffers live on the backing context's pairs */
    }
}

// ---- faults -----------------------------------------------------------------------------------

/* What a failed operation must throw: gloo::IoException within the timeout plus half (the bound
 * is scaled, the timeout not); on glucx its message names @p peer (any rank but this one when
 * peer < 0). Gloo's TCP transport names no rank ("Timed out waiting ...", "Connection closed by
 * peer [addr]"). */
void CheckIoException(const RankEnv &env, const std::string &dev, const Caught &c,
                      const std::string &op, int peer, Ms timeout)
{
    RANK_CHECK(c.threw, op, " did not throw (it returned after ", c.elapsed.count(), " ms)");
    RANK_CHECK(c.description.rfind("gloo::IoException", 0) == 0, op, " threw ", c.description,
               ", not gloo::IoException");
    RANK_CHECK(c.elapsed < Scaled(timeout * 3 / 2), op, " ended after ", c.elapsed.count(),
               " ms, later than the timeout (", timeout.count(), " ms) plus half");
    if (dev != "glucx")
        return;
    if (peer >= 0)
        RANK_CHECK(NamesRank(c.what, peer), op, ": the message does not name rank ", peer, ": ",
                   c.what);
    else
        CheckNamesAPeer(c, env.rank, op);
}

/* makeContext from the factory @p f and from a new factory on @p backing, whose context failed:
 * both must throw a gloo::Exception (glucx: within the timeout plus half, naming @p peer, or any
 * rank but this one when peer < 0). A
 * glucx makeContext that fails after creating its transport context takes about 1 s more: the
 * new communicator's listener waits up to GLUCX_UCX_LISTEN_DRAIN_NS for peers that may still
 * fetch its record (plugin/transport/ucx_boot.c). */
void CheckMakeContextOnFailedBacking(RankEnv &env, const std::string &dev,
                                     ::gloo::rendezvous::ContextFactory &f, const Ctx &backing,
                                     Ms timeout, int peer)
{
    Dev &device = DeviceNamed(env, dev);
    std::vector<std::pair<std::string, std::function<Ctx()>>> ways = {
        {"makeContext of the factory made before the failure",
         [&] { return f.makeContext(device); }},
        {"a new factory on the failed backing context and its makeContext", [&] {
             ::gloo::rendezvous::ContextFactory g(backing);
             return g.makeContext(device);
         }}};
    for (auto &[what, way] : ways) {
        Caught c = CatchFrom([&] { way(); });
        std::fprintf(stderr, "[factory %s rank %d] %s: after %lld ms: %s\n", dev.c_str(), env.rank,
                     what.c_str(), (long long)c.elapsed.count(), c.description.c_str());
        RANK_CHECK(c.threw, what, " (", dev, ") did not throw (returned after ", c.elapsed.count(),
                   " ms)");
        RANK_CHECK(c.gloo_exception, what, " threw ", c.description, ", not a gloo::Exception");
        /* Gloo's TCP transport may take its own connect timeout (25 s seen here), independent of
         * the context's: a rank connects its new pair to the new pair of a rank that already
         * gave up (the job's deadline bounds it) */
        if (dev == "glucx") {
            RANK_CHECK(c.elapsed < Scaled(timeout * 3 / 2), what, " ended after ",
                       c.elapsed.count(), " ms, later than the timeout (", timeout.count(),
                       " ms) plus half");
            if (peer >= 0)
                RANK_CHECK(NamesRank(c.what, peer), what, ": the message does not name rank ", peer,
                           ": ", c.what);
            else
                CheckNamesAPeer(c, env.rank, what);
        }
    }
}

/*
 * params: dev=glucx|tcp. The last rank is SIGKILLed once every survivor posted a receive from
 * it on a made context: that receive throws; then makeContext (old factory, new factory) on the
 * backing context, which has the dead peer too, throws.
 */
GLUCX_RANK_BODY(factory_killed)
{
    const std::string dev = env.params.Get("dev", "glucx");
    const Ms timeout = Ms(env.params.GetInt("timeout_ms", 5000));
    const int victim = env.size - 1;
    auto backing = env.Connect(timeout, DeviceNamed(env, dev));
    ::gloo::rendezvous::ContextFactory f(backing);
    auto made = f.makeContext(DeviceNamed(env, dev));
    AllreduceLoop(made, 400, 1);
    if (env.rank == victim) {
        for (int s = 0; s < victim; s++)
            RANK_CHECK(env.Await(Str("posted.", s), Scaled(timeout * 4)), "survivor ", s,
                       " never posted its receive");
        env.KillSelf();
    }
    std::vector<uint8_t> data(64);
    auto rb = made->createUnboundBuffer(data.data(), data.size());
    rb->recv(victim, 401);
    env.Signal(Str("posted.", env.rank));
    Caught c = CatchFrom([&] { rb->waitRecv(); });
    CheckIoException(env, dev, c, Str("waitRecv on a made context from rank ", victim, " (killed)"),
                     victim, timeout);
    if (dev == "glucx")
        CheckFailsPromptly([&] { AllreduceLoop(made, 402, 1); }, "an allreduce on the made context",
                           env.rank, timeout);
    CheckMakeContextOnFailedBacking(env, dev, f, backing, timeout, victim);
}

/*
 * params: dev=glucx|tcp, timeout_ms. Rank 0 waits on a made context for a message rank 1 never
 * sends: gloo::IoException "Timed out", not before the timeout. The backing context and the
 * factory still work (a second made context too). Then rank 0 times out on the backing context
 * itself, which fails it (glucx; Gloo's TCP transport closes its pairs: "Application timeout
 * caused pair closure"), and makeContext must throw.
 */
GLUCX_RANK_BODY(factory_timeout)
{
    const std::string dev = env.params.Get("dev", "glucx");
    const Ms timeout = Ms(env.params.GetInt("timeout_ms", 3000));
    const Ms patience = Scaled(timeout * 4 + Ms(20000));
    auto backing = env.Connect(timeout, DeviceNamed(env, dev));
    ::gloo::rendezvous::ContextFactory f(backing);
    auto made = f.makeContext(DeviceNamed(env, dev));
    AllreduceLoop(made, 500, 1);

    auto time_out = [&](const Ctx &ctx, uint64_t slot, const std::string &which) {
        if (env.rank == 0) {
            std::vector<uint8_t> data(64);
            auto rb = ctx->createUnboundBuffer(data.data(), data.size());
            rb->recv(1, slot);
            Caught c = CatchFrom([&] { rb->waitRecv(); });
            const std::string op = Str("waitRecv on the ", which, " from rank 1 (alive, silent)");
            CheckIoException(env, dev, c, op, 1, timeout);
            RANK_CHECK(c.what.find("Timed out") != std::string::npos, op, ": no 'Timed out' in ",
                       c.what);
            RANK_CHECK(c.elapsed >= timeout * 4 / 5, op, " gave up after ", c.elapsed.count(),
                       " ms, before the timeout (", timeout.count(), " ms)");
            if (dev == "glucx")
                CheckFailsPromptly([&] { AllreduceLoop(ctx, 510, 1); },
                                   "an allreduce on the " + which, 0, timeout);
            env.Signal("timedout." + which);
        } else {
            RANK_CHECK(env.Await("timedout." + which, patience), "rank 0 never timed out on the ",
                       which);
        }
    };
    time_out(made, 501, "made context");

    /* the made context's failure leaves the backing context and its factory alone */
    AllreduceLoop(backing, 502, 2);
    auto made2 = f.makeContext(DeviceNamed(env, dev));
    CheckAddresses(made2, dev, "the second made context");
    AllreduceLoop(made2, 503, 2);
    UnboundRing(made2, 504, 4099, 504, "the second made context");
    Barrier(made2, 505);

    time_out(backing, 506, "backing context");
    CheckMakeContextOnFailedBacking(env, dev, f, backing, timeout, -1);
}

/*
 * UCX_TLS=shm,self (no network transport for the listener): the glucx pair address is the whole
 * record, longer than kMaxByteSize, and Gloo's makeContext refuses it on every rank with
 * gloo::EnforceNotMet before sending anything, promptly; the backing context (connectFullMesh
 * carries the record) keeps working.
 */
GLUCX_RANK_BODY(factory_record_too_long)
{
    const Ms timeout = Scaled(Ms(30000));
    auto backing = env.Connect(timeout);
    ::gloo::rendezvous::ContextFactory f(backing);
    Caught c = CatchFrom([&] { f.makeContext(env.Device()); });
    RANK_CHECK(c.threw, "makeContext with whole records as pair addresses did not throw");
    RANK_CHECK(c.description.rfind("gloo::EnforceNotMet", 0) == 0, "makeContext threw ",
               c.description, ", not gloo::EnforceNotMet");
    RANK_CHECK(c.elapsed < timeout / 2, "makeContext refused only after ", c.elapsed.count(),
               " ms");
    AllreduceLoop(backing, 600, 2);
}

// ---- GoogleTest cases -------------------------------------------------------------------------

struct Shape {
    int size;
    Mode mode;
};

std::string ShapeName(const Shape &s)
{
    return Str("n", s.size, s.mode == Mode::kProcesses ? "_processes" : "_threads");
}

void PrintTo(const Shape &s, std::ostream *os)
{
    *os << ShapeName(s);
}

Job FactoryJob(const char *body, Shape shape, const std::string &params, Ms deadline)
{
    Job job;
    job.body = body;
    job.size = shape.size;
    job.mode = shape.mode;
    job.params = params;
    job.deadline = deadline;
    return job;
}

class ContextFactory : public ::testing::TestWithParam<Shape>
{
};

TEST_P(ContextFactory, MakesWorkingContextsOnEveryDevice)
{
    ExpectJobOk(FactoryJob("factory_works", GetParam(),
                           "combos=glucx:glucx,tcp:tcp,tcp:glucx,glucx:tcp", Ms(120000)));
}

INSTANTIATE_TEST_SUITE_P(, ContextFactory,
                         ::testing::Values(Shape{2, Mode::kThreads}, Shape{3, Mode::kThreads},
                                           Shape{5, Mode::kThreads}, Shape{2, Mode::kProcesses},
                                           Shape{3, Mode::kProcesses}, Shape{5, Mode::kProcesses}),
                         [](const ::testing::TestParamInfo<Shape> &i) {
                             return ShapeName(i.param);
                         });

TEST(ContextFactoryNamespace, FiveInterfacesN3Processes)
{
    if (!CanCreateNamespaces())
        GTEST_SKIP() << "needs root and iproute2 to create network namespaces";
    FiveInterfaces ns;
    ASSERT_TRUE(ns.ok()) << "cannot set up the namespace " << ns.ns();
    /* every device (lo and the 5 veth ends), then one named veth end */
    const std::string params =
        "netns=" + ns.ns() + " record_over=192 combos=glucx:glucx,tcp:glucx rounds=2";
    const Shape shape{3, Mode::kProcesses};
    ExpectJobOk(FactoryJob("factory_works", shape, params, Ms(120000)));
    ExpectJobOk(
        FactoryJob("factory_works", shape, params + " iface=" + ns.ifaces()[2], Ms(120000)));
}

TEST(ContextFactoryRecord, ShmOnlyRecordIsRefusedN3Processes)
{
    ExpectJobOk(FactoryJob("factory_record_too_long", {3, Mode::kProcesses}, "env:UCX_TLS=shm,self",
                           Ms(60000)));
}

struct FaultCase {
    std::string dev;
    Shape shape;
};

void PrintTo(const FaultCase &c, std::ostream *os)
{
    *os << c.dev << "_" << ShapeName(c.shape);
}

std::string FaultName(const ::testing::TestParamInfo<FaultCase> &i)
{
    return i.param.dev + "_" + ShapeName(i.param.shape);
}

class ContextFactoryKilledPeer : public ::testing::TestWithParam<FaultCase>
{
};

TEST_P(ContextFactoryKilledPeer, MadeAndBackingContextsThrow)
{
    Job job = FactoryJob("factory_killed", GetParam().shape, "dev=" + GetParam().dev, Ms(90000));
    job.killed = {job.size - 1};
    ExpectJobOk(job);
}

INSTANTIATE_TEST_SUITE_P(, ContextFactoryKilledPeer,
                         ::testing::Values(FaultCase{"glucx", {2, Mode::kProcesses}},
                                           FaultCase{"glucx", {3, Mode::kProcesses}},
                                           FaultCase{"tcp", {3, Mode::kProcesses}}),
                         FaultName);

class ContextFactoryTimeout : public ::testing::TestWithParam<FaultCase>
{
};

TEST_P(ContextFactoryTimeout, MadeContextThrowsBackingKeepsWorking)
{
    ExpectJobOk(
        FactoryJob("factory_timeout", GetParam().shape, "dev=" + GetParam().dev, Ms(90000)));
}

INSTANTIATE_TEST_SUITE_P(, ContextFactoryTimeout,
                         ::testing::Values(FaultCase{"glucx", {2, Mode::kThreads}},
                                           FaultCase{"glucx", {3, Mode::kProcesses}},
                                           FaultCase{"tcp", {2, Mode::kThreads}},
                                           FaultCase{"tcp", {3, Mode::kProcesses}}),
                         FaultName);

} // namespace
} // namespace glucx_test
