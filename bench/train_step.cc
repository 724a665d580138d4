// Times warm training steps of the built-in models with Keras fit on synthetic data, on one worker or as
// one worker of the TF_CONFIG cluster (run it under `lockstep launch -n N`):
// `train_step [--model tutorial_cnn|fashion_cnn] [--batch 64 (per worker)] [--steps 50] [--threads 1]
// [--backup-every N [--backup-sync]]`: with --backup-every the timed fit runs BackupAndRestore every N steps
// (asynchronous unless --backup-sync) into a temporary directory, which it removes at the end.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <string>

#include "lockstep/core/threads.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/model.h"

namespace ls = lockstep;
namespace kl = ls::keras::layers;

int main(int argc, char** argv) {
  std::string model_name = "tutorial_cnn";
  int64_t batch = 64, steps = 50;
  int threads = 1;
  int64_t backup_every = 0;
  bool backup_sync = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--backup-sync") {
      backup_sync = true;
      continue;
    }
    if (i + 1 >= argc) break;
    const char* value = argv[++i];
    if (flag == "--model") model_name = value;
    else if (flag == "--batch") batch = std::stoll(value);
    else if (flag == "--steps") steps = std::stoll(value);
    else if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--backup-every") backup_every = std::stoll(value);
  }
  ls::set_num_threads(threads);
  ls::distribute::MultiWorkerMirroredStrategy strategy;
  const int64_t global = batch * strategy.num_replicas_in_sync();
  ls::keras::Sequential model;
  {
    auto scope = strategy.scope();
    if (model_name == "fashion_cnn")
      model = ls::keras::Sequential({ls::keras::Input({28, 28}), kl::Reshape({28, 28, 1}), kl::Conv2D(32, 3, {.activation = "relu"}),
                                     kl::MaxPooling2D(), kl::Conv2D(64, 3, {.activation = "relu"}), kl::MaxPooling2D(),
                                     kl::Flatten(), kl::Dense(64, {.activation = "relu"}), kl::Dense(10)});
    else
      model = ls::keras::Sequential({ls::keras::Input({28, 28}), kl::Reshape({28, 28, 1}), kl::Conv2D(32, 3, {.activation = "relu"}),
                                     kl::Flatten(), kl::Dense(128, {.activation = "relu"}), kl::Dense(10)});
    model.compile({.optimizer = ls::keras::optimizers::SGD({.learning_rate = 0.001}),
                   .loss = ls::keras::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  }
  ls::Philox rng(0);
  ls::Tensor x = ls::random_uniform({global, 28, 28}, rng);
  ls::Tensor y = ls::raw_ops::cast(ls::random_uniform({global}, rng, 0, 10, ls::DType::float64), ls::DType::int64);
  auto ds = ls::data::Dataset::from_tensor_slices(x, y).repeat().batch(global);
  model.fit(ds, {.epochs = 1, .steps_per_epoch = 5, .verbose = 0});  // warm-up: plans, buffers, connections
  std::vector<ls::keras::CallbackPtr> callbacks;
  if (backup_every > 0) {
    const std::string dir = std::filesystem::temp_directory_path() / ("lockstep_bench_backup_" + std::to_string(::getpid()));
    callbacks.push_back(ls::keras::callbacks::BackupAndRestore(
        {.backup_dir = dir, .save_freq = backup_every, .async_checkpoint = !backup_sync}));
  }
  auto start = std::chrono::steady_clock::now();
  model.fit(ds, {.epochs = 1, .steps_per_epoch = steps, .callbacks = callbacks, .verbose = 0});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (strategy.is_chief())
    std::printf("lockstep %s workers=%d threads=%d batch=%lld%s: %.2f ms/step, %.0f samples/s\n", model_name.c_str(),
                strategy.num_workers(), ls::num_threads(), static_cast<long long>(batch),
                backup_every > 0 ? (" backup-every=" + std::to_string(backup_every) + (backup_sync ? " sync" : " async")).c_str() : "",
                s / static_cast<double>(steps) * 1e3, static_cast<double>(global * steps) / s);
}
