#include "bindings.h"

namespace lockstep::python {

void bind_train(nb::module_& /*m*/) {}

}  // namespace lockstep::python
