// Every registered layer resumes bitwise: for each class of layers::registry(), a small model holding it trains
// with BackupAndRestore, is stopped mid-epoch (every worker at once, as a killed job's restart stops them all), and
// trains again from scratch in a "new process" (fresh model, optimizer and data objects); it must end with the
// weights of a fit that was never stopped — with no strategy, MirroredStrategy's two replicas, and two and three
// workers. A new layer needs one row in kSamples (the test fails for a class without one), nothing else: its
// weights, random streams (Layer::add_random_stream) and statistics are checkpointed through the registry's model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <barrier>
#include <filesystem>
#include <mutex>

#include "../two_workers.h"
#include "crash_at.h"
#include "lockstep/keras/model.h"
#include "lockstep/train/checkpoint.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// How to put a layer class in a model: its config, the feature shape it takes, and its kind of input.
struct Sample {
  json config;
  Shape input;
  enum Kind { kFloats, kTokens, kTwoBranches, kEveryModel } kind = kFloats;
};

const std::map<std::string, Sample>& samples() {
  static const std::map<std::string, Sample> table = {
      {"InputLayer", {{}, {}, Sample::kEveryModel}},
      {"Reshape", {{{"target_shape", {3, 4}}}, {12}}},
      {"Flatten", {json::object(), {3, 4}}},
      {"Conv2D", {{{"filters", 2}, {"kernel_size", 3}, {"strides", 1}, {"activation", "relu"}}, {5, 5, 2}}},
      {"MaxPooling2D", {{{"pool_size", 2}, {"strides", 2}}, {4, 4, 2}}},
      {"AveragePooling2D", {{{"pool_size", 2}, {"strides", 1}}, {4, 4, 2}}},
      {"GlobalAveragePooling2D", {json::object(), {4, 4, 2}}},
      {"GlobalMaxPooling2D", {json::object(), {4, 4, 2}}},
      {"Dense", {{{"units", 5}, {"activation", "tanh"}}, {6}}},
      {"Dropout", {{{"rate", 0.4}}, {6}}},
      {"BatchNormalization", {{{"momentum", 0.8}}, {6}}},
      {"LayerNormalization", {json::object(), {6}}},
      {"Activation", {{{"activation", "sigmoid"}}, {6}}},
      {"Embedding",
       {{{"input_dim", 10},
         {"output_dim", 3},
         {"embeddings_initializer",
          {{"class_name", "RandomUniform"}, {"config", {{"minval", -0.05}, {"maxval", 0.05}}}}}},
        {4},
        Sample::kTokens}},
      {"Normalization", {{{"mean", 0.5}, {"variance", 2.0}}, {6}}},
      {"LeakyReLU", {json::object(), {6}}},
      {"Rescaling", {{{"scale", 0.5}, {"offset", 0.1}}, {6}}},
      {"Add", {json::object(), {6}, Sample::kTwoBranches}},
      {"Concatenate", {json::object(), {6}, Sample::kTwoBranches}},
      {"UpSampling2D", {json::object(), {3, 3, 2}}},
      {"Conv1D", {{{"filters", 2}, {"kernel_size", 3}, {"padding", "causal"}, {"activation", "relu"}}, {6, 3}}},
      {"MaxPooling1D", {{{"pool_size", 2}}, {6, 3}}},
      {"AveragePooling1D", {{{"pool_size", 3}, {"strides", 1}, {"padding", "same"}}, {6, 3}}},
      {"GlobalAveragePooling1D", {json::object(), {6, 3}}},
      {"GlobalMaxPooling1D", {{{"keepdims", true}}, {6, 3}}},
  };
  return table;
}

// Input -> the layer (a Dropout beside it, so that every model also has a random layer) -> Dense(3) logits.
Model model_with(const std::string& class_name) {
  const Sample& s = samples().at(class_name);
  if (s.kind == Sample::kTwoBranches) {
    auto input = Input(s.input);
    KerasTensor a = layers::Dense(4)(input), b = layers::Dense(4)(layers::Dropout(0.3)(input));
    LayerPtr merge = layers::registry().from_config(class_name, s.config);
    return Model(input, layers::Dense(3)(layers::Flatten()((*merge)({a, b}))));
  }
  std::vector<LayerHandle> stack{Input(s.input, s.kind == Sample::kTokens ? DType::int64 : DType::float32)};
  if (s.kind != Sample::kEveryModel) stack.push_back(layers::registry().from_config(class_name, s.config));
  stack.push_back(layers::Flatten());
  stack.push_back(layers::Dropout(0.25));
  stack.push_back(layers::Dense(3));
  return Sequential(stack);
}

data::Dataset inputs(const Sample& s, int64_t global_batch) {
  Philox rng(3);
  std::vector<int64_t> dims{48};
  for (int64_t d : s.input.dims()) dims.push_back(d);
  Tensor x = s.kind == Sample::kTokens
                 ? raw_ops::cast(random_uniform(Shape(dims), rng, 0, 10, DType::float64), DType::int64)
                 : random_normal(Shape(dims), rng, 0, 1);
  Tensor y = raw_ops::cast(random_uniform({48}, rng, 0, 3, DType::float64), DType::int64);
  return data::Dataset::from_tensor_slices(x, y).shuffle(48, 5).repeat().batch(global_batch);
}

// One worker's run, the same program every time (as a restarted process runs it): 2 epochs of 5 steps, backups
// every 3 steps, stopped after `crash_at` steps when it is > 0. Models are built one worker at a time, from the
// same seed, as separate processes would build them.
std::vector<Tensor> train(const std::string& class_name, distribute::Strategy* strategy, const std::string& backup,
                          int64_t crash_at) {
  static std::mutex building;
  std::optional<Model> model;
  {
    std::lock_guard lock(building);
    utils::set_random_seed(11);
    clear_session();  // layer names as a fresh process numbers them
    std::optional<distribute::Strategy::Scope> scope;
    if (strategy) scope.emplace(strategy);
    model.emplace(model_with(class_name));
    model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"accuracy"}});
  }
  const int replicas = strategy ? strategy->num_replicas_in_sync() : 1;
  std::vector<CallbackPtr> cbs;
  if (!backup.empty()) cbs.push_back(callbacks::BackupAndRestore({.backup_dir = backup, .save_freq = 3}));
  if (crash_at > 0) cbs.push_back(std::make_shared<CrashAt>(crash_at));
  model->fit(inputs(samples().at(class_name), 4 * replicas),
             {.epochs = 2, .steps_per_epoch = 5, .callbacks = cbs, .verbose = 0});
  return model->get_weights();
}

enum class Setup { kNone, kMirrored, kTwoWorkers, kThreeWorkers };

// The weights every worker ends with, run under `setup`; a worker's error fails the test.
std::vector<std::vector<Tensor>> run(Setup setup, const std::string& class_name, const std::string& backup,
                                     int64_t crash_at) {
  if (setup == Setup::kNone) return {train(class_name, nullptr, backup, crash_at)};
  if (setup == Setup::kMirrored) {
    distribute::MirroredStrategy strategy({"/cpu:0", "/cpu:1"});
    return {train(class_name, &strategy, backup, crash_at)};
  }
  const int n = setup == Setup::kTwoWorkers ? 2 : 3;
  std::vector<std::vector<Tensor>> out(static_cast<size_t>(n));
  std::vector<int> crashed(static_cast<size_t>(n), 0);
  // The stopped workers leave together, as the restart of a killed job stops them all: one that went first
  // would be a failed peer to the others.
  std::barrier stopped(n);
  const std::vector<std::string> errors =
      testing::on_workers(n, [&](int rank, distribute::MultiWorkerMirroredStrategy& strategy) {
        // Each worker writes its own backup directory, as separate hosts would.
        const std::string mine = rank == 0 ? backup : backup.empty() ? "" : backup + "_worker" + std::to_string(rank);
        try {
          out[static_cast<size_t>(rank)] = train(class_name, &strategy, mine, crash_at);
        } catch (const Crash&) {
          crashed[static_cast<size_t>(rank)] = 1;
        }
        stopped.arrive_and_wait();
      });
  EXPECT_EQ(errors, std::vector<std::string>(static_cast<size_t>(n))) << class_name;
  if (crash_at > 0) {
    EXPECT_EQ(crashed, std::vector<int>(static_cast<size_t>(n), 1)) << "every worker stops at the same step";
    throw Crash();
  }
  return out;
}

std::string setup_name(Setup s) {
  return s == Setup::kNone         ? "NoStrategy"
         : s == Setup::kMirrored   ? "Mirrored2"
         : s == Setup::kTwoWorkers ? "Workers2"
                                   : "Workers3";
}

class EveryLayer : public ::testing::TestWithParam<std::tuple<std::string, Setup>> {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("lockstep_resume_registry_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override {
    for (const char* suffix : {"", "_worker1", "_worker2"}) fs::remove_all(dir_ + suffix);
  }
  std::string dir_;
};

TEST_P(EveryLayer, StoppedMidEpochAndRestartedEndsWithTheWeightsOfAnUninterruptedFit) {
  const auto& [class_name, setup] = GetParam();
  const std::vector<std::vector<Tensor>> reference = run(setup, class_name, "", 0);
  EXPECT_THROW(run(setup, class_name, dir_, 7), Crash);  // 1 step after the backup at step 6, in epoch 2
  ASSERT_TRUE(fs::exists(dir_ + "/checkpoint")) << "no backup was written";
  const std::vector<std::vector<Tensor>> resumed = run(setup, class_name, dir_, 0);
  ASSERT_EQ(resumed.size(), reference.size());
  for (size_t w = 0; w < reference.size(); ++w) {
    ASSERT_EQ(resumed[w].size(), reference[w].size());
    for (size_t i = 0; i < reference[w].size(); ++i)
      EXPECT_EQ(resumed[w][i].to_vector<float>(), reference[w][i].to_vector<float>())
          << class_name << " under " << setup_name(setup) << ": worker " << w << ", variable " << i;
  }
}

std::vector<std::string> registered() {
  return layers::registry().names();
}

INSTANTIATE_TEST_SUITE_P(
    Registry, EveryLayer,
    ::testing::Combine(::testing::ValuesIn(registered()),
                       ::testing::Values(Setup::kNone, Setup::kMirrored, Setup::kTwoWorkers, Setup::kThreeWorkers)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + setup_name(std::get<1>(info.param)); });

TEST(EveryLayer, EveryRegisteredClassHasASample) {
  for (const std::string& name : registered())
    EXPECT_TRUE(samples().contains(name))
        << "layer class " << name << " has no row in this test's samples(): add one, so its resume is tested";
}

// The streams that the restarted job continues are every worker's own: a 2-worker backup holds a random stream
// position for each replica, not only the chief's.
TEST(EveryLayer, ABackupHoldsEveryWorkersRandomStreams) {
  const std::string dir =
      (fs::temp_directory_path() / ("lockstep_resume_streams_" + std::to_string(::getpid()))).string();
  struct Cleanup {  // also when an assertion ends the test early
    std::string dir;
    ~Cleanup() {
      for (const char* suffix : {"", "_worker1"}) fs::remove_all(dir + suffix);
    }
  } cleanup{dir};
  fs::remove_all(dir);
  EXPECT_THROW(run(Setup::kTwoWorkers, "Dropout", dir, 4), Crash);
  const std::optional<std::string> latest = train::latest_checkpoint(dir);
  ASSERT_TRUE(latest.has_value());
  const train::SafetensorsFile file = train::load_safetensors(*latest + ".safetensors");
  const json per_worker = json::parse(file.metadata.at("per_worker"));
  ASSERT_EQ(per_worker.at("model").size(), 2u);
  for (int w = 0; w < 2; ++w) {
    const json& streams = per_worker["model"][w]["random_streams"];
    ASSERT_EQ(streams.size(), 2u) << "two Dropout layers";
    EXPECT_TRUE(streams[0].contains(std::to_string(w))) << "worker " << w << " saved its replica's stream";
    EXPECT_GT(streams[0][std::to_string(w)][2].get<uint64_t>(), 0u) << "at the position it reached";
  }
}

}  // namespace
}  // namespace lockstep::keras
