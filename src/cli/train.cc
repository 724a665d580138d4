// `lockstep train`: trains a built-in model on Fashion-MNIST or MNIST with Keras fit or a custom training
// loop, evaluates on the test set and writes a JSON metrics file.
#include <chrono>
#include <cmath>
#include <fstream>

#include "cli.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/threads.h"
#include "launcher.h"
#include "lockstep/data/datasets.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::cli {

namespace {

struct TrainArgs {
  std::string model = "tutorial_cnn";
  std::string dataset = "fashion_mnist";
  int64_t epochs = 3;
  int64_t steps_per_epoch = -1;
  int64_t batch_size = 64;
  std::string optimizer = "adam";
  double learning_rate = 0.001;
  uint64_t seed = 1;
  int threads = 0;
  std::string loop = "fit";
  std::string save_model;
  std::string metrics_out;
  int verbose = 1;
  int workers = 0;  // > 0: launch this many local workers, each running this command with its TF_CONFIG
  int max_restarts = 0;
};

std::pair<datasets::Split, datasets::Split> load(const std::string& name) {
  if (name == "fashion_mnist") return datasets::fashion_mnist::load_data();
  if (name == "mnist") return datasets::mnist::load_data();
  return datasets::load_idx_directory(name);
}

std::shared_ptr<keras::optimizers::Optimizer> make_optimizer(const std::string& name, double lr) {
  namespace o = keras::optimizers;
  if (name == "sgd") return o::SGD({.learning_rate = lr});
  if (name == "rmsprop") return o::RMSprop({.learning_rate = lr});
  if (name == "adam") return o::Adam({.learning_rate = lr});
  throw ValueError(make_message("unknown optimizer '", name, "': use sgd, rmsprop or adam"));
}

// Images scaled to [0, 1] as float32, labels as int64: what the tutorials feed their models.
data::Dataset as_dataset(const datasets::Split& split) {
  return data::Dataset::from_tensor_slices(cast(split.images, DType::float32) / 255.0, cast(split.labels, DType::int64));
}

// The custom training loop of the tutorials: strategy.run of a GradientTape step whose per-example losses
// are averaged over the global batch, regularization scaled by the number of replicas, and the replicas'
// losses summed with strategy.reduce. Records each step's loss.
std::vector<keras::Logs> custom_loop(distribute::Strategy& strategy, keras::Sequential& model,
                                     const data::Dataset& train, const data::Dataset& test, const TrainArgs& a,
                                     int64_t global_batch, int64_t& steps, std::vector<double>& step_losses) {
  auto optimizer = model.optimizer();
  auto loss_fn = keras::losses::SparseCategoricalCrossentropy(
      {.from_logits = true, .reduction = keras::losses::Reduction::NONE});
  auto accuracy = keras::metrics::SparseCategoricalAccuracy();
  auto step_fn = [&](const data::Batch& b) {
    GradientTape tape;
    Tensor logits = model(b.x, {.training = true});
    Tensor loss = nn::compute_average_loss((*loss_fn)(b.y, logits), {.global_batch_size = global_batch});
    std::vector<Tensor> reg = model.losses();
    if (!reg.empty()) loss = loss + nn::scale_regularization_loss(add_n(reg));
    std::vector<Variable> vars = model.trainable_variables();
    optimizer->apply_gradients(tape.gradient(loss, vars), vars);
    return std::pair{loss, stop_gradient(logits)};
  };
  distribute::DistributedDataset dist = strategy.experimental_distribute_dataset(train);
  std::vector<keras::Logs> epochs;
  auto it = dist.make_iterator(0);
  for (int64_t epoch = 0; epoch < a.epochs; ++epoch) {
    if (a.steps_per_epoch < 0 && epoch > 0) it = dist.make_iterator(static_cast<uint64_t>(epoch));
    accuracy->reset_state();
    double total = 0;
    int64_t n = 0;
    for (; a.steps_per_epoch < 0 || n < a.steps_per_epoch; ++n) {
      auto batches = it.next();
      if (!batches) break;
      auto out = strategy.run(step_fn, *batches);
      distribute::PerReplica<Tensor> losses;
      for (size_t r = 0; r < out.values.size(); ++r) {
        losses.values.push_back(out.values[r].first);
        NoGradGuard no_grad;
        accuracy->update_state(batches->values[r].y, out.values[r].second);
      }
      const double loss = strategy.reduce(distribute::ReduceOp::SUM, losses).item<double>();
      if (step_losses.size() < 1000) step_losses.push_back(loss);
      total += loss;
      ++steps;
    }
    std::vector<double> acc = accuracy->state();
    strategy.all_reduce_sum(acc);  // over workers, so every worker reports the global accuracy
    accuracy->set_state(acc);
    keras::Logs logs;
    logs.set("loss", n ? total / static_cast<double>(n) : 0.0);
    logs.set("accuracy", accuracy->result());
    auto val = model.evaluate(test, {.verbose = 0});
    logs.set("val_loss", val["loss"]);
    logs.set("val_accuracy", val["accuracy"]);
    if (a.verbose && strategy.is_chief())
      std::printf("Epoch %lld/%lld - loss: %.4f - accuracy: %.4f - val_loss: %.4f - val_accuracy: %.4f\n",
                  static_cast<long long>(epoch + 1), static_cast<long long>(a.epochs), *logs.get("loss"),
                  *logs.get("accuracy"), *logs.get("val_loss"), *logs.get("val_accuracy"));
    epochs.push_back(logs);
  }
  return epochs;
}

// Every worker's weights hash, in rank order (one entry on a single worker).
std::vector<std::string> hashes_of_all_workers(distribute::Strategy& strategy, const keras::Sequential& model) {
  const std::string mine = weights_sha256(model);
  distribute::Communicator* cross = strategy.cross_worker();
  if (!cross) return {mine};
  std::string all(mine.size() * static_cast<size_t>(strategy.num_workers()), ' ');
  cross->all_gather(mine.data(), all.data(), mine.size());
  std::vector<std::string> out;
  for (int w = 0; w < strategy.num_workers(); ++w) out.push_back(all.substr(static_cast<size_t>(w) * mine.size(), mine.size()));
  return out;
}

// `lockstep train --workers N`: the same command on N local workers through the launcher.
int run_workers(const TrainArgs& a) {
  LaunchOptions l;
  l.num_workers = a.workers;
  l.max_restarts = a.max_restarts;
  l.command = {"lockstep", "train", "--model", a.model, "--dataset", a.dataset, "--epochs", std::to_string(a.epochs),
               "--steps-per-epoch", std::to_string(a.steps_per_epoch), "--batch-size", std::to_string(a.batch_size),
               "--optimizer", a.optimizer, "--learning-rate", std::to_string(a.learning_rate), "--seed",
               std::to_string(a.seed), "--threads", std::to_string(a.threads), "--loop", a.loop, "--verbose",
               std::to_string(a.verbose)};
  for (auto [flag, value] : {std::pair{"--save-model", a.save_model}, {"--metrics-out", a.metrics_out}})
    if (!value.empty()) l.command.insert(l.command.end(), {flag, value});
  return launch(l);
}

int run_train(const TrainArgs& a) {
  if (a.workers > 0) return run_workers(a);
  // One worker of the cluster in TF_CONFIG (or SLURM), or a single local worker when none is set: a
  // malformed configuration fails here, before any data is read.
  std::unique_ptr<distribute::ClusterResolver> cluster = distribute::resolve_cluster();
  set_num_threads(a.threads);
  keras::utils::set_random_seed(a.seed);
  auto [train_split, test_split] = load(a.dataset);
  const int64_t n_train = train_split.images.dim(0);

  // Refuse data the model cannot take before any training starts.
  std::vector<int64_t> feature_dims(train_split.images.shape().dims().begin() + 1, train_split.images.shape().dims().end());
  LS_CHECK(Shape(feature_dims) == Shape({28, 28}), ValueError, "data set '", a.dataset, "' has images of shape ",
           Shape(feature_dims).str(), " but model ", a.model, " takes (28, 28)");

  distribute::MultiWorkerMirroredStrategy strategy({}, std::move(cluster));
  const int64_t global_batch = a.batch_size * strategy.num_replicas_in_sync();
  keras::Sequential model = [&] {
    auto scope = strategy.scope();  // the model's and optimizer's variables are mirrored
    keras::Sequential m = build_model(a.model);
    m.compile({.optimizer = make_optimizer(a.optimizer, a.learning_rate),
               .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
               .metrics = {"accuracy"}});
    return m;
  }();
  if (a.verbose && strategy.is_chief()) model.summary();

  // Batched with the global batch size: the strategy splits each batch across the replicas.
  data::Dataset train = as_dataset(train_split).shuffle(n_train, a.seed);
  if (a.steps_per_epoch > 0) train = train.repeat();
  train = train.batch(global_batch);
  data::Dataset test = as_dataset(test_split).batch(256 * strategy.num_replicas_in_sync());

  auto start = std::chrono::steady_clock::now();
  std::vector<keras::Logs> epochs;
  std::vector<double> step_losses;
  int64_t steps = 0;
  if (a.loop == "fit") {
    auto history = model.fit(train, {.epochs = a.epochs, .steps_per_epoch = a.steps_per_epoch, .validation_data = test,
                                     .verbose = a.verbose});
    for (size_t e = 0; e < history.epoch.size(); ++e) {
      keras::Logs logs;
      for (const auto& [k, v] : history.history) logs.set(k, v[e]);
      epochs.push_back(logs);
    }
    steps = model.optimizer()->iterations();
  } else {
    epochs = custom_loop(strategy, model, train, test, a, global_batch, steps, step_losses);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  auto result = model.evaluate(test, {.verbose = 0});
  const std::vector<std::string> hashes = hashes_of_all_workers(strategy, model);
  if (!strategy.is_chief()) return 0;  // the chief alone reports and writes files
  std::printf("Test loss: %.4f - test accuracy: %.4f\n", result["loss"], result["accuracy"]);
  if (!a.save_model.empty()) model.save(a.save_model);

  if (!a.metrics_out.empty()) {
    nlohmann::json j;
    j["epochs"] = nlohmann::json::array();
    for (const keras::Logs& logs : epochs) {
      nlohmann::json e;
      for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"})
        if (auto v = logs.get(k)) e[k] = *v;
      j["epochs"].push_back(e);
    }
    j["test_loss"] = result["loss"];
    j["test_accuracy"] = result["accuracy"];
    j["global_steps"] = steps;
    j["samples_per_second"] = static_cast<double>(steps * global_batch) / seconds;
    j["num_workers"] = strategy.num_workers();
    j["num_replicas_in_sync"] = strategy.num_replicas_in_sync();
    j["weights_sha256"] = hashes[0];
    j["weights_sha256_per_worker"] = hashes;
    if (!step_losses.empty()) j["step_losses"] = step_losses;
    std::ofstream out(a.metrics_out);
    out << j.dump(2) << "\n";
    LS_CHECK(out.good(), RuntimeError, "cannot write the metrics file ", a.metrics_out);
  }
  return 0;
}

}  // namespace

std::function<int()> add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a built-in model on Fashion-MNIST or MNIST");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated flag: the last wins
  cmd->add_option("--model", a->model, "tutorial_cnn | fashion_cnn")->check(CLI::IsMember({"tutorial_cnn", "fashion_cnn"}));
  cmd->add_option("--dataset", a->dataset, "fashion_mnist | mnist | a directory of IDX files");
  cmd->add_option("--epochs", a->epochs)->check(CLI::PositiveNumber);
  cmd->add_option("--steps-per-epoch", a->steps_per_epoch, "batches per epoch (default: one pass over the data)");
  cmd->add_option("--batch-size", a->batch_size, "per-worker batch size")->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer", a->optimizer)->check(CLI::IsMember({"sgd", "rmsprop", "adam"}));
  cmd->add_option("--learning-rate", a->learning_rate)->check(CLI::PositiveNumber);
  cmd->add_option("--seed", a->seed);
  cmd->add_option("--threads", a->threads, "intra-op threads (0: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--loop", a->loop, "fit (Keras) | ctl (custom training loop)")->check(CLI::IsMember({"fit", "ctl"}));
  cmd->add_option("--save-model", a->save_model, "directory to save the trained model in");
  cmd->add_option("--metrics-out", a->metrics_out, "JSON file for the run's metrics");
  cmd->add_option("--verbose", a->verbose, "0 silent, 1 progress bar, 2 one line per epoch")->check(CLI::Range(0, 2));
  cmd->add_option("--workers", a->workers, "run on this many local workers (lockstep launch)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-restarts", a->max_restarts, "with --workers: restarts of the group after a failure")
      ->check(CLI::NonNegativeNumber);
  return [a] { return run_train(*a); };
}

}  // namespace lockstep::cli
