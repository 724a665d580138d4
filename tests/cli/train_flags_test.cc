// `lockstep train`'s flags at their edges: every value reaches `--workers` workers exactly, values outside
// a flag's range are refused with one short line and exit code 2, and what cannot be refused up front
// (too many threads, an unexpected exception) still ends in one line.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFast = " --epochs 1 --batch-size 16 --threads 1 --verbose 0";

class TrainFlags : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = temp_dir("flags");
    write_idx_dataset(data_, 160, 48);
  }
  void TearDown() override { fs::remove_all(data_); }
  // Runs `lockstep train` on the small data set and returns its metrics file.
  json train(const std::string& args, const std::string& name, const std::string& env = "") {
    const std::string metrics = (data_ / (name + ".json")).string();
    Result r =
        run_lockstep("train --dataset " + data_.string() + kFast + " " + args + " --metrics-out " + metrics, env, 120);
    EXPECT_EQ(r.code, 0) << args << ": " << r.err;
    return r.code == 0 ? json::parse(read_all(metrics)) : json{};
  }
  fs::path data_;
};

// `--workers 1` hands every option to its worker as text: it must train exactly what a plain run trains.
TEST_F(TrainFlags, OneLaunchedWorkerTrainsExactlyLikeAPlainRun) {
  for (const std::string args :
       {"--learning-rate 0.0000015 --seed 9223372036854775809 --steps-per-epoch 3 --batch-size 7",
        "--learning-rate 0.0012345678901234 --optimizer sgd --epochs 2 --batch-size 33",
        "--learning-rate 1e-7 --seed 18446744073709551615 --loop ctl --steps-per-epoch 2 --threads 2"}) {
    json plain = train(args, "plain"), launched = train("--workers 1 " + args, "launched");
    EXPECT_EQ(plain["weights_sha256"], launched["weights_sha256"]) << args;
    EXPECT_EQ(plain["global_steps"], launched["global_steps"]) << args;
  }
}

// Every option of `lockstep train`, as its own table lists them (LOCKSTEP_PRINT_TRAIN_OPTIONS prints the table,
// and under --workers each worker's), given a value other than its default under `--workers 2`, reaches each
// worker as given; the launcher's own reach none, the token file only as LOCKSTEP_CLUSTER_TOKEN_FILE. An option
// added to the table without a value here fails.
TEST_F(TrainFlags, EveryOptionReachesEachWorkerUnchanged) {
  const std::string token = (data_ / "token").string();
  std::ofstream(token) << "secret\n";
  // Not the defaults, and numbers not in their shortest form: they must arrive as given, not re-serialized.
  const std::map<std::string, std::string> values = {{"--model", "my model.keras"},
                                                     {"--dataset", data_.string()},
                                                     {"--data", "tfrecord:a/*.tfrecord,b/*"},
                                                     {"--validation-data", "csv:val.csv"},
                                                     {"--feature-key", "image/raw"},
                                                     {"--label-key", "y"},
                                                     {"--label-dtype", "float32"},
                                                     {"--compression", "GZIP"},
                                                     {"--shuffle-buffer", "0012"},
                                                     {"--validation-split", "2.50e-1"},
                                                     {"--label-column", "class"},
                                                     {"--loss", "mse"},
                                                     {"--tensorboard", "tb"},
                                                     {"--epochs", "7"},
                                                     {"--steps-per-epoch", "05"},
                                                     {"--batch-size", "3"},
                                                     {"--optimizer", "sgd"},
                                                     {"--learning-rate", "0.0012345678901234"},
                                                     {"--seed", "18446744073709551615"},
                                                     {"--threads", "2"},
                                                     {"--loop", "ctl"},
                                                     {"--save-model", "saved"},
                                                     {"--metrics-out", "m.json"},
                                                     {"--verbose", "2"},
                                                     {"--workers", "2"},
                                                     {"--max-restarts", "3"},
                                                     {"--gradient-compression", "bfloat16"},
                                                     {"--dtype-policy", "mixed_bfloat16"},
                                                     {"--cluster-token-file", token},
                                                     {"--backup-dir", "backups"},
                                                     {"--backup-freq", "4"},
                                                     {"--device", "/device:GPU:1"}};
  const std::set<std::string> launcher_own = {"--workers", "--max-restarts", "--cluster-token-file"};
  const std::string print = "LOCKSTEP_PRINT_TRAIN_OPTIONS=1";

  Result table = run_lockstep("train", print, 60);
  ASSERT_EQ(table.code, 0) << table.err;
  const json listed = json::parse(table.out).at("options");
  std::set<std::string> options;
  for (const auto& option : listed.items())
    if (option.key() != "--help") options.insert(option.key());
  ASSERT_GE(options.size(), 30u) << table.out;
  for (const std::string& name : options) ASSERT_TRUE(values.contains(name)) << "give " << name << " a value here";

  // --data excludes --dataset: two runs, each with --workers 2.
  std::set<std::string> all_but_dataset = options;
  all_but_dataset.erase("--dataset");
  for (const std::set<std::string>& given : {std::set<std::string>{"--dataset", "--workers"}, all_but_dataset}) {
    std::string args;
    for (const std::string& name : given) args += " " + name + " '" + values.at(name) + "'";
    Result r = run_lockstep("train" + args, "env -u LOCKSTEP_CLUSTER_TOKEN_FILE " + print, 60);
    ASSERT_EQ(r.code, 0) << args << ": " << r.err;
    for (const std::string worker : {"[worker 0] ", "[worker 1] "}) {
      const std::vector<std::string> lines = lines_after(r.out, worker);
      ASSERT_EQ(lines.size(), 1u) << worker << r.out;
      const json got = json::parse(lines[0]);
      for (const std::string& name : options) {
        const bool forwarded = given.contains(name) && !launcher_own.contains(name);
        EXPECT_EQ(got.at("options").at(name), forwarded ? json::array({values.at(name)}) : json::array())
            << worker << name;
      }
      EXPECT_EQ(got.at("LOCKSTEP_CLUSTER_TOKEN_FILE"), given.contains("--cluster-token-file") ? token : "") << worker;
    }
  }
}

TEST_F(TrainFlags, MetricsCountTheRestartsTheLauncherReports) {
  EXPECT_EQ(train("", "none")["restarts"], 0);
  EXPECT_EQ(train("", "three", "LOCKSTEP_RESTART_COUNT=3")["restarts"], 3);
}

TEST_F(TrainFlags, TooManyThreadsAreCappedWithOneWarning) {
  Result r = run_lockstep(
      "train --dataset " + data_.string() + " --epochs 1 --batch-size 16 --verbose 0 --threads 100000", "", 120);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("100000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("capped"), std::string::npos) << r.err;
}

// An exception that is not a lockstep error (here std::bad_alloc: one step of 4000 images needs more than
// 1 GB, and the address space is limited to 600 MB) still ends as one line on stderr and exit code 1, not
// `terminate called ...` and an abort.
TEST_F(TrainFlags, AnUnexpectedExceptionIsOneLineAndExitCode1) {
  write_idx_dataset(data_, 4000, 10);
  Result r = run_lockstep("train --dataset " + data_.string() + " --epochs 1 --batch-size 4000 --threads 1 --verbose 0",
                          "ulimit -v 600000;", 120);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("lockstep: error: out of memory", 0), 0u) << r.err;
}

// A value the flag cannot take: exit code 2 and one short line that names the flag.
struct BadFlag {
  std::string name, args, must_mention, env = "";
};
void PrintTo(const BadFlag& bad, std::ostream* os) {
  *os << bad.name;
}

class TrainFlagErrors : public TrainFlags, public ::testing::WithParamInterface<BadFlag> {};

TEST_P(TrainFlagErrors, OneShortLineAndExitCode2) {
  const BadFlag& bad = GetParam();
  for (auto [dir, train_n, test_n] : {std::tuple{"no_test", 20, 0}, {"no_train", 0, 20}}) {
    fs::create_directories(data_ / dir);
    write_idx_dataset(data_ / dir, train_n, test_n);
  }
  std::string args = bad.args;
  if (size_t at = args.find("DATA"); at != std::string::npos) args.replace(at, 4, data_.string());
  if (args.find("--dataset") == std::string::npos) args += " --dataset " + data_.string();
  // Two workers whose chief never starts: reading the environment must fail before any connection.
  const std::string cluster =
      R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}})";
  const std::string env = bad.env.empty() ? "" : bad.env + " TF_CONFIG='" + cluster + "'";
  Result r = run_lockstep("train " + kFast + " " + args, env, 60);
  EXPECT_EQ(r.code, 2) << bad.name << ": " << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << bad.name << ": " << r.err;
  EXPECT_LT(r.err.size(), 250u) << bad.name << ": " << r.err;
  EXPECT_NE(r.err.find(bad.must_mention), std::string::npos) << bad.name << ": " << r.err;
}

const std::string kHuge =
    "9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999";

INSTANTIATE_TEST_SUITE_P(
    BadFlags, TrainFlagErrors,
    ::testing::Values(
        BadFlag{"nan_learning_rate", "--learning-rate nan", "--learning-rate"},
        BadFlag{"inf_learning_rate", "--learning-rate inf", "--learning-rate"},
        BadFlag{"zero_learning_rate", "--learning-rate 0", "--learning-rate"},
        BadFlag{"negative_learning_rate", "--learning-rate -0.1", "--learning-rate"},
        BadFlag{"huge_learning_rate", "--learning-rate 1e400", "--learning-rate"},
        BadFlag{"zero_steps_per_epoch", "--steps-per-epoch 0", "--steps-per-epoch"},
        BadFlag{"negative_steps_per_epoch", "--steps-per-epoch -7", "--steps-per-epoch"},
        BadFlag{"huge_epochs", "--epochs " + kHuge, "--epochs"},
        BadFlag{"negative_batch", "--batch-size -5", "--batch-size"},
        BadFlag{"hex_batch", "--batch-size 0x10", "--batch-size"}, BadFlag{"negative_seed", "--seed -1", "--seed"},
        BadFlag{"huge_seed", "--seed " + kHuge, "--seed"}, BadFlag{"huge_threads", "--threads " + kHuge, "--threads"},
        BadFlag{"huge_verbose", "--verbose 3", "--verbose"},
        BadFlag{"max_restarts_alone", "--max-restarts 2", "--max-restarts"},
        BadFlag{"empty_metrics_out", "--metrics-out ''", "--metrics-out"},
        BadFlag{"empty_save_model", "--save-model ''", "--save-model"},
        BadFlag{"batch_over_data_set", "--batch-size 1000000", "--batch-size"},
        BadFlag{"empty_test_set", "--dataset DATA/no_test", "t10k"},
        BadFlag{"empty_train_set", "--dataset DATA/no_train", "train-images"},
        BadFlag{"startup_timeout_text", "", "LOCKSTEP_STARTUP_TIMEOUT", "LOCKSTEP_STARTUP_TIMEOUT=abc"},
        BadFlag{"startup_timeout_zero", "", "LOCKSTEP_STARTUP_TIMEOUT", "LOCKSTEP_STARTUP_TIMEOUT=0"},
        BadFlag{"startup_timeout_negative", "", "LOCKSTEP_STARTUP_TIMEOUT", "LOCKSTEP_STARTUP_TIMEOUT=-1"},
        BadFlag{"startup_timeout_nan", "", "LOCKSTEP_STARTUP_TIMEOUT", "LOCKSTEP_STARTUP_TIMEOUT=nan"},
        BadFlag{"startup_timeout_huge", "", "LOCKSTEP_STARTUP_TIMEOUT", "LOCKSTEP_STARTUP_TIMEOUT=1e30"},
        BadFlag{"heartbeat_timeout_text", "", "LOCKSTEP_HEARTBEAT_TIMEOUT", "LOCKSTEP_HEARTBEAT_TIMEOUT=5s"},
        BadFlag{"restart_count_text", "", "LOCKSTEP_RESTART_COUNT", "LOCKSTEP_RESTART_COUNT=x"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace lockstep::testing
