// The `glucx` torch.distributed backend. PLACEHOLDER while issue 4 is in progress: replaced by
// the backend's implementation (see bindings.h).
#include "bindings.h"

namespace glucx
{
namespace torch
{

void BindProcessGroup(pybind11::module_ &) {}

glucx_comm_t *CommFromPython(pybind11::handle)
{
    return nullptr;
}

} // namespace torch
} // namespace glucx
