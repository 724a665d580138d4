// keras.callbacks.TensorBoard: Keras 3's tags, steps and runs after a short fit with validation data, read back by
// the C++ parser and by TensorBoard's reader; batch-level frequency, evaluate(), chief-only writes, options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/model.h"
#include "../two_workers.h"
#include "../interop_python.h"
#include "../tensorboard_events.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;
using lockstep::testing::event_files;
using lockstep::testing::read_events;
using lockstep::testing::tensor_values;
namespace tb = lockstep::train::tensorboard;

using TensorBoardTest = lockstep::testing::EventFileTest;

// 70 examples in batches of 10 (7 steps per epoch), 20 for validation; a model and layer with fixed names.
struct Problem {
  Sequential model;
  data::Dataset train, val;
};
Problem problem() {
  Philox rng(3);
  Tensor x = random_uniform({90, 4}, rng);
  Tensor y = raw_ops::cast(random_uniform({90}, rng, 0, 2, DType::float64), DType::int64);
  Sequential model({Input({4}), layers::Dense(2, {.name = "dense"})}, "sequential");
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.05}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  auto ds = data::Dataset::from_tensor_slices(x, y);
  return {model, ds.take(70).batch(10), ds.skip(70).batch(10)};
}

// One run's summaries: tag -> [(step, event)], in file order.
using RunSummaries = std::map<std::string, std::vector<std::pair<int64_t, tb::Summary::Value>>>;
RunSummaries read_run(const std::string& dir) {
  const std::vector<std::string> files = event_files(dir);
  EXPECT_EQ(files.size(), 1u) << dir;
  RunSummaries run;
  if (files.empty()) return run;
  for (const tb::Event& e : read_events(files[0]))
    for (const tb::Summary::Value& v : e.summary().value()) run[v.tag()].emplace_back(e.step(), v);
  return run;
}
std::vector<int64_t> steps_of(const RunSummaries& run, const std::string& tag) {
  std::vector<int64_t> steps;
  if (run.count(tag))
    for (const auto& [step, v] : run.at(tag)) steps.push_back(step);
  return steps;
}
std::vector<float> scalars_of(const RunSummaries& run, const std::string& tag) {
  std::vector<float> values;
  if (run.count(tag))
    for (const auto& [step, v] : run.at(tag)) values.push_back(tensor_values<float>(v.tensor()).at(0));
  return values;
}
std::vector<float> as_floats(const std::vector<double>& values) { return {values.begin(), values.end()}; }
std::set<std::string> tags_of(const RunSummaries& run) {
  std::set<std::string> tags;
  for (const auto& [tag, events] : run) tags.insert(tag);
  return tags;
}

TEST_F(TensorBoardTest, FitWritesKerasTagsAndStepsForTrainAndValidation) {
  auto [model, train, val] = problem();
  callbacks::History history = model.fit(
      train, {.epochs = 3,
              .validation_data = val,
              .callbacks = {callbacks::TensorBoard({.log_dir = path("logs"),
                                                    .histogram_freq = 2,
                                                    .write_graph = true,
                                                    .write_steps_per_second = true,
                                                    .update_freq = 2})},
              .verbose = 0});
  std::set<std::string> runs;
  for (const auto& e : fs::directory_iterator(path("logs"))) runs.insert(e.path().filename().string());
  EXPECT_EQ(runs, (std::set<std::string>{"train", "validation"}));

  const RunSummaries t = read_run(path("logs/train"));
  EXPECT_EQ(tags_of(t), (std::set<std::string>{"keras", "epoch_loss", "epoch_accuracy", "epoch_learning_rate",
                                               "epoch_steps_per_second", "batch_loss", "batch_accuracy",
                                               "batch_steps_per_second", "sequential/dense/kernel/histogram",
                                               "sequential/dense/bias/histogram"}));
  EXPECT_EQ(steps_of(t, "epoch_loss"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(scalars_of(t, "epoch_loss"), as_floats(history.history.at("loss")));
  EXPECT_EQ(scalars_of(t, "epoch_accuracy"), as_floats(history.history.at("accuracy")));
  EXPECT_EQ(scalars_of(t, "epoch_learning_rate"), std::vector<float>(3, 0.05f));
  for (float v : scalars_of(t, "epoch_steps_per_second")) EXPECT_GT(v, 0);
  // 21 batches in all, counted from 1 across epochs; every second one written.
  EXPECT_EQ(steps_of(t, "batch_loss"), (std::vector<int64_t>{2, 4, 6, 8, 10, 12, 14, 16, 18, 20}));
  EXPECT_EQ(steps_of(t, "batch_accuracy"), steps_of(t, "batch_loss"));
  EXPECT_EQ(steps_of(t, "batch_steps_per_second"), steps_of(t, "batch_loss"));
  // Histograms at epochs 0 and 2; every weight counted.
  EXPECT_EQ(steps_of(t, "sequential/dense/kernel/histogram"), (std::vector<int64_t>{0, 2}));
  for (const auto& [step, v] : t.at("sequential/dense/kernel/histogram")) {
    EXPECT_EQ(v.metadata().plugin_data().plugin_name(), "histograms");
    std::vector<double> rows = tensor_values<double>(v.tensor());
    ASSERT_EQ(rows.size(), 90u);
    double total = 0;
    for (size_t i = 0; i < 30; ++i) total += rows[3 * i + 2];
    EXPECT_EQ(total, 8);  // a 4x2 kernel
  }
  // The conceptual graph: the model's config for TensorBoard's graph plugin.
  ASSERT_EQ(steps_of(t, "keras"), std::vector<int64_t>{0});
  const tb::Summary::Value& graph = t.at("keras")[0].second;
  EXPECT_EQ(graph.metadata().plugin_data().plugin_name(), "graph_keras_model");
  EXPECT_EQ(graph.metadata().plugin_data().content(), "1");
  const nlohmann::json config = nlohmann::json::parse(graph.tensor().string_val(0));
  EXPECT_EQ(config["class_name"], "Sequential");
  EXPECT_EQ(config["config"]["name"], "sequential");

  const RunSummaries v = read_run(path("logs/validation"));
  EXPECT_EQ(tags_of(v), (std::set<std::string>{"epoch_loss", "epoch_accuracy", "evaluation_loss_vs_iterations",
                                               "evaluation_accuracy_vs_iterations"}));
  EXPECT_EQ(steps_of(v, "epoch_loss"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(scalars_of(v, "epoch_loss"), as_floats(history.history.at("val_loss")));
  EXPECT_EQ(scalars_of(v, "epoch_accuracy"), as_floats(history.history.at("val_accuracy")));
  EXPECT_EQ(steps_of(v, "evaluation_loss_vs_iterations"), (std::vector<int64_t>{7, 14, 21}));
  EXPECT_EQ(scalars_of(v, "evaluation_loss_vs_iterations"), as_floats(history.history.at("val_loss")));
}

TEST_F(TensorBoardTest, EpochSummariesOnlyByDefaultAndNoValidationRunWithoutValidation) {
  auto [model, train, val] = problem();
  model.fit(train, {.epochs = 2, .callbacks = {callbacks::TensorBoard({.log_dir = path("logs")})}, .verbose = 0});
  EXPECT_FALSE(fs::exists(path("logs/validation")));
  EXPECT_EQ(tags_of(read_run(path("logs/train"))),
            (std::set<std::string>{"epoch_loss", "epoch_accuracy", "epoch_learning_rate"}));
  // A second fit with the same callback starts new files; "batch" writes every batch.
  auto cb = callbacks::TensorBoard({.log_dir = path("again"), .update_freq = "batch"});
  model.fit(train, {.epochs = 1, .callbacks = {cb}, .verbose = 0});
  model.fit(train, {.epochs = 1, .callbacks = {cb}, .verbose = 0});
  EXPECT_EQ(event_files(path("again/train")).size(), 2u);
  for (const std::string& file : event_files(path("again/train"))) {
    std::vector<int64_t> batch_steps;
    for (const tb::Event& e : read_events(file))
      for (const tb::Summary::Value& s : e.summary().value())
        if (s.tag() == "batch_loss") batch_steps.push_back(e.step());
    EXPECT_EQ(batch_steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  }
}

TEST_F(TensorBoardTest, EvaluateWritesEvaluationScalarsAtTheOptimizersIterations) {
  auto [model, train, val] = problem();
  model.fit(train, {.epochs = 1, .verbose = 0});
  std::map<std::string, double> result =
      model.evaluate(val, {.callbacks = {callbacks::TensorBoard({.log_dir = path("logs")})}, .verbose = 0});
  EXPECT_FALSE(fs::exists(path("logs/train")));
  const RunSummaries v = read_run(path("logs/validation"));
  EXPECT_EQ(steps_of(v, "evaluation_loss_vs_iterations"), std::vector<int64_t>{7});
  EXPECT_EQ(scalars_of(v, "evaluation_loss_vs_iterations"), std::vector<float>{static_cast<float>(result.at("loss"))});
}

TEST_F(TensorBoardTest, OptionsAreChecked) {
  EXPECT_THROW(callbacks::UpdateFreq("weekly"), ValueError);
  EXPECT_THROW(callbacks::UpdateFreq(int64_t{0}), ValueError);
  EXPECT_EQ(callbacks::UpdateFreq("batch").batches, 1);
  EXPECT_EQ(callbacks::UpdateFreq("epoch").batches, 0);
  EXPECT_THROW(callbacks::TensorBoard({.histogram_freq = -1}), ValueError);
}

// Two workers (threads of this process, each with its own MultiWorkerMirroredStrategy) given separate log
// directories, so that the test sees who wrote: the chief alone.
TEST_F(TensorBoardTest, OnlyTheChiefWrites) {
  auto worker = [&](int rank, distribute::MultiWorkerMirroredStrategy& strategy) {
    std::optional<Problem> p;
    {
      auto scope = strategy.scope();
      p = problem();
    }
    const std::string mine = path("worker" + std::to_string(rank));
    p->model.fit(p->train, {.epochs = 1,
                            .validation_data = p->val,
                            .callbacks = {callbacks::TensorBoard({.log_dir = mine, .histogram_freq = 1, .update_freq = 1})},
                            .verbose = 0});
    p->model.evaluate(p->val, {.callbacks = {callbacks::TensorBoard({.log_dir = mine})}, .verbose = 0});
  };
  const std::vector<std::string> errors = testing::on_two_workers(worker);
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_TRUE(fs::exists(path("worker0/train")));
  EXPECT_TRUE(fs::exists(path("worker0/validation")));
  EXPECT_FALSE(fs::exists(path("worker1"))) << "a worker other than the chief wrote TensorBoard logs";
}

// TensorBoard's own reader finds the callback's scalars with Keras' tags and steps, and its graph plugin turns the
// "keras" summary into a graph with the model's layers.
TEST_F(TensorBoardTest, TensorBoardsReaderFindsTheScalarsWithTheirSteps) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("tensorboard", why);
  if (python.empty()) GTEST_SKIP() << why << "; FitWritesKerasTagsAndSteps... checks the records";
  auto [model, train, val] = problem();
  callbacks::History history = model.fit(
      train, {.epochs = 2,
              .validation_data = val,
              .callbacks = {callbacks::TensorBoard({.log_dir = path("logs"), .histogram_freq = 1, .write_graph = true})},
              .verbose = 0});
  std::ofstream(path("read.py")) << lockstep::testing::kTensorBoardReaderScript
                                 << "from tensorboard.plugins.graph import keras_util\n"
                                    "if 'keras' in out:\n"
                                    "    graph = keras_util.keras_model_to_graph_def(json.loads(out['keras'][0][1]))\n"
                                    "    print(json.dumps(sorted(n.name for n in graph.node)))\n";
  auto read = [&](const std::string& run) {
    const std::string out = path(run + ".json"), err = path(run + ".err");
    const int rc = std::system((python + " " + path("read.py") + " " + path("logs/" + run) + " > " + out + " 2> " + err).c_str());
    EXPECT_EQ(rc, 0) << std::ifstream(err).rdbuf();
    std::ifstream in(out);
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  };
  const std::vector<nlohmann::json> t = read("train"), v = read("validation");
  ASSERT_EQ(t.size(), 2u);
  ASSERT_EQ(v.size(), 1u);
  for (const auto& [json, prefix] : {std::pair{t[0], std::string()}, std::pair{v[0], std::string("val_")}}) {
    for (const std::string name : {"loss", "accuracy"}) {
      const nlohmann::json& series = json.at("epoch_" + name);
      ASSERT_EQ(series.size(), 2u) << name;
      for (size_t epoch = 0; epoch < 2; ++epoch) {
        EXPECT_EQ(series[epoch][0], epoch);
        EXPECT_EQ(series[epoch][1].get<float>(), static_cast<float>(history.history.at(prefix + name)[epoch]));
        EXPECT_EQ(series[epoch][2], "scalars");
      }
    }
  }
  EXPECT_EQ(v[0]["evaluation_loss_vs_iterations"][1][0], 14);
  EXPECT_EQ(t[0]["sequential/dense/kernel/histogram"][1][0], 1);
  EXPECT_EQ(t[0]["sequential/dense/kernel/histogram"][1][2], "histograms");
  EXPECT_EQ(t[0]["keras"][0][2], "graph_keras_model");
  // The graph plugin's nodes: the layers, under the model's name.
  bool has_dense = false;
  for (const auto& node : t[1]) has_dense = has_dense || node.get<std::string>().ends_with("dense");
  EXPECT_TRUE(has_dense) << t[1].dump();
}

}  // namespace
}  // namespace lockstep::keras
