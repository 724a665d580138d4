// `lockstep train` end to end on small generated data sets: metrics file, reproducibility, both loops,
// saving, and the one-line errors with exit code 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "lockstep/keras/model.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFast = " --epochs 1 --batch-size 16 --threads 1 --verbose 0";

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = temp_dir("idx");
    write_idx_dataset(data_, 160, 48);
  }
  void TearDown() override { fs::remove_all(data_); }
  json train(const std::string& extra, const std::string& name) {
    const std::string metrics = (data_ / (name + ".json")).string();
    Result r = run_lockstep("train --dataset " + data_.string() + kFast + " --metrics-out " + metrics + " " + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(read_all(metrics));
  }
  fs::path data_;
};

TEST_F(TrainCli, WritesTheMetricsFile) {
  json m = train("", "m");
  ASSERT_EQ(m["epochs"].size(), 1u);
  for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"}) EXPECT_TRUE(m["epochs"][0].contains(k)) << k;
  EXPECT_EQ(m["global_steps"], 10);  // 160 / 16
  EXPECT_EQ(m["num_workers"], 1);
  EXPECT_EQ(m["num_replicas_in_sync"], 1);
  EXPECT_GT(m["samples_per_second"].get<double>(), 0);
  EXPECT_EQ(m["weights_sha256"].get<std::string>().size(), 64u);
  EXPECT_GE(m["test_accuracy"].get<double>(), 0.0);
}

TEST_F(TrainCli, SameSeedGivesTheSameWeights) {
  json a = train("--seed 7", "a"), b = train("--seed 7", "b"), c = train("--seed 8", "c");
  EXPECT_EQ(a["weights_sha256"], b["weights_sha256"]);
  EXPECT_EQ(a["test_loss"], b["test_loss"]);
  EXPECT_NE(a["weights_sha256"], c["weights_sha256"]);
}

TEST_F(TrainCli, CustomLoopAndFashionCnnTrain) {
  json m = train("--loop ctl --model fashion_cnn --optimizer rmsprop --steps-per-epoch 4", "ctl");
  EXPECT_EQ(m["global_steps"], 4);
  EXPECT_TRUE(std::isfinite(m["epochs"][0]["loss"].get<double>()));
}

TEST_F(TrainCli, LearnsAnEasyDataSet) {
  json m = train("--epochs 4 --optimizer adam --learning-rate 0.003", "learn");
  EXPECT_GE(m["test_accuracy"].get<double>(), 0.9);
}

TEST_F(TrainCli, SavedModelLoadsBack) {
  const fs::path dir = data_ / "saved";
  train("--save-model " + dir.string(), "save");
  EXPECT_TRUE(fs::exists(dir / "config.json"));
  keras::Sequential model = keras::Sequential::load_model(dir.string());
  EXPECT_EQ(model.count_params(), 2770634);
}

TEST_F(TrainCli, MixedBfloat16LearnsAndSavesItsPolicy) {
  const fs::path dir = data_ / "mixed";
  const std::string args = "--epochs 4 --optimizer adam --learning-rate 0.003";
  json mixed = train(args + " --dtype-policy mixed_bfloat16 --save-model " + dir.string(), "mixed");
  json f32 = train(args, "f32");
  EXPECT_GE(mixed["test_accuracy"].get<double>(), 0.9);
  EXPECT_NE(mixed["weights_sha256"], f32["weights_sha256"]);  // the policy changed the arithmetic
  keras::Sequential model = keras::Sequential::load_model(dir.string());
  for (const keras::LayerPtr& layer : model.layers()) EXPECT_EQ(layer->dtype_policy().name(), "mixed_bfloat16");
}

// Every user mistake: exit code 2 and one line on stderr that names the problem.
struct BadInput {
  std::string name, args, must_mention;
};

class TrainCliErrors : public TrainCli, public ::testing::WithParamInterface<BadInput> {};

TEST_P(TrainCliErrors, OneLineAndExitCode2) {
  const BadInput& bad = GetParam();
  // Damaged copies of the data set for the file-level cases.
  const fs::path corrupt = data_ / "corrupt", truncated = data_ / "truncated", wide = data_ / "wide";
  for (const fs::path& d : {corrupt, truncated}) {
    fs::create_directories(d);
    for (const auto& f : fs::directory_iterator(data_))
      if (f.is_regular_file()) fs::copy_file(f.path(), d / f.path().filename());
  }
  {
    std::fstream f(corrupt / "train-images-idx3-ubyte", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put(0x42);  // magic number 0x00000842
  }
  fs::resize_file(truncated / "train-images-idx3-ubyte", 1000);
  fs::create_directories(wide);
  write_idx_dataset(wide, 20, 10, 32);

  std::string args = bad.args;
  for (auto [key, path] : {std::pair{"CORRUPT", corrupt}, {"TRUNCATED", truncated}, {"WIDE", wide}, {"DATA", data_}}) {
    for (size_t at; (at = args.find(key)) != std::string::npos;) args.replace(at, std::string(key).size(), path.string());
  }
  Result r = run_lockstep("train " + args + kFast, "HOME=" + data_.string() + " LOCKSTEP_DATASETS=" + (data_ / "none").string(), 60);
  EXPECT_EQ(r.code, 2) << bad.name << ": " << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << bad.name << ": " << r.err;
  EXPECT_NE(r.err.find(bad.must_mention), std::string::npos) << bad.name << ": " << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, TrainCliErrors,
    ::testing::Values(BadInput{"missing_directory", "--dataset /nonexistent/data", "/nonexistent/data"},
                      BadInput{"missing_mnist", "--dataset mnist", "LOCKSTEP_DATASETS"},
                      BadInput{"corrupt_idx", "--dataset CORRUPT", "train-images-idx3-ubyte"},
                      BadInput{"truncated_idx", "--dataset TRUNCATED", "train-images-idx3-ubyte"},
                      BadInput{"shape_mismatch", "--dataset WIDE", "32, 32)"},
                      BadInput{"unknown_optimizer", "--dataset DATA --optimizer nadam", "nadam"},
                      BadInput{"unknown_model", "--dataset DATA --model resnet", "resnet"},
                      BadInput{"zero_batch", "--dataset DATA --batch-size 0", "batch-size"},
                      BadInput{"unknown_flag", "--dataset DATA --epoch 3", "--epoch"},
                      BadInput{"float16_policy", "--dataset DATA --dtype-policy mixed_float16", "--dtype-policy"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace lockstep::testing
