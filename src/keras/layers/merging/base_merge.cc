// The merging layers' refusal of a single input.
#include "lockstep/keras/layers/merging/base_merge.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

Shape Merge::compute_output_shape(const Shape&) const {
  throw ValueError(make_message(class_name(), " layer \"", name(), "\" needs a list of at least 2 inputs, got one"));
}
Tensor Merge::call(const Tensor&, bool) {
  throw ValueError(make_message(class_name(), " layer \"", name(), "\" needs a list of at least 2 inputs, got one"));
}

}  // namespace lockstep::keras::layers
