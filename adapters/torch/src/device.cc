#include "device.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/GlooDeviceFactory.hpp>

#include <glucx/gloo.h>

namespace glucx
{
namespace torch
{
namespace
{

std::atomic<std::uint64_t> devices_created{0};

// GLOO_SOCKET_IFNAME as PyTorch 1.13 reads it: set and at least 2 characters long.
const char *InterfaceVariable()
{
    const char *v = std::getenv(kInterfaceVariable);
    return v != nullptr && std::strlen(v) > 1 ? v : nullptr;
}

// Whether @p host resolves to an address a socket can bind to (PyTorch's test before it uses
// the host name for its default Gloo device).
bool ResolvesToUsableAddress(const char *host)
{
    struct addrinfo hints;
    std::memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = nullptr;
    if (getaddrinfo(host, nullptr, &hints, &res) != 0)
        return false;
    bool usable = false;
    for (struct addrinfo *a = res; a != nullptr && !usable; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        usable = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(res);
    return usable;
}

// Called by c10d::GlooDeviceFactory with either an interface or a host name (the other empty).
// glucx::gloo::CreateDevice throws Gloo's exceptions (std::runtime_error subclasses): PyTorch
// passes them on, and init_process_group raises them as RuntimeError.
std::shared_ptr<::gloo::transport::Device> CreateUcxDevice(const std::string &interface,
                                                           const std::string &hostname)
{
    glucx::gloo::attr attr;
    attr.iface = interface;
    attr.hostname = hostname;
    // PyTorch passes an interface from GLOO_SOCKET_IFNAME (one per listed name) or from
    // ProcessGroupGloo.create_device(interface=...).
    attr.source = InterfaceVariable() != nullptr ? kInterfaceVariable
                                                 : "ProcessGroupGloo.create_device(interface)";
    auto device = glucx::gloo::CreateDevice(attr);
    devices_created.fetch_add(1, std::memory_order_relaxed);
    return device;
}

} // namespace

std::string BackendNetDevices()
{
    glucx::gloo::attr attr;
    if (const char *v = InterfaceVariable()) {
        attr.iface = v;
        attr.source = kInterfaceVariable;
    } else {
        char host[HOST_NAME_MAX + 1] = "";
        if (gethostname(host, sizeof(host)) != 0)
            throw std::runtime_error(std::string("glucx: cannot read this host's name (") +
                                     std::strerror(errno) + "); set " + kInterfaceVariable +
                                     " to name the network interface");
        host[HOST_NAME_MAX] = '\0';
        if (ResolvesToUsableAddress(host)) {
            attr.hostname = host;
        } else {
            TORCH_WARN_ONCE("glucx: the host name '", host,
                            "' does not resolve to a usable local address; using the loopback "
                            "interface. Set ",
                            kInterfaceVariable, " to name the network interface.");
            attr.hostname = "127.0.0.1";
        }
    }
    std::string net;
    const std::string refused = glucx::gloo::ChooseNetDevices(attr, &net);
    if (!refused.empty())
        throw std::runtime_error(refused);
    return net;
}

bool RegisterDevice()
{
    // One lock for this copy of the module; imports by other copies are serialized by the GIL.
    static std::mutex lock;
    std::lock_guard<std::mutex> guard(lock);
    auto *registry = c10d::GlooDeviceRegistry();
    if (registry->Has(kDeviceName)) {
        return false;
    }
    registry->Register(kDeviceName, CreateUcxDevice);
    return true;
}

bool DeviceRegistered()
{
    return c10d::GlooDeviceRegistry()->Has(kDeviceName);
}

std::uint64_t DevicesCreated()
{
    return devices_created.load(std::memory_order_relaxed);
}

} // namespace torch
} // namespace glucx
