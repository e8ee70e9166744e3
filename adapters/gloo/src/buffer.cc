/*
 * Bound buffers (shim.h, class Buffer): a receive buffer is a glucx window for (peer, slot), a
 * send buffer posts glucx puts into the peer's window and counts their completions. glucx
 * holds puts that arrive before their window exists and places them when it opens, so Gloo's
 * algorithms may send before the peer created its receive buffer.
 */
#include "shim.h"

#include <cstring>
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

/* Staging copies a send buffer keeps for reuse. */
constexpr size_t kSpareStages = 4;

/* The context's timeout as a deadline, or none (glucx's communicator timeout then applies:
 * Gloo's contexts always set one, so this is only a fallback). */
Clock::time_point DeadlineAfter(std::chrono::milliseconds timeout)
{
    return timeout.count() > 0 ? Clock::now() + timeout : Clock::time_point::max();
}

int64_t MsLeft(Clock::time_point deadline)
{
    if (deadline == Clock::time_point::max())
        return -1; /* the communicator's timeout */
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() > 0 ? left.count() : 0;
}

} // namespace

Buffer::Buffer(std::shared_ptr<Context> context, int peer, int slot, void *ptr, size_t size,
               bool isRecv)
    : ::gloo::transport::Buffer(slot, ptr, size), context_(std::move(context)), peer_(peer),
      isRecv_(isRecv)
{
    if (!isRecv_)
        return;
    glucx_comm_t *comm = context_->comm();
    glucx_status_t st = glucx_window_create(comm, peer_, BoundSlot(slot_), ptr_, size_, &window_);
    if (st == GLUCX_ERR_INVALID_ARG) /* e.g. a second receive buffer for (peer, slot) */
        GLOO_ENFORCE(false, "glucx: createRecvBuffer: ", describe(), ": ", lastError());
    if (st != GLUCX_OK)
        context_->fail("glucx: createRecvBuffer: " + describe() + ": " + lastError());
}

Buffer::~Buffer()
{
    if (isRecv_) {
        /* waits for a message being placed (bounded by the communicator's timeout) */
        glucx_window_destroy(window_);
        return;
    }
    /* Puts in flight still read their copies: wait for them, all within one timeout; past it
     * the communicator fails, which completes them (glucx touches their memory no more). */
    std::vector<Put> puts;
    {
        std::lock_guard<std::mutex> g(m_);
        puts.swap(pending_);
    }
    const auto deadline = DeadlineAfter(context_->timeout());
    while (!puts.empty()) {
        for (size_t i = 0; i < puts.size();) {
            if (glucx_request_test(puts[i].req) == GLUCX_INPROGRESS) {
                i++;
                continue;
            }
            glucx_request_free(puts[i].req);
            puts.erase(puts.begin() + static_cast<std::ptrdiff_t>(i));
        }
        if (puts.empty())
            break;
        std::vector<glucx_request_t *> reqs;
        for (const Put &p : puts)
            reqs.push_back(p.req);
        size_t index = 0;
        glucx_status_t st =
            glucx_request_wait_any(reqs.data(), reqs.size(), MsLeft(deadline), nullptr, &index);
        if (st == GLUCX_OK || st == GLUCX_INPROGRESS)
            continue;
        /* Timed out (glucx failed the communicator) or failed: every request is complete. */
        std::ostringstream s;
        s << "glucx: " << describe() << " destroyed with " << puts.size()
          << " put(s) not complete, e.g. " << describe(puts.front()) << ": " << lastError();
        context_->recordFailure(s.str());
        for (const Put &p : puts)
            glucx_request_free(p.req);
        break;
    }
}

std::string Buffer::describe() const
{
    std::ostringstream s;
    s << "the bound " << (isRecv_ ? "receive" : "send") << " buffer (slot " << slot_ << ", "
      << size_ << " bytes) " << (isRecv_ ? "from" : "to") << " rank " << peer_ << " (rank "
      << context_->rank << " of " << context_->size << ")";
    return s.str();
}

std::string Buffer::describe(const Put &put) const
{
    std::ostringstream s;
    s << "the put of " << put.length << " bytes from offset " << put.offset << " of " << describe()
      << " to offset " << put.roffset << " of rank " << peer_ << "'s buffer";
    return s.str();
}

void Buffer::send(size_t offset, size_t length, size_t roffset)
{
    glucx_comm_t *comm = context_->comm();
    GLOO_ENFORCE(offset <= size_ && length <= size_ - offset, "glucx: send of ", length,
                 " bytes at offset ", offset, " from ", describe(), ": beyond its end");
    GLOO_ENFORCE(roffset <= SIZE_MAX - length, "glucx: send of ", length, " bytes from ",
                 describe(), " to offset ", roffset, ": the end overflows");
    Put put{nullptr, offset, length, roffset, {}};
    std::unique_lock<std::mutex> lk(m_);
    for (size_t i = 0; i < spare_.size(); i++)
        if (spare_[i].capacity() >= length) {
            put.staged.swap(spare_[i]);
            spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(i));
            break;
        }
    lk.unlock();
    put.staged.resize(length);
    if (length > 0)
        std::memcpy(put.staged.data(), static_cast<const char *>(ptr_) + offset, length);
    if (glucx_iput(comm, put.staged.data(), length, peer_, BoundSlot(slot_), roffset, 0,
                   &put.req) != GLUCX_OK)
        context_->fail("glucx: " + describe(put) + ": " + lastError());
    lk.lock();
    pending_.push_back(std::move(put));
    /* most puts are complete by the next one: keep the list short even if nobody waits (Gloo's
     * algorithms leave many sends unwaited); not while a waitSend waits on them in glucx */
    if (!driving_)
        harvestLocked();
    cv_.notify_all();
}

void Buffer::harvestLocked()
{
    for (size_t i = 0; i < pending_.size();) {
        glucx_status_t st = glucx_request_test(pending_[i].req);
        if (st == GLUCX_INPROGRESS) {
            i++;
            continue;
        }
        std::string text = st != GLUCX_OK ? lastError() : std::string();
        Put done = std::move(pending_[i]);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        glucx_request_free(done.req);
        if (st != GLUCX_OK)
            context_->fail("glucx: " + describe(done) + " failed: " + text);
        sendsDone_++;
        /* a few copies are kept for the next sends (Gloo's algorithms send alike repeatedly) */
        if (spare_.size() < kSpareStages)
            spare_.push_back(std::move(done.staged));
    }
}

void Buffer::waitSend()
{
    const auto timeout = context_->timeout();
    const auto deadline = DeadlineAfter(timeout);
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
        context_->throwIfFailed();
        /* requests another thread waits on in glucx are freed only once it returned */
        if (!driving_)
            harvestLocked();
        if (sendsDone_ > 0) {
            sendsDone_--;
            return;
        }
        GLOO_ENFORCE(!pending_.empty(), "glucx: waitSend on ", describe(),
                     ": no send to wait for (each waitSend consumes one completed send)");
        const int64_t left = MsLeft(deadline);
        if (left == 0) {
            std::ostringstream s;
            s << "glucx: Timed out waiting " << timeout.count() << "ms in waitSend on "
              << describe() << ": " << pending_.size() << " put(s) not complete, e.g. "
              << describe(pending_.front());
            context_->fail(s.str());
        }
        if (driving_) {
            /* another thread waits in glucx for these puts: sleep until it harvests */
            cv_.wait_until(lk, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
            continue;
        }
        std::vector<glucx_request_t *> reqs;
        for (const Put &p : pending_)
            reqs.push_back(p.req);
        driving_ = true;
        lk.unlock();
        size_t index = 0;
        /* +1 ms: glucx's own timeout must not beat ours, whose message is more specific */
        glucx_status_t st = glucx_request_wait_any(reqs.data(), reqs.size(),
                                                   left < 0 ? -1 : left + 1, nullptr, &index);
        std::string text = st == GLUCX_ERR_TIMEOUT ? lastError() : std::string();
        lk.lock();
        driving_ = false;
        cv_.notify_all();
        if (st == GLUCX_ERR_TIMEOUT)
            context_->fail("glucx: waitSend on " + describe() + ": " + text);
    }
}

void Buffer::waitRecv()
{
    GLOO_ENFORCE(isRecv_, "glucx: waitRecv on ", describe(),
                 ": only a receive buffer (Pair::createRecvBuffer) receives");
    context_->throwIfFailed();
    const auto timeout = context_->timeout();
    const auto deadline = DeadlineAfter(timeout);
    for (;;) {
        const int64_t left = MsLeft(deadline);
        if (left == 0) {
            std::ostringstream s;
            s << "glucx: Timed out waiting " << timeout.count() << "ms in waitRecv on "
              << describe();
            context_->fail(s.str());
        }
        /* glucx_comm_wake() (an unbound buffer's abortWait* on this context) returns
         * GLUCX_INPROGRESS: wait again for what is left */
        glucx_status_t st = glucx_window_wait(window_, left, nullptr, nullptr, nullptr);
        if (st == GLUCX_OK)
            return;
        if (st != GLUCX_INPROGRESS)
            context_->fail("glucx: waitRecv on " + describe() + ": " + lastError());
    }
}

} // namespace gloo
} // namespace glucx
