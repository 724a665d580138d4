// `lockstep train --model FILE --data SPEC`: a model exported by TensorFlow (.keras) or described by its JSON trains
// on the user's TFRecord, image-folder or CSV data with the CLI alone, on one or two workers; what it saves loads
// back; bad input is one line and exit code 2 before any step.
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "cli_util.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/saving.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kGolden = fs::path(LOCKSTEP_SOURCE_DIR) / "tests/golden";
const std::string kTfrecords = "tfrecord:" + (kGolden / "cli_train/train-*.tfrecord").string();

class UserModel : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir("user_model"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  json metrics() const { return json::parse(read_all(path("metrics.json"))); }
  // Each epoch's training loss from the metrics file.
  std::vector<double> losses() const {
    std::vector<double> out;
    const json m = metrics();
    for (const json& e : m.at("epochs")) out.push_back(e.at("loss"));
    return out;
  }
  fs::path dir_;
};

TEST_F(UserModel, TensorFlowsKerasFileTrainsOnTfrecordsOnTwoWorkers) {
  // Two files for two workers: auto-sharding gives each worker its own file.
  const Result r = run_lockstep("train --workers 2 --threads 1 --model " + (kGolden / "cli_train/classifier.keras").string() +
                                " --data " + kTfrecords + " --feature-key x --epochs 4 --batch-size 16 --verbose 2" +
                                " --metrics-out " + path("metrics.json") + " --save-model " + path("trained.keras"));
  ASSERT_EQ(r.code, 0) << r.err;
  const json m = metrics();
  EXPECT_EQ(m.at("num_workers"), 2);
  const std::vector<double> loss = losses();
  ASSERT_EQ(loss.size(), 4u);
  for (size_t e = 1; e < loss.size(); ++e) EXPECT_LT(loss[e], loss[e - 1]) << "epoch " << e;
  EXPECT_LT(loss.back(), 0.5 * loss.front());
  EXPECT_EQ(m.at("weights_sha256_per_worker")[0], m.at("weights_sha256_per_worker")[1]);
  // TF trained the file 2 steps; each worker's file of 300 examples in batches of 16 makes 19 steps an epoch.
  EXPECT_EQ(m.at("global_steps"), 2 + 4 * 19);

  keras::Model saved = keras::models::load_model(path("trained.keras"));
  EXPECT_EQ(saved.optimizer()->iterations(), 2 + 4 * 19);
  EXPECT_EQ(saved.optimizer()->class_name(), "Adam");
}

TEST_F(UserModel, FunctionalKerasFileWithValidationDataAndTensorBoard) {
  const std::string val = "tfrecord:" + (kGolden / "cli_train/train-00001-of-00002.tfrecord").string();
  const Result r = run_lockstep("train --threads 1 --model " + (kGolden / "cli_train/skip_classifier.keras").string() +
                                " --data " + kTfrecords + " --validation-data " + val +
                                " --feature-key x --epochs 3 --batch-size 32 --verbose 0 --tensorboard " +
                                path("logs") + " --metrics-out " + path("metrics.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const json m = metrics();
  ASSERT_TRUE(m.contains("test_loss")) << m.dump();
  EXPECT_TRUE(m.at("epochs").back().contains("val_accuracy"));
  const std::vector<double> loss = losses();
  EXPECT_LT(loss.back(), loss.front());
  for (const char* run : {"train", "validation"}) {
    ASSERT_TRUE(fs::is_directory(dir_ / "logs" / run)) << run;
    EXPECT_FALSE(fs::is_empty(dir_ / "logs" / run)) << run;
  }
}

TEST_F(UserModel, AKilledWorkerResumesMidFileWithTheWeightsOfAnUninterruptedRun) {
  const std::string args = "train --workers 2 --threads 1 --model " + (kGolden / "cli_train/classifier.keras").string() +
                           " --data " + kTfrecords + " --feature-key x --epochs 3 --batch-size 16 --verbose 0";
  Result r = run_lockstep(args + " --metrics-out " + path("plain.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  // Worker 1 dies at step 25 of 57, in the middle of epoch 2 and of its TFRecord file; the group restarts once.
  r = run_lockstep(args + " --max-restarts 1 --backup-dir " + path("backup") + " --backup-freq 5 --metrics-out " +
                       path("metrics.json"),
                   "LOCKSTEP_FAULT_INJECT=kill:1:25");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("restored epoch 2 step 4"), std::string::npos) << r.err;
  const json plain = json::parse(read_all(path("plain.json")));
  EXPECT_EQ(metrics().at("restarts"), 1);
  EXPECT_EQ(metrics().at("weights_sha256"), plain.at("weights_sha256"));
}

TEST_F(UserModel, CustomLoopTrainsAKerasFileAndWritesTensorBoardLogs) {
  const std::string val = "tfrecord:" + (kGolden / "cli_train/train-00001-of-00002.tfrecord").string();
  const Result r = run_lockstep("train --loop ctl --threads 1 --model " + (kGolden / "cli_train/classifier.keras").string() +
                                " --data " + kTfrecords + " --validation-data " + val +
                                " --feature-key x --epochs 3 --batch-size 32 --verbose 0 --tensorboard " +
                                path("logs") + " --metrics-out " + path("metrics.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<double> loss = losses();
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_LT(loss.back(), loss.front());
  // The epoch scalars under the names the TensorBoard callback gives them in fit.
  for (const auto& [run, tag] : {std::pair{"train", "epoch_loss"}, {"train", "epoch_accuracy"}, {"validation", "epoch_loss"}}) {
    std::string events;
    for (const auto& f : fs::directory_iterator(dir_ / "logs" / run)) events += read_all(f.path().string());
    EXPECT_NE(events.find(tag), std::string::npos) << run << " " << tag;
  }
}

TEST_F(UserModel, JsonModelTrainsOnCsvFromTheFlags) {
  // y = 1 when the features' sum is positive: a linear rule a small model learns in a few epochs.
  {
    std::ofstream csv(path("rows.csv"));
    csv << "a,b,c,label\n";
    for (int i = 0; i < 400; ++i) {
      const double a = std::sin(i * 1.7), b = std::cos(i * 0.9), c = std::sin(i * 0.31 + 1);
      csv << a << "," << b << "," << c << "," << (a + b - c > 0 ? 1 : 0) << "\n";
    }
  }
  keras::Sequential model({keras::Input({3}), keras::layers::Dense(8, {.activation = "relu"}),
                           keras::layers::Dense(2, {.activation = "softmax"})});
  std::ofstream(path("model.json")) << model.to_json();
  const Result r = run_lockstep("train --threads 1 --model " + path("model.json") + " --data csv:" + path("rows.csv") +
                                " --optimizer adam --learning-rate 0.05 --epochs 5 --batch-size 20 --verbose 0" +
                                " --metrics-out " + path("metrics.json") + " --save-model " + path("saved"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<double> loss = losses();
  EXPECT_LT(loss.back(), 0.7 * loss.front());
  EXPECT_GT(metrics().at("epochs").back().at("accuracy").get<double>(), 0.8);
  EXPECT_TRUE(fs::exists(dir_ / "saved" / "config.json"));  // a name without .keras keeps the directory layout
}

TEST_F(UserModel, ImageFolderTrainsAnImageModelAndSplitsValidation) {
  // The image golden tree: class folders of small PNG and JPEG files; images are resized to the model's input.
  auto inputs = keras::Input({8, 8, 3});
  auto x = keras::layers::Rescaling(1.0 / 255)(inputs);
  x = keras::layers::GlobalAveragePooling2D()(keras::layers::Conv2D(4, 3, {.activation = "relu"})(x));
  keras::Model model(inputs, keras::layers::Dense(3)(x));
  std::ofstream(path("model.json")) << model.to_json();
  const Result r = run_lockstep("train --threads 1 --model " + path("model.json") + " --data images:" +
                                (kGolden / "image_data").string() + " --validation-split 0.25 --epochs 2 --batch-size 4" +
                                " --verbose 1 --metrics-out " + path("metrics.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("belonging to 3 classes"), std::string::npos) << r.out;
  EXPECT_TRUE(metrics().contains("test_loss"));
  EXPECT_EQ(losses().size(), 2u);
}

TEST_F(UserModel, BadInputIsOneLineBeforeAnyStep) {
  const std::string keras_file = (kGolden / "cli_train/classifier.keras").string();
  // A record whose data no longer matches its CRC: the error names the file and the record's offset.
  {
    std::string bytes = read_all((kGolden / "cli_train/train-00000-of-00002.tfrecord").string());
    bytes[12 + 40] ^= 0x20;  // inside the first record's data
    std::ofstream(path("bad.tfrecord"), std::ios::binary) << bytes;
  }
  struct Case {
    std::string args, expected;
  } cases[] = {
      {"--model " + keras_file + " --data bogus:x", "is not tfrecord:PATTERN"},
      {"--model " + keras_file + " --data " + kTfrecords, "needs --feature-key"},
      {"--model " + keras_file + " --data " + kTfrecords + " --feature-key nope", "nope"},
      {"--model " + keras_file + " --data tfrecord:" + path("bad.tfrecord") + " --feature-key x", "offset 0"},
      {"--model " + keras_file + " --data tfrecord:" + path("none-*.tfrecord") + " --feature-key x", "none-*.tfrecord"},
      {"--model " + path("missing.keras") + " --data " + kTfrecords + " --feature-key x", "missing.keras"},
      {"--model model.h5 --data " + kTfrecords, "is not tutorial_cnn, fashion_cnn or a file ending in .keras or .json"},
      {"--model " + keras_file + " --data " + kTfrecords + " --feature-key x --dataset mnist", "excludes"},
      {"--model " + keras_file + " --data " + kTfrecords + " --feature-key x --validation-split 0.2",
       "--validation-split splits an image folder"},
      {"--model " + keras_file + " --data images:" + (kGolden / "image_data").string(), "needs a model that takes images"},
      {"--model " + keras_file + " --dataset fashion_mnist", "takes inputs of shape (8,) but data set 'fashion_mnist' has"},
  };
  for (const Case& c : cases) {
    const Result r = run_lockstep("train --threads 1 --epochs 1 --verbose 0 " + c.args, "", 60);
    EXPECT_NE(r.code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace lockstep::testing
