// Framework trace events for glucx.torch.instrument(). PLACEHOLDER while issue 4 is in
// progress: replaced by the bindings of glucx/trace.h (see bindings.h).
#include "bindings.h"

namespace glucx
{
namespace torch
{

void BindTrace(pybind11::module_ &) {}

} // namespace torch
} // namespace glucx
