#include "bindings.h"

namespace lockstep::python {

void bind_keras(nb::module_& /*m*/) {}

}  // namespace lockstep::python
