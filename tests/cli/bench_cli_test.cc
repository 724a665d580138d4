// `lockstep bench step` and `lockstep bench allreduce`: the output formats bench/compare.sh parses, one report per
// cluster under `lockstep launch`, and one-line errors with exit code 2 for bad flags. No timings are checked.
#include <gtest/gtest.h>

#include <regex>

#include "cli_util.h"

namespace lockstep::testing {
namespace {

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

const std::regex kMsPerStep(R"([0-9]+\.[0-9]+ ms/step)");
const std::regex kAllreduceLine(
    R"(lockstep ring +[0-9]+ MiB +[0-9]+\.[0-9]+ ms  algbw +[0-9]+\.[0-9]+ GB/s  busbw +[0-9]+\.[0-9]+ GB/s)");

TEST(BenchCli, StepEndsWithMsPerStepAndReportsThreadsAndFlops) {
  Result r = run_lockstep("bench step --steps 3 --warmup 1 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(last_line(r.out), kMsPerStep)) << r.out;
  EXPECT_EQ(lines_after(r.out, "threads 1 per worker").size(), 1u) << r.out;
  EXPECT_EQ(lines_after(r.out, "start-up: first step done").size(), 1u) << r.out;
  EXPECT_EQ(lines_after(r.out, "cpu: ").size(), 1u) << r.out;  // what the figures were measured on
  // The tutorial CNN: 64 x 3 x 2 x (26*26*32*9 + 21632*128 + 128*10) multiply-adds.
  EXPECT_EQ(lines_after(r.out, "FLOPs per step 1.139e+09 per replica").size(), 1u) << r.out;
}

TEST(BenchCli, StepRunsFashionCnnAdamBackupsAndFashionMnist) {
  for (const char* args : {"--model fashion_cnn --optimizer adam", "--backup-every 2", "--backup-every 2 --backup-sync",
                           "--dataset fashion_mnist"}) {
    Result r = run_lockstep(std::string("bench step --steps 3 --warmup 1 ") + args);
    ASSERT_EQ(r.code, 0) << args << ": " << r.err;
    EXPECT_TRUE(std::regex_match(last_line(r.out), kMsPerStep)) << args << ": " << r.out;
  }
}

// MirroredStrategy's replica threads start OpenMP teams of the default size (all cores), whatever --threads says
// on the main thread: the kernels must be safe with several threads in several replicas at once.
TEST(BenchCli, StepRunsMirroredReplicasWithManyOpenMpThreads) {
  for (const char* env : {"OMP_NUM_THREADS=1", "OMP_NUM_THREADS=2"}) {
    Result r = run_lockstep("bench step --steps 3 --warmup 1 --replicas 2 --batch-size 16 --threads 2", env);
    ASSERT_EQ(r.code, 0) << env << ": " << r.err;
    EXPECT_TRUE(std::regex_match(last_line(r.out), kMsPerStep)) << env << ": " << r.out;
    EXPECT_EQ(lines_after(r.out, "model tutorial_cnn, optimizer sgd, synthetic data, 1 worker(s) x 2 replica(s)").size(), 1u) << r.out;
  }
}

TEST(BenchCli, StepUnderLaunchPrintsOnceFromWorkerZero) {
  Result r = run_lockstep("launch -n 2 -- lockstep bench step --steps 3 --warmup 1 --threads 1", "", 120);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(last_line(r.out), std::regex(R"(\[worker 0\] [0-9]+\.[0-9]+ ms/step)"))) << r.out;
  EXPECT_TRUE(lines_after(r.out, "[worker 1]").empty()) << r.out;
  EXPECT_EQ(lines_after(r.out, "[worker 0] model tutorial_cnn, optimizer sgd, synthetic data, 2 worker(s) x 1 replica(s)").size(), 1u)
      << r.out;
}

TEST(BenchCli, AllreduceUnderLaunchPrintsTheCpuThenOneLinePerSizeFromRankZero) {
  Result r = run_lockstep("launch -n 2 -- lockstep bench allreduce --sizes-mib 1,2 --iters 2 --implementation ring",
                          "", 120);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = lines_after(r.out, "[worker 0] ");
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("cpu: ", 0), 0u) << lines[0];
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_TRUE(std::regex_match(lines[i], kAllreduceLine)) << lines[i];
  EXPECT_NE(lines[1].find(" 1 MiB"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(" 2 MiB"), std::string::npos) << lines[2];
  EXPECT_TRUE(lines_after(r.out, "[worker 1]").empty()) << r.out;
}

TEST(BenchCli, BadFlagsAreOneLineErrorsWithExitCode2) {
  for (const char* args :
       {"bench", "bench step --steps 0", "bench step --steps 3x", "bench step --batch-size 99999999999999999999",
        "bench step --model resnet", "bench step --optimizer nadam", "bench step --dataset cifar10", "bench step --replicas 0",
        "bench step --backup-sync", "bench step --warmup -1", "bench allreduce --sizes-mib 1,,4",
        "bench allreduce --sizes-mib 0", "bench allreduce --sizes-mib 4,", "bench allreduce --iters 0",
        "bench allreduce --implementation nccl", "bench allreduce --dtype float16",
        // A single worker has nobody to all-reduce with.
        "bench allreduce --sizes-mib 1"}) {
    Result r = run_lockstep(args, "env -u TF_CONFIG", 60);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("lockstep: error: ", 0), 0u) << args << ": " << r.err;
  }
}

TEST(BenchCli, StepReplicasRefusesTfConfig) {
  Result r = run_lockstep("bench step --replicas 2 --steps 1",
                          "TF_CONFIG='{\"cluster\":{\"worker\":[\"127.0.0.1:1\"]},\"task\":{\"type\":\"worker\",\"index\":0}}'", 60);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--replicas 2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lockstep::testing
