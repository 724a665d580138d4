// The CPU's identity and features (core/cpu.cc) with the instruction set oneDNN uses on it.
#include "lockstep/kernels/cpu/features.h"

#include <algorithm>
#include <dnnl.hpp>
#include <nlohmann/json.hpp>

#include "lockstep/core/cpu.h"

namespace lockstep::kernels::cpu {
namespace {

// ONEDNN_MAX_CPU_ISA's value for oneDNN 2.6's effective ISA, in lower case.
std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "isa_" + std::to_string(static_cast<int>(isa));
  }
}

CpuFeatures detect() {
  const lockstep::cpu::Identity id = lockstep::cpu::identity();
  CpuFeatures f;
  f.vendor = id.vendor;
  f.model_name = id.model_name;
  f.family = id.family;
  f.model = id.model;
  f.stepping = id.stepping;
  for (int i = 0; i < lockstep::cpu::feature_count(); ++i)
    if (lockstep::cpu::has_feature(i)) f.flags.emplace_back(lockstep::cpu::feature_name(i));
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  f.onednn_isa = isa_name(isa);
  // oneDNN's ISA values are bit sets, each holding those it extends: AMX's holds avx512_core_bf16's bits.
  const auto bf16 = static_cast<int>(dnnl::cpu_isa::avx512_core_bf16);
  f.bfloat16_instructions = (static_cast<int>(isa) & bf16) == bf16;
  return f;
}

}  // namespace

bool CpuFeatures::has(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

std::string CpuFeatures::summary() const {
  std::string s = "cpu: " + model_name + ", " + vendor + " family " + std::to_string(family) + " model " +
                  std::to_string(model) + " stepping " + std::to_string(stepping) + ";";
  const char* separator = " ";
  for (const char* flag : {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}) {
    s += separator + std::string(flag) + (has(flag) ? " yes" : " no");
    separator = ", ";
  }
  return s + "; oneDNN ISA " + onednn_isa + ", bfloat16 instructions " + (bfloat16_instructions ? "yes" : "no");
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

void to_json(nlohmann::json& j, const CpuFeatures& f) {
  j = {{"vendor", f.vendor},         {"model_name", f.model_name},
       {"family", f.family},         {"model", f.model},
       {"stepping", f.stepping},     {"flags", f.flags},
       {"onednn_isa", f.onednn_isa}, {"bfloat16_instructions", f.bfloat16_instructions}};
}

}  // namespace lockstep::kernels::cpu
