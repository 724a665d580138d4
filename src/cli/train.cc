// `lockstep train`: trains a built-in model on Fashion-MNIST or MNIST with Keras fit or a custom training
// loop, evaluates on the test set and writes a JSON metrics file.
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>

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
  int max_restarts = -1;  // -1: not given
};

// A number as the shortest text that reads back as exactly the same value (std::to_string keeps 6
// decimals: a learning rate of 1e-7 became 0).
template <typename T> std::string exact_text(T value) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, value).ptr);
}

// Text from the command line or the environment, cut short enough to quote in a one-line error.
std::string quote(const std::string& text) {
  return "'" + (text.size() > 24 ? text.substr(0, 20) + "..." : text) + "'";
}

// Reads all of `text` as a decimal number for which `ok` holds (NaN fails any comparison).
template <typename T, typename Ok> std::optional<T> parse_number(const std::string& text, Ok ok) {
  T v{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !ok(v)) return std::nullopt;
  return v;
}

// A numeric flag read with parse_number rather than CLI11's conversion, which turns an integer too large
// into INT64_MAX, reads "010" as octal, lets "nan" pass as positive and quotes its limits in 300 digits.
// Every value given is checked, the last one kept.
template <typename T, typename Ok>
void add_number(CLI::App* cmd, const std::string& flag, T& value, Ok ok, const std::string& range,
                const std::string& help) {
  auto check = [ok, range](std::string& text) {
    return parse_number<T>(text, ok) ? std::string() : quote(text) + " is not " + range;
  };
  auto set = [&value, ok](const std::string& text) { value = *parse_number<T>(text, ok); };
  cmd->add_option_function<std::string>(flag, set, help + " (" + range + ")")
      ->check(CLI::Validator(check, ""))
      ->type_name(std::is_integral_v<T> ? "INT" : "NUMBER");
}

// The restart count of this group, which the launcher sets in every worker's environment (0 when unset).
int restarts_from_environment() {
  const char* v = std::getenv("LOCKSTEP_RESTART_COUNT");
  if (!v) return 0;
  std::optional<int> n = parse_number<int>(v, [](int n) { return n >= 0; });
  LS_CHECK(n, ValueError, "LOCKSTEP_RESTART_COUNT=", quote(v), " is not a count of restarts (an integer >= 0): "
           "unset it, or let lockstep launch set it");
  return *n;
}

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

// `lockstep train --workers N`: the same command on N local workers through the launcher, every option
// passed on as text that reads back as exactly the value given here.
int run_workers(const TrainArgs& a) {
  LaunchOptions l;
  l.num_workers = a.workers;
  l.max_restarts = std::max(a.max_restarts, 0);
  l.command = {"lockstep", "train", "--model", a.model, "--dataset", a.dataset, "--epochs", exact_text(a.epochs),
               "--steps-per-epoch", exact_text(a.steps_per_epoch), "--batch-size", exact_text(a.batch_size),
               "--optimizer", a.optimizer, "--learning-rate", exact_text(a.learning_rate), "--seed",
               exact_text(a.seed), "--threads", exact_text(a.threads), "--loop", a.loop, "--verbose",
               exact_text(a.verbose)};
  for (auto [flag, value] : {std::pair{"--save-model", a.save_model}, {"--metrics-out", a.metrics_out}})
    if (!value.empty()) l.command.insert(l.command.end(), {flag, value});
  return launch(l);
}

// Memory the system can give this process without swapping (MemAvailable), if the kernel says.
std::optional<double> available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

// Refuses a batch that cannot fit before any of it is allocated: more examples than the data set (one step
// would then hold the whole set), or layer outputs alone larger than the memory available. The outputs are
// a lower bound of one step's memory (gradients and optimizer slots come on top), so no batch that fits is
// refused. (--batch-size 1000000 on Fashion-MNIST trained on all 60000 images in one step, and ended in
// std::bad_alloc after several GB.)
void check_batch_fits(const TrainArgs& a, const keras::Sequential& model, int64_t n_train,
                      const distribute::Strategy& strategy) {
  const int replicas = strategy.num_replicas_in_sync();
  LS_CHECK(a.batch_size <= n_train / replicas, ValueError, "--batch-size ", a.batch_size, " x ", replicas,
           " replicas is more than the ", n_train, " training images of '", a.dataset,
           "': use --batch-size from 1 to ", std::max<int64_t>(1, n_train / replicas));
  const int64_t global_batch = a.batch_size * replicas;
  double floats_per_example = 0;
  Shape shape({28, 28});
  for (const keras::LayerPtr& layer : model.layers()) {
    shape = layer->compute_output_shape(shape);
    floats_per_example += static_cast<double>(shape.numel());
  }
  const double bytes_per_example = floats_per_example * sizeof(float);
  const double bytes = bytes_per_example * static_cast<double>(global_batch / strategy.num_workers());
  const std::optional<double> available = available_memory_bytes();
  if (!available || bytes <= *available) return;
  const int64_t largest = static_cast<int64_t>(*available / bytes_per_example) * strategy.num_workers() / replicas;
  auto mib = [](double b) { return static_cast<int64_t>(b / (1 << 20)); };
  throw ValueError(make_message("--batch-size ", a.batch_size, " needs at least ", mib(bytes),
                                " MiB for the layer outputs of one step, but ", mib(*available),
                                " MiB are available: use --batch-size from 1 to ", std::max<int64_t>(1, largest)));
}

int run_train(const TrainArgs& a) {
  LS_CHECK(a.max_restarts < 0 || a.workers > 0, ValueError,
           "--max-restarts restarts the local workers of --workers N: add --workers N, or use your cluster's "
           "restart policy when TF_CONFIG is set");
  if (a.workers > 0) return run_workers(a);
  const int restarts = restarts_from_environment();
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
  for (auto [split, files] : {std::pair{&train_split, "training images (train-images-idx3-ubyte)"},
                              {&test_split, "test images (t10k-images-idx3-ubyte)"}})
    LS_CHECK(split->images.dim(0) > 0, ValueError, "data set '", a.dataset, "' has no ", files,
             ": training and evaluation need at least one of each");

  distribute::MultiWorkerMirroredStrategy strategy({}, std::move(cluster));
  keras::Sequential model = [&] {
    auto scope = strategy.scope();  // the model's and optimizer's variables are mirrored
    keras::Sequential m = build_model(a.model);
    m.compile({.optimizer = make_optimizer(a.optimizer, a.learning_rate),
               .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
               .metrics = {"accuracy"}});
    return m;
  }();
  check_batch_fits(a, model, n_train, strategy);
  const int64_t global_batch = a.batch_size * strategy.num_replicas_in_sync();
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
    j["restarts"] = restarts;
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
  const CLI::Validator non_empty(
      [](std::string& s) { return s.empty() ? "'' is not a path: give a file or directory" : ""; }, "");
  cmd->add_option("--dataset", a->dataset, "fashion_mnist | mnist | a directory of IDX files");
  auto at_least = [](auto lo) { return [lo](auto v) { return v >= lo; }; };
  add_number(cmd, "--epochs", a->epochs, at_least(1), "an integer from 1 to 2^63-1", "passes over the data");
  add_number(cmd, "--steps-per-epoch", a->steps_per_epoch, [](int64_t v) { return v == -1 || v >= 1; },
             "-1 or an integer from 1 to 2^63-1", "batches per epoch; -1: one pass over the data (the default)");
  add_number(cmd, "--batch-size", a->batch_size, at_least(1), "an integer from 1 to 2^63-1", "per-worker batch size");
  cmd->add_option("--optimizer", a->optimizer)->check(CLI::IsMember({"sgd", "rmsprop", "adam"}));
  add_number(cmd, "--learning-rate", a->learning_rate, [](double v) { return v > 0 && std::isfinite(v); },
             "a finite number > 0", "step size of the optimizer");
  add_number(cmd, "--seed", a->seed, [](uint64_t) { return true; }, "an integer from 0 to 2^64-1",
             "seed of the weights and the shuffle");
  add_number(cmd, "--threads", a->threads, at_least(0), "an integer from 0 to 2^31-1",
             "intra-op threads; 0: all cores; more than 4 per core are capped");
  cmd->add_option("--loop", a->loop, "fit (Keras) | ctl (custom training loop)")->check(CLI::IsMember({"fit", "ctl"}));
  cmd->add_option("--save-model", a->save_model, "directory to save the trained model in")->check(non_empty);
  cmd->add_option("--metrics-out", a->metrics_out, "JSON file for the run's metrics")->check(non_empty);
  add_number(cmd, "--verbose", a->verbose, [](int v) { return v >= 0 && v <= 2; }, "0, 1 or 2",
             "0 silent, 1 progress bar, 2 one line per epoch");
  add_number(cmd, "--workers", a->workers, at_least(0), "an integer from 0 to 2^31-1",
             "run on this many local workers (lockstep launch); 0: train in this process");
  add_number(cmd, "--max-restarts", a->max_restarts, at_least(0), "an integer from 0 to 2^31-1",
             "with --workers: restarts of the group after a failure");
  return [a] { return run_train(*a); };
}

}  // namespace lockstep::cli
