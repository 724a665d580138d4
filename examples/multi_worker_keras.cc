// TensorFlow's "Multi-worker training with Keras" tutorial in lockstep: mnist_dataset,
// build_and_compile_cnn_model, MultiWorkerMirroredStrategy from TF_CONFIG, then fit for 3 epochs of 70 steps
// with BackupAndRestore, and model.save — the chief into the real path, the other workers into temporary
// directories they remove — followed by load_model on the chief.
// The tutorial reads MNIST; this port reads Fashion-MNIST, which Debian ships (dataset-fashion-mnist).
// Run: lockstep launch -n 2 -- multi_worker_keras [steps_per_epoch] [dir] [--save-freq N] [--stop-after-steps K]
//   dir: holds the backup (dir/backup, kept only while training is unfinished) and the model (dir/keras-model);
//        default: a fresh directory removed at the end.
//   --save-freq N: back up every N steps instead of at each epoch's end.
//   --stop-after-steps K: fail with an error after K steps, as a crash would (to try the resume).
#include <lockstep/lockstep.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace ls = lockstep;
namespace keras = ls::keras;
namespace fs = std::filesystem;

ls::data::Dataset mnist_dataset(int64_t batch_size) {
  auto [train, test] = ls::datasets::fashion_mnist::load_data();
  // The images are uint8 in [0, 255]: convert them to float32 in [0, 1].
  ls::Tensor x_train = ls::cast(train.images, ls::DType::float32) / 255.0;
  ls::Tensor y_train = ls::cast(train.labels, ls::DType::int64);
  return ls::data::Dataset::from_tensor_slices(x_train, y_train).shuffle(60000).repeat().batch(batch_size);
}

keras::Sequential build_and_compile_cnn_model() {
  keras::Sequential model({keras::Input({28, 28}), keras::layers::Reshape({28, 28, 1}),
                           keras::layers::Conv2D(32, 3, {.activation = "relu"}), keras::layers::Flatten(),
                           keras::layers::Dense(128, {.activation = "relu"}), keras::layers::Dense(10)});
  model.compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.001}),
                 .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return model;
}

// Model saving: every worker saves, each to its own path, because saving may need every worker; only the
// chief's copy is the real one: the `chief` task, or worker 0 when the cluster has no chief.
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

// A fresh directory of this process, removed when the program ends (Python's tempfile.mkdtemp).
struct TempDir {
  std::string path = (fs::temp_directory_path() / "multi_worker_keras-XXXXXX").string();
  TempDir() {
    if (!mkdtemp(path.data())) throw std::runtime_error("cannot create a directory under " + path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Fails after `steps` training steps of this process, as a crash would.
class StopAfterSteps : public keras::Callback {
 public:
  explicit StopAfterSteps(int64_t steps) : steps_(steps) {}
  void on_train_batch_end(int64_t, const keras::Logs&) override {
    if (++seen_ == steps_)
      throw std::runtime_error("stopped after " + std::to_string(seen_) + " steps (--stop-after-steps)");
  }

 private:
  int64_t steps_, seen_ = 0;
};

int main(int argc, char** argv) try {
  int64_t steps_per_epoch = 70, save_freq = 0, stop_after_steps = 0;
  std::string dir;
  for (int i = 1, positional = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--save-freq") && i + 1 < argc)
      save_freq = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--stop-after-steps") && i + 1 < argc)
      stop_after_steps = std::atoll(argv[++i]);
    else if (positional++ == 0)
      steps_per_epoch = std::atoll(argv[i]);
    else
      dir = argv[i];
  }
  std::optional<TempDir> temp_dir;
  if (dir.empty()) dir = temp_dir.emplace().path;

  const int64_t per_worker_batch_size = 64;
  ls::distribute::MultiWorkerMirroredStrategy strategy;  // reads TF_CONFIG; one local worker when it is unset
  const int64_t global_batch_size = per_worker_batch_size * strategy.num_replicas_in_sync();
  ls::data::Dataset multi_worker_dataset = mnist_dataset(global_batch_size);
  keras::Sequential multi_worker_model;
  {
    auto scope = strategy.scope();  // model building and compiling must be within the scope
    multi_worker_model = build_and_compile_cnn_model();
  }

  // Fault tolerance: a run that starts with a backup in backup_dir continues where the backup was taken.
  std::vector<keras::CallbackPtr> callbacks = {keras::callbacks::BackupAndRestore(
      {.backup_dir = (fs::path(dir) / "backup").string(),
       .save_freq = save_freq > 0 ? keras::callbacks::SaveFreq(save_freq) : keras::callbacks::SaveFreq("epoch")})};
  if (stop_after_steps > 0) callbacks.push_back(std::make_shared<StopAfterSteps>(stop_after_steps));
  multi_worker_model.fit(multi_worker_dataset,
                         {.epochs = 3, .steps_per_epoch = steps_per_epoch, .callbacks = callbacks});

  const std::string model_path = (fs::path(dir) / "keras-model").string();
  const std::optional<std::string> task_type = strategy.cluster_resolver().task_type();
  const int task_id = strategy.cluster_resolver().task_id();
  const ls::distribute::ClusterSpec cluster_spec = strategy.cluster_resolver().cluster_spec();
  const std::string write_model_path = write_filepath(model_path, task_type, task_id, cluster_spec);
  // A collective: every worker returns once the chief's model is on disk.
  multi_worker_model.save(write_model_path);
  // Only the chief's model is loaded later: remove the temporary ones the other workers saved.
  if (!is_chief(task_type, task_id, cluster_spec))
    ls::io::gfile::rmtree(fs::path(write_model_path).parent_path().string());

  // Load it without a strategy (the tutorial continues training it on a single worker). The tutorial loads it on
  // every worker, from a file system they share; each worker here has a directory of its own, so the chief does.
  if (is_chief(task_type, task_id, cluster_spec)) {
    keras::Sequential loaded_model = keras::Sequential::load_model(model_path);
    std::printf("Loaded the model saved at %s: %lld parameters\n", model_path.c_str(),
                static_cast<long long>(loaded_model.count_params()));
  }
} catch (const std::exception& e) {
  std::fprintf(stderr, "multi_worker_keras: %s\n", e.what());
  return 1;
}
