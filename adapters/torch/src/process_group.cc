// The `glucx` torch.distributed backend (process_group.h): the group's shared core, the
// operations, the rendezvous through the c10d Store, and the Python bindings.
#include "process_group.h"

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <stdexcept>

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <c10/core/InferenceMode.h>
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <glucx/gloo.h>

#include "bindings.h"
#include "device.h"
#include "process_group_work.h"

namespace py = pybind11;

namespace glucx
{
namespace torch
{
namespace
{

int64_t NowNs()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void Fail(const std::string &text)
{
    throw std::runtime_error(text);
}

// ---- one libglucx context per set of network devices, shared by the groups that exist ----

// The context for UCX network devices @p net (BackendNetDevices()); nullptr with the reason in
// @p why when libglucx cannot create it.
std::shared_ptr<glucx_context_t> SharedContext(const std::string &net, std::string *why)
{
    static std::mutex mu;
    static std::map<std::string, std::weak_ptr<glucx_context_t>> current;
    std::lock_guard<std::mutex> lock(mu);
    if (auto ctx = current[net].lock())
        return ctx;
    glucx_context_params_t params{};
    params.field_mask = GLUCX_CONTEXT_PARAM_NET_DEVICES;
    params.net_devices = net.c_str();
    glucx_context_t *raw = nullptr;
    glucx_status_t st = glucx_context_create(&params, &raw);
    if (st != GLUCX_OK) {
        *why = "cannot create the libglucx context (network devices " + net +
               "): " + glucx_last_error();
        return nullptr;
    }
    std::shared_ptr<glucx_context_t> ctx(raw, glucx_context_destroy);
    current[net] = ctx;
    return ctx;
}

// ---- rendezvous through a c10d Store ----

// A rank that cannot join a group publishes this, then its reason, in place of its rendezvous
// record, so the other ranks fail at once naming it instead of waiting for it until their
// timeout. glucx records start with "GLUCXR1\0" (plugin/core/comm.c): no record starts so.
constexpr char kJoinFailed[] = "glucx-join-failed\0";
constexpr size_t kJoinFailedLen = sizeof(kJoinFailed) - 1;

struct StoreArg {
    c10::intrusive_ptr<c10d::Store> store;
    std::string prefix;
    std::string last_error;   // the last callback failure, for the creation error
    std::string peer_failure; // a rank's published failure to join, for the creation error
    bool published = false;   // whether a set succeeded (libglucx publishes only its record)
};

glucx_status_t StoreSet(void *arg, const char *key, const void *value, size_t bytes)
{
    auto *a = static_cast<StoreArg *>(arg);
    try {
        const auto *p = static_cast<const uint8_t *>(value);
        a->store->set(a->prefix + key, std::vector<uint8_t>(p, p + bytes));
        a->published = true;
        return GLUCX_OK;
    } catch (const std::exception &e) {
        a->last_error =
            std::string("store set of '") + a->prefix + key + "' failed: " + ExceptionText(e);
        return GLUCX_ERR_STORE;
    }
}

glucx_status_t StoreGet(void *arg, const char *key, int64_t timeout_ms, void **value_p,
                        size_t *bytes_p)
{
    auto *a = static_cast<StoreArg *>(arg);
    const std::string k = a->prefix + key;
    const int64_t start = NowNs();
    try {
        if (timeout_ms == 0) {
            if (!a->store->check({k}))
                return GLUCX_ERR_TIMEOUT;
        } else {
            a->store->wait({k}, std::chrono::milliseconds(timeout_ms));
        }
    } catch (const std::exception &e) {
        // c10d stores report a wait timeout as an exception; anything earlier is a failure.
        const bool timed_out = NowNs() - start >= (timeout_ms - 50) * 1000000;
        a->last_error = timed_out ? "Timed out waiting " + std::to_string(timeout_ms) +
                                        "ms for store key '" + k + "': " + ExceptionText(e)
                                  : "store wait for '" + k + "' failed: " + ExceptionText(e);
        return timed_out ? GLUCX_ERR_TIMEOUT : GLUCX_ERR_STORE;
    }
    try {
        std::vector<uint8_t> v = a->store->get(k);
        if (v.size() >= kJoinFailedLen && std::memcmp(v.data(), kJoinFailed, kJoinFailedLen) == 0) {
            a->peer_failure.assign(v.begin() + kJoinFailedLen, v.end());
            return GLUCX_ERR_STORE;
        }
        void *buf = std::malloc(v.empty() ? 1 : v.size());
        if (buf == nullptr)
            return GLUCX_ERR_NO_MEMORY;
        if (!v.empty())
            std::memcpy(buf, v.data(), v.size());
        *value_p = buf;
        *bytes_p = v.size();
        return GLUCX_OK;
    } catch (const std::exception &e) {
        a->last_error = std::string("store get of '") + k + "' failed: " + ExceptionText(e);
        return GLUCX_ERR_STORE;
    }
}

// Publish, under this rank's record key of communicator @p name ("<name>/rank/<r>", the layout
// of docs/architecture.md), that it cannot join and why. Best effort: on a store failure the
// peers still fail, at their timeout.
void PublishJoinFailure(StoreArg &arg, const std::string &name, int rank, const std::string &why)
{
    const std::string text = "rank " + std::to_string(rank) + " could not join: " + why;
    const std::string value = std::string(kJoinFailed, kJoinFailedLen) + text;
    const std::vector<uint8_t> v(value.begin(), value.end());
    try {
        arg.store->set(arg.prefix + name + "/rank/" + std::to_string(rank), v);
    } catch (const std::exception &) {
    }
}

// ---- argument checks and conversions ----

const char *TorchDtypeName(at::ScalarType t)
{
    return c10::toString(t);
}

glucx_dtype_t ToGlucxDtype(at::ScalarType t, const char *op, int rank)
{
    switch (t) {
    case at::kBool:
        return GLUCX_DTYPE_BOOL;
    case at::kChar:
        return GLUCX_DTYPE_I8;
    case at::kByte:
        return GLUCX_DTYPE_U8;
    case at::kInt:
        return GLUCX_DTYPE_I32;
    case at::kLong:
        return GLUCX_DTYPE_I64;
    case at::kHalf:
        return GLUCX_DTYPE_F16;
    case at::kBFloat16:
        return GLUCX_DTYPE_BF16;
    case at::kFloat:
        return GLUCX_DTYPE_F32;
    case at::kDouble:
        return GLUCX_DTYPE_F64;
    default:
        Fail(std::string("glucx ") + op + " on rank " + std::to_string(rank) + ": dtype " +
             TorchDtypeName(t) +
             " is not supported (float16, bfloat16, float32, float64, int8, uint8, int32, "
             "int64, bool are; complex tensors are sent as real views by torch.distributed "
             "where the ReduceOp allows it)");
    }
}

const char *ReduceOpName(c10d::ReduceOp::RedOpType op)
{
    switch (op) {
    case c10d::ReduceOp::SUM:
        return "SUM";
    case c10d::ReduceOp::AVG:
        return "AVG";
    case c10d::ReduceOp::PRODUCT:
        return "PRODUCT";
    case c10d::ReduceOp::MIN:
        return "MIN";
    case c10d::ReduceOp::MAX:
        return "MAX";
    case c10d::ReduceOp::BAND:
        return "BAND";
    case c10d::ReduceOp::BOR:
        return "BOR";
    case c10d::ReduceOp::BXOR:
        return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
        return "PREMUL_SUM";
    default:
        return "UNKNOWN";
    }
}

glucx_op_t ToGlucxOp(const c10d::ReduceOp &rop, glucx_dtype_t dtype, at::ScalarType t,
                     const char *op, int rank)
{
    glucx_op_t g;
    switch (rop.op_) {
    case c10d::ReduceOp::SUM:
        g = GLUCX_OP_SUM;
        break;
    case c10d::ReduceOp::AVG:
        g = GLUCX_OP_AVG;
        break;
    case c10d::ReduceOp::PRODUCT:
        g = GLUCX_OP_PROD;
        break;
    case c10d::ReduceOp::MIN:
        g = GLUCX_OP_MIN;
        break;
    case c10d::ReduceOp::MAX:
        g = GLUCX_OP_MAX;
        break;
    case c10d::ReduceOp::BAND:
        g = GLUCX_OP_BAND;
        break;
    case c10d::ReduceOp::BOR:
        g = GLUCX_OP_BOR;
        break;
    case c10d::ReduceOp::BXOR:
        g = GLUCX_OP_BXOR;
        break;
    default:
        Fail(std::string("glucx ") + op + " on rank " + std::to_string(rank) + ": ReduceOp " +
             ReduceOpName(rop.op_) +
             " is not supported (SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR, BXOR are)");
    }
    if (!glucx_op_supported(g, dtype)) {
        const char *why = g == GLUCX_OP_AVG ? "AVG needs a floating-point dtype"
                                            : "BAND, BOR and BXOR need an integer or bool dtype";
        Fail(std::string("glucx ") + op + " on rank " + std::to_string(rank) + ": ReduceOp " +
             ReduceOpName(rop.op_) + " is not defined for dtype " + TorchDtypeName(t) + " (" + why +
             ")");
    }
    return g;
}

std::string SizesStr(const at::Tensor &t)
{
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); i++)
        s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

// A tensor glucx can read or write: defined, dense (strided), CPU. @p what names it.
void CheckTensor(const at::Tensor &t, const char *op, int rank, const std::string &what)
{
    const std::string where =
        std::string("glucx ") + op + " on rank " + std::to_string(rank) + ": " + what;
    if (!t.defined())
        Fail(where + " is an undefined tensor");
    if (t.is_sparse() || t.layout() != at::kStrided)
        Fail(where + " has layout " + c10::str(t.layout()) +
             "; only dense (strided) CPU tensors are supported (convert with .to_dense())");
    if (t.is_meta())
        Fail(where + " is a meta tensor (it has no data); glucx needs CPU tensors");
    if (t.device().type() != c10::DeviceType::CPU)
        Fail(where + " is on device " + t.device().str() + "; glucx needs CPU tensors");
}

// An output tensor must not have elements that share memory (expanded tensors).
void CheckWritable(const at::Tensor &t, const char *op, int rank, const std::string &what)
{
    if (at::has_internal_overlap(t) == at::MemOverlap::Yes)
        Fail(std::string("glucx ") + op + " on rank " + std::to_string(rank) + ": " + what +
             " (sizes " + SizesStr(t) +
             ") has elements that share memory (e.g. made by expand()); it cannot be written");
}

// An output tensor: CheckTensor, then CheckWritable.
void CheckOutputTensor(const at::Tensor &t, const char *op, int rank, const std::string &what)
{
    CheckTensor(t, op, rank, what);
    CheckWritable(t, op, rank, what);
}

// A contiguous tensor holding @p t's values: @p t itself when it is contiguous, else a copy.
at::Tensor ContiguousInput(const at::Tensor &t)
{
    if (t.is_contiguous())
        return t;
    c10::InferenceMode guard;
    return t.contiguous();
}

// A contiguous buffer for output @p t: @p t itself when contiguous, else a new tensor of its
// shape (its values copied when @p with_values: in/out tensors).
at::Tensor ContiguousOutput(const at::Tensor &t, bool with_values)
{
    if (t.is_contiguous())
        return t;
    c10::InferenceMode guard;
    return with_values ? t.contiguous() : at::empty(t.sizes(), t.options());
}

// Whether tensors[0..n) are contiguous views of one storage that lie back to back, in order,
// each with @p elems elements of the same dtype (e.g. torch.chunk of a flat buffer): then one
// buffer pointer covers them all, and holding any of them keeps that memory alive.
bool BackToBack(const std::vector<at::Tensor> &tensors, size_t elems)
{
    if (tensors.empty() || elems == 0)
        return false;
    const size_t bytes = elems * tensors[0].element_size();
    const char *base = static_cast<const char *>(tensors[0].data_ptr());
    for (size_t i = 0; i < tensors.size(); i++) {
        const at::Tensor &t = tensors[i];
        if (!t.is_contiguous() || t.scalar_type() != tensors[0].scalar_type() ||
            !t.storage().is_alias_of(tensors[0].storage()) ||
            static_cast<const char *>(t.data_ptr()) != base + i * bytes)
            return false;
    }
    return true;
}

std::chrono::milliseconds OpTimeout(std::chrono::milliseconds requested,
                                    std::chrono::milliseconds group)
{
    return requested.count() > 0 ? requested : group;
}

} // namespace

// ------------------------------------------------------------------------------------------
// GroupCore

GroupCore::GroupCore(std::shared_ptr<glucx_context_t> context, glucx_comm_t *comm,
                     std::chrono::milliseconds timeout)
    : context_(std::move(context)), comm_(comm), rank_(glucx_comm_rank(comm)),
      size_(glucx_comm_size(comm)), timeout_(timeout)
{
}

GroupCore::~GroupCore()
{
    Shutdown();
}

std::string GroupCore::LastError() const
{
    char buf[1024];
    glucx_comm_last_error(comm_, buf, sizeof(buf));
    return buf;
}

void GroupCore::Abort(const std::string &reason)
{
    glucx_comm_abort(comm_, reason.c_str());
}

void GroupCore::Register(P2PWork *work)
{
    std::lock_guard<std::mutex> lock(mu_);
    registered_.insert(work);
}

void GroupCore::Drop(P2PWork *work)
{
    std::lock_guard<std::mutex> lock(mu_);
    registered_.erase(work);
    std::vector<at::Tensor> keep;
    glucx_request_t *req = work->TakeRequest(&keep);
    if (req == nullptr)
        return;
    if (shut_) {
        glucx_request_free(req); // the communicator still exists: Shutdown() waits for mu_
        return;
    }
    orphans_.push_back(Orphan{req, std::move(keep), NowNs() + (int64_t)timeout_.count() * 1000000,
                              work->PostedBytes()});
    if (!helper_.joinable())
        helper_ = std::thread([this] { HelperLoop(); });
    cv_.notify_all();
    glucx_comm_wake(comm_);
}

void GroupCore::HandOver(c10::intrusive_ptr<P2PWork> work)
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (shut_) {
            // too late for the helper: Shutdown() cancels it (it is registered)
            return;
        }
        handed_.push_back(std::move(work));
        if (!helper_.joinable())
            helper_ = std::thread([this] { HelperLoop(); });
    }
    cv_.notify_all();
    glucx_comm_wake(comm_);
}

// The helper: completes handed-over Works and releases orphaned requests, sleeping in
// glucx_request_wait_any (woken by glucx_comm_wake when the set changes).
void GroupCore::HelperLoop()
{
    std::vector<glucx_request_t *> reqs;
    std::vector<c10::intrusive_ptr<P2PWork>> works;
    std::vector<Orphan> orphans;
    for (;;) {
        unsigned since;
        int64_t deadline = INT64_MAX;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [this] { return stop_ || !handed_.empty() || !orphans_.empty(); });
            if (stop_)
                return;
            works.swap(handed_);
            for (auto &o : orphans_)
                orphans.push_back(std::move(o));
            orphans_.clear();
            since = glucx_comm_wake_count(comm_);
        }
        reqs.clear();
        for (auto &w : works) {
            reqs.push_back(w->HelperRequest());
            deadline = std::min(deadline, w->post_ns_ + (int64_t)timeout_.count() * 1000000);
        }
        for (auto &o : orphans) {
            reqs.push_back(o.request);
            deadline = std::min(deadline, o.deadline_ns);
        }
        int64_t ms = std::max<int64_t>(1, (deadline - NowNs()) / 1000000 + 1);
        size_t index = 0;
        glucx_status_t st = glucx_request_wait_any(reqs.data(), reqs.size(), ms, &since, &index);
        if (st == GLUCX_ERR_INVALID_ARG) // cannot happen; never spin on it
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        CompletionScope scope;
        if (scope.Exiting()) { // see CompletionScope: leave everything as it is
            for (auto &w : works)
                (void)w.release();
            return;
        }
        // Finish whatever is done (after a timeout, the group failed: all are).
        std::vector<c10::intrusive_ptr<P2PWork>> pending;
        for (auto &w : works) {
            glucx_status_t s = glucx_request_test(w->HelperRequest());
            if (s == GLUCX_INPROGRESS)
                pending.push_back(std::move(w));
            else
                w->FinishRequest(s, s == GLUCX_OK ? "" : glucx_last_error());
        }
        works.clear();
        std::vector<Orphan> left;
        for (auto &o : orphans) {
            glucx_status_t s = glucx_request_test(o.request);
            if (s == GLUCX_INPROGRESS) {
                left.push_back(std::move(o));
                continue;
            }
            int peer = -1;
            size_t sent = 0;
            if (s == GLUCX_ERR_TRUNCATED &&
                glucx_request_info(o.request, &peer, &sent) == GLUCX_OK) {
                // a receive whose Work was dropped: the group fails all the same (P2PWork)
                Abort("glucx: a dropped receive on rank " + std::to_string(rank_) + " of " +
                      std::to_string(size_) + " failed: " + TruncationText(peer, sent, o.posted));
            }
            glucx_request_free(o.request);
        }
        orphans.clear();
        {
            std::lock_guard<std::mutex> lock(mu_);
            for (auto &w : pending)
                handed_.push_back(std::move(w));
            for (auto &o : left)
                orphans_.push_back(std::move(o));
        }
    }
}

void GroupCore::Shutdown()
{
    std::thread helper;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (shut_)
            return;
        shut_ = true;
        stop_ = true;
        helper.swap(helper_);
    }
    cv_.notify_all();
    glucx_comm_wake(comm_);
    if (helper.joinable())
        helper.join();
    // Whatever point-to-point work is left cannot complete once the communicator is gone.
    std::vector<c10::intrusive_ptr<P2PWork>> handed;
    std::vector<Orphan> orphans;
    std::vector<P2PWork *> registered;
    {
        std::lock_guard<std::mutex> lock(mu_);
        handed.swap(handed_);
        orphans.swap(orphans_);
        registered.assign(registered_.begin(), registered_.end());
    }
    const std::string why = "glucx: process group (rank " + std::to_string(rank_) + " of " +
                            std::to_string(size_) + ") destroyed before the operation completed";
    bool outstanding = !orphans.empty() || !handed.empty();
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (P2PWork *w : registered_)
            outstanding = outstanding || !w->isCompleted();
    }
    if (outstanding)
        glucx_comm_abort(comm_, why.c_str());
    for (auto &w : handed)
        w->FinishRequest(GLUCX_ERR_ABORTED, why.c_str());
    handed.clear();
    for (auto &o : orphans)
        glucx_request_free(o.request);
    {
        // Works still held by the user: release their requests before the communicator goes.
        // Holding mu_ keeps them from being destroyed meanwhile (their destructor takes it).
        std::lock_guard<std::mutex> lock(mu_);
        for (P2PWork *w : registered_)
            w->Cancel(why);
        registered_.clear();
    }
    glucx_comm_destroy(comm_); // queued collectives complete with an error here
    comm_ = nullptr;
}

// ------------------------------------------------------------------------------------------
// ProcessGroupGlucx

ProcessGroupGlucx::ProcessGroupGlucx(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size)
{
    const std::string who = "glucx: creating the process group on rank " + std::to_string(rank) +
                            " of " + std::to_string(size);
    // In a forked child of a process with glucx contexts, before the store (the parent's
    // connection, shared with it) or anything inherited is touched.
    if (glucx_fork_check() != GLUCX_OK)
        Fail(who + ": " + glucx_last_error());
    if (!store)
        Fail(who + ": no store");
    if (size < 1 || size > GLUCX_COMM_SIZE_MAX || rank < 0 || rank >= size)
        Fail(who + ": rank/size out of range (1 <= size <= " + std::to_string(GLUCX_COMM_SIZE_MAX) +
             ")");
    if (timeout.count() <= 0)
        Fail(who + ": timeout must be positive, got " + std::to_string(timeout.count()) + " ms");

    // Generation: every rank of one creation adds 1; all adds of a creation happen before any
    // rank of it can finish (each needs every peer's record, published after its add), so a
    // later creation on the same store counts on from there and reads only its own records.
    // Taken before anything that may fail, so that a failing rank still counts and can tell
    // the others (PublishJoinFailure).
    int64_t joins;
    try {
        joins = store->add("glucx/joins", 1);
    } catch (const std::exception &e) {
        Fail(who + ": store add of 'glucx/joins' failed: " + ExceptionText(e));
    }
    const int64_t generation = (joins - 1) / size;
    StoreArg arg{store, "glucx/" + std::to_string(generation) + "/", "", "", false};
    const std::string name = "pg" + std::to_string(generation);

    std::string why;
    std::shared_ptr<glucx_context_t> context;
    bool sync_sends = true;
    try {
        sync_sends = glucx::gloo::SyncSends();
        context = SharedContext(BackendNetDevices(), &why);
    } catch (const std::exception &e) {
        why = ExceptionText(e);
    }
    glucx_store_t *gstore = nullptr;
    if (context) {
        glucx_store_ops_t ops{};
        ops.set = StoreSet;
        ops.get = StoreGet;
        if (glucx_store_create(&ops, &arg, &gstore) != GLUCX_OK)
            why = glucx_last_error();
    }
    if (!why.empty()) {
        if (why.rfind("glucx: ", 0) == 0)
            why.erase(0, 7); // "glucx: creating ...: glucx: ..." says it twice
        PublishJoinFailure(arg, name, rank, why);
        Fail(who + ": " + why);
    }
    glucx_comm_params_t params{};
    params.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT;
    params.rank = rank;
    params.size = size;
    params.store = gstore;
    params.name = name.c_str();
    params.timeout_ms = timeout.count();
    glucx_comm_t *comm = nullptr;
    glucx_status_t st = glucx_comm_create(context.get(), &params, &comm);
    glucx_store_destroy(gstore);
    if (st != GLUCX_OK) {
        std::string text;
        if (!arg.peer_failure.empty()) {
            text = arg.peer_failure; // "rank R could not join: why"
        } else {
            text = glucx_last_error();
            if (!arg.last_error.empty())
                text += " (" + arg.last_error + ")";
        }
        if (!arg.published) // failed before its record was out: the others would wait for it
            PublishJoinFailure(arg, name, rank, text);
        Fail(who + ": " + text);
    }
    core_ = std::make_shared<GroupCore>(std::move(context), comm, timeout);
    send_flags_ = sync_sends ? static_cast<unsigned>(GLUCX_SEND_SYNC) : 0u;
    init();
}

ProcessGroupGlucx::~ProcessGroupGlucx()
{
    if (glucx_fork_check() != GLUCX_OK) {
        // A forked child's copy of the parent's group: its helper and collective threads were
        // not copied (joining them would block for ever), its locks may be held by them, and
        // its peers must hear nothing. Keep it, deliberately leaked, for the child's lifetime.
        new std::shared_ptr<GroupCore>(std::move(core_));
        return;
    }
    if (InCollectiveCallback()) {
        // The last reference went away in a Future callback on a collective thread (which
        // glucx_comm_destroy joins): finish on a thread of its own.
        std::thread([core = core_] { core->Shutdown(); }).detach();
        return;
    }
    // Collective callbacks may complete Futures whose Python callbacks need the GIL: never
    // hold it while the collective thread is joined.
    if (Py_IsInitialized() && PyGILState_Check()) {
        py::gil_scoped_release nogil;
        core_->Shutdown();
    } else {
        core_->Shutdown();
    }
}

namespace
{

// The priority the calling thread gives the collectives it starts (glucx._C._set_coll_priority;
// glucx.torch.coll_priority): torch's per-call options have no such field.
struct CollPriority {
    bool set = false;
    int priority = 0;
    size_t chunk_bytes = 0; // 0: libglucx's default
};
thread_local CollPriority t_coll_priority;

// Start @p work's collective; the reference for the callback is taken here.
c10::intrusive_ptr<c10d::Work> Start(const std::shared_ptr<GroupCore> &core,
                                     c10::intrusive_ptr<CollWork> work,
                                     std::chrono::milliseconds requested)
{
    glucx_coll_opts_t opts{};
    if (requested.count() > 0) {
        opts.field_mask = GLUCX_COLL_OPT_TIMEOUT;
        opts.timeout_ms = requested.count();
    }
    if (t_coll_priority.set) {
        opts.field_mask |= GLUCX_COLL_OPT_PRIORITY;
        opts.priority = t_coll_priority.priority;
        if (t_coll_priority.chunk_bytes > 0) {
            opts.field_mask |= GLUCX_COLL_OPT_CHUNK;
            opts.chunk_bytes = t_coll_priority.chunk_bytes;
        }
    }
    CollWork *raw = work.get();
    c10::raw::intrusive_ptr::incref(raw);
    glucx_status_t st = glucx_coll_start_cb(
        core->comm(), &raw->args_, opts.field_mask ? &opts : nullptr, CollWork::OnDone, raw);
    if (st != GLUCX_OK) {
        c10::raw::intrusive_ptr::decref(raw);
        Fail(work->Describe() + ": " + glucx_last_error() + " [" + glucx_status_string(st) + "]");
    }
    return work;
}

c10::intrusive_ptr<CollWork> MakeColl(const std::shared_ptr<GroupCore> &core, c10d::OpType type,
                                      const OpInfo &info, std::chrono::milliseconds requested)
{
    return c10::make_intrusive<CollWork>(core, core->rank(), core->size(), type, info,
                                         OpTimeout(requested, core->timeout()));
}

std::string Prefix(const char *op, int rank)
{
    return std::string("glucx ") + op + " on rank " + std::to_string(rank);
}

void CheckOne(const std::vector<at::Tensor> &tensors, const char *op, int rank,
              const char *what = "tensor")
{
    if (tensors.size() != 1)
        Fail(Prefix(op, rank) + ": expected exactly one " + what + " per process, got " +
             std::to_string(tensors.size()));
}

void CheckRoot(int64_t root, int size, const char *op, int rank)
{
    if (root < 0 || root >= size)
        Fail(Prefix(op, rank) + ": root rank " + std::to_string(root) + " out of range [0, " +
             std::to_string(size) + ")");
}

// Check that @p list has @p n tensors, each like @p like (dtype and element count).
void CheckList(const std::vector<at::Tensor> &list, size_t n, const at::Tensor &like,
               const char *op, int rank, const char *what, bool output)
{
    if (list.size() != n)
        Fail(Prefix(op, rank) + ": " + what + " has " + std::to_string(list.size()) +
             " tensors; expected " + std::to_string(n) + " (one per rank)");
    for (size_t i = 0; i < list.size(); i++) {
        const std::string name = std::string(what) + "[" + std::to_string(i) + "]";
        CheckTensor(list[i], op, rank, name);
        if (output)
            CheckWritable(list[i], op, rank, name);
        if (list[i].scalar_type() != like.scalar_type())
            Fail(Prefix(op, rank) + ": " + name + " has dtype " +
                 TorchDtypeName(list[i].scalar_type()) + ", expected " +
                 TorchDtypeName(like.scalar_type()));
        if (list[i].numel() != like.numel())
            Fail(Prefix(op, rank) + ": " + name + " has sizes " + SizesStr(list[i]) + " (" +
                 std::to_string(list[i].numel()) + " elements), expected " +
                 std::to_string(like.numel()) + " elements like sizes " + SizesStr(like));
    }
}

// The tensor lists of a gather (@p output: the output lists) or a scatter (the input lists):
// the root (rank @p root) passes one list, checked by CheckList (@p what names it); the other
// ranks pass none (no list, or one empty list).
void CheckRootList(const std::vector<std::vector<at::Tensor>> &lists, int64_t root, bool output,
                   const char *what, int size, const at::Tensor &like, const char *op, int rank)
{
    const char *kind = output ? "output" : "input";
    if (rank == root) {
        if (lists.size() != 1)
            Fail(Prefix(op, rank) + ": the root needs one list of " + kind + " tensors, got " +
                 std::to_string(lists.size()));
        CheckList(lists[0], size, like, op, rank, what, output);
    } else if (!lists.empty() && !(lists.size() == 1 && lists[0].empty())) {
        Fail(Prefix(op, rank) + ": only the root (rank " + std::to_string(root) + ") takes " +
             kind + " tensors; got " + std::to_string(lists.size()) + " list(s)");
    }
}

void CheckSameDtype(const at::Tensor &a, const at::Tensor &b, const char *op, int rank,
                    const char *an, const char *bn)
{
    if (a.scalar_type() != b.scalar_type())
        Fail(Prefix(op, rank) + ": " + an + " has dtype " + TorchDtypeName(a.scalar_type()) +
             " but " + bn + " has " + TorchDtypeName(b.scalar_type()));
}

// The tensors of a collective with one input and one output tensor: both usable, the output
// writable, one dtype.
void CheckInOut(const at::Tensor &output, const at::Tensor &input, const char *op, int rank)
{
    CheckTensor(input, op, rank, "input tensor");
    CheckOutputTensor(output, op, rank, "output tensor");
    CheckSameDtype(output, input, op, rank, "output tensor", "input tensor");
}

// Copy @p src (contiguous, numel = sum of the list's) into the tensors of @p list, in order.
void Scatter(const at::Tensor &src, const std::vector<at::Tensor> &list)
{
    int64_t off = 0;
    for (const auto &t : list) {
        const int64_t n = t.numel();
        t.copy_(src.narrow(0, off, n).view(t.sizes()));
        off += n;
    }
}

// One contiguous 1-D tensor with the values of @p list, in order (no copy when they are
// already back to back).
at::Tensor Flatten(const std::vector<at::Tensor> &list, size_t elems_each)
{
    if (BackToBack(list, elems_each))
        return list[0];
    c10::InferenceMode guard;
    std::vector<at::Tensor> flat;
    flat.reserve(list.size());
    for (const auto &t : list)
        flat.push_back(t.reshape({-1}));
    return at::cat(flat, 0);
}

// Input @p in's values, contiguous (ContiguousInput), kept by @p work until completion.
at::Tensor InputBuffer(GlucxWork &work, const at::Tensor &in)
{
    at::Tensor src = ContiguousInput(in);
    work.keep_.push_back(src);
    return src;
}

// The contiguous buffer @p work writes output @p out through: @p out itself when it is
// contiguous, else a new tensor of its shape (holding @p out's values when @p with_values)
// that @p work keeps until completion and, when @p copy_back, copies into @p out on success.
at::Tensor OutputBuffer(GlucxWork &work, const at::Tensor &out, bool with_values = false,
                        bool copy_back = true)
{
    at::Tensor buf = ContiguousOutput(out, with_values);
    if (!buf.is_same(out)) {
        work.keep_.push_back(buf);
        if (copy_back)
            work.finish_ = [out, buf] { out.copy_(buf); };
    }
    return buf;
}

// The receive buffer of a gather into @p outs (@p size tensors of @p n elements each): their
// own memory when they lie back to back (BackToBack), else a new flat tensor with @p options
// that @p work keeps until completion and scatters into @p outs on success.
at::Tensor GatherBuffer(GlucxWork &work, const std::vector<at::Tensor> &outs, size_t n, int size,
                        const at::TensorOptions &options)
{
    if (BackToBack(outs, n))
        return outs[0];
    at::Tensor dst;
    {
        c10::InferenceMode guard;
        dst = at::empty({static_cast<int64_t>(n) * size}, options);
    }
    work.keep_.push_back(dst);
    work.finish_ = [outs, dst] { Scatter(dst, outs); };
    return dst;
}

// Set the arguments every collective has; the others (op, root, counts) stay as they are.
void SetArgs(CollWork &work, glucx_coll_t coll, const void *sendbuf, void *recvbuf, size_t count,
             glucx_dtype_t dtype)
{
    work.args_.coll = coll;
    work.args_.sendbuf = sendbuf;
    work.args_.recvbuf = recvbuf;
    work.args_.count = count;
    work.args_.dtype = dtype;
}

} // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::allreduce(std::vector<at::Tensor> &tensors,
                                                            const c10d::AllreduceOptions &opts)
{
    static const char *op = "allreduce";
    CheckOne(tensors, op, rank_);
    const at::Tensor &t = tensors[0];
    CheckOutputTensor(t, op, rank_, "tensor");
    const glucx_dtype_t dt = ToGlucxDtype(t.scalar_type(), op, rank_);
    const glucx_op_t gop = ToGlucxOp(opts.reduceOp, dt, t.scalar_type(), op, rank_);
    OpInfo info{op, dt, static_cast<size_t>(t.numel())};
    auto work = MakeColl(core_, c10d::OpType::ALLREDUCE, info, opts.timeout);
    work->outputs_ = tensors;
    at::Tensor buf = OutputBuffer(*work, t, true);
    SetArgs(*work, GLUCX_COLL_ALLREDUCE, GLUCX_IN_PLACE, buf.data_ptr(), info.elements, dt);
    work->args_.op = gop;
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupGlucx::allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                       const c10d::AllreduceCoalescedOptions &opts)
{
    static const char *op = "allreduce_coalesced";
    if (tensors.empty())
        Fail(Prefix(op, rank_) + ": no tensors");
    size_t total = 0;
    for (size_t i = 0; i < tensors.size(); i++) {
        const std::string name = "tensors[" + std::to_string(i) + "]";
        CheckOutputTensor(tensors[i], op, rank_, name);
        if (i > 0)
            CheckSameDtype(tensors[i], tensors[0], op, rank_, name.c_str(), "tensors[0]");
        total += static_cast<size_t>(tensors[i].numel());
    }
    const at::Tensor &t0 = tensors[0];
    const glucx_dtype_t dt = ToGlucxDtype(t0.scalar_type(), op, rank_);
    const glucx_op_t gop = ToGlucxOp(opts.reduceOp, dt, t0.scalar_type(), op, rank_);
    OpInfo info{op, dt, total};
    auto work = MakeColl(core_, c10d::OpType::ALLREDUCE_COALESCED, info, opts.timeout);
    work->outputs_ = tensors;
    at::Tensor flat;
    if (tensors.size() == 1) {
        flat = ContiguousOutput(t0, true);
    } else {
        c10::InferenceMode guard;
        std::vector<at::Tensor> parts;
        for (const auto &t : tensors)
            parts.push_back(t.reshape({-1}));
        flat = at::cat(parts, 0);
    }
    if (!flat.is_same(t0)) {
        work->keep_.push_back(flat);
        std::vector<at::Tensor> outs = tensors;
        work->finish_ = [outs, flat] { Scatter(flat.reshape({-1}), outs); };
    }
    SetArgs(*work, GLUCX_COLL_ALLREDUCE, GLUCX_IN_PLACE, flat.data_ptr(), total, dt);
    work->args_.op = gop;
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::broadcast(std::vector<at::Tensor> &tensors,
                                                            const c10d::BroadcastOptions &opts)
{
    static const char *op = "broadcast";
    CheckOne(tensors, op, rank_);
    CheckRoot(opts.rootRank, size_, op, rank_);
    if (opts.rootTensor != 0)
        Fail(Prefix(op, rank_) + ": rootTensor " + std::to_string(opts.rootTensor) +
             " (only one tensor per process)");
    const at::Tensor &t = tensors[0];
    CheckOutputTensor(t, op, rank_, "tensor");
    const glucx_dtype_t dt = ToGlucxDtype(t.scalar_type(), op, rank_);
    OpInfo info{op, dt, static_cast<size_t>(t.numel()), static_cast<int>(opts.rootRank)};
    auto work = MakeColl(core_, c10d::OpType::BROADCAST, info, opts.timeout);
    work->outputs_ = tensors;
    const bool root = rank_ == opts.rootRank;
    at::Tensor buf = OutputBuffer(*work, t, root, !root);
    SetArgs(*work, GLUCX_COLL_BROADCAST, nullptr, buf.data_ptr(), info.elements, dt);
    work->args_.root = static_cast<int>(opts.rootRank);
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::reduce(std::vector<at::Tensor> &tensors,
                                                         const c10d::ReduceOptions &opts)
{
    static const char *op = "reduce";
    CheckOne(tensors, op, rank_);
    CheckRoot(opts.rootRank, size_, op, rank_);
    if (opts.rootTensor != 0)
        Fail(Prefix(op, rank_) + ": rootTensor " + std::to_string(opts.rootTensor) +
             " (only one tensor per process)");
    const at::Tensor &t = tensors[0];
    CheckOutputTensor(t, op, rank_, "tensor");
    const glucx_dtype_t dt = ToGlucxDtype(t.scalar_type(), op, rank_);
    const glucx_op_t gop = ToGlucxOp(opts.reduceOp, dt, t.scalar_type(), op, rank_);
    const bool root = rank_ == opts.rootRank;
    OpInfo info{op, dt, static_cast<size_t>(t.numel()), static_cast<int>(opts.rootRank)};
    auto work = MakeColl(core_, c10d::OpType::REDUCE, info, opts.timeout);
    work->outputs_ = tensors;
    // In place at the root; the other ranks only send (their recvbuf is NULL), so their
    // tensors keep their values.
    at::Tensor buf = OutputBuffer(*work, t, true, root);
    SetArgs(*work, GLUCX_COLL_REDUCE, root ? GLUCX_IN_PLACE : buf.data_ptr(),
            root ? buf.data_ptr() : nullptr, info.elements, dt);
    work->args_.op = gop;
    work->args_.root = static_cast<int>(opts.rootRank);
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupGlucx::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                             std::vector<at::Tensor> &inputs, const c10d::AllgatherOptions &opts)
{
    static const char *op = "allgather";
    CheckOne(inputs, op, rank_, "input tensor");
    if (outputs.size() != 1)
        Fail(Prefix(op, rank_) + ": expected one list of output tensors, got " +
             std::to_string(outputs.size()));
    const at::Tensor &in = inputs[0];
    CheckTensor(in, op, rank_, "input tensor");
    const glucx_dtype_t dt = ToGlucxDtype(in.scalar_type(), op, rank_);
    CheckList(outputs[0], size_, in, op, rank_, "output list", true);
    const size_t n = static_cast<size_t>(in.numel());
    OpInfo info{op, dt, n};
    auto work = MakeColl(core_, c10d::OpType::ALLGATHER, info, opts.timeout);
    work->outputs_ = outputs[0];
    at::Tensor src = InputBuffer(*work, in);
    at::Tensor dst = GatherBuffer(*work, outputs[0], n, size_, in.options());
    SetArgs(*work, GLUCX_COLL_ALLGATHER, src.data_ptr(), dst.data_ptr(), n, dt);
    if (n == 0)
        work->args_.sendbuf = work->args_.recvbuf = nullptr;
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupGlucx::_allgather_base(at::Tensor &output, at::Tensor &input,
                                   const c10d::AllgatherOptions &opts)
{
    static const char *op = "_allgather_base";
    CheckInOut(output, input, op, rank_);
    const glucx_dtype_t dt = ToGlucxDtype(input.scalar_type(), op, rank_);
    const size_t n = static_cast<size_t>(input.numel());
    if (static_cast<size_t>(output.numel()) != n * size_)
        Fail(Prefix(op, rank_) + ": output tensor has " + std::to_string(output.numel()) +
             " elements (sizes " + SizesStr(output) + "), expected " + std::to_string(size_) +
             " x " + std::to_string(n) + " (world size x input elements)");
    OpInfo info{op, dt, n};
    auto work = MakeColl(core_, c10d::OpType::_ALLGATHER_BASE, info, opts.timeout);
    work->outputs_ = {output};
    at::Tensor src = InputBuffer(*work, input);
    at::Tensor dst = OutputBuffer(*work, output);
    SetArgs(*work, GLUCX_COLL_ALLGATHER, n ? src.data_ptr() : nullptr, n ? dst.data_ptr() : nullptr,
            n, dt);
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupGlucx::gather(std::vector<std::vector<at::Tensor>> &outputs,
                          std::vector<at::Tensor> &inputs, const c10d::GatherOptions &opts)
{
    static const char *op = "gather";
    CheckOne(inputs, op, rank_, "input tensor");
    CheckRoot(opts.rootRank, size_, op, rank_);
    const bool root = rank_ == opts.rootRank;
    const at::Tensor &in = inputs[0];
    CheckTensor(in, op, rank_, "input tensor");
    const glucx_dtype_t dt = ToGlucxDtype(in.scalar_type(), op, rank_);
    const size_t n = static_cast<size_t>(in.numel());
    CheckRootList(outputs, opts.rootRank, true, "gather list", size_, in, op, rank_);
    OpInfo info{op, dt, n, static_cast<int>(opts.rootRank)};
    auto work = MakeColl(core_, c10d::OpType::GATHER, info, opts.timeout);
    at::Tensor src = InputBuffer(*work, in);
    void *dst_ptr = nullptr;
    if (root) {
        work->outputs_ = outputs[0];
        at::Tensor dst = GatherBuffer(*work, outputs[0], n, size_, in.options());
        dst_ptr = n ? dst.data_ptr() : nullptr;
    }
    SetArgs(*work, GLUCX_COLL_GATHER, n ? src.data_ptr() : nullptr, dst_ptr, n, dt);
    work->args_.root = static_cast<int>(opts.rootRank);
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupGlucx::scatter(std::vector<at::Tensor> &outputs,
                           std::vector<std::vector<at::Tensor>> &inputs,
                           const c10d::ScatterOptions &opts)
{
    static const char *op = "scatter";
    CheckOne(outputs, op, rank_, "output tensor");
    CheckRoot(opts.rootRank, size_, op, rank_);
    const bool root = rank_ == opts.rootRank;
    const at::Tensor &out = outputs[0];
    CheckOutputTensor(out, op, rank_, "output tensor");
    const glucx_dtype_t dt = ToGlucxDtype(out.scalar_type(), op, rank_);
    const size_t n = static_cast<size_t>(out.numel());
    CheckRootList(inputs, opts.rootRank, false, "scatter list", size_, out, op, rank_);
    OpInfo info{op, dt, n, static_cast<int>(opts.rootRank)};
    auto work = MakeColl(core_, c10d::OpType::SCATTER, info, opts.timeout);
    work->outputs_ = outputs;
    const void *src_ptr = nullptr;
    if (root) {
        at::Tensor src = Flatten(inputs[0], n);
        work->keep_.push_back(src);
        src_ptr = n ? src.data_ptr() : nullptr;
    }
    at::Tensor dst = OutputBuffer(*work, out);
    SetArgs(*work, GLUCX_COLL_SCATTER, src_ptr, n ? dst.data_ptr() : nullptr, n, dt);
    work->args_.root = static_cast<int>(opts.rootRank);
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupGlucx::reduce_scatter(std::vector<at::Tensor> &outputs,
                                  std::vector<std::vector<at::Tensor>> &inputs,
                                  const c10d::ReduceScatterOptions &opts)
{
    static const char *op = "reduce_scatter";
    CheckOne(outputs, op, rank_, "output tensor");
    if (inputs.size() != 1)
        Fail(Prefix(op, rank_) + ": expected one list of input tensors, got " +
             std::to_string(inputs.size()));
    const at::Tensor &out = outputs[0];
    CheckOutputTensor(out, op, rank_, "output tensor");
    const glucx_dtype_t dt = ToGlucxDtype(out.scalar_type(), op, rank_);
    const glucx_op_t gop = ToGlucxOp(opts.reduceOp, dt, out.scalar_type(), op, rank_);
    CheckList(inputs[0], size_, out, op, rank_, "input list", false);
    const size_t n = static_cast<size_t>(out.numel());
    OpInfo info{op, dt, n};
    auto work = MakeColl(core_, c10d::OpType::REDUCE_SCATTER, info, opts.timeout);
    work->outputs_ = outputs;
    at::Tensor src = Flatten(inputs[0], n);
    work->keep_.push_back(src);
    at::Tensor dst = OutputBuffer(*work, out);
    SetArgs(*work, GLUCX_COLL_REDUCE_SCATTER, n ? src.data_ptr() : nullptr,
            n ? dst.data_ptr() : nullptr, n, dt);
    work->args_.op = gop;
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupGlucx::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                        const c10d::ReduceScatterOptions &opts)
{
    static const char *op = "_reduce_scatter_base";
    CheckInOut(output, input, op, rank_);
    const glucx_dtype_t dt = ToGlucxDtype(output.scalar_type(), op, rank_);
    const glucx_op_t gop = ToGlucxOp(opts.reduceOp, dt, output.scalar_type(), op, rank_);
    const size_t n = static_cast<size_t>(output.numel());
    if (static_cast<size_t>(input.numel()) != n * size_)
        Fail(Prefix(op, rank_) + ": input tensor has " + std::to_string(input.numel()) +
             " elements (sizes " + SizesStr(input) + "), expected " + std::to_string(size_) +
             " x " + std::to_string(n) + " (world size x output elements)");
    OpInfo info{op, dt, n};
    auto work = MakeColl(core_, c10d::OpType::_REDUCE_SCATTER_BASE, info, opts.timeout);
    work->outputs_ = {output};
    at::Tensor src = InputBuffer(*work, input);
    at::Tensor dst = OutputBuffer(*work, output);
    SetArgs(*work, GLUCX_COLL_REDUCE_SCATTER, n ? src.data_ptr() : nullptr,
            n ? dst.data_ptr() : nullptr, n, dt);
    work->args_.op = gop;
    return Start(core_, std::move(work), opts.timeout);
}

namespace
{

// Per-rank element counts of an all_to_all_single side: equal blocks of dim 0 when @p splits
// is empty, else rows splits[r] of dim 0 each.
std::vector<size_t> SplitCounts(const at::Tensor &t, const std::vector<int64_t> &splits, int size,
                                const char *op, int rank, const char *what)
{
    std::vector<size_t> counts(size);
    if (t.dim() == 0)
        Fail(Prefix(op, rank) + ": " + what +
             " is a 0-dimensional tensor; all_to_all splits "
             "dimension 0");
    const int64_t rows = t.size(0);
    const int64_t row_elems = rows ? t.numel() / rows : 0;
    if (splits.empty()) {
        if (rows % size != 0)
            Fail(Prefix(op, rank) + ": " + what + " dimension 0 (" + std::to_string(rows) +
                 ") does not divide into " + std::to_string(size) + " equal parts");
        for (auto &c : counts)
            c = static_cast<size_t>(rows / size * row_elems);
        return counts;
    }
    if (splits.size() != static_cast<size_t>(size))
        Fail(Prefix(op, rank) + ": " + what + " split sizes have " + std::to_string(splits.size()) +
             " entries, expected " + std::to_string(size));
    int64_t sum = 0;
    for (int r = 0; r < size; r++) {
        if (splits[r] < 0)
            Fail(Prefix(op, rank) + ": " + what + " split size " + std::to_string(splits[r]) +
                 " for rank " + std::to_string(r) + " is negative");
        sum += splits[r];
        counts[r] = static_cast<size_t>(splits[r] * row_elems);
    }
    if (sum != rows)
        Fail(Prefix(op, rank) + ": " + what + " split sizes add up to " + std::to_string(sum) +
             " but dimension 0 has " + std::to_string(rows) + " rows");
    return counts;
}

std::vector<size_t> Displs(const std::vector<size_t> &counts)
{
    std::vector<size_t> d(counts.size());
    size_t off = 0;
    for (size_t i = 0; i < counts.size(); i++) {
        d[i] = off;
        off += counts[i];
    }
    return d;
}

// Set the per-rank element counts of @p work's alltoallv, each side's blocks back to back in
// rank order; @p work owns the count and displacement arrays.
void SetAlltoallvCounts(CollWork &work, std::vector<size_t> send_counts,
                        std::vector<size_t> recv_counts)
{
    work.send_displs_ = Displs(send_counts);
    work.displs_ = Displs(recv_counts);
    work.send_counts_ = std::move(send_counts);
    work.counts_ = std::move(recv_counts);
    work.args_.send_counts = work.send_counts_.data();
    work.args_.send_displs = work.send_displs_.data();
    work.args_.counts = work.counts_.data();
    work.args_.displs = work.displs_.data();
}

} // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::alltoall_base(at::Tensor &output,
                                                                at::Tensor &input,
                                                                std::vector<int64_t> &output_splits,
                                                                std::vector<int64_t> &input_splits,
                                                                const c10d::AllToAllOptions &opts)
{
    static const char *op = "alltoall_base";
    CheckInOut(output, input, op, rank_);
    const glucx_dtype_t dt = ToGlucxDtype(input.scalar_type(), op, rank_);
    auto send_counts = SplitCounts(input, input_splits, size_, op, rank_, "input tensor");
    auto recv_counts = SplitCounts(output, output_splits, size_, op, rank_, "output tensor");
    OpInfo info{op, dt, static_cast<size_t>(input.numel())};
    auto work = MakeColl(core_, c10d::OpType::ALLTOALL_BASE, info, opts.timeout);
    work->outputs_ = {output};
    at::Tensor src = InputBuffer(*work, input);
    at::Tensor dst = OutputBuffer(*work, output);
    const bool equal =
        input_splits.empty() && output_splits.empty() && input.numel() == output.numel();
    SetArgs(*work, equal ? GLUCX_COLL_ALLTOALL : GLUCX_COLL_ALLTOALLV,
            input.numel() ? src.data_ptr() : nullptr, output.numel() ? dst.data_ptr() : nullptr,
            equal ? send_counts[0] : 0, dt);
    if (!equal)
        SetAlltoallvCounts(*work, std::move(send_counts), std::move(recv_counts));
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::alltoall(std::vector<at::Tensor> &outputs,
                                                           std::vector<at::Tensor> &inputs,
                                                           const c10d::AllToAllOptions &opts)
{
    static const char *op = "alltoall";
    if (inputs.size() != static_cast<size_t>(size_) || outputs.size() != static_cast<size_t>(size_))
        Fail(Prefix(op, rank_) + ": expected " + std::to_string(size_) +
             " input and output tensors (one per rank), got " + std::to_string(inputs.size()) +
             " and " + std::to_string(outputs.size()));
    std::vector<size_t> send_counts(size_), recv_counts(size_);
    size_t send_total = 0, recv_total = 0;
    for (int r = 0; r < size_; r++) {
        const std::string in_name = "input[" + std::to_string(r) + "]";
        const std::string out_name = "output[" + std::to_string(r) + "]";
        CheckTensor(inputs[r], op, rank_, in_name);
        CheckOutputTensor(outputs[r], op, rank_, out_name);
        CheckSameDtype(inputs[r], inputs[0], op, rank_, in_name.c_str(), "input[0]");
        CheckSameDtype(outputs[r], inputs[0], op, rank_, out_name.c_str(), "input[0]");
        send_counts[r] = static_cast<size_t>(inputs[r].numel());
        recv_counts[r] = static_cast<size_t>(outputs[r].numel());
        send_total += send_counts[r];
        recv_total += recv_counts[r];
    }
    const glucx_dtype_t dt = ToGlucxDtype(inputs[0].scalar_type(), op, rank_);
    OpInfo info{op, dt, send_total};
    auto work = MakeColl(core_, c10d::OpType::ALLTOALL, info, opts.timeout);
    work->outputs_ = outputs;
    at::Tensor src, dst;
    {
        c10::InferenceMode guard;
        std::vector<at::Tensor> parts;
        for (const auto &t : inputs)
            parts.push_back(t.reshape({-1}));
        src = at::cat(parts, 0);
        dst = at::empty({static_cast<int64_t>(recv_total)}, inputs[0].options());
    }
    work->keep_ = {src, dst};
    std::vector<at::Tensor> outs = outputs;
    work->finish_ = [outs, dst] { Scatter(dst, outs); };
    SetArgs(*work, GLUCX_COLL_ALLTOALLV, send_total ? src.data_ptr() : nullptr,
            recv_total ? dst.data_ptr() : nullptr, 0, dt);
    SetAlltoallvCounts(*work, std::move(send_counts), std::move(recv_counts));
    return Start(core_, std::move(work), opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::barrier(const c10d::BarrierOptions &opts)
{
    OpInfo info{"barrier"};
    auto work = MakeColl(core_, c10d::OpType::BARRIER, info, opts.timeout);
    work->args_.coll = GLUCX_COLL_BARRIER;
    return Start(core_, std::move(work), opts.timeout);
}

namespace
{

uint64_t P2PTag(int tag)
{
    return static_cast<uint64_t>(static_cast<uint32_t>(tag));
}

} // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::send(std::vector<at::Tensor> &tensors, int dst,
                                                       int tag)
{
    static const char *op = "send";
    CheckOne(tensors, op, rank_);
    const at::Tensor &t = tensors[0];
    CheckTensor(t, op, rank_, "tensor");
    const glucx_dtype_t dt = ToGlucxDtype(t.scalar_type(), op, rank_);
    if (dst < 0 || dst >= size_)
        Fail(Prefix(op, rank_) + ": destination rank " + std::to_string(dst) +
             " out of range [0, " + std::to_string(size_) + ")");
    OpInfo info{op, dt, static_cast<size_t>(t.numel()), dst, "to rank"};
    auto work = c10::make_intrusive<P2PWork>(core_, rank_, size_, c10d::OpType::SEND, info,
                                             core_->timeout());
    at::Tensor src = InputBuffer(*work, t);
    glucx_request_t *req = nullptr;
    // Synchronous unless GLUCX_SYNC_SEND=0: the Work completes once dst's receive took the
    // message, as ProcessGroupGloo's does over Gloo's TCP transport.
    glucx_status_t st = glucx_isend_flags(comm(), src.numel() ? src.data_ptr() : nullptr,
                                          src.nbytes(), dst, P2PTag(tag), send_flags_, &req);
    if (st != GLUCX_OK)
        Fail(work->Describe() + ": " + glucx_last_error() + " [" + glucx_status_string(st) + "]");
    work->Attach(req);
    return work;
}

namespace
{

c10::intrusive_ptr<c10d::Work> PostRecv(ProcessGroupGlucx &pg, std::vector<at::Tensor> &tensors,
                                        int src, int tag, c10d::OpType type, const char *op)
{
    const int rank = pg.getRank(), size = pg.getSize();
    CheckOne(tensors, op, rank);
    const at::Tensor &t = tensors[0];
    CheckOutputTensor(t, op, rank, "tensor");
    const glucx_dtype_t dt = ToGlucxDtype(t.scalar_type(), op, rank);
    if (src >= size || (src < 0 && type == c10d::OpType::RECV))
        Fail(Prefix(op, rank) + ": source rank " + std::to_string(src) + " out of range [0, " +
             std::to_string(size) + ")");
    OpInfo info{op, dt, static_cast<size_t>(t.numel()), src, "from rank"};
    auto work =
        c10::make_intrusive<P2PWork>(pg.core(), rank, size, type, info, pg.core()->timeout());
    work->outputs_ = tensors;
    at::Tensor buf = OutputBuffer(*work, t);
    glucx_request_t *req = nullptr;
    void *ptr = buf.numel() ? buf.data_ptr() : nullptr;
    glucx_status_t st;
    if (src >= 0) {
        st = glucx_irecv(pg.comm(), ptr, buf.nbytes(), src, P2PTag(tag), &req);
    } else {
        std::vector<int> peers(size);
        std::iota(peers.begin(), peers.end(), 0);
        st = glucx_irecv_any(pg.comm(), ptr, buf.nbytes(), peers.data(), size, P2PTag(tag), &req);
    }
    if (st != GLUCX_OK)
        Fail(work->Describe() + ": " + glucx_last_error() + " [" + glucx_status_string(st) + "]");
    work->Attach(req);
    return work;
}

} // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::recv(std::vector<at::Tensor> &tensors, int src,
                                                       int tag)
{
    return PostRecv(*this, tensors, src, tag, c10d::OpType::RECV, "recv");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGlucx::recvAnysource(std::vector<at::Tensor> &tensors,
                                                                int tag)
{
    return PostRecv(*this, tensors, -1, tag, c10d::OpType::RECVANYSOURCE, "recvAnysource");
}

// ------------------------------------------------------------------------------------------
// Python

glucx_comm_t *CommFromPython(py::handle process_group)
{
    if (!process_group || process_group.is_none())
        return nullptr;
    try {
        if (!py::isinstance<ProcessGroupGlucx>(process_group))
            return nullptr;
        return process_group.cast<ProcessGroupGlucx &>().comm();
    } catch (const py::error_already_set &) {
        return nullptr;
    } catch (const py::cast_error &) {
        return nullptr;
    }
}

void BindProcessGroup(py::module_ &m)
{
    m.def(
        "_set_coll_priority",
        [](py::object priority, int64_t chunk_bytes) {
            if (priority.is_none()) {
                t_coll_priority = CollPriority{};
                return;
            }
            if (chunk_bytes < 0)
                throw py::value_error("glucx coll_priority: chunk_bytes " +
                                      std::to_string(chunk_bytes) + " < 0");
            const int64_t p = priority.cast<int64_t>();
            if (p < INT32_MIN || p > INT32_MAX)
                throw py::value_error("glucx coll_priority: priority " + std::to_string(p) +
                                      " outside the 32-bit range");
            t_coll_priority.set = true;
            t_coll_priority.priority = static_cast<int>(p);
            t_coll_priority.chunk_bytes = static_cast<size_t>(chunk_bytes);
        },
        py::arg("priority"), py::arg("chunk_bytes") = 0,
        "Priority (int, higher first; None: none) and chunk size in bytes (0: libglucx's "
        "default) of the collectives the calling thread starts on glucx process groups from "
        "now on (glucx_coll_start's GLUCX_COLL_OPT_PRIORITY). Use glucx.torch.coll_priority.");
    m.def(
        "_get_coll_priority",
        []() -> py::object {
            if (!t_coll_priority.set)
                return py::none();
            return py::make_tuple(t_coll_priority.priority, t_coll_priority.chunk_bytes);
        },
        "The calling thread's (priority, chunk_bytes), or None.");
    m.def("_prepare_for_exit", &PrepareForExit, py::call_guard<py::gil_scoped_release>(),
          "At interpreter exit (atexit): stop completing Works on native threads, whose "
          "tensors and Future callbacks would need the GIL while the interpreter finalizes.");
    // The c10d classes this one derives from are registered by torch.distributed.
    py::module_::import("torch._C._distributed_c10d");
    py::class_<ProcessGroupGlucx, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupGlucx>>(
        m, "ProcessGroupGlucx", R"(The `glucx` torch.distributed backend's process group.

ProcessGroupGlucx(store, rank, size, timeout)

Made by the creator registered as backend "glucx" (init_process_group("glucx"),
new_group(backend="glucx")); constructing it directly is allowed. Collectives run libglucx's
algorithms on the group's collective thread; every operation returns at once with a Work
whose wait() and get_future() report the result. Thread-safe.

Args:
    store (torch.distributed.Store): rendezvous store, the same for every rank; keys go under
        "glucx/".
    rank (int): this process's rank, 0 <= rank < size.
    size (int): number of processes.
    timeout (datetime.timedelta): timeout of the rendezvous and of every operation.

Network interface between hosts: GLOO_SOCKET_IFNAME (a comma-separated list gives the group
every listed interface), else the one holding this host's name's address, as ProcessGroupGloo.

Raises:
    RuntimeError: the rendezvous failed (the message names the rank and the reason), a named
        network interface does not exist or has no address (the message names it and
        GLOO_SOCKET_IFNAME), or another rank could not join ("rank R could not join: ...").
)")
        .def(py::init([](const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                         std::chrono::milliseconds timeout) {
                 try {
                     return c10::make_intrusive<ProcessGroupGlucx>(store, rank, size, timeout);
                 } catch (const c10::Error &e) {
                     // what() would append PyTorch's C++ backtrace to the Python message
                     throw std::runtime_error(ExceptionText(e));
                 }
             }),
             py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
             py::call_guard<py::gil_scoped_release>())
        .def_property_readonly(
            "timeout", [](const ProcessGroupGlucx &pg) { return pg.core()->timeout(); },
            "The group's timeout (datetime.timedelta): of every operation and of wait().")
        .def(
            "last_error", [](const ProcessGroupGlucx &pg) { return pg.core()->LastError(); },
            "libglucx's last error text for this group (\"\" if none): what failed it, naming "
            "the collective, sizes and peer.")
        .def(
            "peer_transport",
            [](const ProcessGroupGlucx &pg, int peer) {
                char buf[128];
                if (glucx_comm_peer_transport(pg.comm(), peer, buf, sizeof(buf)) != GLUCX_OK)
                    throw py::value_error("peer_transport: rank " + std::to_string(peer) +
                                          " out of range [0, " + std::to_string(pg.getSize()) +
                                          ")");
                return std::string(buf);
            },
            py::arg("peer"),
            "How this rank reaches rank `peer`, e.g. \"posix/memory\" or \"tcp/lo\".")
        .def(
            "algorithm",
            [](const ProcessGroupGlucx &pg, const std::string &coll, size_t bytes) {
                for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
                    if (coll == glucx_coll_name(static_cast<glucx_coll_t>(c))) {
                        const char *a =
                            glucx_comm_algorithm(pg.comm(), static_cast<glucx_coll_t>(c), bytes);
                        return std::string(a != nullptr ? a : "");
                    }
                }
                throw py::value_error("algorithm: unknown collective '" + coll + "'");
            },
            py::arg("collective"), py::arg("bytes"),
            "Name of the algorithm libglucx selects for `collective` (\"allreduce\", ...) at "
            "`bytes` total bytes on this group.");
}

} // namespace torch
} // namespace glucx
