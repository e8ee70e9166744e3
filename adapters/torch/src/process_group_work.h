/**
 * @file process_group_work.h
 * @brief The Work objects of the `glucx` backend (process_group.h).
 *
 * GlucxWork keeps the state every Work shares: completion flag, error, result tensors and the
 * c10 Future (made on first getFuture(); its value is the list of output tensors, as Gloo's).
 * Completion runs an optional "finish" step first (copies of results into outputs that could
 * not be written directly), in InferenceMode so it works on any thread and for tensors made
 * under torch.no_grad() or torch.inference_mode(). Then waiters wake and the Future completes;
 * its callbacks run on the completing thread.
 *
 * CollWork: one collective, completed by libglucx's callback on the collective thread.
 * P2PWork: one point-to-point request, completed by the first thread that waits for it, by
 * isCompleted() when it finds it done, or by the group's helper thread once a Future was asked.
 *
 * wait(timeout): a timeout of 0 (kNoTimeout) waits up to the operation's own timeout (after
 * which libglucx fails it) plus a grace period; a shorter explicit timeout that passes fails
 * the group (glucx_comm_abort, as a timed-out wait does in libglucx) and throws. Errors are
 * std::runtime_error (Python RuntimeError) whose text starts with "glucx <op> on rank R of N"
 * and carries libglucx's message (collective, sizes, peer).
 */
#ifndef GLUCX_TORCH_PROCESS_GROUP_WORK_H
#define GLUCX_TORCH_PROCESS_GROUP_WORK_H

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <glucx/glucx.h>

#include "process_group.h"

namespace glucx
{
namespace torch
{

/**
 * The text of @p e for glucx's own messages: c10::Error's message without the C++ backtrace
 * PyTorch appends to what() (c10::Error::what_without_backtrace()), any other exception's
 * what(). Thread-safe.
 */
std::string ExceptionText(const std::exception &e);

/**
 * The error text of a receive of @p posted bytes that rank @p sender truncated by sending
 * @p sent bytes (more than posted). Thread-safe.
 */
std::string TruncationText(int sender, size_t sent, size_t posted);

/** What an error message says about an operation. */
struct OpInfo {
    const char *op = "";                     /**< c10d name: "allreduce", "send", ... */
    glucx_dtype_t dtype = GLUCX_DTYPE_COUNT; /**< COUNT: none (barrier) */
    size_t elements = 0;                     /**< elements of this rank's input */
    int root = -1;                           /**< root or peer, -1: none */
    const char *root_name = "root";          /**< "root", "to rank", "from rank" */
};

/** Common part of the backend's Works. */
class GlucxWork : public c10d::Work
{
  public:
    GlucxWork(std::weak_ptr<GroupCore> core, int rank, int size, c10d::OpType type,
              const OpInfo &info, std::chrono::milliseconds op_timeout);

    bool isCompleted() override;
    bool isSuccess() const override;
    std::exception_ptr exception() const override;
    std::vector<at::Tensor> result() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
    void abort() override;

    /** "glucx allreduce on rank 0 of 2 (f32, 1024 elements)". */
    std::string Describe() const;
    /** Bytes of this rank's input (a receive: the bytes it posted); 0 without a dtype. */
    size_t PostedBytes() const;

    /** Result tensors: the Future's value and result(). Set before the operation starts. */
    std::vector<at::Tensor> outputs_;
    /** Tensors the operation reads or writes (contiguous copies), kept until completion. */
    std::vector<at::Tensor> keep_;
    /** Run on success before completion (copies into the outputs); may throw. */
    std::function<void()> finish_;

  protected:
    /** Finish with @p status; @p text is libglucx's error text (ignored on success). */
    void Complete(glucx_status_t status, const char *text);
    /** Wait for done_ until @p deadline; @return whether done. */
    bool WaitDone(std::chrono::steady_clock::time_point deadline);
    /** The rest of wait() once done: rethrow the error. */
    bool Rethrow();
    /** The deadline of wait(@p timeout). */
    std::chrono::steady_clock::time_point Deadline(std::chrono::milliseconds timeout) const;
    /** After an explicit wait timeout: fail the group, wait briefly for the op to end, throw. */
    [[noreturn]] void TimedOut(std::chrono::milliseconds timeout);

    std::weak_ptr<GroupCore> core_;
    const int size_;
    OpInfo info_;
    const std::chrono::milliseconds op_timeout_;
    std::atomic<bool> done_{false};
    // guarded by mutex_ (the base class's): error, future
    std::exception_ptr error_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
    bool future_marked_ = false;
};

/** A collective started with glucx_coll_start_cb(). */
class CollWork : public GlucxWork
{
  public:
    using GlucxWork::GlucxWork;

    bool wait(std::chrono::milliseconds timeout) override;

    /** Arguments passed to libglucx; arrays below are borrowed by it until completion. */
    glucx_coll_args_t args_{};
    std::vector<size_t> counts_, displs_, send_counts_, send_displs_;

    /** libglucx's completion callback; @p arg is a reference taken by Start(). */
    static void OnDone(void *arg, glucx_status_t status, const char *error);
};

/** Whether this thread is inside CollWork::OnDone (a collective thread of libglucx). */
bool InCollectiveCallback();

/**
 * Completion code on threads Python does not know (libglucx's collective threads, the group's
 * helper thread) at interpreter exit. Completing a Work can free tensors and run Future
 * callbacks, and both may need the GIL; a native thread that asks for the GIL while the
 * interpreter finalizes is ended in the middle of C++ code (std::terminate). So completion
 * code runs inside a CompletionScope and does nothing (leaks the Work: the process is exiting)
 * once PrepareForExit() has run.
 */
class CompletionScope
{
  public:
    CompletionScope();
    ~CompletionScope();
    CompletionScope(const CompletionScope &) = delete;
    CompletionScope &operator=(const CompletionScope &) = delete;
    /** Whether the interpreter is exiting: the caller must not complete or free Works. */
    bool Exiting() const;
};

/**
 * Called at interpreter exit (an atexit handler of the glucx package), without the GIL:
 * completion code that starts afterwards does nothing, and this waits (at most 2 s) for
 * completion code already running to finish. Thread-safe; idempotent.
 */
void PrepareForExit();

/** A point-to-point operation (send, recv, recv from any source). */
class P2PWork : public GlucxWork
{
  public:
    P2PWork(std::weak_ptr<GroupCore> core, int rank, int size, c10d::OpType type,
            const OpInfo &info, std::chrono::milliseconds op_timeout);
    ~P2PWork() override;

    bool isCompleted() override;
    bool wait(std::chrono::milliseconds timeout) override;
    int sourceRank() const override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

    /** Take the posted request (once, right after posting). */
    void Attach(glucx_request_t *request);

    /** The helper thread's view: the request while it owns the Work (HandOver). */
    glucx_request_t *HelperRequest() const
    {
        return request_;
    }
    /** Complete from the request's status and free the request; the caller owns it (driving_
     *  set, or handed_ for the helper) and does not hold request_mu_. */
    void FinishRequest(glucx_status_t status, const char *text);
    /** For the destructor (GroupCore::Drop): take the request, if any, and the tensors its
     *  transfer uses (into @p keep). */
    glucx_request_t *TakeRequest(std::vector<at::Tensor> *keep);
    /** Shutdown (helper stopped, group aborted): fail and release an unfinished request. */
    void Cancel(const std::string &why);

    int64_t post_ns_ = 0; /**< when it was posted (CLOCK_MONOTONIC ns), for the helper */

  private:
    /** Become the one thread that drives request_ (driving_); false if someone else does, it
     *  was handed to the helper, or it is released. */
    bool Own();
    void Release();

    // Ownership of request_: one thread at a time drives it (driving_: a waiter in
    // glucx_request_wait, isCompleted's test, Cancel), or the helper once handed_ is set.
    // request_mu_ guards the flags and the pointer, never a blocking call.
    std::mutex request_mu_;
    glucx_request_t *request_ = nullptr;
    bool handed_ = false;
    bool driving_ = false;
    std::atomic<int> source_{-1};
    bool registered_ = false;
};

} // namespace torch
} // namespace glucx

#endif
