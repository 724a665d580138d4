// Built against an installed lockstep: checks that the version macros came with the package and that the
// linked libraries train. Fits y = 2x + 1 with one Dense unit for a few epochs; the loss must fall. Then the
// tutorials' file idioms as a port writes them: task_type() None without TF_CONFIG, tf.io.gfile's makedirs and
// rmtree, a Checkpoint made inside the strategy's scope and saved after it into a directory not yet made.
#include <lockstep/lockstep.h>

#include <cstdio>
#include <cstring>

namespace ls = lockstep;
namespace keras = ls::keras;

int main() try {
  std::printf("lockstep %s (headers %s, %d.%d.%d)\n", ls::version(), LOCKSTEP_VERSION, LOCKSTEP_VERSION_MAJOR,
              LOCKSTEP_VERSION_MINOR, LOCKSTEP_VERSION_PATCH);
  if (std::strcmp(ls::version(), LOCKSTEP_VERSION) != 0) {
    std::fprintf(stderr, "install_smoke: library %s but headers %s\n", ls::version(), LOCKSTEP_VERSION);
    return 1;
  }

  ls::Philox rng(42);
  ls::Tensor x = ls::random_uniform({256, 1}, rng, -1, 1);
  ls::Tensor y = x * 2.0 + 1.0;
  keras::Sequential model({keras::Input({1}), keras::layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  auto history = model.fit(x, y, {.epochs = 5, .batch_size = 32, .verbose = 0});
  const auto& loss = history.history.at("loss");
  for (size_t i = 0; i < loss.size(); ++i) std::printf("epoch %zu loss %.6f\n", i + 1, loss[i]);
  if (!(loss.back() < loss.front())) {
    std::fprintf(stderr, "install_smoke: the loss did not fall\n");
    return 1;
  }

  ls::distribute::MultiWorkerMirroredStrategy strategy;
  if (strategy.cluster_resolver().task_type() != std::nullopt) {
    std::fprintf(stderr, "install_smoke: task_type() is not None without TF_CONFIG\n");
    return 1;
  }
  const std::string dir = ls::io::gfile::join("install_smoke_files", "workertemp_1");
  ls::io::gfile::makedirs(dir);
  ls::train::Checkpoint checkpoint({{"model", model}});
  {
    auto scope = strategy.scope();
    ls::Variable step(ls::scalar(3, ls::DType::int64), {.name = "step"});
    checkpoint = ls::train::Checkpoint({{"model", model}, {"step", step}});
  }
  const std::string saved = checkpoint.save(ls::io::gfile::join(dir, "training_checkpoints", "ckpt"));
  const bool found = ls::io::gfile::exists(saved + ".safetensors");
  ls::io::gfile::rmtree("install_smoke_files");
  if (!found || ls::io::gfile::exists("install_smoke_files")) {
    std::fprintf(stderr, "install_smoke: the checkpoint was not saved under %s, or not removed\n", dir.c_str());
    return 1;
  }
  std::printf("checkpoint %s\n", saved.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "install_smoke: %s\n", e.what());
  return 1;
}
