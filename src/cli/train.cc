// `lockstep train`: trains a built-in model on Fashion-MNIST or MNIST, or the user's own model (a .keras file or
// model.to_json()'s text) on their own data (TFRecord, an image folder, CSV), with Keras fit or a custom training
// loop; evaluates on the test or validation set and writes a JSON metrics file.
#include <signal.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "cli.h"
#include "flags.h"
#include "launcher.h"
#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/threads.h"
#include "lockstep/data/datasets.h"
#include "lockstep/distribute/collective/cross_worker.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/saving.h"
#include "lockstep/kernels/cpu/features.h"
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
  double learning_rate = 0;  // 0: a .keras model's own, or the optimizer's default
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
  std::string device;              // cpu | gpu | /gpu:N ...; empty: LOCKSTEP_DEVICE, else the CPU
};

bool is_model_file(const std::string& model) { return model.ends_with(".keras") || model.ends_with(".json"); }

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

// --optimizer by Keras name, at --learning-rate (the optimizer's Keras default, from its registry entry, when
// unset).
std::shared_ptr<keras::optimizers::Optimizer> make_optimizer(const std::string& name, double lr) {
  std::shared_ptr<keras::optimizers::Optimizer> optimizer = keras::optimizers::get(name);
  if (lr != 0) optimizer->set_learning_rate(lr);
  return optimizer;
}

// "sgd 0.01, adam 0.001, ...": each optimizer's default learning rate, for --learning-rate's help.
std::string default_learning_rates() {
  std::string out;
  for (const auto& e : keras::optimizers::registry().entries())
    out += (out.empty() ? "" : ", ") + (e.aliases.empty() ? e.class_name : e.aliases[0]) + " " +
           keras::optimizers::registry().default_of(e.class_name, "learning_rate").dump();
  return out;
}

// --loss by Keras name (sparse categorical cross-entropy when empty); the losses that take `from_logits` (the
// cross-entropies) get it.
std::shared_ptr<keras::losses::Loss> make_loss(const std::string& name, bool from_logits) {
  return keras::losses::registry().get(name.empty() ? "sparse_categorical_crossentropy" : name,
                                       {{"from_logits", from_logits}});
}

// The model --model names, compiled, in the caller's strategy scope:
// - a built-in one with --optimizer (adam), --learning-rate (the optimizer's default) and the tutorials' loss;
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
    LS_CHECK(std::filesystem::is_regular_file(a.model), NotFoundError, "--model ", a.model,
             ": cannot open the file (give model.to_json()'s text saved to it)");
    return keras::models::model_from_json(read_file(a.model));
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
  std::vector<double> step_losses;  // the first 1000 steps' losses
  std::vector<keras::Logs> epochs;  // the logs of the epochs done

  train::TrackableState save() const override { return {}; }
  train::RestoreMatch restore(const train::TrackableState&) override { return {}; }

  nlohmann::json save_worker() const override {
    nlohmann::json logs = nlohmann::json::array();
    for (const keras::Logs& l : epochs) {
      nlohmann::json e = nlohmann::json::object();
      for (const auto& [k, v] : l.items()) e[k] = v;
      logs.push_back(e);
    }
    return {{"epoch", epoch},       {"step_in_epoch", step_in_epoch}, {"steps", steps},  {"total", total},
            {"accuracy", accuracy->state()}, {"step_losses", step_losses},     {"epochs", logs}};
  }
  // Saved by another number of workers: the counters are the same everywhere; the accuracy counts, summed
  // over workers at each epoch's end, go to the first worker.
  train::RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int world_size, int rank) override {
    if (saved.size() == static_cast<size_t>(world_size)) return take(saved[static_cast<size_t>(rank)]);
    nlohmann::json merged = saved.at(0);
    std::vector<std::vector<double>> each;
    for (const nlohmann::json& w : saved) each.push_back(w.at("accuracy").get<std::vector<double>>());
    merged["accuracy"] = train::summed_on_first(each, rank);
    return take(merged);
  }

 private:
  train::RestoreMatch take(const nlohmann::json& v) {
    epoch = v.at("epoch");
    step_in_epoch = v.at("step_in_epoch");
    steps = v.at("steps");
    LS_CHECK(epoch >= 0 && step_in_epoch >= 0 && steps >= 0, DataLossError, "the custom loop's saved position (epoch ",
             epoch, ", step_in_epoch ", step_in_epoch, ", steps ", steps, ") is not made of counts (integers >= 0)");
    total = v.at("total");
    accuracy->set_state(v.at("accuracy").get<std::vector<double>>());
    step_losses = v.at("step_losses").get<std::vector<double>>();
    epochs.clear();
    for (const nlohmann::json& e : v.at("epochs")) {
      keras::Logs l;
      for (const auto& [k, x] : e.items()) l.set(k, x.get<double>());
      epochs.push_back(l);
    }
    return {};
  }
};

// ---- Plan: what this process is to do, decided and checked before any data is read.

// Flag combinations that CLI11's table cannot express, refused by the launcher of --workers as by each worker.
void check_flag_combinations(const TrainArgs& a) {
  LS_CHECK(a.max_restarts < 0 || a.workers > 0, ValueError,
           "--max-restarts restarts the local workers of --workers N: add --workers N, or use your cluster's "
           "restart policy when TF_CONFIG is set");
  LS_CHECK(a.backup_freq == 0 || !a.backup_dir.empty(), ValueError,
           "--backup-freq says how often to save to --backup-dir: add --backup-dir DIR");
  LS_CHECK(a.data.validation_split == 0 || !a.data.spec.empty(), ValueError,
           "--validation-split holds out part of --data images:DIR: add --data, or leave it out");
}

// The outputs, checked before the data is read and any step is taken rather than found unwritable after the last.
void check_outputs(const TrainArgs& a) {
  if (!a.metrics_out.empty()) check_writable(a.metrics_out, "--metrics-out file");
  if (a.save_model.ends_with(".keras"))
    check_writable(a.save_model, "--save-model file");
  else if (!a.save_model.empty())
    AtomicDirectory::check(a.save_model, "config.json");
  if (!a.backup_dir.empty()) check_directory_writable(a.backup_dir, "--backup-dir");
  if (!a.tensorboard.empty()) check_directory_writable(a.tensorboard, "--tensorboard directory");
}

struct TrainPlan {
  // One task of the cluster in TF_CONFIG (or SLURM), or a single local worker when none is set.
  std::unique_ptr<distribute::ClusterResolver> cluster;
  int restarts = 0;  // of this worker's group, which the launcher counts
};

// The plan of this process from its flags and environment: a malformed TF_CONFIG or restart count, or an output
// the chief (which alone writes them) cannot write, fails here.
TrainPlan make_plan(const TrainArgs& a) {
  if (!a.cluster_token_file.empty()) {  // the flag wins over the environment
    ::setenv("LOCKSTEP_CLUSTER_TOKEN_FILE", a.cluster_token_file.c_str(), 1);
    ::unsetenv("LOCKSTEP_CLUSTER_TOKEN");
  }
  const int restarts = restarts_from_environment();
  TrainPlan plan{.cluster = distribute::resolve_cluster(), .restarts = restarts};
  set_num_threads(a.threads);
  if (plan.cluster->is_chief()) check_outputs(a);
  return plan;
}

// TF's evaluator task trains nothing and joins no collective: it evaluates the chief's checkpoints.
int run_evaluator(const TrainArgs& a) {
  LS_CHECK(!a.backup_dir.empty(), ValueError,
           "TF_CONFIG makes this task the evaluator, which evaluates the checkpoints the training workers write to "
           "--backup-dir: add the same --backup-dir DIR");
  LS_CHECK(a.data.spec.empty() && !is_model_file(a.model), ValueError,
           "TF_CONFIG makes this task the evaluator, which evaluates the built-in models on --dataset; for --model "
           "FILE or --data, leave the evaluator task out of TF_CONFIG and pass --validation-data to the workers");
  return run_sidecar_evaluator(
      {.directory = a.backup_dir,
       .model = a.model,
       .dataset = a.dataset,
       .steps = a.steps_per_epoch > 0 && a.epochs <= INT64_MAX / a.steps_per_epoch ? a.epochs * a.steps_per_epoch : 0});
}

// ---- Data and model.

using Splits = std::pair<datasets::Split, datasets::Split>;

// --dataset's training and test images, read and checked before the workers meet.
Splits load_dataset(const TrainArgs& a) {
  Splits splits = load(a.dataset);
  auto& [train_split, test_split] = splits;
  const std::vector<int64_t> feature_dims(train_split.images.shape().dims().begin() + 1,
                                          train_split.images.shape().dims().end());
  LS_CHECK(Shape(feature_dims) == Shape({28, 28}), ValueError, "data set '", a.dataset, "' has images of shape ",
           Shape(feature_dims).str(), " but model ", a.model, " takes (28, 28)");
  for (auto [split, files] : {std::pair{&train_split, "training images (train-images-idx3-ubyte)"},
                              {&test_split, "test images (t10k-images-idx3-ubyte)"}})
    LS_CHECK(split->images.dim(0) > 0, ValueError, "data set '", a.dataset, "' has no ", files,
             ": training and evaluation need at least one of each");
  return splits;
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

// A model for --dataset's 28x28 images whose batches fit; a warning when the last batch of a pass leaves replicas
// without images (split across the replicas like the others, a smaller batch can), said once, before training.
void check_model_fits_dataset(const TrainArgs& a, const keras::Model& model, int64_t n_train,
                              const distribute::Strategy& strategy) {
  LS_CHECK(model.input_shape() == Shape({28, 28}), ValueError, "model ", a.model, " takes inputs of shape ",
           model.input_shape().str(), " but data set '", a.dataset,
           "' has images of shape (28, 28): give your own data with --data");
  check_batch_fits(a, model, n_train, strategy);
  const int64_t replicas = strategy.num_replicas_in_sync(), last_batch = n_train % (a.batch_size * replicas);
  if (a.steps_per_epoch < 0 && last_batch > 0 && last_batch < replicas && strategy.is_chief())
    log(LogLevel::warning, "the last batch of each epoch holds ", last_batch, " of the ", n_train,
        " training images for ", replicas, " replicas, so ", replicas - last_batch,
        " of them get none in that step: choose a --batch-size that leaves at least ", replicas,
        " images for the last batch, or set --steps-per-epoch");
}

// The model stage: --model under --dtype-policy, its variables and its optimizer's mirrored by the strategy,
// checked against --dataset's images (when given), and summarized on the chief.
keras::Model make_model_for(const TrainArgs& a, const std::optional<Splits>& dataset, distribute::Strategy& strategy) {
  keras::mixed_precision::set_global_policy(a.dtype_policy);
  keras::Model model = [&] {
    auto scope = strategy.scope();
    return make_model(a);
  }();
  if (dataset) check_model_fits_dataset(a, model, dataset->first.images.dim(0), strategy);
  if (a.verbose && strategy.is_chief()) model.summary();
  return model;
}

// What the loops train on, batched with the global batch size: the strategy splits each batch across the replicas.
struct TrainData {
  data::Dataset train;
  std::optional<data::Dataset> test;  // --dataset's test set or --validation-data
  int64_t global_batch;
};

// The input stage: --dataset's images shuffled and batched, or --data read for the model's input.
TrainData make_train_data(const TrainArgs& a, const std::optional<Splits>& dataset, const keras::Model& model,
                          const distribute::Strategy& strategy) {
  const int64_t global_batch = a.batch_size * strategy.num_replicas_in_sync();
  if (!dataset) {
    UserDataOptions d = a.data;
    d.seed = a.seed;
    d.verbose = a.verbose > 0 && strategy.is_chief();
    UserData u = load_user_data(d, model.input_shape(), model.input_dtype(), global_batch, a.steps_per_epoch > 0);
    return {u.train, u.validation, global_batch};
  }
  data::Dataset train = as_dataset(dataset->first).shuffle(dataset->first.images.dim(0), a.seed);
  if (a.steps_per_epoch > 0) train = train.repeat();
  return {train.batch(global_batch), as_dataset(dataset->second).batch(256 * strategy.num_replicas_in_sync()),
          global_batch};
}

// ---- Loops.

// What a loop did.
struct LoopResult {
  std::vector<keras::Logs> epochs;
  std::vector<double> step_losses;  // --loop ctl: the first 1000 steps' losses
  int64_t steps = 0;
  double seconds = 0;
};

// --loop fit: Keras fit with the tutorial's callbacks.
LoopResult fit(const TrainArgs& a, keras::Model& model, const TrainData& data, const FaultInjection& fault) {
  std::vector<keras::CallbackPtr> callbacks;
  if (!a.backup_dir.empty())
    callbacks.push_back(
        keras::callbacks::BackupAndRestore({.backup_dir = a.backup_dir,
                                            .save_freq = a.backup_freq > 0 ? keras::callbacks::SaveFreq(a.backup_freq)
                                                                           : keras::callbacks::SaveFreq("epoch"),
                                            .save_before_preemption = true}));
  if (!a.tensorboard.empty()) callbacks.push_back(keras::callbacks::TensorBoard({.log_dir = a.tensorboard}));
  callbacks.push_back(std::make_shared<FaultInjectionCallback>(fault));
  auto history = model.fit(data.train, {.epochs = a.epochs,
                                        .steps_per_epoch = a.steps_per_epoch,
                                        .validation_data = data.test,
                                        .callbacks = callbacks,
                                        .verbose = a.verbose});
  LoopResult result;
  for (size_t e = 0; e < history.epoch.size(); ++e) {
    keras::Logs logs;
    for (const auto& [k, v] : history.history) logs.set(k, v[e]);
    result.epochs.push_back(logs);
  }
  result.steps = model.optimizer()->iterations();
  return result;
}

// --loop ctl, the custom training loop of the tutorials: strategy.run of a GradientTape step whose per-example
// losses are averaged over the global batch, regularization scaled by the number of replicas, and the replicas'
// losses summed with strategy.reduce. Records each step's loss. With --backup-dir, the tutorials'
// CheckpointManager over everything the loop needs to continue, restored here if a backup exists, saved every
// --backup-freq steps or each epoch, and on preemption.
class CustomLoop {
 public:
  CustomLoop(const TrainArgs& a, distribute::Strategy& strategy, keras::Model& model, const TrainData& data,
             const FaultInjection& fault);
  CustomLoop(const CustomLoop&) = delete;  // the checkpoint holds the iterator's address
  CustomLoop& operator=(const CustomLoop&) = delete;
  LoopResult run();

 private:
  std::pair<Tensor, Tensor> replica_step(const data::Batch& b);  // the loss and the logits
  void train_epoch();
  void end_epoch();
  void write_summaries(const keras::Logs& logs);
  void save() {
    if (manager_) manager_->save();
  }

  const TrainArgs& a_;
  distribute::Strategy& strategy_;
  keras::Model& model_;
  const TrainData& data_;
  const FaultInjection& fault_;
  std::shared_ptr<keras::optimizers::Optimizer> optimizer_ = model_.optimizer();
  std::shared_ptr<keras::losses::Loss> loss_ = model_.loss();  // its per-example form, averaged over the global batch
  distribute::DistributedDataset dist_ = strategy_.experimental_distribute_dataset(data_.train);
  std::shared_ptr<LoopState> state_ = std::make_shared<LoopState>();
  distribute::DistributedDataset::Iterator it_;
  std::optional<train::Checkpoint> checkpoint_;
  std::optional<train::CheckpointManager> manager_;
  std::optional<train::PreemptionCheckpointHandler> preemption_;
  std::optional<summary::SummaryWriter> train_log_, validation_log_;  // --tensorboard, on the chief
};

CustomLoop::CustomLoop(const TrainArgs& a, distribute::Strategy& strategy, keras::Model& model, const TrainData& data,
                       const FaultInjection& fault)
    : a_(a), strategy_(strategy), model_(model), data_(data), fault_(fault), it_([&] {
        auto scope = strategy_.scope();  // sync-on-read, as the tutorial's metrics: result() is over every worker
        state_->accuracy = keras::metrics::SparseCategoricalAccuracy();
        return dist_.make_iterator(0);
      }()) {
  if (!a.backup_dir.empty()) {
    checkpoint_.emplace(
        std::vector<std::pair<std::string, train::TrackableRef>>{{"model", model_},
                                                                 {"optimizer", optimizer_},
                                                                 {"iterator", it_},
                                                                 {"loop", state_},
                                                                 {"random", keras::utils::global_random_state()}},
        train::CheckpointOptions{.async = true});
    manager_.emplace(*checkpoint_, a.backup_dir, train::CheckpointManagerOptions{.max_to_keep = 2});
    preemption_.emplace(*manager_);
  }
  if (!a.tensorboard.empty() && strategy.is_chief()) {  // the epoch logs as the TensorBoard callback writes them
    train_log_ = summary::create_file_writer(a.tensorboard + "/train");
    validation_log_ = summary::create_file_writer(a.tensorboard + "/validation");
  }
}

LoopResult CustomLoop::run() {
  for (; state_->epoch < a_.epochs; ++state_->epoch) {
    train_epoch();
    end_epoch();
  }
  // The run is complete: its backups are not needed by a restart any more (as BackupAndRestore does).
  if (manager_) manager_->delete_checkpoints();
  return {.epochs = state_->epochs, .step_losses = state_->step_losses, .steps = state_->steps};
}

std::pair<Tensor, Tensor> CustomLoop::replica_step(const data::Batch& b) {
  GradientTape tape;
  Tensor logits = model_(b.x(), {.training = true});
  Tensor loss = nn::compute_average_loss(loss_->call(b.y(), logits), {.global_batch_size = data_.global_batch});
  std::vector<Tensor> reg = model_.losses();
  if (!reg.empty()) loss = loss + nn::scale_regularization_loss(add_n(reg));
  std::vector<Variable> vars = model_.trainable_variables();
  GradientsToDestinations into_buckets;  // the gradients go to apply_gradients unread
  optimizer_->apply_gradients(tape.gradient(loss, vars), vars);
  return {loss, stop_gradient(logits)};
}

// The steps of state_->epoch, from where a restore left it.
void CustomLoop::train_epoch() {
  LoopState& s = *state_;
  // A fresh pass per epoch (unless steps_per_epoch runs one iterator on), except in the epoch a restore
  // put the iterator in the middle of.
  if (a_.steps_per_epoch < 0 && s.epoch > 0 && s.step_in_epoch == 0)
    it_ = dist_.make_iterator(static_cast<uint64_t>(s.epoch));
  if (s.step_in_epoch == 0) {
    s.accuracy->reset_state();
    s.total = 0;
  }
  while (a_.steps_per_epoch < 0 || s.step_in_epoch < a_.steps_per_epoch) {
    auto batches = it_.next();
    if (!batches) break;
    auto out = strategy_.run([this](const data::Batch& b) { return replica_step(b); }, *batches);
    distribute::PerReplica<Tensor> losses;
    for (size_t r = 0; r < out.values.size(); ++r) {
      losses.values.push_back(out.values[r].first);
      NoGradGuard no_grad;
      s.accuracy->update_state(batches->values[r].y(), out.values[r].second);
    }
    const double loss = strategy_.reduce(distribute::ReduceOp::SUM, losses).item<double>();
    if (s.step_losses.size() < 1000) s.step_losses.push_back(loss);
    s.total += loss;
    ++s.step_in_epoch;
    ++s.steps;
    if (preemption_) preemption_->run([] {});  // counts the step; every worker saves and exits if any was signalled
    if (a_.backup_freq > 0 && s.steps % a_.backup_freq == 0) save();
    fault_.after_step(s.steps);
  }
}

// The epoch's logs: printed on the chief, written for TensorBoard, kept, and saved as "the next epoch, step 0".
void CustomLoop::end_epoch() {
  LoopState& s = *state_;
  const int64_t n = s.step_in_epoch;
  keras::Logs logs;
  logs.set("loss", n ? s.total / static_cast<double>(n) : 0.0);
  logs.set("accuracy", s.accuracy->result());  // a collective: every worker reports the global accuracy
  if (data_.test)
    for (const auto& [name, value] : model_.evaluate(*data_.test, {.verbose = 0})) logs.set("val_" + name, value);
  if (a_.verbose && strategy_.is_chief()) {
    std::printf("Epoch %lld/%lld", static_cast<long long>(s.epoch + 1), static_cast<long long>(a_.epochs));
    for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"})
      if (auto v = logs.get(k)) std::printf(" - %s: %.4f", k, *v);
    std::printf("\n");
  }
  write_summaries(logs);
  s.epochs.push_back(logs);
  s.step_in_epoch = 0;
  if (a_.backup_freq == 0 && s.epoch + 1 < a_.epochs) {
    ++s.epoch;
    save();
    --s.epoch;
  }
}

void CustomLoop::write_summaries(const keras::Logs& logs) {
  if (!train_log_) return;
  for (const auto& [name, value] : logs.items()) {
    const bool val = name.starts_with("val_");
    summary::scalar("epoch_" + name.substr(val ? 4 : 0), value, state_->epoch, val ? &*validation_log_ : &*train_log_);
  }
  summary::flush(&*train_log_);
  summary::flush(&*validation_log_);
}

// ---- Report.

// The run's metrics as --metrics-out holds them. Every worker computes them: evaluating on the test set (--dataset)
// or the validation data (--data), and gathering every worker's weights hash, are collectives.
nlohmann::json measure(distribute::Strategy& strategy, keras::Model& model, const TrainData& data,
                       const LoopResult& loop) {
  std::map<std::string, double> result;
  if (data.test) result = model.evaluate(*data.test, {.verbose = 0});
  const std::vector<std::string> hashes = distribute::all_gather_bytes(
      strategy.cross_worker(), weights_sha256(model), distribute::collective_options(distribute::Tag::kCommandLine));
  nlohmann::json j;
  j["epochs"] = nlohmann::json::array();
  for (const keras::Logs& logs : loop.epochs) {
    nlohmann::json e;
    for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"})
      if (auto v = logs.get(k)) e[k] = *v;
    j["epochs"].push_back(e);
  }
  for (const char* k : {"loss", "accuracy"})
    if (result.contains(k)) j[std::string("test_") + k] = result[k];
  j["global_steps"] = loop.steps;
  j["samples_per_second"] = static_cast<double>(loop.steps * data.global_batch) / loop.seconds;
  j["num_workers"] = strategy.num_workers();
  j["num_replicas_in_sync"] = strategy.num_replicas_in_sync();
  j["weights_sha256"] = hashes[0];
  j["weights_sha256_per_worker"] = hashes;
  if (!loop.step_losses.empty()) j["step_losses"] = loop.step_losses;
  return j;
}

// The chief alone prints the test loss and writes --save-model and --metrics-out; every worker returns once they
// are durable, with the chief's error when it failed.
void report(const TrainArgs& a, distribute::Strategy& strategy, keras::Model& model, const nlohmann::json& metrics) {
  distribute::on_chief(
      strategy.cross_worker(),
      [&] {
        if (metrics.contains("test_loss")) {  // evaluate() always gives the loss
          std::printf("Test loss: %.4f", metrics["test_loss"].get<double>());
          if (metrics.contains("test_accuracy"))
            std::printf(" - test accuracy: %.4f", metrics["test_accuracy"].get<double>());
          std::printf("\n");
        }
        if (!a.save_model.empty()) model.save(a.save_model);
        if (!a.metrics_out.empty()) write_file_atomically(a.metrics_out, metrics.dump(2) + "\n");
      },
      distribute::collective_options(distribute::Tag::kCommandLine));
}

// One worker of the run, or the only one: plan → data → model → loop → report.
int run_train(const TrainArgs& a) {
  TrainPlan plan = make_plan(a);
  if (plan.cluster->task().type == "evaluator") return run_evaluator(a);
  if (!a.device.empty()) set_default_device(Device::parse(a.device));
  if (default_device().is_gpu()) log(LogLevel::info, "device: ", default_device().str(), ", ", gpu_summary(default_device()));
  keras::utils::set_random_seed(a.seed);
  std::optional<Splits> dataset;
  if (a.data.spec.empty()) dataset = load_dataset(a);
  distribute::MultiWorkerMirroredStrategy strategy(
      {.gradient_compression = gradient_compression(a.gradient_compression)}, std::move(plan.cluster));
  const FaultInjection fault(strategy.worker_rank(), plan.restarts);
  keras::Model model = make_model_for(a, dataset, strategy);
  const TrainData data = make_train_data(a, dataset, model, strategy);
  const auto start = std::chrono::steady_clock::now();
  LoopResult loop = a.loop == "fit" ? fit(a, model, data, fault) : CustomLoop(a, strategy, model, data, fault).run();
  loop.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json metrics = measure(strategy, model, data, loop);
  metrics["restarts"] = plan.restarts;
  metrics["cpu"] = kernels::cpu::cpu_features();  // what the figures were measured on
  metrics["device"] = default_device().str();
  if (default_device().is_gpu()) metrics["gpu"] = gpu_summary(default_device());
  report(a, strategy, model, metrics);
  return 0;
}

// ---- Options.

// The options that the launcher of --workers consumes instead of passing them on: the group's size and restarts,
// and the token file, which reaches the workers as LOCKSTEP_CLUSTER_TOKEN_FILE (launch() then gives them no token
// of its own).
constexpr std::array<std::string_view, 3> kLauncherOptions = {"--workers", "--max-restarts", "--cluster-token-file"};

std::string long_name(const CLI::Option& option) {
  return "--" + option.get_lnames().front();
}

// Every option given to this command, with each of its values as given (CLI11 reads them back to the same values),
// except the launcher's own. Read from the option table, so that an option added to it reaches the workers.
std::vector<std::string> worker_arguments(const CLI::App& cmd) {
  std::vector<std::string> args;
  for (const CLI::Option* option : cmd.get_options()) {
    if (std::ranges::find(kLauncherOptions, long_name(*option)) != kLauncherOptions.end()) continue;
    for (const std::string& value : option->results()) args.insert(args.end(), {long_name(*option), value});
  }
  return args;
}

// `lockstep train --workers N`: the same command on N local workers through the launcher.
int run_workers(const TrainArgs& a, const CLI::App& cmd) {
  LaunchOptions l;
  l.num_workers = a.workers;
  l.max_restarts = std::max(a.max_restarts, 0);
  l.command = {"lockstep", "train"};
  for (std::string& arg : worker_arguments(cmd)) l.command.push_back(std::move(arg));
  if (!a.cluster_token_file.empty())
    l.extra_env["LOCKSTEP_CLUSTER_TOKEN_FILE"] = std::filesystem::absolute(a.cluster_token_file).string();
  return launch(l);
}

// LOCKSTEP_PRINT_TRAIN_OPTIONS set (a test hook): instead of training, one line of JSON with every option of the
// table and the values it was given, and the token file in the environment. Under --workers, each worker prints
// it: what reached the workers.
int print_options(const CLI::App& cmd) {
  nlohmann::json options = nlohmann::json::object();
  for (const CLI::Option* option : cmd.get_options()) options[long_name(*option)] = option->results();
  const char* token_file = std::getenv("LOCKSTEP_CLUSTER_TOKEN_FILE");
  const nlohmann::json j = {{"options", options}, {"LOCKSTEP_CLUSTER_TOKEN_FILE", token_file ? token_file : ""}};
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

// `lockstep train` once its options are parsed: the launcher of --workers, or one worker.
int run_train_command(const TrainArgs& a, const CLI::App& cmd) {
  check_flag_combinations(a);
  if (a.workers > 0) return run_workers(a, cmd);
  if (std::getenv("LOCKSTEP_PRINT_TRAIN_OPTIONS")) return print_options(cmd);
  return run_train(a);
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
             "step size of the optimizer; default: a .keras model's own, else the optimizer's (" +
                 default_learning_rates() + ")");
  add_number(cmd, "--seed", a->seed, [](uint64_t) { return true; }, "an integer from 0 to 2^64-1",
             "seed of the weights and the shuffle");
  add_number(cmd, "--threads", a->threads, at_least(0), "an integer from 0 to 2^31-1",
             "intra-op threads; 0: all cores; more than 4 per core are capped");
  cmd->add_option("--device", a->device,
                  "cpu | gpu | /gpu:N (also /device:GPU:N): where the model's variables and ops run; default: "
                  "LOCKSTEP_DEVICE, else the CPU")
      ->check(CLI::Validator(
          [](std::string& d) {
            try {
              Device::parse(d);
              return std::string();
            } catch (const Error& e) {
              return std::string(e.what());
            }
          },
          ""));
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
  return [a, cmd] { return run_train_command(*a, *cmd); };
}

}  // namespace lockstep::cli
