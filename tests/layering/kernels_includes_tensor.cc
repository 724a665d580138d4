// Compiled by the `layering_enforced_by_build` test with the kernels layer's include root: the first
// include must resolve and the second must not, because kernels may not see the tensor layer.
#include "lockstep/kernels/cpu/kernels.h"
#include "lockstep/tensor/tensor.h"
