// cpu_features(): the CPU as core/cpu.h reports it, and the instruction set oneDNN uses there, which decides whether
// bfloat16 has instructions of its own. ctest runs this file again with oneDNN held to AVX2 (tests/CMakeLists.txt).
#include "lockstep/kernels/cpu/features.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "../cpuinfo.h"
#include "lockstep/kernels/cpu/kernels.h"

namespace lockstep::kernels::cpu {
namespace {

TEST(CpuFeatures, ReportTheCpuThatProcCpuinfoDescribes) {
  const testing::CpuInfo info = testing::read_cpuinfo();
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.vendor, info.fields.at("vendor_id"));
  EXPECT_EQ(f.model_name, info.fields.at("model name"));
  EXPECT_EQ(std::to_string(f.family), info.fields.at("cpu family"));
  EXPECT_EQ(std::to_string(f.model), info.fields.at("model"));
  for (const std::string& flag : f.flags) EXPECT_TRUE(info.flags.contains(flag)) << flag;
  for (const char* flag : {"avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16"})
    EXPECT_EQ(f.has(flag), info.flags.contains(flag)) << flag;
  const std::string line = f.summary();
  EXPECT_EQ(line.rfind("cpu: " + info.fields.at("model name") + ", ", 0), 0u) << line;
  EXPECT_NE(line.find(" family " + info.fields.at("cpu family") + " model " + info.fields.at("model") + " "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("oneDNN ISA " + f.onednn_isa), std::string::npos) << line;
  const nlohmann::json j = f;
  EXPECT_EQ(j.at("flags"), f.flags);
  EXPECT_EQ(j.at("onednn_isa"), f.onednn_isa);
}

// bfloat16 instructions are there exactly when the CPU has AVX512_BF16 (AMX-BF16 comes with it) and oneDNN is
// not held below it; the bfloat16 matmul runs on oneDNN's kernels exactly then (not on its emulation for AVX-512
// without them, which ctest runs this file under too).
TEST(CpuFeatures, Bfloat16InstructionsFollowTheCpuAndOneDnnsIsaLimit) {
  const CpuFeatures& f = cpu_features();
  const char* limit = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!limit) limit = std::getenv("DNNL_MAX_CPU_ISA");
  if (!limit) {
    EXPECT_EQ(f.bfloat16_instructions, f.has("avx512_bf16"));
    EXPECT_EQ(f.onednn_isa == "avx512_core_amx", f.has("amx_bf16"));
  } else if (std::string(limit) == "AVX2" || (std::string(limit) == "AVX512_CORE" && f.has("avx512f"))) {
    std::string isa = limit;
    for (char& c : isa) c = static_cast<char>(std::tolower(c));
    EXPECT_EQ(f.onednn_isa, isa);
    EXPECT_FALSE(f.bfloat16_instructions);
  }
  EXPECT_EQ(has_bfloat16_matmul(), f.bfloat16_instructions);
}

}  // namespace
}  // namespace lockstep::kernels::cpu
