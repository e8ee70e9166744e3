#include "device.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <torch/csrc/distributed/c10d/GlooDeviceFactory.hpp>

#include <glucx/gloo.h>

namespace glucx
{
namespace torch
{
namespace
{

std::atomic<std::uint64_t> devices_created{0};

// Called by c10d::GlooDeviceFactory with either an interface or a host name (the other empty).
// glucx::gloo::CreateDevice throws Gloo's exceptions (std::runtime_error subclasses): PyTorch
// passes them on, and init_process_group raises them as RuntimeError.
std::shared_ptr<::gloo::transport::Device> CreateUcxDevice(const std::string &interface,
                                                           const std::string &hostname)
{
    glucx::gloo::attr attr;
    attr.iface = interface;
    attr.hostname = hostname;
    auto device = glucx::gloo::CreateDevice(attr);
    devices_created.fetch_add(1, std::memory_order_relaxed);
    return device;
}

} // namespace

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
