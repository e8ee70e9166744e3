/*
 * Gloo's bound-buffer API used directly (Pair::createSendBuffer / createRecvBuffer,
 * Buffer::send(offset, length, roffset), waitSend, waitRecv), as Gloo's class-template
 * algorithms use it.
 *
 * Semantics, on the glucx device and on Gloo's TCP device (the reference, which shows the test
 * itself is right): placement at (offset, roffset) for sizes from 1 B to 4 MiB (across UCX's
 * eager/rendezvous threshold) and zero-length messages, FIFO placement per (peer, slot),
 * counting (each waitSend / waitRecv consumes one completion; a waitSend with nothing posted
 * is refused), buffers reused round after round, sends posted before the peer created its
 * receive buffer, a receive buffer destroyed and created again on the same slot, several
 * threads on one context, and local argument errors (refused with gloo::EnforceNotMet, the
 * context still usable).
 *
 * Failures, on the glucx device: a wait past the context's timeout throws gloo::IoException
 * naming the peer and the slot, and every later call on the context rethrows at once (on the
 * peers too); a SIGKILLed peer makes the waits on it throw within the timeout; a buffer
 * destroyed with transfers in flight returns within the timeout and its memory is never read
 * or written afterwards; a message that does not fit the peer's buffer fails both sides and
 * writes nothing outside the buffer.
 */
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/pair.h>

#include "harness.h"
#include "values.h"

namespace glucx_test
{
namespace
{

using ::gloo::transport::Buffer;
using Ctx = std::shared_ptr<::gloo::Context>;

Ms Timeout(const RankEnv &env, long long dflt)
{
    return Scaled(Ms(env.params.GetInt("timeout_ms", dflt)));
}

std::unique_ptr<Buffer> SendBuffer(const Ctx &ctx, int peer, int slot, void *ptr, size_t size)
{
    auto &pair = ctx->getPair(peer);
    RANK_CHECK(pair != nullptr, "no pair for rank ", peer);
    return pair->createSendBuffer(slot, ptr, size);
}

std::unique_ptr<Buffer> RecvBuffer(const Ctx &ctx, int peer, int slot, void *ptr, size_t size)
{
    auto &pair = ctx->getPair(peer);
    RANK_CHECK(pair != nullptr, "no pair for rank ", peer);
    return pair->createRecvBuffer(slot, ptr, size);
}

/* A barrier on ctx (Gloo's function-style one, on unbound buffers). */
void Barrier(const Ctx &ctx, uint32_t tag)
{
    ::gloo::BarrierOptions opts(ctx);
    opts.setTag(tag);
    ::gloo::barrier(opts);
}

/* Run op; it must not throw (a failure is reported with what was done). */
void Expect(const std::string &what, const std::function<void()> &op)
{
    Caught c = CatchFrom(op);
    RANK_CHECK(!c.threw, what, " threw ", c.description);
}

/* Run op; it must throw gloo::EnforceNotMet (a local argument error). */
void ExpectRefused(const std::string &what, const std::function<void()> &op)
{
    Caught c = CatchFrom(op);
    RANK_CHECK(c.threw, what, " was not refused");
    RANK_CHECK(c.description.rfind("gloo::EnforceNotMet", 0) == 0, what, " threw ", c.description,
               ", not gloo::EnforceNotMet");
}

/* One message of a plan: length, offset in the sender's buffer, offset in the receiver's. */
struct Msg {
    size_t len, lo, ro;
};

/*
 * Messages of 1 B to 4 MiB (on both sides of UCX's eager/rendezvous thresholds) and two empty
 * ones, taken from odd offsets of the sender's buffer and placed in the receiver's buffer in
 * the reverse order of posting, each followed by a gap of 5 bytes that nothing may write.
 */
std::vector<Msg> PlacementPlan(size_t *send_bytes, size_t *recv_bytes)
{
    const size_t lens[] = {1,    7, 64,    1000,   4096,    8191,    8192,
                           8193, 0, 65539, 262149, 1 << 20, 4 << 20, 0};
    const size_t n = sizeof(lens) / sizeof(lens[0]);
    std::vector<Msg> plan(n);
    size_t sbytes = 0, at = 0;
    for (size_t m = 0; m < n; m++) {
        plan[m].len = lens[m];
        plan[m].lo = (m * 4099) % 8192;
        sbytes = std::max(sbytes, plan[m].lo + plan[m].len);
    }
    for (size_t m = n; m-- > 0;) {
        plan[m].ro = at;
        at += plan[m].len + 5;
    }
    /* the last empty message sits at the very end of both buffers */
    plan[n - 1].lo = sbytes;
    plan[n - 1].ro = at;
    *send_bytes = sbytes;
    *recv_bytes = at;
    return plan;
}

// ---- placement, sizes, counting, reuse -------------------------------------------------------

/*
 * Each rank sends the plan's messages to its right neighbour and receives its left
 * neighbour's, round after round on the same buffers. After the k-th waitRecv the k-th
 * message must be in place (puts to one buffer are placed in order); at the end of a round the
 * gaps are untouched. A rank tells its left neighbour with an empty message (on null, empty
 * buffers) that its buffer may be written again, as Gloo's algorithms do.
 */
void Placement(RankEnv &env, const Ctx &ctx)
{
    const int rank = ctx->rank, size = ctx->size;
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    size_t sbytes = 0, rbytes = 0;
    const std::vector<Msg> plan = PlacementPlan(&sbytes, &rbytes);
    std::vector<uint8_t> sdata(sbytes), rdata(rbytes);
    auto sbuf = SendBuffer(ctx, to, 11, sdata.data(), sdata.size());
    auto rbuf = RecvBuffer(ctx, from, 11, rdata.data(), rdata.size());
    auto go_out = SendBuffer(ctx, from, 12, nullptr, 0);
    auto go_in = RecvBuffer(ctx, to, 12, nullptr, 0);
    /* Gloo's TCP device loses an empty message that arrives before its receive buffer exists
     * (Early tests that case on glucx): every buffer exists before the first go */
    Expect("the barrier after creating the buffers", [&] { Barrier(ctx, 2); });
    const int rounds = static_cast<int>(env.params.GetInt("rounds", 3));
    for (int round = 0; round < rounds; round++) {
        const uint64_t seed = Mix64(1000 + round);
        const std::string what = Str("round ", round);
        /* the previous round's sends are complete and its messages all received */
        FillPattern(sdata.data(), sdata.size(), seed, rank, to);
        std::fill(rdata.begin(), rdata.end(), kPoisonByte);
        Expect(what + ": the go to the left neighbour", [&] {
            go_out->send();
            go_out->waitSend();
        });
        Expect(what + ": waitRecv of the right neighbour's go", [&] { go_in->waitRecv(); });
        for (const Msg &m : plan)
            Expect(Str(what, ": send of ", m.len, " bytes at ", m.lo, " to ", m.ro),
                   [&] { sbuf->send(m.lo, m.len, m.ro); });
        for (size_t k = 0; k < plan.size(); k++) {
            const Msg &m = plan[k];
            const std::string at = Str(what, ", message ", k, " (", m.len, " bytes at ", m.ro,
                                       " from rank ", from, ")");
            Expect(at + ": waitRecv", [&] { rbuf->waitRecv(); });
            for (size_t j = 0; j < m.len; j++)
                RANK_CHECK(rdata[m.ro + j] == PatternByte(seed, from, rank, m.lo + j), at,
                           ": byte ", j, " is wrong after its waitRecv");
        }
        for (size_t k = 0; k < plan.size(); k++) {
            const size_t end = plan[k].ro + plan[k].len;
            CheckUntouched(rdata.data() + end, std::min<size_t>(5, rdata.size() - end),
                           Str(what, ": the gap after message ", k));
        }
        /* one completion per send, then nothing left to wait for */
        for (size_t k = 0; k < plan.size(); k++)
            Expect(Str(what, ": waitSend ", k), [&] { sbuf->waitSend(); });
        ExpectRefused(what + ": a waitSend beyond the sends posted", [&] { sbuf->waitSend(); });
    }
    /* every rank is done with its buffers before any goes */
    Expect("the final barrier", [&] { Barrier(ctx, 1); });
}

// ---- counting across buffers and late messages ----------------------------------------------

/*
 * Rank 0 sends three messages to slot A and one to slot B of rank 1, which waits on B first:
 * completions of one buffer never satisfy another's wait. Then rank 1 waits on A a fourth
 * time: it may return only once rank 0 sent a fourth message, which it does only after
 * hearing that rank 1 waits (and a pause), having marked that it sends.
 */
void Counting(RankEnv &env, const Ctx &ctx)
{
    std::vector<uint8_t> a(64), b(16);
    if (ctx->rank == 0) {
        FillPattern(a.data(), a.size(), 1, 0, 1);
        FillPattern(b.data(), b.size(), 2, 0, 1);
        auto sa = SendBuffer(ctx, 1, 21, a.data(), a.size());
        auto sb = SendBuffer(ctx, 1, 22, b.data(), b.size());
        for (int k = 0; k < 3; k++)
            sa->send(16 * k, 16, 16 * k);
        sb->send();
        for (int k = 0; k < 3; k++)
            Expect("waitSend on slot A", [&] { sa->waitSend(); });
        Expect("waitSend on slot B", [&] { sb->waitSend(); });
        ExpectRefused("a fourth waitSend on slot A", [&] { sa->waitSend(); });
        RANK_CHECK(env.Await("waiting", Timeout(env, 30000)), "rank 1 never waited");
        std::this_thread::sleep_for(Ms(100));
        env.Signal("sending");
        sa->send(48, 16, 48);
        Expect("the last waitSend on slot A", [&] { sa->waitSend(); });
        RANK_CHECK(env.Await("done", Timeout(env, 30000)), "rank 1 never finished");
        return;
    }
    std::fill(a.begin(), a.end(), kPoisonByte);
    std::fill(b.begin(), b.end(), kPoisonByte);
    auto ra = RecvBuffer(ctx, 0, 21, a.data(), a.size());
    auto rb = RecvBuffer(ctx, 0, 22, b.data(), b.size());
    Expect("waitRecv on slot B", [&] { rb->waitRecv(); });
    CheckPattern(b.data(), b.size(), 2, 0, 1, "slot B");
    for (int k = 0; k < 3; k++)
        Expect("waitRecv on slot A", [&] { ra->waitRecv(); });
    CheckPattern(a.data(), 48, 1, 0, 1, "slot A, messages 0-2");
    CheckUntouched(&a[48], 16, "slot A before the fourth message");
    env.Signal("waiting");
    Expect("the fourth waitRecv on slot A", [&] { ra->waitRecv(); });
    RANK_CHECK(env.IsSignalled("sending"),
               "the fourth waitRecv on slot A returned before rank 0 sent the fourth message");
    CheckPattern(a.data(), a.size(), 1, 0, 1, "slot A, all four messages");
    env.Signal("done");
}

// ---- messages before the receive buffer exists; a buffer created again ----------------------

/*
 * Rank 0 sends messages (100 B, empty, 65 KiB, 4 MiB) to rank 1's slot before rank 1 created
 * the buffer (rank 1 waits until they were posted, and a little more). Then rank 1 destroys
 * the buffer, poisons its memory and creates another on the same slot, into which rank 0's
 * next two messages must go (and none into the old memory).
 */
void Early(RankEnv &env, const Ctx &ctx)
{
    /* an empty message too, except on Gloo's TCP device, which loses one sent before its
     * receive buffer exists */
    const bool empty = env.params.Get("dev", "glucx") == "glucx";
    const std::vector<size_t> lens = empty ? std::vector<size_t>{100, 0, 65 << 10, 4 << 20}
                                           : std::vector<size_t>{100, 65 << 10, 4 << 20};
    const size_t total = 100 + (65 << 10) + (4 << 20);
    const Ms patience = Timeout(env, 30000);
    if (ctx->rank == 0) {
        std::vector<uint8_t> s(total);
        FillPattern(s.data(), s.size(), 7, 0, 1);
        auto sbuf = SendBuffer(ctx, 1, 31, s.data(), s.size());
        size_t at = 0;
        for (size_t len : lens) {
            sbuf->send(at, len, at);
            at += len;
        }
        env.Signal("posted");
        for (size_t k = 0; k < lens.size(); k++)
            Expect("waitSend of an early message", [&] { sbuf->waitSend(); });
        RANK_CHECK(env.Await("recreated", patience), "rank 1 never created its second buffer");
        FillPattern(s.data(), s.size(), 8, 0, 1);
        sbuf->send(0, 1000, 0);
        sbuf->send(1000, 3 << 20, 1000);
        for (int k = 0; k < 2; k++)
            Expect("waitSend into the second buffer", [&] { sbuf->waitSend(); });
        RANK_CHECK(env.Await("done", patience), "rank 1 never finished");
        return;
    }
    RANK_CHECK(env.Await("posted", patience), "rank 0 never posted");
    std::this_thread::sleep_for(Ms(200));
    std::vector<uint8_t> first(total, kPoisonByte), second(total, kPoisonByte);
    auto rbuf = RecvBuffer(ctx, 0, 31, first.data(), first.size());
    for (size_t k = 0; k < lens.size(); k++)
        Expect("waitRecv of an early message", [&] { rbuf->waitRecv(); });
    CheckPattern(first.data(), total, 7, 0, 1, "the messages sent before the buffer existed");
    rbuf.reset();
    std::fill(first.begin(), first.end(), kPoisonByte);
    rbuf = RecvBuffer(ctx, 0, 31, second.data(), second.size());
    env.Signal("recreated");
    for (int k = 0; k < 2; k++)
        Expect("waitRecv in the second buffer", [&] { rbuf->waitRecv(); });
    CheckPattern(second.data(), 1000 + (3 << 20), 8, 0, 1, "the second buffer");
    CheckUntouched(&second[1000 + (3 << 20)], total - 1000 - (3 << 20),
                   "the rest of the second buffer");
    CheckUntouched(first.data(), total, "the first buffer after it was destroyed");
    env.Signal("done");
}

// ---- threads --------------------------------------------------------------------------------

/* Two threads per rank exchange around the ring on their own slots, 100 rounds each, one
 * context shared. */
void Threads(RankEnv &, const Ctx &ctx)
{
    const int rank = ctx->rank, size = ctx->size;
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    struct Worker {
        std::vector<uint8_t> s = std::vector<uint8_t>(4099), r = std::vector<uint8_t>(4099);
        std::unique_ptr<Buffer> sbuf, rbuf, go_out, go_in;
        std::string error;
    };
    Worker w[2];
    for (int t = 0; t < 2; t++) {
        const int slot = 41 + 2 * t;
        w[t].sbuf = SendBuffer(ctx, to, slot, w[t].s.data(), w[t].s.size());
        w[t].rbuf = RecvBuffer(ctx, from, slot, w[t].r.data(), w[t].r.size());
        w[t].go_out = SendBuffer(ctx, from, slot + 1, nullptr, 0);
        w[t].go_in = RecvBuffer(ctx, to, slot + 1, nullptr, 0);
    }
    /* (Gloo's TCP device loses an empty message sent before its receive buffer exists) */
    Barrier(ctx, 2);
    auto run = [&](int t) {
        Worker &x = w[t];
        try {
            x.go_out->send();
            for (int round = 0; round < 100; round++) {
                const uint64_t seed = Mix64(t * 1000 + round);
                FillPattern(x.s.data(), x.s.size(), seed, rank, to);
                x.go_in->waitRecv();
                x.sbuf->send();
                x.rbuf->waitRecv();
                CheckPattern(x.r.data(), x.r.size(), seed, from, rank,
                             Str("thread ", t, ", round ", round));
                x.sbuf->waitSend();
                x.go_out->send();
            }
            x.go_in->waitRecv();
            for (int k = 0; k < 101; k++)
                x.go_out->waitSend();
        } catch (const std::exception &e) {
            x.error = Describe(e);
        }
    };
    std::thread other(run, 1);
    run(0);
    other.join();
    for (int t = 0; t < 2; t++)
        RANK_CHECK(w[t].error.empty(), "thread ", t, ": ", w[t].error);
    Barrier(ctx, 1);
}

// ---- local argument errors ------------------------------------------------------------------

/* Refused locally with gloo::EnforceNotMet; the context stays usable. */
void LocalErrors(RankEnv &env, const Ctx &ctx)
{
    const int rank = ctx->rank, peer = 1 - rank;
    std::vector<uint8_t> s(100), r(100, kPoisonByte);
    FillPattern(s.data(), s.size(), 5, rank, peer);
    auto sbuf = SendBuffer(ctx, peer, 51, s.data(), s.size());
    auto rbuf = RecvBuffer(ctx, peer, 51, r.data(), r.size());
    ExpectRefused("a send of 60 bytes at offset 50 of a 100-byte buffer",
                  [&] { sbuf->send(50, 60, 0); });
    ExpectRefused("a send at offset 101 of a 100-byte buffer", [&] { sbuf->send(101, 0, 0); });
    ExpectRefused("a waitSend with no send posted", [&] { sbuf->waitSend(); });
    if (env.params.Get("dev", "glucx") == "glucx") {
        /* (Gloo's TCP device refuses it too, but leaks the buffer it refused) */
        std::vector<uint8_t> other(100);
        ExpectRefused("a second receive buffer for the same peer and slot",
                      [&] { RecvBuffer(ctx, peer, 51, other.data(), other.size()); });
    }
    /* none of it reached the peer or hurt the context */
    Expect("an exchange after the refusals", [&] {
        sbuf->send(10, 90, 10);
        rbuf->waitRecv();
        sbuf->waitSend();
    });
    CheckUntouched(r.data(), 10, "bytes before the exchanged range");
    for (size_t j = 10; j < 100; j++)
        RANK_CHECK(r[j] == PatternByte(5, peer, rank, j), "byte ", j, " of the exchange");
    /* the peer read everything before the buffers go */
    Barrier(ctx, 1);
}

// ---- failures (glucx) -----------------------------------------------------------------------

void CheckNamesSlot(const Caught &c, int slot, const std::string &op)
{
    RANK_CHECK(c.what.find(Str("slot ", slot)) != std::string::npos, op,
               ": the message does not name slot ", slot, ": ", c.what);
}

/* An allreduce on unbound buffers (which fails on a failed context, as everything must). */
void Allreduce(const Ctx &ctx, uint32_t tag)
{
    std::vector<float> v(16, 1.0f);
    ::gloo::AllreduceOptions opts(ctx);
    opts.setOutput(v.data(), v.size());
    opts.setReduceFunction(Sum<float>);
    opts.setTag(tag);
    ::gloo::allreduce(opts);
}

/*
 * Rank 0 waits for a message that rank 1 (alive) never sends: waitRecv throws after the
 * timeout, naming rank 1 and the slot; then every call on rank 0's context throws at once, and
 * so do the other ranks' calls (glucx told them).
 */
void TimeoutCase(RankEnv &env, const Ctx &ctx, Ms timeout)
{
    const int rank = ctx->rank, size = ctx->size;
    const Ms patience = Scaled(timeout * 4 + Ms(20000));
    std::vector<uint8_t> data(256);
    if (rank != 0) {
        auto rbuf = RecvBuffer(ctx, 0, 62, data.data(), data.size());
        RANK_CHECK(env.Await("timedout", patience), "rank 0 never timed out");
        CheckFailsPromptly([&] { rbuf->waitRecv(); },
                           "a waitRecv from rank 0 after rank 0 timed out", rank, timeout);
        CheckFailsPromptly([&] { Allreduce(ctx, 3); }, "an allreduce after rank 0 timed out", rank,
                           timeout);
        env.Signal(Str("done.", rank));
        return;
    }
    auto rbuf = RecvBuffer(ctx, 1, 61, data.data(), data.size());
    auto sbuf = SendBuffer(ctx, 1, 63, data.data(), data.size());
    Caught c = CatchFrom([&] { rbuf->waitRecv(); });
    const std::string op =
        Str("waitRecv from rank 1 (alive, never sends), timeout ", timeout.count(), " ms");
    CheckGlooFailure(c, op, 1);
    RANK_CHECK(c.description.rfind("gloo::IoException", 0) == 0, op, " threw ", c.description,
               ", not gloo::IoException");
    CheckNamesSlot(c, 61, op);
    RANK_CHECK(c.elapsed >= timeout * 4 / 5, op, " gave up after ", c.elapsed.count(), " ms");
    RANK_CHECK(c.elapsed < Scaled(timeout * 3 / 2), op, " ended after ", c.elapsed.count(),
               " ms, later than the timeout plus half");
    env.Signal("timedout");
    CheckFailsPromptly([&] { rbuf->waitRecv(); }, "the same waitRecv again", 0, timeout);
    CheckFailsPromptly([&] { sbuf->send(); }, "a send to rank 1", 0, timeout);
    CheckFailsPromptly([&] { sbuf->waitSend(); }, "a waitSend", 0, timeout);
    CheckFailsPromptly([&] { RecvBuffer(ctx, 1, 64, data.data(), data.size()); },
                       "a new receive buffer", 0, timeout);
    CheckFailsPromptly([&] { Allreduce(ctx, 4); }, "an allreduce", 0, timeout);
    for (int r = 1; r < size; r++)
        RANK_CHECK(env.Await(Str("done.", r), patience), "rank ", r, " never finished");
}

/*
 * The last rank is SIGKILLed while every survivor waits on a receive buffer for its message
 * (and, with put_bytes, rank 0 has `puts` sends (default 1) of a send buffer of that size to it
 * in flight): the waits throw within the timeout, naming it, and later calls throw at once, also
 * between survivors.
 */
void Killed(RankEnv &env, const Ctx &ctx, Ms timeout)
{
    const int rank = ctx->rank, size = ctx->size, victim = size - 1;
    const size_t put_bytes = static_cast<size_t>(env.params.GetInt("put_bytes", 0));
    const int puts = static_cast<int>(env.params.GetInt("puts", 1));
    std::vector<uint8_t> data(std::max<size_t>(put_bytes, 64));
    if (rank == victim) {
        auto rbuf = RecvBuffer(ctx, 0, 72, data.data(), data.size());
        for (int r = 0; r < victim; r++)
            RANK_CHECK(env.Await(Str("waiting.", r), Timeout(env, 30000)), "rank ", r,
                       " never waited");
        env.KillSelf();
    }
    auto rbuf = RecvBuffer(ctx, victim, 71, data.data(), data.size());
    /* survivors will exchange with each other (which would work on a healthy context) */
    std::vector<uint8_t> small(64);
    const int other = 1 - rank;
    std::unique_ptr<Buffer> s, r;
    if (victim >= 2) {
        s = SendBuffer(ctx, other, 73, small.data(), small.size());
        r = RecvBuffer(ctx, other, 73, small.data(), small.size());
    }
    std::unique_ptr<Buffer> sbuf;
    if (rank == 0 && put_bytes > 0) {
        sbuf = SendBuffer(ctx, victim, 72, data.data(), put_bytes);
        for (int i = 0; i < puts; i++)
            sbuf->send();
    }
    env.Signal(Str("waiting.", rank));
    Caught c = CatchFrom([&] { rbuf->waitRecv(); });
    const std::string op = Str("waitRecv from rank ", victim, " (SIGKILLed)");
    CheckGlooFailure(c, op, victim);
    CheckNamesSlot(c, 71, op);
    RANK_CHECK(c.elapsed < Scaled(timeout * 3 / 2), op, " ended after ", c.elapsed.count(),
               " ms, later than the timeout (", timeout.count(), " ms) plus half");
    if (sbuf)
        CheckFailsPromptly([&] { sbuf->waitSend(); }, "a waitSend of the put to the victim", rank,
                           timeout);
    CheckFailsPromptly([&] { rbuf->waitRecv(); }, "the same waitRecv again", rank, timeout);
    if (victim >= 2)
        CheckFailsPromptly(
            [&] {
                s->send();
                r->waitRecv();
            },
            Str("an exchange with live rank ", other), rank, timeout);
}

/*
 * A send buffer destroyed with two 4 MiB messages in flight to a buffer rank 1 creates only
 * later: the destruction waits until they are out (rank 1 creates its buffer within the
 * timeout), and the memory is not read afterwards: rank 0 overwrites it at once, and rank 1
 * must receive the original bytes.
 */
void DestroyedSend(RankEnv &env, const Ctx &ctx, Ms timeout)
{
    const size_t len = 4 << 20;
    const Ms patience = Scaled(timeout * 4 + Ms(20000));
    if (ctx->rank == 0) {
        std::vector<uint8_t> s(2 * len);
        FillPattern(s.data(), s.size(), 9, 0, 1);
        auto sbuf = SendBuffer(ctx, 1, 81, s.data(), s.size());
        sbuf->send(0, len, 0);
        sbuf->send(len, len, len);
        env.Signal("destroying");
        Caught c = CatchFrom([&] { sbuf.reset(); });
        RANK_CHECK(!c.threw, "destroying the send buffer threw ", c.description);
        RANK_CHECK(c.elapsed < Scaled(timeout * 3 / 2), "destroying the send buffer took ",
                   c.elapsed.count(), " ms, longer than the timeout plus half");
        std::fill(s.begin(), s.end(), 0x5a);
        env.Signal("overwritten");
        RANK_CHECK(env.Await("done", patience), "rank 1 never finished");
        Expect("an allreduce after the destruction", [&] { Allreduce(ctx, 5); });
        return;
    }
    RANK_CHECK(env.Await("destroying", patience), "rank 0 never destroyed its buffer");
    std::this_thread::sleep_for(Ms(300));
    std::vector<uint8_t> r(2 * len, kPoisonByte);
    auto rbuf = RecvBuffer(ctx, 0, 81, r.data(), r.size());
    for (int k = 0; k < 2; k++)
        Expect("waitRecv of a message from the destroyed buffer", [&] { rbuf->waitRecv(); });
    RANK_CHECK(env.Await("overwritten", patience), "rank 0 never overwrote its memory");
    CheckPattern(r.data(), r.size(), 9, 0, 1, "the messages of the destroyed send buffer");
    env.Signal("done");
    Expect("an allreduce after the destruction", [&] { Allreduce(ctx, 5); });
}

/*
 * A receive buffer destroyed while a 4 MiB message is arriving: when the destruction returns,
 * the message is either all in the old buffer or not in it at all, and the old memory is
 * never written afterwards; a message not placed lands in a new buffer on the same slot, in
 * order before a second message.
 */
void DestroyedRecv(RankEnv &env, const Ctx &ctx, Ms timeout)
{
    const size_t len = 4 << 20;
    const Ms patience = Scaled(timeout * 4 + Ms(20000));
    if (ctx->rank == 0) {
        std::vector<uint8_t> s(2 * len);
        FillPattern(s.data(), len, 10, 0, 1);
        FillPattern(&s[len], len, 11, 0, 1);
        auto sbuf = SendBuffer(ctx, 1, 91, s.data(), s.size());
        RANK_CHECK(env.Await("created", patience), "rank 1 never created its buffer");
        sbuf->send(0, len, 0);
        env.Signal("posted");
        RANK_CHECK(env.Await("recreated", patience), "rank 1 never created its second buffer");
        sbuf->send(len, len, len);
        for (int k = 0; k < 2; k++)
            Expect("waitSend", [&] { sbuf->waitSend(); });
        RANK_CHECK(env.Await("done", patience), "rank 1 never finished");
        return;
    }
    std::vector<uint8_t> old(len, kPoisonByte), fresh(2 * len, kPoisonByte);
    auto rbuf = RecvBuffer(ctx, 0, 91, old.data(), old.size());
    env.Signal("created");
    RANK_CHECK(env.Await("posted", patience), "rank 0 never sent");
    Caught c = CatchFrom([&] { rbuf.reset(); });
    RANK_CHECK(!c.threw, "destroying the receive buffer threw ", c.description);
    RANK_CHECK(c.elapsed < Scaled(timeout * 3 / 2), "destroying the receive buffer took ",
               c.elapsed.count(), " ms, longer than the timeout plus half");
    /* all or nothing of the first message */
    const bool placed = old[0] != kPoisonByte;
    if (placed)
        CheckPattern(old.data(), len, 10, 0, 1, "the first message, placed before destruction");
    else
        CheckUntouched(old.data(), len, "the destroyed buffer, the first message not placed");
    std::fill(old.begin(), old.end(), 0x5a);
    rbuf = RecvBuffer(ctx, 0, 91, fresh.data(), fresh.size());
    env.Signal("recreated");
    /* the first message too, if it was not placed before: in posting order */
    for (int k = placed ? 1 : 0; k < 2; k++) {
        Expect("waitRecv in the new buffer", [&] { rbuf->waitRecv(); });
        if (k == 0)
            CheckPattern(fresh.data(), len, 10, 0, 1, "the first message, in the new buffer");
        else
            CheckPattern(&fresh[len], len, 11, 0, 1, "the second message, in the new buffer");
    }
    if (placed)
        CheckUntouched(fresh.data(), len, "the new buffer where the first message would go");
    for (size_t j = 0; j < len; j++)
        RANK_CHECK(old[j] == 0x5a, "byte ", j,
                   " of the destroyed buffer was written after its destruction returned");
    env.Signal("done");
}

/*
 * A message that does not fit the receiver's buffer (roffset + length beyond its end): the
 * receiver's waitRecv throws well before the timeout, naming the sender and the slot; the
 * buffer's neighbours in memory are untouched; the sender, waiting for an answer, throws too.
 */
void Overflow(RankEnv &env, const Ctx &ctx, Ms timeout)
{
    const Ms patience = Scaled(timeout * 4 + Ms(20000));
    if (ctx->rank == 0) {
        std::vector<uint8_t> s(100), r(16);
        auto sbuf = SendBuffer(ctx, 1, 101, s.data(), s.size());
        auto rbuf = RecvBuffer(ctx, 1, 102, r.data(), r.size());
        sbuf->send(0, 100, 950); /* into a 1000-byte buffer */
        /* an answer that never comes: rank 1's failure ends the wait */
        Caught c = CatchFrom([&] { rbuf->waitRecv(); });
        const std::string op = "waitRecv after sending rank 1 a message too long for its buffer";
        CheckGlooFailure(c, op, 1);
        RANK_CHECK(c.elapsed < timeout / 2, op, " ended after ", c.elapsed.count(),
                   " ms, not well before the timeout (", timeout.count(), " ms)");
        env.Signal("done");
        return;
    }
    std::vector<uint8_t> mem(3000, kPoisonByte);
    auto rbuf = RecvBuffer(ctx, 0, 101, &mem[1000], 1000);
    Caught c = CatchFrom([&] { rbuf->waitRecv(); });
    const std::string op = "waitRecv of 100 bytes at offset 950 of a 1000-byte buffer";
    CheckGlooFailure(c, op, 0);
    CheckNamesSlot(c, 101, op);
    RANK_CHECK(c.elapsed < timeout / 2, op, " ended after ", c.elapsed.count(),
               " ms, not well before the timeout (", timeout.count(), " ms)");
    CheckUntouched(mem.data(), 1000, "the memory before the buffer");
    CheckUntouched(&mem[2000], 1000, "the memory after the buffer");
    CheckFailsPromptly([&] { Allreduce(ctx, 6); }, "an allreduce after the overflow", 1, timeout);
    RANK_CHECK(env.Await("done", patience), "rank 0 never finished");
}

/* params: case=<placement|counting|early|threads|local|timeout|killed|destroyed_send|
 *               destroyed_recv|overflow> [dev=glucx|tcp] [timeout_ms=] [rounds=] */
GLUCX_RANK_BODY(bound)
{
    const std::string c = env.params.Get("case");
    const bool failure = c == "timeout" || c == "killed" || c == "destroyed_send" ||
                         c == "destroyed_recv" || c == "overflow";
    /* the failure cases measure against the timeout they set: it is not scaled */
    const Ms ctx_timeout =
        failure ? Ms(env.params.GetInt("timeout_ms", 3000)) : Timeout(env, 30000);
    auto dev = env.params.Get("dev", "glucx") == "tcp" ? env.TcpDevice() : env.Device();
    auto ctx = env.Connect(ctx_timeout, dev);
    if (c == "placement")
        Placement(env, ctx);
    else if (c == "counting")
        Counting(env, ctx);
    else if (c == "early")
        Early(env, ctx);
    else if (c == "threads")
        Threads(env, ctx);
    else if (c == "local")
        LocalErrors(env, ctx);
    else if (c == "timeout")
        TimeoutCase(env, ctx, ctx_timeout);
    else if (c == "killed")
        Killed(env, ctx, ctx_timeout);
    else if (c == "destroyed_send")
        DestroyedSend(env, ctx, ctx_timeout);
    else if (c == "destroyed_recv")
        DestroyedRecv(env, ctx, ctx_timeout);
    else if (c == "overflow")
        Overflow(env, ctx, ctx_timeout);
    else
        RANK_CHECK(false, "unknown case ", c);
}

// ---- GoogleTest cases -----------------------------------------------------------------------

struct BoundCase {
    std::string name;
    int size;
    Mode mode;
    std::string dev;
};

void PrintTo(const BoundCase &c, std::ostream *os)
{
    *os << c.name << " n=" << c.size << " " << (c.mode == Mode::kThreads ? "threads" : "processes")
        << " " << c.dev;
}

std::string BoundName(const ::testing::TestParamInfo<BoundCase> &info)
{
    return Str(info.param.name, "_n", info.param.size, "_",
               info.param.mode == Mode::kThreads ? "threads" : "processes", "_", info.param.dev);
}

void RunBound(const BoundCase &c, std::vector<int> killed = {})
{
    Job job;
    job.body = "bound";
    job.size = c.size;
    job.mode = c.mode;
    job.params = Str("case=", c.name, " dev=", c.dev);
    job.deadline = Ms(60000);
    job.killed = std::move(killed);
    ExpectJobOk(job);
}

class BoundBuffer : public ::testing::TestWithParam<BoundCase>
{
};

TEST_P(BoundBuffer, Conforms)
{
    RunBound(GetParam());
}

std::vector<BoundCase> SemanticsCases()
{
    std::vector<BoundCase> cases;
    for (const char *dev : {"glucx", "tcp"}) {
        cases.push_back({"placement", 2, Mode::kProcesses, dev});
        cases.push_back({"placement", 3, Mode::kThreads, dev});
        cases.push_back({"counting", 2, Mode::kProcesses, dev});
        cases.push_back({"early", 2, Mode::kThreads, dev});
        cases.push_back({"threads", 3, Mode::kProcesses, dev});
        cases.push_back({"local", 2, Mode::kThreads, dev});
    }
    cases.push_back({"placement", 2, Mode::kThreads, "glucx"});
    cases.push_back({"early", 2, Mode::kProcesses, "glucx"});
    cases.push_back({"threads", 2, Mode::kThreads, "glucx"});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(, BoundBuffer, ::testing::ValuesIn(SemanticsCases()), BoundName);

class BoundBufferFailure : public ::testing::TestWithParam<BoundCase>
{
};

TEST_P(BoundBufferFailure, Throws)
{
    const BoundCase &c = GetParam();
    RunBound(c, c.name == "killed" ? std::vector<int>{c.size - 1} : std::vector<int>{});
}

/* killed_n2_processes_glucx with rank 0's puts to the victim in flight (`puts`: Killed's
 * put_bytes and puts parameters). */
void RunKilledWithPuts(const std::string &puts)
{
    Job job;
    job.body = "bound";
    job.size = 2;
    job.mode = Mode::kProcesses;
    job.params = Str("case=killed dev=glucx ", puts);
    job.deadline = Ms(60000);
    job.killed = {1};
    ExpectJobOk(job);
}

/* A 4 MiB put in flight (posted while the victim is not in glucx): the survivor's teardown must
 * neither abort in UCX nor touch the freed put afterwards (UCX 1.13 aborted it in
 * ucp_worker_destroy, assertion "req->flags & UCP_REQUEST_FLAG_RELEASED", when the victim's
 * endpoint could not be flushed). */
TEST(BoundBufferFailureRendezvous, KilledPeerWithAPutInFlight)
{
    RunKilledWithPuts("put_bytes=4194304");
}

/* The same with 512 puts of 1 KiB, more than the shared-memory FIFO to the victim holds: the
 * later ones wait in UCX's queue behind it when the victim dies, and its endpoint can no longer
 * be flushed (this aborted the survivor in ucp_worker_destroy, as above). */
TEST(BoundBufferFailureRendezvous, KilledPeerWithPutsQueued)
{
    RunKilledWithPuts("put_bytes=1024 puts=512");
}

INSTANTIATE_TEST_SUITE_P(
    , BoundBufferFailure,
    ::testing::Values(BoundCase{"timeout", 2, Mode::kProcesses, "glucx"},
                      BoundCase{"timeout", 3, Mode::kThreads, "glucx"},
                      BoundCase{"killed", 2, Mode::kProcesses, "glucx"},
                      BoundCase{"killed", 3, Mode::kProcesses, "glucx"},
                      BoundCase{"destroyed_send", 2, Mode::kProcesses, "glucx"},
                      BoundCase{"destroyed_send", 2, Mode::kThreads, "glucx"},
                      BoundCase{"destroyed_recv", 2, Mode::kProcesses, "glucx"},
                      BoundCase{"destroyed_recv", 2, Mode::kThreads, "glucx"},
                      BoundCase{"overflow", 2, Mode::kProcesses, "glucx"},
                      BoundCase{"overflow", 2, Mode::kThreads, "glucx"}),
    BoundName);

} // namespace
} // namespace glucx_test
