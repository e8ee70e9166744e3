/*
 * Gloo's conventions that code outside the transport relies on (issue 14):
 *
 * - Timeout wording. Gloo's TCP transport throws gloo::IoException("... Timed out waiting
 *   <T>ms for <recv|send> operation to complete"); Gloo's own tests (gloo/test/<op>_test.cc,
 *   TestTimeout of broadcast, scatter, allreduce, ...) look for "Timed out" in what(), and
 *   PyTorch's for " (Timed out|closed|timeout) " (the spaces included) in the text
 *   ProcessGroupGloo passes on. Every collective's TestTimeout is replayed here: rank 0 runs it
 *   with a 10 ms timeout, as Gloo's tests do, while rank 1 stays alive and never joins.
 * - Send completion. Gloo's TCP transport writes a message only once the peer announced the
 *   matching receive, so waitSend returns only after the receiver posted it: a broadcast or
 *   scatter root whose peers never join times out (Gloo's BroadcastTest.TestTimeout and
 *   ScatterTest.TestTimeout). The shim sends synchronously (GLUCX_SYNC_SEND=1, the default): a
 *   waitSend never returns before the receiver's recv was posted (out-of-band flag, sizes sent
 *   eagerly and as a rendezvous, bytes checked), and GLUCX_SYNC_SEND=0 gives UCX's local
 *   completion back (the root of a broadcast nobody joins returns).
 */
#include <cstdlib>
#include <cstring>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>
#include <gloo/transport/unbound_buffer.h>

#include <glucx/gloo.h>

#include "harness.h"
#include "values.h"

namespace glucx_test
{
namespace
{

/* Gloo's tests set this per-call timeout in their TestTimeout cases. */
constexpr Ms kGlooTestTimeout(10);

/* Signals `name` when it goes out of scope, also when a RANK_CHECK throws: the ranks waiting
 * for it stop at once instead of at their patience. */
struct SignalOnExit {
    RankEnv &env;
    std::string name;
    ~SignalOnExit()
    {
        try {
            env.Signal(name);
        } catch (...) {
        }
    }
};

/* Wait until `name` or `bail` (the other rank gave up) is signalled; true for `name`. */
bool AwaitOr(const RankEnv &env, const std::string &name, const std::string &bail, Ms limit)
{
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
        if (env.IsSignalled(name))
            return true;
        if (env.IsSignalled(bail))
            return false;
        std::this_thread::sleep_for(Ms(2));
    }
    return false;
}

/* What Gloo's and PyTorch's tests look for in a timeout's text. */
void CheckGlooTimeoutText(const Caught &c, const std::string &op, const std::string &kind,
                          Ms timeout)
{
    RANK_CHECK(c.threw, op, " did not throw (it returned after ", c.elapsed.count(), " ms)");
    RANK_CHECK(c.description.find("gloo::IoException") != std::string::npos, op, " threw ",
               c.description, ", not a gloo::IoException (Gloo's tests catch that type)");
    /* gloo/test/<op>_test.cc: ASSERT_NE(std::string(e.what()).find("Timed out"), npos) */
    RANK_CHECK(c.what.find("Timed out") != std::string::npos, op, ": no \"Timed out\" in ", c.what);
    /* torch/testing/_internal/distributed/distributed_test.py, _test_barrier_timeout */
    RANK_CHECK(std::regex_search(c.what, std::regex(" (Timed out|closed|timeout) ")), op,
               ": PyTorch's regex ' (Timed out|closed|timeout) ' does not match ", c.what);
    /* Gloo's own sentence (tcp/unbound_buffer.cc), which people grep logs for */
    const std::string sentence =
        Str("Timed out waiting ", timeout.count(), "ms for ", kind, " operation to complete");
    RANK_CHECK(c.what.find(sentence) != std::string::npos, op, ": no \"", sentence, "\" in ",
               c.what);
}

/*
 * Rank 0 runs params' op (root 0 where it has one) with a kGlooTestTimeout timeout while rank 1
 * stays alive outside it; the op must throw Gloo's timeout. params: op=..., kind=recv|send (the
 * wait Gloo's algorithm times out in: a root that only sends waits in waitSend).
 */
GLUCX_RANK_BODY(gloo_test_timeout)
{
    const std::string op = env.params.Get("op");
    const std::string kind = env.params.Get("kind");
    auto ctx = env.Connect(Scaled(Ms(30000)));
    const Ms patience = Scaled(Ms(60000));
    {
        ::gloo::BarrierOptions b(ctx);
        b.setTag(1);
        ::gloo::barrier(b);
    }
    if (ctx->rank != 0) {
        RANK_CHECK(env.Await("done", patience), "rank 0 never finished");
        return;
    }
    const size_t n = 4;
    std::vector<uint64_t> in(n * ctx->size, 7), out(n * ctx->size, 0);
    Caught c = CatchFrom([&] {
        if (op == "broadcast") {
            ::gloo::BroadcastOptions o(ctx);
            o.setOutput(out.data(), n);
            o.setRoot(0);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::broadcast(o);
        } else if (op == "scatter") {
            ::gloo::ScatterOptions o(ctx);
            std::vector<uint64_t *> ptrs;
            for (int r = 0; r < ctx->size; r++)
                ptrs.push_back(in.data() + r * n);
            o.setInputs(ptrs, n);
            o.setOutput(out.data(), n);
            o.setRoot(0);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::scatter(o);
        } else if (op == "allreduce") {
            ::gloo::AllreduceOptions o(ctx);
            o.setOutput(out.data(), n);
            o.setReduceFunction(Sum<uint64_t>);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::allreduce(o);
        } else if (op == "reduce") {
            ::gloo::ReduceOptions o(ctx);
            o.setOutput(out.data(), n);
            o.setReduceFunction(Sum<uint64_t>);
            o.setRoot(0);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::reduce(o);
        } else if (op == "gather") {
            ::gloo::GatherOptions o(ctx);
            o.setInput(in.data(), n);
            o.setOutput(out.data(), n * ctx->size);
            o.setRoot(0);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::gather(o);
        } else if (op == "allgather") {
            ::gloo::AllgatherOptions o(ctx);
            o.setInput(in.data(), n);
            o.setOutput(out.data(), n * ctx->size);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::allgather(o);
        } else if (op == "allgatherv") {
            ::gloo::AllgathervOptions o(ctx);
            o.setInput(in.data(), n);
            o.setOutput(out.data(), std::vector<size_t>(ctx->size, n));
            o.setTimeout(kGlooTestTimeout);
            ::gloo::allgatherv(o);
        } else if (op == "alltoallv") {
            ::gloo::AlltoallvOptions o(ctx);
            const std::vector<int64_t> per(ctx->size, static_cast<int64_t>(n));
            o.setInput(in.data(), per);
            o.setOutput(out.data(), per);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::alltoallv(o);
        } else if (op == "alltoall") {
            ::gloo::AlltoallOptions o(ctx);
            o.setInput(in.data(), n * ctx->size);
            o.setOutput(out.data(), n * ctx->size);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::alltoall(o);
        } else if (op == "barrier") {
            ::gloo::BarrierOptions o(ctx);
            o.setTag(2);
            o.setTimeout(kGlooTestTimeout);
            ::gloo::barrier(o);
        } else {
            RANK_CHECK(false, "unknown op ", op);
        }
    });
    env.Signal("done");
    CheckGlooTimeoutText(c, op + " on rank 0 without rank 1", kind, kGlooTestTimeout);
    /* glucx's detail stays: the peer, and the bytes of the pending operation */
    RANK_CHECK(NamesRank(c.what, 1), op, ": the text does not name rank 1: ", c.what);
    RANK_CHECK(c.what.find(" bytes ") != std::string::npos, op,
               ": the text gives no sizes: ", c.what);
}

/* waitRecv and waitSend with their own timeouts: rank 1 never sends and never receives. One
 * context for each (the first timeout fails its context). */
GLUCX_RANK_BODY(unbound_timeouts)
{
    const Ms timeout(300); /* the timeout that fires: what is tested, not scaled */
    auto recv_ctx = env.Connect(Scaled(Ms(30000)));
    auto send_ctx = env.Connect(Scaled(Ms(30000)));
    const Ms patience = Scaled(Ms(60000));
    if (env.rank != 0) {
        RANK_CHECK(env.Await("done", patience), "rank 0 never finished");
        return;
    }
    SignalOnExit done{env, "done"};
    std::vector<uint8_t> data(40, 3);
    for (const std::string kind : {"recv", "send"}) {
        auto buf =
            (kind == "recv" ? recv_ctx : send_ctx)->createUnboundBuffer(data.data(), data.size());
        Caught c = CatchFrom([&] {
            if (kind == "recv") {
                buf->recv(1, 77);
                buf->waitRecv(nullptr, timeout);
            } else {
                buf->send(1, 78);
                buf->waitSend(nullptr, timeout);
            }
        });
        CheckGlooTimeoutText(c, "wait" + kind + " (rank 1 alive, never matching)", kind, timeout);
        RANK_CHECK(c.elapsed >= timeout * 4 / 5, "wait", kind, " gave up after ", c.elapsed.count(),
                   " ms");
        RANK_CHECK(NamesRank(c.what, 1) && c.what.find("40 bytes") != std::string::npos, "wait",
                   kind, ": the text lacks the peer or the size: ", c.what);
    }
}

/*
 * A send's waitSend returns only once the receiver posted its recv: rank 1 holds its recv back
 * for a while, raising an out-of-band flag just before posting; rank 0 checks the flag when its
 * waitSend returns. params: bytes=N.
 */
GLUCX_RANK_BODY(send_waits_for_receiver)
{
    const size_t bytes = static_cast<size_t>(env.params.GetInt("bytes", 8));
    const Ms hold(200); /* how long the receiver holds back: what is tested, not scaled */
    auto ctx = env.Connect(Scaled(Ms(30000)));
    const Ms patience = Scaled(Ms(60000));
    std::vector<uint8_t> data(bytes);
    SignalOnExit exited{env, Str("exited.", env.rank)};
    for (int k = 0; k < 3; k++) {
        const uint64_t slot = 90 + static_cast<uint64_t>(k);
        const std::string posted = Str("posted.", k), sent = Str("sent.", k);
        if (ctx->rank == 0) {
            for (size_t j = 0; j < bytes; j++)
                data[j] = static_cast<uint8_t>(Mix64(j * 31 + static_cast<uint64_t>(k)));
            auto buf = ctx->createUnboundBuffer(data.data(), bytes);
            buf->send(1, slot);
            env.Signal(sent);
            int to = -1;
            RANK_CHECK(buf->waitSend(&to), "waitSend of message ", k);
            /* read after waitSend returned */
            RANK_CHECK(env.IsSignalled(posted), "waitSend of ", bytes, " bytes (message ", k,
                       ") returned before rank 1 posted its recv");
            RANK_CHECK(to == 1, "waitSend reported rank ", to);
        } else if (ctx->rank == 1) {
            std::fill(data.begin(), data.end(), 0);
            RANK_CHECK(AwaitOr(env, sent, "exited.0", patience), "rank 0 did not send message ", k);
            std::this_thread::sleep_for(hold);
            auto buf = ctx->createUnboundBuffer(data.data(), bytes);
            env.Signal(posted);
            buf->recv(0, slot);
            int from = -1;
            RANK_CHECK(buf->waitRecv(&from), "waitRecv of message ", k);
            RANK_CHECK(from == 0, "waitRecv reported rank ", from);
            for (size_t j = 0; j < bytes; j++)
                RANK_CHECK(data[j] ==
                               static_cast<uint8_t>(Mix64(j * 31 + static_cast<uint64_t>(k))),
                           "message ", k, " byte ", j);
        }
    }
}

/* GLUCX_SYNC_SEND=0 (set here, before the device exists: process mode only): the root of a
 * broadcast its peer never joins returns, as with UCX's local completion. */
GLUCX_RANK_BODY(local_completion)
{
    RANK_CHECK(env.mode == Mode::kProcesses, "needs its own process (it sets the environment)");
    setenv("GLUCX_SYNC_SEND", "0", 1);
    auto ctx = env.Connect(Scaled(Ms(30000)));
    const Ms patience = Scaled(Ms(60000));
    RANK_CHECK(env.Device()->str().find("sends complete locally") != std::string::npos,
               "the device does not say its sends complete locally: ", env.Device()->str());
    if (ctx->rank != 0) {
        RANK_CHECK(env.Await("done", patience), "rank 0 never finished");
        return;
    }
    std::vector<uint64_t> out(4, 5);
    ::gloo::BroadcastOptions o(ctx);
    o.setOutput(out.data(), out.size());
    o.setRoot(0);
    o.setTimeout(Scaled(Ms(10000)));
    Caught c = CatchFrom([&] { ::gloo::broadcast(o); });
    env.Signal("done");
    RANK_CHECK(!c.threw, "a broadcast root with GLUCX_SYNC_SEND=0 threw: ", c.what);
}

// ---- GoogleTest cases -----------------------------------------------------------------------

Job ConventionJob(const char *body, Mode mode, const std::string &params)
{
    Job job;
    job.body = body;
    job.size = 2;
    job.mode = mode;
    job.params = params;
    job.deadline = Ms(60000);
    return job;
}

struct TimeoutCase {
    const char *op;
    const char *kind;
};

class GlooTestTimeout : public ::testing::TestWithParam<TimeoutCase>
{
};

/* Gloo's <Op>Test.TestTimeout runs its ranks as threads of one process */
TEST_P(GlooTestTimeout, ThrowsTimedOutThreads)
{
    ExpectJobOk(ConventionJob("gloo_test_timeout", Mode::kThreads,
                              Str("op=", GetParam().op, " kind=", GetParam().kind)));
}

TEST_P(GlooTestTimeout, ThrowsTimedOutProcesses)
{
    ExpectJobOk(ConventionJob("gloo_test_timeout", Mode::kProcesses,
                              Str("op=", GetParam().op, " kind=", GetParam().kind)));
}

/* The roots of broadcast and scatter only send: they time out in waitSend. Gloo's allgather and
 * alltoall wait for their first send before its receive, so they do too (as over Gloo's TCP
 * transport, whose sends wait for the receiver); before issue 14 their sends completed at once
 * and the receive timed out. */
INSTANTIATE_TEST_SUITE_P(
    , GlooTestTimeout,
    ::testing::Values(TimeoutCase{"broadcast", "send"}, TimeoutCase{"scatter", "send"},
                      TimeoutCase{"allreduce", "recv"}, TimeoutCase{"reduce", "recv"},
                      TimeoutCase{"gather", "recv"}, TimeoutCase{"allgather", "send"},
                      TimeoutCase{"alltoall", "send"}, TimeoutCase{"allgatherv", "send"},
                      TimeoutCase{"alltoallv", "send"}, TimeoutCase{"barrier", "recv"}),
    [](const ::testing::TestParamInfo<TimeoutCase> &i) { return std::string(i.param.op); });

TEST(UnboundTimeouts, WaitRecvAndWaitSendSayTimedOut)
{
    ExpectJobOk(ConventionJob("unbound_timeouts", Mode::kProcesses, ""));
}

class SendWaitsForReceiver : public ::testing::TestWithParam<long long>
{
};

TEST_P(SendWaitsForReceiver, Processes)
{
    ExpectJobOk(
        ConventionJob("send_waits_for_receiver", Mode::kProcesses, Str("bytes=", GetParam())));
}

TEST_P(SendWaitsForReceiver, Threads)
{
    ExpectJobOk(
        ConventionJob("send_waits_for_receiver", Mode::kThreads, Str("bytes=", GetParam())));
}

/* 8 B and 4 KiB go eagerly (a plain UCX send completes at once), 1 MiB as a rendezvous */
INSTANTIATE_TEST_SUITE_P(, SendWaitsForReceiver, ::testing::Values(0, 8, 4096, 1 << 20),
                         [](const ::testing::TestParamInfo<long long> &i) {
                             return Str("bytes", i.param);
                         });

TEST(SyncSendSetting, ZeroGivesLocalCompletion)
{
    ExpectJobOk(ConventionJob("local_completion", Mode::kProcesses, ""));
}

TEST(SyncSendSetting, MalformedValueIsRefused)
{
    const char *old = std::getenv("GLUCX_SYNC_SEND");
    const std::string saved = old != nullptr ? old : "";
    setenv("GLUCX_SYNC_SEND", "yes", 1);
    std::string what;
    try {
        glucx::gloo::CreateDevice();
    } catch (const ::gloo::EnforceNotMet &e) {
        what = e.what();
    }
    if (old != nullptr)
        setenv("GLUCX_SYNC_SEND", saved.c_str(), 1);
    else
        unsetenv("GLUCX_SYNC_SEND");
    EXPECT_NE(what.find("GLUCX_SYNC_SEND='yes'"), std::string::npos) << what;
    /* the default is synchronous */
    auto dev = glucx::gloo::CreateDevice();
    EXPECT_NE(dev->str().find("synchronous sends"), std::string::npos) << dev->str();
}

} // namespace
} // namespace glucx_test
