// What the CPU kernels run on: the CPU (lockstep/core/cpu.h) and the instruction set oneDNN uses on it, which decides
// among other things whether bfloat16 is computed by bfloat16 instructions or by widening to float32. One
// detection for the CLI's headers, the metrics file, bench/compare.sh and the mixed_bfloat16 warning.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace lockstep::kernels::cpu {

struct CpuFeatures {
  std::string vendor;                       // CPUID's: "GenuineIntel", "AuthenticAMD"
  std::string model_name;                   // /proc/cpuinfo's "model name"
  int family = 0, model = 0, stepping = 0;  // numbered as /proc/cpuinfo numbers them
  std::vector<std::string> flags;           // the features lockstep knows that this CPU offers, /proc/cpuinfo's names
  // oneDNN's effective ISA, in the lower case of ONEDNN_MAX_CPU_ISA's values ("avx2", "avx512_core_bf16",
  // "avx512_core_amx"): the best the CPU has, or less when ONEDNN_MAX_CPU_ISA (DNNL_MAX_CPU_ISA) holds oneDNN lower.
  std::string onednn_isa;
  // Whether oneDNN may use bfloat16 instructions (AVX512_BF16, AMX-BF16): without them mixed_bfloat16 gains nothing.
  bool bfloat16_instructions = false;

  bool has(const std::string& flag) const;
  // One line for headers: "cpu: <model name>, <vendor> family F model M stepping S; avx2 yes, avx512f yes,
  // avx512_bf16 yes, amx_bf16 yes; oneDNN ISA avx512_core_amx, bfloat16 instructions yes".
  std::string summary() const;
};

// This process's CPU, detected on the first call.
const CpuFeatures& cpu_features();

// {"vendor", "model_name", "family", "model", "stepping", "flags", "onednn_isa", "bfloat16_instructions"}.
void to_json(nlohmann::json& j, const CpuFeatures& f);

}  // namespace lockstep::kernels::cpu
