// Shared by the autograd op files: recording an op's backward on the active tapes.
#pragma once
#include <utility>

#include "lockstep/autograd/tape.h"

namespace lockstep::detail {

using Grads = std::vector<Tensor>;

// Returns y after recording `backward` on every tape that watches one of `inputs`; the closure is
// only turned into a std::function when some tape records it.
template <typename Backward> Tensor recorded(Tensor y, std::initializer_list<const Tensor*> inputs, Backward&& backward) {
  if (GradientTape::should_record(inputs)) GradientTape::record(inputs, y, std::forward<Backward>(backward));
  return y;
}

}  // namespace lockstep::detail
