/*
 * The unbound-buffer point-to-point API over the glucx device: send/recv between all pairs,
 * receive from any of a list of ranks (including PyTorch's list with duplicates and the caller
 * itself) with waitRecv reporting the sender, several outstanding receives on one buffer at
 * different offsets, FIFO order per (peer, slot) with receives posted before and after the
 * sends, zero-byte messages, several threads on one context and two contexts on one device.
 * (The bound-buffer API is tested in test_bound_buffer.cc and test_algorithms.cc.)
 */
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/common/logging.h>
#include <gloo/transport/unbound_buffer.h>

#include "harness.h"
#include "values.h"

namespace glucx_test
{
namespace
{

using ::gloo::transport::UnboundBuffer;

/* A p2p slot far above the collective-free range's small numbers (identity range < 2^47). */
constexpr uint64_t kHighSlot = (uint64_t(1) << 46) + 12345;

/* waitRecv / waitSend once, returning the reported peer. */
int WaitRecvRank(UnboundBuffer &buf, const std::string &what)
{
    int r = -1;
    RANK_CHECK(buf.waitRecv(&r), what, ": waitRecv reported an abort");
    return r;
}

int WaitSendRank(UnboundBuffer &buf, const std::string &what)
{
    int r = -1;
    RANK_CHECK(buf.waitSend(&r), what, ": waitSend reported an abort");
    return r;
}

Ms Timeout(const RankEnv &env)
{
    return Scaled(Ms(env.params.GetInt("timeout_ms", 30000)));
}

// ---- exchange between all pairs -------------------------------------------------------------

/* Every rank sends a distinct message to every other rank; one buffer holds all of a rank's
 * outgoing messages and one all its incoming ones (several operations outstanding on each). */
void Exchange(RankEnv &env, const std::shared_ptr<::gloo::Context> &ctx)
{
    const int rank = ctx->rank, size = ctx->size;
    const size_t sizes[] = {1, 4093, 65536 + 7, 1 << 20};
    int round = 0;
    for (size_t sz : sizes) {
        for (uint64_t slot : {uint64_t(100 + round), kHighSlot + round}) {
            const uint64_t seed = Mix64(slot * 31 + sz);
            std::vector<uint8_t> sdata(sz * size), rdata(sz * size, kPoisonByte);
            for (int d = 0; d < size; d++)
                FillPattern(&sdata[d * sz], sz, seed, rank, d);
            auto sbuf = ctx->createUnboundBuffer(sdata.data(), sdata.size());
            auto rbuf = ctx->createUnboundBuffer(rdata.data(), rdata.size());
            auto post_recvs = [&] {
                for (int s = 0; s < size; s++)
                    if (s != rank)
                        rbuf->recv(s, slot, s * sz, sz);
            };
            if (round % 2 == 0)
                post_recvs(); /* receives before sends, then the other way round */
            for (int k = 1; k < size; k++) {
                int d = (rank + k) % size;
                sbuf->send(d, slot, d * sz, sz);
            }
            if (round % 2 == 1)
                post_recvs();
            const std::string what = Str("exchange of ", sz, " bytes on slot ", slot);
            std::multiset<int> sent_to, recv_from, peers;
            for (int r = 0; r < size; r++)
                if (r != rank)
                    peers.insert(r);
            for (int k = 1; k < size; k++) {
                recv_from.insert(WaitRecvRank(*rbuf, what));
                sent_to.insert(WaitSendRank(*sbuf, what));
            }
            RANK_CHECK(recv_from == peers, what, ": waitRecv reported the wrong ranks");
            RANK_CHECK(sent_to == peers, what, ": waitSend reported the wrong ranks");
            for (int s = 0; s < size; s++) {
                if (s == rank)
                    CheckUntouched(&rdata[s * sz], sz, what + ", own block");
                else
                    CheckPattern(&rdata[s * sz], sz, seed, s, rank,
                                 what + Str(", block from rank ", s));
            }
        }
        round++;
    }
    (void)env;
}

// ---- receive from any -----------------------------------------------------------------------

constexpr size_t kAnyMsg = 64;

/* A recv-from-any message: sender rank and sequence number, then pattern bytes. */
void FillAny(uint8_t *p, uint64_t slot, int src, int seq)
{
    p[0] = static_cast<uint8_t>(src);
    p[1] = static_cast<uint8_t>(seq);
    FillPattern(p + 2, kAnyMsg - 2, slot * 7 + seq, src, 0);
}

/* Check a received recv-from-any message; returns {sender, seq}. */
std::pair<int, int> CheckAny(const uint8_t *p, uint64_t slot, int size, const std::string &what)
{
    const int src = p[0], seq = p[1];
    RANK_CHECK(src < size, what, ": no message (byte 0 = ", src, ")");
    CheckPattern(p + 2, kAnyMsg - 2, slot * 7 + seq, src, 0, what);
    return {src, seq};
}

/* PyTorch's any-source list: size zeros followed by 0..size-1 (duplicates, the caller too). */
std::vector<int> TorchAnyList(int size)
{
    std::vector<int> ranks(size, 0);
    for (int r = 0; r < size; r++)
        ranks.push_back(r);
    return ranks;
}

void RecvAny(RankEnv &env, const std::shared_ptr<::gloo::Context> &ctx)
{
    const int rank = ctx->rank, size = ctx->size;
    const int receiver = size - 1, senders = size - 1;
    const Ms limit = Timeout(env);
    const uint64_t slotA = 300, slotB = 301, slotC = 302, slotD = 303;

    if (rank != receiver) {
        /* A and B: two messages each; C: one, announced out of band; D: one (size >= 3). */
        std::vector<uint8_t> msgs(6 * kAnyMsg);
        FillAny(&msgs[0 * kAnyMsg], slotA, rank, 0);
        FillAny(&msgs[1 * kAnyMsg], slotA, rank, 1);
        FillAny(&msgs[2 * kAnyMsg], slotB, rank, 0);
        FillAny(&msgs[3 * kAnyMsg], slotB, rank, 1);
        FillAny(&msgs[4 * kAnyMsg], slotC, rank, 0);
        FillAny(&msgs[5 * kAnyMsg], slotD, rank, 0);
        auto buf = ctx->createUnboundBuffer(msgs.data(), msgs.size());
        int posted = 0;
        for (int k = 0; k < 4; k++, posted++)
            buf->send(receiver, k < 2 ? slotA : slotB, k * kAnyMsg, kAnyMsg);
        buf->send(receiver, slotC, 4 * kAnyMsg, kAnyMsg);
        posted++;
        env.Signal(Str("anyC.", rank));
        if (size >= 3 && rank < 2) {
            buf->send(receiver, slotD, 5 * kAnyMsg, kAnyMsg);
            posted++;
            env.Signal(Str("anyD.", rank));
        }
        for (int k = 0; k < posted; k++)
            RANK_CHECK(WaitSendRank(*buf, "recv-any sender") == receiver,
                       "waitSend reported a rank other than the receiver ", receiver);
        return;
    }

    { /* A: one receive at a time with PyTorch's list while the senders send */
        std::vector<uint8_t> data(kAnyMsg);
        auto buf = ctx->createUnboundBuffer(data.data(), data.size());
        std::map<int, int> next_seq;
        for (int k = 0; k < 2 * senders; k++) {
            std::fill(data.begin(), data.end(), 0xff);
            buf->recv(TorchAnyList(size), slotA);
            const std::string what = Str("recv-any A #", k);
            int reported = WaitRecvRank(*buf, what);
            auto [src, seq] = CheckAny(data.data(), slotA, size, what);
            RANK_CHECK(reported == src, what, ": waitRecv reported rank ", reported,
                       " but the message is from rank ", src);
            RANK_CHECK(src != receiver, what, ": a message from the receiver itself");
            RANK_CHECK(seq == next_seq[src], what, ": from rank ", src, " got message ", seq,
                       " expected ", next_seq[src], " (FIFO per peer and slot)");
            next_seq[src]++;
        }
    }
    { /* B: all receives outstanding on one buffer at different offsets */
        std::vector<uint8_t> data(2 * senders * kAnyMsg, 0xff);
        auto buf = ctx->createUnboundBuffer(data.data(), data.size());
        std::vector<int> others;
        for (int r = 0; r < size; r++)
            if (r != rank)
                others.push_back(r);
        for (int k = 0; k < 2 * senders; k++)
            buf->recv(others, slotB, k * kAnyMsg, kAnyMsg);
        std::multiset<int> reported, found;
        for (int k = 0; k < 2 * senders; k++)
            reported.insert(WaitRecvRank(*buf, "recv-any B"));
        std::map<int, int> next_seq;
        for (int k = 0; k < 2 * senders; k++) {
            const std::string what = Str("recv-any B, receive #", k);
            auto [src, seq] = CheckAny(&data[k * kAnyMsg], slotB, size, what);
            RANK_CHECK(seq == next_seq[src], what, ": from rank ", src, " got message ", seq,
                       " expected ", next_seq[src], " (FIFO per peer and slot)");
            next_seq[src]++;
            found.insert(src);
        }
        RANK_CHECK(reported == found, "recv-any B: the ranks waitRecv reported differ from the "
                                      "senders of the messages");
        for (int s : others)
            RANK_CHECK(found.count(s) == 2, "recv-any B: ", found.count(s), " messages from rank ",
                       s, ", expected 2");
    }
    { /* C: the messages were sent before the receives are posted */
        for (int s = 0; s < receiver; s++)
            RANK_CHECK(env.Await(Str("anyC.", s), limit), "rank ", s, " never sent on slot C");
        std::vector<uint8_t> data(kAnyMsg);
        auto buf = ctx->createUnboundBuffer(data.data(), data.size());
        std::set<int> seen;
        for (int k = 0; k < senders; k++) {
            buf->recv(TorchAnyList(size), slotC);
            const std::string what = Str("recv-any C (sent first) #", k);
            int reported = WaitRecvRank(*buf, what);
            auto [src, seq] = CheckAny(data.data(), slotC, size, what);
            (void)seq;
            RANK_CHECK(reported == src, what, ": waitRecv reported rank ", reported,
                       " but the message is from rank ", src);
            RANK_CHECK(seen.insert(src).second, what, ": second message from rank ", src);
        }
    }
    if (size >= 3) { /* D: a list restricts the senders: ask for rank 1 first, then rank 0 */
        for (int s = 0; s < 2; s++)
            RANK_CHECK(env.Await(Str("anyD.", s), limit), "rank ", s, " never sent on slot D");
        std::vector<uint8_t> data(kAnyMsg);
        auto buf = ctx->createUnboundBuffer(data.data(), data.size());
        for (int want : {1, 0}) {
            buf->recv(std::vector<int>{want, want}, slotD);
            const std::string what = Str("recv from list {", want, ",", want, "}");
            int reported = WaitRecvRank(*buf, what);
            auto [src, seq] = CheckAny(data.data(), slotD, size, what);
            (void)seq;
            RANK_CHECK(src == want && reported == want, what, ": got the message of rank ", src,
                       " (waitRecv reported ", reported, ")");
        }
    }
}

// ---- FIFO per (peer, slot) ------------------------------------------------------------------

constexpr int kFifoMsgs = 21;
constexpr size_t kFifoCap = 262144;

size_t FifoSize(int k)
{
    static const size_t sizes[] = {0, 1, 8, 100, 4096, 65536, 262144};
    return sizes[k % 7];
}

/* Each rank sends kFifoMsgs messages of mixed sizes (zero bytes included) on one slot to its
 * right neighbour; each receive has room for the largest, so only the content shows the order. */
void Fifo(RankEnv &env, const std::shared_ptr<::gloo::Context> &ctx)
{
    const int rank = ctx->rank, size = ctx->size;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    std::vector<size_t> soff(kFifoMsgs + 1, 0);
    for (int k = 0; k < kFifoMsgs; k++)
        soff[k + 1] = soff[k] + FifoSize(k);
    for (int phase = 0; phase < 2; phase++) {
        const uint64_t slot = 500 + phase;
        std::vector<uint8_t> sdata(soff[kFifoMsgs]);
        for (int k = 0; k < kFifoMsgs; k++)
            FillPattern(&sdata[soff[k]], FifoSize(k), slot * 1000 + k, rank, right);
        std::vector<uint8_t> rdata(kFifoMsgs * kFifoCap, kPoisonByte);
        auto sbuf = ctx->createUnboundBuffer(sdata.data(), sdata.size());
        auto rbuf = ctx->createUnboundBuffer(rdata.data(), rdata.size());
        const std::string what =
            Str(phase == 0 ? "FIFO, receives posted first" : "FIFO, sends posted first");
        auto post_recvs = [&] {
            for (int k = 0; k < kFifoMsgs; k++)
                rbuf->recv(left, slot, k * kFifoCap, kFifoCap);
        };
        if (phase == 0) {
            post_recvs();
            env.Signal(Str("fifo", phase, ".posted.", rank));
            RANK_CHECK(env.Await(Str("fifo", phase, ".posted.", right), Timeout(env)), "rank ",
                       right, " never posted its receives");
        }
        for (int k = 0; k < kFifoMsgs; k++)
            sbuf->send(right, slot, soff[k], FifoSize(k));
        if (phase == 1) {
            env.Signal(Str("fifo", phase, ".sent.", rank));
            RANK_CHECK(env.Await(Str("fifo", phase, ".sent.", left), Timeout(env)), "rank ", left,
                       " never sent");
            post_recvs();
        }
        for (int k = 0; k < kFifoMsgs; k++) {
            RANK_CHECK(WaitRecvRank(*rbuf, what) == left, what,
                       ": waitRecv reported a rank "
                       "other than ",
                       left);
            RANK_CHECK(WaitSendRank(*sbuf, what) == right, what,
                       ": waitSend reported a rank "
                       "other than ",
                       right);
        }
        for (int k = 0; k < kFifoMsgs; k++) {
            const uint8_t *p = &rdata[k * kFifoCap];
            CheckPattern(p, FifoSize(k), slot * 1000 + k, left, rank,
                         what + Str(", receive #", k, " (", FifoSize(k), " bytes)"));
            if (FifoSize(k) < kFifoCap)
                RANK_CHECK(p[FifoSize(k)] == kPoisonByte, what, ", receive #", k, ": more than ",
                           FifoSize(k), " bytes written");
        }
    }
}

// ---- zero-byte messages ---------------------------------------------------------------------

void ZeroBytes(RankEnv &, const std::shared_ptr<::gloo::Context> &ctx)
{
    const int rank = ctx->rank, size = ctx->size;
    std::multiset<int> peers;
    for (int r = 0; r < size; r++)
        if (r != rank)
            peers.insert(r);
    { /* an empty buffer (nullptr, 0), as Gloo's barrier uses */
        auto buf = ctx->createUnboundBuffer(nullptr, 0);
        for (int round = 0; round < 3; round++) {
            std::multiset<int> s, r;
            for (int p : peers) {
                buf->recv(p, 700 + round);
                buf->send(p, 700 + round);
            }
            for (size_t k = 0; k < peers.size(); k++) {
                r.insert(WaitRecvRank(*buf, "zero-byte recv on an empty buffer"));
                s.insert(WaitSendRank(*buf, "zero-byte send on an empty buffer"));
            }
            RANK_CHECK(r == peers && s == peers, "zero-byte messages: wrong ranks reported");
        }
    }
    { /* zero bytes at an offset of a non-empty buffer: nothing is written */
        std::vector<uint8_t> data(64, kPoisonByte);
        auto buf = ctx->createUnboundBuffer(data.data(), data.size());
        for (int p : peers) {
            buf->send(p, 710, 8 * p, 0);
            buf->recv(p, 710, 8 * p + 1, 0);
        }
        for (size_t k = 0; k < peers.size(); k++) {
            WaitRecvRank(*buf, "zero-byte recv at an offset");
            WaitSendRank(*buf, "zero-byte send at an offset");
        }
        CheckUntouched(data.data(), data.size(), "buffer of zero-byte receives");
    }
    { /* a zero-byte message between two data messages on one slot keeps its place */
        const int right = (rank + 1) % size, left = (rank + size - 1) % size;
        std::vector<uint8_t> sdata(32), rdata(3 * 32, kPoisonByte);
        FillPattern(sdata.data(), 32, 720, rank, right);
        auto sbuf = ctx->createUnboundBuffer(sdata.data(), sdata.size());
        auto rbuf = ctx->createUnboundBuffer(rdata.data(), rdata.size());
        for (int k = 0; k < 3; k++)
            rbuf->recv(left, 720, k * 32, 32);
        sbuf->send(right, 720, 0, 16);
        sbuf->send(right, 720, 16, 0);
        sbuf->send(right, 720, 16, 16);
        for (int k = 0; k < 3; k++) {
            WaitRecvRank(*rbuf, "data/zero/data");
            WaitSendRank(*sbuf, "data/zero/data");
        }
        std::vector<uint8_t> expect(32);
        FillPattern(expect.data(), 32, 720, left, rank);
        RANK_CHECK(std::memcmp(&rdata[0], &expect[0], 16) == 0, "data/zero/data: message 0");
        CheckUntouched(&rdata[32], 32, "data/zero/data: the zero-byte message's receive");
        RANK_CHECK(std::memcmp(&rdata[64], &expect[16], 16) == 0, "data/zero/data: message 2");
        CheckUntouched(&rdata[80], 16, "data/zero/data: after message 2");
    }
}

// ---- several threads on one context ---------------------------------------------------------

/* Run fns on threads, then fail with the first error any of them hit. */
void RunThreadsAndCheck(const std::vector<std::function<void()>> &fns, const std::string &what)
{
    std::vector<std::string> errors(fns.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < fns.size(); i++)
        threads.emplace_back([&, i] {
            try {
                fns[i]();
            } catch (const std::exception &e) {
                errors[i] = Describe(e);
            }
        });
    for (auto &t : threads)
        t.join();
    for (size_t i = 0; i < fns.size(); i++)
        RANK_CHECK(errors[i].empty(), what, ", thread ", i, ": ", errors[i]);
}

void Concurrent(RankEnv &, const std::shared_ptr<::gloo::Context> &ctx)
{
    const int rank = ctx->rank, size = ctx->size, iters = 10;
    auto allgather = [&] {
        const size_t n = 257;
        for (int it = 0; it < iters; it++) {
            const uint64_t seed = Mix64(77 + it);
            std::vector<int32_t> in = Values<int32_t>(seed, rank, n), out(n * size);
            ::gloo::AllgatherOptions opts(ctx);
            opts.setInput(in.data(), n);
            opts.setOutput(out.data(), n * size);
            opts.setTag(12);
            ::gloo::allgather(opts);
            CheckArray(
                out.data(), n * size, [&](size_t j) { return Value<int32_t>(seed, j / n, j % n); },
                Str("allgather iteration ", it));
        }
    };
    auto p2p = [&] {
        const int right = (rank + 1) % size, left = (rank + size - 1) % size;
        for (int it = 0; it < iters; it++) {
            std::vector<uint8_t> s(4096), r(4096, kPoisonByte);
            FillPattern(s.data(), s.size(), 5000 + it, rank, right);
            auto sbuf = ctx->createUnboundBuffer(s.data(), s.size());
            auto rbuf = ctx->createUnboundBuffer(r.data(), r.size());
            rbuf->recv(left, 5000 + it);
            sbuf->send(right, 5000 + it);
            WaitRecvRank(*rbuf, "p2p thread");
            WaitSendRank(*sbuf, "p2p thread");
            CheckPattern(r.data(), r.size(), 5000 + it, left, rank, Str("p2p iteration ", it));
        }
    };
    RunThreadsAndCheck({[&] { AllreduceLoop(ctx, 11, iters); }, allgather, p2p},
                       "three threads on one context");
}

// ---- two contexts on one device -------------------------------------------------------------

void TwoContexts(RankEnv &env, const std::shared_ptr<::gloo::Context> &a)
{
    auto b = env.Connect(Timeout(env), env.Device());
    const int rank = a->rank, size = a->size;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const uint64_t slot = 9;
    std::vector<uint8_t> sa(1000), sb(1000), ra(1000, kPoisonByte), rb(1000, kPoisonByte);
    FillPattern(sa.data(), sa.size(), 1, rank, right);
    FillPattern(sb.data(), sb.size(), 2, rank, right);
    auto sba = a->createUnboundBuffer(sa.data(), sa.size());
    auto sbb = b->createUnboundBuffer(sb.data(), sb.size());
    auto rba = a->createUnboundBuffer(ra.data(), ra.size());
    auto rbb = b->createUnboundBuffer(rb.data(), rb.size());
    /* same peer, same slot on both contexts: receive on b first, send on a first */
    rbb->recv(left, slot);
    sba->send(right, slot);
    sbb->send(right, slot);
    rba->recv(left, slot);
    for (auto *buf : {rba.get(), rbb.get()})
        WaitRecvRank(*buf, "two contexts");
    for (auto *buf : {sba.get(), sbb.get()})
        WaitSendRank(*buf, "two contexts");
    CheckPattern(ra.data(), ra.size(), 1, left, rank, "context A, same slot as B");
    CheckPattern(rb.data(), rb.size(), 2, left, rank, "context B, same slot as A");
    /* the same collective tag on both contexts at once */
    RunThreadsAndCheck({[&] { AllreduceLoop(a, 3, 5); }, [&] { AllreduceLoop(b, 3, 5); }},
                       "allreduce with one tag on two contexts");
}

// ---- abortWaitRecv / abortWaitSend ----------------------------------------------------------

/* Call abort from another thread while the caller waits (after a pause, so the waiter is most
 * likely blocked; Gloo's abort also holds for a wait that starts later). */
template <typename Wait, typename Abort> bool WaitWhileAborted(Wait wait, Abort abort, Ms *elapsed)
{
    std::thread aborter([&] {
        std::this_thread::sleep_for(Ms(50));
        abort();
    });
    const auto t0 = Clock::now();
    bool r = false;
    try {
        r = wait();
    } catch (...) {
        aborter.join();
        throw;
    }
    *elapsed = Since(t0);
    aborter.join();
    return r;
}

/* An abort wakes the waiter (which returns false) and does not cancel the operation: a later
 * wait completes it. Rank 0 receives, rank 1 sends (4 MiB, which cannot complete unmatched). */
void Abort(RankEnv &env, const std::shared_ptr<::gloo::Context> &ctx)
{
    const Ms timeout = Timeout(env), patience = timeout * 2;
    const int rank = ctx->rank;
    const size_t big = 4 << 20;
    if (rank == 0) {
        std::vector<uint8_t> data(64, kPoisonByte);
        auto rbuf = ctx->createUnboundBuffer(data.data(), data.size());
        rbuf->recv(1, 900);
        Ms elapsed{0};
        bool r = WaitWhileAborted([&] { return rbuf->waitRecv(); }, [&] { rbuf->abortWaitRecv(); },
                                  &elapsed);
        RANK_CHECK(!r, "waitRecv returned true although rank 1 had not sent");
        RANK_CHECK(elapsed < timeout / 2, "abortWaitRecv woke the waiter only after ",
                   elapsed.count(), " ms (timeout ", timeout.count(), " ms)");
        env.Signal("recv_aborted");
        int src = -1;
        RANK_CHECK(rbuf->waitRecv(&src), "waitRecv after the abort reported another abort");
        RANK_CHECK(src == 1, "waitRecv after the abort reported rank ", src);
        CheckPattern(data.data(), data.size(), 900, 1, 0, "receive completed after an abort");

        RANK_CHECK(env.Await("send_aborted", patience), "rank 1 never aborted its send wait");
        std::vector<uint8_t> big_data(big, kPoisonByte);
        auto bbuf = ctx->createUnboundBuffer(big_data.data(), big_data.size());
        bbuf->recv(1, 901);
        RANK_CHECK(bbuf->waitRecv(), "receive of the aborted-wait send");
        CheckPattern(big_data.data(), big, 901, 1, 0, "send whose wait was aborted");
    } else if (rank == 1) {
        std::vector<uint8_t> data(64);
        FillPattern(data.data(), data.size(), 900, 1, 0);
        auto sbuf = ctx->createUnboundBuffer(data.data(), data.size());
        RANK_CHECK(env.Await("recv_aborted", patience), "rank 0 never aborted its wait");
        sbuf->send(0, 900);
        RANK_CHECK(sbuf->waitSend(), "send to rank 0");

        std::vector<uint8_t> big_data(big);
        FillPattern(big_data.data(), big, 901, 1, 0);
        auto bbuf = ctx->createUnboundBuffer(big_data.data(), big_data.size());
        bbuf->send(0, 901);
        Ms elapsed{0};
        bool r = WaitWhileAborted([&] { return bbuf->waitSend(); }, [&] { bbuf->abortWaitSend(); },
                                  &elapsed);
        RANK_CHECK(elapsed < timeout / 2, "abortWaitSend woke the waiter only after ",
                   elapsed.count(), " ms (timeout ", timeout.count(), " ms)");
        env.Signal("send_aborted");
        /* false: aborted, and the send is still pending; true would mean the transport
         * completed a 4 MiB send before the receiver posted (it copied it) */
        if (!r)
            RANK_CHECK(bbuf->waitSend(), "waitSend after the abort reported another abort");
    }
}

// ---- buffers destroyed with operations outstanding ------------------------------------------

/* Rank 1 destroys a buffer with a receive outstanding, then rank 0 sends the matching message:
 * the memory must not be written afterwards (kept and checked, or freed for AddressSanitizer to
 * watch); both ranks then tear down with the operations still outstanding. */
void Destroyed(RankEnv &env, const std::shared_ptr<::gloo::Context> &ctx)
{
    const Ms patience = Timeout(env) * 2;
    const int rank = ctx->rank;
    const size_t sizes[] = {64, 1 << 20};
    std::vector<std::vector<uint8_t>> sdata;
    std::vector<std::unique_ptr<UnboundBuffer>> sbufs;
    int idx = 0;
    for (size_t sz : sizes) {
        for (int freed = 0; freed < 2; freed++, idx++) {
            const uint64_t slot = 800 + idx;
            const std::string what = Str(sz, "-byte receive destroyed while outstanding",
                                         freed ? " (memory freed)" : "");
            if (rank == 1) {
                auto mem = std::make_unique<uint8_t[]>(sz);
                {
                    auto buf = ctx->createUnboundBuffer(mem.get(), sz);
                    buf->recv(0, slot);
                }
                std::fill(mem.get(), mem.get() + sz, kPoisonByte);
                if (freed)
                    mem.reset();
                env.Signal(Str("destroyed.", idx));
                RANK_CHECK(env.Await(Str("sent.", idx), patience), "rank 0 never sent");
                /* a round trip on another slot lets the transport deliver the message */
                int32_t ping = 0;
                auto pbuf = ctx->createUnboundBuffer(&ping, sizeof(ping));
                pbuf->send(0, 850 + idx);
                pbuf->recv(0, 850 + idx);
                pbuf->waitSend();
                pbuf->waitRecv();
                std::this_thread::sleep_for(Ms(20));
                if (!freed)
                    CheckUntouched(mem.get(), sz, what);
            } else if (rank == 0) {
                RANK_CHECK(env.Await(Str("destroyed.", idx), patience), "rank 1 never destroyed "
                                                                        "its buffer");
                sdata.emplace_back(sz);
                FillPattern(sdata.back().data(), sz, slot, 0, 1);
                sbufs.push_back(ctx->createUnboundBuffer(sdata.back().data(), sz));
                sbufs.back()->send(1, slot);
                env.Signal(Str("sent.", idx));
                int32_t ping = 0;
                auto pbuf = ctx->createUnboundBuffer(&ping, sizeof(ping));
                pbuf->recv(1, 850 + idx);
                pbuf->send(1, 850 + idx);
                pbuf->waitRecv();
                pbuf->waitSend();
            }
        }
    }
    /* rank 0 keeps its send buffers (and memory) until rank 1 is done */
    if (rank == 1)
        env.Signal("checked");
    else if (rank == 0)
        RANK_CHECK(env.Await("checked", patience), "rank 1 never finished");
}

// ---- many outstanding operations; many contexts -------------------------------------------------

/* Each rank pre-posts 512 receives of 1 KiB from its left neighbour on one buffer and slot,
 * then the neighbour sends 512 messages: all complete, in order. */
void Many(RankEnv &, const std::shared_ptr<::gloo::Context> &ctx)
{
    const int rank = ctx->rank, size = ctx->size, count = 512;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const size_t msg = 1024;
    std::vector<uint8_t> s(count * msg), r(count * msg, kPoisonByte);
    for (int k = 0; k < count; k++)
        FillPattern(&s[k * msg], msg, 950000 + k, rank, right);
    auto sbuf = ctx->createUnboundBuffer(s.data(), s.size());
    auto rbuf = ctx->createUnboundBuffer(r.data(), r.size());
    for (int k = 0; k < count; k++)
        rbuf->recv(left, 950, k * msg, msg);
    for (int k = 0; k < count; k++)
        sbuf->send(right, 950, k * msg, msg);
    for (int k = 0; k < count; k++) {
        WaitRecvRank(*rbuf, "512 outstanding receives");
        WaitSendRank(*sbuf, "512 outstanding sends");
    }
    for (int k = 0; k < count; k++)
        CheckPattern(&r[k * msg], msg, 950000 + k, left, rank, Str("message #", k, " of ", count));
}

/* Contexts created, used and destroyed one after another on one device (resources are
 * released: AddressSanitizer's leak check runs when process ranks exit). */
void Churn(RankEnv &env, const std::shared_ptr<::gloo::Context> &first)
{
    AllreduceLoop(first, 20, 1);
    for (int i = 0; i < 8; i++) {
        auto ctx = env.Connect(Timeout(env), env.Device());
        AllreduceLoop(ctx, 21 + i, 2);
    }
}

/* params:
 * case=<exchange|recv_any|fifo|zero|concurrent|two_contexts|abort|destroyed|many|churn>
 *         [timeout_ms=] */
GLUCX_RANK_BODY(p2p)
{
    auto ctx = env.Connect(Timeout(env));
    const std::string c = env.params.Get("case");
    if (c == "exchange")
        Exchange(env, ctx);
    else if (c == "recv_any")
        RecvAny(env, ctx);
    else if (c == "fifo")
        Fifo(env, ctx);
    else if (c == "zero")
        ZeroBytes(env, ctx);
    else if (c == "concurrent")
        Concurrent(env, ctx);
    else if (c == "two_contexts")
        TwoContexts(env, ctx);
    else if (c == "many")
        Many(env, ctx);
    else if (c == "churn")
        Churn(env, ctx);
    else if (c == "abort")
        Abort(env, ctx);
    else if (c == "destroyed")
        Destroyed(env, ctx);
    else
        RANK_CHECK(false, "unknown case ", c);
}

// ---- GoogleTest cases -----------------------------------------------------------------------

struct P2pCase {
    std::string name;
    int size;
    std::string params;
};

void PrintTo(const P2pCase &c, std::ostream *os)
{
    *os << c.name << " n=" << c.size << (c.params.empty() ? "" : " ") << c.params;
}

std::string P2pName(const ::testing::TestParamInfo<P2pCase> &info)
{
    return Str(info.param.name, "_n", info.param.size);
}

std::vector<P2pCase> P2pCases()
{
    std::vector<P2pCase> cases;
    for (const char *c :
         {"exchange", "recv_any", "fifo", "zero", "concurrent", "two_contexts", "many", "churn"})
        for (int n = 2; n <= 4; n++)
            if (n < 4 || std::strcmp(c, "concurrent") != 0)
                cases.push_back({c, n, ""});
    return cases;
}

class P2pProcesses : public ::testing::TestWithParam<P2pCase>
{
};
class P2pThreads : public ::testing::TestWithParam<P2pCase>
{
};

void RunP2p(const P2pCase &c, Mode mode)
{
    Job job;
    job.body = "p2p";
    job.size = c.size;
    job.mode = mode;
    job.params = "case=" + c.name + (c.params.empty() ? "" : " " + c.params);
    job.deadline = Ms(60000);
    ExpectJobOk(job);
}

TEST_P(P2pProcesses, Conforms)
{
    RunP2p(GetParam(), Mode::kProcesses);
}

TEST_P(P2pThreads, Conforms)
{
    RunP2p(GetParam(), Mode::kThreads);
}

INSTANTIATE_TEST_SUITE_P(, P2pProcesses, ::testing::ValuesIn(P2pCases()), P2pName);
INSTANTIATE_TEST_SUITE_P(, P2pThreads, ::testing::ValuesIn(P2pCases()), P2pName);

class P2pTwoRanks : public ::testing::TestWithParam<std::tuple<const char *, Mode>>
{
};

TEST_P(P2pTwoRanks, Conforms)
{
    /* "destroyed" leaves a send unmatched: its buffer's destruction may wait out the timeout */
    const std::string name = std::get<0>(GetParam());
    RunP2p({name, 2, name == "destroyed" ? "timeout_ms=3000" : "timeout_ms=10000"},
           std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(, P2pTwoRanks,
                         ::testing::Combine(::testing::Values("abort", "destroyed"),
                                            ::testing::Values(Mode::kProcesses, Mode::kThreads)),
                         [](const ::testing::TestParamInfo<std::tuple<const char *, Mode>> &i) {
                             return Str(std::get<0>(i.param),
                                        std::get<1>(i.param) == Mode::kProcesses ? "_processes"
                                                                                 : "_threads");
                         });

/* The same exchanges with UCX restricted to TCP over loopback (the inter-host path). */
TEST(TcpLoopback, ExchangeN3Processes)
{
    RunP2p({"exchange", 3, "iface=lo env:UCX_TLS=tcp env:UCX_NET_DEVICES=lo"}, Mode::kProcesses);
}

/* The device chosen by host name (what PyTorch passes when no interface is named). */
TEST(HostnameDevice, ExchangeN2Processes)
{
    RunP2p({"exchange", 2, "hostname=localhost"}, Mode::kProcesses);
}

TEST(TcpLoopback, RecvAnyN3Processes)
{
    RunP2p({"recv_any", 3, "iface=lo env:UCX_TLS=tcp env:UCX_NET_DEVICES=lo"}, Mode::kProcesses);
}

} // namespace
} // namespace glucx_test
