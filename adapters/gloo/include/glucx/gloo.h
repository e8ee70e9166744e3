/**
 * @file glucx/gloo.h
 * @brief Gloo transport over libglucx: a gloo::transport::Device whose contexts, pairs and
 *        unbound buffers carry every byte through glucx (UCX: shared memory on one host,
 *        TCP/RDMA between hosts).
 *
 * Use it wherever Gloo takes a device:
 *
 *     auto dev = glucx::gloo::CreateDevice();
 *     auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
 *     ctx->connectFullMesh(store, dev);   // Gloo's own rendezvous and store
 *     gloo::allreduce(opts);              // Gloo's algorithms, glucx's transport
 *
 * PyTorch picks it up without code change once the glucx Python package registers it as the
 * Gloo device "UCX" (GLOO_DEVICE_TRANSPORT=UCX).
 *
 * Supported: the unbound-buffer API (everything PyTorch 1.13 and Gloo's function-style
 * collectives use) and the bound-buffer API (Pair::createSendBuffer/createRecvBuffer, used by
 * Gloo's class-template algorithms such as AllreduceRing<T>): a receive buffer is a glucx
 * window, a send buffer puts a copy of the bytes it sends into the peer's window.
 *
 * Pair addresses are this rank's compact address (52 bytes, whatever the interfaces: within
 * gloo::transport::Address::kMaxByteSize, 192, which gloo::rendezvous::ContextFactory relies
 * on): its rank, a digest of its glucx record (UCX worker address, host identity, settings; a
 * few hundred bytes) and the socket address of a UCX listener that serves the record to the
 * peers while the context connects. The listener sits at the device's listen address (the
 * named interface's address, else the host name's; Device::str() says which), which every peer
 * must reach. When UCX_TLS lets no network transport in (UCX's client-server connections need
 * one), the address is the whole record instead: connectFullMesh, which PyTorch uses, carries it,
 * ContextFactory refuses it (gloo::EnforceNotMet from makeContext).
 *
 * gloo::rendezvous::ContextFactory works on this device, whichever device its backing context
 * uses: makeContext() gives working contexts, any number from one factory; on a backing context
 * that failed (a dead peer, a timeout) it throws instead of waiting.
 *
 * Sends are synchronous by default, as with Gloo's TCP transport: waitSend returns once the
 * receiver's matching recv took the message (see SyncSends()).
 *
 * Errors are Gloo's exceptions: gloo::IoException for timeouts, dead peers and transport
 * failures (the message names the operation, sizes and peer; a timeout says Gloo's "Timed out
 * waiting <T>ms for <recv|send> operation to complete" first), gloo::EnforceNotMet for invalid
 * arguments. A timeout or a failure fails the whole context: every later operation on it
 * rethrows the first error promptly.
 *
 * Thread safety: a device, its contexts and their buffers may be used from several threads at
 * once (PyTorch runs collectives on two worker threads plus the caller's).
 */
#ifndef GLUCX_GLOO_H
#define GLUCX_GLOO_H

#include <cstdint>
#include <memory>
#include <string>

#include <gloo/transport/device.h>

/** Exported from libglucx_gloo (built with hidden visibility). */
#define GLUCX_GLOO_API __attribute__((visibility("default")))

namespace glucx
{
namespace gloo
{

/** Where the device sends traffic between hosts (traffic within a host uses shared memory). */
struct GLUCX_GLOO_API attr {
    /** Network interface name, e.g. "eth0" (what GLOO_SOCKET_IFNAME names), or several separated
     *  by commas ("eth0,eth1": all become UCX network devices; empty entries are ignored);
     *  empty: see below. */
    std::string iface;
    /** Host name or address; its interface is used when iface is empty (what PyTorch passes to
     *  the device creator when no interface is named). Empty and iface empty: every interface
     *  UCX finds (or UCX_NET_DEVICES). */
    std::string hostname;
    /** What named iface, quoted in error messages (e.g. "GLOO_SOCKET_IFNAME"); may be empty. */
    std::string source;
};

/**
 * The UCX network devices (a UCX_NET_DEVICES value) for @p a, the one definition of the
 * interface choice that CreateDevice() and the `glucx` torch.distributed backend share:
 * - iface set: each listed interface must exist and hold an IPv4 or IPv6 address; the value is
 *   the list without empty entries and duplicates, in the given order;
 * - else hostname set: the interface holding the address the name resolves to ("lo" for
 *   loopback addresses);
 * - else "": every device UCX finds (or UCX_NET_DEVICES from the environment).
 * @param a    the choice (borrowed for the call).
 * @param net  receives the devices on success; untouched on failure.
 * @return "" on success, else the reason, naming the interface (and a.source) or the host name,
 *         and listing the interfaces of this host that have an address. Never throws (but
 *         std::bad_alloc). Thread-safe.
 */
GLUCX_GLOO_API std::string ChooseNetDevices(const attr &a, std::string *net);

/**
 * Create a device.
 * @param a where inter-host traffic goes (copied).
 * @return a new device (each has its own glucx context).
 * @throws gloo::EnforceNotMet if ChooseNetDevices() refuses @p a (an interface that does not
 *         exist or has no address, a host name that does not resolve to a local interface);
 * gloo::IoException if glucx cannot create its context, or if the libgloo loaded in this process is
 * not the one this shim was built against (the message gives both build ids; rebuild glucx).
 */
GLUCX_GLOO_API std::shared_ptr<::gloo::transport::Device> CreateDevice(const attr &a = attr());

/**
 * The setting GLUCX_SYNC_SEND, one definition for CreateDevice() (read once per device) and the
 * `glucx` torch.distributed backend (read at each group creation): "1" or unset, point-to-point
 * sends are synchronous (a send completes once the receiver's matching receive took it, as with
 * Gloo's TCP transport, so a sender whose peer never receives times out); "0", a send completes
 * as soon as its buffer may be reused (UCX's local completion: small sends complete before the
 * peer posts anything).
 * @return true for "1" or unset, false for "0".
 * @throws gloo::EnforceNotMet naming the variable and the value for anything else. Thread-safe
 *         (reads the environment).
 */
GLUCX_GLOO_API bool SyncSends();

/**
 * Check that the running libgloo is the one this shim was built against (ELF build id).
 * @return an empty string when it is, else the reason it is not. Thread-safe.
 */
GLUCX_GLOO_API std::string CheckGlooBuild();

/**
 * The slot-to-tag mapping (exposed for tests): Gloo slots are 64 bits, glucx tags 48.
 * Slots below 2^47 (p2p tags, Context::nextSlot counters) map to themselves; collective slots
 * built by gloo::Slot (prefix in bits 56-63, tag in 24-55, delta in 0-7, bits 8-23 zero) with a
 * prefix below 128 map to bit 47 | prefix << 40 | tag << 8 | delta. The map is one-to-one.
 * @throws gloo::EnforceNotMet for any other slot (naming it).
 */
GLUCX_GLOO_API std::uint64_t SlotToTag(std::uint64_t slot);

} // namespace gloo
} // namespace glucx

#endif
