/*
 * Context and Pair: Gloo's rendezvous creates one pair per peer, publishes each pair's address
 * and connects each pair with the peer's. Here every pair's address is this rank's compact
 * address (glucx_comm_compact_address: 52 bytes, within gloo::transport::Address::kMaxByteSize
 * however many interfaces UCX uses), and connecting the last pair connects the communicator
 * (glucx_comm_connect), which fetches each peer's record from the listener its compact address
 * names and checks it — Gloo carries the compact addresses, glucx the records.
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

/* ---- context ----------------------------------------------------------------------------- */

Context::Context(std::shared_ptr<Device> device, int rank, int size)
    : ::gloo::transport::Context(rank, size), device_(std::move(device)),
      peerRecords_(static_cast<size_t>(size)), peerSeen_(static_cast<size_t>(size), false)
{
    if (pairs_.size() < static_cast<size_t>(size))
        pairs_.resize(static_cast<size_t>(size));
}

Context::~Context()
{
    /* Pairs hold a raw pointer to this context: drop them first. Buffers hold a shared_ptr, so
     * none is left. */
    pairs_.clear();
    glucx_comm_destroy(comm_);
}

/* Create the communicator's worker once the timeout is known (Gloo sets it after creating the
 * context, before the first pair). lock_ held. */
void Context::prepare()
{
    if (comm_ != nullptr)
        return;
    glucx_comm_params_t p;
    std::memset(&p, 0, sizeof(p));
    p.rank = rank;
    p.size = size;
    p.field_mask = GLUCX_COMM_PARAM_NAME;
    p.name = "gloo";
    auto ms = getTimeout().count();
    if (ms > 0) {
        p.field_mask |= GLUCX_COMM_PARAM_TIMEOUT;
        p.timeout_ms = ms;
    }
    glucx_comm_t *c = nullptr;
    if (glucx_comm_prepare(device_->glucxContext(), &p, &c) != GLUCX_OK)
        GLOO_THROW_IO_EXCEPTION("glucx: rank ", rank, " of ", size,
                                ": cannot create a communicator: ", lastError());
    /* The compact address; the whole record only where UCX cannot wire up the listener's
     * client-server connections (no network transport: UCX_TLS=shm,self), which
     * connectFullMesh carries at any length. One rank has no peer to serve. */
    char compact[GLUCX_COMPACT_ADDRESS_BYTES];
    glucx_status_t st = GLUCX_ERR_UNSUPPORTED;
    if (size > 1)
        st = glucx_comm_compact_address(c, device_->listenAddress().c_str(), compact,
                                        sizeof(compact));
    if (st == GLUCX_OK) {
        record_.assign(compact, compact + sizeof(compact));
    } else if (st == GLUCX_ERR_UNSUPPORTED) {
        const void *rec = nullptr;
        size_t len = 0;
        if (glucx_comm_address(c, &rec, &len) != GLUCX_OK) {
            glucx_comm_destroy(c);
            GLOO_THROW_IO_EXCEPTION("glucx: rank ", rank, ": no address record: ", lastError());
        }
        record_.assign(static_cast<const char *>(rec), static_cast<const char *>(rec) + len);
    } else {
        std::string why = lastError();
        glucx_comm_destroy(c);
        GLOO_THROW_IO_EXCEPTION("glucx: rank ", rank, " of ", size,
                                ": cannot serve its address record at ", device_->listenAddress(),
                                ": ", why);
    }
    comm_ = c;
}

std::unique_ptr<::gloo::transport::Pair> &Context::createPair(int peer)
{
    GLOO_ENFORCE(peer >= 0 && peer < size && peer != rank, "glucx: createPair: peer ", peer,
                 " out of range [0, ", size, ") or this rank (", rank, ")");
    std::vector<char> record;
    {
        std::lock_guard<std::mutex> g(lock_);
        throwIfFailed();
        prepare();
        record = record_;
    }
    std::lock_guard<std::mutex> g(mutex_);
    pairs_[static_cast<size_t>(peer)] = std::make_unique<Pair>(this, peer, std::move(record));
    return pairs_[static_cast<size_t>(peer)];
}

void Context::connectPeer(int peer, const std::vector<char> &bytes)
{
    std::lock_guard<std::mutex> g(lock_);
    throwIfFailed();
    GLOO_ENFORCE(comm_ != nullptr, "glucx: rank ", rank, ": connect to rank ", peer,
                 " before its pair was created");
    GLOO_ENFORCE(!connected_, "glucx: rank ", rank, ": connect to rank ", peer,
                 " after the context was connected");
    GLOO_ENFORCE(!bytes.empty(), "glucx: rank ", rank, ": empty address for rank ", peer);
    if (!peerSeen_[static_cast<size_t>(peer)]) {
        peerSeen_[static_cast<size_t>(peer)] = true;
        peersSeen_++;
    }
    peerRecords_[static_cast<size_t>(peer)] = bytes;
    if (peersSeen_ < size - 1)
        return;
    std::vector<const void *> recs(static_cast<size_t>(size), nullptr);
    std::vector<size_t> lens(static_cast<size_t>(size), 0);
    for (int r = 0; r < size; r++) {
        if (r == rank)
            continue;
        recs[static_cast<size_t>(r)] = peerRecords_[static_cast<size_t>(r)].data();
        lens[static_cast<size_t>(r)] = peerRecords_[static_cast<size_t>(r)].size();
    }
    glucx_status_t st = glucx_comm_connect(comm_, recs.data(), lens.data());
    peerRecords_.clear();
    record_.clear();
    if (st != GLUCX_OK) {
        error_ = "glucx: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                 ": cannot connect the context: " + lastError();
        failed_.store(true, std::memory_order_release);
        GLOO_THROW_IO_EXCEPTION(error_);
    }
    connected_ = true;
}

glucx_comm_t *Context::comm()
{
    if (failed_.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> g(lock_);
        throwIfFailed();
    }
    {
        std::lock_guard<std::mutex> g(lock_);
        if (connected_)
            return comm_;
        if (size == 1) {
            /* No pairs, so no rendezvous: connect the one-rank communicator here. */
            prepare();
            const void *self = nullptr;
            size_t len = 0;
            glucx_status_t st = glucx_comm_connect(comm_, &self, &len);
            if (st != GLUCX_OK) {
                error_ = "glucx: rank 0 of 1: cannot connect: " + lastError();
                failed_.store(true, std::memory_order_release);
                GLOO_THROW_IO_EXCEPTION(error_);
            }
            connected_ = true;
            return comm_;
        }
    }
    GLOO_ENFORCE(false, "glucx: rank ", rank, " of ", size,
                 ": the context is not connected yet (connect every pair first, e.g. with "
                 "gloo::rendezvous::Context::connectFullMesh)");
    return nullptr;
}

void Context::throwIfFailed()
{
    if (failed_.load(std::memory_order_acquire))
        GLOO_THROW_IO_EXCEPTION(error_);
}

void Context::recordFailure(const std::string &what)
{
    std::unique_lock<std::mutex> g(lock_);
    if (failed_.load(std::memory_order_relaxed))
        return;
    error_ = what;
    failed_.store(true, std::memory_order_release);
    glucx_comm_t *c = comm_;
    g.unlock();
    /* Peers learn of it (their operations with this rank fail rather than time out). */
    if (c != nullptr)
        glucx_comm_abort(c, what.c_str());
}

void Context::fail(const std::string &what)
{
    recordFailure(what);
    std::lock_guard<std::mutex> g(lock_);
    GLOO_THROW_IO_EXCEPTION(error_);
}

std::unique_ptr<::gloo::transport::UnboundBuffer> Context::createUnboundBuffer(void *ptr,
                                                                               size_t size)
{
    GLOO_ENFORCE(ptr != nullptr || size == 0, "glucx: createUnboundBuffer: NULL pointer with ",
                 size, " bytes");
    return std::make_unique<UnboundBuffer>(shared_from_this(), ptr, size);
}

/* ---- pair -------------------------------------------------------------------------------- */

Pair::Pair(Context *context, int peer, std::vector<char> address)
    : context_(context), peer_(peer), address_(std::move(address))
{
    localRank_ = 0;
}

Pair::~Pair() = default;

void Pair::connect(const std::vector<char> &bytes)
{
    context_->connectPeer(peer_, bytes);
}

void Pair::close()
{
    /* Connections belong to the context's communicator, closed with the context. */
}

void Pair::setSync(bool, bool)
{
    /* Gloo's TCP transport can switch a pair to synchronous busy-polling; glucx's progress
     * engine already spins briefly before it sleeps, so there is nothing to switch. */
}

std::unique_ptr<::gloo::transport::Buffer> Pair::createSendBuffer(int slot, void *ptr, size_t size)
{
    GLOO_ENFORCE(ptr != nullptr || size == 0, "glucx: createSendBuffer for rank ", peer_, " (slot ",
                 slot, "): NULL pointer with ", size, " bytes");
    context_->comm(); /* connected and not failed, or throws */
    return std::make_unique<Buffer>(context_->shared_from_this(), peer_, slot, ptr, size, false);
}

std::unique_ptr<::gloo::transport::Buffer> Pair::createRecvBuffer(int slot, void *ptr, size_t size)
{
    GLOO_ENFORCE(ptr != nullptr || size == 0, "glucx: createRecvBuffer for rank ", peer_, " (slot ",
                 slot, "): NULL pointer with ", size, " bytes");
    return std::make_unique<Buffer>(context_->shared_from_this(), peer_, slot, ptr, size, true);
}

void Pair::send(::gloo::transport::UnboundBuffer *buf, uint64_t tag, size_t offset, size_t nbytes)
{
    GLOO_ENFORCE(buf != nullptr, "glucx: Pair::send to rank ", peer_, ": NULL buffer");
    buf->send(peer_, tag, offset, nbytes);
}

void Pair::recv(::gloo::transport::UnboundBuffer *buf, uint64_t tag, size_t offset, size_t nbytes)
{
    GLOO_ENFORCE(buf != nullptr, "glucx: Pair::recv from rank ", peer_, ": NULL buffer");
    buf->recv(peer_, tag, offset, nbytes);
}

} // namespace gloo
} // namespace glucx
