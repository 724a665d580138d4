#include "lockstep/keras/mixed_precision.h"

#include <mutex>

#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"
#include "lockstep/kernels/cpu/features.h"

namespace lockstep::keras::mixed_precision {
namespace {

// mixed_bfloat16 is chosen for speed, which it can give only with bfloat16 instructions: without them the policy is kept (its
// numerics are what was asked for) and the user told once per process, so once per worker (BENCHMARKS.md has the
// figures quoted).
void warn_without_bfloat16_instructions() {
  static std::once_flag once;
  std::call_once(once, [] {
    const kernels::cpu::CpuFeatures& cpu = kernels::cpu::cpu_features();
    if (cpu.bfloat16_instructions) return;
    log(LogLevel::warning, "mixed_bfloat16 on a CPU without bfloat16 instructions (oneDNN ISA ", cpu.onednn_isa,
        "; no AVX512_BF16 or AMX-BF16): lockstep widens bfloat16 to float32 to compute, so a step is slower than under "
        "float32 (measured: 0.53x-0.67x its speed on an AMD Zen 3, and on an Intel Xeon with oneDNN held to AVX2 or "
        "AVX512_CORE), with mixed_bfloat16's numerics. Use float32 for speed on this CPU (docs/performance.md)");
  });
}

}  // namespace

DTypePolicy::DTypePolicy(const std::string& name) : name_(name) {
  if (name == "float32") {
    compute_ = DType::float32;
  } else if (name == "mixed_bfloat16") {
    compute_ = DType::bfloat16;
    warn_without_bfloat16_instructions();
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
