// `lockstep train`: trains a built-in model on Fashion-MNIST or MNIST with Keras fit or a custom training
// loop, evaluates on the test set and writes a JSON metrics file.
#include <chrono>
#include <cmath>
#include <fstream>

#include "cli.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/threads.h"
#include "lockstep/data/datasets.h"

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

// The custom training loop of the tutorials: GradientTape, per-example losses averaged over the global
// batch, regularization scaled by the number of replicas.
std::vector<keras::Logs> custom_loop(keras::Sequential& model, const data::Dataset& train, const data::Dataset& test,
                                     const TrainArgs& a, int64_t& steps) {
  auto optimizer = model.optimizer();
  auto loss_fn = keras::losses::SparseCategoricalCrossentropy(
      {.from_logits = true, .reduction = keras::losses::Reduction::NONE});
  auto accuracy = keras::metrics::SparseCategoricalAccuracy();
  std::vector<keras::Logs> epochs;
  data::Iterator it = train.make_iterator();
  for (int64_t epoch = 0; epoch < a.epochs; ++epoch) {
    if (a.steps_per_epoch < 0 && epoch > 0) it = train.make_iterator();
    accuracy->reset_state();
    double total = 0;
    int64_t n = 0;
    for (; a.steps_per_epoch < 0 || n < a.steps_per_epoch; ++n) {
      std::optional<data::Element> b = it.next();
      if (!b) break;
      GradientTape tape;
      Tensor logits = model(b->x, {.training = true});
      Tensor loss = nn::compute_average_loss((*loss_fn)(b->y, logits), {.global_batch_size = a.batch_size});
      std::vector<Tensor> reg = model.losses();
      if (!reg.empty()) loss = loss + nn::scale_regularization_loss(add_n(reg));
      std::vector<Variable> vars = model.trainable_variables();
      optimizer->apply_gradients(tape.gradient(loss, vars), vars);
      total += loss.item<double>();
      NoGradGuard no_grad;
      accuracy->update_state(b->y, logits);
      ++steps;
    }
    keras::Logs logs;
    logs.set("loss", n ? total / static_cast<double>(n) : 0.0);
    logs.set("accuracy", accuracy->result());
    auto val = model.evaluate(test, {.verbose = 0});
    logs.set("val_loss", val["loss"]);
    logs.set("val_accuracy", val["accuracy"]);
    if (a.verbose)
      std::printf("Epoch %lld/%lld - loss: %.4f - accuracy: %.4f - val_loss: %.4f - val_accuracy: %.4f\n",
                  static_cast<long long>(epoch + 1), static_cast<long long>(a.epochs), *logs.get("loss"),
                  *logs.get("accuracy"), *logs.get("val_loss"), *logs.get("val_accuracy"));
    epochs.push_back(logs);
  }
  return epochs;
}

int run_train(const TrainArgs& a) {
  set_num_threads(a.threads);
  keras::utils::set_random_seed(a.seed);
  auto [train_split, test_split] = load(a.dataset);
  const int64_t n_train = train_split.images.dim(0);

  keras::Sequential model = build_model(a.model);
  // Refuse data the model cannot take before any training starts.
  std::vector<int64_t> feature_dims(train_split.images.shape().dims().begin() + 1, train_split.images.shape().dims().end());
  LS_CHECK(Shape(feature_dims) == Shape({28, 28}), ValueError, "data set '", a.dataset, "' has images of shape ",
           Shape(feature_dims).str(), " but model ", a.model, " takes (28, 28)");
  model.compile({.optimizer = make_optimizer(a.optimizer, a.learning_rate),
                 .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  if (a.verbose) model.summary();

  data::Dataset train = as_dataset(train_split).shuffle(n_train, a.seed).batch(a.batch_size);
  if (a.steps_per_epoch > 0) train = train.repeat();
  data::Dataset test = as_dataset(test_split).batch(256);

  auto start = std::chrono::steady_clock::now();
  std::vector<keras::Logs> epochs;
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
    epochs = custom_loop(model, train, test, a, steps);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  auto result = model.evaluate(test, {.verbose = 0});
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
    j["samples_per_second"] = static_cast<double>(steps * a.batch_size) / seconds;
    j["num_workers"] = 1;
    j["num_replicas_in_sync"] = 1;
    j["weights_sha256"] = weights_sha256(model);
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
  return [a] { return run_train(*a); };
}

}  // namespace lockstep::cli
