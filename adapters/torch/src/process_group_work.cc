// Work objects of the `glucx` backend; see process_group_work.h.
#include "process_group_work.h"

#include <sched.h>

#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

namespace glucx
{
namespace torch
{
namespace
{

using Clock = std::chrono::steady_clock;

// How long wait() polls the completion flag (yielding the core) before it sleeps: the
// collective thread usually finishes a small operation within a few microseconds, and a
// sleeping waiter costs a futex wake-up. GLUCX_SPIN_US, as libglucx's own waits (default 200).
std::chrono::microseconds SpinTime()
{
    static const std::chrono::microseconds spin = [] {
        const char *v = std::getenv("GLUCX_SPIN_US");
        char *end = nullptr;
        long us = v != nullptr ? std::strtol(v, &end, 10) : 200;
        if (v != nullptr && (end == v || *end != '\0' || us < 0))
            us = 200;
        return std::chrono::microseconds(us);
    }();
    return spin;
}

// Grace period after an operation's own timeout before a wait without timeout gives up on
// the completion callback (which libglucx calls when the operation times out).
constexpr std::chrono::milliseconds kGrace{10000};

const c10::TypePtr &TensorListType()
{
    static const c10::TypePtr type = c10::ListType::ofTensors();
    return type;
}

} // namespace

std::string TruncationText(int sender, size_t sent, size_t posted)
{
    return "rank " + std::to_string(sender) + " sent " + std::to_string(sent) +
           " bytes, more than the " + std::to_string(posted) +
           " bytes this receive posted (the ranks disagree on the message length; the process "
           "group is failed on every rank)";
}

std::string ExceptionText(const std::exception &e)
{
    if (const auto *c10_error = dynamic_cast<const c10::Error *>(&e))
        return c10_error->what_without_backtrace();
    return e.what();
}

GlucxWork::GlucxWork(std::weak_ptr<GroupCore> core, int rank, int size, c10d::OpType type,
                     const OpInfo &info, std::chrono::milliseconds op_timeout)
    : c10d::Work(rank, type), core_(std::move(core)), size_(size), info_(info),
      op_timeout_(op_timeout)
{
}

std::string GlucxWork::Describe() const
{
    std::string s = "glucx ";
    s += info_.op;
    s += " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
    if (info_.dtype != GLUCX_DTYPE_COUNT) {
        s += " (";
        s += glucx_dtype_name(info_.dtype);
        s += ", " + std::to_string(info_.elements) + " elements";
        if (info_.root >= 0)
            s += std::string(", ") + info_.root_name + " " + std::to_string(info_.root);
        s += ")";
    }
    return s;
}

size_t GlucxWork::PostedBytes() const
{
    return info_.dtype == GLUCX_DTYPE_COUNT ? 0 : info_.elements * glucx_dtype_size(info_.dtype);
}

bool GlucxWork::isCompleted()
{
    return done_.load(std::memory_order_acquire);
}

bool GlucxWork::isSuccess() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return done_.load(std::memory_order_acquire) && !error_;
}

std::exception_ptr GlucxWork::exception() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
}

std::vector<at::Tensor> GlucxWork::result()
{
    return outputs_;
}

c10::intrusive_ptr<c10::ivalue::Future> GlucxWork::getFuture()
{
    c10::intrusive_ptr<c10::ivalue::Future> fut;
    bool mark = false;
    std::exception_ptr err;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!future_)
            future_ = c10::make_intrusive<c10::ivalue::Future>(TensorListType());
        fut = future_;
        if (done_.load(std::memory_order_acquire) && !future_marked_) {
            future_marked_ = true;
            mark = true;
            err = error_;
        }
    }
    if (mark) {
        if (err)
            fut->setError(err);
        else
            fut->markCompleted(c10::IValue(outputs_));
    }
    return fut;
}

void GlucxWork::abort()
{
    if (auto core = core_.lock())
        core->Abort(Describe() + ": Work.abort() called");
}

void GlucxWork::Complete(glucx_status_t status, const char *text)
{
    std::exception_ptr err;
    if (status == GLUCX_OK && finish_) {
        try {
            // Any thread, any tensor kind (normal or inference tensors, requires_grad leaves):
            // the copies are not part of autograd.
            c10::InferenceMode guard;
            finish_();
        } catch (const std::exception &e) {
            err = std::make_exception_ptr(std::runtime_error(
                Describe() +
                ": writing the result into the output tensors failed: " + ExceptionText(e)));
        }
    } else if (status != GLUCX_OK) {
        err = std::make_exception_ptr(
            std::runtime_error(Describe() + " failed: " + (text != nullptr && text[0] ? text : "") +
                               " [" + glucx_status_string(status) + "]"));
    }
    finish_ = nullptr;
    keep_.clear();
    c10::intrusive_ptr<c10::ivalue::Future> fut;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = err;
        completed_ = true;
        exception_ = err;
        done_.store(true, std::memory_order_release);
        if (future_ && !future_marked_) {
            future_marked_ = true;
            fut = future_;
        }
    }
    cv_.notify_all();
    if (fut) {
        if (err)
            fut->setError(err);
        else
            fut->markCompleted(c10::IValue(outputs_));
    }
}

bool GlucxWork::WaitDone(Clock::time_point deadline)
{
    if (done_.load(std::memory_order_acquire))
        return true;
    // Poll briefly, giving the core away: on a machine with as many busy threads as cores the
    // collective thread may need this one's core to finish.
    const auto spin_end = Clock::now() + SpinTime();
    while (Clock::now() < spin_end) {
        if (done_.load(std::memory_order_acquire))
            return true;
        sched_yield();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_until(lock, deadline, [this] { return done_.load(std::memory_order_acquire); });
}

Clock::time_point GlucxWork::Deadline(std::chrono::milliseconds timeout) const
{
    if (timeout <= kNoTimeout)
        return Clock::now() + op_timeout_ + kGrace;
    return Clock::now() + timeout;
}

bool GlucxWork::Rethrow()
{
    std::exception_ptr err;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        err = error_;
    }
    if (err)
        std::rethrow_exception(err);
    return true;
}

void GlucxWork::TimedOut(std::chrono::milliseconds timeout)
{
    // Gloo's wording ("Timed out waiting 1000ms for ..."), which code and people match on.
    const std::string text =
        Describe() + ": Timed out waiting " +
        std::to_string(timeout <= kNoTimeout ? (op_timeout_ + kGrace).count() : timeout.count()) +
        "ms for the operation to complete (Work.wait); the process group is failed";
    if (auto core = core_.lock())
        core->Abort(text);
    // The operation now ends promptly with the abort; wait a little so that its buffers are
    // released before the caller reuses them, but never indefinitely.
    WaitDone(Clock::now() + std::chrono::seconds(5));
    throw std::runtime_error(text);
}

// ---- CollWork ----

bool CollWork::wait(std::chrono::milliseconds timeout)
{
    // A forked child's copy of a Work the parent started: the collective thread that would
    // finish it was not copied.
    if (!done_.load(std::memory_order_acquire) && glucx_fork_check() != GLUCX_OK)
        throw std::runtime_error(Describe() + ": " + glucx_last_error());
    if (!WaitDone(Deadline(timeout)))
        TimedOut(timeout);
    return Rethrow();
}

thread_local bool tls_in_callback = false;

bool InCollectiveCallback()
{
    return tls_in_callback;
}

namespace
{
std::atomic<bool> g_exiting{false};
std::atomic<int> g_completing{0}; // threads inside a CompletionScope
} // namespace

CompletionScope::CompletionScope()
{
    g_completing.fetch_add(1); // before Exiting() is read: PrepareForExit() waits for us
}

CompletionScope::~CompletionScope()
{
    g_completing.fetch_sub(1);
}

bool CompletionScope::Exiting() const
{
    return g_exiting.load();
}

void PrepareForExit()
{
    g_exiting.store(true);
    if (glucx_fork_check() != GLUCX_OK)
        return; // a forked child: the threads g_completing counts were the parent's

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (g_completing.load() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void CollWork::OnDone(void *arg, glucx_status_t status, const char *error)
{
    CompletionScope scope;
    if (scope.Exiting())
        return; // the Work and its tensors stay allocated: see CompletionScope
    // Take over the reference Start() left for this callback.
    auto work = c10::intrusive_ptr<CollWork>::reclaim(static_cast<CollWork *>(arg));
    tls_in_callback = true;
    work->Complete(status, error);
    work.reset(); // the Work (and what its Future's callbacks hold) may go here too
    tls_in_callback = false;
}

// ---- P2PWork ----

P2PWork::P2PWork(std::weak_ptr<GroupCore> core, int rank, int size, c10d::OpType type,
                 const OpInfo &info, std::chrono::milliseconds op_timeout)
    : GlucxWork(std::move(core), rank, size, type, info, op_timeout)
{
}

P2PWork::~P2PWork()
{
    // Nobody drives the request any more (a waiter or the helper would hold a reference).
    if (auto core = core_.lock()) {
        if (registered_) {
            core->Drop(this);
            return;
        }
    }
    if (request_ != nullptr)
        glucx_request_free(request_); // never registered: the group was already gone
}

glucx_request_t *P2PWork::TakeRequest(std::vector<at::Tensor> *keep)
{
    std::lock_guard<std::mutex> lock(request_mu_);
    glucx_request_t *req = request_;
    request_ = nullptr;
    if (req != nullptr) {
        *keep = std::move(keep_);
        for (auto &t : outputs_)
            keep->push_back(t);
    }
    return req;
}

void P2PWork::Attach(glucx_request_t *request)
{
    request_ = request;
    post_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                   .count();
    if (auto core = core_.lock()) {
        core->Register(this);
        registered_ = true;
    }
}

void P2PWork::FinishRequest(glucx_status_t status, const char *text)
{
    std::string msg = text != nullptr ? text : "";
    glucx_request_t *req;
    {
        std::lock_guard<std::mutex> lock(request_mu_);
        req = request_;
        request_ = nullptr;
    }
    if (req != nullptr) {
        int peer = -1;
        size_t bytes = 0;
        if (status == GLUCX_OK && glucx_request_info(req, &peer, nullptr) == GLUCX_OK)
            source_.store(peer, std::memory_order_relaxed);
        if (status == GLUCX_ERR_TRUNCATED && glucx_request_info(req, &peer, &bytes) == GLUCX_OK)
            msg = TruncationText(peer, bytes, PostedBytes());
        glucx_request_free(req);
    }
    if (status == GLUCX_ERR_TRUNCATED) {
        // Fail the whole group before the receiver learns of it (see process_group.h): its
        // next operation fails at once, and the others' through glucx's failure notice.
        if (auto core = core_.lock())
            core->Abort(Describe() + " failed: " + msg);
    }
    Complete(status, msg.c_str());
}

bool P2PWork::Own()
{
    std::lock_guard<std::mutex> lock(request_mu_);
    if (handed_ || driving_ || request_ == nullptr)
        return false;
    driving_ = true;
    return true;
}

void P2PWork::Release()
{
    std::lock_guard<std::mutex> lock(request_mu_);
    driving_ = false;
}

void P2PWork::Cancel(const std::string &why)
{
    // Called by Shutdown() after the helper stopped and the group was aborted: a thread that
    // drives the request returns promptly; wait for it (bounded), then release the request.
    const auto end = Clock::now() + std::chrono::seconds(10);
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(request_mu_);
            if (request_ == nullptr)
                return;
            if (!driving_) {
                driving_ = true;
                break;
            }
        }
        if (Clock::now() > end)
            return; // leave it: freeing a request another thread waits on would be worse
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    glucx_status_t st = glucx_request_test(request_);
    if (st == GLUCX_INPROGRESS)
        FinishRequest(GLUCX_ERR_ABORTED, why.c_str());
    else
        FinishRequest(st, st == GLUCX_OK ? "" : glucx_last_error());
    Release();
}

bool P2PWork::isCompleted()
{
    if (done_.load(std::memory_order_acquire))
        return true;
    if (Own()) {
        glucx_status_t st = glucx_request_test(request_);
        if (st != GLUCX_INPROGRESS)
            FinishRequest(st, st == GLUCX_OK ? "" : glucx_last_error());
        Release();
    }
    return done_.load(std::memory_order_acquire);
}

bool P2PWork::wait(std::chrono::milliseconds timeout)
{
    if (!done_.load(std::memory_order_acquire)) {
        if (Own()) {
            // This thread drives the request: libglucx's wait polls, then sleeps on the
            // transport. Its timeout fails the group (Gloo semantics), and its text names the
            // operation, size, peer and tag.
            const int64_t ms = timeout <= kNoTimeout ? -1 : timeout.count();
            glucx_status_t st = glucx_request_wait(request_, ms);
            FinishRequest(st, st == GLUCX_OK ? "" : glucx_last_error());
            Release();
        } else if (!WaitDone(Deadline(timeout))) {
            // Another thread or the helper completes it.
            TimedOut(timeout);
        }
    }
    return Rethrow();
}

int P2PWork::sourceRank() const
{
    return source_.load(std::memory_order_relaxed);
}

c10::intrusive_ptr<c10::ivalue::Future> P2PWork::getFuture()
{
    auto fut = GlucxWork::getFuture();
    if (done_.load(std::memory_order_acquire))
        return fut;
    auto core = core_.lock();
    if (!core)
        return fut;
    {
        // A thread that drives the request completes the Future; else the helper does.
        std::lock_guard<std::mutex> lock(request_mu_);
        if (handed_ || driving_ || request_ == nullptr)
            return fut;
        handed_ = true;
    }
    core->HandOver(c10::intrusive_ptr<P2PWork>::reclaim_copy(this));
    return fut;
}

} // namespace torch
} // namespace glucx
