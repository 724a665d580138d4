#include "bindings.h"

namespace lockstep::python {

void bind_data(nb::module_& /*m*/) {}

}  // namespace lockstep::python
