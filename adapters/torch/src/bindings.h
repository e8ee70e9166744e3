/**
 * @file bindings.h
 * @brief The parts of glucx._C, one function per source file, and the one link between them.
 *
 * module.cc defines the module and calls each Bind* function once.
 *  - device.cc          the Gloo device "UCX" (device.h)
 *  - process_group.cc   the `glucx` torch.distributed backend: glucx._C.ProcessGroupGlucx and its
 *                       creator (PyTorch 1.13's c10d::ProcessGroup on libglucx collectives)
 *  - trace_bindings.cc  framework trace events (glucx/trace.h) for glucx.torch.instrument() and
 *                       the schedule decisions of glucx.torch.ScheduledDataParallel
 */
#ifndef GLUCX_TORCH_BINDINGS_H
#define GLUCX_TORCH_BINDINGS_H

#include <pybind11/pybind11.h>

#include <glucx/glucx.h>

namespace glucx
{
namespace torch
{

/** Add the backend's classes and creator to @p m (process_group.cc). */
void BindProcessGroup(pybind11::module_ &m);

/**
 * The libglucx communicator behind a Python process-group object (process_group.cc).
 * @param process_group any Python object (a torch.distributed ProcessGroup, None, ...).
 * @return the communicator if @p process_group is a process group of the `glucx` backend,
 *         else nullptr (Gloo process groups, None, other objects). Borrowed: valid while the
 *         process group lives. Thread-safe; needs the GIL (it inspects a Python object).
 */
glucx_comm_t *CommFromPython(pybind11::handle process_group);

/** Add the trace_* functions (glucx/trace.h) to @p m (trace_bindings.cc). */
void BindTrace(pybind11::module_ &m);

} // namespace torch
} // namespace glucx

#endif
