/*
 * Internal classes of the Gloo shim. Every byte goes through libglucx: a Gloo transport context
 * is one glucx communicator, a pair is that communicator's view of one peer, an unbound buffer
 * posts glucx point-to-point operations and counts their completions, a bound buffer is a glucx
 * window (receive side) or posts glucx puts into the peer's window (send side). The shim itself
 * keeps only the bookkeeping Gloo's interface asks for (completion counts, abort flags, the
 * first error).
 */
#ifndef GLUCX_GLOO_SHIM_H
#define GLUCX_GLOO_SHIM_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/transport/address.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/unbound_buffer.h>

#include <glucx/glucx.h>
#include <glucx/gloo.h>

namespace glucx
{
namespace gloo
{

class Context;

/** Owns the glucx context (one per device). */
class Device final : public ::gloo::transport::Device, public std::enable_shared_from_this<Device>
{
  public:
    /** @p listenAddress: numeric address of this host where each communicator's listener serves
     *  its record to the peers that got its compact address (ChooseListenAddress()).
     *  @p syncSends: unbound sends complete once the receiver matched them (SyncSends()). */
    Device(glucx_context_t *ctx, std::string netDevices, std::string listenAddress, bool syncSends);
    ~Device() override;

    std::string str() const override;
    const std::string &getPCIBusID() const override;
    std::shared_ptr<::gloo::transport::Context> createContext(int rank, int size) override;

    glucx_context_t *glucxContext() const
    {
        return ctx_;
    }

    const std::string &listenAddress() const
    {
        return listenAddress_;
    }
    /** Unbound sends complete once the receiver matched them (GLUCX_SYNC_SEND, default 1). */
    bool syncSends() const
    {
        return syncSends_;
    }

  private:
    glucx_context_t *ctx_;
    std::string netDevices_;
    std::string listenAddress_;
    bool syncSends_;
    std::string busId_;
};

/**
 * The numeric address where this host's listeners serve address records, for the device that
 * @p a describes (the interface choice of ChooseNetDevices(), which must have accepted @p a):
 * - iface set: the first listed interface's first IPv4 address, else its first IPv6 one (a
 *   link-local one as "fe80::...%iface");
 * - else hostname set: the local address it resolves to;
 * - else the address this host's name resolves to when that is a local, non-loopback one, else
 *   the first non-loopback address of an interface that is up, else 127.0.0.1.
 * @param out receives the address on success; untouched on failure.
 * @return "" on success, else the reason. Never throws (but std::bad_alloc). Thread-safe.
 */
std::string ChooseListenAddress(const attr &a, std::string *out);

/**
 * This rank's address, the same for every pair of a context: its compact address
 * (glucx_comm_compact_address(), GLUCX_COMPACT_ADDRESS_BYTES), or, when UCX has no network
 * transport for the listener (UCX_TLS=shm,self), its whole record.
 */
class Address final : public ::gloo::transport::Address
{
  public:
    explicit Address(std::vector<char> bytes) : bytes_(std::move(bytes))
    {
    }
    std::string str() const override;
    std::vector<char> bytes() const override
    {
        return bytes_;
    }

  private:
    std::vector<char> bytes_;
};

class Pair final : public ::gloo::transport::Pair
{
  public:
    Pair(Context *context, int peer, std::vector<char> address);
    ~Pair() override;

    const ::gloo::transport::Address &address() const override
    {
        return address_;
    }
    void connect(const std::vector<char> &bytes) override;
    void close() override;
    void setSync(bool enable, bool busyPoll) override;
    std::unique_ptr<::gloo::transport::Buffer> createSendBuffer(int slot, void *ptr,
                                                                size_t size) override;
    std::unique_ptr<::gloo::transport::Buffer> createRecvBuffer(int slot, void *ptr,
                                                                size_t size) override;
    void send(::gloo::transport::UnboundBuffer *buf, uint64_t tag, size_t offset,
              size_t nbytes) override;
    void recv(::gloo::transport::UnboundBuffer *buf, uint64_t tag, size_t offset,
              size_t nbytes) override;

  private:
    Context *context_; /* the context owns its pairs */
    int peer_;
    Address address_;
};

/** One glucx communicator. Pairs are created and connected by Gloo's rendezvous. */
class Context final : public ::gloo::transport::Context,
                      public std::enable_shared_from_this<Context>
{
  public:
    Context(std::shared_ptr<Device> device, int rank, int size);
    ~Context() override;

    std::unique_ptr<::gloo::transport::Pair> &createPair(int rank) override;
    std::unique_ptr<::gloo::transport::UnboundBuffer> createUnboundBuffer(void *ptr,
                                                                          size_t size) override;

    /** Pair::connect: record @p peer's address; the last one connects the communicator. */
    void connectPeer(int peer, const std::vector<char> &bytes);

    /** The connected communicator, or throws (not connected, or failed earlier). */
    glucx_comm_t *comm();

    /** Throw the context's first error if it failed. */
    void throwIfFailed();

    /**
     * Fail the context with @p what (the first failure wins; glucx tells the peers), then throw
     * gloo::IoException with the first failure's text.
     */
    [[noreturn]] void fail(const std::string &what);

    /** fail() without the throw, for destructors. */
    void recordFailure(const std::string &what);

    std::chrono::milliseconds timeout() const
    {
        return getTimeout();
    }

    /** glucx_isend_flags() flags of this context's unbound sends. */
    unsigned sendFlags() const
    {
        return device_->syncSends() ? static_cast<unsigned>(GLUCX_SEND_SYNC) : 0u;
    }

  private:
    void prepare();

    std::shared_ptr<Device> device_;
    std::mutex lock_; /* guards the fields below (Gloo's own mutex_ guards pairs_) */
    glucx_comm_t *comm_ = nullptr;
    bool connected_ = false;
    std::vector<char> record_;
    std::vector<std::vector<char>> peerRecords_;
    std::vector<bool> peerSeen_;
    int peersSeen_ = 0;
    std::atomic<bool> failed_{false};
    std::string error_;
};

class UnboundBuffer final : public ::gloo::transport::UnboundBuffer
{
  public:
    UnboundBuffer(std::shared_ptr<Context> context, void *ptr, size_t size);
    ~UnboundBuffer() override;

    bool waitRecv(int *rank, std::chrono::milliseconds timeout) override;
    bool waitSend(int *rank, std::chrono::milliseconds timeout) override;
    void abortWaitRecv() override;
    void abortWaitSend() override;
    void send(int dstRank, uint64_t slot, size_t offset, size_t nbytes) override;
    void recv(int srcRank, uint64_t slot, size_t offset, size_t nbytes) override;
    void recv(std::vector<int> srcRanks, uint64_t slot, size_t offset, size_t nbytes) override;

  private:
    struct Op {
        glucx_request_t *req;
        bool isRecv;
        int peer; /* -1: any of a set */
        size_t nbytes;
        uint64_t slot;
    };

    size_t checkRange(const char *op, size_t offset, size_t nbytes) const;
    char *at(size_t offset, size_t nbytes) const;
    unsigned wakeCount();
    void post(Op op);
    bool wait(bool isRecv, int *rank, std::chrono::milliseconds timeout);
    void abortWait(bool isRecv);
    /* Move completed operations of one direction to its done list; throws on a failed one.
     * m_ held. Each direction is harvested only by its own waiters, so a request another
     * thread passed to glucx_request_wait_any() is never freed under it. */
    void harvestLocked(bool isRecv);
    std::string describe(const Op &op) const;
    /* The exception text of a wait that timed out (Gloo's sentence, then glucx's detail). m_
     * held. */
    std::string timedOut(bool isRecv, std::chrono::milliseconds timeout) const;

    std::shared_ptr<Context> context_;
    std::mutex m_;
    std::condition_variable cv_;
    std::vector<Op> pending_;
    std::deque<int> recvDone_, sendDone_;
    bool abortRecv_ = false, abortSend_ = false;
    /* per direction, one thread at a time blocks in glucx for this buffer */
    bool drivingRecv_ = false, drivingSend_ = false;
};

/**
 * A bound buffer (Pair::createSendBuffer / createRecvBuffer): @p size bytes at @p ptr (borrowed
 * until the buffer is destroyed) for one peer and one slot.
 *
 * A receive buffer is a glucx window for (peer, slot) (glucx_window_create): the peer's puts
 * are placed into it by whichever thread drives the communicator (also before waitRecv is
 * called), and each waitRecv consumes one placed message. A send buffer's send(offset, length,
 * roffset) copies bytes [offset, offset + length) and posts one glucx_iput of the copy into
 * the peer's window at roffset; each waitSend consumes one completed put. The copy is taken at
 * send(), as Gloo's TCP transport writes a message into its socket at send(): Gloo's
 * algorithms rely on it (ReduceScatterHalvingDoubling rewrites a buffer it sent from without
 * waiting for the send). Either kind may send (as in Gloo); only a receive buffer may waitRecv.
 *
 * Errors: argument errors (a range outside the buffer, a second receive buffer for one peer
 * and slot, waitSend with no send posted, waitRecv on a send buffer) throw
 * gloo::EnforceNotMet and leave the context usable. Every other error, and a wait past the
 * context's timeout, fails the context (Context::fail): gloo::IoException naming the
 * operation, sizes, slot and peer, rethrown by every later call on the context.
 * Destruction never lets glucx touch the memory afterwards: a receive buffer waits for a
 * message being placed (glucx_window_destroy), a send buffer's puts read only their copies,
 * which it frees once the puts are complete (it waits for them up to the context's timeout,
 * after which the context fails); neither throws.
 *
 * Threads: as unbound buffers. send, waitSend and waitRecv may be called from several threads
 * at once; one thread at a time waits in glucx for a send buffer's puts (others sleep on its
 * condition variable), and any number may wait on a receive buffer's window. Destruction must
 * not overlap another call on the same buffer.
 */
class Buffer final : public ::gloo::transport::Buffer
{
  public:
    Buffer(std::shared_ptr<Context> context, int peer, int slot, void *ptr, size_t size,
           bool isRecv);
    ~Buffer() override;

    void send(size_t offset, size_t length, size_t roffset) override;
    void waitRecv() override;
    void waitSend() override;

  private:
    struct Put {
        glucx_request_t *req;
        size_t offset, length, roffset;
        std::vector<char> staged; /* the bytes, copied at send() */
    };

    /* "the bound send buffer (slot 3, 400 bytes) to rank 1 (rank 0 of 2)" */
    std::string describe() const;
    std::string describe(const Put &put) const;
    /* Count the completed puts and free them; throws on a failed one. m_ held, and no thread
     * waiting in glucx on pending_ (driving_ false): it would wait on freed requests. */
    void harvestLocked();

    std::shared_ptr<Context> context_;
    const int peer_;
    const bool isRecv_;
    glucx_window_t *window_ = nullptr; /* receive buffers */
    std::mutex m_;                     /* guards the fields below */
    std::condition_variable cv_;
    std::vector<Put> pending_;
    std::vector<std::vector<char>> spare_; /* staging memory of completed puts, for reuse */
    size_t sendsDone_ = 0;
    bool driving_ = false; /* a thread waits in glucx for pending_ */
};

/** The glucx window slot of a bound buffer's Gloo slot (one-to-one). */
inline std::uint64_t BoundSlot(int slot)
{
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(slot));
}

/** Text of the thread's last glucx error. */
std::string lastError();

} // namespace gloo
} // namespace glucx

#endif
