/*
 * Internal classes of the Gloo shim. Every byte goes through libglucx: a Gloo transport context
 * is one glucx communicator, a pair is that communicator's view of one peer, an unbound buffer
 * posts glucx point-to-point operations and counts their completions. The shim itself keeps only
 * the bookkeeping Gloo's interface asks for (completion counts, abort flags, the first error).
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
    Device(glucx_context_t *ctx, std::string netDevices, bool syncSends);
    ~Device() override;

    std::string str() const override;
    const std::string &getPCIBusID() const override;
    std::shared_ptr<::gloo::transport::Context> createContext(int rank, int size) override;

    glucx_context_t *glucxContext() const
    {
        return ctx_;
    }

    /** Unbound sends complete once the receiver matched them (GLUCX_SYNC_SEND, default 1). */
    bool syncSends() const
    {
        return syncSends_;
    }

  private:
    glucx_context_t *ctx_;
    std::string netDevices_;
    bool syncSends_;
    std::string busId_;
};

/** This rank's glucx address record, the same for every pair of a context. */
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

/** Text of the thread's last glucx error. */
std::string lastError();

} // namespace gloo
} // namespace glucx

#endif
