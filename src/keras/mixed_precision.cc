#include "lockstep/keras/mixed_precision.h"

#include <mutex>

#include "lockstep/core/error.h"

namespace lockstep::keras::mixed_precision {

DTypePolicy::DTypePolicy(const std::string& name) : name_(name) {
  if (name == "float32") {
    compute_ = DType::float32;
  } else if (name == "mixed_bfloat16") {
    compute_ = DType::bfloat16;
  } else {
    // mixed_float16 needs a LossScaleOptimizer against float16's narrow range; bfloat16 has float32's range.
    throw ValueError(make_message("unknown or unsupported dtype policy '", name,
                                  "': lockstep supports 'float32' and 'mixed_bfloat16'"));
  }
}

namespace {
std::mutex g_mutex;
DTypePolicy& global() {
  static DTypePolicy policy;
  return policy;
}
}  // namespace

void set_global_policy(const DTypePolicy& policy) {
  std::lock_guard lock(g_mutex);
  global() = policy;
}

DTypePolicy global_policy() {
  std::lock_guard lock(g_mutex);
  return global();
}

}  // namespace lockstep::keras::mixed_precision
