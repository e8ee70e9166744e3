/*
 * Faults must end within a bounded time with a gloo::Exception (IoException or another subclass)
 * whose message names the peer, never a hang or an abort: a peer SIGKILLed in the middle of a
 * job, a peer that stays alive but never sends (timeout), and a receive shorter than the message.
 * After a timeout or a failure the context is failed: a later operation on it throws promptly
 * (measured relative to the timeout, never in absolute time).
 */
#include <algorithm>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/transport/unbound_buffer.h>

#include "harness.h"
#include "values.h"

namespace glucx_test
{
namespace
{

Ms TimeoutParam(const RankEnv &env, long long dflt)
{
    return Ms(env.params.GetInt("timeout_ms", dflt));
}

void Barrier(const std::shared_ptr<::gloo::Context> &ctx, uint32_t tag, Ms timeout = Ms(0))
{
    ::gloo::BarrierOptions opts(ctx);
    opts.setTag(tag);
    if (timeout.count() > 0)
        opts.setTimeout(timeout);
    ::gloo::barrier(opts);
}

/* Bound on an operation that must fail by timeout or failure detection: within the timeout,
 * with half of it again as slack for scheduling (the bound, not the timeout, is scaled). */
void CheckWithinTimeout(const Caught &c, const std::string &op, Ms timeout)
{
    RANK_CHECK(c.elapsed < Scaled(timeout * 3 / 2), op, " ended after ", c.elapsed.count(),
               " ms, later than the timeout (", timeout.count(), " ms) plus half");
}

/* Send to one rank and receive from another on slot, waiting for both. */
void SendRecv(const std::shared_ptr<::gloo::Context> &ctx, int to, int from, uint64_t slot)
{
    int32_t out = ctx->rank, in = -1;
    auto sbuf = ctx->createUnboundBuffer(&out, sizeof(out));
    auto rbuf = ctx->createUnboundBuffer(&in, sizeof(in));
    rbuf->recv(from, slot);
    sbuf->send(to, slot);
    sbuf->waitSend();
    rbuf->waitRecv();
}

/* An allreduce of n ones; op_timeout overrides the context's timeout (as PyTorch does). */
void AllreduceOnce(const std::shared_ptr<::gloo::Context> &ctx, uint32_t tag, size_t n,
                   Ms op_timeout = Ms(0))
{
    std::vector<float> v(n, 1.0f);
    ::gloo::AllreduceOptions opts(ctx);
    opts.setOutput(v.data(), n);
    opts.setReduceFunction(Sum<float>);
    opts.setTag(tag);
    if (op_timeout.count() > 0)
        opts.setTimeout(op_timeout);
    ::gloo::allreduce(opts);
}

// ---- a peer killed --------------------------------------------------------------------------

/* The last rank dies (SIGKILL) while every survivor waits for a message from it. */
GLUCX_RANK_BODY(killed_p2p)
{
    const Ms timeout = TimeoutParam(env, 5000);
    auto ctx = env.Connect(timeout);
    const int rank = ctx->rank, size = ctx->size, victim = size - 1, survivors = size - 1;
    Barrier(ctx, 1);
    if (rank == victim) {
        /* die only once every survivor posted its receive (its acknowledgement arrived) */
        std::vector<int32_t> acks(survivors);
        auto buf = ctx->createUnboundBuffer(acks.data(), acks.size() * sizeof(int32_t));
        for (int s = 0; s < survivors; s++)
            buf->recv(s, 41, s * sizeof(int32_t), sizeof(int32_t));
        for (int s = 0; s < survivors; s++)
            buf->waitRecv();
        env.KillSelf();
    }
    std::vector<uint8_t> data(64);
    int32_t ack = rank;
    auto rbuf = ctx->createUnboundBuffer(data.data(), data.size());
    auto abuf = ctx->createUnboundBuffer(&ack, sizeof(ack));
    rbuf->recv(victim, 42);
    abuf->send(victim, 41);
    Caught c = CatchFrom([&] {
        abuf->waitSend();
        rbuf->waitRecv();
    });
    const std::string op = Str("waitRecv from rank ", victim, " (SIGKILLed)");
    CheckGlooFailure(c, op, victim);
    CheckWithinTimeout(c, op, timeout);

    /* the context is failed: later operations throw promptly, with the dead peer ... */
    auto rbuf2 = ctx->createUnboundBuffer(data.data(), data.size());
    CheckFailsPromptly(
        [&] {
            rbuf2->recv(victim, 43);
            rbuf2->waitRecv();
        },
        Str("a later recv from rank ", victim), rank, timeout);
    /* ... and with live ones (which would succeed on a healthy context: all survivors take
     * part at the same time) */
    if (survivors >= 2) {
        env.Signal(Str("ring.", rank));
        for (int s = 0; s < survivors; s++)
            RANK_CHECK(env.Await(Str("ring.", s), Scaled(timeout * 4)), "survivor ", s,
                       " never got to the exchange among survivors");
        const int to = (rank + 1) % survivors, from = (rank + survivors - 1) % survivors;
        CheckFailsPromptly([&] { SendRecv(ctx, to, from, 44); },
                           Str("an exchange with live ranks ", to, " and ", from), rank, timeout);
    }
}

/* The last rank dies inside its fourth allreduce (from Gloo's call of the reduction function,
 * with messages in flight); the survivors' allreduce must throw. */
GLUCX_RANK_BODY(killed_allreduce)
{
    const Ms timeout = TimeoutParam(env, 5000);
    auto ctx = env.Connect(timeout);
    const int rank = ctx->rank, size = ctx->size, victim = size - 1, kill_at = 3;
    const size_t n = 65536;
    int iteration = 0;
    auto sum = [&](void *c, const void *a, const void *b, size_t k) {
        if (rank == victim && iteration == kill_at)
            env.KillSelf();
        Sum<float>(c, a, b, k);
    };
    for (iteration = 0; iteration < 50; iteration++) {
        const uint64_t seed = Mix64(iteration + 1);
        std::vector<float> v = Values<float>(seed, rank, n);
        ::gloo::AllreduceOptions opts(ctx);
        opts.setOutput(v.data(), n);
        opts.setReduceFunction(sum);
        opts.setTag(7);
        Caught c = CatchFrom([&] { ::gloo::allreduce(opts); });
        RANK_CHECK(rank != victim || iteration < kill_at, "the victim outlived its death");
        if (!c.threw) {
            RANK_CHECK(iteration < kill_at, "allreduce #", iteration, " completed without rank ",
                       victim, ", killed in it");
            CheckArray(
                v.data(), n,
                [&](size_t i) {
                    int64_t s = 0;
                    for (int r = 0; r < size; r++)
                        s += GenT<float>(seed, r, i);
                    return FromInt<float>(s);
                },
                Str("allreduce #", iteration, " before the kill"));
            continue;
        }
        const std::string op = Str("allreduce #", iteration, " (rank ", victim, " SIGKILLed)");
        RANK_CHECK(iteration == kill_at, "allreduce #", iteration,
                   " threw before the kill: ", c.description);
        CheckGlooFailure(c, op, -1);
        CheckNamesAPeer(c, rank, op);
        CheckWithinTimeout(c, op, timeout);
        CheckFailsPromptly([&] { AllreduceOnce(ctx, 8, 1024); }, "a later allreduce", rank,
                           timeout);
        return;
    }
    RANK_CHECK(false, "no allreduce failed although rank ", victim, " was killed");
}

// ---- timeouts -------------------------------------------------------------------------------

/*
 * case=p2p: rank 0 waits for a message rank 1 never sends (rank 1 stays alive, waiting out of
 * band); case=call: the same with waitRecv's own timeout (shorter than the context's);
 * case=allreduce: every rank but the last enters an allreduce the last never joins;
 * case=allreduce_call: the same with AllreduceOptions::setTimeout shorter than the context's.
 */
GLUCX_RANK_BODY(timeout)
{
    const std::string which = env.params.Get("case", "p2p");
    const bool per_call = which == "call" || which == "allreduce_call";
    const Ms ctx_timeout = TimeoutParam(env, per_call ? 30000 : 2000);
    const Ms call_timeout = Ms(env.params.GetInt("call_timeout_ms", 1500));
    /* the timeout the failing wait runs into */
    const Ms timeout = per_call ? call_timeout : ctx_timeout;
    auto ctx = env.Connect(ctx_timeout);
    const int rank = ctx->rank, size = ctx->size;
    const Ms patience = Scaled(ctx_timeout * 4 + Ms(20000)); /* out-of-band waits, generous */
    Barrier(ctx, 1);

    if (which == "allreduce" || which == "allreduce_call") {
        const int silent = size - 1;
        if (rank == silent) {
            for (int r = 0; r < silent; r++)
                RANK_CHECK(env.Await(Str("done.", r), patience), "rank ", r, " never finished");
            return;
        }
        const std::string op = Str("allreduce without rank ", silent);
        Caught c = CatchFrom([&] { AllreduceOnce(ctx, 5, 4096, per_call ? call_timeout : Ms(0)); });
        CheckGlooFailure(c, op, -1);
        CheckNamesAPeer(c, rank, op);
        RANK_CHECK(c.elapsed >= timeout * 4 / 5, op, " gave up after ", c.elapsed.count(),
                   " ms, before the timeout (", timeout.count(), " ms)");
        CheckWithinTimeout(c, op, timeout * 2); /* the failing wait may start late */
        CheckFailsPromptly([&] { AllreduceOnce(ctx, 6, 16); }, "a later allreduce", rank,
                           ctx_timeout);
        env.Signal(Str("done.", rank));
        return;
    }

    if (rank != 0) {
        if (rank == 2) {
            /* rank 0 exchanges with rank 2 after its timeout; whatever rank 2 sees, it ends */
            Caught c = CatchFrom([&] { SendRecv(ctx, 0, 0, 10); });
            RANK_CHECK(!c.threw || c.gloo_exception, "exchange with rank 0 threw ", c.description,
                       ", not a gloo::Exception");
            CheckWithinTimeout(c, "exchange with rank 0", ctx_timeout * 2);
        }
        RANK_CHECK(env.Await("done.0", patience), "rank 0 never finished");
        return;
    }

    std::vector<uint8_t> data(64);
    auto rbuf = ctx->createUnboundBuffer(data.data(), data.size());
    rbuf->recv(1, 7);
    Caught c = CatchFrom([&] {
        if (which == "call")
            rbuf->waitRecv(call_timeout);
        else
            rbuf->waitRecv();
    });
    const std::string op =
        Str("waitRecv from rank 1 (alive, never sends), timeout ", timeout.count(), " ms");
    CheckGlooFailure(c, op, 1);
    RANK_CHECK(c.elapsed >= timeout * 4 / 5, op, " gave up after ", c.elapsed.count(), " ms");
    CheckWithinTimeout(c, op, timeout);

    /* every later operation on the context throws promptly (relative to the context timeout) */
    auto rbuf2 = ctx->createUnboundBuffer(data.data(), data.size());
    auto sbuf = ctx->createUnboundBuffer(data.data(), data.size());
    CheckFailsPromptly(
        [&] {
            rbuf2->recv(1, 8);
            rbuf2->waitRecv();
        },
        "a later recv from rank 1", rank, ctx_timeout);
    CheckFailsPromptly(
        [&] {
            sbuf->send(1, 9);
            sbuf->waitSend();
        },
        "a later send to rank 1", rank, ctx_timeout);
    CheckFailsPromptly([&] { AllreduceOnce(ctx, 2, 16); }, "a later allreduce", rank, ctx_timeout);
    if (size >= 3)
        CheckFailsPromptly([&] { SendRecv(ctx, 2, 2, 10); }, "a later exchange with rank 2", rank,
                           ctx_timeout);
    env.Signal("done.0");
}

/*
 * A per-call timeout longer than the context's is honoured: rank 1 sends 2 context timeouts late
 * to rank 0, which waits with waitRecv(4 context timeouts); then the last rank joins an allreduce
 * (AllreduceOptions::setTimeout(4 context timeouts)) 2 context timeouts after the others. Both
 * complete.
 */
GLUCX_RANK_BODY(long_call_timeout)
{
    /* the late rank is 2 context timeouts late (what is tested); the call timeout bounds the
     * wait for it, so it scales */
    const Ms ctx_timeout = TimeoutParam(env, 1000), call_timeout = Scaled(ctx_timeout * 4);
    auto ctx = env.Connect(ctx_timeout);
    const int rank = ctx->rank, size = ctx->size;
    Barrier(ctx, 1);
    std::vector<uint8_t> data(64, 0);
    if (rank == 1) {
        std::this_thread::sleep_for(ctx_timeout * 2);
        for (size_t j = 0; j < data.size(); j++)
            data[j] = static_cast<uint8_t>(j * 7 + 1);
        auto sbuf = ctx->createUnboundBuffer(data.data(), data.size());
        sbuf->send(0, 7);
        RANK_CHECK(sbuf->waitSend(call_timeout), "send to rank 0");
    } else if (rank == 0) {
        auto rbuf = ctx->createUnboundBuffer(data.data(), data.size());
        rbuf->recv(1, 7);
        Caught c = CatchFrom([&] { rbuf->waitRecv(call_timeout); });
        RANK_CHECK(!c.threw, "waitRecv(", call_timeout.count(), " ms) with a context timeout of ",
                   ctx_timeout.count(), " ms threw after ", c.elapsed.count(),
                   " ms: ", c.description);
        for (size_t j = 0; j < data.size(); j++)
            RANK_CHECK(data[j] == static_cast<uint8_t>(j * 7 + 1), "byte ", j, " of the message");
    }
    Barrier(ctx, 2, call_timeout * 2);
    if (rank == size - 1)
        std::this_thread::sleep_for(ctx_timeout * 2);
    std::vector<float> v(1000, 1.0f);
    ::gloo::AllreduceOptions opts(ctx);
    opts.setOutput(v.data(), v.size());
    opts.setReduceFunction(Sum<float>);
    opts.setTag(3);
    opts.setTimeout(call_timeout);
    Caught c = CatchFrom([&] { ::gloo::allreduce(opts); });
    RANK_CHECK(!c.threw, "allreduce with setTimeout(", call_timeout.count(),
               " ms), context timeout ", ctx_timeout.count(), " ms, one rank late by ",
               (ctx_timeout * 2).count(), " ms, threw after ", c.elapsed.count(),
               " ms: ", c.description);
    for (size_t i = 0; i < v.size(); i++)
        RANK_CHECK(v[i] == static_cast<float>(size), "allreduce element ", i, " = ", v[i]);
}

// ---- length mismatch ------------------------------------------------------------------------

/* Rank 1 posts a receive shorter than the message rank 0 sends: the receiver throws naming
 * rank 0; the sender either completes or throws, within the timeout. Eager and rendezvous
 * sizes, receive posted before and after the message arrives; a fresh context for each. */
GLUCX_RANK_BODY(mismatch)
{
    const Ms timeout = TimeoutParam(env, 5000);
    const Ms patience = Scaled(timeout * 4 + Ms(20000));
    struct Case {
        size_t send_bytes, recv_bytes;
        bool recv_first;
    };
    const Case cases[] = {
        {64, 16, true}, {64, 16, false}, {1 << 20, 1 << 19, true}, {1 << 20, 1 << 19, false}};
    int k = 0;
    for (const Case &cs : cases) {
        auto ctx = env.Connect(timeout);
        const std::string name = Str("mm", k++);
        const std::string what =
            Str(cs.send_bytes, "-byte message into a ", cs.recv_bytes,
                "-byte receive (receive posted ", cs.recv_first ? "first" : "after the send", ")");
        std::vector<uint8_t> data(std::max(cs.send_bytes, cs.recv_bytes), 0x5a);
        if (env.rank == 1) {
            if (!cs.recv_first)
                RANK_CHECK(env.Await(name + ".sent", patience), "rank 0 never sent");
            auto rbuf = ctx->createUnboundBuffer(data.data(), cs.recv_bytes);
            rbuf->recv(0, 60);
            env.Signal(name + ".posted");
            Caught c = CatchFrom([&] { rbuf->waitRecv(); });
            CheckGlooFailure(c, "receiving a " + what, 0);
            CheckWithinTimeout(c, "receiving a " + what, timeout);
            RANK_CHECK(c.what.find(std::to_string(cs.recv_bytes)) != std::string::npos ||
                           c.what.find(std::to_string(cs.send_bytes)) != std::string::npos,
                       "receiving a ", what, ": the message names neither size: ", c.what);
            env.Signal(name + ".received");
        } else if (env.rank == 0) {
            if (cs.recv_first)
                RANK_CHECK(env.Await(name + ".posted", patience), "rank 1 never posted");
            auto sbuf = ctx->createUnboundBuffer(data.data(), cs.send_bytes);
            sbuf->send(1, 60);
            env.Signal(name + ".sent");
            Caught c = CatchFrom([&] { sbuf->waitSend(); });
            RANK_CHECK(!c.threw || c.gloo_exception, "sending a ", what, " threw ", c.description,
                       ", not a gloo::Exception");
            CheckWithinTimeout(c, "sending a " + what, timeout);
            /* keep the context until the receiver has seen its error */
            RANK_CHECK(env.Await(name + ".received", patience), "rank 1 never finished");
        }
    }
}

/* Rank 0 sends 16 bytes into a 64-byte receive on rank 1. On a slot built by gloo::Slot (what
 * Gloo's collectives use, which know their exact lengths) the receiver throws naming rank 0 and
 * both sizes; on a raw point-to-point tag the shorter message is accepted, as in Gloo. */
GLUCX_RANK_BODY(short_message)
{
    const Ms timeout = TimeoutParam(env, 5000);
    const Ms patience = Scaled(timeout * 4 + Ms(20000));
    const uint64_t slots[] = {::gloo::Slot::build(3, 77), 61};
    int k = 0;
    for (uint64_t slot : slots) {
        const bool collective = k == 0;
        auto ctx = env.Connect(timeout);
        const std::string name = Str("short", k++);
        std::vector<uint8_t> data(64, static_cast<uint8_t>(env.rank + 1));
        if (env.rank == 1) {
            auto rbuf = ctx->createUnboundBuffer(data.data(), 64);
            rbuf->recv(0, slot);
            env.Signal(name + ".posted");
            int from = -1;
            Caught c = CatchFrom([&] { rbuf->waitRecv(&from); });
            if (collective) {
                CheckGlooFailure(c, "a short message on a collective slot", 0);
                RANK_CHECK(c.what.find("16") != std::string::npos &&
                               c.what.find("64") != std::string::npos,
                           "the message names neither size: ", c.what);
            } else {
                RANK_CHECK(!c.threw, "a short message on a p2p tag threw: ", c.what);
                RANK_CHECK(from == 0, "waitRecv reported rank ", from);
                for (size_t i = 0; i < 16; i++)
                    RANK_CHECK(data[i] == 1, "byte ", i, " = ", int(data[i]));
                for (size_t i = 16; i < 64; i++)
                    RANK_CHECK(data[i] == 2, "byte ", i, " past the message was written");
            }
            env.Signal(name + ".received");
        } else if (env.rank == 0) {
            RANK_CHECK(env.Await(name + ".posted", patience), "rank 1 never posted");
            auto sbuf = ctx->createUnboundBuffer(data.data(), 16);
            sbuf->send(1, slot);
            Caught c = CatchFrom([&] { sbuf->waitSend(); });
            RANK_CHECK(!c.threw || c.gloo_exception, "send threw ", c.description);
            RANK_CHECK(env.Await(name + ".received", patience), "rank 1 never finished");
        }
    }
}

// ---- GoogleTest cases -----------------------------------------------------------------------

Job FaultJob(const char *body, int size, Mode mode, const std::string &params)
{
    Job job;
    job.body = body;
    job.size = size;
    job.mode = mode;
    job.params = params;
    job.deadline = Ms(60000);
    return job;
}

class KilledPeer : public ::testing::TestWithParam<int>
{
};

TEST_P(KilledPeer, WaitingSurvivorsThrowNamingIt)
{
    Job job = FaultJob("killed_p2p", GetParam(), Mode::kProcesses, "timeout_ms=5000");
    job.killed = {GetParam() - 1};
    ExpectJobOk(job);
}

TEST_P(KilledPeer, AllreduceThrowsOnSurvivors)
{
    Job job = FaultJob("killed_allreduce", GetParam(), Mode::kProcesses, "timeout_ms=5000");
    job.killed = {GetParam() - 1};
    ExpectJobOk(job);
}

INSTANTIATE_TEST_SUITE_P(, KilledPeer, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int> &i) {
                             return Str("n", i.param, "_processes");
                         });

struct TimeoutCase {
    const char *which;
    int size;
    Mode mode;
};

void PrintTo(const TimeoutCase &c, std::ostream *os)
{
    *os << c.which << " n=" << c.size << " ";
    PrintTo(c.mode, os);
}

class Timeout : public ::testing::TestWithParam<TimeoutCase>
{
};

TEST_P(Timeout, ThrowsAndFailsTheContext)
{
    const TimeoutCase &c = GetParam();
    ExpectJobOk(FaultJob("timeout", c.size, c.mode, Str("case=", c.which)));
}

INSTANTIATE_TEST_SUITE_P(, Timeout,
                         ::testing::Values(TimeoutCase{"p2p", 2, Mode::kProcesses},
                                           TimeoutCase{"p2p", 3, Mode::kThreads},
                                           TimeoutCase{"p2p", 3, Mode::kProcesses},
                                           TimeoutCase{"call", 2, Mode::kThreads},
                                           TimeoutCase{"allreduce", 3, Mode::kProcesses},
                                           TimeoutCase{"allreduce", 4, Mode::kThreads},
                                           TimeoutCase{"allreduce_call", 3, Mode::kThreads}),
                         [](const ::testing::TestParamInfo<TimeoutCase> &i) {
                             return Str(i.param.which, "_n", i.param.size,
                                        i.param.mode == Mode::kProcesses ? "_processes"
                                                                         : "_threads");
                         });

TEST(LongCallTimeout, OverridesTheContextTimeoutProcesses)
{
    ExpectJobOk(FaultJob("long_call_timeout", 3, Mode::kProcesses, "timeout_ms=1000"));
}

TEST(LongCallTimeout, OverridesTheContextTimeoutThreads)
{
    ExpectJobOk(FaultJob("long_call_timeout", 2, Mode::kThreads, "timeout_ms=1000"));
}

TEST(LengthMismatch, ReceiverThrowsProcesses)
{
    ExpectJobOk(FaultJob("mismatch", 2, Mode::kProcesses, ""));
}

TEST(LengthMismatch, ReceiverThrowsThreads)
{
    ExpectJobOk(FaultJob("mismatch", 2, Mode::kThreads, ""));
}

TEST(LengthMismatch, ShortMessageOnCollectiveSlotThrows)
{
    ExpectJobOk(FaultJob("short_message", 2, Mode::kProcesses, ""));
}

} // namespace
} // namespace glucx_test
