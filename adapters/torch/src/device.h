/**
 * @file device.h
 * @brief The Gloo device "UCX" in PyTorch: registration of glucx's Gloo transport
 *        (glucx::gloo::CreateDevice) in PyTorch's Gloo device registry.
 *
 * PyTorch 1.13 creates every Gloo device through c10d::GlooDeviceFactory, which looks the
 * transport up in c10d::GlooDeviceRegistry() under the name in GLOO_DEVICE_TRANSPORT (read once,
 * at the first device creation; unset: "LINUX", i.e. Gloo's TCP transport). Once RegisterDevice()
 * has run, GLOO_DEVICE_TRANSPORT=UCX makes init_process_group("gloo") run on glucx. PyTorch passes
 * either an interface (GLOO_SOCKET_IFNAME set) or a host name (this machine's, or 127.0.0.1),
 * never both; they become glucx::gloo::attr{iface, hostname}.
 */
#ifndef GLUCX_TORCH_DEVICE_H
#define GLUCX_TORCH_DEVICE_H

#include <cstdint>
#include <string>

namespace glucx
{
namespace torch
{

/** The registry key, the value GLOO_DEVICE_TRANSPORT takes to select glucx. */
inline constexpr const char *kDeviceName = "UCX";

/**
 * Register the creator of glucx's Gloo device under kDeviceName, unless the registry already has
 * that name. PyTorch's registry ends the process (exit status 1) when a name is registered twice,
 * so this checks first: importing the module twice, or two copies of it, is harmless.
 * @return true if this call registered it; false if the name was already registered (by an
 *         earlier call or by another copy of this module; that registration stays).
 * Thread-safe.
 */
bool RegisterDevice();

/** The variable that names the network interfaces, as in PyTorch's ProcessGroupGloo. */
inline constexpr const char *kInterfaceVariable = "GLOO_SOCKET_IFNAME";

/**
 * The UCX network devices of a `glucx` backend group, chosen as PyTorch 1.13's
 * ProcessGroupGloo chooses its Gloo devices, then mapped by glucx::gloo::ChooseNetDevices() (the
 * definition the Gloo device "UCX" uses too):
 * - GLOO_SOCKET_IFNAME set (PyTorch reads it only when it has 2 characters or more): its
 *   comma-separated interfaces, all of them. PyTorch's Gloo makes one device per interface and
 *   spreads its operations over them; a glucx group has one UCX context, so the interfaces all
 *   become its UCX network devices (UCX then picks and stripes over them per peer).
 * - else this host's name, when it resolves to an address a socket can bind to, else 127.0.0.1
 *   (with PyTorch's warning): the interface that holds that address.
 * Reads the environment at each call.
 * @return the UCX_NET_DEVICES value ("lo", "eth0,eth1"; never empty).
 * @throws std::runtime_error naming the interface and GLOO_SOCKET_IFNAME (or the host name) when
 *         an interface does not exist or has no address. Thread-safe.
 */
std::string BackendNetDevices();

/** Whether PyTorch's Gloo device registry has kDeviceName. Thread-safe. */
bool DeviceRegistered();

/** How many devices the creator registered by this module made successfully. Thread-safe. */
std::uint64_t DevicesCreated();

} // namespace torch
} // namespace glucx

#endif
