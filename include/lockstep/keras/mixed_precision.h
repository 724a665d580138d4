// Keras' dtype policies (keras.mixed_precision): the dtype a layer computes in and the dtype of its variables.
// "float32" is the default; under "mixed_bfloat16" layers cast their float32 inputs and weights to bfloat16,
// compute and return bfloat16, and keep float32 variables that the optimizer updates; losses are computed in
// float32. A policy is read when a layer is created, so set the global policy before building the model:
//
//   keras::mixed_precision::set_global_policy("mixed_bfloat16");
//   auto model = keras::Sequential({...});
//
// Matmuls (Dense) run on oneDNN's bfloat16 kernels where the CPU has bfloat16 instructions (AVX512_BF16, AMX); every
// other op, and every op on CPUs without them, widens bfloat16 to float32 and rounds its result, which gives Keras'
// numerics but costs a pass over memory each way (docs/performance.md has the speed on each kind of CPU). Making a
// mixed_bfloat16 policy on a CPU without bfloat16 instructions logs one warning per process; the policy stays.
#pragma once
#include <string>

#include "lockstep/core/dtype.h"

namespace lockstep::keras::mixed_precision {

class DTypePolicy {
 public:
  // "float32" or "mixed_bfloat16"; anything else is a ValueError that lists them.
  DTypePolicy(const std::string& name = "float32");  // NOLINT: Keras takes policy names where it takes policies
  DTypePolicy(const char* name) : DTypePolicy(std::string(name)) {}  // NOLINT
  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_; }
  DType variable_dtype() const { return DType::float32; }
  bool operator==(const DTypePolicy& other) const { return name_ == other.name_; }

 private:
  std::string name_;
  DType compute_;
};
using Policy = DTypePolicy;

// The policy layers created from now on take (process-wide, as in Keras).
void set_global_policy(const DTypePolicy& policy);
DTypePolicy global_policy();

}  // namespace lockstep::keras::mixed_precision
