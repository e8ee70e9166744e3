// Framework trace events (glucx/trace.h) for glucx.torch.instrument(): the trace_* functions and
// the Tracer class of glucx._C. Python-facing documentation is in glucx/torch.py.
//
// Every event names the communicator of a Python process-group object through CommFromPython()
// (process_group.cc): a process group of the `glucx` backend gives its communicator, so the
// events carry that group's comm id and this process's rank in it; anything else (a Gloo group,
// None) gives NULL and the events carry comm id 0 and rank -1 (trace/EVENTS.md).
//
// Cost: the module functions look the communicator up on every call (a Python type check);
// Tracer looks it up once. Either way one event is a pybind11 call plus glucx's tracepoint,
// which is one predictable branch when no session records glucx events. None of them releases
// the GIL: they return in well under a microsecond.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <glucx/trace.h>

#include <pybind11/stl.h>

#include "bindings.h"

namespace py = pybind11;

namespace glucx
{
namespace torch
{
namespace
{

// The events of one process group, its communicator looked up once. Holds a reference to the
// Python process-group object so the borrowed communicator stays valid while the Tracer lives.
// glucx_trace_sched_decision with the option and cost lists checked (equal lengths, at most
// 1024 options, kind a decision kind frameworks may emit): ValueError otherwise.
void SchedDecision(glucx_comm_t *comm, int kind, std::int32_t chosen,
                   const std::vector<std::int32_t> &options,
                   const std::vector<std::uint64_t> &costs_ns, const std::string &reason)
{
    if (options.size() != costs_ns.size())
        throw py::value_error("trace_sched_decision: " + std::to_string(options.size()) +
                              " options but " + std::to_string(costs_ns.size()) + " costs");
    if (options.size() > 1024)
        throw py::value_error("trace_sched_decision: " + std::to_string(options.size()) +
                              " options (at most 1024)");
    if (kind < 2 || kind == 4 || kind > 255)
        throw py::value_error(
            "trace_sched_decision: kind " + std::to_string(kind) +
            " is not a framework decision kind (2 order, 3 partition; 0 and 1 are glucx's "
            "own algorithm decisions, 4 its own priority decisions)");
    glucx_trace_sched_decision(comm, kind, chosen, (std::uint32_t)options.size(), options.data(),
                               costs_ns.data(), reason.c_str());
}

class Tracer
{
  public:
    explicit Tracer(py::object process_group)
        : group_(std::move(process_group)), comm_(CommFromPython(group_))
    {
    }

    py::object group() const
    {
        return group_;
    }
    bool has_comm() const
    {
        return comm_ != nullptr;
    }
    void iteration_begin(std::uint64_t iteration) const
    {
        glucx_trace_iteration_begin(comm_, iteration);
    }
    void iteration_end(std::uint64_t iteration) const
    {
        glucx_trace_iteration_end(comm_, iteration);
    }
    void compute_begin(const std::string &phase, std::uint64_t id) const
    {
        glucx_trace_compute_begin(comm_, phase.c_str(), id);
    }
    void compute_end(const std::string &phase, std::uint64_t id) const
    {
        glucx_trace_compute_end(comm_, phase.c_str(), id);
    }
    void bucket_ready(std::uint64_t bucket, std::uint64_t bytes) const
    {
        glucx_trace_bucket_ready(comm_, bucket, bytes);
    }
    void sched_decision(int kind, std::int32_t chosen, const std::vector<std::int32_t> &options,
                        const std::vector<std::uint64_t> &costs_ns, const std::string &reason) const
    {
        SchedDecision(comm_, kind, chosen, options, costs_ns, reason);
    }

  private:
    py::object group_;
    glucx_comm_t *comm_;
};

} // namespace

void BindTrace(py::module_ &m)
{
    m.def(
        "trace_enabled", [] { return glucx_trace_enabled() != 0; },
        "Whether a trace session records glucx events now (glucx_trace_enabled). Thread-safe. "
        "False when the tracing provider is not loaded (e.g. not run under glucx-trace record).");
    m.def(
        "trace_has_comm",
        [](py::handle process_group) { return CommFromPython(process_group) != nullptr; },
        py::arg("process_group"),
        "Whether events of process_group carry its communicator (a `glucx` backend group); "
        "False for other groups and None, whose events carry comm id 0 and rank -1.");
    m.def(
        "trace_iteration_begin",
        [](py::handle process_group, std::uint64_t iteration) {
            glucx_trace_iteration_begin(CommFromPython(process_group), iteration);
        },
        py::arg("process_group"), py::arg("iteration"),
        "Event iteration_begin: training iteration `iteration` (0-based, increasing) starts.");
    m.def(
        "trace_iteration_end",
        [](py::handle process_group, std::uint64_t iteration) {
            glucx_trace_iteration_end(CommFromPython(process_group), iteration);
        },
        py::arg("process_group"), py::arg("iteration"),
        "Event iteration_end: training iteration `iteration` ends.");
    m.def(
        "trace_compute_begin",
        [](py::handle process_group, const std::string &phase, std::uint64_t id) {
            glucx_trace_compute_begin(CommFromPython(process_group), phase.c_str(), id);
        },
        py::arg("process_group"), py::arg("phase"), py::arg("id") = 0,
        "Event compute_begin: phase (str, e.g. 'forward', 'backward', 'optimizer') instance id "
        "(int >= 0, e.g. the bucket for 'backward') starts.");
    m.def(
        "trace_compute_end",
        [](py::handle process_group, const std::string &phase, std::uint64_t id) {
            glucx_trace_compute_end(CommFromPython(process_group), phase.c_str(), id);
        },
        py::arg("process_group"), py::arg("phase"), py::arg("id") = 0,
        "Event compute_end: the phase started by trace_compute_begin with the same phase and id "
        "ends.");
    m.def(
        "trace_bucket_ready",
        [](py::handle process_group, std::uint64_t bucket, std::uint64_t bytes) {
            glucx_trace_bucket_ready(CommFromPython(process_group), bucket, bytes);
        },
        py::arg("process_group"), py::arg("bucket"), py::arg("bytes"),
        "Event bucket_ready: gradient bucket `bucket` (index) of `bytes` bytes is ready for "
        "communication.");
    m.def(
        "trace_sched_decision",
        [](py::handle process_group, int kind, std::int32_t chosen,
           const std::vector<std::int32_t> &options, const std::vector<std::uint64_t> &costs_ns,
           const std::string &reason) {
            SchedDecision(CommFromPython(process_group), kind, chosen, options, costs_ns, reason);
        },
        py::arg("process_group"), py::arg("kind"), py::arg("chosen"), py::arg("options"),
        py::arg("costs_ns"), py::arg("reason") = "",
        "Event sched_decision about the next collective this thread starts on process_group (a "
        "`glucx` group; others record nothing): kind (int, 2 = order), chosen (int option id), "
        "options (list of int ids) and costs_ns (list of int, the predicted cost of each option "
        "in ns, same length), reason (str). Raises ValueError for lists of different lengths, "
        "more than 1024 options or kind 0/1/4 (glucx's own).");

    py::class_<Tracer>(m, "Tracer",
                       "The framework events of one process group, its communicator looked up "
                       "once (the trace_* functions look it up per call). Keeps the group "
                       "object alive. Methods are thread-safe and need the GIL.")
        .def(py::init<py::object>(), py::arg("process_group"))
        .def_property_readonly("process_group", &Tracer::group)
        .def_property_readonly("has_comm", &Tracer::has_comm,
                               "Whether the events carry the group's comm id and rank.")
        .def("iteration_begin", &Tracer::iteration_begin, py::arg("iteration"))
        .def("iteration_end", &Tracer::iteration_end, py::arg("iteration"))
        .def("compute_begin", &Tracer::compute_begin, py::arg("phase"), py::arg("id") = 0)
        .def("compute_end", &Tracer::compute_end, py::arg("phase"), py::arg("id") = 0)
        .def("bucket_ready", &Tracer::bucket_ready, py::arg("bucket"), py::arg("bytes"))
        .def("sched_decision", &Tracer::sched_decision, py::arg("kind"), py::arg("chosen"),
             py::arg("options"), py::arg("costs_ns"), py::arg("reason") = "");
}

} // namespace torch
} // namespace glucx
