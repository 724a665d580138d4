// The CPU as the lockstep binary reports it (--version, the metrics file), its refusal of a CPU below the build's
// baseline, and mixed_bfloat16 on a CPU without bfloat16 instructions (oneDNN held to AVX2, as on an AMD Zen 3).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../cpuinfo.h"
#include "cli_util.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

TEST(CpuCli, VersionNamesTheCpuAndOneDnnsIsa) {
  const CpuInfo info = read_cpuinfo();
  Result r = run_lockstep("--version");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> cpu = lines_after(r.out, "cpu: ");
  ASSERT_EQ(cpu.size(), 1u) << r.out;
  EXPECT_EQ(cpu[0].rfind(info.fields.at("model name") + ", " + info.fields.at("vendor_id") + " family " +
                             info.fields.at("cpu family") + " model " + info.fields.at("model") + " ",
                         0),
            0u)
      << cpu[0];
  EXPECT_NE(cpu[0].find(std::string("avx2 ") + (info.flags.contains("avx2") ? "yes" : "no")), std::string::npos);
  EXPECT_NE(cpu[0].find(std::string("avx512_bf16 ") + (info.flags.contains("avx512_bf16") ? "yes" : "no")),
            std::string::npos);
  EXPECT_NE(cpu[0].find("; oneDNN ISA "), std::string::npos) << cpu[0];
}

// Told that the CPU lacks AVX2, the binary stops before anything else runs, whatever the command.
TEST(CpuCli, ACpuWithoutAvx2IsRefusedInOneLineWithExitCode2) {
  for (const char* args : {"--version", "train --epochs 1", "bench step --steps 1"}) {
    Result r = run_lockstep(args, "LOCKSTEP_CPU_PRETEND_MISSING=avx2", 60);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(count_lines(r.err), 1u) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("lockstep: error: this CPU lacks the instructions avx2 ", 0), 0u) << args << ": " << r.err;
    EXPECT_NE(r.err.find("x86-64-v3"), std::string::npos) << r.err;
  }
}

class CpuCliTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = temp_dir("cpu_idx");
    write_idx_dataset(data_, 160, 48);
  }
  void TearDown() override { std::filesystem::remove_all(data_); }
  // Two local workers, oneDNN held to `isa` (empty: not held).
  Result train(const std::string& policy, const std::string& isa) {
    const std::string env = isa.empty() ? "" : "ONEDNN_MAX_CPU_ISA=" + isa;
    const std::string args = " --epochs 4 --batch-size 16 --threads 1 --verbose 0 --optimizer adam --learning-rate 0.003";
    return run_lockstep("train --workers 2 --dataset " + data_.string() + args + " --dtype-policy " + policy +
                            " --metrics-out " + metrics(policy),
                        env, 120);
  }
  std::string metrics(const std::string& policy) const { return (data_ / (policy + ".json")).string(); }
  std::filesystem::path data_;
};

TEST_F(CpuCliTrain, MetricsFileRecordsTheCpu) {
  ASSERT_EQ(train("float32", "").code, 0);
  const CpuInfo info = read_cpuinfo();
  const json cpu = json::parse(read_all(metrics("float32"))).at("cpu");
  EXPECT_EQ(cpu.at("model_name"), info.fields.at("model name"));
  EXPECT_EQ(std::to_string(cpu.at("family").get<int>()), info.fields.at("cpu family"));
  EXPECT_EQ(std::to_string(cpu.at("model").get<int>()), info.fields.at("model"));
  for (const json& flag : cpu.at("flags")) EXPECT_TRUE(info.flags.contains(flag.get<std::string>())) << flag;
  EXPECT_EQ(cpu.at("bfloat16_instructions").get<bool>(), info.flags.contains("avx512_bf16"));
}

// Without bfloat16 instructions each worker says so once, and the policy stays what was asked: mixed_bfloat16's
// training follows float32's within the tolerance of tests/keras/mixed_precision_test.cc.
TEST_F(CpuCliTrain, MixedBfloat16WithoutBfloat16InstructionsWarnsOncePerWorkerAndStillTrains) {
  const Result mixed = train("mixed_bfloat16", "AVX2");
  ASSERT_EQ(mixed.code, 0) << mixed.err;
  const std::string warning = "mixed_bfloat16 on a CPU without bfloat16 instructions (oneDNN ISA avx2;";
  for (const char* worker : {"[worker 0] W ", "[worker 1] W "}) {
    int count = 0;
    for (const std::string& line : lines_after(mixed.err, worker)) count += line.find(warning) != std::string::npos;
    EXPECT_EQ(count, 1) << worker << "\n" << mixed.err;
  }
  const Result f32 = train("float32", "AVX2");
  ASSERT_EQ(f32.code, 0) << f32.err;
  EXPECT_EQ(f32.err.find(warning), std::string::npos) << f32.err;
  const json m = json::parse(read_all(metrics("mixed_bfloat16"))), f = json::parse(read_all(metrics("float32")));
  EXPECT_EQ(m.at("cpu").at("onednn_isa"), "avx2");
  EXPECT_GE(m.at("test_accuracy").get<double>(), 0.9);
  ASSERT_EQ(m.at("epochs").size(), f.at("epochs").size());
  for (size_t e = 0; e < f.at("epochs").size(); ++e) {
    const double want = f["epochs"][e]["loss"], got = m["epochs"][e]["loss"];
    EXPECT_NEAR(got, want, 0.05 + 0.1 * want) << "epoch " << e;
  }
  EXPECT_NE(m.at("weights_sha256"), f.at("weights_sha256"));  // bfloat16 arithmetic, as asked
}

// On a CPU with them (and oneDNN free to use them) there is nothing to warn about.
TEST_F(CpuCliTrain, MixedBfloat16WithBfloat16InstructionsSaysNothing) {
  if (!read_cpuinfo().flags.contains("avx512_bf16")) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  const Result mixed = train("mixed_bfloat16", "");
  ASSERT_EQ(mixed.code, 0) << mixed.err;
  EXPECT_EQ(mixed.err.find("without bfloat16 instructions"), std::string::npos) << mixed.err;
}

}  // namespace
}  // namespace lockstep::testing
