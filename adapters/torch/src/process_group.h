/**
 * @file process_group.h
 * @brief The `glucx` torch.distributed backend: c10d::ProcessGroup (PyTorch 1.13) on libglucx.
 *
 * Python registers it with torch.distributed.Backend.register_backend("glucx", creator) (see
 * glucx/__init__.py); the creator builds a ProcessGroupGlucx on the c10d Store PyTorch hands
 * over. Each collective becomes one glucx_coll_start_cb() call: it runs on the communicator's
 * collective thread, in call order, and its completion callback finishes the Work (copies
 * results into non-contiguous outputs, wakes waiters, completes the c10 Future). The calling
 * thread never blocks while an operation runs. Point-to-point operations post glucx_isend /
 * glucx_irecv(_any) and are completed by whichever thread waits for them; a Future asked of an
 * unfinished one is completed by a per-group helper thread (started on first need) that sleeps
 * in glucx_request_wait_any.
 *
 * Threads: every method may be called from any thread. Collectives must be issued in the same
 * order on every rank (as with every c10d backend); calls from several threads are ordered by
 * the caller. Errors: invalid arguments (tensor kinds, dtypes, ReduceOps, list lengths, shapes)
 * throw std::runtime_error (Python RuntimeError) from the call itself, naming the operation,
 * the sizes and the rank; failures found while running (a mismatch across ranks, a dead peer,
 * a timeout) are raised by Work::wait() and set on the Future. A failure other than an invalid
 * argument fails the whole group: every later operation throws the same error at once. A
 * receive that a longer message truncates fails the group too (GroupCore::Abort, before the
 * receive's Work completes), so the sender and the other ranks fail through libglucx's failure
 * notice. Messages are glucx's text (c10::Error's backtrace is dropped: ExceptionText()).
 *
 * Network devices: each group's libglucx context gets the UCX network devices of
 * BackendNetDevices() (device.h), i.e. GLOO_SOCKET_IFNAME as ProcessGroupGloo reads it; groups
 * with the same devices share one context.
 */
#ifndef GLUCX_TORCH_PROCESS_GROUP_H
#define GLUCX_TORCH_PROCESS_GROUP_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <glucx/glucx.h>

namespace glucx
{
namespace torch
{

class P2PWork;

/**
 * What a process group and its outstanding Works share: the communicator, and the helper that
 * completes point-to-point Works nobody waits for. Works hold it weakly (a Work may outlive its
 * group; by then the group has finished it).
 */
class GroupCore
{
  public:
    GroupCore(std::shared_ptr<glucx_context_t> context, glucx_comm_t *comm,
              std::chrono::milliseconds timeout);
    ~GroupCore();
    GroupCore(const GroupCore &) = delete;
    GroupCore &operator=(const GroupCore &) = delete;

    glucx_comm_t *comm() const
    {
        return comm_;
    }
    int rank() const
    {
        return rank_;
    }
    int size() const
    {
        return size_;
    }
    /** The group's timeout: of every operation, and of Work::wait() without a timeout. */
    std::chrono::milliseconds timeout() const
    {
        return timeout_;
    }

    /** The communicator's last error text (glucx_comm_last_error). */
    std::string LastError() const;
    /** Fail the group (glucx_comm_abort): every outstanding and later operation fails. */
    void Abort(const std::string &reason);

    /** Track a point-to-point Work until it has released its request (see Shutdown()). */
    void Register(P2PWork *work);
    /** From a registered Work's destructor: unregister it; a request it still holds (it was
     *  dropped unfinished, e.g. an isend whose Work was discarded) is kept, with its tensors,
     *  until the transfer ends. */
    void Drop(P2PWork *work);
    /** Let the helper thread complete @p work (its Future was asked for); starts the thread. */
    void HandOver(c10::intrusive_ptr<P2PWork> work);

    /**
     * Finish everything and destroy the communicator: stops the helper, fails outstanding
     * point-to-point operations (aborting the group if there are any), then
     * glucx_comm_destroy() (which fails queued collectives: their Works complete with an
     * error). Idempotent. Must not run on the collective thread.
     */
    void Shutdown();

  private:
    void HelperLoop();

    std::shared_ptr<glucx_context_t> context_;
    glucx_comm_t *comm_;
    const int rank_;
    const int size_;
    const std::chrono::milliseconds timeout_;

    std::mutex mu_; // guards everything below
    std::condition_variable cv_;
    bool stop_ = false;
    bool shut_ = false;
    std::thread helper_;
    std::vector<c10::intrusive_ptr<P2PWork>> handed_;
    struct Orphan {
        glucx_request_t *request;
        std::vector<at::Tensor> keep;
        int64_t deadline_ns;
        size_t posted; // bytes the operation posted
    };
    std::vector<Orphan> orphans_;
    std::unordered_set<P2PWork *> registered_;
};

/**
 * The backend's process group. Constructed by the Python creator (glucx/__init__.py) or
 * directly: ProcessGroupGlucx(store, rank, size, timeout).
 */
class ProcessGroupGlucx : public c10d::ProcessGroup
{
  public:
    /**
     * Create the communicator: collective over all @p size ranks, rendezvous through @p store
     * (any c10d Store; keys live under "glucx/" and a generation number taken from the store's
     * counter "glucx/joins", so a store reused by a later group of the same ranks does not mix
     * records). Blocks until every rank has joined or @p timeout passes.
     * @param timeout default timeout of every operation (> 0).
     * A rank that cannot join (a missing network interface, a context or store failure before
     * its record is out) publishes its reason in place of its record, so the others fail at
     * once naming it ("rank R could not join: ...") instead of at their timeout.
     * @throws std::runtime_error naming the rank, size and glucx's reason (a peer that did not
     *         join in time or could not join, a missing network interface, version/settings
     *         mismatch, store failures).
     */
    ProcessGroupGlucx(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                      std::chrono::milliseconds timeout);
    ~ProcessGroupGlucx() override;

    const std::string getBackendName() const override
    {
        return "glucx";
    }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                             const c10d::BroadcastOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                             const c10d::AllreduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    allreduce_coalesced(std::vector<at::Tensor> &tensors,
                        const c10d::AllreduceCoalescedOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                          const c10d::ReduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                             std::vector<at::Tensor> &inputs,
                                             const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                   const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::GatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                           std::vector<std::vector<at::Tensor>> &inputs,
                                           const c10d::ScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                  std::vector<std::vector<at::Tensor>> &inputs,
                                                  const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                         const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                                 std::vector<int64_t> &output_splits,
                                                 std::vector<int64_t> &input_splits,
                                                 const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
                                                 int tag) override;

    /** The communicator (borrowed; valid while this group lives). */
    glucx_comm_t *comm() const
    {
        return core_->comm();
    }
    const std::shared_ptr<GroupCore> &core() const
    {
        return core_;
    }

  private:
    std::shared_ptr<GroupCore> core_;
    unsigned send_flags_ = 0; // glucx_isend_flags() flags of send/isend (GLUCX_SYNC_SEND)
};

} // namespace torch
} // namespace glucx

#endif
