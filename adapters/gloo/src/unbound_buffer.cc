/*
 * Unbound buffers: each send/recv is one glucx point-to-point operation on a window of the
 * buffer; completions are counted in the order this buffer observes them, and each
 * waitSend/waitRecv consumes one and reports the peer. One waiting thread at a time blocks in
 * glucx_request_wait_any() on the buffer's operations; abortWait* wakes it through
 * glucx_comm_wake() without cancelling anything.
 */
#include "shim.h"

#include <algorithm>
#include <sstream>

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

namespace glucx
{
namespace gloo
{

namespace
{

using Clock = std::chrono::steady_clock;

} // namespace

UnboundBuffer::UnboundBuffer(std::shared_ptr<Context> context, void *ptr, size_t size)
    : ::gloo::transport::UnboundBuffer(ptr, size), context_(std::move(context))
{
}

UnboundBuffer::~UnboundBuffer()
{
    /* Receives that have not matched are cancelled; sends and matched receives are waited for
     * by glucx_request_free (bounded by the communicator's timeout, after which glucx fails
     * the communicator rather than let UCX touch freed memory). */
    std::vector<Op> ops;
    {
        std::lock_guard<std::mutex> g(m_);
        ops.swap(pending_);
    }
    for (auto &op : ops)
        if (op.isRecv)
            glucx_request_cancel(op.req);
    for (auto &op : ops)
        glucx_request_free(op.req);
}

std::string UnboundBuffer::describe(const Op &op) const
{
    std::ostringstream s;
    s << (op.isRecv ? "recv of " : "send of ") << op.nbytes << " bytes "
      << (op.isRecv ? "from " : "to ");
    if (op.peer >= 0)
        s << "rank " << op.peer;
    else
        s << "any of a set of ranks";
    s << " (slot 0x" << std::hex << op.slot << std::dec << ", rank " << context_->rank << " of "
      << context_->size << ")";
    return s.str();
}

char *UnboundBuffer::at(size_t offset, size_t nbytes) const
{
    return nbytes == 0 ? static_cast<char *>(ptr) : static_cast<char *>(ptr) + offset;
}

size_t UnboundBuffer::checkRange(const char *op, size_t offset, size_t nbytes) const
{
    if (nbytes == kUnspecifiedByteCount) {
        GLOO_ENFORCE(offset <= size, "glucx: ", op, ": offset ", offset, " beyond the buffer's ",
                     size, " bytes");
        return size - offset;
    }
    /* Gloo's algorithms post empty segments at offsets past the end (e.g. a ring allreduce of
     * fewer elements than ranks): nothing is read or written, so any offset is fine. */
    if (nbytes == 0)
        return 0;
    GLOO_ENFORCE(offset <= size && nbytes <= size - offset, "glucx: ", op, ": ", nbytes,
                 " bytes at offset ", offset, " exceed the buffer's ", size, " bytes");
    return nbytes;
}

void UnboundBuffer::post(Op op)
{
    std::lock_guard<std::mutex> g(m_);
    pending_.push_back(op);
    cv_.notify_all();
}

void UnboundBuffer::send(int dstRank, uint64_t slot, size_t offset, size_t nbytes)
{
    glucx_comm_t *comm = context_->comm();
    GLOO_ENFORCE(dstRank >= 0 && dstRank < context_->size, "glucx: send: destination rank ",
                 dstRank, " out of range [0, ", context_->size, ")");
    nbytes = checkRange("send", offset, nbytes);
    Op op{nullptr, false, dstRank, nbytes, slot};
    uint64_t tag = SlotToTag(slot);
    /* Synchronous by default: completes once dstRank's receive matched it, as Gloo's TCP
     * transport completes a send only after the peer announced the matching receive. */
    if (glucx_isend_flags(comm, at(offset, nbytes), nbytes, dstRank, tag, context_->sendFlags(),
                          &op.req) != GLUCX_OK)
        context_->fail("glucx: " + describe(op) + ": " + lastError());
    post(op);
}

void UnboundBuffer::recv(int srcRank, uint64_t slot, size_t offset, size_t nbytes)
{
    glucx_comm_t *comm = context_->comm();
    GLOO_ENFORCE(srcRank >= 0 && srcRank < context_->size, "glucx: recv: source rank ", srcRank,
                 " out of range [0, ", context_->size, ")");
    nbytes = checkRange("recv", offset, nbytes);
    Op op{nullptr, true, srcRank, nbytes, slot};
    uint64_t tag = SlotToTag(slot);
    if (glucx_irecv(comm, at(offset, nbytes), nbytes, srcRank, tag, &op.req) != GLUCX_OK)
        context_->fail("glucx: " + describe(op) + ": " + lastError());
    post(op);
}

void UnboundBuffer::recv(std::vector<int> srcRanks, uint64_t slot, size_t offset, size_t nbytes)
{
    glucx_comm_t *comm = context_->comm();
    GLOO_ENFORCE(!srcRanks.empty(), "glucx: recv from any: empty rank list");
    for (int r : srcRanks)
        GLOO_ENFORCE(r >= 0 && r < context_->size, "glucx: recv from any: rank ", r,
                     " out of range [0, ", context_->size, ")");
    nbytes = checkRange("recv", offset, nbytes);
    Op op{nullptr, true, srcRanks.size() == 1 ? srcRanks[0] : -1, nbytes, slot};
    uint64_t tag = SlotToTag(slot);
    /* Duplicates and this rank are allowed (PyTorch passes every rank); glucx dedupes. */
    if (glucx_irecv_any(comm, at(offset, nbytes), nbytes, srcRanks.data(),
                        static_cast<int>(srcRanks.size()), tag, &op.req) != GLUCX_OK)
        context_->fail("glucx: " + describe(op) + ": " + lastError());
    post(op);
}

void UnboundBuffer::harvestLocked(bool isRecv)
{
    for (size_t i = 0; i < pending_.size();) {
        Op &op = pending_[i];
        if (op.isRecv != isRecv) {
            i++;
            continue;
        }
        glucx_status_t st = glucx_request_test(op.req);
        if (st == GLUCX_INPROGRESS) {
            i++;
            continue;
        }
        int peer = -1;
        size_t got = 0;
        glucx_request_info(op.req, &peer, &got);
        std::string text = st != GLUCX_OK ? lastError() : std::string();
        Op done = op;
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        glucx_request_free(done.req);
        if (st == GLUCX_ERR_TRUNCATED)
            context_->fail("glucx: " + describe(done) + ": rank " + std::to_string(peer) +
                           " sent " + std::to_string(got) +
                           " bytes, more than the receiver posted (the ranks disagree on the "
                           "message length)");
        if (st != GLUCX_OK)
            context_->fail("glucx: " + describe(done) + " failed: " + text);
        /* Gloo's collectives (slots built by gloo::Slot, mapped at or above 2^47) always know
         * the exact length of what they receive: a shorter message means the ranks disagree on
         * the collective's sizes, and accepting it would leave part of the output stale.
         * Point-to-point receives (raw user tags) may be longer than the message, as in Gloo. */
        if (done.isRecv && got != done.nbytes && done.slot >= (std::uint64_t(1) << 47))
            context_->fail("glucx: " + describe(done) + ": rank " + std::to_string(peer) +
                           " sent " + std::to_string(got) + " bytes where " +
                           std::to_string(done.nbytes) +
                           " were expected (the ranks disagree on the collective's sizes)");
        (done.isRecv ? recvDone_ : sendDone_).push_back(peer);
    }
}

std::string UnboundBuffer::timedOut(bool isRecv, std::chrono::milliseconds timeout) const
{
    /* Gloo's own sentence first (code and people match on "Timed out waiting <T>ms for recv
     * operation to complete"), then which operations were pending */
    std::ostringstream s;
    s << "glucx: Timed out waiting " << timeout.count() << "ms for " << (isRecv ? "recv" : "send")
      << " operation to complete on rank " << context_->rank;
    int shown = 0;
    for (const auto &op : pending_)
        if (op.isRecv == isRecv && shown++ < 4)
            s << (shown == 1 ? "; pending: " : ", ") << describe(op);
    if (shown == 0)
        s << " (none was posted)";
    return s.str();
}

bool UnboundBuffer::waitRecv(int *rank, std::chrono::milliseconds timeout)
{
    return wait(true, rank, timeout);
}

bool UnboundBuffer::waitSend(int *rank, std::chrono::milliseconds timeout)
{
    return wait(false, rank, timeout);
}

bool UnboundBuffer::wait(bool isRecv, int *rank, std::chrono::milliseconds timeout)
{
    if (timeout == ::gloo::transport::kUnsetTimeout)
        timeout = context_->timeout();
    const auto deadline = Clock::now() + timeout;
    std::deque<int> &done = isRecv ? recvDone_ : sendDone_;
    bool &aborted = isRecv ? abortRecv_ : abortSend_;
    bool &driving = isRecv ? drivingRecv_ : drivingSend_;
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
        context_->throwIfFailed();
        harvestLocked(isRecv);
        if (!done.empty()) {
            if (rank != nullptr)
                *rank = done.front();
            done.pop_front();
            return true;
        }
        /* Read before the abort flag: an abort after this read wakes the wait below. */
        unsigned wakes = wakeCount();
        if (aborted) {
            aborted = false;
            return false;
        }
        auto now = Clock::now();
        if (now >= deadline)
            context_->fail(timedOut(isRecv, timeout));
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        std::vector<glucx_request_t *> reqs;
        for (const auto &op : pending_)
            if (op.isRecv == isRecv)
                reqs.push_back(op.req);
        if (driving || reqs.empty()) {
            /* Another thread waits in glucx for this buffer, or nothing is posted yet: sleep
             * until it harvests, an operation is posted, an abort, or the deadline. */
            cv_.wait_until(lk, std::min(deadline, now + std::chrono::milliseconds(100)));
            continue;
        }
        driving = true;
        lk.unlock();
        size_t index = 0;
        /* +1 ms: rounding. glucx's timeout (which fails the communicator and tells the peers in
         * its own words) comes at our deadline; the exception says what Gloo says. */
        glucx_status_t st = glucx_request_wait_any(
            reqs.data(), reqs.size(), static_cast<int64_t>(left.count()) + 1, &wakes, &index);
        lk.lock();
        driving = false;
        cv_.notify_all();
        if (st == GLUCX_ERR_TIMEOUT)
            context_->fail(timedOut(isRecv, timeout));
    }
}

unsigned UnboundBuffer::wakeCount()
{
    try {
        return glucx_comm_wake_count(context_->comm());
    } catch (...) {
        return 0; /* not connected or failed: the wait throws before it blocks */
    }
}

void UnboundBuffer::abortWait(bool isRecv)
{
    {
        std::lock_guard<std::mutex> g(m_);
        (isRecv ? abortRecv_ : abortSend_) = true;
        cv_.notify_all();
    }
    glucx_comm_t *c = nullptr;
    try {
        c = context_->comm();
    } catch (...) {
        return; /* not connected or failed: nobody blocks in glucx */
    }
    glucx_comm_wake(c);
}

void UnboundBuffer::abortWaitRecv()
{
    abortWait(true);
}

void UnboundBuffer::abortWaitSend()
{
    abortWait(false);
}

} // namespace gloo
} // namespace glucx
