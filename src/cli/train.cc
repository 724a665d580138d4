// `lockstep train`: trains a built-in model on Fashion-MNIST or MNIST, or the user's own model (a .keras file or
// model.to_json()'s text) on their own data (TFRecord, an image folder, CSV), with Keras fit or a custom training
// loop; evaluates on the test or validation set and writes a JSON metrics file.
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>

#include <signal.h>

#include "cli.h"
#include "flags.h"
#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/threads.h"
#include "launcher.h"
#include "lockstep/data/datasets.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/saving.h"
#include "lockstep/train/preemption.h"
#include "lockstep/train/summary.h"

namespace lockstep::cli {

namespace {

struct TrainArgs {
  std::string model = "tutorial_cnn";  // a built-in name, or a .keras / .json file
  std::string dataset = "fashion_mnist";
  UserDataOptions data;  // --data and its options; data.spec empty: --dataset
  int64_t epochs = 3;
  int64_t steps_per_epoch = -1;
  int64_t batch_size = 64;
  std::string optimizer;     // empty: adam, or a .keras model's own
  double learning_rate = 0;  // 0: 0.001, or a .keras model's own
  std::string loss;          // empty: sparse categorical cross-entropy, or a .keras model's own
  uint64_t seed = 1;
  int threads = 0;
  std::string loop = "fit";
  std::string save_model;
  std::string metrics_out;
  int verbose = 1;
  int workers = 0;  // > 0: launch this many local workers, each running this command with its TF_CONFIG
  int max_restarts = -1;  // -1: not given
  std::string backup_dir;   // BackupAndRestore (fit) or a CheckpointManager (ctl) there; empty: none
  int64_t backup_freq = 0;  // save every this many steps; 0: at the end of every epoch
  std::string gradient_compression = "none";  // none | bfloat16 (CommunicationOptions)
  std::string dtype_policy = "float32";       // float32 | mixed_bfloat16 (keras.mixed_precision)
  std::string cluster_token_file;  // LOCKSTEP_CLUSTER_TOKEN_FILE for this process (and launched workers)
  std::string tensorboard;         // TensorBoard log directory; empty: none
};

bool is_model_file(const std::string& model) { return model.ends_with(".keras") || model.ends_with(".json"); }

// A number as the shortest text that reads back as exactly the same value (std::to_string keeps 6
// decimals: a learning rate of 1e-7 became 0).
template <typename T> std::string exact_text(T value) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, value).ptr);
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

// --optimizer by Keras name, at --learning-rate (0.001 when unset).
std::shared_ptr<keras::optimizers::Optimizer> make_optimizer(const std::string& name, double lr) {
  std::shared_ptr<keras::optimizers::Optimizer> optimizer = keras::optimizers::get(name);
  optimizer->set_learning_rate(lr == 0 ? 0.001 : lr);
  return optimizer;
}

// --loss by Keras name (sparse categorical cross-entropy when empty); the losses that take `from_logits` (the
// cross-entropies) get it.
std::shared_ptr<keras::losses::Loss> make_loss(const std::string& name, bool from_logits) {
  return keras::losses::registry().get(name.empty() ? "sparse_categorical_crossentropy" : name,
                                       {{"from_logits", from_logits}});
}

// The model --model names, compiled, in the caller's strategy scope:
// - a built-in one with --optimizer (adam), --learning-rate (0.001) and the tutorials' loss;
// - a .keras file as TensorFlow or lockstep saved it (optimizer with its state, loss, metrics: fit continues), with
//   --optimizer, --learning-rate and --loss replacing what they name;
// - a .json file (model.to_json()) compiled from the flags. Its cross-entropy takes logits unless the last layer
//   ends in softmax or sigmoid, as the model's author meant.
keras::Model make_model(const TrainArgs& a) {
  if (!is_model_file(a.model)) {
    keras::Model m = build_model(a.model);
    m.compile({.optimizer = make_optimizer(a.optimizer.empty() ? "adam" : a.optimizer, a.learning_rate),
               .loss = make_loss(a.loss, true),
               .metrics = {"accuracy"}});
    return m;
  }
  keras::Model m = [&] {
    if (a.model.ends_with(".keras")) return keras::models::load_model(a.model);
    std::ifstream in(a.model);
    LS_CHECK(in.good(), NotFoundError, "--model ", a.model, ": cannot open the file (give model.to_json()'s text saved to it)");
    return keras::models::model_from_json(std::string(std::istreambuf_iterator<char>(in), {}));
  }();
  if (m.optimizer() && m.loss() && a.optimizer.empty() && a.loss.empty()) {
    if (a.learning_rate > 0) m.optimizer()->set_learning_rate(a.learning_rate);
    return m;  // as saved
  }
  std::shared_ptr<keras::optimizers::Optimizer> optimizer = m.optimizer();
  if (!optimizer || !a.optimizer.empty())
    optimizer = make_optimizer(a.optimizer.empty() ? "adam" : a.optimizer, a.learning_rate);
  else if (a.learning_rate > 0)
    optimizer->set_learning_rate(a.learning_rate);
  std::shared_ptr<keras::losses::Loss> loss = m.loss();
  if (!loss || !a.loss.empty()) {
    const std::string last = m.layers().empty() ? "" : m.layers().back()->get_config().value("activation", "");
    loss = make_loss(a.loss, last != "softmax" && last != "sigmoid");
  }
  std::vector<keras::MetricRef> metrics;
  for (const auto& metric : m.metrics()) metrics.emplace_back(metric);
  if (metrics.empty() && loss->class_name().ends_with("Crossentropy")) metrics.emplace_back("accuracy");
  m.compile({.optimizer = optimizer, .loss = loss, .metrics = metrics});
  return m;
}

// Images scaled to [0, 1] as float32, labels as int64: what the tutorials feed their models.
data::Dataset as_dataset(const datasets::Split& split) {
  return data::Dataset::from_tensor_slices(cast(split.images, DType::float32) / 255.0, cast(split.labels, DType::int64));
}

// Fault injection for recovery tests: LOCKSTEP_FAULT_INJECT=kill:<worker>:<step> (SIGKILL) or
// term:<worker>:<step> (SIGTERM, a preemption) makes that worker signal itself once <step> training steps
// are done in total, on the first run of the group only (LOCKSTEP_RESTART_COUNT unset or 0).
class FaultInjection {
 public:
  FaultInjection(int rank, int restarts) {
    const char* v = std::getenv("LOCKSTEP_FAULT_INJECT");
    if (!v || restarts > 0) return;
    const std::string text = v;
    const size_t a = text.find(':'), b = text.find(':', a == std::string::npos ? a : a + 1);
    const std::string kind = text.substr(0, a);
    const auto worker = b == std::string::npos ? std::nullopt : parse_number<int>(text.substr(a + 1, b - a - 1), [](int w) { return w >= 0; });
    const auto step = b == std::string::npos ? std::nullopt : parse_number<int64_t>(text.substr(b + 1), [](int64_t n) { return n >= 1; });
    LS_CHECK((kind == "kill" || kind == "term") && worker && step, ValueError, "LOCKSTEP_FAULT_INJECT=", quote(text),
             " is not kill:<worker>:<step> or term:<worker>:<step>; unset it");
    if (*worker == rank) {
      signal_ = kind == "kill" ? SIGKILL : SIGTERM;
      step_ = *step;
    }
  }
  void after_step(int64_t steps_done) const {
    if (signal_ && steps_done == step_) ::raise(signal_);
  }

 private:
  int signal_ = 0;
  int64_t step_ = 0;
};

// FaultInjection inside fit(), after the other callbacks of a step.
class FaultInjectionCallback : public keras::Callback {
 public:
  explicit FaultInjectionCallback(const FaultInjection& f) : f_(f) {}
  void on_train_batch_end(int64_t, const keras::Logs&) override { f_.after_step(model_->optimizer()->iterations()); }

 private:
  const FaultInjection& f_;
};

// Where the custom loop is: what its checkpoints save besides the model, optimizer and input, so that a
// restarted loop continues at the same step with the same epoch statistics. Per worker: accuracy counts
// this worker's replicas.
struct LoopState final : train::Trackable {
  int64_t epoch = 0, step_in_epoch = 0, steps = 0;
  double total = 0;
  std::shared_ptr<keras::metrics::Metric> accuracy;
  std::vector<double>* step_losses = nullptr;
  std::vector<keras::Logs>* epochs = nullptr;

  train::TrackableState save() const override {
    nlohmann::json logs = nlohmann::json::array();
    for (const keras::Logs& l : *epochs) {
      nlohmann::json e = nlohmann::json::object();
      for (const auto& [k, v] : l.items()) e[k] = v;
      logs.push_back(e);
    }
    return {{}, {{"epoch", epoch}, {"step_in_epoch", step_in_epoch}, {"steps", steps}, {"total", total},
                 {"accuracy", accuracy->state()}, {"step_losses", *step_losses}, {"epochs", logs}}};
  }
  train::RestoreMatch restore(const train::TrackableState& state) override {
    const nlohmann::json& v = state.values;
    epoch = v.at("epoch");
    step_in_epoch = v.at("step_in_epoch");
    steps = v.at("steps");
    LS_CHECK(epoch >= 0 && step_in_epoch >= 0 && steps >= 0, DataLossError, "the custom loop's saved position (epoch ",
             epoch, ", step_in_epoch ", step_in_epoch, ", steps ", steps, ") is not made of counts (integers >= 0)");
    total = v.at("total");
    accuracy->set_state(v.at("accuracy").get<std::vector<double>>());
    *step_losses = v.at("step_losses").get<std::vector<double>>();
    epochs->clear();
    for (const nlohmann::json& e : v.at("epochs")) {
      keras::Logs l;
      for (const auto& [k, x] : e.items()) l.set(k, x.get<double>());
      epochs->push_back(l);
    }
    return {};
  }
  // Saved by another number of workers: the counters are the same everywhere; the accuracy counts, summed
  // over workers at each epoch's end, go to the first worker.
  void restore_resharded(const std::vector<nlohmann::json>& saved, int, int rank) override {
    nlohmann::json merged = saved.at(0);
    std::vector<double> sum = merged.at("accuracy").get<std::vector<double>>();
    for (size_t w = 1; w < saved.size(); ++w) {
      std::vector<double> more = saved[w].at("accuracy").get<std::vector<double>>();
      for (size_t i = 0; i < sum.size() && i < more.size(); ++i) sum[i] += more[i];
    }
    if (rank != 0) std::fill(sum.begin(), sum.end(), 0.0);
    merged["accuracy"] = sum;
    restore({{}, merged});
  }
  bool per_worker() const override { return true; }
};

// The custom training loop of the tutorials: strategy.run of a GradientTape step whose per-example losses
// are averaged over the global batch, regularization scaled by the number of replicas, and the replicas'
// losses summed with strategy.reduce. Records each step's loss.
std::vector<keras::Logs> custom_loop(distribute::Strategy& strategy, keras::Model& model,
                                     const data::Dataset& train, const std::optional<data::Dataset>& test, const TrainArgs& a,
                                     int64_t global_batch, const FaultInjection& fault, int64_t& steps,
                                     std::vector<double>& step_losses) {
  auto optimizer = model.optimizer();
  auto loss_fn = model.loss();  // its per-example form, averaged over the global batch as the tutorials do
  auto step_fn = [&](const data::Batch& b) {
    GradientTape tape;
    Tensor logits = model(b.x, {.training = true});
    Tensor loss = nn::compute_average_loss(loss_fn->call(b.y, logits), {.global_batch_size = global_batch});
    std::vector<Tensor> reg = model.losses();
    if (!reg.empty()) loss = loss + nn::scale_regularization_loss(add_n(reg));
    std::vector<Variable> vars = model.trainable_variables();
    optimizer->apply_gradients(tape.gradient(loss, vars), vars);
    return std::pair{loss, stop_gradient(logits)};
  };
  distribute::DistributedDataset dist = strategy.experimental_distribute_dataset(train);
  std::vector<keras::Logs> epochs;
  auto state = std::make_shared<LoopState>();
  {
    auto scope = strategy.scope();  // sync-on-read, as the tutorial's metrics: result() is over every worker
    state->accuracy = keras::metrics::SparseCategoricalAccuracy();
  }
  state->step_losses = &step_losses;
  state->epochs = &epochs;
  auto it = dist.make_iterator(0);

  // With --backup-dir: the tutorials' CheckpointManager over everything the loop needs to continue, restored
  // here if a backup exists, saved every --backup-freq steps or each epoch, and on preemption.
  std::optional<train::Checkpoint> checkpoint;
  std::optional<train::CheckpointManager> manager;
  std::optional<train::PreemptionCheckpointHandler> preemption;
  if (!a.backup_dir.empty()) {
    checkpoint.emplace(std::vector<std::pair<std::string, train::TrackableRef>>{
                           {"model", model}, {"optimizer", optimizer}, {"iterator", it}, {"loop", state},
                           {"random", keras::utils::global_random_state()}},
                       train::CheckpointOptions{.async = true});
    manager.emplace(*checkpoint, a.backup_dir, train::CheckpointManagerOptions{.max_to_keep = 2});
    preemption.emplace(*manager);
  }
  auto save = [&] {
    if (manager) manager->save();
  };
  // --tensorboard: the epoch logs as the TensorBoard callback writes them for fit, on the chief.
  std::optional<summary::SummaryWriter> train_log, validation_log;
  if (!a.tensorboard.empty() && strategy.is_chief()) {
    train_log = summary::create_file_writer(a.tensorboard + "/train");
    validation_log = summary::create_file_writer(a.tensorboard + "/validation");
  }

  for (; state->epoch < a.epochs; ++state->epoch) {
    const int64_t epoch = state->epoch;
    // A fresh pass per epoch (unless steps_per_epoch runs one iterator on), except in the epoch a restore
    // put the iterator in the middle of.
    if (a.steps_per_epoch < 0 && epoch > 0 && state->step_in_epoch == 0)
      it = dist.make_iterator(static_cast<uint64_t>(epoch));
    if (state->step_in_epoch == 0) {
      state->accuracy->reset_state();
      state->total = 0;
    }
    for (; a.steps_per_epoch < 0 || state->step_in_epoch < a.steps_per_epoch;) {
      auto batches = it.next();
      if (!batches) break;
      auto out = strategy.run(step_fn, *batches);
      distribute::PerReplica<Tensor> losses;
      for (size_t r = 0; r < out.values.size(); ++r) {
        losses.values.push_back(out.values[r].first);
        NoGradGuard no_grad;
        state->accuracy->update_state(batches->values[r].y, out.values[r].second);
      }
      const double loss = strategy.reduce(distribute::ReduceOp::SUM, losses).item<double>();
      if (step_losses.size() < 1000) step_losses.push_back(loss);
      state->total += loss;
      ++state->step_in_epoch;
      ++state->steps;
      if (preemption) preemption->run([] {});  // counts the step; every worker saves and exits if any was signalled
      if (a.backup_freq > 0 && state->steps % a.backup_freq == 0) save();
      fault.after_step(state->steps);
    }
    const int64_t n = state->step_in_epoch;
    keras::Logs logs;
    logs.set("loss", n ? state->total / static_cast<double>(n) : 0.0);
    logs.set("accuracy", state->accuracy->result());  // a collective: every worker reports the global accuracy
    if (test)
      for (const auto& [name, value] : model.evaluate(*test, {.verbose = 0})) logs.set("val_" + name, value);
    if (a.verbose && strategy.is_chief()) {
      std::printf("Epoch %lld/%lld", static_cast<long long>(epoch + 1), static_cast<long long>(a.epochs));
      for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"})
        if (auto v = logs.get(k)) std::printf(" - %s: %.4f", k, *v);
      std::printf("\n");
    }
    if (train_log) {
      for (const auto& [name, value] : logs.items()) {
        const bool val = name.starts_with("val_");
        summary::scalar("epoch_" + name.substr(val ? 4 : 0), value, epoch, val ? &*validation_log : &*train_log);
      }
      summary::flush(&*train_log);
      summary::flush(&*validation_log);
    }
    epochs.push_back(logs);
    state->step_in_epoch = 0;
    if (a.backup_freq == 0 && state->epoch + 1 < a.epochs) {
      ++state->epoch;  // saved as "the next epoch, step 0"
      save();
      --state->epoch;
    }
  }
  steps = state->steps;
  // The run is complete: its backups are not needed by a restart any more (as BackupAndRestore does).
  if (manager) manager->delete_checkpoints();
  return epochs;
}

// Every worker's weights hash, in rank order (one entry on a single worker).
std::vector<std::string> hashes_of_all_workers(distribute::Strategy& strategy, const keras::Model& model) {
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
  l.command = {"lockstep", "train", "--model", a.model, "--epochs", exact_text(a.epochs),
               "--steps-per-epoch", exact_text(a.steps_per_epoch), "--batch-size", exact_text(a.batch_size),
               "--seed", exact_text(a.seed), "--threads", exact_text(a.threads), "--loop", a.loop, "--verbose",
               exact_text(a.verbose), "--gradient-compression", a.gradient_compression,
               "--dtype-policy", a.dtype_policy};
  const UserDataOptions& d = a.data;
  if (d.spec.empty()) l.command.insert(l.command.end(), {"--dataset", a.dataset});
  for (auto [flag, value] : {std::pair{"--save-model", a.save_model}, {"--metrics-out", a.metrics_out},
                             {"--backup-dir", a.backup_dir}, {"--optimizer", a.optimizer}, {"--loss", a.loss},
                             {"--tensorboard", a.tensorboard}, {"--data", d.spec}, {"--validation-data", d.validation_spec},
                             {"--feature-key", d.feature_key}, {"--compression", d.compression}})
    if (!value.empty()) l.command.insert(l.command.end(), {flag, value});
  if (!d.spec.empty())
    l.command.insert(l.command.end(), {"--label-key", d.label_key, "--label-dtype", d.label_dtype, "--label-column",
                                       d.label_column, "--shuffle-buffer", exact_text(d.shuffle_buffer),
                                       "--validation-split", exact_text(d.validation_split)});
  if (a.learning_rate > 0) l.command.insert(l.command.end(), {"--learning-rate", exact_text(a.learning_rate)});
  if (a.backup_freq > 0) l.command.insert(l.command.end(), {"--backup-freq", exact_text(a.backup_freq)});
  if (!a.cluster_token_file.empty())
    l.extra_env["LOCKSTEP_CLUSTER_TOKEN_FILE"] = std::filesystem::absolute(a.cluster_token_file).string();
  return launch(l);
}

// Refuses a batch that cannot fit before any of it is allocated: more examples than the data set (one step
// would then hold the whole set), or layer outputs alone larger than the memory available. The outputs are
// a lower bound of one step's memory (gradients and optimizer slots come on top), so no batch that fits is
// refused. (--batch-size 1000000 on Fashion-MNIST trained on all 60000 images in one step, and ended in
// std::bad_alloc after several GB.)
void check_batch_fits(const TrainArgs& a, const keras::Model& model, int64_t n_train,
                      const distribute::Strategy& strategy) {
  const int replicas = strategy.num_replicas_in_sync();
  LS_CHECK(a.batch_size <= n_train / replicas, ValueError, "--batch-size ", a.batch_size, " x ", replicas,
           " replicas is more than the ", n_train, " training images of '", a.dataset,
           "': use --batch-size from 1 to ", std::max<int64_t>(1, n_train / replicas));
  const int64_t global_batch = a.batch_size * replicas;
  double floats_per_example = 0;
  Shape shape({28, 28});
  for (const keras::LayerPtr& layer : model.layers()) {  // the built-in models are Sequential
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
  LS_CHECK(a.backup_freq == 0 || !a.backup_dir.empty(), ValueError,
           "--backup-freq says how often to save to --backup-dir: add --backup-dir DIR");
  LS_CHECK(a.data.validation_split == 0 || !a.data.spec.empty(), ValueError,
           "--validation-split holds out part of --data images:DIR: add --data, or leave it out");
  if (a.workers > 0) return run_workers(a);
  if (!a.cluster_token_file.empty()) {  // the flag wins over the environment
    ::setenv("LOCKSTEP_CLUSTER_TOKEN_FILE", a.cluster_token_file.c_str(), 1);
    ::unsetenv("LOCKSTEP_CLUSTER_TOKEN");
  }
  const int restarts = restarts_from_environment();
  // One worker of the cluster in TF_CONFIG (or SLURM), or a single local worker when none is set: a
  // malformed configuration fails here, before any data is read.
  std::unique_ptr<distribute::ClusterResolver> cluster = distribute::resolve_cluster();
  set_num_threads(a.threads);
  // TF's evaluator task trains nothing and joins no collective: it evaluates the chief's checkpoints.
  if (cluster->task_type() == "evaluator") {
    LS_CHECK(!a.backup_dir.empty(), ValueError, "TF_CONFIG makes this task the evaluator, which evaluates the "
             "checkpoints the training workers write to --backup-dir: add the same --backup-dir DIR");
    LS_CHECK(a.data.spec.empty() && !is_model_file(a.model), ValueError, "TF_CONFIG makes this task the evaluator, "
             "which evaluates the built-in models on --dataset; for --model FILE or --data, leave the evaluator task "
             "out of TF_CONFIG and pass --validation-data to the workers");
    return run_sidecar_evaluator({.directory = a.backup_dir, .model = a.model, .dataset = a.dataset,
                                  .steps = a.steps_per_epoch > 0 && a.epochs <= INT64_MAX / a.steps_per_epoch
                                               ? a.epochs * a.steps_per_epoch
                                               : 0});
  }
  // Outputs are checked before the data is read and any step is taken, not found unwritable after the last
  // (only the chief writes them).
  if (cluster->is_chief()) {
    if (!a.metrics_out.empty()) check_writable(a.metrics_out, "--metrics-out file");
    if (a.save_model.ends_with(".keras"))
      check_writable(a.save_model, "--save-model file");
    else if (!a.save_model.empty())
      AtomicDirectory::check(a.save_model, "config.json");
    if (!a.backup_dir.empty()) check_directory_writable(a.backup_dir, "--backup-dir");
    if (!a.tensorboard.empty()) check_directory_writable(a.tensorboard, "--tensorboard directory");
  }
  keras::utils::set_random_seed(a.seed);
  const bool user_data = !a.data.spec.empty();
  // --dataset: the IDX images are read and checked before the workers meet.
  std::optional<std::pair<datasets::Split, datasets::Split>> splits;
  int64_t n_train = 0;
  if (!user_data) {
    splits = load(a.dataset);
    auto& [train_split, test_split] = *splits;
    n_train = train_split.images.dim(0);
    std::vector<int64_t> feature_dims(train_split.images.shape().dims().begin() + 1, train_split.images.shape().dims().end());
    LS_CHECK(Shape(feature_dims) == Shape({28, 28}), ValueError, "data set '", a.dataset, "' has images of shape ",
             Shape(feature_dims).str(), " but model ", a.model, " takes (28, 28)");
    for (auto [split, files] : {std::pair{&train_split, "training images (train-images-idx3-ubyte)"},
                                {&test_split, "test images (t10k-images-idx3-ubyte)"}})
      LS_CHECK(split->images.dim(0) > 0, ValueError, "data set '", a.dataset, "' has no ", files,
               ": training and evaluation need at least one of each");
  }

  distribute::MultiWorkerMirroredStrategy strategy({.gradient_compression = gradient_compression(a.gradient_compression)},
                                                   std::move(cluster));
  const FaultInjection fault(strategy.worker_rank(), restarts);
  keras::mixed_precision::set_global_policy(a.dtype_policy);
  keras::Model model = [&] {
    auto scope = strategy.scope();  // the model's and optimizer's variables are mirrored
    return make_model(a);
  }();
  if (!user_data) {
    LS_CHECK(model.input_shape() == Shape({28, 28}), ValueError, "model ", a.model, " takes inputs of shape ",
             model.input_shape().str(), " but data set '", a.dataset, "' has images of shape (28, 28): give your own "
             "data with --data");
    check_batch_fits(a, model, n_train, strategy);
  }
  const int64_t global_batch = a.batch_size * strategy.num_replicas_in_sync();
  // A pass over the data ends with a smaller batch, split across the replicas like the others: with fewer
  // images than replicas, some of them have nothing to train on in that step. Said once, before training.
  const int64_t last_batch = n_train % global_batch, replicas = strategy.num_replicas_in_sync();
  if (!user_data && a.steps_per_epoch < 0 && last_batch > 0 && last_batch < replicas && strategy.is_chief())
    log(LogLevel::warning, "the last batch of each epoch holds ", last_batch, " of the ", n_train,
        " training images for ", replicas, " replicas, so ", replicas - last_batch,
        " of them get none in that step: choose a --batch-size that leaves at least ", replicas,
        " images for the last batch, or set --steps-per-epoch");
  if (a.verbose && strategy.is_chief()) model.summary();

  // Batched with the global batch size: the strategy splits each batch across the replicas.
  std::optional<data::Dataset> train, test;
  if (user_data) {
    UserDataOptions d = a.data;
    d.seed = a.seed;
    d.verbose = a.verbose > 0 && strategy.is_chief();
    UserData u = load_user_data(d, model.input_shape(), model.input_dtype(), global_batch, a.steps_per_epoch > 0);
    train = u.train;
    test = u.validation;
  } else {
    train = as_dataset(splits->first).shuffle(n_train, a.seed);
    if (a.steps_per_epoch > 0) train = train->repeat();
    train = train->batch(global_batch);
    test = as_dataset(splits->second).batch(256 * strategy.num_replicas_in_sync());
  }

  auto start = std::chrono::steady_clock::now();
  std::vector<keras::Logs> epochs;
  std::vector<double> step_losses;
  int64_t steps = 0;
  if (a.loop == "fit") {
    std::vector<keras::CallbackPtr> callbacks;
    if (!a.backup_dir.empty())
      callbacks.push_back(keras::callbacks::BackupAndRestore(
          {.backup_dir = a.backup_dir,
           .save_freq = a.backup_freq > 0 ? keras::callbacks::SaveFreq(a.backup_freq) : keras::callbacks::SaveFreq("epoch"),
           .save_before_preemption = true}));
    if (!a.tensorboard.empty()) callbacks.push_back(keras::callbacks::TensorBoard({.log_dir = a.tensorboard}));
    callbacks.push_back(std::make_shared<FaultInjectionCallback>(fault));
    auto history = model.fit(*train, {.epochs = a.epochs, .steps_per_epoch = a.steps_per_epoch, .validation_data = test,
                                     .callbacks = callbacks, .verbose = a.verbose});
    for (size_t e = 0; e < history.epoch.size(); ++e) {
      keras::Logs logs;
      for (const auto& [k, v] : history.history) logs.set(k, v[e]);
      epochs.push_back(logs);
    }
    steps = model.optimizer()->iterations();
  } else {
    epochs = custom_loop(strategy, model, *train, test, a, global_batch, fault, steps, step_losses);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The test set (--dataset) or the validation data (--data), when there is one.
  std::map<std::string, double> result;
  if (test) result = model.evaluate(*test, {.verbose = 0});
  const std::vector<std::string> hashes = hashes_of_all_workers(strategy, model);
  if (!strategy.is_chief()) return 0;  // the chief alone reports and writes files
  if (test) {
    std::printf("Test loss: %.4f", result["loss"]);
    if (result.contains("accuracy")) std::printf(" - test accuracy: %.4f", result["accuracy"]);
    std::printf("\n");
  }
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
    for (const char* k : {"loss", "accuracy"})
      if (result.contains(k)) j[std::string("test_") + k] = result[k];
    j["global_steps"] = steps;
    j["samples_per_second"] = static_cast<double>(steps * global_batch) / seconds;
    j["num_workers"] = strategy.num_workers();
    j["num_replicas_in_sync"] = strategy.num_replicas_in_sync();
    j["restarts"] = restarts;
    j["weights_sha256"] = hashes[0];
    j["weights_sha256_per_worker"] = hashes;
    if (!step_losses.empty()) j["step_losses"] = step_losses;
    write_file_atomically(a.metrics_out, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

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

std::function<int()> add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a built-in model on Fashion-MNIST or MNIST, or your own model on your data");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated flag: the last wins
  cmd->add_option("--model", a->model,
                  keras::join_names(builtin_model_names(), " | ") +
                      " | a Keras model file: FILE.keras (model.save) or FILE.json (model.to_json())")
      ->check(CLI::Validator(
          [](std::string& m) {
            return is_builtin_model(m) || is_model_file(m)
                       ? std::string()
                       : quote(m) + " is not " + keras::join_names(builtin_model_names(), ", ") +
                             " or a file ending in .keras or .json";
          },
          ""));
  const CLI::Validator non_empty(
      [](std::string& s) { return s.empty() ? "'' is not a path: give a file or directory" : ""; }, "");
  CLI::Option* dataset_flag = cmd->add_option("--dataset", a->dataset, "fashion_mnist | mnist | a directory of IDX files");
  UserDataOptions& d = a->data;
  CLI::Option* data_flag = cmd->add_option(
      "--data", d.spec,
      "your data instead of --dataset: tfrecord:PATTERN[,PATTERN...] (tf.train.Example records), images:DIR (a "
      "folder per class) or csv:PATTERN");
  data_flag->excludes(dataset_flag);
  cmd->add_option("--validation-data", d.validation_spec, "validation data in the form of --data")->needs(data_flag);
  cmd->add_option("--feature-key", d.feature_key, "tfrecord: the Example feature the model takes")->needs(data_flag);
  cmd->add_option("--label-key", d.label_key, "tfrecord: the Example feature holding the label")->needs(data_flag);
  cmd->add_option("--label-dtype", d.label_dtype, "tfrecord: int64 | float32, the label's type")
      ->check(CLI::IsMember({"int64", "float32"}))
      ->needs(data_flag);
  cmd->add_option("--compression", d.compression, "tfrecord: GZIP for gzipped files")
      ->check(CLI::IsMember({"", "GZIP"}))
      ->needs(data_flag);
  add_number(cmd, "--shuffle-buffer", d.shuffle_buffer, [](int64_t v) { return v >= 1; },
             "an integer from 1 to 2^63-1", "tfrecord: examples in the shuffle buffer");
  add_number(cmd, "--validation-split", d.validation_split, [](double v) { return v >= 0 && v < 1; },
             "a number from 0 to below 1", "images: the fraction of the files held out for validation");
  cmd->add_option("--label-column", d.label_column, "csv: the column holding the label")->needs(data_flag);
  cmd->add_option("--loss", a->loss,
                  "a Keras loss name (sparse_categorical_crossentropy, mse, ...); default: a .keras model's own, else "
                  "sparse categorical cross-entropy");
  cmd->add_option("--tensorboard", a->tensorboard, "write TensorBoard logs to this directory (the chief only)")
      ->check(non_empty);
  auto at_least = [](auto lo) { return [lo](auto v) { return v >= lo; }; };
  add_number(cmd, "--epochs", a->epochs, at_least(1), "an integer from 1 to 2^63-1", "passes over the data");
  add_number(cmd, "--steps-per-epoch", a->steps_per_epoch, [](int64_t v) { return v == -1 || v >= 1; },
             "-1 or an integer from 1 to 2^63-1", "batches per epoch; -1: one pass over the data (the default)");
  add_number(cmd, "--batch-size", a->batch_size, at_least(1), "an integer from 1 to 2^63-1", "per-worker batch size");
  const std::vector<std::string> optimizer_names = keras::optimizers::registry().identifiers();
  cmd->add_option("--optimizer", a->optimizer,
                  keras::join_names(optimizer_names, " | ") + "; default: a .keras model's own, else adam")
      ->check(CLI::IsMember(optimizer_names));
  add_number(cmd, "--learning-rate", a->learning_rate, [](double v) { return v > 0 && std::isfinite(v); },
             "a finite number > 0",
             "step size of the optimizer; default: a .keras model's own, else 0.001");
  add_number(cmd, "--seed", a->seed, [](uint64_t) { return true; }, "an integer from 0 to 2^64-1",
             "seed of the weights and the shuffle");
  add_number(cmd, "--threads", a->threads, at_least(0), "an integer from 0 to 2^31-1",
             "intra-op threads; 0: all cores; more than 4 per core are capped");
  cmd->add_option("--loop", a->loop, "fit (Keras) | ctl (custom training loop)")->check(CLI::IsMember({"fit", "ctl"}));
  cmd->add_option("--save-model", a->save_model,
                  "save the trained model: FILE.keras for Keras 3's archive, any other name for a directory")
      ->check(non_empty);
  cmd->add_option("--metrics-out", a->metrics_out, "JSON file for the run's metrics")->check(non_empty);
  add_number(cmd, "--verbose", a->verbose, [](int v) { return v >= 0 && v <= 2; }, "0, 1 or 2",
             "0 silent, 1 progress bar, 2 one line per epoch");
  add_number(cmd, "--workers", a->workers, at_least(0), "an integer from 0 to 2^31-1",
             "run on this many local workers (lockstep launch); 0: train in this process");
  add_number(cmd, "--max-restarts", a->max_restarts, at_least(0), "an integer from 0 to 2^31-1",
             "with --workers: restarts of the group after a failure");
  add_gradient_compression_option(cmd, a->gradient_compression);
  add_dtype_policy_option(cmd, a->dtype_policy);
  cmd->add_option("--cluster-token-file", a->cluster_token_file,
                  "file holding the job's secret, which every worker must share (LOCKSTEP_CLUSTER_TOKEN_FILE)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--backup-dir", a->backup_dir,
                  "back training up to this directory and resume from it after a restart (BackupAndRestore)")
      ->check(non_empty);
  cmd->add_option_function<std::string>(
         "--backup-freq",
         [a, at_least](const std::string& text) {
           a->backup_freq = text == "epoch" ? 0 : *parse_number<int64_t>(text, at_least(1));
         },
         "with --backup-dir: save at the end of every epoch or every N steps (\"epoch\" or an integer from 1 to 2^63-1)")
      ->check(CLI::Validator(
          [at_least](std::string& text) {
            return text == "epoch" || parse_number<int64_t>(text, at_least(1))
                       ? std::string()
                       : quote(text) + " is not \"epoch\" or an integer from 1 to 2^63-1";
          },
          ""))
      ->type_name("epoch|N");
  return [a] { return run_train(*a); };
}

}  // namespace lockstep::cli
