// CPUID's identity and features against /proc/cpuinfo, and the check that refuses a CPU below the build's baseline.
#include "lockstep/core/cpu.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "../cpuinfo.h"

namespace lockstep::cpu {
namespace {

TEST(Cpu, IdentityIsWhatProcCpuinfoSays) {
  const testing::CpuInfo info = testing::read_cpuinfo();
  const Identity id = identity();
  EXPECT_EQ(id.vendor, info.fields.at("vendor_id"));
  EXPECT_EQ(id.model_name, info.fields.at("model name"));
  EXPECT_EQ(std::to_string(id.family), info.fields.at("cpu family"));
  EXPECT_EQ(std::to_string(id.model), info.fields.at("model"));
  EXPECT_EQ(std::to_string(id.stepping), info.fields.at("stepping"));
}

TEST(Cpu, EveryKnownFeatureIsPresentExactlyWhenProcCpuinfoListsIt) {
  const testing::CpuInfo info = testing::read_cpuinfo();
  ASSERT_GT(feature_count(), 30);
  for (int i = 0; i < feature_count(); ++i)
    EXPECT_EQ(has_feature(i), info.flags.contains(feature_name(i))) << feature_name(i);
}

class CpuBaseline : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("LOCKSTEP_CPU_PRETEND_MISSING"); }
};

// The machine that runs the tests runs the code built for it.
TEST_F(CpuBaseline, ThisCpuPasses) { EXPECT_EQ(lockstep_cpu_baseline_error(), nullptr); }

TEST_F(CpuBaseline, RefusesWhenToldTheCpuLacksAvx2AndNamesWhatToDo) {
  setenv("LOCKSTEP_CPU_PRETEND_MISSING", "popcnt, avx2", 1);
  const char* error = lockstep_cpu_baseline_error();
  ASSERT_NE(error, nullptr);
  const std::string e = error;
  EXPECT_NE(e.find("this CPU lacks the instructions popcnt, avx2 "), std::string::npos) << e;
  EXPECT_NE(e.find("LOCKSTEP_NATIVE"), std::string::npos) << e;
}

// The override names features as missing; it never makes a feature the build does not use matter.
TEST_F(CpuBaseline, PretendingAFeatureTheBuildDoesNotUseIsMissingChangesNothing) {
  setenv("LOCKSTEP_CPU_PRETEND_MISSING", "no_such_feature,avx2x", 1);
  EXPECT_EQ(lockstep_cpu_baseline_error(), nullptr);
}

}  // namespace
}  // namespace lockstep::cpu
