// Callbacks: the progress bar's format, History, CSVLogger, EarlyStopping, LearningRateScheduler,
// TerminateOnNaN and ModelCheckpoint (epoch and step saves, whole models and weights, chief-only writes).
#include "lockstep/keras/callbacks.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../test_dir.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/model.h"
#include "../two_workers.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;

struct Problem {
  Sequential model;
  data::Dataset ds;
};

// `dense_name` fixes the layer's name, which otherwise counts the models built in this process.
Problem problem(double lr = 0.01, int64_t batch_size = 1, const std::string& dense_name = "") {
  Philox rng(1);
  Tensor x = random_uniform({70, 4}, rng);
  Tensor y = raw_ops::cast(random_uniform({70}, rng, 0, 2, DType::float64), DType::int64);
  Sequential model({Input({4}), layers::Dense(2, {.name = dense_name})});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = lr}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return {model, data::Dataset::from_tensor_slices(x, y).batch(batch_size)};
}

std::string read_file(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(ProgbarLogger, PrintsKerasLinesWhenNotATerminal) {
  auto [model, ds] = problem();
  std::FILE* out = std::tmpfile();
  model.fit(ds, {.epochs = 2, .callbacks = {std::make_shared<callbacks::ProgbarLogger>(out)}, .verbose = 0});
  // verbose = 0 silences fit's own bar; this one was given explicitly, with the run's params.
  std::string text = read_file(out);
  std::fclose(out);
  EXPECT_EQ(text, "");  // it follows params.verbose, which is 0
  std::FILE* out1 = std::tmpfile();
  auto bar = std::make_shared<callbacks::ProgbarLogger>(out1);
  // A non-zero verbose on a file: "Epoch i/n" and one final line per epoch.
  Problem p = problem();
  p.model.fit(p.ds, {.epochs = 2, .callbacks = {bar}, .verbose = 2});
  text = read_file(out1);
  std::fclose(out1);
  std::regex line(R"(Epoch 1/2\n70/70 - \d+s - loss: \d\.\d{4} - accuracy: \d\.\d{4} - \d+(s|ms|us)/step\nEpoch 2/2\n)");
  EXPECT_TRUE(std::regex_search(text, line)) << text;
}

TEST(ProgbarLogger, VerboseOneLineHasTheBar) {
  Problem p = problem();
  std::FILE* out = std::tmpfile();
  p.model.fit(p.ds, {.epochs = 1, .callbacks = {std::make_shared<callbacks::ProgbarLogger>(out)}, .verbose = 1});
  std::string text = read_file(out);
  std::fclose(out);
  std::regex line(R"(^70/70 \[==============================\] - \d+s \d+(s|ms|us)/step - loss: \d\.\d{4} - accuracy: \d\.\d{4}\n$)");
  EXPECT_TRUE(std::regex_search(text, line)) << text;
}

TEST(Callbacks, CSVLoggerWritesOneRowPerEpoch) {
  Problem p = problem();
  const std::string path = (fs::temp_directory_path() / "lockstep_test_log.csv").string();
  p.model.fit(p.ds, {.epochs = 3, .callbacks = {callbacks::CSVLogger(path)}, .verbose = 0});
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header, "epoch,accuracy,loss");
  int rows = 0;
  while (std::getline(in, row)) ++rows;
  EXPECT_EQ(rows, 3);
  fs::remove(path);
}

TEST(Callbacks, EarlyStoppingStopsWhenNothingImproves) {
  Problem p = problem(0.0);  // a zero learning rate: the loss never improves
  auto history = p.model.fit(p.ds, {.epochs = 10, .callbacks = {callbacks::EarlyStopping({.monitor = "loss", .patience = 2})},
                                    .verbose = 0});
  EXPECT_EQ(history.epoch.size(), 3u);
}

TEST(Callbacks, LearningRateSchedulerSetsTheRate) {
  Problem p = problem();
  std::vector<double> seen;
  p.model.fit(p.ds, {.epochs = 3,
                     .callbacks = {callbacks::LearningRateScheduler([&](int64_t epoch, double lr) {
                       seen.push_back(lr);
                       return 0.1 / static_cast<double>(epoch + 1);
                     })},
                     .verbose = 0});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_DOUBLE_EQ(seen[1], 0.1);
  EXPECT_DOUBLE_EQ(p.model.optimizer()->learning_rate(), 0.1 / 3);
}

TEST(Callbacks, TerminateOnNaNStopsAtTheFirstBadBatch) {
  Problem p = problem(1e38);  // diverges to inf within a few steps
  auto history = p.model.fit(p.ds, {.epochs = 5, .callbacks = {callbacks::TerminateOnNaN()}, .verbose = 0});
  EXPECT_EQ(history.epoch.size(), 1u);
  EXPECT_LT(p.model.optimizer()->iterations(), 70);
}

TEST(Callbacks, TerminateOnNaNRaisesWhenAsked) {
  Problem p = problem(1e38);
  try {
    p.model.fit(p.ds, {.epochs = 5, .callbacks = {callbacks::TerminateOnNaN({.raise_error = true})}, .verbose = 0});
    FAIL() << "fit went on past a NaN loss";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN or Inf found in the loss at batch"), std::string::npos) << e.what();
  }
}

// Keras' rule on a loss that never improves (the rate is too small to move it by min_delta): a reduction once
// `patience` epochs have not improved, `cooldown` epochs before counting again, never below min_lr.
TEST(Callbacks, ReduceLROnPlateauReducesAfterPatienceWithCooldownDownToTheFloor) {
  Problem p = problem(1e-12);  // the loss cannot improve by min_delta at this rate
  std::vector<double> rates;
  auto record = callbacks::LearningRateScheduler([&](int64_t, double lr) {
    rates.push_back(lr);
    return lr;
  });
  p.model.fit(p.ds, {.epochs = 9,
                     .callbacks = {record, callbacks::registry().from_config("ReduceLROnPlateau",
                                                                              {{"monitor", "loss"},
                                                                               {"factor", 0.5},
                                                                               {"patience", 2},
                                                                               {"cooldown", 1},
                                                                               {"min_lr", 2e-13}})},
                     .verbose = 0});
  // The rate each epoch starts with. Epoch 0 sets the best; 1 and 2 do not improve (reduced after 2); 3 cools down
  // and counts 1, 4 reduces; 5 counts, 6 reduces to the floor (1.25e-13 is below it), 8 leaves it there.
  const std::vector<double> expected = {1e-12, 1e-12, 1e-12, 5e-13, 5e-13, 2.5e-13, 2.5e-13, 2e-13, 2e-13};
  ASSERT_EQ(rates.size(), expected.size());
  for (size_t i = 0; i < rates.size(); ++i) EXPECT_DOUBLE_EQ(rates[i], expected[i]) << "epoch " << i;
  EXPECT_DOUBLE_EQ(p.model.optimizer()->learning_rate(), 2e-13);
  EXPECT_THROW(callbacks::ReduceLROnPlateau({.factor = 1.0}), ValueError);
}

// A NaN reaching a relu stays NaN (as in TF; relu once made it 0 and the loss stayed finite), so the loss is NaN.
// `nan_in` names where it starts: one weight of the hidden Dense's kernel, or one feature of one example.
void expect_terminate_on_nan_stops_a_relu_model(const std::string& nan_in) {
  Philox rng(3);
  Tensor x = random_uniform({16, 4}, rng);
  Tensor y = raw_ops::cast(random_uniform({16}, rng, 0, 2, DType::float64), DType::int64);
  if (nan_in == "data") x.data<float>()[21] = NAN;  // example 5, feature 1: in the second of four batches
  Sequential model({Input({4}), layers::Dense(8, {.activation = "relu"}), layers::Dense(2)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  if (nan_in == "weights") {
    std::vector<Tensor> weights = model.get_weights();
    weights[0] = weights[0].clone();
    weights[0].data<float>()[3] = NAN;  // kernel [4, 8]: input 0's weight into unit 3
    model.set_weights(weights);
  }
  auto history = model.fit(data::Dataset::from_tensor_slices(x, y).batch(4),
                           {.epochs = 3, .callbacks = {callbacks::TerminateOnNaN()}, .verbose = 0});
  EXPECT_EQ(history.epoch.size(), 1u) << nan_in;
  ASSERT_EQ(history.history.at("loss").size(), 1u) << nan_in;
  EXPECT_TRUE(std::isnan(history.history.at("loss")[0])) << nan_in;
  // Stopped after the batch whose loss was NaN: the first with NaN weights, the second with the NaN example.
  EXPECT_EQ(model.optimizer()->iterations(), nan_in == "weights" ? 1 : 2) << nan_in;
}

TEST(Callbacks, TerminateOnNaNStopsWhenAWeightIsNaNBeforeARelu) {
  expect_terminate_on_nan_stops_a_relu_model("weights");
}

TEST(Callbacks, TerminateOnNaNStopsWhenTheDataHoldsNaNBeforeARelu) {
  expect_terminate_on_nan_stops_a_relu_model("data");
}

using testing::TestDir;

TEST(Callbacks, ModelCheckpointFormatsThePath) {
  Problem p = problem();
  TestDir dir("lockstep_test_ckpt");
  p.model.fit(
      p.ds,
      {.epochs = 2,
       .callbacks = {callbacks::ModelCheckpoint((dir.path / "weights.{epoch:02d}-{loss:.2f}.safetensors").string(),
                                                {.monitor = "loss", .save_weights_only = true})},
       .verbose = 0});
  for (const std::string& name : dir.names())
    EXPECT_TRUE(std::regex_match(name, std::regex(R"(weights\.0[12]-\d\.\d\d\.safetensors)"))) << name;
  EXPECT_EQ(dir.names().size(), 2u);
}

TEST(Callbacks, ModelCheckpointSavesTheWholeModelByDefault) {
  Problem p = problem();
  TestDir dir("lockstep_test_ckpt_model");
  p.model.fit(
      p.ds,
      {.epochs = 2, .callbacks = {callbacks::ModelCheckpoint((dir.path / "model.{epoch}").string())}, .verbose = 0});
  EXPECT_EQ(dir.names(), (std::set<std::string>{"model.1", "model.2"}));
  // The last one is the trained model, which load_model rebuilds.
  Sequential loaded = Sequential::load_model((dir.path / "model.2").string());
  std::vector<Tensor> expected = p.model.get_weights(), actual = loaded.get_weights();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_EQ(actual[i].to_vector<float>(), expected[i].to_vector<float>());
}

TEST(Callbacks, ModelCheckpointSavesEveryNStepsAcrossEpochs) {
  Problem p = problem();  // 70 steps per epoch
  TestDir dir("lockstep_test_ckpt_steps");
  // Records the weights after step 90 (epoch 2, batch 20), when the third save happens.
  std::vector<Tensor> at_step_90;
  struct Snapshot : Callback {
    std::vector<Tensor>* out;
    explicit Snapshot(std::vector<Tensor>* o) : out(o) {}
    void on_train_batch_end(int64_t, const Logs&) override {
      if (model_->optimizer()->iterations() == 90) *out = model_->get_weights();
    }
  };
  p.model.fit(p.ds, {.epochs = 2,
                     .callbacks = {callbacks::ModelCheckpoint((dir.path / "w.{epoch}-{batch:03d}.safetensors").string(),
                                                              {.save_weights_only = true, .save_freq = 30}),
                                   std::make_shared<Snapshot>(&at_step_90)},
                     .verbose = 0});
  // Steps 30, 60, 90 and 120 of 140, named by the epoch they fell in and the batch within it; none at epoch ends.
  EXPECT_EQ(dir.names(), (std::set<std::string>{"w.1-030.safetensors", "w.1-060.safetensors", "w.2-020.safetensors",
                                                "w.2-050.safetensors"}));
  Problem q = problem();
  q.model.load_weights((dir.path / "w.2-020.safetensors").string());
  std::vector<Tensor> loaded = q.model.get_weights();
  ASSERT_EQ(loaded.size(), at_step_90.size());
  for (size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(loaded[i].to_vector<float>(), at_step_90[i].to_vector<float>());
}

TEST(Callbacks, ModelCheckpointSaveBestOnlyInSteps) {
  Problem p = problem();
  TestDir dir("lockstep_test_ckpt_best");
  p.model.fit(p.ds, {.epochs = 1,
                     .callbacks = {callbacks::ModelCheckpoint(
                         (dir.path / "best.{batch}.safetensors").string(),
                         {.monitor = "loss", .save_best_only = true, .save_weights_only = true, .save_freq = 10})},
                     .verbose = 0});
  // The first save always improves on +inf; later ones only when the running loss went down.
  EXPECT_TRUE(dir.names().count("best.10.safetensors"));
  EXPECT_LE(dir.names().size(), 7u);
}

TEST(Callbacks, ModelCheckpointBatchFieldNeedsStepSaves) {
  Problem p = problem();
  TestDir dir("lockstep_test_ckpt_batch");
  auto fit = [&] {
    p.model.fit(p.ds, {.callbacks = {callbacks::ModelCheckpoint((dir.path / "w.{batch}").string())}, .verbose = 0});
  };
  EXPECT_THROW(fit(), ValueError);
  EXPECT_TRUE(dir.names().empty());
}


// Two workers (threads of this process, each with its own MultiWorkerMirroredStrategy) given separate
// directories, so that the test sees who wrote: the chief alone, whole models and weights alike.
TEST(Callbacks, ModelCheckpointWritesOnTheChiefOnly) {
  TestDir dir("lockstep_test_ckpt_workers");
  auto worker = [&](int rank, distribute::MultiWorkerMirroredStrategy& strategy) {
    std::optional<Problem> p;
    {
      auto scope = strategy.scope();
      p = problem(0.01, 2, "dense");  // one example per replica; the same names on both workers
    }
    const fs::path mine = dir.path / ("worker" + std::to_string(rank));
    p->model.fit(p->ds, {.epochs = 1,
                         .callbacks = {callbacks::ModelCheckpoint((mine / "model").string()),
                                       callbacks::ModelCheckpoint((mine / "w.{batch}.safetensors").string(),
                                                                  {.save_weights_only = true, .save_freq = 20})},
                         .verbose = 0});
  };
  const std::vector<std::string> errors = testing::on_two_workers(worker);
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  // The non-chief writes nothing; it only makes the directory its file would go in, as TF's non-chief (which
  // writes its copy there) leaves it for the tutorials' rmtree.
  EXPECT_EQ(dir.names(), (std::set<std::string>{"worker0", "worker1"}));
  EXPECT_TRUE(fs::is_empty(dir.path / "worker1"));
  std::set<std::string> written;
  for (const auto& e : fs::directory_iterator(dir.path / "worker0")) written.insert(e.path().filename().string());
  EXPECT_EQ(written, (std::set<std::string>{"model", "w.20.safetensors"}));
}

}  // namespace
}  // namespace lockstep::keras
