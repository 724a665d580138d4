// TensorFlow's "Custom training loop with Keras and MultiWorkerMirroredStrategy" tutorial in lockstep:
// dataset_fn sharded per input pipeline, distribute_datasets_from_function, an RMSprop GradientTape step
// under strategy.run whose losses are summed with strategy.reduce, 3 epochs of 70 steps, and the tutorial's
// checkpointing: a Checkpoint of the model, optimizer, `epoch`, `step_in_epoch` (and the input's position)
// managed by a CheckpointManager in a per-task directory, restored from latest_checkpoint at start.
// Fashion-MNIST stands in for MNIST.
// Run: lockstep launch -n 2 -- multi_worker_ctl [steps_per_epoch] [dir] [--save-every N] [--stop-after-steps K]
//   dir: where checkpoints go (dir/ckpt) and are resumed from; default: a fresh directory removed at the end.
//   --save-every N: also save every N steps, not only at each epoch's end.
//   --stop-after-steps K: fail with an error after K steps, as a crash would (to try the resume).
#include <lockstep/lockstep.h>
#include <lockstep/train/checkpoint.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace ls = lockstep;
namespace keras = ls::keras;
namespace fs = std::filesystem;

ls::data::Dataset mnist_dataset() {
  auto [train, test] = ls::datasets::fashion_mnist::load_data();
  ls::Tensor x_train = ls::cast(train.images, ls::DType::float32) / 255.0;
  ls::Tensor y_train = ls::cast(train.labels, ls::DType::int64);
  return ls::data::Dataset::from_tensor_slices(x_train, y_train).shuffle(60000).repeat();
}

ls::data::Dataset dataset_fn(int64_t global_batch_size, const ls::distribute::InputContext& input_context) {
  const int64_t batch_size = input_context.get_per_replica_batch_size(global_batch_size);
  return mnist_dataset().shard(input_context.num_input_pipelines, input_context.input_pipeline_id).batch(batch_size);
}

keras::Sequential build_cnn_model() {
  auto regularizer = keras::regularizers::L2(1e-5);
  return keras::Sequential({keras::Input({28, 28}), keras::layers::Reshape({28, 28, 1}),
                            keras::layers::Conv2D(32, 3, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::Flatten(),
                            keras::layers::Dense(128, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::Dense(10, {.kernel_regularizer = regularizer})});
}

// Checkpoint saving and restoring. Every worker saves (a collective call: saving on the chief alone would
// deadlock), each into its own path: the chief into the real directory, the others into a temporary one.
bool is_chief(const std::optional<std::string>& task_type, int task_id, const ls::distribute::ClusterSpec& cluster_spec) {
  return !task_type || task_type == "chief" ||
         (task_type == "worker" && task_id == 0 && !cluster_spec.as_dict().contains("chief"));
}

std::string get_temp_dir(const std::string& dirpath, int task_id) {
  const std::string base_dirpath = "workertemp_" + std::to_string(task_id);
  const std::string temp_dir = ls::io::gfile::join(dirpath, base_dirpath);
  ls::io::gfile::makedirs(temp_dir);
  return temp_dir;
}

std::string write_filepath(const std::string& filepath, const std::optional<std::string>& task_type, int task_id,
                           const ls::distribute::ClusterSpec& cluster_spec) {
  std::string dirpath = fs::path(filepath).parent_path().string();
  const std::string base = fs::path(filepath).filename().string();
  if (!is_chief(task_type, task_id, cluster_spec)) dirpath = get_temp_dir(dirpath, task_id);
  return (fs::path(dirpath) / base).string();
}

// The tutorial's util.get_temp_dir(): a fresh directory of this process, removed when the program ends.
struct TempDir {
  std::string path = (fs::temp_directory_path() / "multi_worker_ctl-XXXXXX").string();
  TempDir() {
    if (!mkdtemp(path.data())) throw std::runtime_error("cannot create a directory under " + path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

int main(int argc, char** argv) try {
  int64_t num_steps_per_epoch = 70, save_every = 0, stop_after_steps = 0;
  std::string dir;
  for (int i = 1, positional = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--save-every") && i + 1 < argc)
      save_every = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--stop-after-steps") && i + 1 < argc)
      stop_after_steps = std::atoll(argv[++i]);
    else if (positional++ == 0)
      num_steps_per_epoch = std::atoll(argv[i]);
    else
      dir = argv[i];
  }
  std::optional<TempDir> temp_dir;
  if (dir.empty()) dir = temp_dir.emplace().path;

  const int64_t per_worker_batch_size = 64;
  const int64_t num_epochs = 3;
  const std::string checkpoint_dir = (fs::path(dir) / "ckpt").string();

  ls::distribute::MultiWorkerMirroredStrategy strategy;
  const int64_t global_batch_size = per_worker_batch_size * strategy.num_workers();

  // Model building/compiling need to be within strategy.scope().
  keras::Sequential multi_worker_model;
  std::shared_ptr<keras::optimizers::Optimizer> optimizer;
  std::shared_ptr<keras::metrics::Metric> train_accuracy;
  {
    auto scope = strategy.scope();
    multi_worker_model = build_cnn_model();
    optimizer = keras::optimizers::RMSprop({.learning_rate = 0.001});
    train_accuracy = keras::metrics::SparseCategoricalAccuracy("train_accuracy");
  }
  auto multi_worker_dataset = strategy.distribute_datasets_from_function(
      [&](const ls::distribute::InputContext& input_context) { return dataset_fn(global_batch_size, input_context); });

  // Per-replica step function.
  auto step_fn = [&](const ls::data::Batch& inputs) {
    ls::GradientTape tape;
    ls::Tensor predictions = multi_worker_model(inputs.x(), {.training = true});
    ls::Tensor per_example_loss = (*keras::losses::SparseCategoricalCrossentropy(
        {.from_logits = true, .reduction = keras::losses::Reduction::NONE}))(inputs.y(), predictions);
    ls::Tensor loss = ls::nn::compute_average_loss(per_example_loss);
    std::vector<ls::Tensor> model_losses = multi_worker_model.losses();
    if (!model_losses.empty()) loss = loss + ls::nn::scale_regularization_loss(ls::add_n(model_losses));
    auto grads = tape.gradient(loss, multi_worker_model.trainable_variables());
    optimizer->apply_gradients(grads, multi_worker_model.trainable_variables());
    train_accuracy->update_state(inputs.y(), predictions);
    return loss;
  };
  auto train_step = [&](ls::distribute::DistributedDataset::Iterator& iterator) {
    auto per_replica_losses = strategy.run(step_fn, *iterator.next());
    return strategy.reduce(ls::distribute::ReduceOp::SUM, per_replica_losses).item<double>();
  };

  ls::Variable epoch(ls::scalar(0, ls::DType::int64), {.name = "epoch"});
  ls::Variable step_in_epoch(ls::scalar(0, ls::DType::int64), {.name = "step_in_epoch"});
  auto numpy = [](const ls::Variable& v) { return v.value().item<int64_t>(); };
  const ls::Tensor one = ls::scalar(1, ls::DType::int64), zero = ls::scalar(0, ls::DType::int64);

  const std::optional<std::string> task_type = strategy.cluster_resolver().task_type();
  const int task_id = strategy.cluster_resolver().task_id();
  const ls::distribute::ClusterSpec cluster_spec = strategy.cluster_resolver().cluster_spec();

  // The tutorial starts a new iterator each epoch; this one lives across epochs so that the checkpoint holds
  // the input's position and a resumed run reads the batches it would have read.
  auto iterator = multi_worker_dataset.begin();
  ls::train::Checkpoint checkpoint({{"model", multi_worker_model},
                                    {"optimizer", optimizer},
                                    {"epoch", epoch},
                                    {"step_in_epoch", step_in_epoch},
                                    {"iterator", iterator}});
  const std::string write_checkpoint_dir = write_filepath(checkpoint_dir, task_type, task_id, cluster_spec);
  ls::train::CheckpointManager checkpoint_manager(checkpoint, write_checkpoint_dir, {.max_to_keep = 1});
  // Save (every worker), then remove what a non-chief worker saved.
  auto save = [&] {
    checkpoint_manager.save();
    if (!is_chief(task_type, task_id, cluster_spec)) ls::io::gfile::rmtree(write_checkpoint_dir);
  };

  // Restoring the checkpoint.
  std::optional<std::string> latest_checkpoint = ls::train::latest_checkpoint(checkpoint_dir);
  if (latest_checkpoint) {
    checkpoint.restore(*latest_checkpoint);
    if (strategy.is_chief())
      std::printf("resumed at epoch %lld step %lld from %s\n", static_cast<long long>(numpy(epoch)),
                  static_cast<long long>(numpy(step_in_epoch)), latest_checkpoint->c_str());
  }

  // Resume the training loop.
  int64_t steps_run = 0;
  while (numpy(epoch) < num_epochs) {
    double total_loss = 0.0;
    int64_t num_batches = 0;
    while (numpy(step_in_epoch) < num_steps_per_epoch) {
      total_loss += train_step(iterator);
      ++num_batches;
      step_in_epoch.assign_add(one);
      const int64_t global_step = numpy(epoch) * num_steps_per_epoch + numpy(step_in_epoch);
      if (save_every > 0 && global_step % save_every == 0 && numpy(step_in_epoch) < num_steps_per_epoch) save();
      if (++steps_run == stop_after_steps)
        throw std::runtime_error("stopped after " + std::to_string(steps_run) + " steps (--stop-after-steps)");
    }
    // A run resumed from an epoch's final save has no step left in that epoch.
    if (num_batches > 0) {
      const double train_loss = total_loss / static_cast<double>(num_batches);
      // Every worker prints the same numbers: result() is over the replicas of all workers (a collective).
      std::printf("Epoch: %lld, accuracy: %f, train_loss: %f.\n", static_cast<long long>(numpy(epoch)),
                  train_accuracy->result(), train_loss);
    }
    train_accuracy->reset_states();
    save();
    epoch.assign_add(one);
    step_in_epoch.assign(zero);
  }
} catch (const std::exception& e) {
  std::fprintf(stderr, "multi_worker_ctl: %s\n", e.what());
  return 1;
}
