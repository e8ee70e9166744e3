// glucx._C: importing it registers the Gloo device "UCX" (device.h); it also reads libglucx's
// process-wide counters. Python-facing documentation is in glucx/__init__.py.
#include <pybind11/pybind11.h>

#include <glucx/glucx.h>
#include <glucx/gloo.h>

#include "bindings.h"
#include "device.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m)
{
    m.doc() = "glucx's PyTorch extension: the Gloo device \"UCX\" and libglucx's counters";
    m.attr("DEVICE_NAME") = glucx::torch::kDeviceName;
    // Registered at import: a job that only imports torch.distributed (the start-up hook then
    // imports this module) finds the device when it creates its first process group.
    m.attr("registered_at_import") = glucx::torch::RegisterDevice();

    m.def(
        "stats",
        [] {
            glucx_stats_t s{};
            glucx_stats_get(&s);
            py::dict d;
            d["sends"] = s.sends;
            d["send_bytes"] = s.send_bytes;
            d["recvs"] = s.recvs;
            d["recv_bytes"] = s.recv_bytes;
            d["collectives"] = s.collectives;
            d["comms"] = s.comms;
            return d;
        },
        "libglucx's process-wide counters (glucx_stats_get) as a dict of ints.");
    m.def(
        "version", [] { return std::string(glucx_version()); },
        "Version of the libglucx that is loaded, \"MAJOR.MINOR.PATCH\".");
    m.def(
        "fork_check",
        [] { return std::string(glucx_fork_check() == GLUCX_OK ? "" : glucx_last_error()); },
        "\"\" if this process may use glucx, else why not (it was forked while glucx contexts "
        "existed: glucx_fork_check).");
    m.def("gloo_build_check", &glucx::gloo::CheckGlooBuild,
          "\"\" if the loaded libgloo is the one the shim was built against, else the reason.");
    m.def("register_device", &glucx::torch::RegisterDevice,
          "Register the Gloo device \"UCX\" if it is not yet; True if this call did.");
    m.def("device_registered", &glucx::torch::DeviceRegistered,
          "Whether PyTorch's Gloo device registry has \"UCX\".");
    m.def("devices_created", &glucx::torch::DevicesCreated,
          "How many Gloo devices this module's creator has made in this process.");
    glucx::torch::BindProcessGroup(m);
    glucx::torch::BindTrace(m);
}
