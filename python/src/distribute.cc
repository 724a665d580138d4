#include "bindings.h"

namespace lockstep::python {

void bind_distribute(nb::module_& /*m*/) {}

}  // namespace lockstep::python
