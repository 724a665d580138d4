// `lockstep evaluate`: a model saved by a 2-worker `lockstep train` evaluates to the run's test accuracy;
// bad input is one line and exit code 2; the sidecar evaluator (--watch, or TF_CONFIG's evaluator task)
// follows the checkpoints of a running job and stops when it ends, without joining the workers.
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>

#include "cli_util.h"
#include "process_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class Evaluate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("evaluate");
    data_ = dir_ / "data";
    fs::create_directories(data_);
    write_idx_dataset(data_, 96, 40);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string data() const { return " --dataset " + data_.string() + " --threads 1 "; }
  fs::path dir_, data_;
};

std::string formatted(const char* format, double a, double b) {
  char line[128];
  std::snprintf(line, sizeof line, format, a, b);
  return line;
}

TEST_F(Evaluate, SavedModelOfATwoWorkerRunGivesItsTestAccuracy) {
  const std::string model = (dir_ / "model").string(), metrics = (dir_ / "train.json").string(),
                    evaluated = (dir_ / "evaluate.json").string();
  Result t = run_lockstep("train --workers 2" + data() + "--epochs 1 --steps-per-epoch 3 --batch-size 8 --verbose 0 "
                          "--save-model " + model + " --metrics-out " + metrics);
  ASSERT_EQ(t.code, 0) << t.err;
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(model)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"config.json", "model.weights.safetensors", "optimizer.safetensors"}));

  Result r = run_lockstep("evaluate --model " + model + data() + "--metrics-out " + evaluated);
  ASSERT_EQ(r.code, 0) << r.err;
  const json trained = json::parse(read_all(metrics)), got = json::parse(read_all(evaluated));
  EXPECT_EQ(got["test_accuracy"].get<double>(), trained["test_accuracy"].get<double>());
  EXPECT_NEAR(got["test_loss"].get<double>(), trained["test_loss"].get<double>(), 1e-5);
  // The line lockstep train prints at its end.
  EXPECT_EQ(r.out, formatted("Test loss: %.4f - test accuracy: %.4f\n", got["test_loss"], got["test_accuracy"]));
  char accuracy[64];
  std::snprintf(accuracy, sizeof accuracy, "test accuracy: %.4f\n", trained["test_accuracy"].get<double>());
  EXPECT_TRUE(r.out.ends_with(accuracy)) << r.out << "\nthe training run: " << accuracy;
}

TEST_F(Evaluate, BadInputIsOneLineAndExitCode2) {
  const std::string broken = (dir_ / "broken").string();
  fs::create_directories(broken);
  std::ofstream(broken + "/config.json") << "{\"class_name\": \"Sequential\", \"config\": ";
  std::ofstream(broken + "/model.weights.safetensors") << "x";
  for (const std::string& args : std::vector<std::string>{"evaluate", "evaluate --model " + (dir_ / "missing").string(),
                                 "evaluate --model " + broken, "evaluate --model " + broken + " --batch-size 0"}) {
    Result r = run_lockstep(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args << "\n" << r.out;
  }
  // An evaluator task without --backup-dir does not know what to watch.
  const std::string tf_config = "TF_CONFIG='{\"cluster\": {\"worker\": [\"127.0.0.1:" + std::to_string(free_port()) +
                                "\"], \"evaluator\": [\"127.0.0.1:" + std::to_string(free_port()) +
                                "\"]}, \"task\": {\"type\": \"evaluator\", \"index\": 0}}'";
  Result r = run_lockstep("train" + data(), tf_config);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--backup-dir"), std::string::npos) << r.err;
  // Watching a directory where no checkpoint ever comes ends (exit 1: nothing to evaluate) at the bound.
  r = run_lockstep("evaluate --watch " + (dir_ / "empty").string() + data() + "--idle-timeout 0.5");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("no checkpoint appeared"), std::string::npos) << r.err;
}

// The "Checkpoint ... (step S, epoch E): loss: L - accuracy: A" lines of the sidecar's output.
std::vector<std::pair<int64_t, std::string>> evaluations(const std::string& out) {
  std::vector<std::pair<int64_t, std::string>> got;
  const std::regex line(R"(Checkpoint \S+ \(step (\d+), epoch \S+\): (loss: \S+ - accuracy: \S+))");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    got.emplace_back(std::stoll((*it)[1]), (*it)[2]);
  return got;
}

// The sidecar starts before the job, evaluates the checkpoints of 2 workers training with
// BackupAndRestore every 2 steps, tolerates the pruned ones, and stops when the job removes its backup.
TEST_F(Evaluate, SidecarFollowsARunningJobAndStopsWhenItEnds) {
  const std::string backup = (dir_ / "backup").string();
  Worker sidecar("evaluate --watch " + backup + data() + "--idle-timeout 240", "", dir_, "sidecar");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (sidecar.out().find("watching") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_NE(sidecar.out().find("watching"), std::string::npos) << sidecar.err();

  Result t = run_lockstep("train --workers 2" + data() + "--epochs 2 --steps-per-epoch 12 --batch-size 8 --verbose 0 "
                          "--backup-dir " + backup + " --backup-freq 2");
  ASSERT_EQ(t.code, 0) << t.err;
  const std::optional<int> status = sidecar.wait(std::chrono::seconds(240));
  ASSERT_TRUE(status) << "the sidecar did not stop after the job ended\n" << sidecar.out() << sidecar.err();
  EXPECT_EQ(exit_code(*status), 0) << sidecar.err();
  EXPECT_NE(sidecar.out().find("stopped: training finished"), std::string::npos) << sidecar.out() << sidecar.err();
  const auto got = evaluations(sidecar.out());
  EXPECT_FALSE(got.empty()) << sidecar.out();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first % 2, 0) << "a checkpoint between two saves\n" << sidecar.out();
    EXPECT_LE(got[i].first, 24);
    if (i > 0) {
      EXPECT_GT(got[i].first, got[i - 1].first) << sidecar.out();
    }
  }
}

// An evaluator task in TF_CONFIG runs the sidecar on --backup-dir instead of training: here on the backup a
// preempted job left, with no worker running at all (it joins none), stopping once it saw the last step.
TEST_F(Evaluate, EvaluatorTaskOfTfConfigEvaluatesTheBackupWithoutTheWorkers) {
  const std::string backup = (dir_ / "backup").string();
  const std::string job = "train" + data() + "--epochs 2 --steps-per-epoch 4 --batch-size 8 --verbose 0 --backup-dir " +
                          backup + " --backup-freq 2";
  Result preempted = run_lockstep(job, "LOCKSTEP_FAULT_INJECT=term:0:6");
  ASSERT_NE(preempted.code, 0) << "the job was not preempted\n" << preempted.err;
  ASSERT_TRUE(fs::exists(fs::path(backup) / "checkpoint")) << preempted.err;

  const std::string tf_config = "TF_CONFIG='{\"cluster\": {\"worker\": [\"127.0.0.1:" + std::to_string(free_port()) +
                                "\"], \"evaluator\": [\"127.0.0.1:" + std::to_string(free_port()) +
                                "\"]}, \"task\": {\"type\": \"evaluator\", \"index\": 0}}'";
  // 1 epoch of 4 steps: the backup at step 6 or later is past the end.
  Result r = run_lockstep("train" + data() + "--epochs 1 --steps-per-epoch 4 --batch-size 8 --backup-dir " + backup,
                          tf_config, 120);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto got = evaluations(r.out);
  ASSERT_EQ(got.size(), 1u) << r.out;
  EXPECT_GE(got[0].first, 6);
  EXPECT_NE(r.out.find("stopped: reached step 4"), std::string::npos) << r.out;

  // `lockstep evaluate --watch` on the same backup gives the same numbers.
  Result w = run_lockstep("evaluate --watch " + backup + data() + "--max-checkpoints 1");
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(evaluations(w.out), got);
  EXPECT_TRUE(fs::exists(fs::path(backup) / "checkpoint")) << "the evaluator must leave the backup alone";
}

}  // namespace
}  // namespace lockstep::testing
